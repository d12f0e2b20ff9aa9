package coordinator

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/floe-io/floe/coordapi"
)

// TestFollowTopics keeps a shard's copy of the topic metadata level with
// its owner through creates, config changes, new partitions, deletes and a
// topic deleted and created again under its name, with a commit to the
// copy in between: each follow changes what differs, and nothing else.
func TestFollowTopics(t *testing.T) {
	ctx := context.Background()
	owner, shard := newEnv(t), newEnv(t)
	topics := func(e *testEnv) []coordapi.Topic {
		t.Helper()
		ts, err := e.c.Topics(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return ts
	}
	follow := func(step string, wantChanged int) {
		t.Helper()
		n, err := shard.c.FollowTopics(ctx, owner.c)
		if err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		if n != wantChanged {
			t.Fatalf("%s: %d topics changed, want %d", step, n, wantChanged)
		}
		if got, want := topics(shard), topics(owner); !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: the copy has\n%+v\nthe owner\n%+v", step, got, want)
		}
	}

	a := owner.topic("a", 3, map[string]string{"retention.ms": "60000"})
	owner.topic("b", 1, nil)
	follow("first", 2)
	follow("again", 0)
	if rs := shard.commit("wal/1", plain(a.ID, 2, 9)); rs[0].ErrorCode != 0 || rs[0].BaseOffset != 0 {
		t.Fatalf("commit to the copy: %+v", rs[0])
	}

	if err := owner.c.AlterTopicConfigs(ctx, "a", []coordapi.ConfigOp{{Name: "retention.ms", Op: coordapi.OpDelete},
		{Name: "cleanup.policy", Op: coordapi.OpSet, Value: ptr("compact")}}, true, false); err != nil {
		t.Fatal(err)
	}
	if err := owner.c.CreatePartitions(ctx, "a", 5, false); err != nil {
		t.Fatal(err)
	}
	if _, err := owner.c.DeleteTopic(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	owner.topic("c", 2, nil)
	follow("altered, grown, deleted, created", 3)
	if st := shard.state(a.ID, 2); st.HighWatermark != 10 {
		t.Fatalf("the copy's partition lost its batches: %+v", st)
	}

	// Deleted and created again at the owner: the copy under the old id
	// goes, with its batches; the new one starts empty.
	if _, err := owner.c.DeleteTopic(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	a2 := owner.topic("a", 1, nil)
	follow("recreated", 1)
	if st := shard.state(a2.ID, 0); st.HighWatermark != 0 {
		t.Fatalf("the new topic's copy: %+v", st)
	}

	// One topic by id, as a commit naming an unknown topic asks.
	d := owner.topic("d", 1, nil)
	if known, err := shard.c.FollowTopicID(ctx, owner.c, d.ID); err != nil || !known {
		t.Fatalf("follow d by id: known %v, %v", known, err)
	}
	if _, err := shard.c.TopicByID(ctx, d.ID); err != nil {
		t.Fatalf("d after its follow: %v", err)
	}
	if known, err := shard.c.FollowTopicID(ctx, owner.c, coordapi.TopicID{1, 2, 3}); err != nil || known {
		t.Fatalf("follow an id the owner does not have: known %v, %v", known, err)
	}
	follow("level", 0)
}

func ptr[T any](v T) *T { return &v }

// lateOwner is an owner whose listing and notices never show a topic:
// only a lookup by id finds it, as when a commit comes before the notice
// of its topic's creation and before the next follow.
type lateOwner struct{ *Coordinator }

func (lateOwner) Topics(context.Context) ([]coordapi.Topic, error) { return nil, nil }
func (lateOwner) SubscribeTopics(func([]coordapi.TopicNotice)) (cancel func()) {
	return func() {}
}

// TestCommitFollowsUnknownTopic: a shard that has not heard of a topic
// asks its owner for it when a commit names it, and commits.
func TestCommitFollowsUnknownTopic(t *testing.T) {
	owner := newEnv(t, func(o *Options) { o.Shards = 2 }) // shard 0 of the shard's cluster
	shard := newEnv(t, func(o *Options) {
		o.Shards, o.Shard = 2, 1
		o.TopicOwner, o.FollowInterval = lateOwner{owner.c}, time.Hour
	})
	tp := owner.topic("late", 8, nil)
	var p int32
	for coordapi.ShardOf(tp.ID, p, 2) != 1 {
		p++
	}
	if rs := shard.commit("wal/1", plain(tp.ID, p, 4)); rs[0].ErrorCode != 0 || rs[0].BaseOffset != 0 {
		t.Fatalf("commit naming a topic the shard had not heard of: %+v", rs[0])
	}
	if got, err := shard.c.TopicByID(context.Background(), tp.ID); err != nil || got.Partitions != 8 {
		t.Fatalf("the shard's copy: %+v, %v", got, err)
	}
	if rs := shard.commit("wal/2", plain(coordapi.TopicID{7}, 0, 0)); rs[0].ErrorCode != codeUnknownTopicID {
		t.Fatalf("commit naming a topic nobody has: %+v", rs[0])
	}
}

// TestShardLayoutKept: a state opened as one shard is refused as any
// other (it holds that shard's partitions); opened with another count it
// serves by its own (shard 0's growth commits another), but for shard 0
// given a larger count, which grows the cluster and is refused without
// the peers to grow it through; a state from before shards is shard 0 of
// 1.
func TestShardLayoutKept(t *testing.T) {
	owner := newEnv(t, func(o *Options) { o.Shards = 3 }) // the cluster's count: shard 1 is one of it
	for _, tc := range []struct {
		name       string
		first      [2]int // shards, shard at the first open
		then       [2]int
		refused    bool
		needsOwner bool
	}{
		{"same layout", [2]int{3, 1}, [2]int{3, 1}, false, true},
		{"another count", [2]int{3, 1}, [2]int{4, 1}, false, true},
		{"a smaller count", [2]int{3, 1}, [2]int{2, 1}, false, true},
		{"shard 0, a larger count, no peers", [2]int{2, 0}, [2]int{3, 0}, true, false},
		{"shard 0, a smaller count", [2]int{3, 0}, [2]int{2, 0}, true, false},
		{"another shard", [2]int{3, 1}, [2]int{3, 2}, true, true},
		{"no shards, then shards", [2]int{0, 0}, [2]int{2, 0}, true, false},
		{"no shards, then one shard", [2]int{0, 0}, [2]int{1, 0}, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, func(o *Options) {
				o.Shards, o.Shard = tc.first[0], tc.first[1]
				if tc.needsOwner {
					o.TopicOwner, o.FollowInterval = lateOwner{owner.c}, time.Hour
				}
			})
			if err := e.c.Close(); err != nil {
				t.Fatal(err)
			}
			e.c = nil
			opts := e.opts
			opts.Shards, opts.Shard = tc.then[0], tc.then[1]
			c, err := Open(opts)
			if err == nil {
				e.c = c
			}
			if refused := err != nil; refused != tc.refused {
				t.Fatalf("opened as shard %d of %d after shard %d of %d: %v", tc.then[1], tc.then[0], tc.first[1], tc.first[0], err)
			}
			if err != nil {
				return
			}
			if ci, err := c.ClusterInfo(context.Background()); err != nil || ci.Shards != max(tc.first[0], 1) {
				t.Fatalf("serves by %+v (%v), want the state's count %d", ci, err, max(tc.first[0], 1))
			}
		})
	}
}

