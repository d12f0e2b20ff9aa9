package txn

import (
	"context"
	"errors"
	"maps"
	"math"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-io/floe/coordapi"
)

// memRows is Rows in memory; failSet fails the next writes.
type memRows struct {
	mu      sync.Mutex
	m       map[string][]byte
	failSet bool
}

func (r *memRows) Apply(sets [][2][]byte, deletes [][]byte) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.failSet {
		return errors.New("disk full")
	}
	for _, kv := range sets {
		r.m[string(kv[0])] = slices.Clone(kv[1])
	}
	for _, k := range deletes {
		delete(r.m, string(k))
	}
	return nil
}

func (r *memRows) Scan(fn func(key, value []byte) error) error {
	r.mu.Lock()
	rows := maps.Clone(r.m)
	r.mu.Unlock()
	for _, k := range slices.Sorted(maps.Keys(rows)) {
		if err := fn([]byte(k), rows[k]); err != nil {
			return err
		}
	}
	return nil
}

// marker is one WriteTxnMarkers call.
type marker struct {
	pid    int64
	epoch  int16
	parts  []coordapi.TopicPartition
	commit bool
}

// fakePartitions is Partitions for unit tests: partitions of topic 1 exist
// below 4, views and markers are recorded, markers can fail.
type fakePartitions struct {
	mu          sync.Mutex
	next        int64
	views       map[int64]coordapi.TxnView
	markers     []marker
	failMarkers bool
}

var topic1 = coordapi.TopicID{1}

func tp(p int32) coordapi.TopicPartition {
	return coordapi.TopicPartition{TopicID: topic1, Partition: p}
}

func (f *fakePartitions) AllocateProducerID() (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.next++
	return f.next, nil
}

func (f *fakePartitions) CheckPartitions(parts []coordapi.TopicPartition) []int16 {
	codes := make([]int16, len(parts))
	for i, p := range parts {
		if p.TopicID != topic1 || p.Partition >= 4 {
			codes[i] = kerr.UnknownTopicOrPartition.Code
		}
	}
	return codes
}

func (f *fakePartitions) SetTxnView(pid int64, v *coordapi.TxnView) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if v == nil {
		delete(f.views, pid)
		return
	}
	f.views[pid] = *v
}

func (f *fakePartitions) WriteTxnMarkers(_ context.Context, pid int64, epoch int16, parts []coordapi.TopicPartition, commit bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failMarkers {
		return errors.New("object store down")
	}
	f.markers = append(f.markers, marker{pid, epoch, slices.Clone(parts), commit})
	return nil
}

func (f *fakePartitions) view(pid int64) (coordapi.TxnView, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	v, ok := f.views[pid]
	return v, ok
}

// fakeOffsets records CompleteTxnOffsets calls.
type fakeOffsets struct {
	mu    sync.Mutex
	calls []string
}

func (o *fakeOffsets) CompleteTxnOffsets(_ context.Context, group string, pid int64, commit bool) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.calls = append(o.calls, group)
	return nil
}

type env struct {
	t     *testing.T
	rows  *memRows
	parts *fakePartitions
	now   time.Time
	c     *Coordinator
}

func newEnv(t *testing.T) *env {
	e := &env{t: t, rows: &memRows{m: map[string][]byte{}}, parts: &fakePartitions{views: map[int64]coordapi.TxnView{}}, now: time.Unix(1e6, 0)}
	e.reopen()
	return e
}

// reopen opens a new Coordinator on the same rows and partitions, as a
// restarted coordinator would.
func (e *env) reopen() {
	e.t.Helper()
	e.parts.mu.Lock()
	e.parts.views = map[int64]coordapi.TxnView{}
	e.parts.mu.Unlock()
	c, err := New(Options{Rows: e.rows, Partitions: e.parts, Now: func() time.Time { return e.now }})
	if err != nil {
		e.t.Fatal(err)
	}
	e.c = c
}

