package flagenv

import (
	"flag"
	"testing"
	"time"
)

func TestSet(t *testing.T) {
	t.Setenv("FLOE_INGEST_LINGER", "5ms")
	t.Setenv("FLOE_NODE_ID", "7")
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	linger := fs.Duration("ingest-linger", time.Second, "")
	node := fs.Int("node-id", 1, "")
	other := fs.String("data-dir", "./data", "")
	if err := Set(fs); err != nil {
		t.Fatal(err)
	}
	if err := fs.Parse([]string{"--node-id", "9"}); err != nil {
		t.Fatal(err)
	}
	if *linger != 5*time.Millisecond || *node != 9 || *other != "./data" {
		t.Fatalf("linger %s node %d data %s: want 5ms from env, 9 from the command line, the default", *linger, *node, *other)
	}
	t.Setenv("FLOE_NODE_ID", "x")
	if err := Set(fs); err == nil {
		t.Fatal("a bad value in the environment was accepted")
	}
}
