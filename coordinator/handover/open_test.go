package handover

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/internal/testkit"
)

// TestOpenLayout checks what OpenLayout makes of a shard's flags and
// stored layout: the layout written at a first open (a state from
// before shards is shard 0 of 1; a new shard above 0 serves by shard 0's
// smaller count), a growth asked of shard 0 with the peers it needs, a
// shard above 0 behind shard 0, and the refusals (another shard's state,
// shard 0 with fewer shards than its state, a growth without its peers).
func TestOpenLayout(t *testing.T) {
	owner := func(n int, ok bool) func() (int, bool) { return func() (int, bool) { return n, ok } }
	noOwner := func() (int, bool) { panic("OwnerShards asked") }
	for _, tc := range []struct {
		name string
		o    Opening
		want Layout
		err  string
	}{
		{name: "fresh, no flags", o: Opening{Fresh: true, OwnerShards: noOwner},
			want: Layout{Write: true, Shards: 1, Shard: 0}},
		{name: "fresh shard 0 of 3", o: Opening{Shards: 3, Fresh: true, OwnerShards: noOwner, GrowPeers: 2},
			want: Layout{Write: true, Shards: 3, Shard: 0}},
		{name: "fresh shard 2 of 3, owner serves 3", o: Opening{Shards: 3, Shard: 2, Fresh: true, OwnerShards: owner(3, true)},
			want: Layout{Write: true, Shards: 3, Shard: 2}},
		{name: "fresh shard 2 of 3, owner serves 2", o: Opening{Shards: 3, Shard: 2, Fresh: true, OwnerShards: owner(2, true)},
			want: Layout{Write: true, Shards: 2, Shard: 2, Behind: true}},
		{name: "fresh shard 2 of 3, owner serves 1", o: Opening{Shards: 3, Shard: 2, Fresh: true, OwnerShards: owner(1, true)},
			want: Layout{Write: true, Shards: 1, Shard: 2, Behind: true}},
		{name: "fresh shard 2 of 4, owner serves 3", o: Opening{Shards: 4, Shard: 2, Fresh: true, OwnerShards: owner(3, true)},
			want: Layout{Write: true, Shards: 4, Shard: 2}},
		{name: "fresh shard 2 of 3, owner not asked", o: Opening{Shards: 3, Shard: 2, Fresh: true, OwnerShards: owner(1, false)},
			want: Layout{Write: true, Shards: 3, Shard: 2}},
		{name: "state from before shards", o: Opening{OwnerShards: noOwner},
			want: Layout{Write: true, Shards: 1, Shard: 0}},
		{name: "state from before shards, grown to 3", o: Opening{Shards: 3, OwnerShards: noOwner, GrowPeers: 2},
			want: Layout{Write: true, Shards: 1, Shard: 0, GrowTo: 3}},
		{name: "state from before shards opened as shard 1", o: Opening{Shards: 2, Shard: 1, OwnerShards: noOwner},
			err: "coordinator without shards"},
		{name: "stored, same", o: Opening{Shards: 3, Shard: 1, Stored: 3, StoredShard: 1, OwnerShards: noOwner},
			want: Layout{Shards: 3, Shard: 1}},
		{name: "stored, flags unset", o: Opening{Stored: 1, StoredShard: 0, OwnerShards: noOwner},
			want: Layout{Shards: 1, Shard: 0}},
		{name: "stored, another shard", o: Opening{Shards: 3, Shard: 2, Stored: 3, StoredShard: 1, OwnerShards: noOwner},
			want: Layout{Shards: 3, Shard: 1}, err: "this state is shard 1 of 3, not shard 2"},
		{name: "shard 0 grows", o: Opening{Shards: 4, Stored: 2, OwnerShards: noOwner, GrowPeers: 3},
			want: Layout{Shards: 2, Shard: 0, GrowTo: 4}},
		{name: "shard 0 grows without its peers", o: Opening{Shards: 4, Stored: 2, OwnerShards: noOwner, GrowPeers: 1},
			want: Layout{Shards: 2, Shard: 0}, err: "needs the 3 other shards"},
		{name: "shard 0 grows with too many peers", o: Opening{Shards: 4, Stored: 2, OwnerShards: noOwner, GrowPeers: 4},
			want: Layout{Shards: 2, Shard: 0}, err: "needs the 3 other shards"},
		{name: "shard 0 with fewer shards", o: Opening{Shards: 2, Stored: 3, OwnerShards: noOwner, GrowPeers: 1},
			want: Layout{Shards: 3, Shard: 0}, err: "start it with --shards 3, not 2"},
		{name: "shard 1 behind", o: Opening{Shards: 3, Shard: 1, Stored: 2, StoredShard: 1, OwnerShards: noOwner},
			want: Layout{Shards: 2, Shard: 1, Behind: true}},
		{name: "shard 1 with fewer shards", o: Opening{Shards: 2, Shard: 1, Stored: 3, StoredShard: 1, OwnerShards: noOwner},
			want: Layout{Shards: 3, Shard: 1, Behind: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := OpenLayout(tc.o)
			switch {
			case tc.err == "" && err != nil:
				t.Fatalf("err %v", err)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Fatalf("err %v, want %q", err, tc.err)
			}
			if got != tc.want {
				t.Errorf("layout %+v, want %+v", got, tc.want)
			}
		})
	}
}

// clusterInfoer answers ClusterInfo with info and err, within its
// context's deadline.
type clusterInfoer struct {
	info     coordapi.ClusterInfo
	err      error
	deadline bool
}

func (c *clusterInfoer) ClusterInfo(ctx context.Context) (coordapi.ClusterInfo, error) {
	_, c.deadline = ctx.Deadline()
	return c.info, c.err
}

// TestAskShards checks AskShards' answers: the owner's count, or not ok
// when the owner cannot be asked or fails, and that it asks within a
// deadline.
func TestAskShards(t *testing.T) {
	ok := &clusterInfoer{info: coordapi.ClusterInfo{Shards: 3}}
	if n, good := AskShards(ok, time.Minute, testkit.Logger()); n != 3 || !good {
		t.Errorf("answered %d, %v; want 3, true", n, good)
	}
	if !ok.deadline {
		t.Error("asked with no deadline")
	}
	if n, good := AskShards(&clusterInfoer{err: errors.New("boom"), info: coordapi.ClusterInfo{Shards: 3}}, time.Minute, testkit.Logger()); good {
		t.Errorf("a failing owner answered %d, true", n)
	}
	if n, good := AskShards(struct{}{}, time.Minute, testkit.Logger()); good {
		t.Errorf("an owner with no ClusterInfo answered %d, true", n)
	}
}
