package coordinator

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/objectstore"
)

// TestCollectGarbageAcrossShards: shard 0's collector deletes an object
// only when shard 1 has it neither live nor garbage within the grace, has
// shard 1 forget it first, and deletes nothing while shard 1 cannot be
// asked.
func TestCollectGarbageAcrossShards(t *testing.T) {
	ctx := context.Background()
	const grace = 10 * time.Minute
	var shard1 *testEnv
	shard0 := newEnv(t, func(o *Options) {
		o.GCGrace, o.Shards, o.Shard = grace, 2, 0
		o.ObjectPeers = []ObjectPeer{peerOf(func() *Coordinator { return shard1.c })}
	})
	shard0.clock.Advance(time.Since(shard0.clock.Now())) // the store's clock is real time
	shard1 = newEnv(t, func(o *Options) {
		o.GCGrace, o.Shards, o.Shard, o.Now = grace, 2, 1, shard0.clock.Now
		o.TopicOwner, o.FollowInterval = shard0.c, time.Hour
	})
	tp := shard0.topic("t", 16, nil)
	if _, err := shard1.c.FollowTopics(ctx, shard0.c); err != nil {
		t.Fatal(err)
	}
	on := func(s int) int32 {
		for p := range int32(16) {
			if coordapi.ShardOf(tp.ID, p, 2) == s {
				return p
			}
		}
		t.Fatalf("no partition on shard %d", s)
		return -1
	}
	p0, p1 := on(0), on(1)

	store := objectstore.NewMemory()
	for _, k := range []string{"wal/both", "wal/one", "wal/zero", "wal/orphan"} {
		if err := store.Put(ctx, k, make([]byte, 3*batchLen)); err != nil {
			t.Fatal(err)
		}
	}
	// wal/both holds batches of both shards' partitions, wal/one of shard
	// 1's only, wal/zero of shard 0's only; wal/orphan was never committed.
	shard0.commit("wal/both", plain(tp.ID, p0, 0))
	shard1.commit("wal/both", plain(tp.ID, p1, 0))
	shard1.commit("wal/one", plain(tp.ID, p1, 0))
	shard0.commit("wal/zero", plain(tp.ID, p0, 0))
	stored := func() []string {
		objs, err := store.List(ctx, "")
		if err != nil {
			t.Fatal(err)
		}
		var keys []string
		for _, o := range objs {
			keys = append(keys, o.Key)
		}
		slices.Sort(keys)
		return keys
	}
	collect := func(step string, want ...string) {
		t.Helper()
		if _, err := shard0.c.CollectGarbage(ctx, store, ""); err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		slices.Sort(want)
		if got := stored(); !slices.Equal(got, want) {
			t.Fatalf("%s: the store holds %v, want %v", step, got, want)
		}
	}
	shard0.clock.Advance(grace + time.Minute)
	collect("only the orphan", "wal/both", "wal/one", "wal/zero")

	// Shard 1's records go (both its batches): wal/one is garbage there
	// alone, kept within the grace, then forgotten by shard 1 and deleted;
	// wal/both, garbage on shard 1 but live on shard 0, stays.
	if _, err := shard1.c.DeleteRecords(ctx, tp.ID, p1, 2); err != nil {
		t.Fatal(err)
	}
	collect("shard 1's garbage within its grace", "wal/both", "wal/one", "wal/zero")
	shard0.clock.Advance(grace + time.Minute)
	collect("shard 1's garbage past its grace", "wal/both", "wal/zero")
	st, err := shard1.c.ObjectStates(ctx, []string{"wal/one", "wal/both", "wal/zero"})
	if err != nil || st[0].Known || !st[1].Known || st[1].GarbageSinceMs == 0 || st[2].Known {
		t.Fatalf("shard 1's view after the round: %+v, %v", st, err)
	}

	// Shard 0's records go too: both objects are deleted, and shard 1
	// forgets wal/both.
	if _, err := shard0.c.DeleteRecords(ctx, tp.ID, p0, 2); err != nil {
		t.Fatal(err)
	}
	shard0.clock.Advance(grace + time.Minute)
	collect("garbage on both shards past the grace")
	if st, err := shard1.c.ObjectStates(ctx, []string{"wal/both"}); err != nil || st[0].Known {
		t.Fatalf("shard 1 still knows wal/both: %+v, %v", st, err)
	}

	// A shard that cannot be asked stops the round.
	if err := store.Put(ctx, "wal/late", make([]byte, batchLen)); err != nil {
		t.Fatal(err)
	}
	shard0.clock.Advance(grace + time.Minute)
	if err := shard1.c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := shard0.c.CollectGarbage(ctx, store, ""); err == nil {
		t.Fatal("a round with shard 1 closed succeeded")
	}
	if got := stored(); !slices.Equal(got, []string{"wal/late"}) {
		t.Fatalf("with shard 1 closed the store holds %v", got)
	}
}

