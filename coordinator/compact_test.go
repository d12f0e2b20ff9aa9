package coordinator

import (
	"math"
	"slices"
	"testing"
)

// TestProducerLastOffsets: a compaction job keeps, as bare headers, the
// batches ending at each producer's last offset on the partition; the
// offset comes from the producer's last remembered batch, its sequence
// range wrapping past MaxInt32 included, and only those in the job's range.
func TestProducerLastOffsets(t *testing.T) {
	e := newEnv(t)
	tp := e.topic("c", 2, map[string]string{"cleanup.policy": "compact"})
	e.commit("o1",
		idem(tp.ID, 0, 2, 7, 0, 0),               // producer 7: offsets 0-2
		idem(tp.ID, 0, 1, 7, 0, 3),               // then 3-4, its last
		idem(tp.ID, 0, 2, 9, 0, math.MaxInt32-1), // producer 9: 5-7, sequences wrapping
		plain(tp.ID, 0, 0),                       // 8: no producer
		idem(tp.ID, 1, 0, 7, 0, 5),               // another partition
	)
	pk := partKey{tp.ID, 0}
	for _, tc := range []struct {
		lo, hi int64
		want   []int64
	}{
		{0, 100, []int64{4, 7}},
		{0, 5, []int64{4}},
		{5, 7, []int64{7}},
		{8, 100, nil},
	} {
		if got := e.c.producerLastOffsets(pk, tc.lo, tc.hi); !slices.Equal(got, tc.want) {
			t.Errorf("producer last offsets in %d-%d: %v, want %v", tc.lo, tc.hi, got, tc.want)
		}
	}
}
