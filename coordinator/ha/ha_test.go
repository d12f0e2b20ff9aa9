package ha

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/coordinator"
	"github.com/floe-io/floe/coordinator/service"
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

// waitFor polls cond until it holds.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// commitN creates topic and commits n objects of one batch to it,
// returning the high watermark.
func commitN(t testing.TB, c *coordinator.Coordinator, topic string, n int) int64 {
	t.Helper()
	ctx := context.Background()
	var id coordapi.TopicID
	if tp, err := c.CreateTopic(ctx, coordapi.CreateTopicRequest{Name: topic, Partitions: 1, ReplicationFactor: -1}); err == nil {
		id = tp.ID
	} else {
		t.Logf("create topic: %v", err)
		id = topicID(t, c, topic)
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
	defer b.Close()
	hwm := commitN(t, ca, "t", 50)
	waitFor(t, "the standby to apply the log", func() bool {
		return b.Status().Role == RoleStandby && b.Status().Applied >= a.Status().Applied && a.Status().Applied > 0
	})
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
	})
	if a.Coordinator() != nil {
		t.Fatal("the standby serves")
	}
	_ = hwm
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
