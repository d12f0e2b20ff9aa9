package pebblelog

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble"
)

var _ pebble.Logger = Logger{}

func TestLogger(t *testing.T) {
	var buf bytes.Buffer
	l := New(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo})), "groups")
	l.Infof("flushed %d", 1)
	if buf.Len() != 0 {
		t.Fatalf("Infof logged above debug: %q", buf.String())
	}
	l.Errorf("disk %s", "full")
	if !strings.Contains(buf.String(), "groups: pebble: disk full") {
		t.Fatalf("Errorf logged %q", buf.String())
	}
	defer func() {
		r := recover()
		if r != "groups: pebble fatal: wal broken" {
			t.Fatalf("Fatalf panicked with %v", r)
		}
		if !strings.Contains(buf.String(), "groups: pebble: fatal: wal broken") {
			t.Fatalf("Fatalf logged %q", buf.String())
		}
	}()
	l.Fatalf("wal %s", "broken")
}

// Without a logger the messages go nowhere, and Fatalf still panics.
func TestNilLog(t *testing.T) {
	l := New(nil, "ha")
	l.Infof("flushed")
	l.Errorf("disk full")
	defer func() {
		if r := recover(); r != "ha: pebble fatal: wal broken" {
			t.Fatalf("Fatalf panicked with %v", r)
		}
	}()
	l.Fatalf("wal %s", "broken")
}

// Infof logs at debug level when it is on.
func TestInfofAtDebug(t *testing.T) {
	var buf bytes.Buffer
	New(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})), "coordinator").Infof("flushed %d", 3)
	if !strings.Contains(buf.String(), "coordinator: pebble: flushed 3") {
		t.Fatalf("Infof logged %q", buf.String())
	}
}
