package broker

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/floe-io/floe/coordapi"
)

// TestTrimUnread: acquired records past the last batch read go back to
// the coordinator unread, never out to a client as gaps; offsets missing
// between batches (the log's own gaps) stay acquired.
func TestTrimUnread(t *testing.T) {
	acq := func(rs ...[2]int64) []coordapi.ShareAcquiredRecords {
		var out []coordapi.ShareAcquiredRecords
		for _, r := range rs {
			out = append(out, coordapi.ShareAcquiredRecords{First: r[0], Last: r[1], DeliveryCount: 1})
		}
		return out
	}
	for _, tc := range []struct {
		name     string
		batches  []txnBatch
		acquired []coordapi.ShareAcquiredRecords
		kept     string
		unread   [][2]int64
	}{
		{name: "all read", batches: []txnBatch{{base: 0, n: 5}, {base: 5, n: 5}}, acquired: acq([2]int64{0, 9}), kept: "0-9(1)"},
		{name: "a gap between batches stays", batches: []txnBatch{{base: 0, n: 3}, {base: 7, n: 3}}, acquired: acq([2]int64{0, 9}), kept: "0-9(1)"},
		{name: "the read stopped inside a run", batches: []txnBatch{{base: 0, n: 4}}, acquired: acq([2]int64{0, 9}),
			kept: "0-3(1)", unread: [][2]int64{{4, 9}}},
		{name: "whole runs past the read", batches: []txnBatch{{base: 10, n: 5}}, acquired: acq([2]int64{10, 14}, [2]int64{20, 29}, [2]int64{40, 41}),
			kept: "10-14(1)", unread: [][2]int64{{20, 29}, {40, 41}}},
		{name: "nothing read", acquired: acq([2]int64{3, 5}), unread: [][2]int64{{3, 5}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kept, unread := trimUnread(batchBytes(t, tc.batches), tc.acquired)
			if got := acquiredString(kept); got != tc.kept {
				t.Errorf("kept %q, want %q", got, tc.kept)
			}
			var got [][2]int64
			for _, u := range unread {
				if !slices.Equal(u.Types, []int8{coordapi.ShareAckReturnUnread}) {
					t.Errorf("unread %d-%d with types %v", u.First, u.Last, u.Types)
				}
				got = append(got, [2]int64{u.First, u.Last})
			}
			if !slices.Equal(got, tc.unread) {
				t.Errorf("unread %v, want %v", got, tc.unread)
			}
		})
	}
}

// downGroups is a group coordinator that cannot be reached.
type downGroups struct{ coordapi.GroupCoordinator }

func (downGroups) ShareAcquire(context.Context, coordapi.ShareAcquireRequest) (coordapi.ShareAcquireResponse, error) {
	return coordapi.ShareAcquireResponse{}, errors.New("group coordinator unreachable")
}

// TestShareAcquireCoordinatorDown: when the group coordinator cannot be
// asked, each partition answers KAFKA_STORAGE_ERROR (retriable) and the
// answer still names a lock duration, Kafka's default, since a client
// given 0 clamps its lock to 1 s.
func TestShareAcquireCoordinatorDown(t *testing.T) {
	b := newTestBroker(t, Deps{Coordinator: newTestCoordinator(t), Groups: downGroups{}})
	areq := coordapi.ShareAcquireRequest{Group: "g", Member: "m", Partitions: []coordapi.ShareAcquirePartition{
		{Partition: 0, Fetch: true}, {Partition: 1, Acks: []coordapi.ShareAckBatch{{First: 0, Last: 0, Types: []int8{1}}}},
	}}
	aresp, _ := b.shareAcquire(t.Context(), areq, true)
	if aresp.LockDurationMs != defaultShareLockMs {
		t.Errorf("lock duration %d, want %d", aresp.LockDurationMs, defaultShareLockMs)
	}
	if len(aresp.Partitions) != 2 || aresp.Partitions[0].ErrorCode != kerr.KafkaStorageError.Code ||
		aresp.Partitions[1].AckErrorCode != kerr.KafkaStorageError.Code {
		t.Errorf("partitions %+v, want KAFKA_STORAGE_ERROR", aresp.Partitions)
	}
	if got := b.shareLockMs(t.Context(), "g"); got != defaultShareLockMs {
		t.Errorf("shareLockMs %d, want %d", got, defaultShareLockMs)
	}
}
