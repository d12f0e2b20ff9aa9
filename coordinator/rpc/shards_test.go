package rpc_test

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/coordinator"
	"github.com/floe-io/floe/coordinator/handover"
)

// TestObjectStatesOverNATS asks a served shard what it knows of objects
// and has it forget its garbage ones, as shard 0's collector does over
// NATS: a live object is never forgotten.
func TestObjectStatesOverNATS(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, nil)
	var peer coordinator.ObjectPeer = e.client // the client is a collector's peer
	tp, err := e.client.CreateTopic(ctx, coordapi.CreateTopicRequest{Name: "t", Partitions: 1, ReplicationFactor: -1})
	if err != nil {
		t.Fatal(err)
	}
	commit := func(key string) {
		if _, err := e.client.CommitObject(ctx, &coordapi.CommitRequest{ObjectKey: key, ObjectSize: 100,
			Batches: []coordapi.CommitBatch{{TopicID: tp.ID, ByteLength: 100, MaxTimestamp: 1, ProducerID: -1}}}); err != nil {
			t.Fatal(err)
		}
	}
	commit("wal/gone")
	commit("wal/live")
	if _, err := e.client.DeleteRecords(ctx, tp.ID, 0, 1); err != nil {
		t.Fatal(err)
	}
	keys := []string{"wal/gone", "wal/live", "wal/never"}
	states, err := peer.ObjectStates(ctx, keys)
	if err != nil {
		t.Fatal(err)
	}
	if len(states) != 3 || !states[0].Known || states[0].GarbageSinceMs == 0 || !states[1].Known || states[1].GarbageSinceMs != 0 || states[2].Known {
		t.Fatalf("states %+v: want garbage, live, unknown", states)
	}
	kept, err := peer.ForgetObjects(ctx, keys)
	if err != nil || !reflect.DeepEqual(kept, []string{"wal/live"}) {
		t.Fatalf("kept %v (%v), want the live one", kept, err)
	}
	states, err = peer.ObjectStates(ctx, keys)
	if err != nil {
		t.Fatal(err)
	}
	if want := []coordapi.ObjectState{{}, {Known: true}, {}}; !reflect.DeepEqual(states, want) {
		t.Fatalf("after the forget: %+v, want %+v", states, want)
	}
}

