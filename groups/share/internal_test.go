package share

import (
	"fmt"
	"strings"
	"testing"
)

// TestApplyInternal checks the broker's internal acknowledgements on this
// state (lock limit 3):
//
//	0-4 acquired by a via 1 (count 1), 5 available (count 1), 6 acked,
//	7-9 acquired by b via 2 (count 1); SPSO 0, end 10.
func TestApplyInternal(t *testing.T) {
	setup := func(t *testing.T) *env {
		e := newEnv(t, Config{DeliveryCountLimit: 3}, 0)
		e.acquire(AcquireRequest{Member: "a", Via: 1, MaxRecords: 7, Bound: 100})
		if err := e.ack("a", 1, ack(5, 5, AckRelease), ack(6, 6, AckAccept)); err != nil {
			t.Fatal(err)
		}
		e.acquire(AcquireRequest{Member: "b", Via: 2, MaxRecords: 4, Bound: 10})
		// b took 5 back as well (count 2), then 7-9.
		if err := e.ack("b", 2, ack(5, 5, AckRelease)); err != nil {
			t.Fatal(err)
		}
		return e
	}
	for _, tc := range []struct {
		name     string
		member   string
		via      int32
		batches  []AckBatch
		want     string // the ranges after, as format prints them
		archived int64
		released int64
	}{
		{
			name: "archive aborted, whoever holds them", member: "a", via: 1,
			batches:  []AckBatch{ack(3, 8, AckArchiveAborted)},
			want:     "spso=0 end=10\n0-2 acquired(1) a\n3-4 archived(1)\n5-5 archived(2)\n6-6 acknowledged(1)\n7-8 archived(1)\n9-9 acquired(1) b\n",
			archived: 5, // 3, 4, 5 (available), 7, 8; 6 was acknowledged
		},
		{
			name: "archive the head moves SPSO", member: "a", via: 1,
			batches: []AckBatch{ack(0, 4, AckArchiveAborted)},
			want:    "spso=5 end=10\n5-5 available(2)\n6-6 acknowledged(1)\n7-9 acquired(1) b\n", archived: 5,
		},
		{
			name: "return unread: only the member's through via", member: "a", via: 1,
			batches: []AckBatch{ack(2, 9, AckReturnUnread)},
			want:    "spso=0 end=10\n0-1 acquired(1) a\n2-4 available(0)\n5-5 available(2)\n6-6 acknowledged(1)\n7-9 acquired(1) b\n", released: 3,
		},
		{
			name: "return unread through another broker does nothing", member: "a", via: 2,
			batches: []AckBatch{ack(0, 4, AckReturnUnread)},
			want:    "spso=0 end=10\n0-4 acquired(1) a\n5-5 available(2)\n6-6 acknowledged(1)\n7-9 acquired(1) b\n",
		},
		{
			name: "per-offset types, out of range and client types skipped", member: "b", via: 2,
			batches: []AckBatch{ack(7, 9, AckArchiveAborted, AckAccept, AckReturnUnread), ack(10, 20, AckArchiveAborted)},
			want:    "spso=0 end=10\n0-4 acquired(1) a\n5-5 available(2)\n6-6 acknowledged(1)\n7-7 archived(1)\n8-8 acquired(1) b\n9-9 available(0)\n", archived: 1, released: 1,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := setup(t)
			res := e.after(e.p.ApplyInternal(tc.member, tc.via, tc.batches))
			if got := brief(e.p); got != tc.want {
				t.Errorf("ranges:\n%s\nwant:\n%s", got, tc.want)
			}
			if res.Stats.ArchivedAborted != tc.archived || res.Stats.Released != tc.released {
				t.Errorf("stats %+v, want %d archived aborted, %d released", res.Stats, tc.archived, tc.released)
			}
			if tc.released > 0 && !res.Wake {
				t.Errorf("returned records did not wake held fetches")
			}
		})
	}
}

// brief prints SPSO, end and the ranges without deadlines or brokers.
func brief(p *Partition) string {
	var b strings.Builder
	fmt.Fprintf(&b, "spso=%d end=%d\n", p.start, p.end)
	for _, r := range p.ranges {
		fmt.Fprintf(&b, "%d-%d %s(%d)", r.First, r.Last, strings.ToLower(r.State.String()), r.DeliveryCount)
		if r.Member != "" {
			fmt.Fprintf(&b, " %s", r.Member)
		}
		b.WriteByte('\n')
	}
	return b.String()
}
