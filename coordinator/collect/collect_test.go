package collect

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/objectstore"
)

// knownState is a State that knows some keys and has no garbage.
type knownState map[string]bool

func (s knownState) Candidates(listed []objectstore.ObjectInfo, nowMs, graceMs int64) ([]objectstore.ObjectInfo, []Object) {
	var orphans []objectstore.ObjectInfo
	for _, o := range listed {
		if !s[o.Key] && (o.LastModified.IsZero() || nowMs-o.LastModified.UnixMilli() >= graceMs) {
			orphans = append(orphans, o)
		}
	}
	return orphans, nil
}

func (s knownState) RemoveGarbage(nums []uint64) ([]bool, error) { return make([]bool, len(nums)), nil }

// countingStore counts the listings and Heads asked of a store.
type countingStore struct {
	objectstore.Store
	lists, heads atomic.Int64
}

func (s *countingStore) List(ctx context.Context, prefix string) ([]objectstore.ObjectInfo, error) {
	s.lists.Add(1)
	return s.Store.List(ctx, prefix)
}

func (s *countingStore) Head(ctx context.Context, key string) (objectstore.ObjectInfo, error) {
	s.heads.Add(1)
	return s.Store.Head(ctx, key)
}

// countingKeyStore is a countingStore that also lists keys alone.
type countingKeyStore struct {
	*countingStore
	keyLists atomic.Int64
}

func (s *countingKeyStore) ListKeys(ctx context.Context, prefix string) ([]string, error) {
	s.keyLists.Add(1)
	return s.Store.(objectstore.KeyLister).ListKeys(ctx, prefix)
}

// Orphans are found and aged the same way whether the store lists keys
// alone (a Head of each unknown key then) or with their sizes and times.
func TestCollectOrphans(t *testing.T) {
	wal := coordapi.WALKey("", "0190a0b0-0000-7000-8000-000000000001")
	known := coordapi.WALKey("", "0190a0b0-0000-7000-8000-000000000002")
	seg := coordapi.TieredPrefix("") + "t/0/00000000000000000000-1-x.seg"
	for _, tc := range []struct {
		name     string
		keysOnly bool
	}{{"keys alone, then Heads", true}, {"sizes and times listed", false}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			dir, err := objectstore.NewDir(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range []string{wal, known, seg} {
				if err := dir.Put(ctx, k, []byte("0123456789")); err != nil {
					t.Fatal(err)
				}
			}
			counted := &countingStore{Store: dir}
			var store Store = counted
			var keyLists func() int64
			if tc.keysOnly {
				ks := &countingKeyStore{countingStore: counted}
				store, keyLists = ks, ks.keyLists.Load
			}
			log := slog.New(slog.NewTextHandler(io.Discard, nil))
			state := knownState{known: true}

			// Young: nothing is deleted.
			young := New(state, nil, 10*time.Minute, time.Now, log)
			if st, err := young.Collect(ctx, store, ""); err != nil || st.Orphans != 0 {
				t.Fatalf("young objects: %+v, %v; want nothing deleted", st, err)
			}
			// A grace later: the two unknown objects go, the known stays.
			later := New(state, nil, 10*time.Minute, func() time.Time { return time.Now().Add(time.Hour) }, log)
			st, err := later.Collect(ctx, store, "")
			if err != nil || st.Orphans != 2 || st.Bytes != 20 {
				t.Fatalf("old objects: %+v, %v; want 2 orphans of 20 bytes", st, err)
			}
			left, err := dir.List(ctx, "")
			if err != nil || len(left) != 1 || left[0].Key != known {
				t.Fatalf("left %+v, %v; want only %s", left, err, known)
			}
			if tc.keysOnly {
				if n := keyLists(); n != 4 || counted.lists.Load() != 0 || counted.heads.Load() != 4 {
					t.Errorf("key listings %d, listings %d, heads %d; want 4 (two prefixes, two rounds), 0, 4 (two unknown objects a round)",
						n, counted.lists.Load(), counted.heads.Load())
				}
			} else if counted.lists.Load() != 4 || counted.heads.Load() != 0 {
				t.Errorf("listings %d, heads %d; want 4, 0", counted.lists.Load(), counted.heads.Load())
			}
		})
	}
}

