package shards

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/coordinator"
	"github.com/floe-io/floe/internal/testkit"
)

// TestRouterRoutesEveryMethod classifies every method of the API: routed
// (defined by Router) or cluster-wide (shard 0's, through the embedded
// Coordinator). A method added to coordapi.Coordinator fails this test
// until it is put in one list, so that nothing about a partition goes to
// shard 0 unnoticed.
func TestRouterRoutesEveryMethod(t *testing.T) {
	routed := []string{
		"AbandonTierJob", "ClaimTierJob", "CommitObject", "CompleteTierJob",
		"DeleteRecords", "DescribeProducers", "FindBatches", "FindBatchesMulti", "FindKeyBatches",
		"KvGet", "KvLatestOffsets", "KvLookup", "KvReady", "ListOffset", "PartitionState", "Subscribe",
	}
	clusterWide := []string{
		// Topics: shard 0 owns them; the other shards follow
		// (coordinator.FollowTopics).
		"AlterTopicConfigs", "CreatePartitions", "CreateTopic", "DeleteTopic", "DeleteTopicByID",
		"SubscribeTopics", "Topic", "TopicByID", "Topics",
		// Producer ids and the transaction coordinator.
		"AddOffsetsToTxn", "AddPartitionsToTxn", "DescribeTransactions", "EndTxn", "InitProducerID", "ListTransactions",
		// Users, ACLs and the broker registry.
		"AlterUserScramCredentials", "DescribeUserScramCredentials", "UserScramCredential",
		"CreateACLs", "DeleteACLs", "DescribeACLs", "ACLVersion", "SubscribeACLs",
		"DeregisterBroker", "ListBrokers", "RegisterBroker",
	}
	api := reflect.TypeFor[coordapi.Coordinator]()
	var all []string
	for i := range api.NumMethod() {
		all = append(all, api.Method(i).Name)
	}
	listed := append(slices.Clone(routed), clusterWide...)
	sort.Strings(all)
	sort.Strings(listed)
	for _, m := range all {
		if !slices.Contains(listed, m) {
			t.Errorf("coordapi.Coordinator.%s is neither routed nor cluster-wide here", m)
		}
	}
	for _, m := range listed {
		if !slices.Contains(all, m) {
			t.Errorf("%s is listed but not in coordapi.Coordinator (%v)", m, all)
		}
	}
	// The routed ones are Router's own (the embedded shard 0 would answer
	// any it forgot to define), the cluster-wide ones promoted from it.
	// A promoted method is a compiler-generated wrapper, with no file of
	// its own.
	own := func(m string) (string, bool) {
		meth, ok := reflect.TypeFor[*Router]().MethodByName(m)
		if !ok {
			t.Fatalf("Router has no %s", m)
		}
		pc := meth.Func.Pointer()
		file, _ := runtime.FuncForPC(pc).FileLine(pc)
		return file, strings.HasSuffix(file, "router.go")
	}
	for _, m := range routed {
		if file, ok := own(m); !ok {
			t.Errorf("Router.%s is not Router's own (its code is in %s): it would go to shard 0", m, file)
		}
	}
	for _, m := range clusterWide {
		if file, ok := own(m); ok {
			t.Errorf("Router.%s is defined in %s: list it as routed", m, file)
		}
	}
}

// openShards opens n coordinator shards, shard 0 owning the topic
// metadata and the others following it.
func openShards(t *testing.T, n int) []*coordinator.Coordinator {
	t.Helper()
	cs := make([]*coordinator.Coordinator, n)
	for i := range cs {
		opts := coordinator.Options{Dir: t.TempDir(), Logger: testkit.Logger(), TierInterval: -1, TxnCheckInterval: -1,
			Shards: n, Shard: i}
		if i > 0 {
			opts.TopicOwner = cs[0]
		}
		c, err := coordinator.Open(opts)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		cs[i] = c
	}
	return cs
}

