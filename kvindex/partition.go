package kvindex

// Murmur2 returns the 32-bit murmur2 hash of data exactly as Apache Kafka's Java
// Utils.murmur2 computes it (seed 0x9747b28c), the hash behind the Java client's default
// partitioner and franz-go's StickyKeyPartitioner. It must never change: partitions
// already written depend on it.
func Murmur2(data []byte) int32 {
	const (
		seed uint32 = 0x9747b28c
		m    uint32 = 0x5bd1e995
		r           = 24
	)
	h := seed ^ uint32(len(data))
	b := data
	for len(b) >= 4 {
		k := uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
		k *= m
		k ^= k >> r
		k *= m
		h *= m
		h ^= k
		b = b[4:]
	}
	switch len(b) {
	case 3:
		h ^= uint32(b[2]) << 16
		fallthrough
	case 2:
		h ^= uint32(b[1]) << 8
		fallthrough
	case 1:
		h ^= uint32(b[0])
		h *= m
	}
	h ^= h >> 13
	h *= m
	h ^= h >> 15
	return int32(h)
}

// Partition returns the partition the Java client's default partitioner sends a record
// with key to among numPartitions: toPositive(murmur2(key)) % numPartitions, where
// toPositive clears the sign bit (h & 0x7fffffff, not the absolute value). It is how a
// lookup without ?partition=N finds its key. numPartitions must be positive.
func Partition(key []byte, numPartitions int32) int32 {
	return (Murmur2(key) & 0x7fffffff) % numPartitions
}
