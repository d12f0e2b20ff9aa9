package groups

import (
	"testing"
	"time"

	"github.com/floe-io/floe/coordapi"
)

// TestShareRetention: once the log start passes records of a
// share-partition (retention, DeleteRecords), nothing below it is
// delivered again: available records there are archived, and acquired
// ones too, whether their holder then acknowledges them (the
// acknowledgements below SPSO are skipped, without error) or lets their
// lock expire. Batches 0-2, 3-5, 6-9; m1 holds 0-1 and 4-5, 2-3 are
// available again, 6-9 were never acquired; the log start moves to 5.
func TestShareRetention(t *testing.T) {
	for _, tc := range []struct {
		name string
		// end is how m1's records below the log start end.
		end func(h *harness, tid topicID)
		// want is m2's acquisition once m1's records ended: 6-9, which
		// m2 gave back, and 5 if m1's lock on it expired.
		want string
	}{
		{
			name: "holder acknowledges",
			end: func(h *harness, tid topicID) {
				a := h.acquire(acquireReq("m1", 1, tid, 0, 0, ackOf(0, 1, 1), ackOf(4, 5, 1)))
				if a.AckErrorCode != 0 {
					t.Fatalf("acks across the log start: %s %s", errName(a.AckErrorCode), a.AckErrorMessage)
				}
			},
			want: "6-9(2) batches 6-9",
		},
		{
			name: "locks expire",
			end:  func(h *harness, tid topicID) { h.advance(31 * time.Second) },
			want: "5-9(2) batches 3-5 6-9",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, st, tid := shareFetchHarness(t)
			if a := h.acquire(acquireReq("m1", 1, tid, 6, coordapi.ShareAcquireRecordLimit)); acquired(a) != "0-5(1) batches 0-2 3-5" {
				t.Fatalf("m1 acquires: %s", acquired(a))
			}
			if a := h.acquire(acquireReq("m1", 1, tid, 0, 0, ackOf(2, 3, 2))); a.AckErrorCode != 0 {
				t.Fatalf("m1 releases 2-3: %s", errName(a.AckErrorCode))
			}
			st.mu.Lock()
			s := st.states[coordapi.TopicID(tid)]
			s.LogStartOffset = 5
			st.states[coordapi.TopicID(tid)] = s
			st.mu.Unlock()

			// m2 comes first: it moves SPSO to the log start, and gets
			// nothing below it.
			if a := h.acquire(acquireReq("m2", 1, tid, 100, 0)); acquired(a) != "6-9(1) batches 6-9" {
				t.Fatalf("m2 after the log start moved: %s", acquired(a))
			}
			if sp := h.sharePart("g", tid, 0); sp.Start() != 5 {
				t.Fatalf("SPSO %d, want 5: %s", sp.Start(), rangesOf(sp))
			}
			// m2 gives 6-9 back, then m1's records end.
			if a := h.acquire(acquireReq("m2", 1, tid, 0, 0, ackOf(6, 9, 2))); a.AckErrorCode != 0 {
				t.Fatalf("m2 releases: %s", errName(a.AckErrorCode))
			}
			tc.end(h, tid)
			a := h.acquire(acquireReq("m2", 1, tid, 100, 0))
			if got := acquired(a); got != tc.want {
				t.Fatalf("m2 after m1's records ended: %s, want %s", got, tc.want)
			}
			for _, r := range a.Acquired {
				if r.First < 5 {
					t.Fatalf("offset %d below the log start delivered", r.First)
				}
			}
			// Nothing below 5 ever comes back: after every lock
			// expires, only 5-9 are acquirable again.
			h.advance(31 * time.Second)
			if a := h.acquire(acquireReq("m1", 1, tid, 100, 0)); len(a.Acquired) == 0 || a.Acquired[0].First < 5 {
				t.Fatalf("after every lock expired: %s", acquired(a))
			}
			if sp := h.sharePart("g", tid, 0); sp.Start() < 5 {
				t.Fatalf("SPSO %d below the log start: %s", sp.Start(), rangesOf(sp))
			}
		})
	}
}