func (e *env) init(id string) coordapi.TxnProducer {
	e.t.Helper()
	resp, err := e.c.InitProducerID(context.Background(), coordapi.InitProducerIDRequest{TransactionalID: &id, TimeoutMs: 60000, ProducerID: -1, ProducerEpoch: -1})
	if err != nil {
		e.t.Fatal(err)
	}
	return coordapi.TxnProducer{TransactionalID: id, ProducerID: resp.ProducerID, ProducerEpoch: resp.ProducerEpoch}
}

func (e *env) add(p coordapi.TxnProducer, parts ...int32) []int16 {
	e.t.Helper()
	req := coordapi.AddPartitionsRequest{TxnProducer: p}
	for _, n := range parts {
		req.Partitions = append(req.Partitions, tp(n))
	}
	codes, err := e.c.AddPartitionsToTxn(context.Background(), req)
	if err != nil {
		e.t.Fatal(err)
	}
	return codes
}

func (e *env) describe(id string) coordapi.TxnDescription {
	e.t.Helper()
	d, err := e.c.DescribeTransactions(context.Background(), []string{id})
	if err != nil {
		e.t.Fatal(err)
	}
	return d[0]
}

func code(err error) int16 {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Code
	}
	return -1
}

// A transaction's life: its view follows each step, EndTxn writes its
// markers and completes its groups' offsets, and a restarted coordinator
// knows all of it from the rows alone.
func TestLifecycle(t *testing.T) {
	e := newEnv(t)
	offsets := &fakeOffsets{}
	e.c.SetOffsets(offsets)
	p := e.init("app")
	if v, ok := e.parts.view(p.ProducerID); !ok || v.Ongoing || v.Epoch != 0 {
		t.Fatalf("view after InitProducerId: %+v %v, want epoch 0, not ongoing", v, ok)
	}
	if codes := e.add(p, 2, 0, 2); !slices.Equal(codes, []int16{0, 0, 0}) {
		t.Fatalf("AddPartitionsToTxn codes %v", codes)
	}
	if err := e.c.AddOffsetsToTxn(context.Background(), p, "g"); err != nil {
		t.Fatal(err)
	}
	v, _ := e.parts.view(p.ProducerID)
	if !v.Ongoing || !slices.Equal(v.Partitions, []coordapi.TopicPartition{tp(0), tp(2)}) {
		t.Fatalf("view of the ongoing transaction: %+v, want ongoing over partitions 0 and 2, sorted, once each", v)
	}
	if got := e.c.VerifyTxnOffsetCommit(context.Background(), &kmsg.TxnOffsetCommitRequest{Version: 3, TransactionalID: "app", ProducerID: p.ProducerID, ProducerEpoch: p.ProducerEpoch, Group: "g"}); got != 0 {
		t.Fatalf("VerifyTxnOffsetCommit of the transaction's group: %d", got)
	}

	e.reopen() // the ongoing transaction survives a restart
	e.c.SetOffsets(offsets)
	if d := e.describe("app"); d.State != coordapi.TxnOngoing || len(d.Partitions) != 2 {
		t.Fatalf("after a restart: %+v", d)
	}
	if v, ok := e.parts.view(p.ProducerID); !ok || !v.Ongoing {
		t.Fatalf("after a restart the partitions have no ongoing view: %+v %v", v, ok)
	}
	if err := e.c.EndTxn(context.Background(), coordapi.EndTxnRequest{TxnProducer: p, Commit: true}); err != nil {
		t.Fatal(err)
	}
	want := []marker{{p.ProducerID, 0, []coordapi.TopicPartition{tp(0), tp(2)}, true}}
	if !slices.EqualFunc(e.parts.markers, want, func(a, b marker) bool {
		return a.pid == b.pid && a.epoch == b.epoch && a.commit == b.commit && slices.Equal(a.parts, b.parts)
	}) {
		t.Fatalf("markers %+v, want %+v", e.parts.markers, want)
	}
	if !slices.Equal(offsets.calls, []string{"g"}) {
		t.Fatalf("group offsets completed: %v", offsets.calls)
	}
	if d := e.describe("app"); d.State != coordapi.TxnCompleteCommit || len(d.Partitions) != 0 {
		t.Fatalf("after EndTxn: %+v", d)
	}
	// A retry of the same EndTxn succeeds and writes nothing more; the
	// other way is INVALID_TXN_STATE.
	if err := e.c.EndTxn(context.Background(), coordapi.EndTxnRequest{TxnProducer: p, Commit: true}); err != nil {
		t.Fatalf("retried EndTxn: %v", err)
	}
	if err := e.c.EndTxn(context.Background(), coordapi.EndTxnRequest{TxnProducer: p, Commit: false}); code(err) != kerr.InvalidTxnState.Code {
		t.Fatalf("abort after commit: %v", err)
	}
	if len(e.parts.markers) != 1 {
		t.Fatalf("%d marker writes, want 1", len(e.parts.markers))
	}
}

