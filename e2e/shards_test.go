package e2e

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/coordinator/rpc"
	"github.com/floe-io/floe/internal/testkit"
	"github.com/floe-io/floe/internal/testkit/floetest"
	"github.com/floe-io/floe/internal/testkit/natstest"
)

// startShard starts shard of a cluster of shards coordinator shards, on
// dir, and waits until it leads.
func startShard(t *testing.T, c *floetest.Cluster, shard, shards int, dir string, args ...string) *floetest.Process {
	t.Helper()
	all := []string{"--nats-url", c.NATS.ClientURL(), "--cluster", floetest.ClusterName,
		"--data-dir", dir, "--shards", strconv.Itoa(shards), "--shard", strconv.Itoa(shard), "--s3-bucket", c.MinIO.Bucket,
		"--s3-endpoint", c.MinIO.Endpoint, "--s3-region", c.MinIO.Region, "--s3-path-style"}
	p := floetest.StartCoordinator(t, c.Env, append(all, args...)...)
	testkit.CheckFor(t, 30*time.Second, 10*time.Millisecond, func() error {
		h, err := (&floetest.HACoordinator{ID: "shard" + strconv.Itoa(shard), Proc: p}).Health()
		if err != nil {
			return err
		}
		if h.Role != "leader" {
			return fmt.Errorf("shard %d /healthz: %s, waiting for it to lead", shard, h)
		}
		return nil
	})
	return p
}

