package follow

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/floe-io/floe/coordapi"
)

// Owner is what a shard's copy of the topic metadata reads from the
// coordinator that owns it (shard 0): *rpc.Client, or a
// *coordinator.Coordinator.
type Owner interface {
	Topics(ctx context.Context) ([]coordapi.Topic, error)
	TopicByID(ctx context.Context, id coordapi.TopicID) (coordapi.Topic, error)
	SubscribeTopics(fn func([]coordapi.TopicNotice)) (cancel func())
}

// Copy is the shard's own topics, as a follow reads and changes them: its
// coordinator.
type Copy interface {
	Topic(ctx context.Context, name string) (coordapi.Topic, error)
	Topics(ctx context.Context) ([]coordapi.Topic, error)
	DeleteTopicByID(ctx context.Context, id coordapi.TopicID) (string, error)
	// CreateTopicAs is CreateTopic under the owner's id.
	CreateTopicAs(ctx context.Context, req coordapi.CreateTopicRequest, id coordapi.TopicID) error
	CreatePartitions(ctx context.Context, name string, count int32, validateOnly bool) error
	// SetTopicConfigs replaces a topic's explicit configs with the
	// owner's, as they are: validated there, by its options and build,
	// not refused here by this shard's.
	SetTopicConfigs(ctx context.Context, name string, ops []coordapi.ConfigOp) error
}

// Timeout bounds one follow of the owner's topics.
const Timeout = 30 * time.Second

// Follower follows an owner's topics into a copy.
type Follower struct {
	copy Copy
	// sem serializes the follows: a semaphore of one, so that a commit
	// waiting behind a follow gives up with its context.
	sem chan struct{}
}

// New returns a Follower that changes cp.
func New(cp Copy) *Follower {
	return &Follower{copy: cp, sem: make(chan struct{}, 1)}
}

// lock takes the follows' semaphore, or gives up when ctx ends.
func (f *Follower) lock(ctx context.Context) error {
	select {
	case f.sem <- struct{}{}:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("follow shard 0's topics: %w", ctx.Err())
	}
}

func (f *Follower) unlock() { <-f.sem }

// Topic makes the copy of a topic match want, the owner's: it creates the
// topic under the owner's id, grows its partitions to the owner's count,
// and sets the owner's explicit configs. A topic of the same name under
// another id (deleted and created again at the owner) is deleted first.
// It reports whether anything changed. Callers that read the owner should
// use Topics or TopicID, which serialize the reads and the follows. Views
// are not copied: their data is their base topic's.
func (f *Follower) Topic(ctx context.Context, want coordapi.Topic) (changed bool, err error) {
	if want.View != nil {
		return false, nil
	}
	wrap := func(err error) (bool, error) {
		return changed, fmt.Errorf("follow topic %q (%s): %w", want.Name, want.ID, err)
	}
	cur, err := f.copy.Topic(ctx, want.Name)
	switch {
	case errors.Is(err, kerr.UnknownTopicOrPartition):
	case err != nil:
		return wrap(err)
	case cur.ID != want.ID:
		if _, err := f.copy.DeleteTopicByID(ctx, cur.ID); err != nil {
			return wrap(fmt.Errorf("delete the copy under the old id %s: %w", cur.ID, err))
		}
		changed = true
	default:
		return f.existing(ctx, cur, want)
	}
	if err := f.copy.CreateTopicAs(ctx, coordapi.CreateTopicRequest{Name: want.Name, Partitions: want.Partitions,
		ReplicationFactor: -1, Configs: want.Configs}, want.ID); err != nil {
		return wrap(err)
	}
	return true, nil
}

