package groups

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/groups/share"
	"github.com/floe-io/floe/internal/testkit"
)

// The fake batch coordinator behind share fetches: each partition's
// batches (every partition of a topic alike), found as FindBatches finds
// them, and commit notices (CommitSubscriber).

// FindBatches answers the batches from req.Offset up to the high
// watermark, 100 bytes each, within MaxBytes (the first always);
// OFFSET_OUT_OF_RANGE below the log start or past the high watermark.
func (s *shareTopics) FindBatches(_ context.Context, req coordapi.FindBatchesRequest) (coordapi.FindBatchesResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.states[req.TopicID]
	if req.Offset < st.LogStartOffset || req.Offset > st.HighWatermark {
		return coordapi.FindBatchesResponse{}, kerr.OffsetOutOfRange
	}
	resp := coordapi.FindBatchesResponse{PartitionState: st}
	size := 0
	for _, b := range s.batches[req.TopicID] {
		if b.LastOffset < req.Offset || b.BaseOffset >= st.HighWatermark {
			continue
		}
		if len(resp.Batches) > 0 && size+int(b.ByteLength) > int(req.MaxBytes) {
			break
		}
		size += int(b.ByteLength)
		resp.Batches = append(resp.Batches, b)
	}
	return resp, nil
}

// Subscribe keeps fn for commit.
func (s *shareTopics) Subscribe(fn func([]coordapi.CommitNotice)) func() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.notify = fn
	return func() {}
}

// commit appends batches of the given record counts to topic id's
// partitions and announces them.
func (s *shareTopics) commit(id topicID, sizes ...int64) {
	s.mu.Lock()
	tid := coordapi.TopicID(id)
	st := s.states[tid]
	for _, n := range sizes {
		s.batches[tid] = append(s.batches[tid], coordapi.BatchCoord{ObjectKey: "obj", ObjectSize: 1 << 20,
			ByteOffset: st.HighWatermark * 100, ByteLength: 100, BaseOffset: st.HighWatermark, LastOffset: st.HighWatermark + n - 1})
		st.HighWatermark += n
	}
	st.LastStableOffset = st.HighWatermark
	s.states[tid] = st
	fn := s.notify
	s.mu.Unlock()
	if fn != nil {
		fn([]coordapi.CommitNotice{{TopicID: tid, Partition: 0, HighWatermark: st.HighWatermark}})
	}
}

// shareFetchHarness is a share group "g" of members m1 and m2 on topic "t"
// (one partition, earliest), with batches of 3, 3 and 4 records.
func shareFetchHarness(t *testing.T, mods ...func(*Options)) (*harness, *shareTopics, topicID) {
	t.Helper()
	h, st := newShareHarness(t, mods...)
	tid := st.set("t", 1)
	st.setOffsets(tid, 0, 0)
	st.commit(tid, 3, 3, 4)
	if code, msg := h.alterGroupConfig("g", cfgShareAutoOffsetReset, "earliest"); code != 0 {
		t.Fatalf("earliest: %s %s", errName(code), msg)
	}
	h.shareJoin("g", "m1", "t")
	h.shareJoin("g", "m2", "t")
	return h, st, tid
}

// acquireReq asks for up to maxRecords of partition 0 of tid for member,
// through broker via, with acks.
func acquireReq(member string, via int32, tid topicID, maxRecords int32, mode int8, acks ...coordapi.ShareAckBatch) coordapi.ShareAcquireRequest {
	return coordapi.ShareAcquireRequest{Group: "g", Member: member, Via: via, MaxRecords: maxRecords, BatchSize: maxRecords, Mode: mode, MaxBytes: 1 << 20,
		Partitions: []coordapi.ShareAcquirePartition{{Topic: coordapi.TopicID(tid), Partition: 0, Fetch: maxRecords > 0, Acks: acks}}}
}

func (h *harness) acquire(req coordapi.ShareAcquireRequest) coordapi.ShareAcquired {
	h.t.Helper()
	resp, err := h.gs.ShareAcquire(context.Background(), req)
	if err != nil {
		h.t.Fatalf("share acquire: %v", err)
	}
	if len(resp.Partitions) != 1 {
		h.t.Fatalf("share acquire answered %d partitions", len(resp.Partitions))
	}
	return resp.Partitions[0]
}

func ackOf(first, last int64, types ...int8) coordapi.ShareAckBatch {
	return coordapi.ShareAckBatch{First: first, Last: last, Types: types}
}

