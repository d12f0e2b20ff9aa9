package kvindex

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/cockroachdb/pebble"

	"github.com/floe-io/floe/record"
)

// findAll returns every posting Find yields for key from offset from, without their
// byte lengths, which it checks are positive.
func findAll(t *testing.T, p *Postings, id [16]byte, part int32, key string, from int64) []Posting {
	t.Helper()
	var got []Posting
	err := p.Find(id, part, []byte(key), from, func(po Posting) bool {
		if po.Bytes <= 0 {
			t.Errorf("posting %v of %q: no byte length", po, key)
		}
		po.Bytes = 0
		got = append(got, po)
		return true
	})
	if err != nil {
		t.Fatalf("Find(%q, %d): %v", key, from, err)
	}
	return got
}

func keysOf(ks ...string) [][]byte {
	out := make([][]byte, len(ks))
	for i, k := range ks {
		if k != "\x00nil" {
			out[i] = []byte(k)
		}
	}
	return out
}

func TestPostingsApplyFind(t *testing.T) {
	db := openDB(t, t.TempDir())
	defer db.Close()
	p := NewPostings(db, testPrefix)
	commit(t, db, func(b *pebble.Batch) {
		p.Apply(b, topicA, 0, 0, 9, 100, keysOf("a", "b", "a", "\x00nil", "a"))
		p.Apply(b, topicA, 0, 10, 19, 100, keysOf("b"))
		p.Apply(b, topicA, 0, 20, 20, 100, keysOf("a", ""))
		p.Apply(b, topicA, 1, 0, 4, 100, keysOf("a"))
		p.Apply(b, topicB, 0, 0, 4, 100, keysOf("a"))
		p.Apply(b, topicFF, 0, 0, 0, 100, keysOf("a"))
		p.Apply(b, topicA, -1, 0, 0, 100, keysOf("a")) // ignored
		// Many keys: the set path of the deduplication.
		many := make([]string, 0, 60)
		for i := range 30 {
			many = append(many, string(rune('A'+i)), string(rune('A'+i)))
		}
		p.Apply(b, topicA, 2, 100, 159, 100, keysOf(many...))
	})
	tests := []struct {
		name string
		id   [16]byte
		part int32
		key  string
		from int64
		want []Posting
	}{
		{"all of a", topicA, 0, "a", 0, []Posting{{BaseOffset: 0, LastOffset: 9}, {BaseOffset: 20, LastOffset: 20}}},
		{"from inside a batch", topicA, 0, "a", 5, []Posting{{BaseOffset: 0, LastOffset: 9}, {BaseOffset: 20, LastOffset: 20}}},
		{"past the first batch", topicA, 0, "a", 10, []Posting{{BaseOffset: 20, LastOffset: 20}}},
		{"past all", topicA, 0, "a", 21, nil},
		{"b", topicA, 0, "b", 0, []Posting{{BaseOffset: 0, LastOffset: 9}, {BaseOffset: 10, LastOffset: 19}}},
		{"empty key", topicA, 0, "", 0, []Posting{{BaseOffset: 20, LastOffset: 20}}},
		{"not a prefix", topicA, 0, "ab", 0, nil},
		{"other partition", topicA, 1, "a", 0, []Posting{{BaseOffset: 0, LastOffset: 4}}},
		{"other topic", topicB, 0, "a", 0, []Posting{{BaseOffset: 0, LastOffset: 4}}},
		{"ff topic", topicFF, 0, "a", 0, []Posting{{BaseOffset: 0, LastOffset: 0}}},
		{"deduplicated", topicA, 2, "C", 0, []Posting{{BaseOffset: 100, LastOffset: 159}}},
		{"unknown", topicA, 3, "a", 0, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := findAll(t, p, tc.id, tc.part, tc.key, tc.from); !slices.Equal(got, tc.want) {
				t.Errorf("Find = %v, want %v", got, tc.want)
			}
		})
	}
	// One posting per key per batch, counted in Pebble.
	lower, upper := p.postingBounds(topicA)
	it, err := db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for it.First(); it.Valid(); it.Next() {
		n++
	}
	it.Close()
	if want := 2 + 1 + 2 + 1 + 30; n != want {
		t.Errorf("topic A holds %d postings, want %d", n, want)
	}
	if err := p.Find(topicA, -1, []byte("a"), 0, func(Posting) bool { return true }); err == nil {
		t.Error("Find in a negative partition: no error")
	}
	// Find stops when fn says so.
	calls := 0
	_ = p.Find(topicA, 0, []byte("a"), 0, func(Posting) bool { calls++; return false })
	if calls != 1 {
		t.Errorf("Find called fn %d times after it returned false", calls)
	}
}

