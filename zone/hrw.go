package zone

// chunkHash hashes a chunk's identity, its object key and chunk index, to
// the 64 bits every member's score mixes with its node id. FNV-1a and the
// mixer below are fixed functions: every broker computes the same owner.
func chunkHash(key string, idx int64) uint64 {
	const (
		offset64 = 14695981039346656037
		prime64  = 1099511628211
	)
	h := uint64(offset64)
	for i := 0; i < len(key); i++ {
		h ^= uint64(key[i])
		h *= prime64
	}
	return mix64(h ^ mix64(uint64(idx)))
}

// score is node's weight for the chunk whose hash is h: the owner is the
// member with the highest.
func score(h uint64, node int32) uint64 {
	return mix64(h ^ (uint64(uint32(node))+1)*0x9e3779b97f4a7c15)
}

// mix64 is SplitMix64's finalizer: a bijection that spreads every input
// bit over the output, so nearby node ids and indexes score independently.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}
