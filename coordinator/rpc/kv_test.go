package rpc_test

import (
	"context"
	"reflect"
	"testing"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/coordinator"
	"github.com/floe-io/floe/coordinator/rpc"
	"github.com/floe-io/floe/internal/testkit"
	"github.com/floe-io/floe/internal/testkit/natstest"
)

// kvSetup makes an indexed topic "kv" and a topic "late" whose index is
// being built (it stays so: the coordinator has no object reader), and
// commits keyed batches to kv: partition 0 holds "a" at 0, "b" at 1-2
// (tombstoned at 2) and "c" at 3; then DeleteRecords moves partition 1's
// log start past "gone".
func kvSetup(t *testing.T, c coordapi.Coordinator) (kv, late coordapi.Topic) {
	t.Helper()
	ctx := context.Background()
	var err error
	if kv, err = c.CreateTopic(ctx, coordapi.CreateTopicRequest{Name: "kv", Partitions: 2, ReplicationFactor: -1,
		Configs: map[string]string{"cleanup.policy": "compact", "kv.index.enabled": "true"}}); err != nil {
		t.Fatal(err)
	}
	if late, err = c.CreateTopic(ctx, coordapi.CreateTopicRequest{Name: "late", Partitions: 1, ReplicationFactor: -1,
		Configs: map[string]string{"cleanup.policy": "compact"}}); err != nil {
		t.Fatal(err)
	}
	batch := func(id coordapi.TopicID, p int32, off int64, keys ...coordapi.KeyEntry) coordapi.CommitBatch {
		return coordapi.CommitBatch{TopicID: id, Partition: p, ByteOffset: off, ByteLength: 100, LastOffsetDelta: int32(len(keys) - 1),
			MaxTimestamp: 10, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, Keys: keys}
	}
	k := func(key string, delta int32, tomb bool) coordapi.KeyEntry {
		return coordapi.KeyEntry{Key: []byte(key), OffsetDelta: delta, Tombstone: tomb}
	}
	if _, err := c.CommitObject(ctx, &coordapi.CommitRequest{ObjectKey: "wal/1", ObjectSize: 400, BrokerID: 1, Batches: []coordapi.CommitBatch{
		batch(kv.ID, 0, 0, k("a", 0, false), k("b", 1, false)),
		batch(kv.ID, 0, 100, k("b", 0, true), k("c", 1, false)),
		batch(kv.ID, 1, 200, k("gone", 0, false)),
		batch(late.ID, 0, 300, k("x", 0, false)),
	}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CommitObject(ctx, &coordapi.CommitRequest{ObjectKey: "wal/2", ObjectSize: 100, BrokerID: 1, Batches: []coordapi.CommitBatch{
		batch(kv.ID, 1, 0, k("kept", 0, false)),
	}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.DeleteRecords(ctx, kv.ID, 1, 1); err != nil {
		t.Fatal(err)
	}
	on := "true"
	if err := c.AlterTopicConfigs(ctx, "late", []coordapi.ConfigOp{{Name: "kv.index.enabled", Value: &on}}, true, false); err != nil {
		t.Fatal(err)
	}
	return kv, late
}

// kvGetCases are lookups kvSetup's topics answer, each checked against
// the in-process coordinator's answer.
func kvGetCases(kv, late coordapi.Topic) []coordapi.KvGetRequest {
	req := func(id coordapi.TopicID, p int32, key string) coordapi.KvGetRequest {
		return coordapi.KvGetRequest{TopicID: id, Partition: p, Key: []byte(key)}
	}
	return []coordapi.KvGetRequest{
		req(kv.ID, 0, "a"), req(kv.ID, 0, "c"), req(kv.ID, 0, "b"), req(kv.ID, 0, "none"),
		req(kv.ID, 1, "gone"), req(kv.ID, 1, "kept"), req(late.ID, 0, "x"),
	}
}

// TestKvGet: kv_get answers over NATS what the coordinator answers in
// process, errors included.
func TestKvGet(t *testing.T) {
	e := newEnv(t, nil, func(o *coordinator.Options) { o.KVIndexEnabled = true })
	ctx := context.Background()
	kv, late := kvSetup(t, e.client)
	for _, req := range kvGetCases(kv, late) {
		got, err := e.client.KvGet(ctx, req)
		want, werr := e.coord.KvGet(ctx, req)
		if err != nil || werr != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("KvGet(%q) = %+v, %v; in process %+v, %v", req.Key, got, err, want, werr)
		}
	}
	// Spot checks of what the cases mean.
	if r, _ := e.client.KvGet(ctx, kvGetCases(kv, late)[1]); !r.Found || r.Offset != 3 || r.Batch.ObjectKey != "wal/1" ||
		r.Batch.ByteOffset != 100 || r.Batch.BaseOffset != 2 || r.HighWatermark != 4 {
		t.Errorf("c: %+v", r)
	}
	if r, _ := e.client.KvGet(ctx, kvGetCases(kv, late)[4]); !r.Found || r.Offset != 0 || r.LogStartOffset != 1 || r.HasBatch() {
		t.Errorf("below the log start: %+v", r)
	}
	if r, _ := e.client.KvGet(ctx, kvGetCases(kv, late)[6]); !r.Indexed || r.Ready || r.Found {
		t.Errorf("being built: %+v", r)
	}
	_, err := e.client.KvGet(ctx, coordapi.KvGetRequest{TopicID: kv.ID, Partition: 5, Key: []byte("a")})
	wantKerr(t, err, kerr.UnknownTopicOrPartition)
	_, err = e.client.KvGet(ctx, coordapi.KvGetRequest{TopicID: coordapi.TopicID{9}, Key: []byte("a")})
	wantKerr(t, err, kerr.UnknownTopicID)
}

// TestKvGetEarlierCoordinator: against a coordinator that does not serve
// kv_get (an earlier build, during a rolling upgrade), the client answers
// the same from the ops it has.
func TestKvGetEarlierCoordinator(t *testing.T) {
	ns := natstest.StartWith(t, &server.Options{})
	c, err := coordinator.Open(coordinator.Options{Dir: t.TempDir(), Logger: testkit.Logger(), KVIndexEnabled: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	srv, err := rpc.ServeWithoutOps(context.Background(), natstest.Connect(t, ns), "test", c, rpc.ServerOptions{Logger: testkit.Logger()}, rpc.OpKvGet)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	client := rpc.NewClient(natstest.Connect(t, ns), "test", rpc.ClientOptions{Logger: testkit.Logger()})
	ctx := context.Background()
	kv, late := kvSetup(t, client)
	for _, req := range kvGetCases(kv, late) {
		got, err := client.KvGet(ctx, req)
		want, werr := c.KvGet(ctx, req)
		if !want.Indexed {
			want.Indexed = true // what the earlier ops cannot tell
		}
		if !want.Found {
			want.LogStartOffset = got.LogStartOffset // kv_lookup does not answer it
		}
		if err != nil || werr != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("KvGet(%q) = %+v, %v; in process %+v, %v", req.Key, got, err, want, werr)
		}
	}
	_, err = client.KvGet(ctx, coordapi.KvGetRequest{TopicID: kv.ID, Partition: 5, Key: []byte("a")})
	wantKerr(t, err, kerr.UnknownTopicOrPartition)
}
