package coordapi

import (
	"fmt"
	"testing"
)

// TestShardOfStable pins the mapping: it places partitions durably, so a
// change of hash or encoding would move partitions without a handover.
func TestShardOfStable(t *testing.T) {
	id := TopicID{0x5a, 0x0b, 0x1c, 0x2d, 0x3e, 0x4f, 0x50, 0x61, 0x72, 0x83, 0x94, 0xa5, 0xb6, 0xc7, 0xd8, 0xe9}
	for _, tc := range []struct {
		partition int32
		shards    int
		want      int
	}{
		{0, 0, 0}, {0, 1, 0}, {7, 1, 0},
		{0, 2, 0}, {1, 2, 1}, {2, 2, 1}, {3, 2, 1},
		{0, 4, 0}, {1, 4, 1}, {2, 4, 1}, {3, 4, 1},
		{0, 16, 6}, {1, 16, 15}, {999, 16, 13},
	} {
		if got := ShardOf(id, tc.partition, tc.shards); got != tc.want {
			t.Errorf("ShardOf(%s, %d, %d) = %d, want %d", id, tc.partition, tc.shards, got, tc.want)
		}
	}
}

// TestJump checks the hash against the vectors other implementations of
// the paper's code publish (the Python and Rust jump packages, go-jump).
func TestJump(t *testing.T) {
	for _, tc := range []struct {
		key     uint64
		buckets int
		want    int
	}{
		{1, 1, 0}, {256, 1024, 520}, {0, 60, 0}, {1, 60, 55}, {2, 60, 46}, {42, 57, 43}, {0xDEAD10CC, 666, 361},
	} {
		if got := jump(tc.key, tc.buckets); got != tc.want {
			t.Errorf("jump(%d, %d) = %d, want %d", tc.key, tc.buckets, got, tc.want)
		}
	}
}

// TestShardOfSpreadAndGrowth checks the two properties placement relies
// on, over 100,000 partitions of 100 topics: every shard gets close to its
// share, and growing the count by one moves about 1/(n+1) of the
// partitions, every one of them to the new shard.
func TestShardOfSpreadAndGrowth(t *testing.T) {
	const topics, perTopic = 100, 1000
	for _, n := range []int{2, 3, 4, 8, 16} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			counts := make([]int, n+1)
			moved := 0
			for ti := range topics {
				id := TopicID{byte(ti), byte(ti >> 8), 0xf1, 0x0e}
				for p := range int32(perTopic) {
					from, to := ShardOf(id, p, n), ShardOf(id, p, n+1)
					if from < 0 || from >= n {
						t.Fatalf("shard %d of %d", from, n)
					}
					counts[from]++
					if from != to {
						moved++
						if to != n {
							t.Fatalf("partition %s/%d moved from shard %d to %d growing to %d shards: only to the new one", id, p, from, to, n+1)
						}
					}
				}
			}
			total := topics * perTopic
			share := float64(total) / float64(n)
			for s, c := range counts[:n] {
				if d := float64(c)/share - 1; d > 0.03 || d < -0.03 {
					t.Errorf("shard %d of %d has %d partitions, %.1f%% off its share %.0f", s, n, c, 100*d, share)
				}
			}
			want := float64(total) / float64(n+1)
			if d := float64(moved)/want - 1; d > 0.03 || d < -0.03 {
				t.Errorf("growing to %d shards moved %d partitions, want about %.0f", n+1, moved, want)
			}
		})
	}
}
