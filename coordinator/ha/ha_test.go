package ha

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/coordinator"
	"github.com/floe-io/floe/coordinator/service"
	"github.com/floe-io/floe/internal/testkit"
	"github.com/floe-io/floe/internal/testkit/natstest"
	"github.com/floe-io/floe/objectstore"
)

func connect(t testing.TB, url string) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(url, nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// startNode starts a coordinator node with its state in dir.
func startNode(t testing.TB, nc *nats.Conn, id, dir string, replicas int, store SnapshotStore) *Node {
	t.Helper()
	n, err := Start(nc, Options{
		ID: id, Replicas: replicas, LeaseTTL: time.Second, SnapshotInterval: -1, Snapshots: store,
		Service: service.Options{Cluster: "hatest", Coordinator: coordinator.Options{Dir: dir, TierInterval: -1, TxnCheckInterval: -1}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func waitLeader(t testing.TB, n *Node) *coordinator.Coordinator {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := n.WaitLeader(ctx); err != nil {
		t.Fatalf("%s never led: %v (status %+v)", n.opts.ID, err, n.Status())
	}
	return n.Coordinator()
}

// waitFor waits until cond holds; its failure shows the nodes' statuses.
func waitFor(t testing.TB, what string, cond func() bool, nodes ...*Node) {
	t.Helper()
	testkit.CheckFor(t, 20*time.Second, 10*time.Millisecond, func() error {
		if !cond() {
			var sts []string
			for _, n := range nodes {
				sts = append(sts, fmt.Sprintf("%s: %+v", n.opts.ID, n.Status()))
			}
			return fmt.Errorf("waiting for %s (%s)", what, strings.Join(sts, "; "))
		}
		return nil
	})
}

// commitN creates topic and commits n objects of one batch to it,
// returning the high watermark.
func commitN(t testing.TB, c *coordinator.Coordinator, topic string, n int) int64 {
	t.Helper()
	ctx := context.Background()
	var id coordapi.TopicID
	if tp, err := c.CreateTopic(ctx, coordapi.CreateTopicRequest{Name: topic, Partitions: 1, ReplicationFactor: -1}); err == nil {
		id = tp.ID
	} else if errors.Is(err, kerr.TopicAlreadyExists) {
		id = topicID(t, c, topic)
	} else {
		t.Fatal(err)
	}
	var hwm int64
	for i := 0; i < n; i++ {
		resp, err := c.CommitObject(ctx, &coordapi.CommitRequest{ObjectKey: fmt.Sprintf("wal/%s-%d-%d", topic, time.Now().UnixNano(), i), ObjectSize: 100,
			Batches: []coordapi.CommitBatch{{TopicID: id, Partition: 0, ByteLength: 100, LastOffsetDelta: 9, MaxTimestamp: 1, ProducerID: -1}}})
		if err != nil {
			t.Fatal(err)
		}
		if resp.Results[0].ErrorCode != 0 {
			t.Fatalf("commit: error code %d", resp.Results[0].ErrorCode)
		}
		hwm = resp.Results[0].BaseOffset + 10
	}
	return hwm
}

func highWatermark(t testing.TB, c *coordinator.Coordinator, topic string) int64 {
	t.Helper()
	ctx := context.Background()
	st, err := c.PartitionState(ctx, topicID(t, c, topic), 0)
	if err != nil {
		t.Fatal(err)
	}
	return st.HighWatermark
}

// TestFailover runs two coordinators on a 3-node JetStream cluster: the
// standby applies the leader's log, takes over when the leader stops, and
// serves the same state; the old leader, started again, stands by.
func TestFailover(t *testing.T) {
	srvs := natstest.StartCluster(t, 3)
	root := t.TempDir()
	store, err := objectstore.NewDir(filepath.Join(root, "objects"))
	if err != nil {
		t.Fatal(err)
	}
	a := startNode(t, connect(t, natstest.URLs(srvs)), "a", filepath.Join(root, "a"), 3, store)
	ca := waitLeader(t, a)
	b := startNode(t, connect(t, natstest.URLs(srvs)), "b", filepath.Join(root, "b"), 3, store)
	hwm := commitN(t, ca, "t", 50)
	waitFor(t, "the standby to apply the log", func() bool {
		return b.Status().Role == RoleStandby && b.Status().Applied >= a.Status().Applied && a.Status().Applied > 0
	}, a, b)
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	cb := waitLeader(t, b)
	if got := highWatermark(t, cb, "t"); got != hwm {
		t.Fatalf("after failover the high watermark is %d, want %d", got, hwm)
	}
	hwm = commitN(t, cb, "t", 20)
	if st := b.Status(); st.Term <= 1 || st.Role != RoleLeader {
		t.Fatalf("new leader's status %+v", st)
	}
	a = startNode(t, connect(t, natstest.URLs(srvs)), "a", filepath.Join(root, "a"), 3, store)
	defer a.Close()
	waitFor(t, "the old leader to stand by and catch up", func() bool {
		return a.Status().Role == RoleStandby && a.Status().Applied >= b.Status().Applied
	}, a, b)
	if a.Coordinator() != nil {
		t.Fatal("the standby serves")
	}
	// And back: the old leader, a standby again, takes over with the
	// new leader's commits.
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if got := highWatermark(t, waitLeader(t, a), "t"); got != hwm {
		t.Fatalf("after the second failover the high watermark is %d, want %d", got, hwm)
	}
}

// TestStandbyStalledTail gives a standby a tail of the log that stops
// delivering (as an ordered consumer lost on the servers does): it notices
// that the log holds more than it has, tails it again, and catches up.
func TestStandbyStalledTail(t *testing.T) {
	srvs := []*server.Server{natstest.Start(t)}
	a := startNode(t, connect(t, natstest.URLs(srvs)), "a", t.TempDir(), 1, nil)
	defer a.Close()
	ca := waitLeader(t, a)
	tails := &stallingTails{}
	b, err := Start(connect(t, natstest.URLs(srvs)), Options{
		ID: "b", LeaseTTL: time.Second, SnapshotInterval: -1,
		Service:  service.Options{Cluster: "hatest", Coordinator: coordinator.Options{Dir: t.TempDir(), TierInterval: -1, TxnCheckInterval: -1}},
		testTail: tails.wrap,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	commitN(t, ca, "t", 20)
	waitFor(t, "the standby to tail the log again and catch up", func() bool {
		return b.Status().Role == RoleStandby && b.Status().Applied >= a.Status().Applied
	}, a, b)
	if n := tails.opened.Load(); n < 2 {
		t.Fatalf("the standby opened %d tails, want the stalled one and another", n)
	}
}

// stallingTails counts the tails a standby opens; the first delivers
// nothing.
type stallingTails struct{ opened atomic.Int32 }

func (s *stallingTails) wrap(st jetstream.Stream) jetstream.Stream {
	return stallingStream{Stream: st, tails: s}
}

// stallingStream is a stream whose ordered consumers the tails count.
type stallingStream struct {
	jetstream.Stream
	tails *stallingTails
}

func (s stallingStream) OrderedConsumer(ctx context.Context, cfg jetstream.OrderedConsumerConfig) (jetstream.Consumer, error) {
	c, err := s.Stream.OrderedConsumer(ctx, cfg)
	if err != nil || s.tails.opened.Add(1) > 1 {
		return c, err
	}
	return stalledConsumer{c}, nil
}

// stalledConsumer's messages never come: each Next waits as a real pull
// does (it is one) and drops what the pull brings.
type stalledConsumer struct{ jetstream.Consumer }

func (c stalledConsumer) Messages(opts ...jetstream.PullMessagesOpt) (jetstream.MessagesContext, error) {
	it, err := c.Consumer.Messages(opts...)
	return stalledMessages{it}, err
}

type stalledMessages struct{ jetstream.MessagesContext }

func (m stalledMessages) Next(opts ...jetstream.NextOpt) (jetstream.Msg, error) {
	if _, err := m.MessagesContext.Next(opts...); err != nil {
		return nil, err
	}
	return nil, nats.ErrTimeout // lost on the way
}

func topicID(t testing.TB, c *coordinator.Coordinator, name string) coordapi.TopicID {
	t.Helper()
	ts, err := c.Topics(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, tp := range ts {
		if tp.Name == name {
			return tp.ID
		}
	}
	t.Fatalf("no topic %s", name)
	return coordapi.TopicID{}
}

// TestFencedLeader checks that once another leader has appended its leader
// entry, the deposed leader's appends fail, its replies are refused, and it
// steps down.
func TestFencedLeader(t *testing.T) {
	srvs := []*server.Server{natstest.Start(t)}
	nc := connect(t, natstest.URLs(srvs))
	a := startNode(t, nc, "a", t.TempDir(), 1, nil)
	defer a.Close()
	ca := waitLeader(t, a)
	hwm := commitN(t, ca, "t", 3)

	// A usurper that skipped the lease: it appends its leader entry at the
	// log's end, as a new leader does.
	js, err := jetstream.New(connect(t, natstest.URLs(srvs)))
	if err != nil {
		t.Fatal(err)
	}
	names := namesOf("hatest")
	stream, err := js.Stream(context.Background(), names.stream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := stream.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	w := newWriter(js, names.stream, names.subject, nc.MaxPayload(), info.State.LastSeq, 99, time.Second, false, 0)
	defer w.close()
	if _, err := w.append(kindLeader, []byte(`{"term":99,"id":"usurper"}`)); err != nil {
		t.Fatal(err)
	}
	// The old leader's next write fails: the log moved on without it.
	_, err = ca.CreateTopic(context.Background(), coordapi.CreateTopicRequest{Name: "late", Partitions: 1, ReplicationFactor: -1})
	if err == nil || !errors.Is(err, errFenced) {
		t.Fatalf("a write after the fence: %v, want a fenced error", err)
	}
	waitFor(t, "the fenced leader to step down", func() bool { return a.Coordinator() != ca })

	// Its Pebble had the topic before the log refused it: diverged, it is
	// rebuilt from the log, and leads again (its lease is still its own)
	// without the topic.
	c := waitLeader(t, a)
	if got := highWatermark(t, c, "t"); got != hwm {
		t.Fatalf("high watermark %d after the rebuild, want %d", got, hwm)
	}
	ts, err := c.Topics(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, tp := range ts {
		if tp.Name == "late" {
			t.Fatal("the write the log refused survived the rebuild")
		}
	}
}

// writerOf returns the writer of n, which leads.
func writerOf(t testing.TB, n *Node) *writer {
	t.Helper()
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.mu.w == nil {
		t.Fatal("not leading")
	}
	return n.mu.w
}

// TestLargeEntry commits a batch larger than a NATS message: it goes to the
// log in parts, and a standby reassembles and applies it.
func TestLargeEntry(t *testing.T) {
	srvs := []*server.Server{natstest.Start(t)}
	root := t.TempDir()
	a := startNode(t, connect(t, natstest.URLs(srvs)), "a", filepath.Join(root, "a"), 1, nil)
	ca := waitLeader(t, a)
	b := startNode(t, connect(t, natstest.URLs(srvs)), "b", filepath.Join(root, "b"), 1, nil)
	defer b.Close()
	// 300 partitions × 40 batches in one commit: a batch of about 1 MiB,
	// over a test server's max payload once the limit is lowered below.
	ctx := context.Background()
	tp, err := ca.CreateTopic(ctx, coordapi.CreateTopicRequest{Name: "wide", Partitions: 300, ReplicationFactor: -1})
	if err != nil {
		t.Fatal(err)
	}
	req := &coordapi.CommitRequest{ObjectKey: "wal/large", ObjectSize: 12000 * 100}
	for i := 0; i < 12000; i++ {
		req.Batches = append(req.Batches, coordapi.CommitBatch{TopicID: tp.ID, Partition: int32(i % 300), ByteOffset: int64(i * 100),
			ByteLength: 100, LastOffsetDelta: 0, MaxTimestamp: 1, ProducerID: -1})
	}
	// Small parts, so that the entry is split.
	w := writerOf(t, a)
	w.mu.Lock()
	w.mu.maxPart = 8 << 10
	before := w.mu.last
	w.mu.Unlock()
	if _, err := ca.CommitObject(ctx, req); err != nil {
		t.Fatal(err)
	}
	w.mu.Lock()
	parts := w.mu.last - before
	w.mu.Unlock()
	if parts < 3 {
		t.Fatalf("the commit took %d messages, want it split in several", parts)
	}
	waitFor(t, "the standby to apply the large entry", func() bool { return b.Status().Applied >= a.Status().Applied }, a, b)
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	cb := waitLeader(t, b)
	for p := int32(0); p < 300; p += 37 {
		st, err := cb.PartitionState(ctx, tp.ID, p)
		if err != nil {
			t.Fatal(err)
		}
		if st.HighWatermark != 40 {
			t.Fatalf("partition %d: high watermark %d after failover, want 40", p, st.HighWatermark)
		}
	}
}

// TestWipedStandbyRestores snapshots the leader, trims the log, wipes a
// standby and starts it again: it restores the snapshot, applies the log
// from there and, leading, has every commit.
func TestWipedStandbyRestores(t *testing.T) {
	srvs := []*server.Server{natstest.Start(t)}
	root := t.TempDir()
	store, err := objectstore.NewDir(filepath.Join(root, "objects"))
	if err != nil {
		t.Fatal(err)
	}
	a := startNode(t, connect(t, natstest.URLs(srvs)), "a", filepath.Join(root, "a"), 1, store)
	ca := waitLeader(t, a)
	bdir := filepath.Join(root, "b")
	b := startNode(t, connect(t, natstest.URLs(srvs)), "b", bdir, 1, store)
	commitN(t, ca, "t", 30)
	waitFor(t, "the standby to catch up", func() bool { return b.Status().Applied >= a.Status().Applied }, a, b)
	b.Close()
	if err := os.RemoveAll(bdir); err != nil {
		t.Fatal(err)
	}
	// Two snapshots, so that the log is trimmed below the older.
	for i := 0; i < 2; i++ {
		commitN(t, ca, "t", 10)
		js, _ := jetstream.New(connect(t, natstest.URLs(srvs)))
		stream, _ := js.Stream(context.Background(), namesOf("hatest").stream)
		if err := a.snapshot(context.Background(), writerOf(t, a), stream, 1, map[string]checkpointer{
			"coordinator": ca, "groups": a.Service().Groups()}); err != nil {
			t.Fatal(err)
		}
	}
	hwm := commitN(t, ca, "t", 5)
	b = startNode(t, connect(t, natstest.URLs(srvs)), "b", bdir, 1, store)
	defer b.Close()
	waitFor(t, "the wiped standby to restore and catch up", func() bool {
		return b.Status().Role == RoleStandby && b.Status().Applied >= a.Status().Applied
	}, a, b)
	if b.Status().SnapshotSeq == 0 {
		t.Fatalf("the wiped standby did not restore a snapshot: %+v", b.Status())
	}
	a.Close()
	cb := waitLeader(t, b)
	if got := highWatermark(t, cb, "t"); got != hwm {
		t.Fatalf("high watermark %d after restore and failover, want %d", got, hwm)
	}
}

// TestAdoptsStateFromBeforeTheLog starts a node on a coordinator state
// written without a log: it adopts it, snapshots it at once, and a new
// standby starts from that snapshot and, leading, has it all.
func TestAdoptsStateFromBeforeTheLog(t *testing.T) {
	root := t.TempDir()
	adir := filepath.Join(root, "a")
	hwm := stateBeforeTheLog(t, adir, 7)
	srvs := []*server.Server{natstest.Start(t)}
	store, err := objectstore.NewDir(filepath.Join(root, "objects"))
	if err != nil {
		t.Fatal(err)
	}
	a := startNode(t, connect(t, natstest.URLs(srvs)), "a", adir, 1, store)
	ca := waitLeader(t, a)
	if got := highWatermark(t, ca, "t"); got != hwm {
		t.Fatalf("adopted high watermark %d, want %d", got, hwm)
	}
	waitFor(t, "the adopted state's snapshot", func() bool { return a.Status().SnapshotSeq > 0 })
	hwm = commitN(t, ca, "t", 3)
	b := startNode(t, connect(t, natstest.URLs(srvs)), "b", filepath.Join(root, "b"), 1, store)
	defer b.Close()
	waitFor(t, "the standby to start from the snapshot", func() bool {
		return b.Status().Role == RoleStandby && b.Status().Applied >= a.Status().Applied
	}, a, b)
	a.Close()
	cb := waitLeader(t, b)
	if got := highWatermark(t, cb, "t"); got != hwm {
		t.Fatalf("high watermark %d on the standby that took over, want %d", got, hwm)
	}
}

// TestAdoptedStateNeedsItsSnapshot checks that a standby without the
// snapshot of an adopted state refuses to start from the log alone,
// rather than serving a state without it.
func TestAdoptedStateNeedsItsSnapshot(t *testing.T) {
	root := t.TempDir()
	adir := filepath.Join(root, "a")
	stateBeforeTheLog(t, adir, 2)
	srvs := []*server.Server{natstest.Start(t)}
	a := startNode(t, connect(t, natstest.URLs(srvs)), "a", adir, 1, nil)
	defer a.Close()
	waitLeader(t, a)
	b := startNode(t, connect(t, natstest.URLs(srvs)), "b", filepath.Join(root, "b"), 1, nil)
	defer b.Close()
	// b stops at the adopted leader entry, and says why.
	waitFor(t, "the standby to refuse the log", func() bool { return strings.Contains(b.Status().Error, "adopted") })
	if st := b.Status(); st.Applied >= a.Status().Applied {
		t.Fatalf("the standby applied the log of an adopted state with no snapshot: %+v", st)
	}
}

// TestSyncStateResumesAfterLostTail runs a lone coordinator with
// SyncState, as the embedded default does, and loses the log under it (as
// an unsynced log's tail is lost with the machine): it resumes the log
// from its synced state rather than rebuilding from what the log kept.
func TestSyncStateResumesAfterLostTail(t *testing.T) {
	srvs := []*server.Server{natstest.Start(t)}
	dir := t.TempDir()
	start := func() *Node {
		n, err := Start(connect(t, natstest.URLs(srvs)), Options{ID: "solo", SyncState: true, SnapshotInterval: -1,
			Service: service.Options{Cluster: "hatest", Coordinator: coordinator.Options{Dir: dir, TierInterval: -1, TxnCheckInterval: -1}}})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	a := start()
	hwm := commitN(t, waitLeader(t, a), "t", 5)
	a.Close()
	js, err := jetstream.New(connect(t, natstest.URLs(srvs)))
	if err != nil {
		t.Fatal(err)
	}
	if err := js.DeleteStream(context.Background(), namesOf("hatest").stream); err != nil {
		t.Fatal(err)
	}
	a = start()
	defer a.Close()
	c := waitLeader(t, a)
	if got := highWatermark(t, c, "t"); got != hwm {
		t.Fatalf("high watermark %d after the log lost its tail, want %d", got, hwm)
	}
	if got := commitN(t, c, "t", 2); got != hwm+20 {
		t.Fatalf("high watermark %d after two more commits, want %d", got, hwm+20)
	}
}

// stateBeforeTheLog writes a coordinator state in dir as a build before the
// log did (Pebble alone): topic "t" with n commits. It returns the high
// watermark.
func stateBeforeTheLog(t *testing.T, dir string, n int) int64 {
	t.Helper()
	old, err := coordinator.Open(coordinator.Options{Dir: dir, TierInterval: -1, TxnCheckInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	hwm := commitN(t, old, "t", n)
	if err := old.Close(); err != nil {
		t.Fatal(err)
	}
	return hwm
}

// startSolo starts a lone coordinator with SyncState in dir, as the
// embedded default runs it.
func startSolo(t testing.TB, srvs []*server.Server, dir string) *Node {
	t.Helper()
	n, err := Start(connect(t, natstest.URLs(srvs)), Options{ID: "solo", SyncState: true, SnapshotInterval: -1,
		Service: service.Options{Cluster: "hatest", Coordinator: coordinator.Options{Dir: dir, TierInterval: -1, TxnCheckInterval: -1}}})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestSyncStateTrailingLog commits on a lone SyncState coordinator, whose
// log trails its synced state, entries split in parts among them; stopped,
// it leaves the log level with its state, and a replica built from the log
// alone has every commit.
func TestSyncStateTrailingLog(t *testing.T) {
	srvs := []*server.Server{natstest.Start(t)}
	a := startSolo(t, srvs, t.TempDir())
	ca := waitLeader(t, a)
	commitN(t, ca, "t", 20)
	// Small parts, so that the next commits are split.
	w := writerOf(t, a)
	w.mu.Lock()
	w.mu.maxPart = 64
	before := w.mu.last
	w.mu.Unlock()
	hwm := commitN(t, ca, "t", 5)
	w.mu.Lock()
	msgs := w.mu.last - before
	w.mu.Unlock()
	if msgs <= 5 {
		t.Fatalf("5 commits took %d messages, want them split in parts", msgs)
	}
	if got := highWatermark(t, ca, "t"); got != hwm {
		t.Fatalf("high watermark %d, want %d", got, hwm)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	// Level: every applied entry was published and acknowledged.
	w.mu.Lock()
	last := w.mu.last
	w.mu.Unlock()
	if acked := w.applied(); acked != last {
		t.Fatalf("after the stop the log has up to %d of the %d entries applied", acked, last)
	}
	b := startNode(t, connect(t, natstest.URLs(srvs)), "b", t.TempDir(), 1, nil)
	defer b.Close()
	if got := highWatermark(t, waitLeader(t, b), "t"); got != hwm {
		t.Fatalf("a replica built from the log: high watermark %d, want %d", got, hwm)
	}
}

// TestSyncStateLogFails deletes the log under a lone SyncState coordinator
// while it commits: its writes are acknowledged once synced, before the
// log has them, so the log's failure loses none of them; it stops leading,
// and started again (on a new log) leads from its state.
func TestSyncStateLogFails(t *testing.T) {
	srvs := []*server.Server{natstest.Start(t)}
	dir := t.TempDir()
	a := startSolo(t, srvs, dir)
	c := waitLeader(t, a)
	hwm := commitN(t, c, "t", 5)
	// The log has caught up: nothing in flight fails when it goes.
	w := writerOf(t, a)
	waitFor(t, "the log to have every entry", func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		return w.applied() == w.mu.last
	}, a)
	js, err := jetstream.New(connect(t, natstest.URLs(srvs)))
	if err != nil {
		t.Fatal(err)
	}
	if err := js.DeleteStream(context.Background(), namesOf("hatest").stream); err != nil {
		t.Fatal(err)
	}
	// Commit until one fails (the writer has seen the log gone): each
	// that succeeded counts.
	id := topicID(t, c, "t")
	for i := 0; ; i++ {
		resp, err := c.CommitObject(context.Background(), &coordapi.CommitRequest{ObjectKey: fmt.Sprintf("wal/late-%d", i), ObjectSize: 100,
			Batches: []coordapi.CommitBatch{{TopicID: id, Partition: 0, ByteLength: 100, LastOffsetDelta: 9, MaxTimestamp: 1, ProducerID: -1}}})
		if err != nil {
			if i == 0 {
				// Nothing had failed the writer yet: a synced commit
				// does not wait for the log.
				t.Fatalf("the first commit after the log was deleted: %v", err)
			}
			break
		}
		if resp.Results[0].ErrorCode != 0 {
			t.Fatalf("commit: error code %d", resp.Results[0].ErrorCode)
		}
		hwm = resp.Results[0].BaseOffset + 10
		if i == 10_000 {
			t.Fatal("10,000 commits after the log was deleted, none failed")
		}
	}
	waitFor(t, "the coordinator to stop leading", func() bool { return a.Coordinator() != c }, a)
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	a = startSolo(t, srvs, dir)
	defer a.Close()
	c = waitLeader(t, a)
	if got := highWatermark(t, c, "t"); got != hwm {
		t.Fatalf("high watermark %d after the log failed, want %d (every acknowledged commit)", got, hwm)
	}
	if got := commitN(t, c, "t", 1); got != hwm+10 {
		t.Fatalf("high watermark %d after one more commit, want %d", got, hwm+10)
	}
}

// TestLegacySnapshotKeys checks the move of snapshots from
// "<prefix>coordinator/snapshots/" (no separator, as builds before
// coordapi.SnapshotPrefix wrote them) to "<prefix>/coordinator/snapshots/":
// an old snapshot is found and restored while the new place holds none,
// and pruning deletes it once a new one exists.
func TestLegacySnapshotKeys(t *testing.T) {
	ctx := context.Background()
	store := objectstore.NewMemory()
	n := &Node{opts: Options{Snapshots: store, SnapshotPrefix: "prod"}}
	s := n.snapshots()
	if s.prefix != "prod/coordinator/snapshots/" || s.legacy != "prodcoordinator/snapshots/" {
		t.Fatalf("prefixes %q, %q", s.prefix, s.legacy)
	}
	// put writes a snapshot at seq under prefix: one file per database.
	put := func(prefix string, seq uint64) {
		t.Helper()
		dir := snapshotDir(prefix, seq)
		m := manifest{Format: snapshotFormat, Seq: seq, Term: 1}
		for _, db := range []string{"coordinator", "groups"} {
			data := []byte(fmt.Sprintf("%s at %d", db, seq))
			if err := store.Put(ctx, dir+db+"/DATA", data); err != nil {
				t.Fatal(err)
			}
			m.Files = append(m.Files, manifestFile{DB: db, Name: "DATA", Size: int64(len(data)), CRC32C: crc32.Checksum(data, castagnoli)})
		}
		b, _ := json.Marshal(m)
		if err := store.Put(ctx, dir+"manifest.json", b); err != nil {
			t.Fatal(err)
		}
	}
	put(s.legacy, 7)

	m, err := s.latest(ctx)
	if err != nil || m == nil || m.Seq != 7 {
		t.Fatalf("latest with only an old snapshot: %+v, %v", m, err)
	}
	dir := t.TempDir()
	coordDir, groupsDir := filepath.Join(dir, "coordinator"), filepath.Join(dir, "coordinator", "groups")
	if err := s.restore(ctx, m, coordDir, groupsDir); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(groupsDir, "DATA")); err != nil || string(b) != "groups at 7" {
		t.Fatalf("restored groups: %q, %v", b, err)
	}

	put(s.prefix, 9)
	if m, err := s.latest(ctx); err != nil || m.Seq != 9 {
		t.Fatalf("latest with a new snapshot: %+v, %v", m, err)
	}
	if oldest, err := s.prune(ctx, 2); err != nil || oldest != 9 {
		t.Fatalf("prune: %d, %v", oldest, err)
	}
	if left, _ := store.List(ctx, s.legacy); len(left) != 0 {
		t.Errorf("old snapshot kept after a new one was taken: %v", left)
	}
	if left, _ := store.List(ctx, s.prefix); len(left) != 3 {
		t.Errorf("new snapshot: %v, want its manifest and two files", left)
	}
}
