package kvindex

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"iter"
	"math/rand/v2"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/cockroachdb/pebble"

	"github.com/floe-io/floe/internal/testkit"
	"github.com/floe-io/floe/record"
)

// entriesOf returns a batch's index entries as the broker sends them with a commit.
func entriesOf(t testing.TB, batch []byte) []Entry {
	t.Helper()
	var es []Entry
	err := record.Records(batch, func(r *record.Record) error {
		if r.Key != nil {
			es = append(es, Entry{Key: bytes.Clone(r.Key), OffsetDelta: r.OffsetDelta, Tombstone: r.Value == nil})
		}
		return nil
	})
	if err != nil {
		t.Fatalf("Records: %v", err)
	}
	return es
}

// checkIndexMatches checks that ix holds exactly the entries of f for topic id: every
// entry f has, and no other key of id (scanned from Pebble).
func checkIndexMatches(t *testing.T, db *pebble.DB, ix *Index, f *fakeLog, id [16]byte) {
	t.Helper()
	f.mu.Lock()
	want := map[string]int64{}
	for k, o := range f.entries {
		if k.topic == id {
			want[string(ix.appendKey(nil, id, k.partition, []byte(k.key)))] = o
		}
	}
	f.mu.Unlock()

	lower, upper := ix.entryBounds(id)
	it, err := db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	got := map[string]int64{}
	for it.First(); it.Valid(); it.Next() {
		got[string(it.Key())] = int64(binaryOffset(it.Value()))
	}
	for k, o := range want {
		if g, ok := got[k]; !ok || g != o {
			t.Errorf("entry %q: got %d (present %v), want %d", k[keyHeaderLen-4:], g, ok, o)
		}
	}
	for k, o := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("extra entry %q -> %d", k[keyHeaderLen-4:], o)
		}
	}
}

func binaryOffset(v []byte) uint64 {
	var o uint64
	for _, c := range v {
		o = o<<8 | uint64(c)
	}
	return o
}

// randomLog appends n random batches over partitions of topic id: overwrites,
// tombstones, null keys, every codec, control batches (which are not indexed). apply,
// when set, also indexes each batch as the coordinator's commit would.
func randomLog(t *testing.T, rng *rand.Rand, f *fakeLog, id [16]byte, partitions int32, n int, apply func(p int32, base int64, batch []byte)) {
	t.Helper()
	for range n {
		p := int32(rng.IntN(int(partitions)))
		var recs []kv
		for range 1 + rng.IntN(5) {
			k := []byte(fmt.Sprintf("key-%d", rng.IntN(40)))
			switch rng.IntN(10) {
			case 0:
				recs = append(recs, kv{key: k}) // tombstone
			case 1:
				recs = append(recs, kv{value: []byte("no key")})
			default:
				recs = append(recs, kv{key: k, value: []byte(fmt.Sprint(rng.Int()))})
			}
		}
		opts := noProducer
		opts.Codec = record.Codec(rng.IntN(5))
		control := rng.IntN(20) == 0
		if control {
			opts.Attributes = record.AttrControl
		}
		b := build(t, opts, recs...)
		if control {
			// Not indexed by anyone: append it without touching the fake's entries.
			f.mu.Lock()
			pk := fakeKey{topic: id, partition: p}
			bs := f.batches[pk]
			var base int64
			if len(bs) > 0 {
				base = bs[len(bs)-1].last + 1
			}
			f.batches[pk] = append(bs, fakeBatch{data: b, base: base, last: base + int64(len(recs)-1)})
			f.mu.Unlock()
			continue
		}
		base := f.append(t, id, p, b)
		if apply != nil {
			apply(p, base, b)
		}
	}
}

// markRebuilding commits SetReady(false) for id.
func markRebuilding(t *testing.T, db *pebble.DB, ix *Index, id [16]byte) {
	t.Helper()
	commit(t, db, func(b *pebble.Batch) { ix.SetReady(b, id, false) })
}

func TestRebuild(t *testing.T) {
	for _, flush := range []int{1 << 20, 64} {
		t.Run(fmt.Sprint("flush ", flush), func(t *testing.T) {
			defer setFlush(flush)()
			db := openDB(t, t.TempDir())
			defer db.Close()
			ix := New(db, testPrefix)
			f := newFakeLog()
			randomLog(t, rand.New(rand.NewPCG(1, uint64(flush))), f, topicA, 4, 300, nil)
			// Leftovers of an earlier index, and another topic's entries.
			commit(t, db, func(b *pebble.Batch) {
				ix.Apply(b, topicA, 0, 5, []Entry{{Key: []byte("gone")}})
				ix.Apply(b, topicA, 9, 5, []Entry{{Key: []byte("gone")}})
				ix.Apply(b, topicB, 0, 5, []Entry{{Key: []byte("kept")}})
			})
			markRebuilding(t, db, ix, topicA)
			if ix.Ready(topicA) {
				t.Fatal("ready before Rebuild")
			}
			if err := Rebuild(context.Background(), ix, topicA, 4, f); err != nil {
				t.Fatalf("Rebuild: %v", err)
			}
			if !ix.Ready(topicA) {
				t.Error("not ready after Rebuild")
			}
			checkIndexMatches(t, db, ix, f, topicA)
			wantOffset(t, ix, topicB, 0, "kept", 5)
		})
	}
}

