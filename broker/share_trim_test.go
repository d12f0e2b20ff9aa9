package broker

import (
	"context"
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/floe-io/floe/coordapi"
)

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
