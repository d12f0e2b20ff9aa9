package coordinator

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/floe-io/floe/coordapi"
)

// coordState is everything a restart must recover, public and internal.
type coordState struct {
	Topics     []coordapi.Topic
	Parts      map[string]coordapi.PartitionState
	Finds      map[string]coordapi.FindBatchesResponse
	MaxTs      map[string][2]int64
	ByTs       map[string][2]int64
	Objects    []ObjectInfo
	Producers  map[producerStateKey]producerState
	Logs       map[partKey]partLog
	NextObject uint64
	// Tiers are each partition's WAL start, bytes, segment bytes, segment
	// count and rows' encoded bytes.
	Tiers map[string][5]int64
}

func snapshotState(t *testing.T, c *Coordinator) coordState {
	t.Helper()
	ctx := context.Background()
	s := coordState{
		Parts: map[string]coordapi.PartitionState{}, Finds: map[string]coordapi.FindBatchesResponse{},
		MaxTs: map[string][2]int64{}, ByTs: map[string][2]int64{},
		Producers: map[producerStateKey]producerState{}, Logs: map[partKey]partLog{},
		Tiers: map[string][5]int64{},
	}
	var err error
	if s.Topics, err = c.Topics(ctx); err != nil {
		t.Fatal(err)
	}
	for _, tp := range s.Topics {
		for p := int32(0); p < tp.Partitions; p++ {
			name := fmt.Sprintf("%s/%d", tp.Name, p)
			st, err := c.PartitionState(ctx, tp.ID, p)
			if err != nil {
				t.Fatal(err)
			}
			s.Parts[name] = st
			fb, err := c.FindBatches(ctx, coordapi.FindBatchesRequest{TopicID: tp.ID, Partition: p, Offset: st.LogStartOffset, MaxBytes: 1 << 30})
			if err != nil {
				t.Fatal(err)
			}
			s.Finds[name] = fb
			off, ts, err := c.ListOffset(ctx, tp.ID, p, coordapi.TimestampMax)
			if err != nil {
				t.Fatal(err)
			}
			s.MaxTs[name] = [2]int64{off, ts}
			off, ts, err = c.ListOffset(ctx, tp.ID, p, 1_000_000_050)
			if err != nil {
				t.Fatal(err)
			}
			s.ByTs[name] = [2]int64{off, ts}
			c.mu.RLock()
			ps := c.mu.topicsByID[tp.ID].parts[p]
			c.mu.RUnlock()
			s.Tiers[name] = [5]int64{ps.walStart, ps.bytes, ps.segBytes, ps.segments, ps.metaBytes}
		}
	}
	if s.Objects, err = c.Objects(ctx); err != nil {
		t.Fatal(err)
	}
	c.commit.Lock()
	defer c.commit.Unlock()
	for k, ps := range c.commit.producers {
		s.Producers[k] = *ps
	}
	for k, pl := range c.commit.logs {
		dirty := slices.Clone(pl.dirty)
		slices.Sort(dirty) // replay finds them in run order
		s.Logs[k] = partLog{runs: pl.runs, dirty: dirty}
	}
	s.NextObject = c.commit.nextObject
	return s
}