// TestShardedCoordinator runs a cluster whose coordinator is two shards,
// each a process of its own (--shards 2, --shard 1), and two brokers that
// route by them (--coordinator-shards 2), on MinIO: a topic created
// through broker 1 is followed by shard 1, records produced through
// broker 1 to its 8 partitions are read back whole and in order through
// broker 2, by franz-go and by kcat, and a consumer group commits its
// offsets; each partition's batches are on its own shard only; shard 0
// collects the objects once no shard has them live, and its lag gauges
// cover both shards' partitions.
func TestShardedCoordinator(t *testing.T) {
	kcatBinary(t)
	c := floetest.RunClusterWith(t, 0, floetest.ClusterOptions{
		CoordinatorArgs: []string{"--shards", "2", "--gc-grace", "2s"},
		BrokerArgs:      []string{"--coordinator-shards", "2"},
	})
	startShard(t, c, 1, 2, t.TempDir(), "--gc-grace", "2s")
	c.AddBroker(1)
	c.AddBroker(2)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const topic, partitions, perPartition = "sharded", 8, 250
	prod := pinnedClient(t, c.Brokers[0].KafkaAddr, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	adm := kadm.NewClient(prod)
	if _, err := adm.CreateTopic(ctx, partitions, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	var recs []*kgo.Record
	for seq := range partitions * perPartition {
		recs = append(recs, clusterRecord(topic, 0, seq, partitions))
	}
	if err := prod.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}

	where := readBack(t, ctx, c.Brokers[1].KafkaAddr, topic, partitions)
	if len(where) != partitions*perPartition {
		t.Fatalf("read back %d records, want %d", len(where), partitions*perPartition)
	}
	for id, at := range where {
		if len(at) != 1 {
			t.Fatalf("record %v at %v", id, at)
		}
	}
	stdout, stderr := runKcat(t, time.Minute, "", "-C", "-b", c.Brokers[1].KafkaAddr, "-t", topic, "-e", "-f", "%p %o\n")
	if n := strings.Count(stdout, "\n"); n != partitions*perPartition {
		t.Fatalf("kcat read %d records, want %d; stderr:\n%s", n, partitions*perPartition, lastBytes(stderr, 2048))
	}
	checkKcatStderr(t, stderr)

	// A consumer group (shard 0's) through broker 2.
	group := pinnedClient(t, c.Brokers[1].KafkaAddr, kgo.ConsumerGroup("sharded-group"), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit())
	for n := 0; n < partitions*perPartition; {
		fs := group.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("the group read %d of %d records", n, partitions*perPartition)
		}
		fs.EachError(func(_ string, p int32, err error) {
			if !kerr.IsRetriable(err) {
				t.Fatalf("group fetch %d: %v", p, err)
			}
		})
		n += len(fs.Records())
	}
	if err := group.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatal(err)
	}
	committed, err := adm.FetchOffsets(ctx, "sharded-group")
	if err != nil {
		t.Fatal(err)
	}
	for p := range int32(partitions) {
		if o, ok := committed.Lookup(topic, p); !ok || o.At != perPartition {
			t.Fatalf("group offset of partition %d: %+v (%v), want %d", p, o, ok, perPartition)
		}
	}

	// Each partition lives on its shard, and only there.
	topics, err := adm.ListTopics(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	id := coordapi.TopicID(topics[topic].ID)
	nc := natstest.Connect(t, c.NATS)
	clients := []*rpc.Client{
		rpc.NewClient(nc, floetest.ClusterName, rpc.ClientOptions{Timeout: 5 * time.Second}),
		rpc.NewClient(nc, rpc.ShardCluster(floetest.ClusterName, 1), rpc.ClientOptions{Timeout: 5 * time.Second}),
	}
	onShard := [2]int{}
	for p := range int32(partitions) {
		owner := coordapi.ShardOf(id, p, 2)
		onShard[owner]++
		for s, cl := range clients {
			st, err := cl.PartitionState(ctx, id, p)
			switch {
			case s == owner && (err != nil || st.HighWatermark != perPartition):
				t.Fatalf("partition %d on its shard %d: %+v, %v", p, s, st, err)
			case s != owner && !errors.Is(err, kerr.NotLeaderForPartition):
				t.Fatalf("partition %d (shard %d's) on shard %d: %+v, %v", p, owner, s, st, err)
			}
		}
	}
	if onShard[0] == 0 || onShard[1] == 0 {
		t.Fatalf("the topic's partitions are all on one shard (%v): the test checks no routing", onShard)
	}
	t.Logf("partitions on shards 0 and 1: %v", onShard)

	// Collection across shards: the WAL objects hold batches of both
	// shards' partitions. While any is live they stay; once every
	// record is deleted, shard 0 deletes them (a grace of 2s), having
	// asked shard 1.
	store := c.MinIO.Store(t)
	walObjects := func() int {
		listed, err := store.List(ctx, "wal/")
		if err != nil {
			t.Fatal(err)
		}
		return len(listed)
	}
	before := walObjects()
	if before == 0 {
		t.Fatal("no WAL object in the bucket")
	}
	// Shard 0's partitions' records first: the objects are still live on
	// shard 1, past the grace.
	del := func(shard int) {
		t.Helper()
		offs := kadm.Offsets{}
		for p := range int32(partitions) {
			if coordapi.ShardOf(id, p, 2) == shard {
				offs.Add(kadm.Offset{Topic: topic, Partition: p, At: perPartition})
			}
		}
		resp, err := adm.DeleteRecords(ctx, offs)
		if err != nil {
			t.Fatal(err)
		}
		if err := resp.Error(); err != nil {
			t.Fatal(err)
		}
	}
	del(0)
	// A witness, uploaded after the objects became garbage on shard 0 and
	// never committed: the round that deletes it considered them too,
	// their grace over as well, and kept them for shard 1.
	if err := store.Put(ctx, "wal/witness", []byte("orphan")); err != nil {
		t.Fatal(err)
	}
	testkit.CheckFor(t, 30*time.Second, 100*time.Millisecond, func() error {
		listed, err := store.List(ctx, "wal/witness")
		if err != nil || len(listed) > 0 {
			return fmt.Errorf("the witness is still there (%v)", err)
		}
		return nil
	})
	if n := walObjects(); n != before {
		t.Fatalf("%d WAL objects left of %d while shard 1 still reads them all", n, before)
	}
	del(1)
	testkit.CheckFor(t, 30*time.Second, 100*time.Millisecond, func() error {
		if n := walObjects(); n > 0 {
			return fmt.Errorf("%d of %d WAL objects left after every record was deleted", n, before)
		}
		return nil
	})

	// Shard 0's consumer lag gauges cover the other shard's partitions
	// too, whose high watermarks it asks that shard for: 5 more records
	// in a partition of each shard are the group's lag there.
	const more = 5
	extra := map[int32]int64{}
	for s := range 2 {
		for p := range int32(partitions) {
			if coordapi.ShardOf(id, p, 2) == s {
				extra[p] = more
				for range more {
					if err := prod.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: p, Value: []byte("more")}).FirstErr(); err != nil {
						t.Fatal(err)
					}
				}
				break
			}
		}
	}
	testkit.CheckFor(t, 30*time.Second, 100*time.Millisecond, func() error {
		for p := range int32(partitions) {
			v, err := floetest.Metric(c.Coord.HTTPAddr, "floe_consumer_group_lag",
				`group="sharded-group"`, `topic="sharded"`, fmt.Sprintf(`partition="%d"`, p))
			if err != nil {
				return fmt.Errorf("partition %d (shard %d): %w", p, coordapi.ShardOf(id, p, 2), err)
			}
			if int64(v) != extra[p] {
				return fmt.Errorf("partition %d (shard %d): lag %v, want %d", p, coordapi.ShardOf(id, p, 2), v, extra[p])
			}
		}
		return nil
	})
}

