package sortedwrites

import (
	"fmt"
	"slices"
	"testing"

	"github.com/cockroachdb/pebble"

	"github.com/floe-io/floe/internal/testkit"
)

// op is one call on a Writes: "set" (Set), "append" (k appended to Arena
// then EndKey, v then EndValue) or "reset" (Reset(16, 2)).
type op struct{ kind, k, v string }

// applied returns the writes w.Apply puts in a fresh batch of db, in the
// batch's order, as "key=value".
func applied(t *testing.T, db *pebble.DB, w *Writes) []string {
	t.Helper()
	b := db.NewBatch()
	defer b.Close()
	w.Apply(b)
	var got []string
	r := b.Reader()
	for {
		kind, k, v, ok, err := r.Next()
		if err != nil {
			t.Fatalf("read batch: %v", err)
		}
		if !ok {
			break
		}
		if kind != pebble.InternalKeyKindSet {
			t.Fatalf("batch holds a %v of %q, want a set", kind, k)
		}
		got = append(got, string(k)+"="+string(v))
	}
	if int(b.Count()) != len(got) {
		t.Fatalf("batch counts %d writes, reader shows %d", b.Count(), len(got))
	}
	return got
}

// TestApply checks that Apply puts every write, Set or appended in place,
// in a batch in bytewise key order, and BatchSize's estimate.
func TestApply(t *testing.T) {
	db := testkit.MemPebble(t)
	for _, tc := range []struct {
		name     string
		ops      []op
		want     []string
		wantSize int
	}{
		{"empty", nil, nil, 0},
		{"one", []op{{"set", "k", "v"}}, []string{"k=v"}, 2 + 16},
		{"already in order", []op{{"set", "a", "1"}, {"set", "b", "2"}, {"set", "c", "3"}},
			[]string{"a=1", "b=2", "c=3"}, 6 + 48},
		{"reversed", []op{{"set", "c", "3"}, {"set", "b", "2"}, {"set", "a", "1"}},
			[]string{"a=1", "b=2", "c=3"}, 6 + 48},
		{"bytewise, a prefix first", []op{{"set", "ab", "x"}, {"set", "a\xff", "y"}, {"set", "a", "z"}, {"set", "B", "w"}},
			[]string{"B=w", "a=z", "ab=x", "a\xff=y"}, 10 + 64},
		{"empty value", []op{{"set", "b", ""}, {"set", "a", "1"}}, []string{"a=1", "b="}, 3 + 32},
		{"empty key", []op{{"set", "b", "1"}, {"set", "", "0"}}, []string{"=0", "b=1"}, 3 + 32},
		{"appended in place", []op{{"append", "p/2", "two"}, {"append", "p/1", "one"}},
			[]string{"p/1=one", "p/2=two"}, 12 + 32},
		{"set and appended mixed", []op{{"append", "d", "4"}, {"set", "b", "2"}, {"append", "c", "3"}, {"set", "a", "1"}},
			[]string{"a=1", "b=2", "c=3", "d=4"}, 8 + 64},
		{"reset drops what came before", []op{{"set", "z", "old"}, {"reset", "", ""}, {"set", "y", "2"}, {"append", "x", "1"}},
			[]string{"x=1", "y=2"}, 4 + 32},
		{"reset alone", []op{{"append", "z", "old"}, {"reset", "", ""}}, nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var w Writes
			for _, o := range tc.ops {
				switch o.kind {
				case "set":
					w.Set([]byte(o.k), []byte(o.v))
				case "append":
					w.Arena = append(w.Arena, o.k...)
					w.EndKey()
					w.Arena = append(w.Arena, o.v...)
					w.EndValue()
				case "reset":
					w.Reset(16, 2)
				}
			}
			if got := w.BatchSize(); got != tc.wantSize {
				t.Errorf("BatchSize = %d, want %d", got, tc.wantSize)
			}
			if got := applied(t, db, &w); !slices.Equal(got, tc.want) {
				t.Fatalf("Apply wrote %q, want %q", got, tc.want)
			}
		})
	}
}

// TestReuse checks that one Writes serves commit after commit: each
// Apply after a Reset holds only that commit's writes, committed to the
// database as they were set.
func TestReuse(t *testing.T) {
	db := testkit.MemPebble(t)
	var w Writes
	for round := range 3 {
		w.Reset(64, 4)
		if w.BatchSize() != 0 {
			t.Fatalf("round %d: BatchSize %d after Reset, want 0", round, w.BatchSize())
		}
		for i := 4; i >= 0; i-- {
			w.Set(fmt.Appendf(nil, "r%d/k%d", round, i), fmt.Appendf(nil, "v%d.%d", round, i))
		}
		b := db.NewBatch()
		w.Apply(b)
		if b.Count() != 5 {
			t.Fatalf("round %d: batch of %d writes, want 5", round, b.Count())
		}
		if err := b.Commit(pebble.NoSync); err != nil {
			t.Fatal(err)
		}
	}
	it, err := db.NewIter(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	var got []string
	for ok := it.First(); ok; ok = it.Next() {
		got = append(got, string(it.Key())+"="+string(it.Value()))
	}
	var want []string
	for round := range 3 {
		for i := range 5 {
			want = append(want, fmt.Sprintf("r%d/k%d=v%d.%d", round, i, round, i))
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("database holds %q, want %q", got, want)
	}
}
