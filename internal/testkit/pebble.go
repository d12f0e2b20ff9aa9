package testkit

import (
	"testing"

	"github.com/cockroachdb/pebble"
	"github.com/cockroachdb/pebble/vfs"

	"github.com/floe-io/floe/internal/pebblelog"
)

// MemPebble opens a Pebble database in memory, closed when t ends: for unit
// tests of the packages that read or write one. Its logs go nowhere; a
// fatal one panics, as Pebble expects.
func MemPebble(t testing.TB) *pebble.DB {
	t.Helper()
	db, err := pebble.Open("", &pebble.Options{FS: vfs.NewMem(), Logger: pebblelog.New(nil, "test")})
	if err != nil {
		t.Fatalf("open an in-memory pebble: %v", err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}