// A key listed alone and gone before its Head is no orphan, and no error.
func TestDatedGone(t *testing.T) {
	dir, err := objectstore.NewDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if err := dir.Put(ctx, "wal/here", []byte("x")); err != nil {
		t.Fatal(err)
	}
	got, err := dated(ctx, dir, []objectstore.ObjectInfo{{Key: "wal/gone"}, {Key: "wal/here"}}, time.Now().Add(time.Hour).UnixMilli(), time.Minute.Milliseconds())
	if err != nil || len(got) != 1 || got[0].Key != "wal/here" || got[0].Size != 1 {
		t.Fatalf("dated = %+v, %v; want wal/here, 1 byte", got, err)
	}
	if _, err := dated(ctx, dir, []objectstore.ObjectInfo{{Key: "bad//key"}}, 0, 0); err == nil || errors.Is(err, objectstore.ErrNotFound) {
		t.Fatalf("dated of an invalid key: %v, want an error", err)
	}
}

// fakeTicker is a Collector's ticker whose ticks the test hands out: it
// records the period asked for, and holds ticks buffered ticks.
type fakeTicker struct {
	period time.Duration
	ch     chan time.Time
}

func (f *fakeTicker) ticker(d time.Duration) (<-chan time.Time, func()) {
	f.period = d
	return f.ch, func() {}
}

// CollectSpread spaces a round of at least minSpread deletes over its
// spread (a tick of spread/n between two), the first at once; fewer, or
// no spread, go at once. The ticker is the test's: a round takes as many
// ticks as it has deletes after the first, and a round left without a
// tick waits until its context ends.
func TestCollectSpread(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	later := func() time.Time { return time.Now().Add(time.Hour) }
	for _, tc := range []struct {
		name        string
		objects     int
		spread      time.Duration
		ticks       int // ticks available
		wantPeriod  time.Duration
		wantDeleted int
		wantTicks   int // ticks taken
		wantErr     error
	}{
		{"no spread: all at once", minSpread, 0, 0, 0, minSpread, 0, nil},
		{"too few to spread: all at once", minSpread - 1, time.Hour, 0, 0, minSpread - 1, 0, nil},
		{"spread: a tick between two deletes", minSpread, minSpread * time.Second, minSpread, time.Second, minSpread, minSpread - 1, nil},
		{"spread: no tick, one delete, then the deadline", minSpread, time.Hour, 0, time.Hour / minSpread, 1, 0, context.DeadlineExceeded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			dir, err := objectstore.NewDir(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			for i := range tc.objects {
				if err := dir.Put(ctx, coordapi.WALKey("", fmt.Sprintf("0190a0b0-0000-7000-8000-%012d", i)), []byte("x")); err != nil {
					t.Fatal(err)
				}
			}
			if tc.wantErr != nil {
				// A round that waits for a tick that never comes ends with
				// its context.
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, 100*time.Millisecond)
				defer cancel()
			}
			ft := &fakeTicker{ch: make(chan time.Time, minSpread)}
			for range tc.ticks {
				ft.ch <- time.Time{}
			}
			c := New(knownState{}, nil, 10*time.Minute, later, log)
			c.ticker = ft.ticker
			st, err := c.CollectSpread(ctx, dir, "", tc.spread)
			if !errors.Is(err, tc.wantErr) || err == nil && tc.wantErr != nil {
				t.Fatalf("CollectSpread: %v, want %v", err, tc.wantErr)
			}
			if st.Orphans != tc.wantDeleted {
				t.Errorf("deleted %d, want %d", st.Orphans, tc.wantDeleted)
			}
			if ft.period != tc.wantPeriod {
				t.Errorf("tick period %v, want %v", ft.period, tc.wantPeriod)
			}
			if taken := tc.ticks - len(ft.ch); taken != tc.wantTicks {
				t.Errorf("ticks taken %d, want %d", taken, tc.wantTicks)
			}
		})
	}
}
