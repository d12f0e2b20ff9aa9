// Package floetest starts real floe servers for tests: in-process nodes and
// broker processes, on 127.0.0.1 and free ports, stopped by t.Cleanup. Logs
// are off unless FLOE_TEST_LOG=1.
package floetest

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"testing"
	"time"

	"github.com/floe-io/floe/node"
)

// Logger returns a logger for servers under test: silent unless
// FLOE_TEST_LOG=1.
func Logger() *slog.Logger {
	if os.Getenv("FLOE_TEST_LOG") == "1" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// StartNode starts an in-process broker node with cfg, filling in a temp
// data dir and free 127.0.0.1 ports where cfg leaves them empty. It is
// closed gracefully at cleanup.
func StartNode(t testing.TB, cfg node.Config) *node.Node {
	t.Helper()
	if cfg.DataDir == "" {
		cfg.DataDir = t.TempDir()
	}
	if cfg.KafkaAddr == "" {
		cfg.KafkaAddr = "127.0.0.1:0"
	}
	if cfg.HTTPAddr == "" {
		cfg.HTTPAddr = "127.0.0.1:0"
	}
	if cfg.Logger == nil {
		cfg.Logger = Logger()
	}
	n, err := node.Start(context.Background(), cfg)
	if err != nil {
		t.Fatalf("start node: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := n.Close(ctx); err != nil {
			t.Errorf("close node: %v", err)
		}
	})
	return n
}

// FreeAddr returns a 127.0.0.1 address with a port free right now.
func FreeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("free port: %v", err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// CheckFor calls fn every interval until it returns nil, failing the test
// with fn's last error after timeout.
func CheckFor(t testing.TB, timeout, interval time.Duration, fn func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := fn()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("still failing after %s: %v", timeout, err)
		}
		time.Sleep(interval)
	}
}

// Errorf is fmt.Errorf, so CheckFor funcs read naturally.
func Errorf(format string, args ...any) error { return fmt.Errorf(format, args...) }