// TestClusterInfoOverNATS asks served coordinators for the cluster's
// layout, as a broker's readiness check does: one without shards, and
// shard 2 of 3 (which follows shard 0's topics, here a coordinator in
// process).
func TestClusterInfoOverNATS(t *testing.T) {
	owner, err := coordinator.Open(coordinator.Options{Dir: t.TempDir(), Shards: 3})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { owner.Close() })
	for _, tc := range []struct {
		name  string
		copts func(*coordinator.Options)
		want  coordapi.ClusterInfo
	}{
		{name: "no shards", copts: func(*coordinator.Options) {}, want: coordapi.ClusterInfo{Shards: 1}},
		{name: "shard 2 of 3", copts: func(o *coordinator.Options) {
			o.Shards, o.Shard, o.TopicOwner = 3, 2, owner
		}, want: coordapi.ClusterInfo{Shards: 3, Shard: 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, nil, tc.copts)
			got, err := e.client.ClusterInfo(context.Background())
			if err != nil || got != tc.want {
				t.Fatalf("ClusterInfo = %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}

// TestMovePartitionOverNATS hands a partition over between two served
// coordinators through their clients, in several chunks: the one it joins
// answers its batches and high watermark as the one it left did, the one
// it left refuses it with NOT_LEADER_OR_FOLLOWER, and an idempotent
// producer's retried batch is a duplicate where it arrived.
func TestMovePartitionOverNATS(t *testing.T) {
	ctx := context.Background()
	from, to := newEnv(t, nil), newEnv(t, nil)
	var peer coordinator.HandoverPeer = from.client // the client is a handover's peer
	tp, err := from.client.CreateTopic(ctx, coordapi.CreateTopicRequest{Name: "t", Partitions: 1, ReplicationFactor: -1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := to.coord.FollowTopic(ctx, tp); err != nil { // the copy, under the same id
		t.Fatal(err)
	}
	batch := func(seq int32) coordapi.CommitBatch {
		return coordapi.CommitBatch{TopicID: tp.ID, ByteLength: 100, MaxTimestamp: 1, ProducerID: 9, ProducerEpoch: 0, BaseSequence: seq}
	}
	for i, key := range []string{"wal/a", "wal/b", "wal/c"} {
		if _, err := from.client.CommitObject(ctx, &coordapi.CommitRequest{ObjectKey: key, ObjectSize: 100,
			Batches: []coordapi.CommitBatch{batch(int32(i))}}); err != nil {
			t.Fatal(err)
		}
	}
	find := coordapi.FindBatchesRequest{TopicID: tp.ID, Offset: 0, MaxBytes: 1 << 20}
	before, err := from.client.FindBatches(ctx, find)
	if err != nil || len(before.Batches) != 3 {
		t.Fatalf("before: %+v, %v", before, err)
	}
	chunks, err := handover.Move(ctx, peer, to.client, tp.ID, 0, 1, 64)
	if err != nil || chunks < 2 {
		t.Fatalf("Move: %d chunks, %v", chunks, err)
	}
	after, err := to.client.FindBatches(ctx, find)
	if err != nil || !reflect.DeepEqual(after, before) {
		t.Fatalf("the shard it joined answers %+v (%v), the one it left answered %+v", after, err, before)
	}
	if _, err := from.client.FindBatches(ctx, find); !errors.Is(err, kerr.NotLeaderForPartition) {
		t.Fatalf("the shard it left answers %v, want NOT_LEADER_OR_FOLLOWER", err)
	}
	resp, err := to.client.CommitObject(ctx, &coordapi.CommitRequest{ObjectKey: "wal/c2", ObjectSize: 100,
		Batches: []coordapi.CommitBatch{batch(2)}})
	if err != nil || resp.Results[0].ErrorCode != 0 || resp.Results[0].BaseOffset != 2 {
		t.Fatalf("the retried batch: %+v, %v; want a duplicate at offset 2", resp, err)
	}
	if chunks, err := handover.Move(ctx, peer, to.client, tp.ID, 0, 1, 0); err != nil || chunks != 0 {
		t.Fatalf("moving it again: %d chunks, %v; want nothing moved", chunks, err)
	}
}

// TestGrowOverNATS grows two served shards to three, shard 0 driving the
// moves and the commits through the shards' clients: every partition's
// record is then served by its shard of three, and every shard answers
// cluster_info with 3.
func TestGrowOverNATS(t *testing.T) {
	ctx := context.Background()
	s0 := newEnv(t, nil, func(o *coordinator.Options) { o.Shards, o.Shard = 2, 0 })
	follower := func(shards, shard int) func(*coordinator.Options) {
		return func(o *coordinator.Options) {
			o.Shards, o.Shard, o.TopicOwner, o.TierInterval = shards, shard, s0.coord, -1
		}
	}
	s1, s2 := newEnv(t, nil, follower(2, 1)), newEnv(t, nil, follower(3, 2))
	envs := []*env{s0, s1, s2}
	const parts = 32 // none of 32 moves from 2 shards to 3 with p < 1e-5
	tp, err := s0.client.CreateTopic(ctx, coordapi.CreateTopicRequest{Name: "t", Partitions: parts, ReplicationFactor: -1})
	if err != nil {
		t.Fatal(err)
	}
	for p := range int32(parts) {
		e := envs[coordapi.ShardOf(tp.ID, p, 2)]
		resp, err := e.client.CommitObject(ctx, &coordapi.CommitRequest{ObjectKey: "wal/a", ObjectSize: 100,
			Batches: []coordapi.CommitBatch{{TopicID: tp.ID, Partition: p, ByteLength: 100, MaxTimestamp: 1, ProducerID: -1}}})
		if err != nil || resp.Results[0].ErrorCode != 0 {
			t.Fatalf("commit to %d: %+v, %v", p, resp, err)
		}
	}
	peers := []coordinator.ShardPeer{s0.client, s1.client, s2.client}
	moved, err := s0.coord.Grow(ctx, 3, peers, 0)
	if err != nil || moved == 0 {
		t.Fatalf("Grow: %d moved, %v", moved, err)
	}
	for i, e := range envs {
		if ci, err := e.client.ClusterInfo(ctx); err != nil || ci.Shards != 3 || ci.MapVersion != 1 {
			t.Fatalf("shard %d: cluster_info %+v, %v", i, ci, err)
		}
	}
	for p := range int32(parts) {
		owner := coordapi.ShardOf(tp.ID, p, 3)
		for i, e := range envs {
			st, err := e.client.PartitionState(ctx, tp.ID, p)
			switch {
			case i == owner && (err != nil || st.HighWatermark != 1):
				t.Fatalf("partition %d on its shard %d: %+v, %v", p, i, st, err)
			case i != owner && !errors.Is(err, kerr.NotLeaderForPartition):
				t.Fatalf("partition %d on shard %d, not its own: %+v, %v", p, i, st, err)
			}
		}
	}
}
