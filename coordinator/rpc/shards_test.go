package rpc_test

import (
	"context"
	"reflect"
	"testing"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/coordinator"
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
