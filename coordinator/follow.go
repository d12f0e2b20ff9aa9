package coordinator

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/floe-io/floe/coordapi"
)

// FollowTopic makes this coordinator's copy of a topic that another
// coordinator owns match it: shard i > 0 of a sharded cluster keeps a copy
// of every topic of shard 0, the owner of topic metadata, to check commits
// and plan its partitions' tiers with (docs/design/coordinator-shards.md).
// It creates the topic under the owner's id, grows its partitions to the
// owner's count, and sets the owner's explicit configs, each through the
// method an admin request would take (so a config that turns the key
// index on starts its rebuild as usual), but with the owner's configs as
// they are: validated there, by its options and build, not refused here
// by this shard's. A topic of the same name under
// another id (deleted and created again at the owner) is deleted first.
// It reports whether anything changed. Callers that read the owner should
// use FollowTopics or FollowTopicID, which serialize the reads and the
// follows. Views are not copied: their data is
// their base topic's.
func (c *Coordinator) FollowTopic(ctx context.Context, want coordapi.Topic) (changed bool, err error) {
	if want.View != nil {
		return false, nil
	}
	wrap := func(err error) (bool, error) {
		return changed, fmt.Errorf("follow topic %q (%s): %w", want.Name, want.ID, err)
	}
	cur, err := c.Topic(ctx, want.Name)
	switch {
	case errors.Is(err, kerr.UnknownTopicOrPartition):
	case err != nil:
		return wrap(err)
	case cur.ID != want.ID:
		if _, err := c.DeleteTopicByID(ctx, cur.ID); err != nil {
			return wrap(fmt.Errorf("delete the copy under the old id %s: %w", cur.ID, err))
		}
		changed = true
	default:
		return c.followExisting(ctx, cur, want)
	}
	if _, err := c.createTopic(ctx, coordapi.CreateTopicRequest{Name: want.Name, Partitions: want.Partitions,
		ReplicationFactor: -1, Configs: want.Configs}, want.ID); err != nil {
		return wrap(err)
	}
	return true, nil
}

// followExisting brings the copy cur of a topic to want, the owner's.
func (c *Coordinator) followExisting(ctx context.Context, cur, want coordapi.Topic) (changed bool, err error) {
	switch {
	case want.Partitions < cur.Partitions:
		return false, fmt.Errorf("follow topic %q: the owner has %d partitions, this copy %d: partitions are never removed",
			want.Name, want.Partitions, cur.Partitions)
	case want.Partitions > cur.Partitions:
		if err := c.CreatePartitions(ctx, want.Name, want.Partitions, false); err != nil {
			return false, fmt.Errorf("follow topic %q: %w", want.Name, err)
		}
		changed = true
	}
	if !maps.Equal(cur.Configs, want.Configs) {
		ops := make([]coordapi.ConfigOp, 0, len(want.Configs))
		for name, v := range want.Configs {
			ops = append(ops, coordapi.ConfigOp{Name: name, Op: coordapi.OpSet, Value: &v})
		}
		// Not incremental: the owner's explicit set replaces the copy's.
		if err := c.alterTopicConfigs(ctx, want.Name, ops, false, false, true); err != nil {
			return changed, fmt.Errorf("follow topic %q: %w", want.Name, err)
		}
		changed = true
	}
	return changed, nil
}

// TopicOwner is what a shard's copy of the topic metadata reads from the
// coordinator that owns it (shard 0): *rpc.Client, or a *Coordinator.
type TopicOwner interface {
	Topics(ctx context.Context) ([]coordapi.Topic, error)
	TopicByID(ctx context.Context, id coordapi.TopicID) (coordapi.Topic, error)
	SubscribeTopics(fn func([]coordapi.TopicNotice)) (cancel func())
}

// lockFollow takes the follows' semaphore, or gives up when ctx ends.
func (c *Coordinator) lockFollow(ctx context.Context) error {
	select {
	case c.follow <- struct{}{}:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("follow shard 0's topics: %w", ctx.Err())
	}
}

func (c *Coordinator) unlockFollow() { <-c.follow }

// defaultFollowInterval is Options.FollowInterval's default.
const defaultFollowInterval = 10 * time.Second

// followTimeout bounds one follow of the owner's topics.
const followTimeout = 30 * time.Second

// startFollowing follows the owner's topics now, at each of its topic
// notices and every FollowInterval, until Close.
func (c *Coordinator) startFollowing() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	wake := make(chan struct{}, 1)
	unsubscribe := c.opts.TopicOwner.SubscribeTopics(func([]coordapi.TopicNotice) {
		select {
		case wake <- struct{}{}:
		default: // a follow is due already: it reads every topic
		}
	})
	c.stopFollow = func() { cancel(); <-done; unsubscribe() }
	go func() {
		defer close(done)
		t := time.NewTicker(c.opts.FollowInterval)
		defer t.Stop()
		for {
			fctx, fcancel := context.WithTimeout(ctx, followTimeout)
			n, err := c.FollowTopics(fctx, c.opts.TopicOwner)
			fcancel()
			switch {
			case ctx.Err() != nil:
				return
			case err != nil:
				c.log.Warn("follow shard 0's topics", "shard", c.opts.Shard, "changed", n, "err", err)
			case n > 0:
				c.log.Info("followed shard 0's topics", "shard", c.opts.Shard, "changed", n)
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			case <-wake:
			}
		}
	}()
}

