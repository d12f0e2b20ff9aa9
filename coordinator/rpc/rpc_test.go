package rpc_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/coordinator"
	"github.com/floe-io/floe/coordinator/rpc"
	"github.com/floe-io/floe/internal/testkit"
	"github.com/floe-io/floe/internal/testkit/natstest"
)

// env is a coordinator served over a real NATS server, and a client.
type env struct {
	t      *testing.T
	ns     *server.Server
	coord  *coordinator.Coordinator
	srv    *rpc.Server
	client *rpc.Client
	nc     *nats.Conn
}

func newEnv(t *testing.T, opts *server.Options, copts ...func(*coordinator.Options)) *env {
	t.Helper()
	if opts == nil {
		opts = &server.Options{}
	}
	e := &env{t: t, ns: natstest.StartWith(t, opts)}
	o := coordinator.Options{Dir: t.TempDir(), Logger: testkit.Logger()}
	for _, m := range copts {
		m(&o)
	}
	c, err := coordinator.Open(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	e.coord = c
	srvConn := natstest.Connect(t, e.ns)
	e.srv, err = rpc.Serve(context.Background(), srvConn, "test", c, testkit.Logger())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.srv.Close)
	e.nc = natstest.Connect(t, e.ns)
	e.client = rpc.NewClient(e.nc, "test", rpc.ClientOptions{Timeout: 2 * time.Second, Logger: testkit.Logger()})
	return e
}

func wantKerr(t *testing.T, err error, want *kerr.Error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("error %v, want one wrapping %s", err, want.Message)
	}
}