// TestCommitFollowsNewPartitions: a commit to a partition the owner added
// since the shard's copy was taken follows the topic first.
func TestCommitFollowsNewPartitions(t *testing.T) {
	owner := newEnv(t, func(o *Options) { o.Shards = 2 }) // shard 0 of the shard's cluster
	shard := newEnv(t, func(o *Options) {
		o.Shards, o.Shard = 2, 1
		o.TopicOwner, o.FollowInterval = lateOwner{owner.c}, time.Hour
	})
	tp := owner.topic("grows", 1, nil)
	if _, err := shard.c.FollowTopicID(context.Background(), lateOwner{owner.c}, tp.ID); err != nil {
		t.Fatal(err)
	}
	if err := owner.c.CreatePartitions(context.Background(), "grows", 16, false); err != nil {
		t.Fatal(err)
	}
	p := int32(1)
	for coordapi.ShardOf(tp.ID, p, 2) != 1 {
		p++
	}
	if rs := shard.commit("wal/1", plain(tp.ID, p, 0)); rs[0].ErrorCode != 0 {
		t.Fatalf("commit to partition %d, added at the owner since the copy: %+v", p, rs[0])
	}
}

// TestFollowTrustsOwnerConfigs: a shard copies a topic whose configs its
// own options would refuse (the key index, enabled on shard 0 only): they
// were validated where the topic was made.
func TestFollowTrustsOwnerConfigs(t *testing.T) {
	ctx := context.Background()
	owner := newEnv(t, func(o *Options) { o.KVIndexEnabled = true })
	shard := newEnv(t) // without --kv-index-enabled
	configs := map[string]string{"cleanup.policy": "compact", "kv.index.enabled": "true"}
	owner.topic("indexed", 2, configs)
	if _, err := shard.c.FollowTopics(ctx, owner.c); err != nil {
		t.Fatal(err)
	}
	got, err := shard.c.Topic(ctx, "indexed")
	if err != nil || !reflect.DeepEqual(got.Configs, configs) {
		t.Fatalf("the copy: %+v, %v", got, err)
	}
	if err := owner.c.AlterTopicConfigs(ctx, "indexed", []coordapi.ConfigOp{{Name: "retention.ms", Op: coordapi.OpSet, Value: ptr("1000")}}, true, false); err != nil {
		t.Fatal(err)
	}
	if _, err := shard.c.FollowTopics(ctx, owner.c); err != nil {
		t.Fatalf("follow a config change: %v", err)
	}
}
