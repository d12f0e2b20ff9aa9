package inline

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/internal/testkit"
)

// fakeStore is an inline Store: staged objects, and the groups persisted.
// Persist fails with persistErr while it is set, and waits for gate (when
// not nil) before it answers.
type fakeStore struct {
	mu         sync.Mutex
	staged     map[string][]byte
	persisted  [][]string
	attempts   int
	stageErr   error
	persistErr error
	gate       chan struct{}
}

func newStore() *fakeStore { return &fakeStore{staged: map[string][]byte{}} }

func (s *fakeStore) Stage(_ context.Context, key string, data []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stageErr != nil {
		return s.stageErr
	}
	s.staged[key] = data
	return nil
}

func (s *fakeStore) Persist(_ context.Context, keys []string) error {
	s.mu.Lock()
	gate := s.gate
	s.mu.Unlock()
	if gate != nil {
		<-gate
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.attempts++
	if s.persistErr != nil {
		return s.persistErr
	}
	s.persisted = append(s.persisted, slices.Clone(keys))
	return nil
}

func (s *fakeStore) setPersistErr(err error) {
	s.mu.Lock()
	s.persistErr = err
	s.mu.Unlock()
}

// groups returns the groups persisted so far, and the persist attempts.
func (s *fakeStore) groups() ([][]string, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.persisted), s.attempts
}

// fakeRows are a coordinator's staged rows. Scan hands fn a buffer it
// overwrites after each call, as Pebble's iterator may.
type fakeRows struct {
	mu      sync.Mutex
	rows    map[string][]byte
	scanErr error
	dropErr error
	drops   [][]string
	syncs   []bool
}

func (r *fakeRows) Scan(fn func(key string, data []byte) error) error {
	if r.scanErr != nil {
		return r.scanErr
	}
	for _, k := range slices.Sorted(maps.Keys(r.rows)) {
		buf := slices.Clone(r.rows[k])
		err := fn(k, buf)
		clear(buf)
		if err != nil {
			return err
		}
	}
	return nil
}

func (r *fakeRows) Drop(keys []string, sync bool) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.drops = append(r.drops, slices.Clone(keys))
	r.syncs = append(r.syncs, sync)
	if r.dropErr != nil {
		return r.dropErr
	}
	for _, k := range keys {
		delete(r.rows, k)
	}
	return nil
}

func (r *fakeRows) dropped() [][]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.drops)
}

// fakePutter is the cluster's object store.
type fakePutter struct {
	puts   map[string][]byte
	putErr error
}

func (p *fakePutter) Put(_ context.Context, key string, data []byte) error {
	if p.putErr != nil {
		return p.putErr
	}
	p.puts[key] = slices.Clone(data)
	return nil
}