func TestClientAgainstCoordinator(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	c := e.client

	tp, err := c.CreateTopic(ctx, coordapi.CreateTopicRequest{Name: "orders", Partitions: 3, ReplicationFactor: -1,
		Configs: map[string]string{"retention.ms": "1000"}})
	if err != nil {
		t.Fatal(err)
	}
	if tp.ID.IsZero() || tp.Name != "orders" || tp.Partitions != 3 || tp.Configs["retention.ms"] != "1000" {
		t.Fatalf("created %+v", tp)
	}
	// Kafka-level errors keep their code and message.
	_, err = c.CreateTopic(ctx, coordapi.CreateTopicRequest{Name: "orders", Partitions: 1, ReplicationFactor: -1})
	wantKerr(t, err, kerr.TopicAlreadyExists)
	_, inproc := e.coord.CreateTopic(ctx, coordapi.CreateTopicRequest{Name: "orders", Partitions: 1, ReplicationFactor: -1})
	if err.Error() != inproc.Error() {
		t.Errorf("remote error %q, in-process %q", err, inproc)
	}
	var ke *coordapi.KafkaError
	if !errors.As(err, &ke) || ke.Message == "" || !errors.As(inproc, &ke) {
		t.Errorf("error %v carries no KafkaError message", err)
	}
	_, err = c.Topic(ctx, "nope")
	wantKerr(t, err, kerr.UnknownTopicOrPartition)
	_, err = c.TopicByID(ctx, coordapi.TopicID{1})
	wantKerr(t, err, kerr.UnknownTopicID)

	got, err := c.Topic(ctx, "orders")
	if err != nil || !reflect.DeepEqual(got, tp) {
		t.Fatalf("Topic = %+v, %v; want %+v", got, err, tp)
	}
	if got, err = c.TopicByID(ctx, tp.ID); err != nil || got.Name != "orders" {
		t.Fatalf("TopicByID = %+v, %v", got, err)
	}
	if err := c.CreatePartitions(ctx, "orders", 4, false); err != nil {
		t.Fatal(err)
	}
	wantKerr(t, c.CreatePartitions(ctx, "orders", 2, false), kerr.InvalidPartitions)
	v := "2000"
	if err := c.AlterTopicConfigs(ctx, "orders", []coordapi.ConfigOp{{Name: "retention.ms", Op: coordapi.OpSet, Value: &v}}, true, false); err != nil {
		t.Fatal(err)
	}
	wantKerr(t, c.AlterTopicConfigs(ctx, "orders", []coordapi.ConfigOp{{Name: "bogus", Value: &v}}, true, false), kerr.InvalidConfig)
	if got, _ = c.Topic(ctx, "orders"); got.Partitions != 4 || got.Configs["retention.ms"] != "2000" {
		t.Fatalf("after alter: %+v", got)
	}
	if _, err := c.CreateTopic(ctx, coordapi.CreateTopicRequest{Name: "b", Partitions: 1, ReplicationFactor: -1}); err != nil {
		t.Fatal(err)
	}
	topics, err := c.Topics(ctx)
	if err != nil || len(topics) != 2 || topics[0].Name != "b" || topics[1].Name != "orders" {
		t.Fatalf("Topics = %+v, %v", topics, err)
	}

	// Produce path: a producer id, a commit, then reads.
	pid, err := c.InitProducerID(ctx, coordapi.InitProducerIDRequest{ProducerID: -1, ProducerEpoch: -1})
	if err != nil {
		t.Fatal(err)
	}
	req := &coordapi.CommitRequest{ObjectKey: "wal/1", ObjectSize: 300, BrokerID: 1, Batches: []coordapi.CommitBatch{
		{TopicID: tp.ID, Partition: 1, ByteOffset: 0, ByteLength: 100, LastOffsetDelta: 4, MaxTimestamp: 10,
			ProducerID: pid.ProducerID, ProducerEpoch: pid.ProducerEpoch, BaseSequence: 0},
		{TopicID: tp.ID, Partition: 1, ByteOffset: 100, ByteLength: 100, LastOffsetDelta: 4, MaxTimestamp: 20,
			ProducerID: pid.ProducerID, ProducerEpoch: pid.ProducerEpoch, BaseSequence: 5},
		{TopicID: tp.ID, Partition: 9, ByteOffset: 200, ByteLength: 100, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1},
	}}
	resp, err := c.CommitObject(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Results) != 3 || resp.Results[0].BaseOffset != 0 || resp.Results[1].BaseOffset != 5 ||
		resp.Results[2].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("commit results %+v", resp.Results)
	}
	// A retried commit of the same batches is deduplicated.
	resp, err = c.CommitObject(ctx, req)
	if err != nil || resp.Results[1].BaseOffset != 5 {
		t.Fatalf("retried commit: %+v, %v", resp, err)
	}
	_, err = c.CommitObject(ctx, &coordapi.CommitRequest{})
	wantKerr(t, err, kerr.InvalidRequest)

	st, err := c.PartitionState(ctx, tp.ID, 1)
	if err != nil || st.HighWatermark != 10 || st.LogStartOffset != 0 {
		t.Fatalf("PartitionState = %+v, %v", st, err)
	}
	_, err = c.PartitionState(ctx, tp.ID, 99)
	wantKerr(t, err, kerr.UnknownTopicOrPartition)
	fb, err := c.FindBatches(ctx, coordapi.FindBatchesRequest{TopicID: tp.ID, Partition: 1, Offset: 0, MaxBytes: 1 << 20})
	want, _ := e.coord.FindBatches(ctx, coordapi.FindBatchesRequest{TopicID: tp.ID, Partition: 1, Offset: 0, MaxBytes: 1 << 20})
	if err != nil || !reflect.DeepEqual(fb, want) || len(fb.Batches) != 2 {
		t.Fatalf("FindBatches = %+v, %v; want %+v", fb, err, want)
	}
	_, err = c.FindBatches(ctx, coordapi.FindBatchesRequest{TopicID: tp.ID, Partition: 1, Offset: 11, MaxBytes: 1})
	wantKerr(t, err, kerr.OffsetOutOfRange)
	off, ts, err := c.ListOffset(ctx, tp.ID, 1, coordapi.TimestampMax)
	wantOff, wantTs, _ := e.coord.ListOffset(ctx, tp.ID, 1, coordapi.TimestampMax)
	if err != nil || off != wantOff || ts != wantTs || ts != 20 {
		t.Fatalf("ListOffset(max) = %d, %d, %v; want %d, %d", off, ts, err, wantOff, wantTs)
	}
	low, err := c.DeleteRecords(ctx, tp.ID, 1, 5)
	if err != nil || low != 5 {
		t.Fatalf("DeleteRecords = %d, %v", low, err)
	}

	id, err := c.DeleteTopic(ctx, "b")
	if err != nil || id.IsZero() {
		t.Fatalf("DeleteTopic = %v, %v", id, err)
	}
	name, err := c.DeleteTopicByID(ctx, tp.ID)
	if err != nil || name != "orders" {
		t.Fatalf("DeleteTopicByID = %q, %v", name, err)
	}
	if topics, err := c.Topics(ctx); err != nil || len(topics) != 0 {
		t.Fatalf("Topics after delete = %+v, %v", topics, err)
	}
}