func TestPostingsDeleteAndDrop(t *testing.T) {
	db := openDB(t, t.TempDir())
	defer db.Close()
	p := NewPostings(db, testPrefix)
	commit(t, db, func(b *pebble.Batch) {
		for base := int64(0); base < 50; base += 10 {
			p.Apply(b, topicA, 0, base, base+9, 100, keysOf("a", "b"))
			p.Apply(b, topicB, 0, base, base+9, 100, keysOf("a"))
		}
	})
	for _, tc := range []struct {
		logStart int64
		bound    int64
		found    bool
	}{
		{0, 0, false},
		{5, 0, false},    // cuts into the first batch: nothing stale
		{10, 10, true},   // the first batch ends below
		{25, 20, true},   // cuts into 20-29: those before it
		{50, 50, true},   // all
		{99, 99, true},   // all, the log start past them
		{-1, 0, false},   // no log start
		{20, 20, true},   // at a batch boundary
		{21, 20, true},   // just inside
		{11, 10, true},   // just inside the second
		{1, 0, false},    // inside the first
		{40, 40, true},   // before the last
		{45, 40, true},   // inside the last
		{49, 40, true},   // its last offset
		{30, 30, true},   // boundary
		{31, 30, true},   // inside
		{29, 20, true},   // the last offset of 20-29
		{9, 0, false},    // the last offset of the first
		{19, 10, true},   // the last offset of the second
		{39, 30, true},   // the last offset of 30-39
		{41, 40, true},   // inside the last
		{100, 100, true}, // far past
	} {
		bound, found, err := p.StaleBelow(topicA, 0, []byte("a"), tc.logStart)
		if err != nil || bound != tc.bound || found != tc.found {
			t.Errorf("StaleBelow(%d) = %d, %v, %v; want %d, %v", tc.logStart, bound, found, err, tc.bound, tc.found)
		}
	}
	bound, _, _ := p.StaleBelow(topicA, 0, []byte("a"), 25)
	commit(t, db, func(b *pebble.Batch) { p.DeleteBelow(b, topicA, 0, []byte("a"), bound) })
	if got, want := findAll(t, p, topicA, 0, "a", 0), []Posting{{BaseOffset: 20, LastOffset: 29}, {BaseOffset: 30, LastOffset: 39}, {BaseOffset: 40, LastOffset: 49}}; !slices.Equal(got, want) {
		t.Errorf("a after deleting below a log start of 25 = %v, want %v (the log start cuts into 20-29: it stays)", got, want)
	}
	if got := findAll(t, p, topicA, 0, "b", 0); len(got) != 5 {
		t.Errorf("b after a's DeleteBelow = %v, want its 5 postings", got)
	}
	commit(t, db, func(b *pebble.Batch) {
		p.SetReady(b, topicA, false)
	})
	if p.Ready(topicA) || !p.Ready(topicB) {
		t.Fatalf("Ready(A)=%v Ready(B)=%v, want false, true", p.Ready(topicA), p.Ready(topicB))
	}
	commit(t, db, func(b *pebble.Batch) { p.DropTopic(b, topicA) })
	if got := findAll(t, p, topicA, 0, "b", 0); got != nil {
		t.Errorf("b after DropTopic = %v", got)
	}
	if !p.Ready(topicA) {
		t.Error("DropTopic left the rebuild marker")
	}
	if got := findAll(t, p, topicB, 0, "a", 0); len(got) != 5 {
		t.Errorf("topic B after A's drop = %v, want 5 postings", got)
	}
}

func TestPostingsSurviveReopen(t *testing.T) {
	dir := t.TempDir()
	db := openDB(t, dir)
	p := NewPostings(db, testPrefix)
	commit(t, db, func(b *pebble.Batch) { p.Apply(b, topicA, 0, 7, 8, 100, keysOf("k")) })
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = openDB(t, dir)
	defer db.Close()
	if got := findAll(t, NewPostings(db, testPrefix), topicA, 0, "k", 0); !slices.Equal(got, []Posting{{BaseOffset: 7, LastOffset: 8}}) {
		t.Errorf("after reopen: %v", got)
	}
}

func TestPostingValueDecoding(t *testing.T) {
	tests := []struct {
		name string
		base int64
		v    []byte
		want Posting
		ok   bool
	}{
		{"zero delta", 5, []byte{1, 0, 61}, Posting{5, 5, 61}, true},
		{"delta", 5, encodePostingValue(nil, 5, 1000, 1<<20), Posting{5, 1000, 1 << 20}, true},
		{"empty", 0, nil, Posting{}, false},
		{"unknown format", 0, []byte{2, 0, 1}, Posting{}, false},
		{"no length", 0, []byte{1, 0}, Posting{}, false},
		{"truncated varint", 0, []byte{1, 0x80}, Posting{}, false},
		{"trailing bytes", 0, []byte{1, 0, 1, 0}, Posting{}, false},
		{"length past int32", 0, []byte{1, 0, 0x80, 0x80, 0x80, 0x80, 0x08}, Posting{}, false},
		{"overflow", 1 << 62, []byte{1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, 1}, Posting{}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DecodePostingValue(tc.base, tc.v)
			if (err == nil) != tc.ok || got != tc.want {
				t.Errorf("DecodePostingValue(%d, %x) = %v, %v; want %v ok=%v", tc.base, tc.v, got, err, tc.want, tc.ok)
			}
			if err != nil && !errors.Is(err, ErrBadPosting) {
				t.Errorf("error %v is not ErrBadPosting", err)
			}
		})
	}
}