// TestShardedFailover kills (SIGKILL) the leader of shard 1, which has a
// standby, in the middle of an idempotent producer's load: the standby
// takes shard 1's lease and log over (its own, not shard 0's), shard 0
// is untouched, and every record ends in the log exactly once, where
// acknowledged.
func TestShardedFailover(t *testing.T) {
	c := floetest.RunClusterWith(t, 0, floetest.ClusterOptions{
		CoordinatorArgs: []string{"--shards", "2"},
		BrokerArgs:      []string{"--coordinator-shards", "2"},
	})
	leader := startShard(t, c, 1, 2, t.TempDir(), "--coordinator-id", "s1-a", "--lease-ttl", "1s")
	standbyDir := t.TempDir()
	standby := floetest.StartCoordinator(t, c.Env, "--nats-url", c.NATS.ClientURL(), "--cluster", floetest.ClusterName,
		"--data-dir", standbyDir, "--shards", "2", "--shard", "1", "--coordinator-id", "s1-b", "--lease-ttl", "1s",
		"--s3-bucket", c.MinIO.Bucket, "--s3-endpoint", c.MinIO.Endpoint, "--s3-region", c.MinIO.Region, "--s3-path-style")
	health := func(p *floetest.Process) floetest.Health {
		h, _ := (&floetest.HACoordinator{ID: "shard1", Proc: p}).Health()
		return h
	}
	testkit.CheckFor(t, 30*time.Second, 10*time.Millisecond, func() error {
		if h := health(standby); h.Role != "standby" {
			return fmt.Errorf("shard 1's second coordinator: %s, waiting for it to stand by", h)
		}
		return nil
	})
	b1 := c.AddBroker(1)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	const topic, partitions = "sharded-failover", 8
	if _, err := kadm.NewClient(pinnedClient(t, b1.KafkaAddr)).CreateTopic(ctx, partitions, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	cl := pinnedClient(t, b1.KafkaAddr, crashProducerOpts(60*time.Second)...)
	stop := make(chan struct{})
	p := startSeqProducer(ctx, cl, topic, 1, partitions, 20000, stop)
	p.waitAcks(t, 1000, 20*time.Second)
	leader.Kill()
	killed := time.Now()
	testkit.CheckFor(t, 30*time.Second, 10*time.Millisecond, func() error {
		if h := health(standby); h.Role != "leader" {
			return fmt.Errorf("shard 1's standby: %s, waiting for it to lead", h)
		}
		return nil
	})
	t.Logf("shard 1's standby led %s after its leader was killed", time.Since(killed).Round(time.Millisecond))
	finishExactlyOnce(t, ctx, p, stop, b1.KafkaAddr, topic, partitions, 2000)
	if h, err := (&floetest.HACoordinator{ID: "coordinator", Proc: c.Coord}).Health(); err != nil || h.Role != "leader" {
		t.Errorf("shard 0's coordinator after shard 1's failover: %s, %v", h, err)
	}
}

// TestShardedCrashShardLeader kills (SIGKILL) shard 1's only coordinator
// in the middle of an idempotent producer's load over 8 partitions of two
// shards. While it is down, shard 0's partitions go on being acknowledged
// (a shard's failure stops only its own partitions), shard 1's are
// retried; restarted on the same --data-dir, shard 1 has every batch it
// acknowledged, and the producer ends with every record in the log
// exactly once, where acknowledged, with no gaps.
func TestShardedCrashShardLeader(t *testing.T) {
	c := floetest.RunClusterWith(t, 0, floetest.ClusterOptions{
		CoordinatorArgs: []string{"--shards", "2"},
		BrokerArgs:      []string{"--coordinator-shards", "2"},
	})
	dir := t.TempDir()
	shard1 := startShard(t, c, 1, 2, dir)
	b1 := c.AddBroker(1)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute) // a bound: the producer stops on its own
	defer cancel()

	const topic, partitions = "sharded-crash", 8
	raw := pinnedClient(t, b1.KafkaAddr)
	adm := kadm.NewClient(raw)
	if _, err := adm.CreateTopic(ctx, partitions, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	topics, err := adm.ListTopics(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	id := coordapi.TopicID(topics[topic].ID)
	onShard0 := map[int32]bool{}
	for p := range int32(partitions) {
		onShard0[p] = coordapi.ShardOf(id, p, 2) == 0
	}
	cl := pinnedClient(t, b1.KafkaAddr, crashProducerOpts(60*time.Second)...)
	stop := make(chan struct{})
	p := startSeqProducer(ctx, cl, topic, 1, partitions, 20000, stop)
	p.waitAcks(t, 1000, 20*time.Second)
	acked := func(shard0 bool) int {
		p.mu.Lock()
		defer p.mu.Unlock()
		n := 0
		for _, at := range p.mu.acked {
			if onShard0[at.partition] == shard0 {
				n++
			}
		}
		return n
	}

	shard1.Kill()
	before := acked(true)
	testkit.CheckFor(t, 30*time.Second, 20*time.Millisecond, func() error {
		if n := acked(true); n < before+500 {
			return fmt.Errorf("shard 0's partitions: %d acknowledgements since shard 1 died, want 500", n-before)
		}
		return nil
	})
	t.Logf("shard 0's partitions took %d acknowledgements while shard 1 was down", acked(true)-before)
	startShard(t, c, 1, 2, dir)
	finishExactlyOnce(t, ctx, p, stop, b1.KafkaAddr, topic, partitions, 1000)
}

// finishExactlyOnce lets p have more acknowledgements, stops it, and
// checks that every record it sent is in topic exactly once, where
// acknowledged, read back through addr.
func finishExactlyOnce(t *testing.T, ctx context.Context, p *seqProducer, stop chan struct{}, addr, topic string, partitions int32, more int) {
	t.Helper()
	p.waitAcks(t, p.ackCount()+more, 60*time.Second)
	close(stop)
	sent, acked, failed := p.wait(t)
	t.Logf("producer: %d sent, %d acknowledged, %d failed", sent, acked, failed)
	if failed > 0 {
		t.Errorf("%d records failed (delivery timeout 60s): %v", failed, p.firstFailures(5))
	}
	where := readBack(t, ctx, addr, topic, partitions)
	if unacked := checkExactlyOnce(t, where, p); unacked != 0 {
		t.Errorf("%d records in the log were not acknowledged", unacked)
	}
	if len(where) != sent {
		t.Errorf("%d distinct records in the log, %d sent", len(where), sent)
	}
}

// TestShardedShareGroup: share consumers (franz-go's) on a two-shard
// cluster read every record of a topic whose partitions are on both
// shards: shard 0's group coordinator acquires through the router, so
// shard 1's partitions are served too.
func TestShardedShareGroup(t *testing.T) {
	c := floetest.RunClusterWith(t, 0, floetest.ClusterOptions{
		CoordinatorArgs: []string{"--shards", "2"},
		BrokerArgs:      []string{"--coordinator-shards", "2", "--share-groups-enabled"},
	})
	startShard(t, c, 1, 2, t.TempDir())
	b1 := c.AddBroker(1)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const topic, partitions, records = "sharded-share", 8, 800
	prod := pinnedClient(t, b1.KafkaAddr, kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	if _, err := kadm.NewClient(prod).CreateTopic(ctx, partitions, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	setShareAutoOffsetReset(t, ctx, prod, "sharded-share")
	var recs []*kgo.Record
	for i := range records {
		recs = append(recs, &kgo.Record{Topic: topic, Value: []byte(strconv.Itoa(i))})
	}
	if err := prod.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}

	var mu sync.Mutex
	seen := map[[2]int64]int{} // (partition, offset) → deliveries
	done := make(chan struct{})
	var wg sync.WaitGroup
	for i := range 2 {
		cl := pinnedClient(t, b1.KafkaAddr, kgo.ShareGroup("sharded-share"), kgo.ConsumeTopics(topic), kgo.FetchMaxWait(500*time.Millisecond))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				case <-ctx.Done():
					return
				default:
				}
				pctx, pcancel := context.WithTimeout(ctx, time.Second)
				fs := cl.PollFetches(pctx)
				pcancel()
				fs.EachError(func(topic string, p int32, err error) {
					if !errors.Is(err, context.DeadlineExceeded) {
						t.Logf("share consumer %d: %s/%d: %v", i, topic, p, err)
					}
				})
				mu.Lock()
				for _, r := range fs.Records() {
					seen[[2]int64{int64(r.Partition), r.Offset}]++
					r.Ack(kgo.AckAccept)
				}
				if len(seen) == records {
					select {
					case <-done:
					default:
						close(done)
					}
				}
				mu.Unlock()
			}
		}()
	}
	select {
	case <-done:
	case <-ctx.Done():
	}
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != records {
		t.Fatalf("the share consumers read %d distinct records of %d", len(seen), records)
	}
	byPartition := map[int64]int{}
	for k := range seen {
		byPartition[k[0]]++
	}
	t.Logf("records by partition: %v", byPartition)
}