func TestCommitNotices(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	tp, err := e.client.CreateTopic(ctx, coordapi.CreateTopicRequest{Name: "t", Partitions: 2, ReplicationFactor: -1})
	if err != nil {
		t.Fatal(err)
	}
	// Two brokers' clients on their own connections both hear every commit.
	got := make(chan []coordapi.CommitNotice, 10)
	other := rpc.NewClient(natstest.Connect(t, e.ns), "test", rpc.ClientOptions{})
	for _, c := range []*rpc.Client{e.client, other} {
		cancel := c.Subscribe(func(ns []coordapi.CommitNotice) { got <- ns })
		t.Cleanup(cancel)
	}
	if err := e.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	_, err = other.CommitObject(ctx, &coordapi.CommitRequest{ObjectKey: "wal/1", ObjectSize: 20, Batches: []coordapi.CommitBatch{
		{TopicID: tp.ID, Partition: 0, ByteLength: 10, LastOffsetDelta: 2, ProducerID: -1},
		{TopicID: tp.ID, Partition: 1, ByteOffset: 10, ByteLength: 10, LastOffsetDelta: 0, ProducerID: -1},
	}})
	if err != nil {
		t.Fatal(err)
	}
	want := []coordapi.CommitNotice{
		{TopicID: tp.ID, Partition: 0, HighWatermark: 3, LastStableOffset: 3, Batches: []coordapi.BatchCoord{
			{ObjectKey: "wal/1", ObjectSize: 20, ByteLength: 10, LastOffset: 2}}},
		{TopicID: tp.ID, Partition: 1, HighWatermark: 1, LastStableOffset: 1, Batches: []coordapi.BatchCoord{
			{ObjectKey: "wal/1", ObjectSize: 20, ByteOffset: 10, ByteLength: 10}}},
	}
	for i := range 2 {
		select {
		case ns := <-got:
			if !reflect.DeepEqual(ns, want) {
				t.Fatalf("subscriber %d: notices %+v, want %+v", i, ns, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("subscriber %d got no notice", i)
		}
	}
}

func TestBrokerRegistry(t *testing.T) {
	e := newEnv(t, nil, func(o *coordinator.Options) { o.BrokerTTL = 300 * time.Millisecond })
	ctx := context.Background()
	c := e.client
	b1 := coordapi.BrokerInfo{NodeID: 1, Host: "127.0.0.1", Port: 9092, Rack: "a", InternalAddr: "127.0.0.1:8080"}
	b2 := coordapi.BrokerInfo{NodeID: 2, Host: "127.0.0.1", Port: 9093}
	for _, b := range []coordapi.BrokerInfo{b2, b1} {
		if err := c.RegisterBroker(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	got, err := c.ListBrokers(ctx)
	if err != nil || !reflect.DeepEqual(got, []coordapi.BrokerInfo{b1, b2}) {
		t.Fatalf("ListBrokers = %+v, %v", got, err)
	}
	// Another broker claiming a live node id is refused.
	wantKerr(t, c.RegisterBroker(ctx, coordapi.BrokerInfo{NodeID: 1, Host: "10.0.0.1", Port: 9092}), kerr.DuplicateBrokerRegistration)
	wantKerr(t, c.RegisterBroker(ctx, coordapi.BrokerInfo{NodeID: 3, Host: "h", Port: 0}), kerr.InvalidRequest)
	// A deregistered broker is gone at once; one that stops heartbeating
	// after the TTL.
	if err := c.DeregisterBroker(ctx, b2); err != nil {
		t.Fatal(err)
	}
	if got, _ := c.ListBrokers(ctx); !reflect.DeepEqual(got, []coordapi.BrokerInfo{b1}) {
		t.Fatalf("after deregister: %+v", got)
	}
	testkit.CheckFor(t, 5*time.Second, 50*time.Millisecond, func() error {
		got, err := c.ListBrokers(ctx)
		if err == nil && len(got) > 0 {
			err = fmt.Errorf("broker still listed after its TTL: %+v", got)
		}
		return err
	})
}

func TestCoordinatorDown(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	e.srv.Close()

	// No responders: the error is immediate, retriable, and says why.
	start := time.Now()
	_, err := e.client.Topic(ctx, "x")
	if !errors.Is(err, rpc.ErrUnavailable) || !errors.Is(err, kerr.KafkaStorageError) || !errors.Is(err, nats.ErrNoResponders) {
		t.Fatalf("error %v, want unavailable/no responders/KAFKA_STORAGE_ERROR", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("no-responders error took %s", d)
	}
	var ke *kerr.Error
	if !errors.As(err, &ke) || !ke.Retriable {
		t.Fatalf("error %v is not retriable", err)
	}

	// A coordinator that takes the request but never answers: the caller's
	// deadline bounds the wait.
	hung, err := e.nc.QueueSubscribe(rpc.Subject("test", "commit_object"), "floe-coordinator", func(*nats.Msg) {})
	if err != nil {
		t.Fatal(err)
	}
	defer hung.Unsubscribe()
	e.nc.Flush()
	cctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	start = time.Now()
	_, err = e.client.CommitObject(cctx, &coordapi.CommitRequest{ObjectKey: "k"})
	if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, kerr.KafkaStorageError) {
		t.Fatalf("error %v, want a deadline exceeded KAFKA_STORAGE_ERROR", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("hung request returned after %s, deadline 200ms", d)
	}
	// Without a context deadline, the client's timeout bounds it.
	quick := rpc.NewClient(e.nc, "test", rpc.ClientOptions{Timeout: 100 * time.Millisecond})
	start = time.Now()
	if _, err := quick.CommitObject(ctx, &coordapi.CommitRequest{ObjectKey: "k"}); !errors.Is(err, rpc.ErrUnavailable) {
		t.Fatalf("error %v", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("client timeout 100ms, returned after %s", d)
	}

	// A closed connection fails at once too.
	e.nc.Close()
	if _, err := e.client.Topics(ctx); !errors.Is(err, rpc.ErrUnavailable) {
		t.Fatalf("closed connection: %v", err)
	}
}

func TestCoordinatorClosed(t *testing.T) {
	e := newEnv(t, nil)
	e.coord.Close()
	_, err := e.client.Topics(context.Background())
	if !errors.Is(err, rpc.ErrInternal) || !errors.Is(err, kerr.KafkaStorageError) || !strings.Contains(err.Error(), "closed") {
		t.Fatalf("error %v, want an internal KAFKA_STORAGE_ERROR", err)
	}
}

func TestUnsupportedVersion(t *testing.T) {
	e := newEnv(t, nil)
	m, err := e.nc.Request(rpc.Subject("test", "topics"), []byte{99, 0}, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	// version 1, status error, code 35 (zigzag 70).
	if len(m.Data) < 3 || m.Data[0] != 1 || m.Data[1] != 1 || m.Data[2] != byte(kerr.UnsupportedVersion.Code*2) {
		t.Fatalf("reply %x", m.Data)
	}
	// Garbage is answered, not crashed on.
	m, err = e.nc.Request(rpc.Subject("test", "commit_object"), []byte{1, 0, 0xff, 0xff}, 2*time.Second)
	if err != nil || len(m.Data) < 3 || m.Data[1] != 1 {
		t.Fatalf("reply %x, %v", m.Data, err)
	}
}

// TestSmallPayload runs with a NATS max payload so small that commits,
// find_batches answers and topic lists must be split.
func TestSmallPayload(t *testing.T) {
	e := newEnv(t, &server.Options{MaxPayload: 4 << 10})
	ctx := context.Background()
	var ids []coordapi.TopicID
	for i := range 40 {
		tp, err := e.client.CreateTopic(ctx, coordapi.CreateTopicRequest{Name: fmt.Sprintf("topic-%03d-%s", i, strings.Repeat("x", 150)),
			Partitions: 4, ReplicationFactor: -1, Configs: map[string]string{"retention.ms": "123456789"}})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, tp.ID)
	}
	topics, err := e.client.Topics(ctx)
	if err != nil || len(topics) != 40 {
		t.Fatalf("Topics: %d, %v", len(topics), err)
	}
	for i, tp := range topics {
		if tp.ID != ids[i] {
			t.Fatalf("topic %d is %s", i, tp.Name)
		}
	}
	const n = 2000 // ≈ 20 bytes each: several messages
	req := &coordapi.CommitRequest{ObjectKey: "wal/big", ObjectSize: n * 10}
	for i := range n {
		req.Batches = append(req.Batches, coordapi.CommitBatch{TopicID: ids[i%40], Partition: int32(i % 4),
			ByteOffset: int64(i * 10), ByteLength: 10, LastOffsetDelta: 0, MaxTimestamp: int64(i), ProducerID: -1})
	}
	resp, err := e.client.CommitObject(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Results) != n {
		t.Fatalf("%d results", len(resp.Results))
	}
	for i, r := range resp.Results {
		if r.ErrorCode != 0 || r.BaseOffset != int64(i/40) { // topic i%40 gets every 40th batch
			t.Fatalf("result %d: %+v", i, r)
		}
	}
	objs, err := e.coord.Objects(ctx)
	if err != nil || len(objs) != 1 || objs[0].LiveBytes != n*10 {
		t.Fatalf("objects %+v, %v", objs, err)
	}
	// Partition 0 of topic 0 has 50 one-record batches in one object; the
	// answer is trimmed to what fits but always starts at the asked offset.
	fb, err := e.client.FindBatches(ctx, coordapi.FindBatchesRequest{TopicID: ids[0], Partition: 0, Offset: 0, MaxBytes: 1 << 30})
	if err != nil || len(fb.Batches) == 0 || fb.Batches[0].BaseOffset != 0 {
		t.Fatalf("FindBatches: %+v, %v", fb, err)
	}
}

// fillForMulti creates topics "a" (3 partitions) and "b" (1) and commits
// n objects, each holding batches of a/0, a/1 and b/0, then moves b/0's log
// start to 2.
func fillForMulti(t *testing.T, e *env, n int) (a, b coordapi.Topic) {
	t.Helper()
	ctx := context.Background()
	var err error
	if a, err = e.client.CreateTopic(ctx, coordapi.CreateTopicRequest{Name: "a", Partitions: 3, ReplicationFactor: -1}); err != nil {
		t.Fatal(err)
	}
	if b, err = e.client.CreateTopic(ctx, coordapi.CreateTopicRequest{Name: "b", Partitions: 1, ReplicationFactor: -1}); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		req := &coordapi.CommitRequest{ObjectKey: fmt.Sprintf("wal/%04d", i), ObjectSize: 300, BrokerID: 1, Batches: []coordapi.CommitBatch{
			{TopicID: a.ID, Partition: 0, ByteOffset: 0, ByteLength: 100, LastOffsetDelta: 1, MaxTimestamp: int64(i), ProducerID: -1},
			{TopicID: b.ID, Partition: 0, ByteOffset: 100, ByteLength: 100, LastOffsetDelta: 0, MaxTimestamp: int64(i), ProducerID: -1},
			{TopicID: a.ID, Partition: 1, ByteOffset: 200, ByteLength: 100, LastOffsetDelta: 2, MaxTimestamp: int64(i), ProducerID: -1},
		}}
		if _, err := e.client.CommitObject(ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.client.DeleteRecords(ctx, b.ID, 0, 2); err != nil {
		t.Fatal(err)
	}
	return a, b
}

// TestFindBatchesMulti: over NATS, a multi-partition lookup answers what
// the coordinator answers in-process, per-partition failures as codes.
func TestFindBatchesMulti(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	a, b := fillForMulti(t, e, 5)
	reqs := []coordapi.FindBatchesRequest{
		{TopicID: a.ID, Partition: 0, Offset: 0, MaxBytes: 1 << 20},
		{TopicID: b.ID, Partition: 0, Offset: 0, MaxBytes: 1 << 20}, // below the log start
		{TopicID: a.ID, Partition: 1, Offset: 4, MaxBytes: 200},
		{TopicID: a.ID, Partition: 2, Offset: 0, MaxBytes: 1 << 20}, // empty
		{TopicID: a.ID, Partition: 7, Offset: 0, MaxBytes: 1 << 20},
		{TopicID: coordapi.TopicID{1}, Partition: 0, Offset: 0, MaxBytes: 1 << 20},
		{TopicID: b.ID, Partition: 0, Offset: 3, MaxBytes: 1},
	}
	got, err := e.client.FindBatchesMulti(ctx, reqs)
	if err != nil {
		t.Fatal(err)
	}
	want, err := e.coord.FindBatchesMulti(ctx, reqs)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("over NATS:\n%+v\nin-process:\n%+v", got, want)
	}
	codes := []int16{0, kerr.OffsetOutOfRange.Code, 0, 0, kerr.UnknownTopicOrPartition.Code, kerr.UnknownTopicID.Code, 0}
	for i, r := range got {
		if r.ErrorCode != codes[i] {
			t.Errorf("result %d: code %d, want %d", i, r.ErrorCode, codes[i])
		}
	}
	if len(got[0].Batches) != 5 || len(got[2].Batches) != 2 || got[1].LogStartOffset != 2 || got[1].HighWatermark != 5 {
		t.Errorf("results %+v", got)
	}
	if r, err := e.client.FindBatchesMulti(ctx, nil); err != nil || len(r) != 0 {
		t.Errorf("no requests: %+v, %v", r, err)
	}
}

// TestFindBatchesMultiSmallPayload: with a NATS max payload far below what
// the requests and answers take, the client splits the requests and asks
// again for what a reply left out; every partition is answered, in order,
// from its offset on.
func TestFindBatchesMultiSmallPayload(t *testing.T) {
	e := newEnv(t, &server.Options{MaxPayload: 4 << 10})
	ctx := context.Background()
	a, err := e.client.CreateTopic(ctx, coordapi.CreateTopicRequest{Name: "a", Partitions: 2, ReplicationFactor: -1})
	if err != nil {
		t.Fatal(err)
	}
	// 600 batches in 3 objects, 300 per partition: one partition's
	// coordinates alone take more than a reply.
	for o := range 3 {
		req := &coordapi.CommitRequest{ObjectKey: fmt.Sprintf("wal/%d", o), ObjectSize: 200 * 100, BrokerID: 1}
		for i := range 200 {
			req.Batches = append(req.Batches, coordapi.CommitBatch{TopicID: a.ID, Partition: int32(i % 2),
				ByteOffset: int64(i * 100), ByteLength: 100, LastOffsetDelta: 1, ProducerID: -1})
		}
		if _, err := e.client.CommitObject(ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	var reqs []coordapi.FindBatchesRequest
	for i := range 120 { // more than one 4 KiB request holds
		reqs = append(reqs, coordapi.FindBatchesRequest{TopicID: a.ID, Partition: int32(i % 2), Offset: int64(i % 7), MaxBytes: 1 << 30})
	}
	got, err := e.client.FindBatchesMulti(ctx, reqs)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(reqs) {
		t.Fatalf("%d results for %d requests", len(got), len(reqs))
	}
	trimmed := 0
	for i, r := range got {
		if r.ErrorCode != 0 || len(r.Batches) == 0 || r.Batches[0].BaseOffset > reqs[i].Offset || r.Batches[0].LastOffset < reqs[i].Offset {
			t.Fatalf("result %d for %+v: code %d, %d batches", i, reqs[i], r.ErrorCode, len(r.Batches))
		}
		if len(r.Batches) < 300-int(reqs[i].Offset)/2 {
			trimmed++
		}
	}
	if trimmed == 0 {
		t.Fatal("no answer was trimmed: the test does not exercise the payload limit")
	}
}

// TestFindBatchesMultiOldCoordinator: a coordinator that predates
// find_batches_multi (no subscriber for it) makes the call fail at once
// with an error wrapping errors.ErrUnsupported, while find_batches works.
func TestFindBatchesMultiOldCoordinator(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	a, _ := fillForMulti(t, e, 2)
	e.srv.Close()
	srv, err := rpc.ServeWithoutOps(context.Background(), natstest.Connect(t, e.ns), "test", e.coord,
		rpc.ServerOptions{Logger: testkit.Logger()}, rpc.OpFindBatchesMulti)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	req := coordapi.FindBatchesRequest{TopicID: a.ID, Partition: 0, Offset: 0, MaxBytes: 1 << 20}
	_, err = e.client.FindBatchesMulti(ctx, []coordapi.FindBatchesRequest{req})
	if !errors.Is(err, errors.ErrUnsupported) || !errors.Is(err, rpc.ErrUnavailable) || !errors.Is(err, kerr.KafkaStorageError) {
		t.Fatalf("error %v, want one wrapping errors.ErrUnsupported, rpc.ErrUnavailable and KAFKA_STORAGE_ERROR", err)
	}
	if fb, err := e.client.FindBatches(ctx, req); err != nil || len(fb.Batches) != 2 {
		t.Fatalf("FindBatches = %+v, %v", fb, err)
	}
}

func TestServerCloseWaitsForRequests(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	if _, err := e.client.CreateTopic(ctx, coordapi.CreateTopicRequest{Name: "t", Partitions: 1, ReplicationFactor: -1}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	for range 100 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := e.client.Topic(ctx, "t"); err != nil && !errors.Is(err, rpc.ErrUnavailable) {
				errs <- err
			}
		}()
	}
	e.srv.Close()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("request during close: %v", err)
	}
}

// Every topic change reaches the brokers' clients as a topic notice, with
// the topic's id and name, so that they drop what they cached of it.
func TestTopicNotices(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	got := make(chan coordapi.TopicNotice, 16)
	cancel := e.client.SubscribeTopics(func(ns []coordapi.TopicNotice) {
		for _, n := range ns {
			got <- n
		}
	})
	defer cancel()
	if err := e.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	next := func(what string) coordapi.TopicNotice {
		t.Helper()
		select {
		case n := <-got:
			return n
		case <-time.After(10 * time.Second):
			t.Fatalf("no topic notice after %s", what)
			return coordapi.TopicNotice{}
		}
	}
	tp, err := e.client.CreateTopic(ctx, coordapi.CreateTopicRequest{Name: "orders", Partitions: 1, ReplicationFactor: -1})
	if err != nil {
		t.Fatal(err)
	}
	want := coordapi.TopicNotice{ID: tp.ID, Name: "orders"}
	steps := []struct {
		what string
		do   func() error
	}{
		{"create", func() error { return nil }},
		{"alter", func() error {
			v := "1000"
			return e.client.AlterTopicConfigs(ctx, "orders", []coordapi.ConfigOp{{Name: "retention.ms", Op: coordapi.OpSet, Value: &v}}, true, false)
		}},
		{"create partitions", func() error { return e.client.CreatePartitions(ctx, "orders", 3, false) }},
		{"delete", func() error { _, err := e.client.DeleteTopic(ctx, "orders"); return err }},
	}
	for _, s := range steps {
		if err := s.do(); err != nil {
			t.Fatalf("%s: %v", s.what, err)
		}
		if n := next(s.what); n != want {
			t.Fatalf("%s: notice %+v, want %+v", s.what, n, want)
		}
	}
	// A validate-only or failed change is no change.
	if _, err := e.client.CreateTopic(ctx, coordapi.CreateTopicRequest{Name: "dry", Partitions: 1, ReplicationFactor: -1, ValidateOnly: true}); err != nil {
		t.Fatal(err)
	}
	if err := e.client.CreatePartitions(ctx, "missing", 2, false); err == nil {
		t.Fatal("create partitions of a missing topic succeeded")
	}
	if _, err := e.client.CreateTopic(ctx, coordapi.CreateTopicRequest{Name: "marker", Partitions: 1, ReplicationFactor: -1}); err != nil {
		t.Fatal(err)
	}
	if n := next("create marker"); n.Name != "marker" {
		t.Fatalf("notice %+v before the marker's: a change that did not happen was announced", n)
	}
}

// An inline commit never goes over NATS: the bytes would not go with it,
// and the coordinator would commit an object nobody wrote.
func TestInlineCommitRefused(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	tp, err := e.client.CreateTopic(ctx, coordapi.CreateTopicRequest{Name: "t", Partitions: 1, ReplicationFactor: -1})
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.client.CommitObject(ctx, &coordapi.CommitRequest{ObjectKey: "wal/x", ObjectSize: 3, BrokerID: 1, Inline: []byte("abc"),
		Batches: []coordapi.CommitBatch{{TopicID: tp.ID, ByteLength: 3, ProducerID: -1}}})
	if !errors.Is(err, errors.ErrUnsupported) {
		t.Fatalf("inline commit over NATS = %v, want ErrUnsupported", err)
	}
	if st, err := e.coord.PartitionState(ctx, tp.ID, 0); err != nil || st.HighWatermark != 0 {
		t.Fatalf("partition after the refused commit: %+v, %v", st, err)
	}
}
