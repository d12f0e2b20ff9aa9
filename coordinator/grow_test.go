package coordinator

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/internal/testkit"
	"github.com/floe-io/floe/objectstore"
)

// TestGrowShards grows a cluster of 2 shards to 3 in process: every
// partition is then served by the shard jump hash gives it of 3, with
// its offsets, its batches and its producers' dedupe; the others refuse
// it; a transaction open across the growth commits with its marker on
// the new shard; every shard serves by 3 at map version 1, also after a
// restart; and growing again to 3 does nothing.
func TestGrowShards(t *testing.T) {
	ctx := context.Background()
	var envs [3]*testEnv
	envs[0] = newEnv(t, func(o *Options) {
		o.Shards, o.Shard, o.Markers, o.TxnCheckInterval, o.TierInterval = 2, 0, objectstore.NewMemory(), -1, -1
		o.ShardPeers = []MarkerPeer{markerPeerOf(func() *Coordinator { return envs[1].c }), markerPeerOf(func() *Coordinator { return envs[2].c })}
	})
	follower := func(shards, shard int) func(*Options) {
		return func(o *Options) {
			o.Shards, o.Shard, o.TxnCheckInterval, o.TierInterval = shards, shard, -1, -1
			o.TopicOwner, o.TxnOwner, o.FollowInterval, o.Now = envs[0].c, envs[0].c, time.Hour, envs[0].clock.Now
		}
	}
	envs[1] = newEnv(t, follower(2, 1))
	envs[2] = newEnv(t, follower(3, 2))
	const parts = 24
	tp := envs[0].topic("grow", parts, nil)
	for _, e := range envs[1:] {
		if _, err := e.c.FollowTopics(ctx, envs[0].c); err != nil {
			t.Fatal(err)
		}
	}
	idem := func(p int32, seq int32) coordapi.CommitBatch {
		return coordapi.CommitBatch{TopicID: tp.ID, Partition: p, ProducerID: 900, ProducerEpoch: 0, BaseSequence: seq, MaxTimestamp: 1000}
	}
	var txnPart int32 = -1
	for p := range int32(parts) {
		e := envs[coordapi.ShardOf(tp.ID, p, 2)]
		e.commit(fmt.Sprintf("wal/%d", p), idem(p, 0), idem(p, 1))
		if txnPart < 0 && coordapi.ShardOf(tp.ID, p, 2) != coordapi.ShardOf(tp.ID, p, 3) {
			txnPart = p
		}
	}
	if txnPart < 0 {
		t.Fatal("no partition moves")
	}
	prod := envs[0].initTxn("etl", 60000)
	for _, c := range envs[0].addParts("etl", prod, coordapi.TopicPartition{TopicID: tp.ID, Partition: txnPart}) {
		wantCode(t, "add partition", c, nil)
	}
	src := envs[coordapi.ShardOf(tp.ID, txnPart, 2)]
	wantCode(t, "transactional batch", src.commit("wal/txn", txnBatch("etl", tp.ID, txnPart, 0, prod.ProducerID, prod.ProducerEpoch, 0))[0].ErrorCode, nil)

	// The new shard, started with --shards 3 before the growth, serves
	// by the cluster's 2 until then: a commit routed by 3 too early is
	// refused, not written where the growth will import.
	if ci, err := envs[2].c.ClusterInfo(ctx); err != nil || ci.Shards != 2 || ci.Shard != 2 {
		t.Fatalf("the new shard before the growth: %+v, %v", ci, err)
	}
	wantCode(t, "a commit on the new shard before the growth",
		envs[2].commit("wal/early", idem(txnPart, 9))[0].ErrorCode, kerr.NotLeaderForPartition)

	// A shard holding a partition 3 shards would take from it refuses the
	// new map until the partition is moved.
	if err := envs[1].c.CommitShards(ctx, 3, 1); !errors.Is(err, ErrUnmoved) {
		t.Fatalf("CommitShards before the moves: %v, want ErrUnmoved", err)
	}
	peers := []ShardPeer{envs[0].c, envs[1].c, envs[2].c}
	moved, err := envs[0].c.Grow(ctx, 3, peers, 64)
	if err != nil {
		t.Fatal(err)
	}
	want := 0
	for p := range int32(parts) {
		if coordapi.ShardOf(tp.ID, p, 2) != coordapi.ShardOf(tp.ID, p, 3) {
			want++
		}
	}
	if moved != want || moved == 0 {
		t.Fatalf("moved %d partitions, want %d", moved, want)
	}

	check := func(step string) {
		t.Helper()
		for i, e := range envs {
			ci, err := e.c.ClusterInfo(ctx)
			if err != nil || ci.Shards != 3 || e.c.MapVersion() != 1 {
				t.Fatalf("%s: shard %d serves by %+v at map version %d (%v)", step, i, ci, e.c.MapVersion(), err)
			}
		}
		for p := range int32(parts) {
			owner := coordapi.ShardOf(tp.ID, p, 3)
			for i, e := range envs {
				st, err := e.c.PartitionState(ctx, tp.ID, p)
				if i != owner {
					wantKerr(t, err, kerr.NotLeaderForPartition)
					continue
				}
				hwm := int64(2)
				if p == txnPart {
					hwm = 3
				}
				if err != nil || st.HighWatermark != hwm {
					t.Fatalf("%s: partition %d on its shard %d: %+v, %v", step, p, i, st, err)
				}
			}
		}
	}
	check("after the growth")

	// Each producer's retried batch is a duplicate on its partition's shard.
	for p := range int32(parts) {
		e := envs[coordapi.ShardOf(tp.ID, p, 3)]
		if r := e.commit(fmt.Sprintf("wal/%d-again", p), idem(p, 1)); r[0].ErrorCode != 0 || r[0].BaseOffset != 1 {
			t.Fatalf("partition %d: the retried batch answered %s, want the duplicate at 1", p, baseOffsets(r))
		}
	}
	// The transaction's marker goes to the partition's new shard.
	if err := envs[0].endTxn("etl", prod, true); err != nil {
		t.Fatalf("EndTxn after the growth: %v", err)
	}
	dst := envs[coordapi.ShardOf(tp.ID, txnPart, 3)]
	if st := dst.state(tp.ID, txnPart); st.LastStableOffset != 4 || st.HighWatermark != 4 {
		t.Fatalf("the transaction's partition after its commit: %+v", st)
	}

	// A restart keeps the map (the shards are then started with 3: the
	// stored count is checked against --shards as before).
	for _, e := range envs {
		e.opts.Shards = 3
		e.reopen()
	}
	peers = []ShardPeer{envs[0].c, envs[1].c, envs[2].c}
	if st := dst.state(tp.ID, txnPart); st.HighWatermark != 4 {
		t.Fatalf("the transaction's partition after the restart: %+v", st)
	}
	if moved, err := envs[0].c.Grow(ctx, 3, peers, 0); err != nil || moved != 0 {
		t.Fatalf("growing to 3 again: %d moved, %v", moved, err)
	}
	for i, e := range envs {
		ci, err := e.c.ClusterInfo(ctx)
		if err != nil || ci.Shards != 3 || e.c.MapVersion() != 1 {
			t.Fatalf("after the restart: shard %d serves by %+v at map version %d (%v)", i, ci, e.c.MapVersion(), err)
		}
	}
}