// TestRestartReplaysRuns commits enough objects for partitions to write
// checkpoints, with DeleteRecords, ExpireProducers, DeleteTopic, retried
// commits and epoch bumps among them, and reopens the coordinator every few
// commits: each time, the state recovered from checkpoints and the runs
// after them must equal the state before.
func TestRestartReplaysRuns(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	a := e.topic("a", 3, nil)
	b := e.topic("b", 2, map[string]string{"message.timestamp.type": "LogAppendTime"})
	gone := e.topic("gone", 1, nil)
	var pids []int64
	for range 4 {
		r, err := e.c.InitProducerID(ctx, coordapi.InitProducerIDRequest{ProducerID: -1, ProducerEpoch: -1})
		if err != nil {
			t.Fatal(err)
		}
		pids = append(pids, r.ProducerID)
	}
	type prodPart struct {
		pid  int64
		tp   coordapi.TopicID
		part int32
	}
	seq := map[prodPart]int32{}
	epoch := map[int64]int16{}
	var last *coordapi.CommitRequest
	check := func(when string) {
		t.Helper()
		before := snapshotState(t, e.c)
		e.reopen()
		after := snapshotState(t, e.c)
		v1, v2 := reflect.ValueOf(before), reflect.ValueOf(after)
		for f := 0; f < v1.NumField(); f++ {
			if !reflect.DeepEqual(v1.Field(f).Interface(), v2.Field(f).Interface()) {
				t.Fatalf("%s: %s changed across restart:\nbefore %+v\nafter  %+v", when, v1.Type().Field(f).Name,
					v1.Field(f).Interface(), v2.Field(f).Interface())
			}
		}
	}
	for i := range 180 {
		e.clock.Advance(time.Second)
		var batches []coordapi.CommitBatch
		for j := range 7 {
			tp, part := a.ID, int32((i+j)%3)
			if j%3 == 2 {
				tp, part = b.ID, int32(j%2)
			}
			if i < 60 && j == 6 {
				tp, part = gone.ID, 0
			}
			active := pids[:3]
			if i >= 100 {
				active = pids[:2] // pids[2] and pids[3] go idle, then expire
			}
			pid := active[(i*7+j)%len(active)]
			if j == 5 {
				pid = pids[3]
				if i >= 100 {
					pid = -1
				}
			}
			var cb coordapi.CommitBatch
			if pid < 0 || (i+j)%5 == 0 {
				cb = plain(tp, part, int32(j%3))
			} else {
				k := prodPart{pid, tp, part}
				cb = idem(tp, part, int32(j%3), pid, epoch[pid], seq[k])
				seq[k] += int32(j%3) + 1
			}
			cb.MaxTimestamp = 1_000_000_000 + int64((i*37+j*11)%97)
			batches = append(batches, cb)
		}
		req := objectReq(fmt.Sprintf("o%03d", i), batches...)
		if _, err := e.c.CommitObject(ctx, req); err != nil {
			t.Fatal(err)
		}
		if i%17 == 3 && last != nil {
			// A retried commit: every idempotent batch is a duplicate.
			if _, err := e.c.CommitObject(ctx, last); err != nil {
				t.Fatal(err)
			}
		}
		last = req
		switch i {
		case 50:
			st := e.state(a.ID, 1)
			if _, err := e.c.DeleteRecords(ctx, a.ID, 1, st.HighWatermark-3); err != nil {
				t.Fatal(err)
			}
		case 70:
			if _, err := e.c.DeleteRecords(ctx, b.ID, 0, -1); err != nil {
				t.Fatal(err)
			}
		case 80:
			if _, err := e.c.DeleteTopic(ctx, "gone"); err != nil {
				t.Fatal(err)
			}
		case 90:
			// An epoch bump: the producer restarts its sequences at 0.
			r, err := e.c.InitProducerID(ctx, coordapi.InitProducerIDRequest{ProducerID: pids[0], ProducerEpoch: epoch[pids[0]]})
			if err != nil {
				t.Fatal(err)
			}
			epoch[pids[0]] = r.ProducerEpoch
			for k := range seq {
				if k.pid == pids[0] {
					seq[k] = 0
				}
			}
		case 130:
			e.clock.Advance(time.Hour)
		case 140:
			n, err := e.c.ExpireProducers(ctx, 30*time.Minute)
			if err != nil || n == 0 {
				t.Fatalf("ExpireProducers = %d, %v", n, err)
			}
		}
		if i%23 == 22 || i == 50 || i == 70 || i == 140 || i == 179 {
			check(fmt.Sprintf("after commit %d", i))
		}
	}
	// The replayed producer states work: the last object again is all
	// duplicates, with the offsets it got.
	e.c.commit.Lock()
	logs := len(e.c.commit.logs)
	for pk, pl := range e.c.commit.logs {
		if pl.runs >= 2*checkpointRuns {
			t.Errorf("partition %v has %d runs since its checkpoint", pk, pl.runs)
		}
	}
	e.c.commit.Unlock()
	if logs == 0 {
		t.Fatal("no partition has runs after its checkpoint: replay not exercised")
	}
	first, err := e.c.CommitObject(ctx, last)
	if err != nil {
		t.Fatal(err)
	}
	e.reopen()
	again, err := e.c.CommitObject(ctx, last)
	if err != nil {
		t.Fatal(err)
	}
	for i, cb := range last.Batches {
		if cb.ProducerID >= 0 && again.Results[i] != first.Results[i] {
			t.Errorf("batch %d retried after restart: %+v, before %+v", i, again.Results[i], first.Results[i])
		}
	}
}
