package handover

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/floe-io/floe/coordapi"
)

// Opening is what a shard knows of its layout at Open: which shard of
// how many it was started as, and what its state holds.
type Opening struct {
	// Shards and Shard are --shards (0: 1) and --shard.
	Shards, Shard int
	// Stored and StoredShard are the state's layout, both 0 when never
	// written; Fresh is set for a state this Open created.
	Stored, StoredShard uint64
	Fresh               bool
	// OwnerShards asks shard 0 the count it serves by (ok false: it
	// cannot be asked); only a new shard above 0 asks.
	OwnerShards func() (n int, ok bool)
	// GrowPeers is how many peers Options.GrowPeers names.
	GrowPeers int
}

// Layout is what a shard's Open makes of its Opening.
type Layout struct {
	// Write is set when the state holds no layout: Open writes Shards and
	// Shard, before it returns OpenLayout's error, if any.
	Write bool
	// Shards is the count the shard serves by, Shard its index.
	Shards, Shard uint64
	// GrowTo is, on shard 0, the count it grows the cluster to (0: none).
	GrowTo int
	// Behind is set on a shard above 0 started with another count than
	// its state's: it serves by the state's until shard 0 commits another.
	Behind bool
}

// OpenLayout records which shard of how many a state is, at its first
// open, and refuses to open it as another shard. The count it serves by
// is the stored one: its partitions were placed by it (coordapi.ShardOf),
// and it changes only when a growth commits another. Shard 0 started with
// a larger --shards grows the cluster to it (GrowTo), through its
// GrowPeers, and is refused a smaller one (its peers would leave shards
// out); any other shard started with another count serves by the stored
// one until shard 0's growth commits it (Behind). A state from before
// shards is shard 0 of 1.
func OpenLayout(o Opening) (Layout, error) {
	want := [2]uint64{uint64(max(o.Shards, 1)), uint64(o.Shard)}
	l := Layout{Shards: o.Stored, Shard: o.StoredShard}
	if l.Shards == 0 { // never written
		have := want
		switch {
		case !o.Fresh:
			have = [2]uint64{1, 0}
		case o.Shard > 0:
			// A shard joining a cluster that has not grown to it yet
			// serves by the cluster's count, which gives it nothing,
			// until shard 0's growth commits the new one: a broker that
			// routes by the new count too early is refused, rather than
			// writing where the growth will import.
			if n, ok := o.OwnerShards(); ok && n <= o.Shard {
				have[0] = uint64(n)
			}
		}
		if have[1] != want[1] {
			return Layout{}, fmt.Errorf("coordinator: this state is of a coordinator without shards, which is shard 0, not shard %d (--shard)", want[1])
		}
		l = Layout{Write: true, Shards: have[0], Shard: have[1]}
	}
	if l.Shard != want[1] {
		return l, fmt.Errorf("coordinator: this state is shard %d of %d, not shard %d (--shard): it holds another shard's partitions",
			l.Shard, l.Shards, want[1])
	}
	switch {
	case want[0] == l.Shards:
	case want[0] > l.Shards && o.Shard == 0:
		if o.GrowPeers != int(want[0])-1 {
			return l, fmt.Errorf("coordinator: growing the cluster from %d to %d shards (--shards) needs the %d other shards as peers (Options.GrowPeers), not %d",
				l.Shards, want[0], want[0]-1, o.GrowPeers)
		}
		l.GrowTo = int(want[0])
	case o.Shard == 0:
		// Its collector and its transaction markers reach the shards its
		// peers name, which --shards counts: fewer than the state's
		// would delete objects only a shard left out refers to.
		return l, fmt.Errorf("coordinator: this state is shard 0 of %d (a growth committed it): start it with --shards %d, not %d, so that it reaches every shard",
			l.Shards, l.Shards, want[0])
	default:
		l.Behind = true
	}
	return l, nil
}

// AskShards asks owner (shard 0, when it answers ClusterInfo) the count
// it serves by, within timeout; ok is false when it cannot be asked or
// fails to answer (logged).
func AskShards(owner any, timeout time.Duration, log *slog.Logger) (n int, ok bool) {
	o, can := owner.(interface {
		ClusterInfo(ctx context.Context) (coordapi.ClusterInfo, error)
	})
	if !can {
		return 0, false
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	ci, err := o.ClusterInfo(ctx)
	if err != nil {
		log.Warn("ask shard 0 the cluster's shard count; serving by --shards", "err", err)
		return 0, false
	}
	return ci.Shards, true
}