// acquired formats an answer's acquired ranges and batches.
func acquired(a coordapi.ShareAcquired) string {
	s := ""
	for _, r := range a.Acquired {
		s += fmt.Sprintf("%d-%d(%d) ", r.First, r.Last, r.DeliveryCount)
	}
	s += "batches"
	for _, b := range a.Batches {
		s += fmt.Sprintf(" %d-%d", b.BaseOffset, b.LastOffset)
	}
	return s
}

func rangesOf(p *share.Partition) string {
	return fmt.Sprint(p.Ranges())
}

// TestShareAcquire runs one share-partition through acquisitions, acks,
// releases and lock expiry, each step's answer and state checked, and the
// state after a restart equal to the one before.
func TestShareAcquire(t *testing.T) {
	h, st, tid := shareFetchHarness(t, func(o *Options) { o.ShareDeliveryCountLimit = 2 })
	lock := (30 * time.Second).Milliseconds()
	now := msOf(h.clk.Now())
	type step struct {
		name    string
		do      func() coordapi.ShareAcquired
		answer  string
		ackCode *kerr.Error
		ranges  string // after the step; "" skips
	}
	for _, s := range []step{
		{name: "batch mode rounds up to whole batches, answered in runs of BatchSize",
			do: func() coordapi.ShareAcquired {
				return h.acquire(acquireReq("m1", 1, tid, 4, coordapi.ShareAcquireBatchOptimized))
			},
			answer: "0-3(1) 4-5(1) batches 0-2 3-5", // split at BatchSize 4
			ranges: fmt.Sprintf("[0-5 acquired(1) m1@1 until %d]", now+lock)},
		{name: "record mode cuts a batch",
			do: func() coordapi.ShareAcquired {
				return h.acquire(acquireReq("m2", 2, tid, 2, coordapi.ShareAcquireRecordLimit))
			},
			answer: "6-7(1) batches 6-9"},
		{name: "accept and release",
			do: func() coordapi.ShareAcquired {
				return h.acquire(acquireReq("m1", 1, tid, 0, 0, ackOf(0, 2, 1), ackOf(3, 5, 2)))
			},
			answer: "batches",
			ranges: fmt.Sprintf("[3-5 available(1) 6-7 acquired(1) m2@2 until %d]", now+lock)},
		{name: "released records come back with count 2, then new ones",
			do:     func() coordapi.ShareAcquired { return h.acquire(acquireReq("m2", 2, tid, 10, 0)) },
			answer: "3-5(2) 8-9(1) batches 3-5 6-9"},
		{name: "an unknown ack type fails the call's acks: none applies",
			do: func() coordapi.ShareAcquired {
				return h.acquire(acquireReq("m2", 2, tid, 0, 0, ackOf(3, 3, 1), ackOf(4, 4, 9)))
			},
			answer: "batches", ackCode: kerr.InvalidRequest,
			ranges: fmt.Sprintf("[3-5 acquired(2) m2@2 until %d 6-9 acquired(1) m2@2 until %d]", now+lock, now+lock)},
		{name: "an ack of a record another member holds",
			do: func() coordapi.ShareAcquired {
				return h.acquire(acquireReq("m1", 1, tid, 0, 0, ackOf(3, 3, 1)))
			},
			answer: "batches", ackCode: kerr.InvalidRecordState,
			ranges: fmt.Sprintf("[3-5 acquired(2) m2@2 until %d 6-9 acquired(1) m2@2 until %d]", now+lock, now+lock)},
		{name: "nothing left",
			do:     func() coordapi.ShareAcquired { return h.acquire(acquireReq("m1", 1, tid, 10, 0)) },
			answer: "batches"},
	} {
		a := s.do()
		if got := acquired(a); got != s.answer {
			t.Fatalf("%s: answered %q, want %q", s.name, got, s.answer)
		}
		if a.ErrorCode != 0 {
			t.Fatalf("%s: %s", s.name, errName(a.ErrorCode))
		}
		want := int16(0)
		if s.ackCode != nil {
			want = s.ackCode.Code
		}
		if a.AckErrorCode != want {
			t.Fatalf("%s: ack %s, want %s (%s)", s.name, errName(a.AckErrorCode), errName(want), a.AckErrorMessage)
		}
		if got := rangesOf(h.sharePart("g", tid, 0)); s.ranges != "" && got != s.ranges {
			t.Fatalf("%s: ranges %s, want %s", s.name, got, s.ranges)
		}
	}

	// A restart keeps the acquisitions and re-arms their deadlines.
	before := rangesOf(h.sharePart("g", tid, 0))
	h.restart()
	if after := rangesOf(h.sharePart("g", tid, 0)); after != before {
		t.Fatalf("after restart %s, want %s", after, before)
	}
	// The locks expire: 3-5 were delivered twice, the limit, and are
	// archived; 6-9 come back.
	h.advance(31 * time.Second)
	if got := rangesOf(h.sharePart("g", tid, 0)); got != "[6-9 available(1)]" {
		t.Fatalf("after the locks expired: %s", got)
	}
	if a := h.acquire(acquireReq("m1", 1, tid, 10, 0)); acquired(a) != "6-9(2) batches 6-9" {
		t.Fatalf("after expiry: %s", acquired(a))
	}
	// ShareRelease gives back only what went out through its broker.
	st.commit(tid, 2)
	if a := h.acquire(acquireReq("m1", 2, tid, 10, 0)); acquired(a) != "10-11(1) batches 10-11" {
		t.Fatalf("through broker 2: %s", acquired(a))
	}
	if err := h.gs.ShareRelease(context.Background(), coordapi.ShareReleaseRequest{Group: "g", Member: "m1", Via: 1}); err != nil {
		t.Fatal(err)
	}
	now = msOf(h.clk.Now())
	// 6-9, at their second delivery (the limit), are archived, as Kafka
	// 4.4's releaseAcquiredRecords archives them.
	if got, want := rangesOf(h.sharePart("g", tid, 0)), fmt.Sprintf("[10-11 acquired(1) m1@2 until %d]", now+lock); got != want {
		t.Fatalf("after releasing broker 1's: %s, want %s", got, want)
	}
	h.restart()
	if got, want := rangesOf(h.sharePart("g", tid, 0)), fmt.Sprintf("[10-11 acquired(1) m1@2 until %d]", now+lock); got != want {
		t.Fatalf("after a restart: %s, want %s", got, want)
	}
}

