package kvindex

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/cockroachdb/pebble"
)

var (
	topicA = [16]byte{0: 0xa, 15: 1}
	topicB = [16]byte{0: 0xb, 15: 2}
	// topicFF has every id byte 0xff: its bounds must not need a carry.
	topicFF = [16]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
)

// testPrefix is the family byte tests give the index; 0xff stresses the bounds.
const testPrefix byte = 0xff

// wantOffset checks that key resolves to offset (or is absent when offset < 0).
func wantOffset(t *testing.T, ix *Index, id [16]byte, p int32, key string, offset int64) {
	t.Helper()
	got, found, err := ix.Lookup(id, p, []byte(key))
	if err != nil {
		t.Fatalf("Lookup(%q): %v", key, err)
	}
	switch {
	case offset < 0 && found:
		t.Errorf("Lookup(%x/%d/%q) = %d, want absent", id[:1], p, key, got)
	case offset >= 0 && (!found || got != offset):
		t.Errorf("Lookup(%x/%d/%q) = %d found=%v, want %d", id[:1], p, key, got, found, offset)
	}
	many, err := ix.LookupMany(id, p, [][]byte{[]byte(key)})
	if err != nil {
		t.Fatalf("LookupMany(%q): %v", key, err)
	}
	if want := max(offset, -1); many[0] != want {
		t.Errorf("LookupMany(%x/%d/%q) = %d, want %d", id[:1], p, key, many[0], want)
	}
}

// LookupMany answers what Lookup answers for every key, in the order asked,
// whatever that order, with duplicates, missing keys, tombstones, entries
// of other partitions and topics around, and entries in both the memtable
// and flushed tables.
func TestLookupMany(t *testing.T) {
	db := openDB(t, t.TempDir())
	defer db.Close()
	ix := New(db, testPrefix)
	var entries []Entry
	for i := range 2000 {
		entries = append(entries, Entry{Key: fmt.Appendf(nil, "k%05d", i*3), OffsetDelta: int32(i)})
	}
	commit(t, db, func(b *pebble.Batch) {
		ix.Apply(b, topicA, 4, 1000, entries)
		ix.Apply(b, topicA, 3, 0, entries[:10])
		ix.Apply(b, topicA, 5, 0, entries[:10])
		ix.Apply(b, topicFF, 4, 0, entries[:10])
	})
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	commit(t, db, func(b *pebble.Batch) {
		ix.Apply(b, topicA, 4, 9000, []Entry{{Key: []byte("k00003"), Tombstone: true}, {Key: []byte("k00006")}})
		ix.SetReady(b, topicA, false)
	})
	var keys [][]byte
	for i := 5999; i >= 0; i -= 2 { // descending, every other key, most of them absent
		keys = append(keys, fmt.Appendf(nil, "k%05d", i))
	}
	keys = append(keys, []byte("k00006"), []byte("k00006"), []byte("k00003"), []byte(""), []byte("k"), []byte("k99999"))
	for _, tc := range []struct {
		id [16]byte
		p  int32
	}{{topicA, 4}, {topicA, 3}, {topicA, 6}, {topicFF, 4}, {topicB, 4}, {topicA, math.MaxInt32}} {
		got, err := ix.LookupMany(tc.id, tc.p, keys)
		if err != nil {
			t.Fatal(err)
		}
		found := 0
		for i, k := range keys {
			off, ok, err := ix.Lookup(tc.id, tc.p, k)
			if err != nil {
				t.Fatal(err)
			}
			if !ok {
				off = -1
			} else {
				found++
			}
			if got[i] != off {
				t.Errorf("%x/%d: LookupMany's answer for %q is %d, Lookup's %d", tc.id[:1], tc.p, k, got[i], off)
			}
		}
		if tc.id == topicA && tc.p == 4 && found != 1001 {
			t.Errorf("partition 4 found %d keys, want 1001 (1,000 odd multiples of 3, k00006 twice, k00003 deleted)", found)
		}
	}
	if _, err := ix.LookupMany(topicA, -1, keys); err == nil {
		t.Error("LookupMany in partition -1 did not fail")
	}
}

