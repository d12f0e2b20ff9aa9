package ha

import (
	"bytes"
	"log/slog"
	"strconv"
	"testing"

	"github.com/cockroachdb/pebble"
	"github.com/cockroachdb/pebble/vfs"
	"github.com/nats-io/nats.go"

	"github.com/floe-io/floe/internal/pebblelog"
)

// FuzzReplicaApply feeds a replica messages of any kind, part and content:
// it applies what is a whole batch, and refuses or drops the rest, never
// panicking.
func FuzzReplicaApply(f *testing.F) {
	mem := vfs.NewMem()
	db, err := pebble.Open("", &pebble.Options{FS: mem})
	if err != nil {
		f.Fatal(err)
	}
	defer db.Close()
	good := db.NewBatch()
	_ = good.Set([]byte("k"), []byte("v"), nil)
	_ = good.DeleteRange([]byte("a"), []byte("b"), nil)
	f.Add("c", "", "1", good.Repr())
	f.Add("g", "1/2", "1", good.Repr()[:7])
	f.Add("L", "", "2", []byte(`{"term":2,"id":"x"}`))
	f.Add("S", "", "2", []byte(`{"seq":1}`))
	f.Add("c", "", "x", []byte{})
	f.Fuzz(func(t *testing.T, kind, part, term string, data []byte) {
		coord, err := pebble.Open("c", &pebble.Options{FS: vfs.NewMem(), Logger: pebblelog.New(nil, "ha")})
		if err != nil {
			t.Fatal(err)
		}
		defer coord.Close()
		groups, err := pebble.Open("g", &pebble.Options{FS: vfs.NewMem(), Logger: pebblelog.New(nil, "ha")})
		if err != nil {
			t.Fatal(err)
		}
		defer groups.Close()
		r := &replica{log: slog.New(slog.DiscardHandler), coord: coord, groups: groups, applied: map[string]position{}, next: 1}
		h := nats.Header{}
		h.Set(hdrFormat, logFormat)
		h.Set(hdrDB, kind)
		h.Set(hdrTerm, term)
		if part != "" {
			h.Set(hdrPart, part)
		}
		for seq := uint64(1); seq <= 2; seq++ {
			// A copy each time: the replica applies a message's own
			// bytes, and may write to them.
			if err := r.apply(seq, h, bytes.Clone(data)); err != nil {
				return
			}
		}
		if r.position() != 2 {
			t.Fatalf("position %d after two messages", r.position())
		}
	})
}

// FuzzParsePart checks that a part header parses only to 1 <= i <= n,
// n >= 2, and that what it parses to reads back the same.
func FuzzParsePart(f *testing.F) {
	f.Add("1/2")
	f.Add("3/2")
	f.Add("0/0")
	f.Fuzz(func(t *testing.T, s string) {
		i, n, err := parsePart(s)
		if err != nil {
			return
		}
		if i < 1 || n < 2 || i > n {
			t.Fatalf("%q parsed to %d/%d", s, i, n)
		}
		if i2, n2, err := parsePart(strconv.Itoa(i) + "/" + strconv.Itoa(n)); err != nil || i2 != i || n2 != n {
			t.Fatalf("%q parsed to %d/%d, which reads back as %d/%d, %v", s, i, n, i2, n2, err)
		}
	})
}
