package coordinator

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cockroachdb/pebble"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/coordinator/layout"
)

// Growing the shard count from N to M (docs/design/coordinator-shards.md,
// "Adding shards"): shard 0 moves every partition whose jump hash changes
// (MovePartition, handover.go), then has every shard commit M and the map
// version (CommitShards), the other shards first and itself last, so that
// brokers, which take the count from shard 0, route by M only once every
// shard serves by it. A shard commits M only when it holds no partition
// with data that M takes from it and that it did not hand over; a commit
// refused for that (a partition created, or first written, after the
// moves were listed) makes Grow list and move again. The commit holds the
// shard's commit lock, so no commit lands between its check and its new
// placement. Handover rows stay after the commit: they agree with M, and
// keep a repeated Grow from moving a partition twice.

// ShardPeer is a shard as Grow drives it: *rpc.Client, or a *Coordinator.
type ShardPeer interface {
	HandoverPeer
	CommitShards(ctx context.Context, shards int, version uint64) error
	ClusterInfo(ctx context.Context) (coordapi.ClusterInfo, error)
}

var _ ShardPeer = (*Coordinator)(nil)

// MapVersion returns the version of the shard map this shard serves by:
// 0 before any growth, then the version each CommitShards gave it.
func (c *Coordinator) MapVersion() uint64 { return c.place.Load().version }

// CommitShards makes this shard serve by shards shards, map version
// version, from now on and after restarts (the stored count, KeyShards:
// it must be started with --shards shards from then on). It is refused
// while a partition is moving out of or into it (fenced and not dropped,
// or imported in part), and while it holds a partition with data that
// shards gives another shard and that it did not hand over (Grow moves it
// and asks again). Committing the current count and version again does
// nothing; a lower count or version is refused.
func (c *Coordinator) CommitShards(ctx context.Context, shards int, version uint64) error {
	if err := c.enter(ctx); err != nil {
		return err
	}
	defer c.leave()
	c.commit.Lock()
	defer c.commit.Unlock()
	pl := c.place.Load()
	switch {
	case shards == pl.shards && version == pl.version:
		return nil
	case shards < pl.shards || version <= pl.version:
		return fmt.Errorf("commit shards: %d shards at map version %d after %d at version %d: %w",
			shards, version, pl.shards, pl.version, errShrink)
	case c.opts.Shard >= shards:
		return fmt.Errorf("commit shards: shard %d is not one of %d", c.opts.Shard, shards)
	}
	for pk, s := range pl.moves {
		if s == layout.HandoverOut || s == layout.HandoverImporting {
			return fmt.Errorf("commit shards: %s/%d is moving (handover state %d): %w", pk.topic, pk.partition, s, ErrUnmoved)
		}
	}
	c.mu.RLock()
	for _, t := range c.mu.topicsByID {
		for p := range t.parts {
			pk := partKey{t.id, int32(p)}
			if t.parts[p].hwm == 0 || !c.owns(t.id, int32(p)) || pl.moves[pk] == layout.HandoverIn {
				continue
			}
			if coordapi.ShardOf(t.id, int32(p), shards) != c.opts.Shard {
				c.mu.RUnlock()
				return fmt.Errorf("commit shards: %q/%d holds offsets up to %d and was not handed over to shard %d: %w",
					t.name, p, t.parts[p].hwm, coordapi.ShardOf(t.id, int32(p), shards), ErrUnmoved)
			}
		}
	}
	c.mu.RUnlock()
	b := c.db.NewBatch()
	defer b.Close()
	_ = b.Set(layout.KeyShards, layout.EncodeUint64(uint64(shards)), nil)
	_ = b.Set(layout.KeyMapVersion, layout.EncodeUint64(version), nil)
	if err := c.write(b, pebble.Sync); err != nil {
		return fmt.Errorf("commit shards: %w", err)
	}
	c.place.Store(&placement{shards: shards, version: version, moves: pl.moves})
	c.log.Info("shard map committed", "shard", c.opts.Shard, "shards", shards, "from", pl.shards, "version", version)
	return nil
}

// ErrUnmoved is wrapped by CommitShards' refusal of a count some
// partition of the shard has not been moved for yet.
var ErrUnmoved = errors.New("coordinator: a partition is not handed over yet")

// errShrink refuses a shard count or map version below the current.
var errShrink = errors.New("coordinator: shards are only added, and map versions only grow")

// maxGrowPasses bounds Grow's passes of moves and commits: each pass
// after the first moves only partitions written for the first time while
// the one before ran.
const maxGrowPasses = 5

// Grow grows the cluster from this shard's count to shards: peers are
// the shards of the grown cluster, peers[i] shard i (peers[0] this one,
// or its client). Only shard 0 grows the cluster. It moves each partition
// of every topic whose shard changes (in chunks of chunkBytes, 0:
// DefaultChunkBytes), then commits the new count and map version on every
// shard, shard 0 last. It returns how many partitions it moved. On an
// error nothing acknowledged is lost (a partition half moved stays fenced
// on its old shard, refused by both) and Grow is to be called again with
// the same arguments: partitions moved already are not moved again.
func (c *Coordinator) Grow(ctx context.Context, shards int, peers []ShardPeer, chunkBytes int) (moved int, err error) {
	pl := c.place.Load()
	switch {
	case c.opts.Shard != 0:
		return 0, fmt.Errorf("grow: shard %d: only shard 0 grows the cluster", c.opts.Shard)
	case shards <= pl.shards:
		return 0, nil
	case len(peers) != shards:
		return 0, fmt.Errorf("grow to %d shards: %d peers", shards, len(peers))
	}
	from, version := pl.shards, pl.version+1
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
		topics, err := c.Topics(ctx)
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
				if _, err := MovePartition(ctx, peers[src], peers[dst], t.ID, p, version, chunkBytes); err != nil {
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
			c.log.Info("cluster grown", "shards", shards, "from", from, "version", version, "partitions_moved", moved)
			return moved, nil
		}
		if pass == maxGrowPasses {
			return moved, err
		}
		c.log.Warn("grow: a shard refused the new map; moving again", "pass", pass, "err", err)
	}
}

// growRetry is how soon a growth that failed is tried again.
const growRetry = time.Second

// startGrowing grows the cluster to growTo through GrowPeers in the
// background, trying again after each failure, until it succeeds or
// Close.
func (c *Coordinator) startGrowing() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	c.stopGrow = func() { cancel(); <-done }
	peers := append([]ShardPeer{c}, c.opts.GrowPeers...)
	go func() {
		defer close(done)
		t := time.NewTicker(growRetry)
		defer t.Stop()
		for {
			moved, err := c.Grow(ctx, c.growTo, peers, 0)
			if err == nil {
				c.log.Info("grew the cluster", "shards", c.growTo, "partitions_moved", moved)
				return
			}
			if ctx.Err() != nil {
				return
			}
			c.log.Warn("grow the cluster; trying again", "shards", c.growTo, "moved", moved, "err", err)
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
}
