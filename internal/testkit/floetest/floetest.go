// Package floetest starts real floe servers for tests: in-process nodes and
// broker processes, on 127.0.0.1 and free ports, stopped by t.Cleanup. Logs
// are off unless FLOE_TEST_LOG=1.
package floetest

import (
	"context"
	"testing"
	"time"

	"github.com/floe-io/floe/internal/testkit"
	"github.com/floe-io/floe/node"
)

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
		cfg.Logger = testkit.Logger()
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
