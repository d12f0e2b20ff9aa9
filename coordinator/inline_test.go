package coordinator

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/coordinator/inline"
	"github.com/floe-io/floe/coordinator/layout"
	"github.com/floe-io/floe/internal/testkit"
	"github.com/floe-io/floe/objectstore"
)

// gatedDir is a directory store whose Persists a test can fail, and which
// counts the objects persisted.
type gatedDir struct {
	*objectstore.Dir
	mu   sync.Mutex
	fail bool
	puts map[string]int
}

func newGatedDir(t *testing.T) *gatedDir {
	d, err := objectstore.NewDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return gate(d)
}

func gate(d *objectstore.Dir) *gatedDir { return &gatedDir{Dir: d, puts: make(map[string]int)} }

// newInlineEnv is a coordinator taking inline objects into a gated
// directory store, its Persists failing if failing, and a topic "t" of one
// partition.
func newInlineEnv(t *testing.T, failing bool) (*testEnv, *gatedDir, coordapi.Topic) {
	store := newGatedDir(t)
	store.setFail(failing)
	e := newEnv(t, func(o *Options) { o.Inline = store })
	return e, store, e.topic("t", 1, nil)
}

func (g *gatedDir) Persist(ctx context.Context, keys []string) error {
	g.mu.Lock()
	fail := g.fail
	g.mu.Unlock()
	if fail {
		return fmt.Errorf("persist: %w", objectstore.ErrInjected)
	}
	err := g.Dir.Persist(ctx, keys)
	if err == nil {
		g.mu.Lock()
		for _, k := range keys {
			g.puts[k]++
		}
		g.mu.Unlock()
	}
	return err
}

func (g *gatedDir) setFail(fail bool) {
	g.mu.Lock()
	g.fail = fail
	g.mu.Unlock()
}

func (g *gatedDir) putCount(key string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.puts[key]
}

// stagedRows returns the object keys of the staged family's rows.
func (e *testEnv) stagedRows() []string {
	e.t.Helper()
	lower, upper := layout.FamilyBounds(layout.PrefixStaged)
	it, err := e.c.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		e.t.Fatal(err)
	}
	defer it.Close()
	var keys []string
	for it.First(); it.Valid(); it.Next() {
		keys = append(keys, string(it.Key()[1:]))
	}
	return keys
}

// inlineReq is a one-batch commit of an inline object of n bytes.
func inlineReq(id coordapi.TopicID, key string, n int) *coordapi.CommitRequest {
	b := plain(id, 0, 0)
	b.ByteLength = int32(n)
	req := objectReq(key, b)
	req.Inline = bytes.Repeat([]byte{byte(len(key))}, n)
	return req
}

// An inline object reads back from the store once its commit returns, is
// then put durably, and its staged row dropped.
func TestInlineCommit(t *testing.T) {
	e, store, tp := newInlineEnv(t, false)
	ctx := context.Background()
	req := inlineReq(tp.ID, "wal/one", 300)
	resp, err := e.c.CommitObject(ctx, req)
	if err != nil || resp.Results[0].ErrorCode != 0 || resp.Results[0].BaseOffset != 0 {
		t.Fatalf("inline commit = %+v, %v", resp, err)
	}
	if got, err := store.GetRange(ctx, "wal/one", 0, -1); err != nil || !bytes.Equal(got, req.Inline) {
		t.Fatalf("object after the commit reads %d bytes, %v; want the %d inline bytes", len(got), err, len(req.Inline))
	}
	testkit.CheckFor(t, 10*time.Second, time.Millisecond, func() error {
		if n, rows := store.putCount("wal/one"), e.stagedRows(); n != 1 || len(rows) != 0 {
			return fmt.Errorf("%d puts of the object, staged rows %v", n, rows)
		}
		return nil
	})
	// On disk: a Dir of its own (without the staged copy) reads it.
	fresh, err := objectstore.NewDir(store.Root())
	if err != nil {
		t.Fatal(err)
	}
	if got, err := fresh.GetRange(ctx, "wal/one", 0, -1); err != nil || !bytes.Equal(got, req.Inline) {
		t.Fatalf("persisted object reads %d bytes from disk, %v; want the %d inline bytes", len(got), err, len(req.Inline))
	}
	fb, err := e.c.FindBatches(ctx, coordapi.FindBatchesRequest{TopicID: tp.ID, Offset: 0, MaxBytes: 1 << 20})
	if err != nil || len(fb.Batches) != 1 || fb.Batches[0].ObjectKey != "wal/one" || fb.Batches[0].ByteLength != 300 {
		t.Fatalf("FindBatches = %+v, %v", fb, err)
	}
}

// Inline commits a coordinator cannot honour are refused whole.
func TestInlineRefused(t *testing.T) {
	tests := []struct {
		name   string
		inline bool
		mod    func(*coordapi.CommitRequest)
	}{
		{"coordinator without an inline store", false, func(*coordapi.CommitRequest) {}},
		{"bytes not the object size", true, func(r *coordapi.CommitRequest) { r.Inline = r.Inline[:10] }},
		{"over the most", true, func(r *coordapi.CommitRequest) {
			r.Inline = make([]byte, coordapi.MaxInlineObject+1)
			r.ObjectSize = int64(len(r.Inline))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := newGatedDir(t)
			e := newEnv(t, func(o *Options) {
				if tt.inline {
					o.Inline = store
				}
			})
			tp := e.topic("t", 1, nil)
			req := inlineReq(tp.ID, "wal/x", 100)
			tt.mod(req)
			_, err := e.c.CommitObject(context.Background(), req)
			wantKerr(t, err, kerr.InvalidRequest)
			if st := e.state(tp.ID, 0); st.HighWatermark != 0 {
				t.Errorf("high watermark %d after a refused commit", st.HighWatermark)
			}
			if _, err := store.Head(context.Background(), "wal/x"); !errors.Is(err, objectstore.ErrNotFound) {
				t.Errorf("refused object is in the store: %v", err)
			}
		})
	}
}

