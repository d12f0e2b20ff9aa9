package groups

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/internal/testkit"
)

// shareViewTopics is the fake batch coordinator of share fetches that also
// resolves hierarchical views, by name (TopicResolver) and by id
// (TopicByIDResolver), as the coordinator does; the batches and offsets
// of a view's id are none: only its base's are. stateErr, when set, fails
// every PartitionState.
type shareViewTopics struct {
	*shareTopics
	stateErr error
}

func (v *shareViewTopics) Topic(_ context.Context, name string) (coordapi.Topic, error) {
	f := v.fakeTopics
	f.mu.Lock()
	defer f.mu.Unlock()
	if t, ok := f.topics[name]; ok {
		return t, nil
	}
	base, key, ok := strings.Cut(name, "/")
	bt, found := f.topics[base]
	if !ok || !found {
		return coordapi.Topic{}, fmt.Errorf("topic %q: %w", name, kerr.UnknownTopicOrPartition)
	}
	return coordapi.Topic{ID: coordapi.ViewTopicID(bt.ID, []byte(key)), Name: name, Partitions: bt.Partitions,
		View: &coordapi.TopicView{BaseID: bt.ID, BaseName: base, Key: []byte(key)}}, nil
}

func (v *shareViewTopics) TopicByID(ctx context.Context, id coordapi.TopicID) (coordapi.Topic, error) {
	f := v.fakeTopics
	f.mu.Lock()
	var names []string
	for name, t := range f.topics {
		if t.ID == id {
			f.mu.Unlock()
			return t, nil
		}
		names = append(names, name)
	}
	f.mu.Unlock()
	for _, base := range names {
		for _, key := range []string{"a", "b"} {
			if t, err := v.Topic(ctx, base+"/"+key); err == nil && t.ID == id {
				return t, nil
			}
		}
	}
	return coordapi.Topic{}, fmt.Errorf("topic %s: %w", id, kerr.UnknownTopicID)
}

func (v *shareViewTopics) PartitionState(ctx context.Context, id coordapi.TopicID, p int32) (coordapi.PartitionState, error) {
	v.mu.Lock()
	err := v.stateErr
	v.mu.Unlock()
	if err != nil {
		return coordapi.PartitionState{}, err
	}
	return v.shareTopics.PartitionState(ctx, id, p)
}