func router(t *testing.T, cs []*coordinator.Coordinator) *Router {
	t.Helper()
	shards := make([]coordapi.Coordinator, len(cs))
	for i, c := range cs {
		shards[i] = c
	}
	r, err := New(shards)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestRouterCommitsAndFinds commits objects whose batches span every
// partition of a topic over 3 shards: each partition gets consecutive
// offsets on its own shard and nowhere else, FindBatches and
// FindBatchesMulti answer from the owners, and a subscriber hears every
// shard's notices.
func TestRouterCommitsAndFinds(t *testing.T) {
	ctx := context.Background()
	cs := openShards(t, 3)
	r := router(t, cs)
	const partitions, objects = 32, 12 // 32 partitions miss one of 3 shards with p < 1e-5 (8 did 12% of the time)
	tp, err := r.CreateTopic(ctx, coordapi.CreateTopicRequest{Name: "t", Partitions: partitions, ReplicationFactor: -1})
	if err != nil {
		t.Fatal(err)
	}
	// No wait for the shards to follow: a commit naming a topic a shard
	// has not heard of yet asks shard 0 for it.
	owners := map[int]bool{}
	for p := range int32(partitions) {
		owners[coordapi.ShardOf(tp.ID, p, 3)] = true
	}
	if len(owners) != 3 {
		t.Fatalf("the topic's %d partitions are on shards %v: the test wants all 3", partitions, owners)
	}

	var mu sync.Mutex
	heard := map[int32]int64{}
	cancel := r.Subscribe(func(ns []coordapi.CommitNotice) {
		mu.Lock()
		defer mu.Unlock()
		for _, n := range ns {
			heard[n.Partition] = max(heard[n.Partition], n.HighWatermark)
		}
	})
	defer cancel()

	for o := range objects {
		req := &coordapi.CommitRequest{ObjectKey: fmt.Sprintf("wal/%d", o), ObjectSize: partitions * 100}
		for p := range int32(partitions) {
			req.Batches = append(req.Batches, coordapi.CommitBatch{TopicID: tp.ID, Partition: p, ByteOffset: int64(p) * 100,
				ByteLength: 100, LastOffsetDelta: 9, MaxTimestamp: 1, ProducerID: -1})
		}
		resp, err := r.CommitObject(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		for p, res := range resp.Results {
			if res.ErrorCode != 0 || res.BaseOffset != int64(o)*10 {
				t.Fatalf("object %d partition %d: %+v, want base offset %d", o, p, res, o*10)
			}
		}
	}

	var multi []coordapi.FindBatchesRequest
	for p := range int32(partitions) {
		req := coordapi.FindBatchesRequest{TopicID: tp.ID, Partition: p, MaxBytes: 1 << 20}
		multi = append(multi, req)
		got, err := r.FindBatches(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		if got.HighWatermark != objects*10 || len(got.Batches) != objects || got.Batches[3].ObjectKey != "wal/3" {
			t.Fatalf("partition %d: high watermark %d, %d batches (%+v)", p, got.HighWatermark, len(got.Batches), got.Batches)
		}
		owner := coordapi.ShardOf(tp.ID, p, 3)
		for s, c := range cs {
			st, err := c.PartitionState(ctx, tp.ID, p)
			switch {
			case s == owner && (err != nil || st.HighWatermark != objects*10):
				t.Fatalf("partition %d on its owner, shard %d: %+v, %v", p, s, st, err)
			case s != owner && !errors.Is(err, kerr.NotLeaderForPartition):
				t.Fatalf("partition %d (shard %d's) on shard %d: %+v, %v", p, owner, s, st, err)
			}
		}
	}
	res, err := r.FindBatchesMulti(ctx, multi)
	if err != nil {
		t.Fatal(err)
	}
	for p, got := range res {
		if got.ErrorCode != 0 || got.HighWatermark != objects*10 || len(got.Batches) != objects {
			t.Fatalf("multi, partition %d: %+v", p, got)
		}
	}
	testkit.CheckFor(t, 10*time.Second, 5*time.Millisecond, func() error {
		mu.Lock()
		defer mu.Unlock()
		for p := range int32(partitions) {
			if heard[p] != objects*10 {
				return fmt.Errorf("notices heard: %v", heard)
			}
		}
		return nil
	})
}

// TestRouterShardDown: with one shard closed, a commit spanning shards
// commits the others' batches and fails only that shard's, with a code a
// producer retries or reports; finds on its partitions fail.
func TestRouterShardDown(t *testing.T) {
	ctx := context.Background()
	cs := openShards(t, 2)
	r := router(t, cs)
	tp, err := r.CreateTopic(ctx, coordapi.CreateTopicRequest{Name: "t", Partitions: 4, ReplicationFactor: -1})
	if err != nil {
		t.Fatal(err)
	}
	if err := cs[1].Close(); err != nil {
		t.Fatal(err)
	}
	req := &coordapi.CommitRequest{ObjectKey: "wal/x", ObjectSize: 400}
	for p := range int32(4) {
		req.Batches = append(req.Batches, coordapi.CommitBatch{TopicID: tp.ID, Partition: p, ByteOffset: int64(p) * 100,
			ByteLength: 100, LastOffsetDelta: 0, MaxTimestamp: 1, ProducerID: -1})
	}
	resp, err := r.CommitObject(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	down := 0
	for p, res := range resp.Results {
		switch coordapi.ShardOf(tp.ID, int32(p), 2) {
		case 0:
			if res.ErrorCode != 0 || res.BaseOffset != 0 {
				t.Fatalf("partition %d on the live shard: %+v", p, res)
			}
		case 1:
			down++
			if res.ErrorCode != kerr.KafkaStorageError.Code || res.BaseOffset != -1 {
				t.Fatalf("partition %d on the closed shard: %+v", p, res)
			}
			if _, err := r.FindBatches(ctx, coordapi.FindBatchesRequest{TopicID: tp.ID, Partition: int32(p)}); err == nil {
				t.Fatalf("partition %d: a find on the closed shard answered", p)
			}
		}
	}
	if down == 0 {
		t.Fatal("no partition of the topic is on shard 1: the test checks nothing")
	}
	// A multi-partition find answers the live shard's partitions and
	// fails only the closed shard's.
	var reqs []coordapi.FindBatchesRequest
	for p := range int32(4) {
		reqs = append(reqs, coordapi.FindBatchesRequest{TopicID: tp.ID, Partition: p, MaxBytes: 1 << 20})
	}
	res, err := r.FindBatchesMulti(ctx, reqs)
	if err != nil {
		t.Fatalf("a multi-partition find with one shard down: %v", err)
	}
	for p, got := range res {
		live := coordapi.ShardOf(tp.ID, int32(p), 2) == 0
		if live && (got.ErrorCode != 0 || got.HighWatermark != 1) || !live && got.ErrorCode != kerr.KafkaStorageError.Code {
			t.Fatalf("partition %d (on the live shard: %v): %+v", p, live, got)
		}
	}
}

// TestShardRefusesOthersPartitions: a shard asked about a partition of
// another shard (a broker routing by another shard count) answers
// NOT_LEADER_OR_FOLLOWER, for commits and for reads, and never from the
// empty state it keeps of it.
func TestShardRefusesOthersPartitions(t *testing.T) {
	ctx := context.Background()
	cs := openShards(t, 2)
	tp, err := cs[0].CreateTopic(ctx, coordapi.CreateTopicRequest{Name: "t", Partitions: 8, ReplicationFactor: -1})
	if err != nil {
		t.Fatal(err)
	}
	p := partitionOn(t, tp.ID, 0, 2)
	resp, err := cs[1].CommitObject(ctx, &coordapi.CommitRequest{ObjectKey: "wal/x", ObjectSize: 100,
		Batches: []coordapi.CommitBatch{{TopicID: tp.ID, Partition: p, ByteLength: 100, MaxTimestamp: 1, ProducerID: -1}}})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Results[0].ErrorCode != kerr.NotLeaderForPartition.Code {
		t.Fatalf("shard 1 committed shard 0's partition: %+v", resp.Results[0])
	}
	if _, err := cs[1].FindBatches(ctx, coordapi.FindBatchesRequest{TopicID: tp.ID, Partition: p}); !errors.Is(err, kerr.NotLeaderForPartition) {
		t.Fatalf("shard 1 answered a find of shard 0's partition: %v", err)
	}
	if _, err := cs[1].PartitionState(ctx, tp.ID, p); !errors.Is(err, kerr.NotLeaderForPartition) {
		t.Fatalf("shard 1 answered the state of shard 0's partition: %v", err)
	}
}

// jobShard is a shard that hands out one tier job and records what it is
// told about jobs; the rest of its API is not called.
type jobShard struct {
	coordapi.Coordinator
	job       coordapi.TierJob
	has       bool
	completed []uint64
	abandoned []uint64
}

func (j *jobShard) ClaimTierJob(context.Context, coordapi.ClaimTierJobRequest) (coordapi.TierJob, bool, error) {
	ok := j.has
	j.has = false
	return j.job, ok, nil
}

func (j *jobShard) CompleteTierJob(_ context.Context, req coordapi.CompleteTierJobRequest) error {
	j.completed = append(j.completed, req.JobID)
	return nil
}

func (j *jobShard) AbandonTierJob(_ context.Context, id uint64, _ string) error {
	j.abandoned = append(j.abandoned, id)
	return nil
}

// partitionOn returns a partition of id that shard s of n owns.
func partitionOn(t *testing.T, id coordapi.TopicID, s, n int) int32 {
	t.Helper()
	for p := range int32(1000) {
		if coordapi.ShardOf(id, p, n) == s {
			return p
		}
	}
	t.Fatalf("no partition of %s on shard %d of %d", id, s, n)
	return -1
}

// TestRouterTierJobIDs: a job's id names its shard, so that completing or
// abandoning it (by id alone) reaches the shard that gave it, with that
// shard's own id; a completion naming another shard's partition is
// refused.
func TestRouterTierJobIDs(t *testing.T) {
	ctx := context.Background()
	id := coordapi.TopicID{9}
	shards := []*jobShard{{}, {}, {}}
	p := partitionOn(t, id, 2, 3)
	// The largest id a shard of 3 hands out (coordinator.initTier: below
	// 2^63 / 3): folded with its shard, it still fits.
	const big = uint64(1)<<63/3 - 1
	shards[2].job, shards[2].has = coordapi.TierJob{ID: big, TopicID: id, Partition: p}, true
	r, err := New([]coordapi.Coordinator{shards[0], shards[1], shards[2]})
	if err != nil {
		t.Fatal(err)
	}
	job, ok, err := r.ClaimTierJob(ctx, coordapi.ClaimTierJobRequest{BrokerID: 1})
	if err != nil || !ok || job.ID != big*3+2 {
		t.Fatalf("claim: %+v %v %v", job, ok, err)
	}
	if _, ok, err := r.ClaimTierJob(ctx, coordapi.ClaimTierJobRequest{BrokerID: 1}); ok || err != nil {
		t.Fatalf("a second claim: %v %v", ok, err)
	}
	if err := r.CompleteTierJob(ctx, coordapi.CompleteTierJobRequest{JobID: job.ID, TopicID: id, Partition: p}); err != nil {
		t.Fatal(err)
	}
	if err := r.AbandonTierJob(ctx, job.ID, "test"); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(shards[2].completed, []uint64{big}) || !slices.Equal(shards[2].abandoned, []uint64{big}) {
		t.Fatalf("shard 2 completed %v, abandoned %v", shards[2].completed, shards[2].abandoned)
	}
	other := partitionOn(t, id, 0, 3)
	err = r.CompleteTierJob(ctx, coordapi.CompleteTierJobRequest{JobID: job.ID, TopicID: id, Partition: other})
	if !errors.Is(err, kerr.InvalidRequest) {
		t.Fatalf("completing a job for another shard's partition: %v", err)
	}
}

// TestRouterTableJob: a table job (Partition -1, of every partition its
// shard owns) is completed on the shard that gave it, whichever shard
// partition -1 would hash to.
func TestRouterTableJob(t *testing.T) {
	ctx := context.Background()
	id := coordapi.TopicID{9}
	shards := []*jobShard{{}, {}, {}}
	for s := range shards {
		if coordapi.ShardOf(id, -1, len(shards)) == s {
			continue
		}
		shards[s].job, shards[s].has = coordapi.TierJob{ID: 7, TopicID: id, Partition: -1, Kind: coordapi.TierJobTable}, true
		r, err := New([]coordapi.Coordinator{shards[0], shards[1], shards[2]})
		if err != nil {
			t.Fatal(err)
		}
		job, ok, err := r.ClaimTierJob(ctx, coordapi.ClaimTierJobRequest{BrokerID: 1, Tables: true})
		if err != nil || !ok {
			t.Fatalf("claim: %v %v", ok, err)
		}
		if err := r.CompleteTierJob(ctx, coordapi.CompleteTierJobRequest{JobID: job.ID, TopicID: id, Partition: -1,
			Table: &coordapi.TableResult{}}); err != nil {
			t.Fatalf("table job of shard %d: %v", s, err)
		}
		if !slices.Equal(shards[s].completed, []uint64{7}) {
			t.Fatalf("shard %d completed %v", s, shards[s].completed)
		}
		return
	}
	t.Fatal("every shard is partition -1's")
}

// TestRouterRefusesUnroutableJobID: a job whose id cannot carry its shard
// (a shard not bounding its ids for the count) is given back, not handed
// to a broker under an id that would reach another job.
func TestRouterRefusesUnroutableJobID(t *testing.T) {
	shards := []*jobShard{{}, {}, {}}
	shards[1].job, shards[1].has = coordapi.TierJob{ID: uint64(1) << 63, TopicID: coordapi.TopicID{9}}, true
	r, err := New([]coordapi.Coordinator{shards[0], shards[1], shards[2]})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 { // every shard asked once, whichever the router starts at
		if _, ok, _ := r.ClaimTierJob(context.Background(), coordapi.ClaimTierJobRequest{BrokerID: 1}); ok {
			t.Fatal("an unroutable job was handed out")
		}
	}
	if !slices.Equal(shards[1].abandoned, []uint64{1 << 63}) {
		t.Fatalf("shard 1's abandoned jobs: %v", shards[1].abandoned)
	}
}

// TestRouterFollowsGrowth: a router over two shards follows the cluster's
// growth to three (shard 0's Grow): it routes over three once shard 0
// says so, a commit to a partition moved to the new shard lands there,
// and the new shard's commit notices reach the subscriptions made before.
func TestRouterFollowsGrowth(t *testing.T) {
	ctx := context.Background()
	cs := openShards(t, 2)
	third, err := coordinator.Open(coordinator.Options{Dir: t.TempDir(), Logger: testkit.Logger(), TierInterval: -1, TxnCheckInterval: -1,
		Shards: 3, Shard: 2, TopicOwner: cs[0]})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = third.Close() })
	r := router(t, cs)
	var mu sync.Mutex
	noticed := map[int32]int64{}
	cancelSub := r.Subscribe(func(ns []coordapi.CommitNotice) {
		mu.Lock()
		defer mu.Unlock()
		for _, n := range ns {
			noticed[n.Partition] = n.HighWatermark
		}
	})
	defer cancelSub()
	tp, err := r.CreateTopic(ctx, coordapi.CreateTopicRequest{Name: "t", Partitions: 16, ReplicationFactor: -1})
	if err != nil {
		t.Fatal(err)
	}
	p := int32(-1)
	for i := range int32(16) {
		if coordapi.ShardOf(tp.ID, i, 3) == 2 {
			p = i
			break
		}
	}
	commit := func(key string) coordapi.BatchResult {
		t.Helper()
		resp, err := r.CommitObject(ctx, &coordapi.CommitRequest{ObjectKey: key, ObjectSize: 100,
			Batches: []coordapi.CommitBatch{{TopicID: tp.ID, Partition: p, ByteLength: 100, MaxTimestamp: 1, ProducerID: -1}}})
		if err != nil {
			t.Fatal(err)
		}
		return resp.Results[0]
	}
	if res := commit("wal/a"); res.ErrorCode != 0 || res.BaseOffset != 0 {
		t.Fatalf("commit before the growth: %+v", res)
	}
	fctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.Follow(fctx, 5*time.Millisecond, cs[0].ClusterInfo, func(int) coordapi.Coordinator { return third }, testkit.Logger())
	}()
	defer func() { stop(); <-done }()
	if _, err := third.FollowTopics(ctx, cs[0]); err != nil {
		t.Fatal(err)
	}
	if _, err := cs[0].Grow(ctx, 3, []coordinator.ShardPeer{cs[0], cs[1], third}, 0); err != nil {
		t.Fatal(err)
	}
	testkit.CheckFor(t, 10*time.Second, time.Millisecond, func() error {
		if n := r.Shards(); n != 3 {
			return fmt.Errorf("routing over %d shards", n)
		}
		return nil
	})
	if res := commit("wal/b"); res.ErrorCode != 0 || res.BaseOffset != 1 {
		t.Fatalf("commit after the growth: %+v", res)
	}
	if st, err := third.PartitionState(ctx, tp.ID, p); err != nil || st.HighWatermark != 2 {
		t.Fatalf("the new shard: %+v, %v", st, err)
	}
	testkit.CheckFor(t, 10*time.Second, time.Millisecond, func() error {
		mu.Lock()
		defer mu.Unlock()
		if noticed[p] != 2 {
			return fmt.Errorf("partition %d noticed at %d", p, noticed[p])
		}
		return nil
	})
}