// An object committed inline but not yet persisted when the coordinator
// stops (here its Persists fail) and the process with it is persisted by
// the next Open.
func TestInlineRestart(t *testing.T) {
	e, store, tp := newInlineEnv(t, true)
	ctx := context.Background()
	var reqs []*coordapi.CommitRequest
	for i, n := range []int{100, 5000} {
		req := inlineReq(tp.ID, fmt.Sprintf("wal/%d", i), n)
		if _, err := e.c.CommitObject(ctx, req); err != nil {
			t.Fatal(err)
		}
		reqs = append(reqs, req)
	}
	if rows := e.stagedRows(); len(rows) != 2 {
		t.Fatalf("staged rows %v with every put failing, want both objects", rows)
	}
	// A crash loses the Dir's staged copies: a new Dir on the same root
	// has none, nor any file.
	fresh, err := objectstore.NewDir(store.Root())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fresh.Head(ctx, reqs[0].ObjectKey); !errors.Is(err, objectstore.ErrNotFound) {
		t.Fatalf("a staged object is on disk before its put: %v", err)
	}
	store = gate(fresh)
	e.opts.Inline = store
	e.reopen()
	for _, req := range reqs {
		got, err := store.GetRange(ctx, req.ObjectKey, 0, -1)
		if err != nil || !bytes.Equal(got, req.Inline) {
			t.Errorf("%s after Open reads %d bytes, %v; want its %d inline bytes", req.ObjectKey, len(got), err, len(req.Inline))
		}
	}
	if rows := e.stagedRows(); len(rows) != 0 {
		t.Errorf("staged rows %v after Open put them", rows)
	}
	if st := e.state(tp.ID, 0); st.HighWatermark != 2 {
		t.Errorf("high watermark %d after the restart, want 2", st.HighWatermark)
	}
}

// Commits wait for a flush once inline.MaxPending objects are unflushed,
// and go on when the store takes them again.
func TestInlineBackPressure(t *testing.T) {
	e, store, tp := newInlineEnv(t, true)
	ctx := context.Background()
	for i := range inline.MaxPending {
		if _, err := e.c.CommitObject(ctx, inlineReq(tp.ID, fmt.Sprintf("wal/%d", i), 10)); err != nil {
			t.Fatal(err)
		}
	}
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	_, err := e.c.CommitObject(short, inlineReq(tp.ID, "wal/over", 10))
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("commit past %d unflushed objects = %v, want it to wait (deadline exceeded)", inline.MaxPending, err)
	}
	if _, err := store.Head(ctx, "wal/over"); !errors.Is(err, objectstore.ErrNotFound) {
		t.Errorf("a commit that waited for a slot staged its object: %v", err)
	}
	store.setFail(false)
	if _, err := e.c.CommitObject(ctx, inlineReq(tp.ID, "wal/over", 10)); err != nil {
		t.Fatalf("commit once the store takes puts again: %v", err)
	}
	testkit.CheckFor(t, 10*time.Second, time.Millisecond, func() error {
		if rows := e.stagedRows(); len(rows) != 0 {
			return fmt.Errorf("%d staged rows", len(rows))
		}
		return nil
	})
	if st := e.state(tp.ID, 0); st.HighWatermark != inline.MaxPending+1 {
		t.Errorf("high watermark %d, want %d", st.HighWatermark, inline.MaxPending+1)
	}
}

// Rows left by a crash are written whatever the next Open's options: to
// the cluster's object store (Markers) when there is no inline store, and
// an Open with neither refuses rather than serve batches whose bytes are
// nowhere else.
func TestInlineRecoveredWithoutInlineStore(t *testing.T) {
	e, _, tp := newInlineEnv(t, true)
	ctx := context.Background()
	req := inlineReq(tp.ID, "wal/a", 300)
	if _, err := e.c.CommitObject(ctx, req); err != nil {
		t.Fatal(err)
	}
	if err := e.c.Close(); err != nil {
		t.Fatal(err)
	}
	e.c = nil

	opts := e.opts
	opts.Inline = nil
	if c, err := Open(opts); err == nil {
		_ = c.Close()
		t.Fatal("Open with staged rows and no store to write them to succeeded")
	}
	markers := objectstore.NewMemory()
	opts.Markers = markers
	e.opts = opts
	e.open()
	if got, err := markers.GetRange(ctx, "wal/a", 0, -1); err != nil || !bytes.Equal(got, req.Inline) {
		t.Fatalf("object written to Markers reads %d bytes, %v; want its %d inline bytes", len(got), err, len(req.Inline))
	}
	if rows := e.stagedRows(); len(rows) != 0 {
		t.Errorf("staged rows %v after Open wrote them", rows)
	}
}
