package handover

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/floe-io/floe/coordapi"
)

// ShardPeer is a shard as Grow drives it: *rpc.Client, or a
// *coordinator.Coordinator.
type ShardPeer interface {
	Peer
	CommitShards(ctx context.Context, shards int, version uint64) error
	ClusterInfo(ctx context.Context) (coordapi.ClusterInfo, error)
}

// maxGrowPasses bounds Grow's passes of moves and commits: each pass
// after the first moves only partitions written for the first time while
// the one before ran.
const maxGrowPasses = 5

// Growth is one growth of the cluster, as shard Shard (only shard 0 grows
// the cluster) sees it.
type Growth struct {
	// Shard is the growing shard's index.
	Shard int
	// From is the shard count it serves by; To the count it grows to.
	From, To int
	// Version is the new map's version: one above the current.
	Version uint64
	// Peers are the shards of the grown cluster, Peers[i] shard i
	// (Peers[0] the growing one, or its client).
	Peers []ShardPeer
	// ChunkBytes is the handovers' chunk size (0: DefaultChunkBytes).
	ChunkBytes int
	// Topics lists the cluster's topics (shard 0's, which owns them).
	Topics func(ctx context.Context) ([]coordapi.Topic, error)
	// Log takes the passes' outcomes.
	Log *slog.Logger
}

type partKey struct {
	id        coordapi.TopicID
	partition int32
}

// Grow moves each partition of every topic whose shard changes from
// g.From to g.To shards, then commits the new count and map version on
// every shard, shard 0 last. It returns how many partitions it moved. A
// count not above g.From does nothing. On an error nothing acknowledged
// is lost (a partition half moved stays fenced on its old shard, refused
// by both) and Grow is to be called again with the same arguments:
// partitions moved already are not moved again.
func Grow(ctx context.Context, g Growth) (moved int, err error) {
	shards := g.To
	switch {
	case g.Shard != 0:
		return 0, fmt.Errorf("grow: shard %d: only shard 0 grows the cluster", g.Shard)
	case shards <= g.From:
		return 0, nil
	case len(g.Peers) != shards:
		return 0, fmt.Errorf("grow to %d shards: %d peers", shards, len(g.Peers))
	}
	from, version, peers := g.From, g.Version, g.Peers
	// Every shard answers, as the shard it is meant to be, before any
	// partition is fenced: a move towards a shard that is not up would
	// leave its partition refused by both until it is.
	for i, p := range peers {
		ci, err := p.ClusterInfo(ctx)
		switch {
		case err != nil:
			return 0, fmt.Errorf("grow to %d shards: shard %d: %w", shards, i, err)
		case ci.Shard != i:
			return 0, fmt.Errorf("grow to %d shards: peer %d answers as shard %d", shards, i, ci.Shard)
		}
	}
	done := map[partKey]bool{}
	for pass := 1; ; pass++ {
		topics, err := g.Topics(ctx)
		if err != nil {
			return moved, fmt.Errorf("grow: %w", err)
		}
		for _, t := range topics {
			if t.View != nil {
				continue // a view's data is its base topic's
			}
			for p := range int32(t.Partitions) {
				pk := partKey{t.ID, p}
				src, dst := coordapi.ShardOf(t.ID, p, from), coordapi.ShardOf(t.ID, p, shards)
				if src == dst || done[pk] {
					continue
				}
				if _, err := Move(ctx, peers[src], peers[dst], t.ID, p, version, g.ChunkBytes); err != nil {
					return moved, fmt.Errorf("grow to %d shards: %w", shards, err)
				}
				done[pk] = true
				moved++
			}
		}
		err = nil
		for i := 1; i <= shards && err == nil; i++ {
			s := i % shards // shard 0 last
			if err = peers[s].CommitShards(ctx, shards, version); err != nil {
				err = fmt.Errorf("grow to %d shards: commit on shard %d: %w", shards, s, err)
			}
		}
		if err == nil {
			g.Log.Info("cluster grown", "shards", shards, "from", from, "version", version, "partitions_moved", moved)
			return moved, nil
		}
		if pass == maxGrowPasses {
			return moved, err
		}
		g.Log.Warn("grow: a shard refused the new map; moving again", "pass", pass, "err", err)
	}
}

// growRetry is how soon a growth that failed is tried again.
const growRetry = time.Second

// KeepGrowing calls grow (a growth to shards shards) until it succeeds
// or ctx ends, a growRetry after each failure.
func KeepGrowing(ctx context.Context, shards int, grow func(context.Context) (moved int, err error), log *slog.Logger) {
	for {
		moved, err := grow(ctx)
		if err == nil {
			log.Info("grew the cluster", "shards", shards, "partitions_moved", moved)
			return
		}
		if ctx.Err() != nil {
			return
		}
		log.Warn("grow the cluster; trying again", "shards", shards, "moved", moved, "err", err)
		// A timer from the failure, not a ticker from the start: a
		// growth that failed slowly still waits its growRetry.
		t := time.NewTimer(growRetry)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}