// TestFlushAtOpen checks FlushAtOpen: every staged row's object staged
// and persisted in one group on an inline store (its bytes copied), or
// put to the cluster's store without one, their rows dropped with a
// synced write; a refusal with neither store; nothing done with no rows;
// and that no row is dropped when an object could not be written.
func TestFlushAtOpen(t *testing.T) {
	boom := errors.New("boom")
	staged := map[string][]byte{"o/1": []byte("one"), "o/2": []byte("two"), "o/3": []byte("three")}
	keys := []string{"o/1", "o/2", "o/3"}
	for _, tc := range []struct {
		name        string
		rows        map[string][]byte
		store, puts bool
		stageErr    error
		persistErr  error
		putErr      error
		scanErr     error
		dropErr     error
		wantStaged  bool // the store has the objects
		wantPersist bool // persisted in one group
		wantPuts    bool
		wantDrop    bool
		err         string
	}{
		{name: "inline store", rows: staged, store: true, wantStaged: true, wantPersist: true, wantDrop: true},
		{name: "both stores", rows: staged, store: true, puts: true, wantStaged: true, wantPersist: true, wantDrop: true},
		{name: "cluster store", rows: staged, puts: true, wantPuts: true, wantDrop: true},
		{name: "no store", rows: staged, err: "no object store"},
		{name: "no rows", store: true, puts: true},
		{name: "no rows, no store"},
		{name: "stage fails", rows: staged, store: true, stageErr: boom, err: "object o/1 committed inline: boom"},
		{name: "put fails", rows: staged, puts: true, putErr: boom, err: "object o/1 committed inline: boom"},
		{name: "persist fails", rows: staged, store: true, persistErr: boom, wantStaged: true, err: "persist 3 objects"},
		{name: "scan fails", rows: staged, store: true, scanErr: boom, err: "read staged objects: boom"},
		{name: "drop fails", rows: staged, store: true, dropErr: boom, wantStaged: true, wantPersist: true, wantDrop: true,
			err: "drop staged objects: boom"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rows := &fakeRows{rows: maps.Clone(tc.rows), scanErr: tc.scanErr, dropErr: tc.dropErr}
			var (
				store   Store
				markers Putter
				st      = newStore()
				pt      = &fakePutter{puts: map[string][]byte{}, putErr: tc.putErr}
			)
			st.stageErr, st.persistErr = tc.stageErr, tc.persistErr
			if tc.store {
				store = st
			}
			if tc.puts {
				markers = pt
			}
			err := FlushAtOpen(context.Background(), rows, store, markers, testkit.Logger())
			switch {
			case tc.err == "" && err != nil:
				t.Fatalf("err %v", err)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Fatalf("err %v, want %q", err, tc.err)
			case tc.err != "" && (tc.stageErr != nil || tc.persistErr != nil || tc.putErr != nil || tc.scanErr != nil || tc.dropErr != nil) && !errors.Is(err, boom):
				t.Errorf("err %v does not wrap the cause", err)
			case tc.err != "" && tc.scanErr == nil && strings.Contains(err.Error(), "read staged objects"):
				t.Errorf("err %v: an object's failure taken for the scan's", err)
			}
			want := map[string][]byte{}
			if tc.wantStaged {
				want = staged
			}
			if !maps.EqualFunc(st.staged, want, func(a, b []byte) bool { return string(a) == string(b) }) {
				t.Errorf("staged %q, want %q", st.staged, want)
			}
			var wantGroups [][]string
			if tc.wantPersist {
				wantGroups = [][]string{keys}
			}
			if groups, _ := st.groups(); !slices.EqualFunc(groups, wantGroups, slices.Equal) {
				t.Errorf("persisted %q, want %q", groups, wantGroups)
			}
			want = map[string][]byte{}
			if tc.wantPuts {
				want = staged
			}
			if !maps.EqualFunc(pt.puts, want, func(a, b []byte) bool { return string(a) == string(b) }) {
				t.Errorf("put %q, want %q", pt.puts, want)
			}
			var wantDrops [][]string
			if tc.wantDrop {
				wantDrops = [][]string{keys}
			}
			if !slices.EqualFunc(rows.drops, wantDrops, slices.Equal) {
				t.Errorf("dropped %q, want %q", rows.drops, wantDrops)
			}
			if slices.Contains(rows.syncs, false) {
				t.Errorf("a drop not synced: %v", rows.syncs)
			}
		})
	}
}

// startFlusher starts a Flusher of store and rows, stopped when t ends.
func startFlusher(t *testing.T, store *fakeStore, rows *fakeRows) *Flusher {
	t.Helper()
	f := Start(store, rows, testkit.Logger())
	t.Cleanup(func() {
		f.BeginStop()
		f.Stop()
	})
	return f
}

// stageAndQueue stages and queues n objects named prefix/i.
func stageAndQueue(t *testing.T, f *Flusher, prefix string, n int) []string {
	t.Helper()
	var keys []string
	for i := range n {
		k := fmt.Sprintf("%s/%03d", prefix, i)
		if err := f.Stage(context.Background(), k, []byte(k)); err != nil {
			t.Fatalf("stage %s: %v", k, err)
		}
		f.Queue(k)
		keys = append(keys, k)
	}
	return keys
}