func setFlush(n int) (restore func()) {
	old := rebuildFlushBytes
	rebuildFlushBytes = n
	return func() { rebuildFlushBytes = old }
}

// liveSource is a LogSource over a fakeLog that runs commit between the batches it
// yields, as the coordinator keeps committing while Rebuild reads.
type liveSource struct {
	*fakeLog
	between func()
}

func (s *liveSource) Batches(ctx context.Context, id [16]byte, p int32, from int64) iter.Seq2[LogBatch, error] {
	return func(yield func(LogBatch, error) bool) {
		for b, err := range s.fakeLog.Batches(ctx, id, p, from) {
			if !yield(b, err) {
				return
			}
			s.between()
		}
	}
}

// TestRebuildWhileCommitting replays a log that keeps growing, with every new batch
// also Applied as the coordinator does: overwrites and tombstones of keys Rebuild has
// already replayed, and Rebuild's replay overwriting newer entries for a while. The
// result must be exactly the log's latest state.
func TestRebuildWhileCommitting(t *testing.T) {
	for seed := range uint64(5) {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			defer setFlush(256)()
			db := openDB(t, t.TempDir())
			defer db.Close()
			ix := New(db, testPrefix)
			f := newFakeLog()
			rng := rand.New(rand.NewPCG(seed, 7))
			apply := func(p int32, base int64, b []byte) {
				commit(t, db, func(pb *pebble.Batch) { ix.Apply(pb, topicA, p, base, entriesOf(t, b)) })
			}
			randomLog(t, rng, f, topicA, 3, 100, nil) // before the index was turned on
			markRebuilding(t, db, ix, topicA)
			live := 0
			src := &liveSource{fakeLog: f, between: func() {
				if live < 400 && rng.IntN(2) == 0 {
					live++
					randomLog(t, rng, f, topicA, 3, 1, apply)
				}
			}}
			if err := Rebuild(context.Background(), ix, topicA, 3, src); err != nil {
				t.Fatalf("Rebuild: %v", err)
			}
			if live == 0 {
				t.Fatal("no commit ran during the rebuild")
			}
			checkIndexMatches(t, db, ix, f, topicA)
			// And Apply keeps it exact afterwards.
			randomLog(t, rng, f, topicA, 3, 50, apply)
			checkIndexMatches(t, db, ix, f, topicA)
		})
	}
}

func TestRebuildAborted(t *testing.T) {
	db := openDB(t, t.TempDir())
	defer db.Close()
	ix := New(db, testPrefix)
	f := newFakeLog()
	randomLog(t, rand.New(rand.NewPCG(3, 3)), f, topicA, 2, 50, nil)

	// Not marked: nothing to do.
	if err := Rebuild(context.Background(), ix, topicA, 2, f); !errors.Is(err, ErrRebuildAborted) {
		t.Fatalf("unmarked Rebuild: %v, want ErrRebuildAborted", err)
	}

	// Dropped while running.
	defer setFlush(64)()
	markRebuilding(t, db, ix, topicA)
	dropped := false
	src := &liveSource{fakeLog: f, between: func() {
		if !dropped {
			dropped = true
			commit(t, db, func(b *pebble.Batch) { ix.DropTopic(b, topicA) })
		}
	}}
	if err := Rebuild(context.Background(), ix, topicA, 2, src); !errors.Is(err, ErrRebuildAborted) {
		t.Fatalf("dropped Rebuild: %v, want ErrRebuildAborted", err)
	}
	if !ix.Ready(topicA) {
		t.Error("an aborted Rebuild recreated the marker")
	}
}

// failingSource fails Batches of one partition, once.
type failingSource struct {
	*fakeLog
	failed bool
}

func (s *failingSource) Batches(ctx context.Context, id [16]byte, p int32, from int64) iter.Seq2[LogBatch, error] {
	if p == 1 && !s.failed {
		s.failed = true
		return func(yield func(LogBatch, error) bool) { yield(LogBatch{}, errors.New("object store down")) }
	}
	return s.fakeLog.Batches(ctx, id, p, from)
}