// Request checks, table-driven: each case runs on a fresh coordinator with
// producer p registered and its transaction on partition 0 ongoing.
func TestRequestErrors(t *testing.T) {
	empty, bad := "", "x"
	for _, tc := range []struct {
		name string
		run  func(e *env, p coordapi.TxnProducer) error
		want int16
	}{
		{"empty transactional id", func(e *env, _ coordapi.TxnProducer) error {
			_, err := e.c.InitProducerID(context.Background(), coordapi.InitProducerIDRequest{TransactionalID: &empty, TimeoutMs: 1000})
			return err
		}, kerr.InvalidRequest.Code},
		{"timeout above transaction.max.timeout.ms", func(e *env, _ coordapi.TxnProducer) error {
			_, err := e.c.InitProducerID(context.Background(), coordapi.InitProducerIDRequest{TransactionalID: &bad, TimeoutMs: MaxTimeoutMs + 1})
			return err
		}, kerr.InvalidTransactionTimeout.Code},
		{"unknown transactional id", func(e *env, p coordapi.TxnProducer) error {
			p.TransactionalID = "other"
			return e.c.AddOffsetsToTxn(context.Background(), p, "g")
		}, kerr.InvalidProducerIDMapping.Code},
		{"another producer id", func(e *env, p coordapi.TxnProducer) error {
			p.ProducerID++
			return e.c.EndTxn(context.Background(), coordapi.EndTxnRequest{TxnProducer: p, Commit: true})
		}, kerr.InvalidProducerIDMapping.Code},
		{"an old epoch", func(e *env, p coordapi.TxnProducer) error {
			p.ProducerEpoch--
			return e.c.EndTxn(context.Background(), coordapi.EndTxnRequest{TxnProducer: p, Commit: true})
		}, kerr.ProducerFenced.Code},
		{"InitProducerId naming a producer that is not current", func(e *env, p coordapi.TxnProducer) error {
			_, err := e.c.InitProducerID(context.Background(), coordapi.InitProducerIDRequest{TransactionalID: &p.TransactionalID, TimeoutMs: 1000, ProducerID: p.ProducerID + 7, ProducerEpoch: 0})
			return err
		}, kerr.ProducerFenced.Code},
		{"EndTxn with nothing ongoing", func(e *env, p coordapi.TxnProducer) error {
			if err := e.c.EndTxn(context.Background(), coordapi.EndTxnRequest{TxnProducer: p, Commit: false}); err != nil {
				return err
			}
			return e.c.EndTxn(context.Background(), coordapi.EndTxnRequest{TxnProducer: p, Commit: true})
		}, kerr.InvalidTxnState.Code},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			p := e.init("app")
			p = e.init("app") // epoch 1: "an old epoch" has one below
			e.add(p, 0)
			if got := code(tc.run(e, p)); got != tc.want {
				t.Fatalf("code %d, want %d", got, tc.want)
			}
		})
	}
}