// waitGroups waits until the store persisted n groups, and returns them.
func waitGroups(t *testing.T, s *fakeStore, n int) [][]string {
	t.Helper()
	var groups [][]string
	testkit.CheckFor(t, 10*time.Second, 5*time.Millisecond, func() error {
		if groups, _ = s.groups(); len(groups) < n {
			return fmt.Errorf("%d groups persisted, want %d", len(groups), n)
		}
		return nil
	})
	return groups
}

// waitSlots waits until n slots are taken.
func waitSlots(t *testing.T, f *Flusher, n int) {
	t.Helper()
	testkit.CheckFor(t, 10*time.Second, 5*time.Millisecond, func() error {
		if l := len(f.slots); l != n {
			return fmt.Errorf("%d slots taken, want %d", l, n)
		}
		return nil
	})
}

// TestFlusherGroups checks that the flusher persists queued objects in
// groups of flushBatch, in order, a smaller group once flushDelay has
// passed, drops each group's rows (not synced) once persisted, and gives
// their slots back.
func TestFlusherGroups(t *testing.T) {
	store := newStore()
	gate := make(chan struct{})
	store.gate = gate
	rows := &fakeRows{rows: map[string][]byte{}}
	f := startFlusher(t, store, rows)
	n := flushBatch + flushBatch/2 + 1
	keys := stageAndQueue(t, f, "o", n)
	rows.mu.Lock()
	for _, k := range keys {
		rows.rows[k] = []byte(k)
	}
	rows.mu.Unlock()
	if l := len(f.slots); l != n {
		t.Errorf("%d slots taken, want %d", l, n)
	}
	start := time.Now()
	close(gate) // everything is queued: the first group is the first flushBatch
	groups := waitGroups(t, store, 2)
	if len(groups) != 2 || !slices.Equal(groups[0], keys[:flushBatch]) || !slices.Equal(groups[1], keys[flushBatch:]) {
		t.Fatalf("groups of %d, want %d then %d, in order", lens(groups), flushBatch, n-flushBatch)
	}
	if d := time.Since(start); d < flushDelay/2 {
		t.Errorf("a partial group flushed after %s, before flushDelay (%s)", d, flushDelay)
	}
	waitSlots(t, f, 0)
	drops := rows.dropped()
	if !slices.EqualFunc(drops, groups, slices.Equal) {
		t.Errorf("dropped %d, want the groups persisted (%d)", lens(drops), lens(groups))
	}
	if slices.Contains(rows.syncs, true) {
		t.Errorf("a flush's drop was synced: %v", rows.syncs)
	}
	rows.mu.Lock()
	if len(rows.rows) != 0 {
		t.Errorf("%d rows left", len(rows.rows))
	}
	rows.mu.Unlock()
	if _, attempts := store.groups(); attempts != 2 {
		t.Errorf("%d persists, want 2", attempts)
	}
}

func lens(groups [][]string) []int {
	var out []int
	for _, g := range groups {
		out = append(out, len(g))
	}
	return out
}

