package idempotence

import (
	"math"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/coordinator/layout"
)

func TestLastSequence(t *testing.T) {
	for _, tc := range []struct{ base, delta, want int32 }{
		{0, 0, 0},
		{5, 9, 14},
		{math.MaxInt32, 0, math.MaxInt32},
		{math.MaxInt32, 1, 0}, // wraps as Kafka's incrementSequence
		{math.MaxInt32 - 2, 4, 1},
	} {
		if got := LastSequence(tc.base, tc.delta); got != tc.want {
			t.Errorf("LastSequence(%d, %d) = %d, want %d", tc.base, tc.delta, got, tc.want)
		}
	}
}

// TestCheck walks a producer's state through Kafka's rules: each step
// checks a batch (epoch, base sequence, records) against the state so far
// and, when it is accepted, records it at the next offset.
func TestCheck(t *testing.T) {
	type step struct {
		name    string
		epoch   int16
		seq     int32
		records int32
		code    *kerr.Error
		dupOf   int64 // a duplicate answers this base offset; -1: not one
	}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"unknown producer takes any sequence, then continues", []step{
			{"first at 7", 0, 7, 3, nil, -1},
			{"next", 0, 10, 1, nil, -1},
			{"a gap", 0, 12, 1, kerr.OutOfOrderSequenceNumber, -1},
			{"a step back", 0, 9, 1, kerr.OutOfOrderSequenceNumber, -1},
		}},
		{"duplicates of the last five answer their offsets", []step{
			{"b0", 0, 0, 2, nil, -1},
			{"b1", 0, 2, 2, nil, -1},
			{"b2", 0, 4, 2, nil, -1},
			{"b0 again", 0, 0, 2, nil, 0},
			{"b2 again", 0, 4, 2, nil, 4},
			{"b0's start, another length", 0, 0, 3, kerr.OutOfOrderSequenceNumber, -1},
			{"b3", 0, 6, 1, nil, -1},
			{"b4", 0, 7, 1, nil, -1},
			{"b5", 0, 8, 1, nil, -1},
			{"b0 again, forgotten (six back)", 0, 0, 2, kerr.OutOfOrderSequenceNumber, -1},
			{"b1 again, the oldest kept", 0, 2, 2, nil, 2},
		}},
		{"epochs", []step{
			{"epoch 1", 1, 0, 1, nil, -1},
			{"an older epoch is fenced", 0, 1, 1, kerr.InvalidProducerEpoch, -1},
			{"a newer epoch not at 0", 2, 5, 1, kerr.OutOfOrderSequenceNumber, -1},
			{"a newer epoch at 0", 2, 0, 1, nil, -1},
			{"epoch 1's batch again is now fenced", 1, 0, 1, kerr.InvalidProducerEpoch, -1},
			{"continues in epoch 2", 2, 1, 1, nil, -1},
		}},
		{"sequence wraps at MaxInt32", []step{
			{"up to MaxInt32", 0, math.MaxInt32 - 1, 2, nil, -1},
			{"0 follows", 0, 0, 1, nil, -1},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := layout.Producer{Epoch: NoEpoch}
			next := int64(0)
			for _, s := range tc.steps {
				cb := coordapi.CommitBatch{ProducerID: 1, ProducerEpoch: s.epoch, BaseSequence: s.seq, LastOffsetDelta: s.records - 1}
				code, dup := Check(&p, &cb)
				var want int16
				if s.code != nil {
					want = s.code.Code
				}
				if code != want {
					t.Fatalf("%s: code %d (%v), want %v", s.name, code, kerr.ErrorForCode(code), s.code)
				}
				switch {
				case s.dupOf >= 0 && (dup == nil || dup.BaseOffset != s.dupOf):
					t.Fatalf("%s: duplicate %+v, want one at offset %d", s.name, dup, s.dupOf)
				case s.dupOf < 0 && dup != nil:
					t.Fatalf("%s: a duplicate of %+v", s.name, dup)
				}
				if code == 0 && dup == nil {
					Record(&p, &cb, next, 1000, 2000)
					next += int64(s.records)
				}
			}
			if p.N > layout.MaxProducerBatches {
				t.Errorf("%d batches remembered, at most %d", p.N, layout.MaxProducerBatches)
			}
		})
	}
}
