package coordinator

import (
	"context"
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/cockroachdb/pebble/vfs"
	"github.com/cockroachdb/pebble/vfs/errorfs"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/internal/testkit"
)

// TestRestart closes and reopens the coordinator and checks that every
// piece of state survived.
func TestRestart(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	a := e.topic("a", 3, map[string]string{"retention.ms": "1000", "message.timestamp.type": "LogAppendTime"})
	b := e.topic("b", 1, nil)
	p1, _ := e.c.InitProducerID(ctx, coordapi.InitProducerIDRequest{ProducerID: -1, ProducerEpoch: -1})
	p2, _ := e.c.InitProducerID(ctx, coordapi.InitProducerIDRequest{ProducerID: -1, ProducerEpoch: -1})
	bumped, _ := e.c.InitProducerID(ctx, coordapi.InitProducerIDRequest{ProducerID: p2.ProducerID, ProducerEpoch: 0})

	b1 := plain(b.ID, 0, 9)
	b1.MaxTimestamp = 5000
	first := e.commit("o1",
		idem(a.ID, 0, 4, p1.ProducerID, 0, 0),
		idem(a.ID, 2, 0, p1.ProducerID, 0, 0),
		b1,
		idem(b.ID, 0, 1, bumped.ProducerID, bumped.ProducerEpoch, 0),
	)
	e.commit("o2", plain(coordapi.TopicID{5}, 0, 0)) // garbage
	if _, err := e.c.DeleteRecords(ctx, b.ID, 0, 3); err != nil {
		t.Fatal(err)
	}

	snapshot := func() (ts []coordapi.Topic, states []coordapi.PartitionState, objs []ObjectInfo, fb []coordapi.FindBatchesResponse) {
		ts, _ = e.c.Topics(ctx)
		for _, tp := range ts {
			for p := int32(0); p < tp.Partitions; p++ {
				states = append(states, e.state(tp.ID, p))
				r, err := e.c.FindBatches(ctx, coordapi.FindBatchesRequest{TopicID: tp.ID, Partition: p, Offset: e.state(tp.ID, p).LogStartOffset, MaxBytes: 1 << 20})
				if err != nil {
					t.Fatal(err)
				}
				fb = append(fb, r)
			}
		}
		objs, _ = e.c.Objects(ctx)
		return
	}
	ts1, st1, objs1, fb1 := snapshot()
	maxOff1, maxTs1, _ := e.c.ListOffset(ctx, b.ID, 0, coordapi.TimestampMax)

	e.reopen()

	ts2, st2, objs2, fb2 := snapshot()
	for _, pair := range [][2]any{{ts1, ts2}, {st1, st2}, {objs1, objs2}, {fb1, fb2}} {
		if !reflect.DeepEqual(pair[0], pair[1]) {
			t.Errorf("state changed across restart:\nbefore %+v\nafter  %+v", pair[0], pair[1])
		}
	}
	if off, ts, _ := e.c.ListOffset(ctx, b.ID, 0, coordapi.TimestampMax); off != maxOff1 || ts != maxTs1 {
		t.Errorf("TimestampMax %d/%d, was %d/%d", off, ts, maxOff1, maxTs1)
	}
	if tp, _ := e.c.Topic(ctx, "a"); tp.Config("retention.ms") != "1000" || tp.ID != a.ID {
		t.Errorf("topic a after restart %+v", tp)
	}

	// Producer state: retries are still duplicates with their original
	// offsets (and append time), sequences continue, stale epochs fenced.
	e.clock.Advance(1e9)
	rs := e.commit("o3",
		idem(a.ID, 0, 4, p1.ProducerID, 0, 0),                        // duplicate
		idem(a.ID, 0, 0, p1.ProducerID, 0, 6),                        // gap
		idem(a.ID, 0, 0, p1.ProducerID, 0, 5),                        // next
		idem(b.ID, 0, 0, bumped.ProducerID, 0, 2),                    // stale epoch
		idem(b.ID, 0, 0, bumped.ProducerID, bumped.ProducerEpoch, 2), // next
	)
	if got := baseOffsets(rs); got != "0 err45 5 err47 12" {
		t.Errorf("after restart: %s", got)
	}
	if rs[0] != first[0] {
		t.Errorf("duplicate after restart %+v, first %+v", rs[0], first[0])
	}

	// The producer id counter and the bumped epoch survived.
	p3, _ := e.c.InitProducerID(ctx, coordapi.InitProducerIDRequest{ProducerID: -1, ProducerEpoch: -1})
	if p3.ProducerID != p2.ProducerID+1 {
		t.Errorf("producer id after restart %d, want %d", p3.ProducerID, p2.ProducerID+1)
	}
	if r, _ := e.c.InitProducerID(ctx, coordapi.InitProducerIDRequest{ProducerID: p2.ProducerID, ProducerEpoch: 0}); r != bumped {
		t.Errorf("retried bump after restart %+v, want %+v", r, bumped)
	}
	// New objects get fresh numbers (no clash with o1/o2).
	e.commit("o4", plain(b.ID, 0, 0))
	if objs, _ := e.c.Objects(ctx); len(objs) != 4 || objs[3].Key != "o4" {
		t.Errorf("objects %+v", objs)
	}
}

