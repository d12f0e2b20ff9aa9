package testkit

import (
	"fmt"
	"testing"

	"github.com/cockroachdb/pebble"
	"github.com/cockroachdb/pebble/vfs"
)

// MemPebble opens a Pebble database in memory, closed when t ends: for unit
// tests of the packages that read or write one.
func MemPebble(t testing.TB) *pebble.DB {
	t.Helper()
	db, err := pebble.Open("", &pebble.Options{FS: vfs.NewMem(), Logger: quietLogger{}})
	if err != nil {
		t.Fatalf("open an in-memory pebble: %v", err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// quietLogger drops Pebble's logs; a fatal one panics, as Pebble expects.
type quietLogger struct{}

func (quietLogger) Infof(string, ...any)  {}
func (quietLogger) Errorf(string, ...any) {}
func (quietLogger) Fatalf(format string, args ...any) {
	panic("pebble: " + fmt.Sprintf(format, args...))
}
