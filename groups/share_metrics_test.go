package groups

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/groups/sharegroups"
)

// shareMetricsOf returns group's metrics as ShareMetrics reports them.
func (h *harness) shareMetricsOf(group string) sharegroups.GroupMetrics {
	h.t.Helper()
	var out *sharegroups.GroupMetrics
	if err := h.gs.ShareMetrics(context.Background(), func(m sharegroups.GroupMetrics) {
		if m.Group == group {
			out = &m
		}
	}); err != nil {
		h.t.Fatal(err)
	}
	if out == nil {
		h.t.Fatalf("no metrics for share group %s", group)
	}
	return *out
}

// TestShareMetrics runs a share-partition through a fetch, an accept, a
// release, a reject, a gap, a lock expiry at the delivery count limit, a
// session release and the log start passing SPSO, and reads the counts,
// SPSO, completed and in-flight records ShareMetrics reports after each.
func TestShareMetrics(t *testing.T) {
	h, st, tid := shareFetchHarness(t, func(o *Options) { o.ShareDeliveryCountLimit = 2 })
	type want struct {
		counts                     sharegroups.Counts
		start, completed, inFlight int64
	}
	check := func(step string, w want) {
		t.Helper()
		m := h.shareMetricsOf("g")
		if len(m.Topics) != 1 || m.Topics[0].Topic != "t" || m.Topics[0].TopicID != tid || len(m.Topics[0].Partitions) != 1 {
			t.Fatalf("%s: topics %+v, want t's partition 0", step, m.Topics)
		}
		tm := m.Topics[0]
		if tm.Counts != w.counts {
			t.Errorf("%s: counts\n\t%+v, want\n\t%+v", step, tm.Counts, w.counts)
		}
		p := tm.Partitions[0]
		if got, exp := fmt.Sprint(p.Partition, p.Start, p.Completed, p.InFlight), fmt.Sprint(0, w.start, w.completed, w.inFlight); got != exp {
			t.Errorf("%s: partition, start, completed, in flight %s, want %s", step, got, exp)
		}
	}
	var c sharegroups.Counts
	// Batches 0-2, 3-5 and 6-9.
	h.acquire(acquireReq("m1", 1, tid, 6, coordapi.ShareAcquireBatchOptimized))
	c.Acquired = 6
	check("m1 acquired 0-5", want{c, 0, 0, 6})

	h.acquire(acquireReq("m1", 1, tid, 0, 0, ackOf(0, 1, 1), ackOf(2, 2, 3), ackOf(3, 3, 0), ackOf(4, 5, 2)))
	c.Acknowledged, c.Rejected, c.Gap, c.Released = 2, 1, 1, 2
	check("accepted 0-1, rejected 2, gapped 3, released 4-5", want{c, 4, 0, 0})

	h.acquire(acquireReq("m2", 2, tid, 10, 0))
	c.Redelivered, c.Acquired = 2, 10
	check("m2 acquired 4-5 again and 6-9", want{c, 4, 0, 6})

	// m2's locks expire: 4-5 reached the limit (2) and are archived, 6-9
	// come back.
	h.advance(31 * time.Second)
	c.LockTimeouts, c.ArchivedLimit = 6, 2
	check("locks expired", want{c, 6, 0, 0})

	h.acquire(acquireReq("m1", 1, tid, 10, 0))
	c.Redelivered += 4
	h.acquire(acquireReq("m1", 1, tid, 0, 0, ackOf(6, 6, 1)))
	c.Acknowledged++
	check("m1 acquired 6-9, accepted 6", want{c, 7, 0, 3})

	// The broker m1 fetched through closes its session: 7-9, at their
	// second delivery (the limit), are archived, as Kafka 4.4's
	// releaseAcquiredRecords archives them.
	if err := h.gs.ShareRelease(context.Background(), coordapi.ShareReleaseRequest{Group: "g", Member: "m1", Via: 1}); err != nil {
		t.Fatal(err)
	}
	c.Released += 3
	c.ArchivedLimit += 3
	check("session released", want{c, 10, 0, 0})

	// Acquire 10-11 and accept 11; then the log start passes 12: 10
	// (acquired) is archived, and SPSO moves past the accepted 11.
	st.commit(tid, 4) // 10-13
	h.acquire(acquireReq("m2", 2, tid, 2, coordapi.ShareAcquireRecordLimit))
	c.Acquired += 2
	h.acquire(acquireReq("m2", 2, tid, 0, 0, ackOf(11, 11, 1)))
	c.Acknowledged++
	check("m2 acquired 10-11, accepted 11", want{c, 10, 1, 1})
	st.mu.Lock()
	s := st.states[coordapi.TopicID(tid)]
	s.LogStartOffset = 12
	st.states[coordapi.TopicID(tid)] = s
	st.mu.Unlock()
	h.acquire(acquireReq("m2", 2, tid, 10, 0))
	c.ArchivedLogStart = 1 // 10; 11 was accepted
	c.Acquired += 2        // 12-13
	check("log start 12", want{c, 12, 0, 2})
}

// TestShareMetricsInternalAcks: a broker's internal acknowledgements count
// too: aborted records it archived (read_committed) as archived_aborted,
// records whose bytes it could not read as released.
func TestShareMetricsInternalAcks(t *testing.T) {
	h, _, tid := shareFetchHarness(t)
	h.acquire(acquireReq("m1", 1, tid, 6, coordapi.ShareAcquireBatchOptimized)) // 0-5
	h.acquire(acquireReq("m1", 1, tid, 0, 0,
		ackOf(0, 2, coordapi.ShareAckArchiveAborted), ackOf(3, 4, coordapi.ShareAckReturnUnread)))
	m := h.shareMetricsOf("g")
	if len(m.Topics) != 1 {
		t.Fatalf("topics %+v", m.Topics)
	}
	want := sharegroups.Counts{Acquired: 6, ArchivedAborted: 3, Released: 2}
	if got := m.Topics[0].Counts; got != want {
		t.Errorf("counts\n\t%+v, want\n\t%+v", got, want)
	}
	if p := m.Topics[0].Partitions[0]; p.Start != 3 || p.InFlight != 1 {
		t.Errorf("start %d, in flight %d; want 3 and 1 (offset 5)", p.Start, p.InFlight)
	}
}