// FuzzDecodePostingValue: decoding never panics, and what decodes encodes to bytes
// that decode the same (varints need not be minimal).
func FuzzDecodePostingValue(f *testing.F) {
	f.Add(int64(0), []byte{1, 0, 61})
	f.Add(int64(9), []byte{1, 0x80, 0x01, 0xff, 0x7f})
	f.Add(int64(1<<62), []byte{1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, 1})
	f.Add(int64(-1), []byte{2})
	f.Fuzz(func(t *testing.T, base int64, v []byte) {
		if base < 0 {
			return // keys never hold a negative base offset (decodePosting refuses it)
		}
		po, err := DecodePostingValue(base, v)
		if err != nil {
			return
		}
		if po.BaseOffset != base || po.LastOffset < base {
			t.Fatalf("decoded %v from base %d", po, base)
		}
		again := encodePostingValue(nil, po.BaseOffset, po.LastOffset, po.Bytes)
		if back, err := DecodePostingValue(base, again); err != nil || back != po {
			t.Fatalf("%v re-encoded as %x decodes as %v, %v", po, again, back, err)
		}
	})
}

func TestRebuildPostings(t *testing.T) {
	db := openDB(t, t.TempDir())
	defer db.Close()
	p := NewPostings(db, testPrefix)
	f := newFakeLog()
	opts := record.BuildOptions{Codec: record.CodecZstd}
	f.append(t, topicA, 0, build(t, opts, rec("a", "1"), rec("b", "2"), rec("a", "3")))
	f.append(t, topicA, 0, build(t, opts, rec("b", "4")))
	f.append(t, topicA, 1, build(t, record.BuildOptions{}, rec("a", "5"), kv{value: []byte("keyless")}))
	// A stale posting the rebuild must clear.
	commit(t, db, func(b *pebble.Batch) {
		p.Apply(b, topicA, 0, 40, 41, 100, keysOf("zzz"))
		p.SetReady(b, topicA, false)
	})
	if err := RebuildPostings(context.Background(), p, topicA, 2, f); err != nil {
		t.Fatalf("RebuildPostings: %v", err)
	}
	if !p.Ready(topicA) {
		t.Error("not ready after the rebuild")
	}
	for _, tc := range []struct {
		part int32
		key  string
		want []Posting
	}{
		{0, "a", []Posting{{BaseOffset: 0, LastOffset: 2}}},
		{0, "b", []Posting{{BaseOffset: 0, LastOffset: 2}, {BaseOffset: 3, LastOffset: 3}}},
		{0, "zzz", nil},
		{1, "a", []Posting{{BaseOffset: 0, LastOffset: 1}}},
	} {
		if got := findAll(t, p, topicA, tc.part, tc.key, 0); !slices.Equal(got, tc.want) {
			t.Errorf("partition %d key %q: %v, want %v", tc.part, tc.key, got, tc.want)
		}
	}
	if err := RebuildPostings(context.Background(), p, topicA, 2, f); !errors.Is(err, ErrRebuildAborted) {
		t.Errorf("second rebuild: %v, want ErrRebuildAborted", err)
	}
}

// TestSweepPartition: a sweep deletes the postings of every key whose batch
// ends below the log start, keeps a batch it cuts into, and leaves other
// partitions alone.
func TestSweepPartition(t *testing.T) {
	db := openDB(t, t.TempDir())
	defer db.Close()
	p := NewPostings(db, testPrefix)
	commit(t, db, func(b *pebble.Batch) {
		for base := int64(0); base < 40; base += 10 {
			p.Apply(b, topicA, 0, base, base+9, 100, keysOf("a", fmt.Sprintf("k%d", base)))
			p.Apply(b, topicA, 1, base, base+9, 100, keysOf("a"))
		}
	})
	n, err := p.SweepPartition(context.Background(), topicA, 0, 25)
	if err != nil || n != 4 { // a's and k's postings of 0-9 and 10-19
		t.Fatalf("SweepPartition = %d, %v; want 4", n, err)
	}
	for _, tc := range []struct {
		part int32
		key  string
		want int
	}{{0, "a", 2}, {0, "k0", 0}, {0, "k10", 0}, {0, "k20", 1}, {0, "k30", 1}, {1, "a", 4}} {
		if got := findAll(t, p, topicA, tc.part, tc.key, 0); len(got) != tc.want {
			t.Errorf("partition %d key %s: %v, want %d postings", tc.part, tc.key, got, tc.want)
		}
	}
}