// TestShareGroupOnView: a share group subscribed to a hierarchical view
// ("telemetry/a") is assigned the view's partitions under the view's id,
// and its share-partition reads the base topic's partition: SPSO starts at
// the base's log start or high watermark (share.auto.offset.reset),
// acquisitions take the base's offsets and batches (the broker cuts the
// other keys' records out), a held acquisition wakes on the base's
// commits, and the lag (DescribeShareGroupOffsets, the metrics) is the
// base's. A share-partition that cannot be started answers the reason to
// the fetch, on a view or a topic, instead of nothing.
func TestShareGroupOnView(t *testing.T) {
	tests := []struct {
		name     string
		topic    string // subscribed
		reset    string
		logStart int64
		stateErr error // PartitionState fails while the group joins
		// start is the SPSO; acquired the first acquisition's answer.
		start    int64
		acquired string
		code     *kerr.Error // of the first acquisition
		lag      int64       // after the first acquisition
	}{
		{name: "earliest", topic: "telemetry/a", reset: "earliest", start: 0, acquired: "0-9(1) batches 0-2 3-5 6-9", lag: 10},
		{name: "earliest past the log start", topic: "telemetry/a", reset: "earliest", logStart: 3, start: 3, acquired: "3-9(1) batches 3-5 6-9", lag: 7},
		{name: "latest", topic: "telemetry/a", reset: "latest", start: 10, acquired: "batches", lag: 0},
		{name: "view offsets unreadable", topic: "telemetry/a", reset: "earliest", stateErr: kerr.NotLeaderForPartition,
			acquired: "batches", code: kerr.NotLeaderForPartition},
		{name: "topic offsets unreadable", topic: "telemetry", reset: "earliest", stateErr: errors.New("disk on fire"),
			acquired: "batches", code: kerr.KafkaStorageError},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			vt := &shareViewTopics{shareTopics: newShareTopics(), stateErr: tc.stateErr}
			h := newHarness(t, func(o *Options) { o.Topics = vt })
			base := vt.set("telemetry", 1)
			vt.setOffsets(base, 0, 0)
			vt.commit(base, 3, 3, 4)
			vt.mu.Lock()
			s := vt.states[coordapi.TopicID(base)]
			s.LogStartOffset = tc.logStart
			vt.states[coordapi.TopicID(base)] = s
			vt.mu.Unlock()
			if code, msg := h.alterGroupConfig("g", cfgShareAutoOffsetReset, tc.reset); code != 0 {
				t.Fatalf("%s: %s %s", tc.reset, errName(code), msg)
			}
			id := base
			if tc.topic != "telemetry" {
				view, err := vt.Topic(context.Background(), tc.topic)
				if err != nil {
					t.Fatal(err)
				}
				id = topicID(view.ID)
			}

			resp := h.shareHeartbeat(shareHB("g", "m1", 0, tc.topic))
			if resp.ErrorCode != 0 || resp.Assignment == nil || len(resp.Assignment.TopicPartitions) != 1 ||
				resp.Assignment.TopicPartitions[0].TopicID != id {
				t.Fatalf("join: %s, assignment %+v, want partition 0 of %x", errName(resp.ErrorCode), resp.Assignment, id[:4])
			}
			a := h.acquire(acquireReq("m1", 1, id, 100, coordapi.ShareAcquireBatchOptimized))
			if got := acquired(a); got != tc.acquired || a.ErrorCode != errCode(tc.code) {
				t.Fatalf("acquired %q, %s; want %q, %s", got, errName(a.ErrorCode), tc.acquired, errName(errCode(tc.code)))
			}
			if tc.stateErr != nil {
				// The next heartbeat starts it once the offsets can be read.
				vt.mu.Lock()
				vt.stateErr = nil
				vt.mu.Unlock()
				if resp := h.shareHeartbeat(shareHB("g", "m1", resp.MemberEpoch)); resp.ErrorCode != 0 {
					t.Fatalf("heartbeat: %s", errName(resp.ErrorCode))
				}
				if a := h.acquire(acquireReq("m1", 1, id, 100, coordapi.ShareAcquireBatchOptimized)); acquired(a) != "0-9(1) batches 0-2 3-5 6-9" || a.ErrorCode != 0 {
					t.Fatalf("after the offsets came back: acquired %q, %s", acquired(a), errName(a.ErrorCode))
				}
				return
			}
			if p := h.sharePart("g", id, 0); p == nil || p.Start() != tc.start {
				t.Fatalf("share-partition %v, want SPSO %d", p, tc.start)
			}
			offs := offsetsOf(h.describeShareOffsets("g", map[string][]int32{tc.topic: {0}}), tc.topic)
			if o := offs[0]; o.code != 0 || o.start != tc.start || o.lag != tc.lag {
				t.Errorf("described %+v, want start %d lag %d", o, tc.start, tc.lag)
			}
			m := h.shareMetricsOf("g")
			if len(m.Topics) != 1 || m.Topics[0].TopicID != id || m.Topics[0].DataTopic != "telemetry" || m.Topics[0].DataTopicID != base {
				t.Errorf("metrics topics %+v, want %s read from telemetry", m.Topics, tc.topic)
			}

			if tc.name == "earliest" {
				// After a restart, before any heartbeat: the view is named
				// from its id, and its lag read from its base.
				h.restart()
				all := h.describeShareOffsets("g", nil)
				if o := offsetsOf(all, tc.topic)[0]; o.code != 0 || o.start != tc.start || o.lag != tc.lag {
					t.Errorf("after a restart, described %+v (%+v), want start %d lag %d", o, all.Topics, tc.start, tc.lag)
				}
				if m := h.shareMetricsOf("g"); len(m.Topics) != 1 || m.Topics[0].Topic != tc.topic || m.Topics[0].DataTopicID != base {
					t.Errorf("after a restart, metrics topics %+v", m.Topics)
				}
				resp = h.shareHeartbeat(shareHB("g", "m1", 0, tc.topic))
				if resp.ErrorCode != 0 {
					t.Fatalf("join after a restart: %s", errName(resp.ErrorCode))
				}
			}

			// A held acquisition wakes on the base partition's commit.
			type result struct {
				a   coordapi.ShareAcquired
				err error
			}
			done := make(chan result, 1)
			go func() {
				req := acquireReq("m1", 1, id, 100, coordapi.ShareAcquireBatchOptimized)
				req.MaxWaitMs = 20_000
				resp, err := h.gs.ShareAcquire(context.Background(), req)
				if err == nil && len(resp.Partitions) != 1 {
					err = fmt.Errorf("answered %d partitions", len(resp.Partitions))
				}
				var a coordapi.ShareAcquired
				if err == nil {
					a = resp.Partitions[0]
				}
				done <- result{a, err}
			}()
			testkit.CheckFor(t, 5*time.Second, time.Millisecond, func() error {
				if h.gs.shares.Held(base, 0) == 0 {
					return errors.New("no acquisition waits on the base partition")
				}
				return nil
			})
			vt.commit(base, 2)
			select {
			case r := <-done:
				if r.err != nil || acquired(r.a) != "10-11(1) batches 10-11" {
					t.Fatalf("held acquisition: %q, %v; want 10-11", acquired(r.a), r.err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the held acquisition did not wake on the base partition's commit")
			}
		})
	}
}

