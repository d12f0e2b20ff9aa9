package kvindex

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

func TestMurmur2Vectors(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int32
	}{
		{"", 275646681},
		{"100:48069", 1009543857},
		// Apache Kafka's UtilsTest.testMurmur2.
		{"21", -973932308},
		{"foobar", -790332482},
		{"a-little-bit-long-string", -985981536},
		{"a-little-bit-longer-string", -1486304829},
		{"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971},
		{"abc", 479470107},
	} {
		if got := Murmur2([]byte(tc.in)); got != tc.want {
			t.Errorf("Murmur2(%q) = %d, want %d", tc.in, got, tc.want)
		}
	}
}

func TestPartitionVectors(t *testing.T) {
	for _, tc := range []struct {
		key  string
		n    int32
		want int32
	}{
		{"missing", 3, 2},
		{"", 1, 0},
		// toPositive, not abs: Murmur2("21") is negative.
		{"21", 1 << 30, int32((-973932308 & 0x7fffffff) % (1 << 30))},
	} {
		if got := Partition([]byte(tc.key), tc.n); got != tc.want {
			t.Errorf("Partition(%q, %d) = %d, want %d", tc.key, tc.n, got, tc.want)
		}
	}
}

// TestPartitionMatchesFranzGo checks Partition against franz-go's StickyKeyPartitioner,
// which hashes keys with its own copy of Kafka's murmur2, over random keys of every
// length class (tails of 0-3 bytes, bytes with the high bit set) and partition counts.
func TestPartitionMatchesFranzGo(t *testing.T) {
	kp := kgo.StickyKeyPartitioner(nil).ForTopic("t")
	rng := rand.New(rand.NewPCG(1, 2))
	counts := []int{1, 2, 3, 7, 12, 64, 1000, math.MaxInt32}
	for i := range 20000 {
		key := make([]byte, i%67)
		for j := range key {
			key[j] = byte(rng.UintN(256))
		}
		n := counts[i%len(counts)]
		want := kp.Partition(&kgo.Record{Key: key}, n)
		if got := Partition(key, int32(n)); int(got) != want {
			t.Fatalf("Partition(%x, %d) = %d, franz-go %d", key, n, got, want)
		}
	}
}

func BenchmarkPartition(b *testing.B) {
	key := []byte("user-0000123456")
	for b.Loop() {
		Partition(key, 12)
	}
}
