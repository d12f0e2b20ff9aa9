package ha

import (
	"context"
	"fmt"
	"path/filepath"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble"
	"github.com/cockroachdb/pebble/vfs"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/coordinator"
	"github.com/floe-io/floe/coordinator/service"
	"github.com/floe-io/floe/internal/testkit/natstest"
	"github.com/floe-io/floe/objectstore"
)

// TestMergeBatch merges Pebble batches as the writer groups them: the
// merged repr passes the replicas' check and applies every record of every
// batch, in order (a later set of a key wins, a delete deletes).
func TestMergeBatch(t *testing.T) {
	db, err := pebble.Open("", &pebble.Options{FS: vfs.NewMem()})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, tc := range []struct {
		name    string
		batches [][]string // "set k v" as {k, v}, "delete k" as {k}
		want    map[string]string
	}{
		{"one", [][]string{{"a", "1"}}, map[string]string{"a": "1"}},
		{"three", [][]string{{"a", "1", "b", "2"}, {"c", "3"}, {"a", "4"}}, map[string]string{"a": "4", "b": "2", "c": "3"}},
		{"delete", [][]string{{"x", "1", "y", "2"}, {"x"}}, map[string]string{"y": "2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var merged []byte
			var records uint32
			for _, ops := range tc.batches {
				b := db.NewBatch()
				if len(ops) == 1 {
					_ = b.Delete([]byte(tc.name+ops[0]), nil)
				}
				for i := 0; i+1 < len(ops); i += 2 {
					_ = b.Set([]byte(tc.name+ops[i]), []byte(ops[i+1]), nil)
				}
				records += b.Count()
				merged = mergeBatch(merged, b.Repr())
				_ = b.Close()
			}
			if err := checkBatch(merged); err != nil {
				t.Fatalf("merged batch: %v", err)
			}
			b := db.NewBatch()
			if err := b.SetRepr(merged); err != nil {
				t.Fatal(err)
			}
			if b.Count() != records {
				t.Fatalf("merged count %d, want %d", b.Count(), records)
			}
			if err := b.Commit(pebble.NoSync); err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			it, err := db.NewIter(&pebble.IterOptions{LowerBound: []byte(tc.name), UpperBound: []byte(tc.name + "\xff")})
			if err != nil {
				t.Fatal(err)
			}
			for it.First(); it.Valid(); it.Next() {
				got[string(it.Key()[len(tc.name):])] = string(it.Value())
			}
			_ = it.Close()
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("applied %v, want %v", got, tc.want)
			}
		})
	}
}