func TestIndexApplyLookup(t *testing.T) {
	db := openDB(t, t.TempDir())
	defer db.Close()
	ix := New(db, testPrefix)

	commit(t, db, func(b *pebble.Batch) {
		ix.Apply(b, topicA, 0, 100, []Entry{
			{Key: []byte("a"), OffsetDelta: 0},
			{Key: []byte("b"), OffsetDelta: 1},
			{Key: nil, OffsetDelta: 2}, // null key: not indexed
			{Key: []byte{}, OffsetDelta: 3},
			{Key: []byte{0xff, 0, 0xfe}, OffsetDelta: 4},
		})
		ix.Apply(b, topicA, 1, 7, []Entry{{Key: []byte("a"), OffsetDelta: 0}})
		ix.Apply(b, topicB, 0, 9, []Entry{{Key: []byte("a"), OffsetDelta: 0}})
	})
	wantOffset(t, ix, topicA, 0, "a", 100)
	wantOffset(t, ix, topicA, 0, "b", 101)
	wantOffset(t, ix, topicA, 0, "", 103)
	wantOffset(t, ix, topicA, 0, "\xff\x00\xfe", 104)
	wantOffset(t, ix, topicA, 1, "a", 7)
	wantOffset(t, ix, topicB, 0, "a", 9)
	wantOffset(t, ix, topicA, 2, "a", -1)
	wantOffset(t, ix, topicA, 0, "c", -1)
	wantOffset(t, ix, topicA, 0, "ab", -1) // keys are not prefixes of each other

	// Later commits overwrite; tombstones delete.
	commit(t, db, func(b *pebble.Batch) {
		ix.Apply(b, topicA, 0, 200, []Entry{
			{Key: []byte("a"), OffsetDelta: 0},
			{Key: []byte("b"), OffsetDelta: 1, Tombstone: true},
		})
	})
	wantOffset(t, ix, topicA, 0, "a", 200)
	wantOffset(t, ix, topicA, 0, "b", -1)

	// Within one call, and across calls in one batch, the later entry wins.
	commit(t, db, func(b *pebble.Batch) {
		ix.Apply(b, topicA, 0, 300, []Entry{
			{Key: []byte("a"), OffsetDelta: 0},
			{Key: []byte("a"), OffsetDelta: 1, Tombstone: true},
			{Key: []byte("b"), OffsetDelta: 2, Tombstone: true},
			{Key: []byte("b"), OffsetDelta: 3},
			{Key: []byte("c"), OffsetDelta: 4},
			{Key: []byte("c"), OffsetDelta: 5},
		})
		ix.Apply(b, topicA, 0, 310, []Entry{{Key: []byte("c"), OffsetDelta: 0, Tombstone: true}})
		ix.Apply(b, topicA, 0, 320, []Entry{{Key: []byte("c"), OffsetDelta: 0}})
	})
	wantOffset(t, ix, topicA, 0, "a", -1)
	wantOffset(t, ix, topicA, 0, "b", 303)
	wantOffset(t, ix, topicA, 0, "c", 320)

	// A long key (past the scratch buffer) works too.
	long := string(bytes.Repeat([]byte("k"), 5000))
	commit(t, db, func(b *pebble.Batch) {
		ix.Apply(b, topicA, 0, 400, []Entry{{Key: []byte(long)}})
	})
	wantOffset(t, ix, topicA, 0, long, 400)

	// Negative partitions are ignored by Apply and refused by Lookup.
	commit(t, db, func(b *pebble.Batch) {
		ix.Apply(b, topicA, -1, 1, []Entry{{Key: []byte("neg")}})
	})
	if _, _, err := ix.Lookup(topicA, -1, []byte("neg")); err == nil {
		t.Error("Lookup in partition -1: no error")
	}
	if !ix.Ready(topicA) {
		t.Error("Apply with partition -1 touched the rebuild marker")
	}
}