// existing brings the copy cur of a topic to want, the owner's.
func (f *Follower) existing(ctx context.Context, cur, want coordapi.Topic) (changed bool, err error) {
	switch {
	case want.Partitions < cur.Partitions:
		return false, fmt.Errorf("follow topic %q: the owner has %d partitions, this copy %d: partitions are never removed",
			want.Name, want.Partitions, cur.Partitions)
	case want.Partitions > cur.Partitions:
		if err := f.copy.CreatePartitions(ctx, want.Name, want.Partitions, false); err != nil {
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
		if err := f.copy.SetTopicConfigs(ctx, want.Name, ops); err != nil {
			return changed, fmt.Errorf("follow topic %q: %w", want.Name, err)
		}
		changed = true
	}
	return changed, nil
}

// Topics makes the copy's topics the owner's: it lists the owner's
// topics, follows each (Topic) and deletes the topics the owner no longer
// has. It returns how many topics it changed, created or deleted; on an
// error it goes on with the others and returns the errors joined.
//
// Follows are serialized, and each reads the owner inside: a listing
// taken before a topic was created cannot delete the copy a later follow
// made of it (with its partitions' batches).
func (f *Follower) Topics(ctx context.Context, owner Owner) (changed int, err error) {
	if err := f.lock(ctx); err != nil {
		return 0, err
	}
	defer f.unlock()
	topics, err := owner.Topics(ctx)
	if err != nil {
		return 0, fmt.Errorf("follow topics: list the owner's: %w", err)
	}
	var errs []error
	want := make(map[coordapi.TopicID]bool, len(topics))
	for _, t := range topics {
		want[t.ID] = true
		ch, err := f.Topic(ctx, t)
		if err != nil {
			errs = append(errs, err)
		}
		if ch {
			changed++
		}
	}
	mine, err := f.copy.Topics(ctx)
	if err != nil {
		return changed, errors.Join(append(errs, err)...)
	}
	for _, t := range mine {
		if want[t.ID] {
			continue
		}
		if _, err := f.copy.DeleteTopicByID(ctx, t.ID); err != nil && !errors.Is(err, kerr.UnknownTopicID) {
			errs = append(errs, fmt.Errorf("follow topics: delete %q: %w", t.Name, err))
			continue
		}
		changed++
	}
	return changed, errors.Join(errs...)
}

// TopicID follows one topic of the owner, by id: a commit naming a topic
// the copy does not know yet (its creation's notice still on the way)
// asks the owner for it before refusing the batch. It reports whether the
// topic is known here afterwards; a topic the owner does not have is
// deleted here too.
func (f *Follower) TopicID(ctx context.Context, owner Owner, id coordapi.TopicID) (known bool, err error) {
	if err := f.lock(ctx); err != nil {
		return false, err
	}
	defer f.unlock()
	t, err := owner.TopicByID(ctx, id)
	switch {
	case errors.Is(err, kerr.UnknownTopicID):
		if _, err := f.copy.DeleteTopicByID(ctx, id); err != nil && !errors.Is(err, kerr.UnknownTopicID) {
			return false, fmt.Errorf("follow topic %s: delete: %w", id, err)
		}
		return false, nil
	case err != nil:
		return false, fmt.Errorf("follow topic %s: ask the owner: %w", id, err)
	}
	if _, err := f.Topic(ctx, t); err != nil {
		return false, err
	}
	return true, nil
}

// Start follows the owner's topics now, at each of its topic notices and
// every interval, in the background, until the returned stop is called
// (which waits for the follow under way). shard names this shard in the
// logs.
func (f *Follower) Start(owner Owner, interval time.Duration, shard int, log *slog.Logger) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	wake := make(chan struct{}, 1)
	unsubscribe := owner.SubscribeTopics(func([]coordapi.TopicNotice) {
		select {
		case wake <- struct{}{}:
		default: // a follow is due already: it reads every topic
		}
	})
	go func() {
		defer close(done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			fctx, fcancel := context.WithTimeout(ctx, Timeout)
			n, err := f.Topics(fctx, owner)
			fcancel()
			switch {
			case ctx.Err() != nil:
				return
			case err != nil:
				log.Warn("follow shard 0's topics", "shard", shard, "changed", n, "err", err)
			case n > 0:
				log.Info("followed shard 0's topics", "shard", shard, "changed", n)
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			case <-wake:
			}
		}
	}()
	return func() { cancel(); <-done; unsubscribe() }
}