// errCode is e's code, 0 for nil.
func errCode(e *kerr.Error) int16 {
	if e == nil {
		return 0
	}
	return e.Code
}

// postedTopics is shareViewTopics with a posting index: each batch of a
// topic has one key (keys, by batch, in commit order), and FindKeyBatches
// answers the batches of a key from an offset up to the high watermark, as
// the coordinator does; not ready answers Ready false.
type postedTopics struct {
	*shareViewTopics
	keys     []string
	notReady bool
}

func (p *postedTopics) FindKeyBatches(_ context.Context, req coordapi.FindKeyBatchesRequest) (coordapi.FindKeyBatchesResponse, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	st := p.states[req.TopicID]
	resp := coordapi.FindKeyBatchesResponse{PartitionState: st, Through: st.HighWatermark}
	if p.notReady {
		return resp, nil
	}
	resp.Ready = true
	if req.Offset < st.LogStartOffset || req.Offset > st.HighWatermark {
		return resp, kerr.OffsetOutOfRange
	}
	for i, b := range p.batches[req.TopicID] {
		if b.LastOffset >= req.Offset && i < len(p.keys) && p.keys[i] == string(req.Key) {
			resp.Batches = append(resp.Batches, coordapi.KeyBatch{Coord: b, BaseOffset: b.BaseOffset, LastOffset: b.LastOffset})
		}
	}
	return resp, nil
}

