package coordinator

import (
	"context"
	"slices"
	"time"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/coordinator/follow"
)

// A shard's copy of shard 0's topics (docs/design/coordinator-shards.md)
// is kept by package follow, which reads the owner and changes this
// coordinator's topics through followCopy, the calls an admin request
// would take.

// TopicOwner is what a shard's copy of the topic metadata reads from the
// coordinator that owns it (shard 0): *rpc.Client, or a *Coordinator.
type TopicOwner = follow.Owner

// defaultFollowInterval is Options.FollowInterval's default.
const defaultFollowInterval = 10 * time.Second

// followCopy is this coordinator as package follow changes its topics.
type followCopy struct{ *Coordinator }

// CreateTopicAs creates a copy of an owner's topic under its id.
func (c followCopy) CreateTopicAs(ctx context.Context, req coordapi.CreateTopicRequest, id coordapi.TopicID) error {
	_, err := c.createTopic(ctx, req, id)
	return err
}

// SetTopicConfigs replaces a copy's explicit configs with the owner's, as
// they are (owned: validated there).
func (c followCopy) SetTopicConfigs(ctx context.Context, name string, ops []coordapi.ConfigOp) error {
	return c.alterTopicConfigs(ctx, name, ops, false, false, true)
}

// FollowTopic makes this coordinator's copy of a topic that another
// coordinator owns match it (follow.Follower.Topic): it creates the topic
// under the owner's id, grows its partitions to the owner's count, and
// sets the owner's explicit configs, each through the method an admin
// request would take, but with the owner's configs as they are. It
// reports whether anything changed. Callers that read the owner should
// use FollowTopics or FollowTopicID, which serialize the reads and the
// follows.
func (c *Coordinator) FollowTopic(ctx context.Context, want coordapi.Topic) (changed bool, err error) {
	return c.follower.Topic(ctx, want)
}

// FollowTopics makes this coordinator's topics the owner's
// (follow.Follower.Topics): it follows each of the owner's topics and
// deletes the topics the owner no longer has. It returns how many topics
// it changed, created or deleted; on an error it goes on with the others
// and returns the errors joined.
func (c *Coordinator) FollowTopics(ctx context.Context, owner TopicOwner) (changed int, err error) {
	return c.follower.Topics(ctx, owner)
}

// FollowTopicID follows one topic of the owner, by id
// (follow.Follower.TopicID). It reports whether the topic is known here
// afterwards; a topic the owner does not have is deleted here too.
func (c *Coordinator) FollowTopicID(ctx context.Context, owner TopicOwner, id coordapi.TopicID) (known bool, err error) {
	return c.follower.TopicID(ctx, owner, id)
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