// TestFlusherBound checks that Stage waits while MaxPending objects are
// unflushed: it gives up with its context, returns ErrClosed once Close
// begins, and goes on once a flush frees a slot. Release gives a slot
// back.
func TestFlusherBound(t *testing.T) {
	store := newStore()
	f := startFlusher(t, store, &fakeRows{rows: map[string][]byte{}})
	for i := range MaxPending {
		if err := f.Stage(context.Background(), fmt.Sprint(i), nil); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := f.Stage(ctx, "over", nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("stage over the bound: %v, want a deadline", err)
	}
	if _, ok := store.staged["over"]; ok {
		t.Error("an object over the bound was staged")
	}

	// A slot given back lets one more in.
	f.Release()
	if err := f.Stage(context.Background(), "released", nil); err != nil {
		t.Errorf("stage after a release: %v", err)
	}

	// A flush frees slots: a waiting Stage goes on.
	staged := make(chan error, 1)
	go func() { staged <- f.Stage(context.Background(), "waiting", nil) }()
	f.Queue("0")
	if err := <-staged; err != nil {
		t.Errorf("stage after a flush: %v", err)
	}
	if groups := waitGroups(t, store, 1); !slices.Equal(groups[0], []string{"0"}) {
		t.Errorf("persisted %q, want [0]", groups)
	}
	if l := len(f.slots); l != MaxPending {
		t.Errorf("%d slots taken, want %d", l, MaxPending)
	}

	// Close begins: a waiting Stage gives up.
	go func() { staged <- f.Stage(context.Background(), "closing", nil) }()
	f.BeginStop()
	if err := <-staged; !errors.Is(err, coordapi.ErrClosed) {
		t.Errorf("stage once Close began: %v, want ErrClosed", err)
	}
	f.BeginStop() // twice is fine
}

// TestFlusherStageError checks that a Stage the store refuses gives its
// slot back and answers KAFKA_STORAGE_ERROR.
func TestFlusherStageError(t *testing.T) {
	store := newStore()
	store.stageErr = errors.New("disk full")
	f := startFlusher(t, store, &fakeRows{rows: map[string][]byte{}})
	err := f.Stage(context.Background(), "o", nil)
	if coordapi.ErrorCode(err) != kerr.KafkaStorageError.Code || !strings.Contains(err.Error(), "disk full") {
		t.Errorf("err %v, want KAFKA_STORAGE_ERROR with the store's", err)
	}
	if l := len(f.slots); l != 0 {
		t.Errorf("%d slots taken, want 0", l)
	}
}

// TestFlusherRetry checks that a flush retries a failing store until it
// persists the group, and only then drops its rows and gives back its
// slots.
func TestFlusherRetry(t *testing.T) {
	store := newStore()
	store.persistErr = errors.New("boom")
	rows := &fakeRows{rows: map[string][]byte{}}
	f := startFlusher(t, store, rows)
	keys := stageAndQueue(t, f, "o", 3)
	testkit.CheckFor(t, 10*time.Second, 5*time.Millisecond, func() error {
		if _, n := store.groups(); n < 3 {
			return fmt.Errorf("%d attempts", n)
		}
		return nil
	})
	if d := rows.dropped(); len(d) != 0 || len(f.slots) != 3 {
		t.Fatalf("a failed persist dropped rows %q, or gave back slots (%d taken)", d, len(f.slots))
	}
	store.setPersistErr(nil)
	if groups := waitGroups(t, store, 1); !slices.Equal(groups[0], keys) {
		t.Errorf("persisted %q, want %q", groups, keys)
	}
	waitSlots(t, f, 0)
	if d := rows.dropped(); len(d) != 1 || !slices.Equal(d[0], keys) {
		t.Errorf("dropped %q, want %q", d, keys)
	}
}

// TestFlusherGiveUp checks that a flush retrying a failing store stops
// once Close begins, leaving the rows for the next Open, and that Stop
// then returns.
func TestFlusherGiveUp(t *testing.T) {
	store := newStore()
	store.persistErr = errors.New("boom")
	rows := &fakeRows{rows: map[string][]byte{}}
	f := Start(store, rows, testkit.Logger())
	stageAndQueue(t, f, "o", 2)
	testkit.CheckFor(t, 10*time.Second, 5*time.Millisecond, func() error {
		if _, n := store.groups(); n < 1 {
			return errors.New("no attempt")
		}
		return nil
	})
	f.BeginStop()
	select {
	case <-f.done:
	case <-time.After(10 * time.Second):
		t.Fatal("the flusher still retries after Close began")
	}
	f.Stop()
	if d := rows.dropped(); len(d) != 0 {
		t.Errorf("rows of objects not persisted dropped: %q", d)
	}
}

// TestFlusherStop checks that Stop persists what is queued (one object
// or several), in one attempt even without BeginStop, before it
// returns, and drops the rows of what it persisted only.
func TestFlusherStop(t *testing.T) {
	for _, tc := range []struct {
		n               int
		fail, beginStop bool
	}{
		{n: 5}, {n: 1}, {n: 5, beginStop: true},
		{n: 5, fail: true, beginStop: true}, {n: 1, fail: true},
	} {
		t.Run(fmt.Sprintf("n=%d,fail=%v,beginStop=%v", tc.n, tc.fail, tc.beginStop), func(t *testing.T) {
			store := newStore()
			if tc.fail {
				store.persistErr = errors.New("boom")
			}
			rows := &fakeRows{rows: map[string][]byte{}}
			f := Start(store, rows, testkit.Logger())
			// Queued well within flushDelay: only Stop flushes them.
			keys := stageAndQueue(t, f, "o", tc.n)
			if tc.beginStop {
				f.BeginStop()
			}
			f.Stop()
			groups, attempts := store.groups()
			if attempts != 1 {
				t.Errorf("%d persists, want 1", attempts)
			}
			var want [][]string
			if !tc.fail {
				want = [][]string{keys}
			}
			if !slices.EqualFunc(groups, want, slices.Equal) {
				t.Errorf("persisted %q, want %q", groups, want)
			}
			if d := rows.dropped(); !slices.EqualFunc(d, want, slices.Equal) {
				t.Errorf("dropped %q, want %q", d, want)
			}
		})
	}
}

// TestFlusherNoEmptyGroup checks that a group flushed for being full
// leaves no timer behind: once its flushDelay has passed, the next
// object is persisted alone, and no empty group is persisted.
func TestFlusherNoEmptyGroup(t *testing.T) {
	store := newStore()
	rows := &fakeRows{rows: map[string][]byte{}}
	f := startFlusher(t, store, rows)
	start := time.Now()
	keys := stageAndQueue(t, f, "o", flushBatch)
	waitGroups(t, store, 1)
	// The first group's timer, had it been left, has fired by now: the
	// flusher is idle and takes it at once.
	testkit.CheckFor(t, 10*time.Second, 10*time.Millisecond, func() error {
		if d := time.Since(start); d < flushDelay+300*time.Millisecond {
			return fmt.Errorf("%s since the first object", d)
		}
		return nil
	})
	last := stageAndQueue(t, f, "p", 1)
	groups := waitGroups(t, store, 2)
	want := [][]string{keys, last}
	if !slices.EqualFunc(groups, want, slices.Equal) {
		t.Errorf("persisted groups of %d, want %d", lens(groups), lens(want))
	}
}

// recordHandler keeps the messages of the records logged at warn.
type recordHandler struct {
	mu   sync.Mutex
	msgs []string
}

func (h *recordHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *recordHandler) Handle(_ context.Context, r slog.Record) error {
	if r.Level >= slog.LevelWarn {
		h.mu.Lock()
		h.msgs = append(h.msgs, r.Message)
		h.mu.Unlock()
	}
	return nil
}
func (h *recordHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *recordHandler) WithGroup(string) slog.Handler      { return h }

func (h *recordHandler) messages() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.msgs)
}

// TestFlusherDropError checks that a drop that fails after a persist
// still gives back the group's slots, and is logged unless the
// coordinator is closed.
func TestFlusherDropError(t *testing.T) {
	for _, tc := range []struct {
		name   string
		err    error
		logged bool
	}{
		{name: "failed", err: errors.New("boom"), logged: true},
		{name: "closed", err: fmt.Errorf("drop: %w", coordapi.ErrClosed)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := newStore()
			rows := &fakeRows{rows: map[string][]byte{}, dropErr: tc.err}
			h := &recordHandler{}
			f := Start(store, rows, slog.New(h))
			keys := stageAndQueue(t, f, "o", 2)
			waitGroups(t, store, 1)
			waitSlots(t, f, 0)
			f.Stop()
			if d := rows.dropped(); len(d) != 1 || !slices.Equal(d[0], keys) {
				t.Errorf("dropped %q, want %q", d, keys)
			}
			if logged := slices.Contains(h.messages(), "drop of staged objects' rows failed"); logged != tc.logged {
				t.Errorf("logged %v, want %v: %q", logged, tc.logged, h.messages())
			}
		})
	}
}