// An unknown partition fails the request's partitions without changing the
// transaction; a failed row write leaves memory as it was.
func TestAddPartitionsFailures(t *testing.T) {
	e := newEnv(t)
	p := e.init("app")
	e.add(p, 1)
	if codes := e.add(p, 2, 9); !slices.Equal(codes, []int16{kerr.OperationNotAttempted.Code, kerr.UnknownTopicOrPartition.Code}) {
		t.Fatalf("codes %v", codes)
	}
	e.rows.failSet = true
	if _, err := e.c.AddPartitionsToTxn(context.Background(), coordapi.AddPartitionsRequest{TxnProducer: p, Partitions: []coordapi.TopicPartition{tp(3)}}); err == nil {
		t.Fatal("AddPartitionsToTxn succeeded with its row unwritten")
	}
	e.rows.failSet = false
	if d := e.describe("app"); !slices.Equal(d.Partitions, []coordapi.TopicPartition{tp(1)}) {
		t.Fatalf("partitions %v after the failures, want only 1", d.Partitions)
	}
	if v, _ := e.parts.view(p.ProducerID); !slices.Equal(v.Partitions, []coordapi.TopicPartition{tp(1)}) {
		t.Fatalf("the partitions' view holds %v, want only 1", v.Partitions)
	}
	codes, err := e.c.AddPartitionsToTxn(context.Background(), coordapi.AddPartitionsRequest{TxnProducer: p, VerifyOnly: true,
		Partitions: []coordapi.TopicPartition{tp(1), tp(3)}})
	if err != nil || !slices.Equal(codes, []int16{0, kerr.InvalidTxnState.Code}) {
		t.Fatalf("VerifyOnly: %v %v", codes, err)
	}
}

// A new producer instance takes over an ongoing transaction: it is
// aborted at a bumped epoch, which fences the old instance.
func TestFencing(t *testing.T) {
	e := newEnv(t)
	old := e.init("app")
	e.add(old, 0)
	p := e.init("app")
	if p.ProducerID != old.ProducerID || p.ProducerEpoch != old.ProducerEpoch+1 {
		t.Fatalf("new instance got %+v, want producer %d epoch %d", p, old.ProducerID, old.ProducerEpoch+1)
	}
	if len(e.parts.markers) != 1 || e.parts.markers[0].commit || e.parts.markers[0].epoch != p.ProducerEpoch {
		t.Fatalf("markers %+v, want one abort at the bumped epoch", e.parts.markers)
	}
	if err := e.c.AddOffsetsToTxn(context.Background(), old, "g"); code(err) != kerr.ProducerFenced.Code {
		t.Fatalf("the old instance: %v, want PRODUCER_FENCED", err)
	}
	if got := e.c.VerifyTxnOffsetCommit(context.Background(), &kmsg.TxnOffsetCommitRequest{Version: 2, TransactionalID: "app", ProducerID: old.ProducerID, ProducerEpoch: old.ProducerEpoch, Group: "g"}); got != kerr.InvalidProducerEpoch.Code {
		t.Fatalf("VerifyTxnOffsetCommit v2 of the old instance: %d, want INVALID_PRODUCER_EPOCH", got)
	}
	// A retry of the bump gets the same epoch.
	resp, err := e.c.InitProducerID(context.Background(), coordapi.InitProducerIDRequest{TransactionalID: &old.TransactionalID, TimeoutMs: 1000,
		ProducerID: old.ProducerID, ProducerEpoch: old.ProducerEpoch})
	if err != nil || resp.ProducerEpoch != p.ProducerEpoch {
		t.Fatalf("retried bump: %+v %v", resp, err)
	}
}

// An exhausted epoch gets the transactional id a new producer id, and the
// old one's view is dropped.
func TestEpochExhausted(t *testing.T) {
	e := newEnv(t)
	p := e.init("app")
	e.c.mu.byID["app"].epoch = math.MaxInt16 - 1
	next := e.init("app")
	if next.ProducerID == p.ProducerID || next.ProducerEpoch != 0 {
		t.Fatalf("after the last epoch: %+v, want a new producer id at epoch 0", next)
	}
	if _, ok := e.parts.view(p.ProducerID); ok {
		t.Fatal("the old producer id still has a view")
	}
}