// TestShareAcquireErrors: acks on a group or partition with nothing in
// flight are INVALID_RECORD_STATE; fetching a partition never assigned
// acquires nothing; the log start passing SPSO archives what lies below.
func TestShareAcquireErrors(t *testing.T) {
	h, st, tid := shareFetchHarness(t)
	req := acquireReq("m1", 1, tid, 0, 0, ackOf(0, 0, 1))
	req.Group = "nope"
	if a := h.acquire(req); a.AckErrorCode != kerr.InvalidRecordState.Code {
		t.Fatalf("ack in an unknown group: %s", errName(a.AckErrorCode))
	}
	if a := h.acquire(acquireReq("m1", 1, tid, 0, 0, ackOf(0, 0, 1))); a.AckErrorCode != kerr.InvalidRecordState.Code {
		t.Fatalf("ack of nothing: %s", errName(a.AckErrorCode))
	}
	other := acquireReq("m1", 1, tid, 10, 0)
	other.Partitions[0].Partition = 7
	if a := h.acquire(other); len(a.Acquired) != 0 || a.ErrorCode != 0 {
		t.Fatalf("partition never assigned: %+v", a)
	}
	// Retention passes offset 4: SPSO moves there and batch 3-5 is the
	// first answered.
	st.mu.Lock()
	s := st.states[coordapi.TopicID(tid)]
	s.LogStartOffset = 4
	st.states[coordapi.TopicID(tid)] = s
	st.mu.Unlock()
	a := h.acquire(acquireReq("m1", 1, tid, 1, coordapi.ShareAcquireRecordLimit))
	if acquired(a) != "4-4(1) batches 3-5" || a.LogStartOffset != 4 {
		t.Fatalf("after the log start moved: %s %+v", acquired(a), a.PartitionState)
	}
	if sp := h.sharePart("g", tid, 0); sp.Start() != 4 {
		t.Fatalf("SPSO %d, want 4", sp.Start())
	}
}

// waitHeld waits until n ShareAcquires are held on tid's partition 0.
func (h *harness) waitHeld(tid topicID, n int) {
	h.t.Helper()
	testkit.CheckFor(h.t, 10*time.Second, time.Millisecond, func() error {
		got := h.gs.shares.Held(tid, 0)
		if got != n {
			return fmt.Errorf("%d held share acquires, want %d", got, n)
		}
		return nil
	})
}