// TestShareViewPostings: a share group on a view acquires through the
// posting index: only the batches of the view's key, the offsets between
// and after them archived at once (never acquired, so never handed to the
// broker or the client), up to the record limit; SPSO then reaches the
// high watermark with the key's records acknowledged. While the postings
// are not ready it acquires every offset of the base (the broker cuts the
// other keys' records out, the client gaps them).
func TestShareViewPostings(t *testing.T) {
	type step struct {
		max    int32
		acks   []coordapi.ShareAckBatch
		answer string // acquired and batches
		spso   int64  // after the step
	}
	tests := []struct {
		name     string
		notReady bool
		locks    int
		sizes    []int64 // of the batches, keys a, b, a, b; default 3, 3, 4, 2
		steps    []step
	}{
		{name: "every batch of the key", steps: []step{
			{max: 100, answer: "0-2(1) 6-9(1) batches 0-2 6-9", spso: 0},
			{acks: []coordapi.ShareAckBatch{ackOf(0, 2, 1), ackOf(6, 9, 1)}, answer: "batches", spso: 12},
		}},
		{name: "up to the record limit", steps: []step{
			{max: 3, answer: "0-2(1) batches 0-2", spso: 0},
			{max: 3, acks: []coordapi.ShareAckBatch{ackOf(0, 2, 1)}, answer: "6-8(1) 9-9(1) batches 6-9", spso: 6}, // the key's batch whole, in runs of BatchSize
			{acks: []coordapi.ShareAckBatch{ackOf(6, 9, 1)}, answer: "batches", spso: 12},
		}},
		{name: "released records come back, the rest stays skipped", steps: []step{
			{max: 100, answer: "0-2(1) 6-9(1) batches 0-2 6-9", spso: 0},
			{max: 100, acks: []coordapi.ShareAckBatch{ackOf(0, 2, 2), ackOf(6, 9, 1)}, answer: "0-2(2) batches 0-2", spso: 0},
			{acks: []coordapi.ShareAckBatch{ackOf(0, 2, 1)}, answer: "batches", spso: 12},
		}},
		{name: "the record lock window", locks: 100, sizes: []int64{3, 150, 4, 2}, steps: []step{
			{max: 100, answer: "0-2(1) batches 0-2", spso: 0}, // 3-152 skipped: the window is full
			{max: 100, acks: []coordapi.ShareAckBatch{ackOf(0, 2, 1)}, answer: "153-156(1) batches 153-156", spso: 153},
			{acks: []coordapi.ShareAckBatch{ackOf(153, 156, 1)}, answer: "batches", spso: 159},
		}},
		{name: "postings not ready", notReady: true, steps: []step{
			{max: 100, answer: "0-11(1) batches 0-2 3-5 6-9 10-11", spso: 0},
			{acks: []coordapi.ShareAckBatch{ackOf(0, 2, 1), ackOf(3, 5, 0), ackOf(6, 9, 1), ackOf(10, 11, 0)}, answer: "batches", spso: 12},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pt := &postedTopics{shareViewTopics: &shareViewTopics{shareTopics: newShareTopics()}, keys: []string{"a", "b", "a", "b"}, notReady: tc.notReady}
			h := newHarness(t, func(o *Options) {
				o.Topics = pt
				if tc.locks > 0 {
					o.SharePartitionMaxRecordLocks = tc.locks
				}
			})
			base := pt.set("telemetry", 1)
			pt.setOffsets(base, 0, 0)
			if tc.sizes == nil {
				tc.sizes = []int64{3, 3, 4, 2}
			}
			pt.commit(base, tc.sizes...)
			if code, msg := h.alterGroupConfig("g", cfgShareAutoOffsetReset, "earliest"); code != 0 {
				t.Fatalf("earliest: %s %s", errName(code), msg)
			}
			view, _ := pt.Topic(context.Background(), "telemetry/a")
			id := topicID(view.ID)
			h.shareJoin("g", "m1", "telemetry/a")
			for i, s := range tc.steps {
				a := h.acquire(acquireReq("m1", 1, id, s.max, coordapi.ShareAcquireBatchOptimized, s.acks...))
				if got := acquired(a); got != s.answer || a.ErrorCode != 0 || a.AckErrorCode != 0 {
					t.Fatalf("step %d: acquired %q (%s, acks %s), want %q", i, got, errName(a.ErrorCode), errName(a.AckErrorCode), s.answer)
				}
				if p := h.sharePart("g", id, 0); p.Start() != s.spso {
					t.Fatalf("step %d: SPSO %d, want %d (%v)", i, p.Start(), s.spso, rangesOf(p))
				}
			}
			if o := offsetsOf(h.describeShareOffsets("g", map[string][]int32{"telemetry/a": {0}}), "telemetry/a")[0]; o.lag != 0 {
				t.Errorf("lag %d at the end, want 0", o.lag)
			}
		})
	}
}