func TestRebuildRestart(t *testing.T) {
	dir := t.TempDir()
	db := openDB(t, dir)
	ix := New(db, testPrefix)
	f := newFakeLog()
	randomLog(t, rand.New(rand.NewPCG(4, 4)), f, topicA, 2, 50, nil)
	markRebuilding(t, db, ix, topicA)
	src := &failingSource{fakeLog: f}
	if err := Rebuild(context.Background(), ix, topicA, 2, src); err == nil {
		t.Fatal("Rebuild over a failing source: no error")
	}
	if ix.Ready(topicA) {
		t.Fatal("ready after a failed Rebuild")
	}
	// As after a crash: reopen, find the topic not ready, run again.
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = openDB(t, dir)
	defer db.Close()
	ix = New(db, testPrefix)
	if ix.Ready(topicA) {
		t.Fatal("ready after reopen")
	}
	if err := Rebuild(context.Background(), ix, topicA, 2, src); err != nil {
		t.Fatalf("second Rebuild: %v", err)
	}
	checkIndexMatches(t, db, ix, f, topicA)
	if !ix.Ready(topicA) {
		t.Error("not ready")
	}
}

func TestRebuildCanceled(t *testing.T) {
	db := openDB(t, t.TempDir())
	defer db.Close()
	ix := New(db, testPrefix)
	f := newFakeLog()
	randomLog(t, rand.New(rand.NewPCG(5, 5)), f, topicA, 1, 20, nil)
	markRebuilding(t, db, ix, topicA)
	ctx, cancel := context.WithCancel(context.Background())
	src := &liveSource{fakeLog: f, between: cancel}
	if err := Rebuild(ctx, ix, topicA, 1, src); !errors.Is(err, context.Canceled) {
		t.Fatalf("Rebuild: %v, want context.Canceled", err)
	}
	if ix.Ready(topicA) {
		t.Error("ready after a canceled Rebuild")
	}
}

// truncatedSource has lost every batch below the high watermark (DeleteRecords), so
// Batches yields nothing while the high watermark stays above 0.
type truncatedSource struct{ hwm int64 }

func (s truncatedSource) HighWatermark(context.Context, [16]byte, int32) (int64, error) {
	return s.hwm, nil
}

func (truncatedSource) Batches(context.Context, [16]byte, int32, int64) iter.Seq2[LogBatch, error] {
	return func(func(LogBatch, error) bool) {}
}

func TestRebuildEmptiedLog(t *testing.T) {
	db := openDB(t, t.TempDir())
	defer db.Close()
	ix := New(db, testPrefix)
	commit(t, db, func(b *pebble.Batch) { ix.Apply(b, topicA, 0, 1, []Entry{{Key: []byte("old")}}) })
	markRebuilding(t, db, ix, topicA)
	if err := Rebuild(context.Background(), ix, topicA, 2, truncatedSource{hwm: 10}); err != nil {
		t.Fatalf("Rebuild: %v", err)
	}
	wantOffset(t, ix, topicA, 0, "old", -1)
	if !ix.Ready(topicA) {
		t.Error("not ready")
	}
}

// indexService is the fakeLog with lookups answered by a real Index.
type indexService struct {
	*fakeLog
	ix *Index
}

func (s indexService) Lookup(_ context.Context, id [16]byte, p int32, key []byte) (LookupResult, error) {
	offset, found, err := s.ix.Lookup(id, p, key)
	if err != nil {
		return LookupResult{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.answerLocked(id, p, offset, found), nil
}

// TestHandlerOverIndex serves every key of a random log, half indexed by Apply and half
// by Rebuild, through the handler with a real Index.
func TestHandlerOverIndex(t *testing.T) {
	db := openDB(t, t.TempDir())
	defer db.Close()
	ix := New(db, testPrefix)
	f := newFakeLog()
	f.addTopic("t", TopicInfo{ID: topicA, Partitions: 3, Indexed: true})
	rng := rand.New(rand.NewPCG(9, 9))
	randomLog(t, rng, f, topicA, 3, 100, nil)
	markRebuilding(t, db, ix, topicA)
	if err := Rebuild(context.Background(), ix, topicA, 3, f); err != nil {
		t.Fatal(err)
	}
	randomLog(t, rng, f, topicA, 3, 100, func(p int32, base int64, b []byte) {
		commit(t, db, func(pb *pebble.Batch) { ix.Apply(pb, topicA, p, base, entriesOf(t, b)) })
	})

	h := NewHandler(indexService{f, ix}, HandlerOptions{Logger: testkit.Logger()})
	hits := 0
	for p := range int32(3) {
		for i := range 40 {
			key := fmt.Sprintf("key-%d", i)
			w := httptest.NewRecorder()
			h.ServeHTTP(w, httptest.NewRequest("GET", fmt.Sprintf("/kv/t/%s?partition=%d", key, p), nil))
			off, ok := f.entries[fakeKey{topicA, p, key}]
			switch {
			case !ok && w.Code != 404:
				t.Errorf("%d/%s: status %d, want 404", p, key, w.Code)
			case ok && (w.Code != 200 || w.Header().Get("X-Kv-Offset") != strconv.FormatInt(off, 10)):
				t.Errorf("%d/%s: status %d offset %s, want 200 at %d", p, key, w.Code, w.Header().Get("X-Kv-Offset"), off)
			case ok:
				hits++
			}
		}
	}
	if hits < 40 {
		t.Errorf("only %d hits", hits)
	}
}