// TestShareAcquireHeld: with nothing to acquire, a ShareAcquire waits
// until records are committed, released or expire, and answers empty at
// its max wait, or when its member's records were released through its
// broker meanwhile.
func TestShareAcquireHeld(t *testing.T) {
	h, st, tid := shareFetchHarness(t)
	if a := h.acquire(acquireReq("m1", 1, tid, 100, 0)); acquired(a) != "0-9(1) batches 0-2 3-5 6-9" {
		t.Fatalf("m1 takes everything: %s", acquired(a))
	}
	held := func(req coordapi.ShareAcquireRequest) chan coordapi.ShareAcquired {
		req.MaxWaitMs = 20_000
		out := make(chan coordapi.ShareAcquired, 1)
		go func() {
			resp, err := h.gs.ShareAcquire(context.Background(), req)
			if err != nil {
				t.Error(err)
			}
			out <- resp.Partitions[0]
		}()
		h.waitHeld(tid, 1)
		return out
	}
	for _, c := range []struct {
		name string
		wake func()
		want string
	}{
		{"commit", func() { st.commit(tid, 2) }, "10-11(1) batches 10-11"},
		{"release", func() {
			if err := h.gs.ShareRelease(context.Background(), coordapi.ShareReleaseRequest{Group: "g", Member: "m1", Via: 1}); err != nil {
				t.Error(err)
			}
		}, "0-9(2) batches 0-2 3-5 6-9"},
		{"expiry", func() { h.advance(31 * time.Second) }, "0-9(3) 10-11(2) batches 0-2 3-5 6-9 10-11"},
	} {
		ch := held(acquireReq("m2", 2, tid, 100, 0))
		c.wake()
		if a := <-ch; acquired(a) != c.want {
			t.Fatalf("woken by %s: %s, want %s", c.name, acquired(a), c.want)
		}
		h.waitHeld(tid, 0)
	}
	// A release of the member's records through its broker (its session
	// there closed) makes a held acquire of that member and broker give up:
	// woken by the next commit, it acquires nothing, and the records stay
	// available.
	ch := held(acquireReq("m2", 2, tid, 100, 0))
	if err := h.gs.ShareRelease(context.Background(), coordapi.ShareReleaseRequest{Group: "g", Member: "m2", Via: 2, Partitions: []coordapi.TopicPartition{}}); err != nil {
		t.Fatal(err)
	}
	st.commit(tid, 1)
	if a := <-ch; len(a.Acquired) != 0 {
		t.Fatalf("a held acquire after its broker released the member's records: %s", acquired(a))
	}
	h.waitHeld(tid, 0)
	if a := h.acquire(acquireReq("m1", 1, tid, 100, 0)); acquired(a) != "12-12(1) batches 12-12" {
		t.Fatalf("the record committed meanwhile: %s", acquired(a))
	}
	// Nothing comes: answered empty at the max wait.
	req := acquireReq("m1", 1, tid, 100, 0)
	req.MaxWaitMs = 1
	if a := h.acquire(req); len(a.Acquired) != 0 {
		t.Fatalf("at the max wait: %s", acquired(a))
	}
	// A failed ack is answered at once, without waiting.
	req = acquireReq("m1", 1, tid, 100, 0, ackOf(0, 0, 1))
	req.MaxWaitMs = 20_000
	if a := h.acquire(req); a.AckErrorCode != kerr.InvalidRecordState.Code {
		t.Fatalf("ack of another's record: %s", errName(a.AckErrorCode))
	}
}

// TestShareRenew: a renewal (ack type 4, IsRenewAck) restarts the lock of
// the records it names, and moves them to the renewing broker; the
// records left alone expire on their first deadline.
func TestShareRenew(t *testing.T) {
	h, _, tid := shareFetchHarness(t)
	if a := h.acquire(acquireReq("m1", 1, tid, 100, 0)); acquired(a) != "0-9(1) batches 0-2 3-5 6-9" {
		t.Fatalf("acquire: %s", acquired(a))
	}
	h.advance(20 * time.Second)
	renew := acquireReq("m1", 2, tid, 0, 0, ackOf(0, 2, 4))
	renew.Renew = true
	if a := h.acquire(renew); a.AckErrorCode != 0 || len(a.Acquired) != 0 {
		t.Fatalf("renew: %s %s", errName(a.AckErrorCode), acquired(a))
	}
	h.advance(20 * time.Second)
	renewed := msOf(h.clk.Now()) + (10 * time.Second).Milliseconds()
	if got, want := rangesOf(h.sharePart("g", tid, 0)), fmt.Sprintf("[0-2 acquired(1) m1@2 until %d 3-9 available(1)]", renewed); got != want {
		t.Fatalf("after 40 s: %s, want %s", got, want)
	}
}