func TestClosed(t *testing.T) {
	e := newEnv(t)
	tp := e.topic("t", 1, nil)
	if err := e.c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := e.c.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := e.c.CommitObject(context.Background(), objectReq("o", plain(tp.ID, 0, 0))); !errors.Is(err, coordapi.ErrClosed) {
		t.Errorf("commit after close: %v", err)
	}
	if _, err := e.c.Topic(context.Background(), "t"); !errors.Is(err, coordapi.ErrClosed) {
		t.Errorf("Topic after close: %v", err)
	}
	e.open()
}

func TestOptionsValidate(t *testing.T) {
	err := (&Options{DefaultPartitions: -1}).Validate()
	if err == nil {
		t.Fatal("no error")
	}
	// Every problem is reported.
	if msg := err.Error(); !containsAll(msg, "Dir", "DefaultPartitions") {
		t.Errorf("error %q", msg)
	}
}

func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

// TestCommitFailureLeavesMemory fails the Pebble commit and checks that
// nothing was assigned: the retry gets the same offsets, producer state is
// as before, no notice went out.
func TestCommitFailureLeavesMemory(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	tp := e.topic("t", 2, nil)
	e.commit("o0", idem(tp.ID, 0, 1, 1, 0, 0))
	var notices atomic.Int32
	e.c.Subscribe(func([]coordapi.CommitNotice) { notices.Add(1) })

	req := objectReq("o1", idem(tp.ID, 0, 0, 1, 0, 2), plain(tp.ID, 1, 3), idem(tp.ID, 0, 0, 1, 0, 3))
	e.c.testBeforeCommit = func() error { return errors.New("disk on fire") }
	if _, err := e.c.CommitObject(ctx, req); err == nil {
		t.Fatal("commit succeeded")
	}
	e.c.testBeforeCommit = nil
	if st := e.state(tp.ID, 0); st.HighWatermark != 2 {
		t.Errorf("hwm moved: %+v", st)
	}
	if st := e.state(tp.ID, 1); st.HighWatermark != 0 {
		t.Errorf("hwm moved: %+v", st)
	}
	if objs, _ := e.c.Objects(ctx); len(objs) != 1 {
		t.Errorf("failed object recorded: %+v", objs)
	}
	if notices.Load() != 0 {
		t.Error("notified a failed commit")
	}
	resp, err := e.c.CommitObject(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if got := baseOffsets(resp.Results); got != "2 0 3" { // not duplicates: the first try never happened
		t.Errorf("retry: %s", got)
	}
	if objs, _ := e.c.Objects(ctx); len(objs) != 2 || objs[1].Key != "o1" {
		t.Errorf("objects %+v", objs)
	}
}

// TestPebbleWriteFailure makes the filesystem under Pebble fail WAL writes.
// Pebble treats a failed commit as fatal (its commit pipeline cannot go on)
// and calls Logger.Fatalf, which panics; the process would die and restart.
// The test checks that memory was not touched, then "restarts" from a copy
// of the directory and checks that the failed commit left no trace.
func TestPebbleWriteFailure(t *testing.T) {
	dir := t.TempDir()
	var failing atomic.Bool
	fs := errorfs.Wrap(vfs.Default, errorfs.InjectorFunc(func(op errorfs.Op, path string) error {
		if failing.Load() && (op == errorfs.OpFileWrite || op == errorfs.OpFileSync) {
			return errorfs.ErrInjected
		}
		return nil
	}))
	clock := newTestClock()
	e := &testEnv{t: t, clock: clock, opts: Options{Dir: dir, Now: clock.Now, Logger: testkit.Logger(), FS: fs}}
	e.open()
	ctx := context.Background()
	tp := e.topic("t", 1, nil)
	e.commit("o0", idem(tp.ID, 0, 4, 1, 0, 0))

	failing.Store(true)
	err := func() (err error) {
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("panic: %v", r)
			}
		}()
		_, err = e.c.CommitObject(ctx, objectReq("o1", idem(tp.ID, 0, 0, 1, 0, 5)))
		return err
	}()
	if err == nil {
		t.Fatal("commit succeeded on a failing disk")
	}
	t.Logf("failed commit: %v", err)
	var ke *kerr.Error
	if errors.As(err, &ke) {
		t.Errorf("storage failure reported as a Kafka error: %v", err)
	}
	if st := e.state(tp.ID, 0); st.HighWatermark != 5 {
		t.Errorf("hwm moved: %+v", st)
	}
	if objs, _ := e.c.Objects(ctx); len(objs) != 1 {
		t.Errorf("objects %+v", objs)
	}
	// The broken database is abandoned (as a crashed process would be).

	restarted := t.TempDir()
	if err := os.CopyFS(restarted, os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
	e2 := &testEnv{t: t, clock: clock, opts: Options{Dir: restarted, Now: clock.Now, Logger: testkit.Logger()}}
	e2.open()
	defer e2.c.Close()
	if st := e2.state(tp.ID, 0); st.HighWatermark != 5 {
		t.Errorf("hwm after restart: %+v", st)
	}
	if got := baseOffsets(e2.commit("o1", idem(tp.ID, 0, 0, 1, 0, 5))); got != "5" {
		t.Errorf("retry after restart: %s", got)
	}
}
