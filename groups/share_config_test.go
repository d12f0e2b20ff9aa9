package groups

import (
	"testing"

	"github.com/floe-io/floe/coordapi"
)

// TestShareDeliveryCountLimitConfig: the group config
// share.delivery.count.limit (Kafka 4.4, KIP-1240) overrides
// --group-share-delivery-count-limit for the group's share-partitions,
// including those already started: at 2, a record released at its second
// delivery is archived, never delivered a third time.
func TestShareDeliveryCountLimitConfig(t *testing.T) {
	for _, tc := range []struct {
		name  string
		limit string // "": the default, 5
		third string // what a third acquisition gets
	}{
		{"default", "", "0-2(3) batches 0-2"},
		{"group config 2", "2", "3-5(1) batches 3-5"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, _, tid := shareFetchHarness(t)
			if tc.limit != "" {
				if code, msg := h.alterGroupConfig("g", cfgShareDeliveryCountLimit, tc.limit); code != 0 {
					t.Fatalf("alter: %s %s", errName(code), msg)
				}
			}
			for i, want := range []string{"0-2(1) batches 0-2", "0-2(2) batches 0-2"} {
				var acks []coordapi.ShareAckBatch
				if i > 0 {
					acks = append(acks, ackOf(0, 2, 2))
				}
				if got := acquired(h.acquire(acquireReq("m1", 1, tid, 3, coordapi.ShareAcquireRecordLimit, acks...))); got != want {
					t.Fatalf("acquisition %d: %s, want %s", i+1, got, want)
				}
			}
			got := acquired(h.acquire(acquireReq("m1", 1, tid, 3, coordapi.ShareAcquireRecordLimit, ackOf(0, 2, 2))))
			if got != tc.third {
				t.Fatalf("third acquisition: %s, want %s", got, tc.third)
			}
		})
	}
}