// Tick aborts a transaction past its timeout, completes one left prepared
// by a failed completion, and expires idle transactional ids.
func TestTick(t *testing.T) {
	e := newEnv(t)
	slow := e.init("slow")
	e.add(slow, 0)
	stuck := e.init("stuck")
	e.add(stuck, 1)
	e.parts.failMarkers = true
	if err := e.c.EndTxn(context.Background(), coordapi.EndTxnRequest{TxnProducer: stuck, Commit: true}); err == nil {
		t.Fatal("EndTxn succeeded with its markers unwritten")
	}
	e.parts.failMarkers = false
	e.reopen() // prepared in the rows: the next Tick completes it
	if d := e.describe("stuck"); d.State != coordapi.TxnPrepareCommit {
		t.Fatalf("stuck after a restart: %s", d.State)
	}
	e.now = e.now.Add(30 * time.Second)
	if n := e.c.Tick(context.Background()); n != 0 {
		t.Fatalf("Tick aborted %d before any timeout", n)
	}
	if d := e.describe("stuck"); d.State != coordapi.TxnCompleteCommit {
		t.Fatalf("stuck after Tick: %s", d.State)
	}
	e.now = e.now.Add(31 * time.Second) // past slow's 60 s
	if n := e.c.Tick(context.Background()); n != 1 {
		t.Fatalf("Tick aborted %d, want 1", n)
	}
	if d := e.describe("slow"); d.State != coordapi.TxnCompleteAbort || d.ProducerEpoch != slow.ProducerEpoch+1 {
		t.Fatalf("slow after its timeout: %+v", d)
	}
	e.now = e.now.Add(7*24*time.Hour + time.Minute)
	e.c.Tick(context.Background())
	for _, id := range []string{"slow", "stuck"} {
		if d := e.describe(id); d.ErrorCode != kerr.TransactionalIDNotFound.Code {
			t.Fatalf("%s after a week idle: %+v", id, d)
		}
	}
	if len(e.rows.m) != 0 || len(e.parts.views) != 0 {
		t.Fatalf("after expiring: %d rows, %d views left", len(e.rows.m), len(e.parts.views))
	}
	if l, _ := e.c.ListTransactions(context.Background(), nil, nil); len(l) != 0 {
		t.Fatalf("ListTransactions after expiring: %v", l)
	}
}

// Rows decode back to the state they were written from.
func TestRowRoundTrip(t *testing.T) {
	in := &state{id: "a", pid: 7, prevPID: 6, epoch: 3, prevEpoch: 2, timeoutMs: 5000, state: coordapi.TxnPrepareAbort,
		parts: []coordapi.TopicPartition{tp(0), tp(3)}, groups: []string{"g1", "g2"}, startMs: 10, updateMs: 20}
	out, err := decodeRow("a", encodeRow(in))
	if err != nil {
		t.Fatal(err)
	}
	if out.pid != in.pid || out.prevPID != in.prevPID || out.epoch != in.epoch || out.prevEpoch != in.prevEpoch ||
		out.timeoutMs != in.timeoutMs || out.state != in.state || !slices.Equal(out.parts, in.parts) ||
		!slices.Equal(out.groups, in.groups) || out.startMs != in.startMs || out.updateMs != in.updateMs {
		t.Fatalf("decoded %+v, want %+v", out, in)
	}
	if _, err := decodeRow("a", encodeRow(in)[:9]); err == nil {
		t.Fatal("a truncated row decoded")
	}
}

// FuzzDecodeRow: rows are read back from the database and a snapshot; a
// corrupt one fails, never panics.
func FuzzDecodeRow(f *testing.F) {
	f.Add(encodeRow(&state{id: "a", pid: 1, parts: []coordapi.TopicPartition{tp(1)}, groups: []string{"g"}}))
	f.Fuzz(func(t *testing.T, b []byte) {
		if s, err := decodeRow("a", b); err == nil {
			if _, err := decodeRow("a", encodeRow(s)); err != nil {
				t.Fatalf("a decoded row does not decode again: %v", err)
			}
		}
	})
}