// hookPeer runs before once, before the first CommitShards it is asked.
type hookPeer struct {
	ShardPeer
	before func()
}

func (h *hookPeer) CommitShards(ctx context.Context, shards int, version uint64) error {
	if h.before != nil {
		h.before()
		h.before = nil
	}
	return h.ShardPeer.CommitShards(ctx, shards, version)
}

// TestGrowMovesLateWrites: a partition first written after Grow listed
// the moves (here, of a topic created meanwhile) makes its shard refuse
// the new map; Grow moves it in a second pass and commits, and the
// partition's record is served by its new shard.
func TestGrowMovesLateWrites(t *testing.T) {
	ctx := context.Background()
	h := newHandoverShards(t)
	var late coordapi.Topic
	var p int32 = -1
	s1 := &hookPeer{ShardPeer: h.s1.c, before: func() {
		late = h.s0.topic("late", 64, nil)
		if _, err := h.s1.c.FollowTopics(ctx, h.s0.c); err != nil {
			t.Fatal(err)
		}
		for i := range int32(64) {
			if coordapi.ShardOf(late.ID, i, 2) == 1 && coordapi.ShardOf(late.ID, i, 3) == 2 {
				p = i
				break
			}
		}
		if r := h.s1.commit("wal/late", plain(late.ID, p, 0)); r[0].ErrorCode != 0 {
			t.Fatalf("late commit: %s", baseOffsets(r))
		}
	}}
	moved, err := h.s0.c.Grow(ctx, 3, []ShardPeer{h.s0.c, s1, h.s2.c}, 0)
	want := 0 // the late topic's partitions that change shard, moved in the second pass
	for i := range int32(64) {
		if coordapi.ShardOf(late.ID, i, 2) != coordapi.ShardOf(late.ID, i, 3) {
			want++
		}
	}
	if err != nil || moved != want {
		t.Fatalf("Grow: %d moved, %v; want the late topic's %d", moved, err, want)
	}
	if st := h.s2.state(late.ID, p); st.HighWatermark != 1 {
		t.Fatalf("the late partition on its new shard: %+v", st)
	}
	if _, err := h.s1.c.PartitionState(ctx, late.ID, p); !errors.Is(err, kerr.NotLeaderForPartition) {
		t.Fatalf("the late partition on its old shard: %v", err)
	}
}

