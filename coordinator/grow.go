package coordinator

import (
	"context"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/coordinator/handover"
	"github.com/floe-io/floe/coordinator/layout"
)

// Growing the shard count (package handover draws it): this shard's
// commit of a new count (CommitShards), and shard 0's Grow over its peers.

// ShardPeer is a shard as Grow drives it (package handover).
type ShardPeer = handover.ShardPeer

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

// Grow grows the cluster from this shard's count to shards: peers are
// the shards of the grown cluster, peers[i] shard i (peers[0] this one,
// or its client). Only shard 0 grows the cluster. It moves each partition
// of every topic whose shard changes (in chunks of chunkBytes, 0:
// DefaultChunkBytes), then commits the new count and map version on every
// shard, shard 0 last (handover.Grow). It returns how many partitions it
// moved. On an error nothing acknowledged is lost (a partition half moved
// stays fenced on its old shard, refused by both) and Grow is to be
// called again with the same arguments: partitions moved already are not
// moved again.
func (c *Coordinator) Grow(ctx context.Context, shards int, peers []ShardPeer, chunkBytes int) (moved int, err error) {
	pl := c.place.Load()
	return handover.Grow(ctx, handover.Growth{Shard: c.opts.Shard, From: pl.shards, To: shards, Version: pl.version + 1,
		Peers: peers, ChunkBytes: chunkBytes, Topics: c.Topics, Log: c.log})
}

// startGrowing grows the cluster to growTo through GrowPeers in the
// background, trying again after each failure, until it succeeds or
// Close.
func (c *Coordinator) startGrowing() {
	peers := append([]ShardPeer{c}, c.opts.GrowPeers...)
	c.stopGrow = background(func(ctx context.Context) {
		handover.KeepGrowing(ctx, c.growTo, func(ctx context.Context) (int, error) {
			return c.Grow(ctx, c.growTo, peers, 0)
		}, c.log)
	})
}