// TestGroupedCommits commits from many goroutines at once to a leader that
// groups batches as soon as one message is in flight: the log holds fewer
// messages than commits, every commit is answered with its own offsets,
// and a standby applying the grouped messages, once it leads, serves the
// same batches as the leader did.
func TestGroupedCommits(t *testing.T) {
	srvs := []*server.Server{natstest.Start(t)}
	root := t.TempDir()
	start := func(id string) *Node {
		n, err := Start(connect(t, natstest.URLs(srvs)), Options{
			ID: id, LeaseTTL: time.Second, SnapshotInterval: -1, InflightMessages: 1,
			Service: service.Options{Cluster: "hatest", Coordinator: coordinator.Options{Dir: filepath.Join(root, id), TierInterval: -1, TxnCheckInterval: -1}},
		})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	a := start("a")
	ca := waitLeader(t, a)
	b := start("b")
	defer b.Close()

	ctx := context.Background()
	const partitions, writers, each = 4, 16, 30
	tp, err := ca.CreateTopic(ctx, coordapi.CreateTopicRequest{Name: "g", Partitions: partitions, ReplicationFactor: -1})
	if err != nil {
		t.Fatal(err)
	}
	js, err := jetstream.New(connect(t, natstest.URLs(srvs)))
	if err != nil {
		t.Fatal(err)
	}
	stream, err := js.Stream(ctx, namesOf("hatest").stream)
	if err != nil {
		t.Fatal(err)
	}
	before, err := stream.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}

	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				resp, err := ca.CommitObject(ctx, &coordapi.CommitRequest{ObjectKey: fmt.Sprintf("wal/w%d-%d", w, i), ObjectSize: 100,
					Batches: []coordapi.CommitBatch{{TopicID: tp.ID, Partition: int32(w % partitions), ByteLength: 100, LastOffsetDelta: 4, MaxTimestamp: 1, ProducerID: -1}}})
				if err == nil && resp.Results[0].ErrorCode != 0 {
					err = fmt.Errorf("commit: error code %d", resp.Results[0].ErrorCode)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	after, err := stream.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	commits := uint64(writers * each)
	msgs := after.State.LastSeq - before.State.LastSeq
	t.Logf("%d commits in %d log messages", commits, msgs)
	if msgs >= commits {
		t.Fatalf("%d commits took %d log messages: none was grouped", commits, msgs)
	}

	// Every partition has all its batches, at distinct offsets.
	find := func(c *coordinator.Coordinator) [][]coordapi.BatchCoord {
		var all [][]coordapi.BatchCoord
		for p := range int32(partitions) {
			r, err := c.FindBatches(ctx, coordapi.FindBatchesRequest{TopicID: tp.ID, Partition: p, MaxBytes: 1 << 30})
			if err != nil {
				t.Fatal(err)
			}
			if want := int64(writers / partitions * each * 5); r.HighWatermark != want {
				t.Fatalf("partition %d: high watermark %d, want %d", p, r.HighWatermark, want)
			}
			all = append(all, r.Batches)
		}
		return all
	}
	want := find(ca)
	for p, bs := range want {
		if len(bs) != writers/partitions*each {
			t.Fatalf("partition %d: %d batches, want %d", p, len(bs), writers/partitions*each)
		}
	}
	waitFor(t, "the standby to apply the log", func() bool {
		return b.Status().Role == RoleStandby && b.Status().Applied >= a.Status().Applied
	}, a, b)
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if got := find(waitLeader(t, b)); !reflect.DeepEqual(got, want) {
		t.Fatalf("after failover the batches differ:\n got %v\nwant %v", got, want)
	}
}

// TestShardsKeepTheirSnapshots runs two logs, shard 0's and shard 1's,
// sharing one snapshot store as a sharded coordinator's do: each keeps
// its snapshots under its own prefix, trims only its own log, and goes on
// leading; a snapshot of one never stands for the other.
func TestShardsKeepTheirSnapshots(t *testing.T) {
	srvs := []*server.Server{natstest.Start(t)}
	root := t.TempDir()
	store, err := objectstore.NewDir(filepath.Join(root, "objects"))
	if err != nil {
		t.Fatal(err)
	}
	a := startNode(t, connect(t, natstest.URLs(srvs)), "a", filepath.Join(root, "a"), 1, store)
	ca := waitLeader(t, a)
	s1, err := Start(connect(t, natstest.URLs(srvs)), Options{
		ID: "s1", LeaseTTL: time.Second, SnapshotInterval: -1, Snapshots: store, Shard: 1,
		Service: service.Options{Cluster: "hatest_shard1", Coordinator: coordinator.Options{Dir: filepath.Join(root, "s1"), TierInterval: -1, TxnCheckInterval: -1}},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s1.Close()
	cs := waitLeader(t, s1)
	commitN(t, ca, "t", 200) // shard 0's log runs far ahead of shard 1's
	commitN(t, cs, "t", 5)
	js, err := jetstream.New(connect(t, natstest.URLs(srvs)))
	if err != nil {
		t.Fatal(err)
	}
	snap := func(n *Node, c *coordinator.Coordinator, cluster string) {
		t.Helper()
		stream, err := js.Stream(context.Background(), namesOf(cluster).stream)
		if err != nil {
			t.Fatal(err)
		}
		for range 3 { // past SnapshotsKept (2): the log is trimmed
			commitN(t, c, "t", 1)
			if err := n.snapshot(context.Background(), writerOf(t, n), stream, 1, map[string]checkpointer{
				"coordinator": c, "groups": n.Service().Groups()}); err != nil {
				t.Fatal(err)
			}
		}
	}
	snap(a, ca, "hatest")
	snap(s1, cs, "hatest_shard1")
	for _, tc := range []struct {
		prefix, cluster string
		n               *Node
	}{{coordapi.SnapshotPrefix(""), "hatest", a}, {coordapi.ShardSnapshotPrefix("", 1), "hatest_shard1", s1}} {
		m, err := tc.n.snapshots().latest(context.Background())
		if err != nil || m == nil {
			t.Fatalf("latest snapshot under %s: %v, %v", tc.prefix, m, err)
		}
		stream, err := js.Stream(context.Background(), namesOf(tc.cluster).stream)
		if err != nil {
			t.Fatal(err)
		}
		info, err := stream.Info(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if m.Seq > info.State.LastSeq || info.State.FirstSeq > m.Seq+1 {
			t.Fatalf("the snapshot under %s is at %d; its log holds %d to %d", tc.prefix, m.Seq, info.State.FirstSeq, info.State.LastSeq)
		}
	}
	// Shard 1 still leads and commits: its log was trimmed below its own
	// snapshots, not shard 0's.
	hwm := commitN(t, cs, "t", 3)
	if got := highWatermark(t, cs, "t"); got != hwm || s1.Status().Role != RoleLeader {
		t.Fatalf("shard 1 after the snapshots: high watermark %d (want %d), %+v", got, hwm, s1.Status())
	}
}