// TestGrowAtOpen: shard 0 opened with a larger count than its state's
// grows the cluster in the background through its GrowPeers, and every
// shard then serves by the larger count.
func TestGrowAtOpen(t *testing.T) {
	ctx := context.Background()
	h := newHandoverShards(t)
	tp := h.s0.topic("t", 16, nil)
	for _, e := range []*testEnv{h.s1, h.s2} { // their owner is shard 0 before its restart
		if _, err := e.c.FollowTopics(ctx, h.s0.c); err != nil {
			t.Fatal(err)
		}
	}
	envs := []*testEnv{h.s0, h.s1}
	for p := range int32(16) {
		envs[coordapi.ShardOf(tp.ID, p, 2)].commit(fmt.Sprintf("wal/%d", p), plain(tp.ID, p, 0))
	}
	h.s0.opts.Shards = 3
	h.s0.opts.GrowPeers = []ShardPeer{h.s1.c, h.s2.c}
	h.s0.reopen()
	testkit.CheckFor(t, 10*time.Second, time.Millisecond, func() error {
		for i, e := range []*testEnv{h.s0, h.s1, h.s2} {
			if ci, err := e.c.ClusterInfo(ctx); err != nil || ci.Shards != 3 {
				return fmt.Errorf("shard %d serves by %+v (%v)", i, ci, err)
			}
		}
		return nil
	})
	for p := range int32(16) {
		e := []*testEnv{h.s0, h.s1, h.s2}[coordapi.ShardOf(tp.ID, p, 3)]
		if st := e.state(tp.ID, p); st.HighWatermark != 1 {
			t.Fatalf("partition %d on its shard of 3: %+v", p, st)
		}
	}
}

// downPeer is a shard that does not answer.
type downPeer struct{ ShardPeer }

func (downPeer) ClusterInfo(context.Context) (coordapi.ClusterInfo, error) {
	return coordapi.ClusterInfo{}, errors.New("no responders")
}

// TestGrowWaitsForEveryShard: with the new shard not answering, Grow
// fences nothing (the partitions it would move stay writable on their
// shards) and fails; with peers in the wrong order it fails too.
func TestGrowWaitsForEveryShard(t *testing.T) {
	ctx := context.Background()
	h := newHandoverShards(t)
	tp := h.s0.topic("t", 16, nil)
	if _, err := h.s1.c.FollowTopics(ctx, h.s0.c); err != nil {
		t.Fatal(err)
	}
	if _, err := h.s0.c.Grow(ctx, 3, []ShardPeer{h.s0.c, h.s1.c, downPeer{h.s2.c}}, 0); err == nil {
		t.Fatal("Grow with the new shard down succeeded")
	}
	if _, err := h.s0.c.Grow(ctx, 3, []ShardPeer{h.s0.c, h.s2.c, h.s1.c}, 0); err == nil {
		t.Fatal("Grow with shards 1 and 2 swapped succeeded")
	}
	envs := []*testEnv{h.s0, h.s1}
	for p := range int32(16) {
		if r := envs[coordapi.ShardOf(tp.ID, p, 2)].commit(fmt.Sprintf("wal/%d", p), plain(tp.ID, p, 0)); r[0].ErrorCode != 0 {
			t.Fatalf("partition %d after the failed growths: %s", p, baseOffsets(r))
		}
	}
}

// TestGrowFromOneShard grows a coordinator without shards to two: the new
// shard, joining a cluster of one, serves nothing until the growth (not
// every partition, as a count of one would say), then its own.
func TestGrowFromOneShard(t *testing.T) {
	ctx := context.Background()
	var s1 *testEnv
	s0 := newEnv(t, func(o *Options) { o.TxnCheckInterval, o.TierInterval = -1, -1 })
	s1 = newEnv(t, func(o *Options) {
		o.Shards, o.Shard, o.TxnCheckInterval, o.TierInterval = 2, 1, -1, -1
		o.TopicOwner, o.FollowInterval, o.Now = s0.c, time.Hour, s0.clock.Now
	})
	tp := s0.topic("t", 8, nil)
	if _, err := s1.c.FollowTopics(ctx, s0.c); err != nil {
		t.Fatal(err)
	}
	for p := range int32(8) {
		s0.commit(fmt.Sprintf("wal/%d", p), plain(tp.ID, p, 0))
		if _, err := s1.c.PartitionState(ctx, tp.ID, p); !errors.Is(err, kerr.NotLeaderForPartition) {
			t.Fatalf("the new shard serves partition %d before the growth: %v", p, err)
		}
	}
	s0.opts.Shards, s0.opts.GrowPeers = 2, []ShardPeer{s1.c}
	s0.reopen()
	testkit.CheckFor(t, 10*time.Second, time.Millisecond, func() error {
		if ci, err := s0.c.ClusterInfo(ctx); err != nil || ci.Shards != 2 {
			return fmt.Errorf("shard 0 serves by %+v (%v)", ci, err)
		}
		return nil
	})
	for p := range int32(8) {
		e := []*testEnv{s0, s1}[coordapi.ShardOf(tp.ID, p, 2)]
		if st := e.state(tp.ID, p); st.HighWatermark != 1 {
			t.Fatalf("partition %d on its shard of 2: %+v", p, st)
		}
	}
}
