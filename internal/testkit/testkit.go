// Package testkit holds what every package's tests share: a poll helper
// that waits on a condition the test can observe (never a fixed sleep), the
// test logger, and free ports on 127.0.0.1. It imports nothing of floe, so
// the tests of any package, however low, can use it without an import
// cycle; the harnesses that start real servers (floetest, miniotest,
// natstest) build on it.
package testkit

import (
	"fmt"
	"log/slog"
	"net"
	"os"
	"testing"
	"time"
)

// Logger returns a logger for code under test: silent unless the
// environment sets FLOE_TEST_LOG=1, then debug level on stderr.
func Logger() *slog.Logger {
	if os.Getenv("FLOE_TEST_LOG") == "1" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

// CheckFor calls fn every interval until it returns nil, failing the test
// with fn's last error once timeout has passed. The timeout bounds a wait
// for something the test can observe; it is not an assertion on speed.
func CheckFor(t testing.TB, timeout, interval time.Duration, fn func() error) {
	t.Helper()
	if err := Poll(timeout, interval, fn); err != nil {
		t.Fatal(err)
	}
}

// Poll is CheckFor for code that cannot fail a test itself (a goroutine,
// a helper that returns errors): it returns nil once fn does, or fn's last
// error after timeout.
func Poll(timeout, interval time.Duration, fn func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := fn()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("still failing after %s: %w", timeout, err)
		}
		time.Sleep(interval)
	}
}

// FreeAddr returns a 127.0.0.1 address whose port is free right now.
func FreeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("free port: %v", err)
	}
	defer ln.Close()
	return ln.Addr().String()
}
