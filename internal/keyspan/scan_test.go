package keyspan

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/cockroachdb/pebble"

	"github.com/floe-io/floe/internal/testkit"
)

func TestScan(t *testing.T) {
	db := testkit.MemPebble(t)
	for _, k := range []string{"a1", "a2", "b1", "b2", "b3", "c"} {
		if err := db.Set([]byte(k), []byte("v"+k), pebble.NoSync); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Set([]byte{0xff, 1}, []byte("last"), pebble.NoSync); err != nil {
		t.Fatal(err)
	}
	collect := func(scan func(fn func(k, v []byte) error) error) []string {
		t.Helper()
		var got []string
		if err := scan(func(k, v []byte) error {
			got = append(got, fmt.Sprintf("%x=%s", k, v))
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return got
	}
	for _, tc := range []struct {
		name string
		scan func(fn func(k, v []byte) error) error
		want []string
	}{
		{"family", func(fn func(k, v []byte) error) error { return ScanFamily(db, 'b', fn) },
			[]string{"6231=vb1", "6232=vb2", "6233=vb3"}},
		{"range", func(fn func(k, v []byte) error) error { return Scan(db, []byte("a2"), []byte("b2"), fn) },
			[]string{"6132=va2", "6231=vb1"}},
		{"empty", func(fn func(k, v []byte) error) error { return ScanFamily(db, 'x', fn) }, nil},
		{"family 0xff", func(fn func(k, v []byte) error) error { return ScanFamily(db, 0xff, fn) },
			[]string{"ff01=last"}},
	} {
		if got := collect(tc.scan); !slices.Equal(got, tc.want) {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
	}

	stop := errors.New("stop")
	n := 0
	err := ScanFamily(db, 'b', func(k, v []byte) error {
		n++
		return stop
	})
	if err != stop || n != 1 {
		t.Fatalf("fn's error: got %v after %d calls, want it unchanged after 1", err, n)
	}
}
