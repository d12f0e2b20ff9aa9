package node_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/floe-io/floe/internal/testkit"
	"github.com/floe-io/floe/internal/testkit/floetest"
	"github.com/floe-io/floe/node"
)

// TestEmbeddedInlineObjects produces on the embedded default, whose small
// objects ride in their commits (package coordinator/inline), and stops the node
// within the flush delay: Close writes the staged objects, and a consumer
// of the restarted node reads every record. (A crash before the flush is
// coordinator's TestInlineRestart.)
func TestEmbeddedInlineObjects(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	start := func() *node.Node {
		n, err := node.Start(ctx, node.Config{DataDir: dir, KafkaAddr: "127.0.0.1:0", HTTPAddr: "127.0.0.1:0", Logger: testkit.Logger()})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	stop := func(n *node.Node) {
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		if err := n.Close(cctx); err != nil {
			t.Fatal(err)
		}
	}
	n := start()
	cl := pinned(t, n.KafkaAddr(), kgo.DefaultProduceTopic("inline"))
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, -1, nil, "inline"); err != nil {
		t.Fatal(err)
	}
	const records = 20
	for i := range records {
		if err := cl.ProduceSync(ctx, kgo.StringRecord(fmt.Sprintf("r%d", i))).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	staged, err := floetest.Metric(n.HTTPAddr(), "floe_objectstore_requests_total", `op="stage"`, `outcome="ok"`)
	if err != nil || staged < records {
		t.Fatalf("%v objects staged for %d produces (%v): the embedded default did not commit them inline", staged, records, err)
	}
	cl.Close()
	stop(n) // within the flush delay: Close writes the staged objects
	entries, err := os.ReadDir(filepath.Join(dir, "objects", "wal"))
	if err != nil || len(entries) < records {
		t.Fatalf("%d objects on disk after the node closed (%v), want the %d committed", len(entries), err, records)
	}

	n = start()
	defer stop(n)
	cons := pinned(t, n.KafkaAddr(), kgo.ConsumeTopics("inline"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	fctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	var got []string
	for len(got) < records {
		fs := cons.PollFetches(fctx)
		if err := fs.Err0(); err != nil {
			t.Fatalf("after %d records: %v", len(got), err)
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	for i, v := range got {
		if want := fmt.Sprintf("r%d", i); v != want {
			t.Fatalf("record %d is %q, want %q", i, v, want)
		}
	}
}