// TestShardedTransactions: a transactional franz-go producer on a
// two-shard cluster commits and aborts transactions spanning partitions
// of both shards; a read_committed consumer reads every committed record
// once and no aborted one, and every partition's last stable offset
// reaches its end (no transaction left open on either shard).
func TestShardedTransactions(t *testing.T) {
	c := floetest.RunClusterWith(t, 0, floetest.ClusterOptions{
		CoordinatorArgs: []string{"--shards", "2"},
		BrokerArgs:      []string{"--coordinator-shards", "2"},
	})
	startShard(t, c, 1, 2, t.TempDir())
	b1 := c.AddBroker(1)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const topic, partitions, perTxn, txns = "sharded-txn", 8, 40, 12
	adm := kadm.NewClient(pinnedClient(t, b1.KafkaAddr))
	if _, err := adm.CreateTopic(ctx, partitions, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	prod := pinnedClient(t, b1.KafkaAddr, kgo.TransactionalID("sharded-etl"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	committed := map[string]bool{}
	for n := range txns {
		if err := prod.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		var recs []*kgo.Record
		for i := range perTxn {
			v := fmt.Sprintf("txn-%d-rec-%d", n, i)
			recs = append(recs, &kgo.Record{Topic: topic, Partition: int32(i % partitions), Value: []byte(v)})
		}
		if err := prod.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatalf("transaction %d: %v", n, err)
		}
		commit := n%3 != 2 // every third aborted
		if err := prod.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatalf("end transaction %d (commit %v): %v", n, commit, err)
		}
		if commit {
			for _, r := range recs {
				committed[string(r.Value)] = true
			}
		}
	}

	cons := pinnedClient(t, b1.KafkaAddr, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	seen := map[string]int{}
	end := endOffsets(t, ctx, adm, topic, 10*time.Second)
	for len(seen) < len(committed) {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of %d committed records", len(seen), len(committed))
		}
		fs.EachError(func(_ string, p int32, err error) {
			if !kerr.IsRetriable(err) {
				t.Fatalf("fetch %d: %v", p, err)
			}
		})
		for _, r := range fs.Records() {
			seen[string(r.Value)]++
		}
	}
	for v, n := range seen {
		if !committed[v] || n != 1 {
			t.Fatalf("record %q read %d times (committed: %v)", v, n, committed[v])
		}
	}
	// The last stable offsets reach the ends: markers on both shards.
	stable, err := adm.ListCommittedOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	for p, e := range end {
		if o, ok := stable.Lookup(topic, p); !ok || o.Offset != e {
			t.Fatalf("partition %d: last stable offset %+v, end %d", p, o, e)
		}
	}
	t.Logf("%d transactions (%d committed records) over 8 partitions on two shards, read back once each", txns, len(committed))
}

// TestShardedTransactionsShardFailover kills (SIGKILL) the leader of shard
// 1, which has a standby, in the middle of a run of transactions spanning
// both shards: every transaction is atomic (all its records visible to
// read_committed, or none), each one known committed is read whole and
// once, each known aborted not at all, and no partition is left with an
// open transaction (its last stable offset reaches its end).
func TestShardedTransactionsShardFailover(t *testing.T) {
	c := floetest.RunClusterWith(t, 0, floetest.ClusterOptions{
		CoordinatorArgs: []string{"--shards", "2"},
		BrokerArgs:      []string{"--coordinator-shards", "2"},
	})
	leader := startShard(t, c, 1, 2, t.TempDir(), "--coordinator-id", "s1-a", "--lease-ttl", "1s")
	floetest.StartCoordinator(t, c.Env, "--nats-url", c.NATS.ClientURL(), "--cluster", floetest.ClusterName,
		"--data-dir", t.TempDir(), "--shards", "2", "--shard", "1", "--coordinator-id", "s1-b", "--lease-ttl", "1s",
		"--s3-bucket", c.MinIO.Bucket, "--s3-endpoint", c.MinIO.Endpoint, "--s3-region", c.MinIO.Region, "--s3-path-style")
	b1 := c.AddBroker(1)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const topic, partitions, perTxn, txns = "sharded-txn-kill", 8, 16, 40
	adm := kadm.NewClient(pinnedClient(t, b1.KafkaAddr))
	if _, err := adm.CreateTopic(ctx, partitions, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	prod := pinnedClient(t, b1.KafkaAddr, kgo.TransactionalID("sharded-kill"), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.TransactionTimeout(10*time.Second))
	outcome := map[int]string{} // committed, aborted, or unknown
	killed := false
	for n := range txns {
		if err := prod.BeginTransaction(); err != nil {
			t.Fatalf("begin %d: %v", n, err)
		}
		var recs []*kgo.Record
		for i := range perTxn {
			recs = append(recs, &kgo.Record{Topic: topic, Partition: int32(i % partitions), Value: fmt.Appendf(nil, "%d/%d", n, i)})
		}
		commit := n%4 != 3 && prod.ProduceSync(ctx, recs...).FirstErr() == nil
		if n == txns/3 {
			// Its records are in both shards, its markers not yet.
			leader.Kill()
			killed = true
		}
		err := prod.EndTransaction(ctx, kgo.TransactionEndTry(commit))
		switch {
		case err == nil && commit:
			outcome[n] = "committed"
		case err == nil:
			outcome[n] = "aborted"
		default:
			outcome[n] = "unknown"
			t.Logf("transaction %d (commit %v): %v", n, commit, err)
			// The client's state after a failed end: abort what is left.
			if aerr := prod.AbortBufferedRecords(ctx); aerr != nil {
				t.Logf("abort buffered: %v", aerr)
			}
			_ = prod.EndTransaction(ctx, kgo.TryAbort)
		}
	}
	if !killed {
		t.Fatal("the leader was never killed")
	}

	end := endOffsets(t, ctx, adm, topic, 30*time.Second)
	testkit.CheckFor(t, 30*time.Second, 100*time.Millisecond, func() error {
		stable, err := adm.ListCommittedOffsets(ctx, topic)
		if err != nil {
			return err
		}
		for p, e := range end {
			if o, ok := stable.Lookup(topic, p); !ok || o.Offset != e {
				return fmt.Errorf("partition %d: last stable offset %+v, end %d", p, o, e)
			}
		}
		return nil
	})
	cons := pinnedClient(t, b1.KafkaAddr, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	seen := map[string]int{}
	read := map[int32]int64{}
	for done := false; !done; {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read up to %v of %v", read, end)
		}
		for _, r := range fs.Records() {
			seen[string(r.Value)]++
		}
		fs.EachPartition(func(p kgo.FetchTopicPartition) {
			if p.HighWatermark > 0 {
				read[p.Partition] = p.HighWatermark
			}
		})
		done = true
		for p, e := range end {
			if read[p] < e {
				done = false
			}
		}
	}
	counts := map[string]int{}
	for n, o := range outcome {
		got := 0
		for i := range perTxn {
			k := fmt.Sprintf("%d/%d", n, i)
			if seen[k] > 1 {
				t.Fatalf("record %s read %d times", k, seen[k])
			}
			got += seen[k]
		}
		counts[o]++
		switch {
		case got != 0 && got != perTxn:
			t.Fatalf("transaction %d (%s): %d of its %d records visible", n, o, got, perTxn)
		case o == "committed" && got != perTxn, o == "aborted" && got != 0:
			t.Fatalf("transaction %d %s but %d of its records visible", n, o, got)
		}
	}
	t.Logf("transactions: %v", counts)
}

// TestShardedNATSNodeLoss shuts down the NATS server that leads shard 1's
// log stream, on a 3-node NATS cluster whose two shards each have two
// coordinators at --replicas 3, under a produce load and a consumer group
// spanning both shards' partitions: shard 1's stream elects another
// leader, its coordinators keep one leader, shard 0 keeps its own, and
// produce and consume go on with every acknowledged record read back
// exactly once and the group's offsets caught up.
func TestShardedNATSNodeLoss(t *testing.T) {
	start := time.Now()
	c := floetest.RunHA(t, floetest.HAOptions{Coordinators: 2, CoordinatorArgs: []string{"--shards", "2"},
		BrokerArgs: []string{"--coordinator-shards", "2"}})
	shard1 := func(id string) *floetest.HACoordinator {
		p := floetest.StartCoordinator(t, c.Env, "--nats-url", c.NATSURLs, "--cluster", floetest.ClusterName,
			"--data-dir", t.TempDir(), "--shards", "2", "--shard", "1", "--coordinator-id", id, "--replicas", "3",
			"--lease-ttl", c.LeaseTTL.String(), "--broker-ttl", "3s", "--s3-bucket", c.MinIO.Bucket,
			"--s3-endpoint", c.MinIO.Endpoint, "--s3-region", c.MinIO.Region, "--s3-path-style")
		return &floetest.HACoordinator{ID: id, Proc: p}
	}
	s1 := []*floetest.HACoordinator{shard1("s1-a")}
	roles := func(cs []*floetest.HACoordinator) (leaders int, seen []string) {
		for _, hc := range cs {
			h, err := hc.Health()
			if err != nil {
				seen = append(seen, hc.ID+": "+err.Error())
				continue
			}
			seen = append(seen, hc.ID+": "+h.String())
			if h.Role == "leader" {
				leaders++
			}
		}
		return leaders, seen
	}
	oneLeader := func() error {
		if n, seen := roles(s1); n != 1 {
			return fmt.Errorf("shard 1 has %d leaders: %v", n, seen)
		}
		return nil
	}
	testkit.CheckFor(t, 30*time.Second, 20*time.Millisecond, oneLeader)
	s1 = append(s1, shard1("s1-b"))
	leader0 := c.WaitLeader(t, 10*time.Second)
	c.AddBroker(1)
	c.AddBroker(2)

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute) // a bound, not a pace
	defer cancel()
	const topic, partitions, group = "sharded-nats", 6, "sharded-nats-group"
	b1, b2 := c.Brokers[0], c.Brokers[1]
	createHATopic(t, ctx, b1.KafkaAddr, topic, partitions)
	stop := make(chan struct{})
	p1 := startHAProducer(ctx, pinnedClient(t, b1.KafkaAddr, haProducerOpts()...), topic, 1, partitions, 4, 1<<30, stop)
	p2 := startHAProducer(ctx, pinnedClient(t, b2.KafkaAddr, haProducerOpts()...), topic, 2, partitions, 4, 1<<30, stop)
	cons := startHAConsumer(t, c.KafkaAddrs(), group, topic)
	p1.waitAcks(t, 500, 20*time.Second)
	p2.waitAcks(t, 500, 20*time.Second)
	cons.waitCommitted(t, 200, 20*time.Second)

	stream1 := rpc.ShardCluster(floetest.ClusterName, 1) + "_coordlog"
	victim := natstest.StreamLeader(c.NATS, stream1)
	if victim == nil {
		t.Fatalf("no NATS server leads stream %s", stream1)
	}
	name := victim.Name()
	alsoShard0 := victim.JetStreamIsStreamLeader(server.DEFAULT_GLOBAL_ACCOUNT, floetest.LogStream)
	lostAt := time.Now()
	victim.Shutdown()
	victim.WaitForShutdown()
	p1.waitAcksAfter(t, lostAt, 1, 30*time.Second)
	p2.waitAcksAfter(t, lostAt, 1, 30*time.Second)
	var newLeader string
	testkit.CheckFor(t, 20*time.Second, 50*time.Millisecond, func() error {
		s := natstest.StreamLeader(c.NATS, stream1)
		if s == nil {
			return fmt.Errorf("no NATS server leads stream %s", stream1)
		}
		newLeader = s.Name()
		return nil
	})
	testkit.CheckFor(t, 20*time.Second, 20*time.Millisecond, oneLeader)
	now0 := c.WaitLeader(t, 20*time.Second)
	t.Logf("NATS server %s (leading shard 1's stream; shard 0's too: %v) shut down; shard 1's stream now led by %s; shard 0's coordinator %s led before, %s now",
		name, alsoShard0, newLeader, leader0.ID, now0.ID)

	p1.waitAcksAfter(t, lostAt, 1000, 30*time.Second)
	p2.waitAcksAfter(t, lostAt, 1000, 30*time.Second)
	close(stop)
	p1.finish(t)
	p2.finish(t)
	read, unacked := checkReadBack(t, ctx, b1.KafkaAddr, topic, partitions, p1, p2)
	waitGroupCaughtUp(t, ctx, kadm.NewClient(pinnedClient(t, b2.KafkaAddr)), group, topic, 20*time.Second)
	t.Logf("read back %d records, each acknowledged one once (%d unacknowledged); total %s", read, unacked, time.Since(start).Round(time.Millisecond))
}

// TestShardedGrow grows a running cluster from two coordinator shards to
// three while an idempotent producer writes to a topic whose partitions
// are on both: shard 2 is started, then shard 0 is restarted with
// --shards 3 and moves each partition whose jump hash changes to shard 2
// (fenced on its old shard, exported, imported, dropped) before every
// shard commits the new count. The broker, started with
// --coordinator-shards 2, follows cluster_info to three shards; the
// producer's batches refused meanwhile (NOT_LEADER_OR_FOLLOWER) are
// retried; every record ends up in the log exactly once, where
// acknowledged (read back after shard 0 collected garbage through the
// growth, a 2s grace), and the moved partitions are served by shard 2.
func TestShardedGrow(t *testing.T) {
	c := floetest.RunClusterWith(t, 0, floetest.ClusterOptions{
		// A short grace: shard 0 collects while partitions move, and
		// must not take an object either shard refers to.
		CoordinatorArgs: []string{"--shards", "2", "--gc-grace", "2s"},
		BrokerArgs:      []string{"--coordinator-shards", "2"},
	})
	startShard(t, c, 1, 2, t.TempDir())
	b1 := c.AddBroker(1)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute) // a bound: the producer stops on its own
	defer cancel()

	const topic, partitions = "sharded-grow", 12
	adm := kadm.NewClient(pinnedClient(t, b1.KafkaAddr))
	if _, err := adm.CreateTopic(ctx, partitions, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	topics, err := adm.ListTopics(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	id := coordapi.TopicID(topics[topic].ID)
	var moving []int32
	for p := range int32(partitions) {
		if coordapi.ShardOf(id, p, 2) != coordapi.ShardOf(id, p, 3) {
			moving = append(moving, p)
		}
	}
	if len(moving) == 0 {
		t.Fatal("no partition of the topic moves to a third shard")
	}
	cl := pinnedClient(t, b1.KafkaAddr, crashProducerOpts(60*time.Second)...)
	stop := make(chan struct{})
	p := startSeqProducer(ctx, cl, topic, 1, partitions, 30000, stop)
	p.waitAcks(t, 1000, 20*time.Second)

	startShard(t, c, 2, 3, t.TempDir())
	c.Coord.Stop()
	c.StartCoordinatorWith("--shards", "3")
	nc := natstest.Connect(t, c.NATS)
	shard0 := rpc.NewClient(nc, floetest.ClusterName, rpc.ClientOptions{Timeout: 2 * time.Second})
	shard2 := rpc.NewClient(nc, rpc.ShardCluster(floetest.ClusterName, 2), rpc.ClientOptions{Timeout: 2 * time.Second})
	testkit.CheckFor(t, 60*time.Second, 20*time.Millisecond, func() error {
		ci, err := shard0.ClusterInfo(ctx)
		if err != nil || ci.Shards != 3 {
			return fmt.Errorf("shard 0's cluster_info: %+v, %v; waiting for 3 shards", ci, err)
		}
		return nil
	})
	t.Logf("grown to 3 shards after %d acknowledgements; partitions %v moved to shard 2", p.ackCount(), moving)
	finishExactlyOnce(t, ctx, p, stop, b1.KafkaAddr, topic, partitions, 2000)
	for _, part := range moving {
		st, err := shard2.PartitionState(ctx, id, part)
		if err != nil || st.HighWatermark == 0 {
			t.Errorf("moved partition %d on shard 2: %+v, %v", part, st, err)
		}
	}
}