// followUnknown follows, before a commit, each topic it names that this
// copy does not know, or whose partition it does not have yet (the
// notice of its creation still on the way), so that a produce right after
// a CreateTopics or a CreatePartitions is not refused. Errors are logged:
// the commit then refuses the topic's batches as unknown, and the
// producer retries.
func (c *Coordinator) followUnknown(ctx context.Context, req *coordapi.CommitRequest) {
	var unknown []coordapi.TopicID
	c.mu.RLock()
	for i := range req.Batches {
		id, p := req.Batches[i].TopicID, req.Batches[i].Partition
		// Unknown, or a partition beyond the copy's (created at the owner
		// since).
		if t := c.mu.topicsByID[id]; (t == nil || int(p) >= len(t.parts)) && !slices.Contains(unknown, id) {
			unknown = append(unknown, id)
		}
	}
	c.mu.RUnlock()
	for _, id := range unknown {
		if _, err := c.FollowTopicID(ctx, c.opts.TopicOwner, id); err != nil {
			c.log.Warn("follow a topic a commit names", "topic_id", id, "err", err)
		}
	}
}

// FollowTopics makes this coordinator's topics the owner's: it lists the
// owner's topics, follows each (FollowTopic) and deletes the topics the
// owner no longer has. It returns how many topics it changed, created or
// deleted; on an error it goes on with the others and returns the errors
// joined.
//
// Follows are serialized, and each reads the owner inside: a listing
// taken before a topic was created cannot delete the copy a later follow
// made of it (with its partitions' batches).
func (c *Coordinator) FollowTopics(ctx context.Context, owner TopicOwner) (changed int, err error) {
	if err := c.lockFollow(ctx); err != nil {
		return 0, err
	}
	defer c.unlockFollow()
	topics, err := owner.Topics(ctx)
	if err != nil {
		return 0, fmt.Errorf("follow topics: list the owner's: %w", err)
	}
	var errs []error
	want := make(map[coordapi.TopicID]bool, len(topics))
	for _, t := range topics {
		want[t.ID] = true
		ch, err := c.FollowTopic(ctx, t)
		if err != nil {
			errs = append(errs, err)
		}
		if ch {
			changed++
		}
	}
	mine, err := c.Topics(ctx)
	if err != nil {
		return changed, errors.Join(append(errs, err)...)
	}
	for _, t := range mine {
		if want[t.ID] {
			continue
		}
		if _, err := c.DeleteTopicByID(ctx, t.ID); err != nil && !errors.Is(err, kerr.UnknownTopicID) {
			errs = append(errs, fmt.Errorf("follow topics: delete %q: %w", t.Name, err))
			continue
		}
		changed++
	}
	return changed, errors.Join(errs...)
}

// FollowTopicID follows one topic of the owner, by id: a commit naming a
// topic this copy does not know yet (its creation's notice still on the
// way) asks the owner for it before refusing the batch. It reports whether
// the topic is known here afterwards; a topic the owner does not have is
// deleted here too.
func (c *Coordinator) FollowTopicID(ctx context.Context, owner TopicOwner, id coordapi.TopicID) (known bool, err error) {
	if err := c.lockFollow(ctx); err != nil {
		return false, err
	}
	defer c.unlockFollow()
	t, err := owner.TopicByID(ctx, id)
	switch {
	case errors.Is(err, kerr.UnknownTopicID):
		if _, err := c.DeleteTopicByID(ctx, id); err != nil && !errors.Is(err, kerr.UnknownTopicID) {
			return false, fmt.Errorf("follow topic %s: delete: %w", id, err)
		}
		return false, nil
	case err != nil:
		return false, fmt.Errorf("follow topic %s: ask the owner: %w", id, err)
	}
	if _, err := c.FollowTopic(ctx, t); err != nil {
		return false, err
	}
	return true, nil
}

// ClusterInfo answers the cluster's layout as this shard keeps it: the
// shard count it serves by (its --shards, or the count a growth committed
// since, grow.go), its own index (1 and 0 without shards) and the map
// version.
func (c *Coordinator) ClusterInfo(ctx context.Context) (coordapi.ClusterInfo, error) {
	if err := c.enter(ctx); err != nil {
		return coordapi.ClusterInfo{}, err
	}
	defer c.leave()
	pl := c.place.Load()
	return coordapi.ClusterInfo{Shards: pl.shards, Shard: c.opts.Shard, MapVersion: pl.version}, nil
}