// peerOf is an ObjectPeer calling the coordinator get returns, so that a
// shard opened after shard 0 can be its peer.
type peerOf func() *Coordinator

func (p peerOf) ObjectStates(ctx context.Context, keys []string) ([]coordapi.ObjectState, error) {
	return p().ObjectStates(ctx, keys)
}

func (p peerOf) ForgetObjects(ctx context.Context, keys []string) ([]string, error) {
	return p().ForgetObjects(ctx, keys)
}

// revivedPeer is a shard that answers every object garbage since long ago
// but keeps them all when asked to forget them: a retried commit revived
// them between the two calls.
type revivedPeer struct{}

func (revivedPeer) ObjectStates(_ context.Context, keys []string) ([]coordapi.ObjectState, error) {
	out := make([]coordapi.ObjectState, len(keys))
	for i := range out {
		out[i] = coordapi.ObjectState{Known: true, GarbageSinceMs: 1}
	}
	return out, nil
}

func (revivedPeer) ForgetObjects(_ context.Context, keys []string) ([]string, error) {
	return keys, nil
}

// TestCollectKeepsRevived: an object a shard keeps when asked to forget it
// (live there again) is not deleted.
func TestCollectKeepsRevived(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, func(o *Options) {
		o.GCGrace, o.Shards, o.Shard, o.ObjectPeers = time.Minute, 2, 0, []ObjectPeer{revivedPeer{}}
	})
	e.clock.Advance(time.Since(e.clock.Now()))
	store := objectstore.NewMemory()
	if err := store.Put(ctx, "wal/revived", []byte("x")); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(2 * time.Minute)
	st, err := e.c.CollectGarbage(ctx, store, "")
	if err != nil {
		t.Fatal(err)
	}
	if objs, _ := store.List(ctx, "wal/"); len(objs) != 1 || st.Orphans != 0 {
		t.Fatalf("collected %+v, the store holds %v: the revived object went", st, objs)
	}
}

// livePeer is a shard that has every object live, and counts the keys it
// is asked about.
type livePeer struct{ asked map[string]int }

func (p livePeer) ObjectStates(_ context.Context, keys []string) ([]coordapi.ObjectState, error) {
	out := make([]coordapi.ObjectState, len(keys))
	for i, k := range keys {
		p.asked[k]++
		out[i] = coordapi.ObjectState{Known: true}
	}
	return out, nil
}

func (livePeer) ForgetObjects(_ context.Context, keys []string) ([]string, error) { return keys, nil }

// TestCollectAsksPeersOncePerGrace: an object another shard has live
// cannot be allowed there before a grace has passed, so the collector does
// not ask about it again before then, and never deletes it meanwhile.
func TestCollectAsksPeersOncePerGrace(t *testing.T) {
	ctx := context.Background()
	const grace = 10 * time.Minute
	peer := livePeer{asked: map[string]int{}}
	e := newEnv(t, func(o *Options) {
		o.GCGrace, o.Shards, o.Shard, o.ObjectPeers = grace, 2, 0, []ObjectPeer{peer}
	})
	e.clock.Advance(time.Since(e.clock.Now())) // the store's clock is real time
	store := objectstore.NewMemory()
	if err := store.Put(ctx, "wal/elsewhere", []byte("x")); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(grace + time.Minute)
	for _, tc := range []struct {
		advance time.Duration
		asked   int // how many times so far
	}{
		{0, 1},
		{time.Minute, 1},
		{grace - 2*time.Minute, 1},
		{time.Minute, 2}, // a grace after the first ask
		{time.Minute, 2},
		{grace, 3},
	} {
		e.clock.Advance(tc.advance)
		if _, err := e.c.CollectGarbage(ctx, store, ""); err != nil {
			t.Fatal(err)
		}
		if objs, _ := store.List(ctx, "wal/"); len(objs) != 1 {
			t.Fatalf("the object live on shard 1 was deleted")
		}
		if got := peer.asked["wal/elsewhere"]; got != tc.asked {
			t.Fatalf("after %s more: shard 1 asked %d times, want %d", tc.advance, got, tc.asked)
		}
	}
}
