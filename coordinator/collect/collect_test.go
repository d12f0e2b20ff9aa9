package collect

import (
	"context"
	"errors"
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
