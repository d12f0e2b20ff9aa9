package ha

import (
	"log/slog"
	"strconv"
	"testing"

	"github.com/cockroachdb/pebble"
	"github.com/cockroachdb/pebble/vfs"
	"github.com/nats-io/nats.go"

	"github.com/floe-io/floe/internal/pebblelog"
)

// TestReplicaSkipsOutOfTurn feeds a replica a log in which a deposed
// leader's append got in after the new leader's entries: it is skipped, and
// so is the rest of the new leader's term (its leader computed it on an
// append the log refused: the one whose place the old append took), until
// the next leader entry.
func TestReplicaSkipsOutOfTurn(t *testing.T) {
	open := func(name string) *pebble.DB {
		db, err := pebble.Open(name, &pebble.Options{FS: vfs.NewMem(), Logger: pebblelog.New(nil, "ha")})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	}
	r := &replica{log: slog.New(slog.DiscardHandler), coord: open("c"), groups: open("g"), applied: map[string]position{}, next: 1}
	set := func(key string) []byte {
		b := r.coord.NewBatch()
		_ = b.Set([]byte(key), []byte("v"), nil)
		return b.Repr()
	}
	msgs := []struct {
		kind string
		term uint64
		data []byte
	}{
		{kindLeader, 5, []byte(`{"term":5}`)},
		{dbCoordinator, 5, set("a")},
		{dbCoordinator, 3, set("stray")}, // the deposed leader's
		{dbCoordinator, 5, set("after-stray")},
		{kindLeader, 6, []byte(`{"term":6}`)},
		{dbCoordinator, 6, set("b")},
		{dbCoordinator, 5, set("late")}, // term 5's, after term 6 began
		{dbCoordinator, 6, set("c")},    // term 6's message before it was refused
		{kindLeader, 7, []byte(`{"term":7}`)},
		{dbCoordinator, 7, set("d")},
	}
	for i, m := range msgs {
		h := nats.Header{}
		h.Set(hdrFormat, logFormat)
		h.Set(hdrDB, m.kind)
		h.Set(hdrTerm, strconv.FormatUint(m.term, 10))
		if err := r.apply(uint64(i+1), h, m.data); err != nil {
			t.Fatalf("message %d: %v", i+1, err)
		}
	}
	for key, want := range map[string]bool{"a": true, "stray": false, "after-stray": false, "b": true, "late": false, "c": false, "d": true} {
		_, closer, err := r.coord.Get([]byte(key))
		if got := err == nil; got != want {
			t.Errorf("key %q applied: %v, want %v", key, got, want)
		}
		if closer != nil {
			closer.Close()
		}
	}
	if p := r.applied[dbCoordinator]; p.seq != 10 || p.term != 7 || p.acked != 10 {
		t.Errorf("position %+v, want seq 10 term 7", p)
	}
	if r.position() != 10 {
		t.Errorf("read up to %d, want 10", r.position())
	}
}