func TestIndexDropTopic(t *testing.T) {
	db := openDB(t, t.TempDir())
	defer db.Close()
	ix := New(db, testPrefix)
	// A neighbour family byte: DropTopic must stay within the index's prefix.
	other := New(db, testPrefix-1)

	for _, id := range [][16]byte{topicA, topicB, topicFF} {
		commit(t, db, func(b *pebble.Batch) {
			for p := range int32(3) {
				ix.Apply(b, id, p, 10, []Entry{{Key: []byte("k")}, {Key: []byte{0xff, 0xff}, OffsetDelta: 1}})
				other.Apply(b, id, p, 10, []Entry{{Key: []byte("k")}})
			}
			ix.SetReady(b, id, false)
		})
	}
	for _, id := range [][16]byte{topicA, topicFF} {
		commit(t, db, func(b *pebble.Batch) { ix.DropTopic(b, id) })
		for p := range int32(3) {
			wantOffset(t, ix, id, p, "k", -1)
			wantOffset(t, ix, id, p, "\xff\xff", -1)
			wantOffset(t, other, id, p, "k", 10)
		}
		if !ix.Ready(id) {
			t.Errorf("%x: DropTopic left the rebuild marker", id[:1])
		}
	}
	for p := range int32(3) {
		wantOffset(t, ix, topicB, p, "k", 10)
		wantOffset(t, ix, topicB, p, "\xff\xff", 11)
	}
	if ix.Ready(topicB) {
		t.Error("DropTopic of another topic cleared topicB's marker")
	}
}

func TestIndexReadyPersists(t *testing.T) {
	dir := t.TempDir()
	db := openDB(t, dir)
	ix := New(db, testPrefix)
	if !ix.Ready(topicA) {
		t.Fatal("a never marked topic is not ready")
	}
	commit(t, db, func(b *pebble.Batch) {
		ix.SetReady(b, topicA, false)
		ix.SetReady(b, topicB, false)
		ix.Apply(b, topicA, 0, 5, []Entry{{Key: []byte("k")}})
	})
	// Entries read fine next to the marker.
	wantOffset(t, ix, topicA, 0, "k", 5)
	commit(t, db, func(b *pebble.Batch) { ix.SetReady(b, topicB, true) })
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	db = openDB(t, dir)
	defer db.Close()
	ix = New(db, testPrefix)
	if ix.Ready(topicA) {
		t.Error("topicA ready after reopen, want rebuilding")
	}
	if !ix.Ready(topicB) {
		t.Error("topicB not ready after reopen")
	}
	wantOffset(t, ix, topicA, 0, "k", 5)
}

// BenchmarkLookupMany compares a compaction pass's lookups of 10,000 keys
// among 100,000, key by key (Lookup) and in one call (LookupMany), with the
// entries in flushed tables and a memtable of recent writes.
func BenchmarkLookupMany(b *testing.B) {
	db := openDB(b, b.TempDir())
	defer db.Close()
	ix := New(db, testPrefix)
	rng := rand.New(rand.NewPCG(1, 2))
	entries := make([]Entry, 100_000)
	for i := range entries {
		entries[i] = Entry{Key: fmt.Appendf(nil, "user-%010d", rng.Uint32()), OffsetDelta: int32(i)}
	}
	commit(b, db, func(pb *pebble.Batch) { ix.Apply(pb, topicA, 0, 0, entries[:90_000]) })
	if err := db.Flush(); err != nil {
		b.Fatal(err)
	}
	commit(b, db, func(pb *pebble.Batch) { ix.Apply(pb, topicA, 0, 90_000, entries[90_000:]) })
	keys := make([][]byte, 10_000)
	for i := range keys {
		keys[i] = entries[rng.IntN(len(entries))].Key
	}
	b.Run("Lookup", func(b *testing.B) {
		for b.Loop() {
			for _, k := range keys {
				if _, ok, err := ix.Lookup(topicA, 0, k); !ok || err != nil {
					b.Fatal(ok, err)
				}
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(keys)), "ns/key")
	})
	b.Run("LookupMany", func(b *testing.B) {
		for b.Loop() {
			if _, err := ix.LookupMany(topicA, 0, keys); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(keys)), "ns/key")
	})
}

func BenchmarkIndexLookup(b *testing.B) {
	db := openDB(b, b.TempDir())
	defer db.Close()
	ix := New(db, testPrefix)
	commit(b, db, func(pb *pebble.Batch) {
		ix.Apply(pb, topicA, 0, 0, []Entry{{Key: []byte("user-0000123456")}})
	})
	key := []byte("user-0000123456")
	b.ReportAllocs()
	for b.Loop() {
		if _, ok, err := ix.Lookup(topicA, 0, key); !ok || err != nil {
			b.Fatal(ok, err)
		}
	}
}
