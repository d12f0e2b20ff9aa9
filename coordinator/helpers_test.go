package coordinator

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/internal/testkit"
	"github.com/floe-io/floe/objectstore"
	"github.com/floe-io/floe/record"
)

// testClock is a settable clock for Options.Now.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func newTestClock() *testClock {
	return &testClock{t: time.UnixMilli(1_700_000_000_000)}
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *testClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// testEnv is a coordinator on a temp dir that tests can reopen.
type testEnv struct {
	t     testing.TB
	opts  Options
	clock *testClock
	c     *Coordinator
}

func newEnv(t testing.TB, mods ...func(*Options)) *testEnv {
	t.Helper()
	clock := newTestClock()
	opts := Options{Dir: t.TempDir(), Now: clock.Now, Logger: testkit.Logger()}
	for _, m := range mods {
		m(&opts)
	}
	e := &testEnv{t: t, opts: opts, clock: clock}
	e.open()
	t.Cleanup(func() {
		if e.c != nil {
			_ = e.c.Close()
		}
	})
	return e
}

func (e *testEnv) open() {
	e.t.Helper()
	c, err := Open(e.opts)
	if err != nil {
		e.t.Fatalf("Open: %v", err)
	}
	e.c = c
}

// reopen closes and opens the coordinator on the same directory.
func (e *testEnv) reopen() {
	e.t.Helper()
	if err := e.c.Close(); err != nil {
		e.t.Fatalf("Close: %v", err)
	}
	e.c = nil
	e.open()
}

func (e *testEnv) topic(name string, partitions int32, configs map[string]string) coordapi.Topic {
	e.t.Helper()
	tp, err := e.c.CreateTopic(context.Background(), coordapi.CreateTopicRequest{
		Name: name, Partitions: partitions, ReplicationFactor: -1, Configs: configs,
	})
	if err != nil {
		e.t.Fatalf("CreateTopic(%s): %v", name, err)
	}
	return tp
}

// batchLen is the length the test helpers give every batch.
const batchLen = 100

// plain is a non-idempotent batch of delta+1 records.
func plain(id coordapi.TopicID, partition, delta int32) coordapi.CommitBatch {
	return coordapi.CommitBatch{TopicID: id, Partition: partition, LastOffsetDelta: delta, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, MaxTimestamp: 1000}
}

// idem is an idempotent batch.
func idem(id coordapi.TopicID, partition, delta int32, pid int64, epoch int16, seq int32) coordapi.CommitBatch {
	return coordapi.CommitBatch{TopicID: id, Partition: partition, LastOffsetDelta: delta, ProducerID: pid, ProducerEpoch: epoch, BaseSequence: seq, MaxTimestamp: 1000}
}

// objectReq lays batches out back to back (batchLen bytes each, unless set)
// in an object named key.
func objectReq(key string, batches ...coordapi.CommitBatch) *coordapi.CommitRequest {
	var off int64
	for i := range batches {
		if batches[i].ByteLength == 0 {
			batches[i].ByteLength = batchLen
		}
		batches[i].ByteOffset = off
		off += int64(batches[i].ByteLength)
	}
	return &coordapi.CommitRequest{ObjectKey: key, ObjectSize: off, BrokerID: 1, Batches: batches}
}

// commitReal puts real record batches, one per entry of batchKeys (its
// records' keys, each with a value), into store as object key and commits
// them to partition 0 of topic id, for a rebuild from the log to read back.
func (e *testEnv) commitReal(store *objectstore.Memory, id coordapi.TopicID, key string, batchKeys ...[]string) {
	e.t.Helper()
	var obj []byte
	var batches []coordapi.CommitBatch
	for _, keys := range batchKeys {
		recs := make([]record.Record, len(keys))
		for i, k := range keys {
			recs[i] = record.Record{Key: []byte(k), Value: []byte("v"), OffsetDelta: int32(i)}
		}
		data, err := record.Build(record.BuildOptions{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}, recs)
		if err != nil {
			e.t.Fatal(err)
		}
		cb := keyed(id, 0, keys...)
		cb.ByteOffset, cb.ByteLength = int64(len(obj)), int32(len(data))
		batches = append(batches, cb)
		obj = append(obj, data...)
	}
	ctx := context.Background()
	if err := store.Put(ctx, key, obj); err != nil {
		e.t.Fatal(err)
	}
	req := objectReq(key, batches...)
	req.ObjectSize = int64(len(obj))
	if _, err := e.c.CommitObject(ctx, req); err != nil {
		e.t.Fatal(err)
	}
}

func (e *testEnv) commit(key string, batches ...coordapi.CommitBatch) []coordapi.BatchResult {
	e.t.Helper()
	resp, err := e.c.CommitObject(context.Background(), objectReq(key, batches...))
	if err != nil {
		e.t.Fatalf("CommitObject(%s): %v", key, err)
	}
	if len(resp.Results) != len(batches) {
		e.t.Fatalf("CommitObject(%s): %d results for %d batches", key, len(resp.Results), len(batches))
	}
	return resp.Results
}

func (e *testEnv) state(id coordapi.TopicID, partition int32) coordapi.PartitionState {
	e.t.Helper()
	st, err := e.c.PartitionState(context.Background(), id, partition)
	if err != nil {
		e.t.Fatalf("PartitionState: %v", err)
	}
	return st
}

func (e *testEnv) object(key string) ObjectInfo {
	e.t.Helper()
	objs, err := e.c.Objects(context.Background())
	if err != nil {
		e.t.Fatalf("Objects: %v", err)
	}
	for _, o := range objs {
		if o.Key == key {
			return o
		}
	}
	e.t.Fatalf("object %q not found in %+v", key, objs)
	return ObjectInfo{}
}

// wantKerr fails unless err wraps the Kafka error want.
func wantKerr(t testing.TB, err error, want *kerr.Error) {
	t.Helper()
	var ke *kerr.Error
	if !errors.As(err, &ke) || ke != want {
		t.Fatalf("error = %v, want one wrapping %s", err, want.Message)
	}
}

// baseOffsets formats results as "base/code" pairs for compact comparison.
func baseOffsets(rs []coordapi.BatchResult) string {
	s := ""
	for i, r := range rs {
		if i > 0 {
			s += " "
		}
		if r.ErrorCode != 0 {
			s += fmt.Sprintf("err%d", r.ErrorCode)
		} else {
			s += fmt.Sprint(r.BaseOffset)
		}
	}
	return s
}

// claimConsolidation lets the WAL retention pass (21 minutes), plans, and
// claims the consolidation job planned, returning it and its batches'
// bytes.
func (e *testEnv) claimConsolidation() (coordapi.TierJob, int64) {
	e.t.Helper()
	ctx := context.Background()
	e.clock.Advance(21 * time.Minute)
	if err := e.c.TierTick(ctx); err != nil {
		e.t.Fatal(err)
	}
	job, ok, err := e.c.ClaimTierJob(ctx, coordapi.ClaimTierJobRequest{BrokerID: 7})
	if err != nil || !ok {
		e.t.Fatalf("ClaimTierJob: %v ok=%v", err, ok)
	}
	var n int64
	for _, b := range job.Batches {
		n += int64(b.ByteLength)
	}
	return job, n
}
