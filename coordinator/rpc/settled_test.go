package rpc_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/coordinator"
	"github.com/floe-io/floe/coordinator/rpc"
	"github.com/floe-io/floe/internal/testkit"
	"github.com/floe-io/floe/internal/testkit/natstest"
)

// TestSettledGate: a reply that depends only on what the log has
// (FindBatches, FindBatchesMulti, a /kv lookup of a durable key) is gated by SettledGate when one is set,
// every other reply by Gate; here Gate refuses everything, as a log that
// never answers would hold it.
func TestSettledGate(t *testing.T) {
	ctx := context.Background()
	closed := &coordapi.KafkaError{Code: kerr.NotLeaderForPartition, Message: "the log has not answered"}
	for _, tc := range []struct {
		name        string
		settledGate func() error
		findOK      bool
	}{
		{"settled gate", func() error { return nil }, true},
		{"settled gate refusing", func() error { return closed }, false},
		{"no settled gate: Gate", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := natstest.StartWith(t, &server.Options{})
			c, err := coordinator.Open(coordinator.Options{Dir: t.TempDir(), Logger: testkit.Logger(), KVIndexEnabled: true})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Close() })
			tp, err := c.CreateTopic(ctx, coordapi.CreateTopicRequest{Name: "t", Partitions: 1, ReplicationFactor: -1,
				Configs: map[string]string{"cleanup.policy": "compact", "kv.index.enabled": "true"}})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.CommitObject(ctx, &coordapi.CommitRequest{ObjectKey: "wal/1", ObjectSize: 100, BrokerID: 1,
				Batches: []coordapi.CommitBatch{{TopicID: tp.ID, Partition: 0, ByteLength: 100, LastOffsetDelta: 2, ProducerID: -1,
					Keys: []coordapi.KeyEntry{{Key: []byte("k"), OffsetDelta: 1}}}}}); err != nil {
				t.Fatal(err)
			}
			srv, err := rpc.ServeWith(ctx, natstest.Connect(t, ns), "test", c, rpc.ServerOptions{Logger: testkit.Logger(),
				Gate: func() error { return closed }, SettledGate: tc.settledGate})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(srv.Close)
			client := rpc.NewClient(natstest.Connect(t, ns), "test", rpc.ClientOptions{Timeout: 2 * time.Second, Logger: testkit.Logger()})
			req := coordapi.FindBatchesRequest{TopicID: tp.ID, Partition: 0, MaxBytes: 1 << 20}
			resp, err := client.FindBatches(ctx, req)
			if tc.findOK != (err == nil) {
				t.Fatalf("FindBatches: %v; want ok %v", err, tc.findOK)
			}
			if err == nil && (len(resp.Batches) != 1 || resp.HighWatermark != 3) {
				t.Fatalf("FindBatches: %d batches to %d, want 1 to 3", len(resp.Batches), resp.HighWatermark)
			}
			multi, err := client.FindBatchesMulti(ctx, []coordapi.FindBatchesRequest{req})
			if tc.findOK != (err == nil) {
				t.Fatalf("FindBatchesMulti: %v; want ok %v", err, tc.findOK)
			}
			if err == nil && len(multi[0].Batches) != 1 {
				t.Fatalf("FindBatchesMulti: %d batches, want 1", len(multi[0].Batches))
			}
			kv, err := client.KvGet(ctx, coordapi.KvGetRequest{TopicID: tp.ID, Partition: 0, Key: []byte("k")})
			if tc.findOK != (err == nil) {
				t.Fatalf("KvGet: %v; want ok %v", err, tc.findOK)
			}
			if err == nil && (!kv.Found || kv.Offset != 1) {
				t.Fatalf("KvGet: %+v, want k found at 1", kv)
			}
			if _, _, err := client.ListOffset(ctx, tp.ID, 0, coordapi.TimestampLatest); !errors.Is(err, kerr.NotLeaderForPartition) {
				t.Fatalf("ListOffset, another reply: %v; want Gate's refusal", err)
			}
		})
	}
}
