package coordinator

import (
	"context"
	"fmt"
	"maps"
	"sort"
	"strings"

	"github.com/cockroachdb/pebble"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/coordinator/layout"
	"github.com/floe-io/floe/coordinator/topicrules"
	"github.com/floe-io/floe/internal/keyspan"
)

// toTopic copies a topicState into its exported form. The caller holds mu
// (or commit).
// encode is the topic's value in its 't' row.
func (t *topicState) encode() []byte {
	return layout.EncodeTopic(&layout.Topic{Name: t.name, Partitions: len(t.parts), CreatedMs: t.createdMs, Configs: t.configs})
}

func (t *topicState) toTopic() coordapi.Topic {
	return coordapi.Topic{ID: t.id, Name: t.name, Partitions: int32(len(t.parts)), Configs: maps.Clone(t.configs)}
}

// CreateTopic creates a topic, or with ValidateOnly checks that it could be
// created and returns it without an id. Kafka-level failures:
// InvalidTopicException, TopicAlreadyExists, InvalidPartitions,
// InvalidReplicationFactor, InvalidConfig.
func (c *Coordinator) CreateTopic(ctx context.Context, req coordapi.CreateTopicRequest) (coordapi.Topic, error) {
	return c.createTopic(ctx, req, coordapi.TopicID{})
}

// createTopic is CreateTopic, under id when it is not zero (a shard's copy
// of a topic shard 0 created: follow.go).
func (c *Coordinator) createTopic(ctx context.Context, req coordapi.CreateTopicRequest, id coordapi.TopicID) (coordapi.Topic, error) {
	if err := c.enter(ctx); err != nil {
		return coordapi.Topic{}, err
	}
	defer c.leave()
	wrap := func(err error) (coordapi.Topic, error) {
		return coordapi.Topic{}, fmt.Errorf("create topic %q: %w", req.Name, err)
	}
	if err := topicrules.ValidateName(req.Name); err != nil {
		return wrap(err)
	}
	var changed coordapi.TopicNotice
	defer c.notifyTopics(&changed)

	c.commit.Lock()
	defer c.commit.Unlock()
	if _, ok := c.mu.topicsByName[req.Name]; ok {
		return wrap(coordapi.Errorf(kerr.TopicAlreadyExists, "Topic '%s' already exists.", req.Name))
	}
	cn := topicrules.CollisionName(req.Name)
	for name := range c.mu.topicsByName {
		if topicrules.CollisionName(name) == cn {
			return wrap(coordapi.Errorf(kerr.InvalidTopicException, "Topic '%s' collides with existing topic: %s", req.Name, name))
		}
	}
	partitions, err := topicrules.Partitions(req.Partitions, c.opts.DefaultPartitions, maxPartitions)
	if err != nil {
		return wrap(err)
	}
	if err := topicrules.ReplicationFactor(req.ReplicationFactor); err != nil {
		return wrap(err)
	}
	configs, err := coordapi.ValidateTopicConfigs(req.Configs, false, c.opts.KVIndexEnabled)
	if id != (coordapi.TopicID{}) {
		// A copy of shard 0's topic: its configs were validated there,
		// by its options and build (follow.go).
		configs, err = maps.Clone(req.Configs), nil
		if configs == nil {
			configs = map[string]string{}
		}
	}
	if err != nil {
		return wrap(err)
	}
	t := &topicState{
		name:          req.Name,
		createdMs:     c.now().UnixMilli(),
		configs:       configs,
		logAppendTime: coordapi.IsLogAppendTime(configs),
		kvIndexed:     isKVIndexed(configs),
		hierarchical:  isHierarchical(configs),
		parts:         make([]partState, partitions),
	}
	for i := range t.parts {
		t.parts[i] = newPartState()
	}
	if req.ValidateOnly {
		return t.toTopic(), nil
	}
	t.id = id
	if id == (coordapi.TopicID{}) {
		t.id = topicrules.NewID()
	} else if _, taken := c.mu.topicsByID[id]; taken {
		return wrap(coordapi.Errorf(kerr.TopicAlreadyExists, "Topic id %s already exists.", id))
	}

	b := c.db.NewBatch()
	defer b.Close()
	_ = b.Set(layout.TopicNameKey(t.name), t.id[:], nil)
	_ = b.Set(layout.TopicKey(t.id), t.encode(), nil)
	for i := range t.parts {
		_ = b.Set(layout.PartitionKey(t.id, int32(i)), t.parts[i].encode(), nil)
	}
	if err := c.write(b, pebble.Sync); err != nil {
		return wrap(fmt.Errorf("commit: %w", err))
	}
	c.mu.Lock()
	c.mu.topicsByName[t.name] = t
	c.mu.topicsByID[t.id] = t
	c.mu.Unlock()
	changed = coordapi.TopicNotice{ID: t.id, Name: t.name}
	c.log.Info("topic created", "topic", t.name, "id", t.id, "partitions", partitions, "configs", configs)
	return t.toTopic(), nil
}

// DeleteTopic deletes a topic by name with its partitions, batches and
// producer state, and returns its id. The objects its batches lived in lose
// those bytes; objects left with no live bytes become garbage.
// Kafka-level failure: UnknownTopicOrPartition.
//
// It scans the topic's batch keys under the commit lock, so commits wait
// for it; topics are deleted rarely.
func (c *Coordinator) DeleteTopic(ctx context.Context, name string) (coordapi.TopicID, error) {
	if err := c.enter(ctx); err != nil {
		return coordapi.TopicID{}, err
	}
	defer c.leave()
	var changed coordapi.TopicNotice
	defer c.notifyTopics(&changed)
	c.commit.Lock()
	defer c.commit.Unlock()
	t := c.mu.topicsByName[name]
	if t == nil {
		return coordapi.TopicID{}, fmt.Errorf("delete topic %q: %w", name, kerr.UnknownTopicOrPartition)
	}
	if err := c.deleteTopicLocked(t); err != nil {
		return coordapi.TopicID{}, fmt.Errorf("delete topic %q: %w", name, err)
	}
	changed = coordapi.TopicNotice{ID: t.id, Name: t.name}
	return t.id, nil
}

// DeleteTopicByID deletes a topic by id (DeleteTopics v6+) and returns its
// name. Kafka-level failure: UnknownTopicID.
func (c *Coordinator) DeleteTopicByID(ctx context.Context, id coordapi.TopicID) (string, error) {
	if err := c.enter(ctx); err != nil {
		return "", err
	}
	defer c.leave()
	var changed coordapi.TopicNotice
	defer c.notifyTopics(&changed)
	c.commit.Lock()
	defer c.commit.Unlock()
	t := c.mu.topicsByID[id]
	if t == nil {
		return "", fmt.Errorf("delete topic %s: %w", id, kerr.UnknownTopicID)
	}
	if err := c.deleteTopicLocked(t); err != nil {
		return "", fmt.Errorf("delete topic %q: %w", t.name, err)
	}
	changed = coordapi.TopicNotice{ID: t.id, Name: t.name}
	return t.name, nil
}

// deleteTopicLocked removes t in one synced batch. c.commit must be held.
func (c *Coordinator) deleteTopicLocked(t *topicState) error {
	nowMs := c.now().UnixMilli()
	c.stopRebuildLocked(t.id)
	c.stopPostingsRebuildLocked(t.id)
	c.indexEpoch.Add(1) // before the drops are committed
	b := c.db.NewBatch()
	defer b.Close()
	c.kv.DropTopic(b, t.id)
	c.postings.DropTopic(b, t.id)
	if err := c.dropViewsLocked(b, t.id); err != nil {
		return err
	}
	_ = b.Delete(layout.TopicNameKey(t.name), nil)
	_ = b.Delete(layout.TopicKey(t.id), nil)
	_ = b.Delete(layout.TableCoveredKey(t.id), nil) // its table's covered offsets (tabletier.go)
	pl := layout.PartitionsPrefix(t.id)
	_ = b.DeleteRange(pl, keyspan.PrefixEnd(pl), nil)
	for _, prefix := range []byte{layout.PrefixTxnOpen, layout.PrefixAborted, layout.PrefixTxnKeys} {
		tl := append([]byte{prefix}, t.id[:]...)
		_ = b.DeleteRange(tl, keyspan.PrefixEnd(tl), nil)
	}

	lower, upper := layout.BatchTopicBounds(t.id)
	rs, err := c.rowStats(lower, upper)
	if err != nil {
		return err
	}
	_ = b.DeleteRange(lower, upper, nil)
	objects := c.deadBytesLocked(b, rs.Dead, nowMs)

	var producers []producerStateKey
	for pk := range c.commit.producers {
		if pk.topic == t.id {
			producers = append(producers, pk)
			_ = b.Delete(layout.ProducerKey(pk.producerID, pk.topic, pk.partition), nil)
		}
	}
	if err := c.write(b, pebble.Sync); err != nil {
		return fmt.Errorf("commit: %w", err)
	}

	c.mu.Lock()
	delete(c.mu.topicsByName, t.name)
	delete(c.mu.topicsByID, t.id)
	c.installObjectsLocked(objects)
	for p := range t.parts {
		delete(c.mu.aborted, partKey{t.id, int32(p)})
		delete(c.commit.openTxns, partKey{t.id, int32(p)}) // written under mu too
		delete(c.commit.txnKeys, partKey{t.id, int32(p)})
	}
	c.mu.Unlock()
	forget := make([]partKey, len(t.parts))
	for p := range forget {
		forget[p] = partKey{t.id, int32(p)}
	}
	c.dur.Forget(forget...)
	for _, pk := range producers {
		delete(c.commit.producers, pk)
	}
	for p := range t.parts {
		delete(c.commit.logs, partKey{t.id, int32(p)})
	}
	c.log.Info("topic deleted", "topic", t.name, "id", t.id, "batches", rs.Batches, "segments", rs.Segments, "objects_touched", len(objects))
	return nil
}

// CreatePartitions raises a topic's partition count to count (Kafka's
// CreatePartitions). Kafka-level failures: UnknownTopicOrPartition;
// InvalidPartitions when count is not above the current count.
func (c *Coordinator) CreatePartitions(ctx context.Context, name string, count int32, validateOnly bool) error {
	if err := c.enter(ctx); err != nil {
		return err
	}
	defer c.leave()
	wrap := func(err error) error { return fmt.Errorf("create partitions of topic %q: %w", name, err) }
	var changed coordapi.TopicNotice
	defer c.notifyTopics(&changed)
	c.commit.Lock()
	defer c.commit.Unlock()
	t := c.mu.topicsByName[name]
	if t == nil {
		return wrap(kerr.UnknownTopicOrPartition)
	}
	cur := int32(len(t.parts))
	switch {
	case count < cur:
		return wrap(coordapi.Errorf(kerr.InvalidPartitions,
			"Topic currently has %d partitions, which is higher than the requested %d.", cur, count))
	case count == cur:
		return wrap(coordapi.Errorf(kerr.InvalidPartitions, "Topic already has %d partitions.", cur))
	case count > maxPartitions:
		return wrap(coordapi.Errorf(kerr.InvalidPartitions, "Number of partitions %d is above the maximum of %d.", count, maxPartitions))
	}
	if validateOnly {
		return nil
	}
	parts := make([]partState, count)
	copy(parts, t.parts)
	for i := cur; i < count; i++ {
		parts[i] = newPartState()
	}
	next := *t
	next.parts = parts

	b := c.db.NewBatch()
	defer b.Close()
	_ = b.Set(layout.TopicKey(t.id), next.encode(), nil)
	for i := cur; i < count; i++ {
		_ = b.Set(layout.PartitionKey(t.id, i), parts[i].encode(), nil)
	}
	if err := c.write(b, pebble.Sync); err != nil {
		return wrap(fmt.Errorf("commit: %w", err))
	}
	c.mu.Lock()
	t.parts = parts
	c.mu.Unlock()
	changed = coordapi.TopicNotice{ID: t.id, Name: t.name}
	c.log.Info("partitions created", "topic", name, "from", cur, "to", count)
	return nil
}

// AlterTopicConfigs changes a topic's configs. incremental (Kafka's
// IncrementalAlterConfigs) applies each op: SET, DELETE (back to default),
// APPEND and SUBTRACT (list-type configs only, starting from the current or
// default value). Otherwise (legacy AlterConfigs) the ops' values replace
// the whole explicit config set, a nil value meaning unset, and every
// config not named reverts to its default. Kafka-level failures:
// UnknownTopicOrPartition; InvalidConfig for unknown names and bad values;
// InvalidRequest for duplicate names, null values and unknown op codes.
func (c *Coordinator) AlterTopicConfigs(ctx context.Context, name string, ops []coordapi.ConfigOp, incremental bool, validateOnly bool) error {
	return c.alterTopicConfigs(ctx, name, ops, incremental, validateOnly, false)
}

// alterTopicConfigs is AlterTopicConfigs; a follow (follow.go) sets
// owned, and takes shard 0's configs as they are, validated there.
func (c *Coordinator) alterTopicConfigs(ctx context.Context, name string, ops []coordapi.ConfigOp, incremental, validateOnly, owned bool) error {
	if err := c.enter(ctx); err != nil {
		return err
	}
	defer c.leave()
	wrap := func(err error) error { return fmt.Errorf("alter configs of topic %q: %w", name, err) }
	var changed coordapi.TopicNotice
	defer c.notifyTopics(&changed)
	c.commit.Lock()
	defer c.commit.Unlock()
	t := c.mu.topicsByName[name]
	if t == nil {
		return wrap(kerr.UnknownTopicOrPartition)
	}
	next, err := topicrules.ApplyConfigOps(t.configs, ops, incremental)
	if err != nil {
		return wrap(err)
	}
	kvBefore := strings.EqualFold(t.toTopic().Config(coordapi.ConfigKVIndexEnabled), "true")
	if !owned {
		next, err = coordapi.ValidateTopicConfigs(next, kvBefore, c.opts.KVIndexEnabled)
	}
	if err != nil {
		return wrap(err)
	}
	if validateOnly {
		return nil
	}
	updated := *t
	updated.configs = next
	kvAfter := isKVIndexed(next)
	b := c.db.NewBatch()
	defer b.Close()
	_ = b.Set(layout.TopicKey(t.id), updated.encode(), nil)
	switch {
	case kvAfter && !t.kvIndexed:
		// Index what the log already holds before lookups answer.
		c.kv.SetReady(b, t.id, !t.hasData())
	case !kvAfter && t.kvIndexed:
		c.stopRebuildLocked(t.id)
		c.kv.DropTopic(b, t.id)
	}
	hierAfter := isHierarchical(next)
	switch {
	case hierAfter && !t.hierarchical:
		// Post what the log already holds before views use the postings.
		c.postings.SetReady(b, t.id, !t.hasData())
	case !hierAfter && t.hierarchical:
		c.stopPostingsRebuildLocked(t.id)
		c.postings.DropTopic(b, t.id)
	}
	// An index turned off answers not ready from before its drop is
	// committed until it is off in memory, as during a rebuild, so that no
	// lookup reads the dropped index as a complete one.
	changing := kvAfter != t.kvIndexed || hierAfter != t.hierarchical
	wasKV, wasPostings := t.kvRebuilding, t.postingsRebuilding
	if changing {
		c.mu.Lock()
		t.kvRebuilding = t.kvRebuilding || !kvAfter && t.kvIndexed
		t.postingsRebuilding = t.postingsRebuilding || !hierAfter && t.hierarchical
		c.indexEpoch.Add(1)
		c.mu.Unlock()
	}
	if err := c.write(b, pebble.Sync); err != nil {
		if changing {
			c.mu.Lock()
			t.kvRebuilding, t.postingsRebuilding = wasKV, wasPostings
			c.mu.Unlock()
		}
		return wrap(fmt.Errorf("commit: %w", err))
	}
	rebuild := kvAfter && !c.kv.Ready(t.id) // the marker, as just committed
	rebuildPostings := hierAfter && !c.postings.Ready(t.id)
	c.mu.Lock()
	t.configs = next
	t.logAppendTime = coordapi.IsLogAppendTime(next)
	t.kvIndexed = kvAfter
	t.kvRebuilding = rebuild
	t.hierarchical = hierAfter
	t.postingsRebuilding = rebuildPostings
	c.mu.Unlock()
	if rebuild && !c.rebuildRunningLocked(t.id) {
		c.startRebuildLocked(t)
	}
	if rebuildPostings {
		if _, running := c.postingRebuilds[t.id]; !running {
			c.startPostingsRebuildLocked(t)
		}
	}
	changed = coordapi.TopicNotice{ID: t.id, Name: t.name}
	c.log.Info("topic configs altered", "topic", name, "configs", next, "incremental", incremental)
	return nil
}

// Topic returns a topic by name. Kafka-level failure:
// UnknownTopicOrPartition.
func (c *Coordinator) Topic(ctx context.Context, name string) (coordapi.Topic, error) {
	if err := c.enter(ctx); err != nil {
		return coordapi.Topic{}, err
	}
	defer c.leave()
	c.mu.RLock()
	t := c.mu.topicsByName[name]
	if t != nil {
		defer c.mu.RUnlock()
		return t.toTopic(), nil
	}
	vt, ok := c.viewOfLocked(name)
	c.mu.RUnlock()
	if !ok {
		return coordapi.Topic{}, fmt.Errorf("topic %q: %w", name, kerr.UnknownTopicOrPartition)
	}
	if err := c.rememberView(vt); err != nil {
		return coordapi.Topic{}, err
	}
	return vt, nil
}

// TopicByID returns a topic by id. Kafka-level failure: UnknownTopicID
// (also for the id of a deleted topic).
func (c *Coordinator) TopicByID(ctx context.Context, id coordapi.TopicID) (coordapi.Topic, error) {
	if err := c.enter(ctx); err != nil {
		return coordapi.Topic{}, err
	}
	defer c.leave()
	c.mu.RLock()
	t := c.mu.topicsByID[id]
	c.mu.RUnlock()
	if t == nil {
		if coordapi.IsViewTopicID(id) {
			return c.viewByID(id)
		}
		return coordapi.Topic{}, fmt.Errorf("topic %s: %w", id, kerr.UnknownTopicID)
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	return t.toTopic(), nil
}

// Topics returns every topic, sorted by name.
func (c *Coordinator) Topics(ctx context.Context) ([]coordapi.Topic, error) {
	if err := c.enter(ctx); err != nil {
		return nil, err
	}
	defer c.leave()
	c.mu.RLock()
	out := make([]coordapi.Topic, 0, len(c.mu.topicsByName))
	for _, t := range c.mu.topicsByName {
		out = append(out, t.toTopic())
	}
	c.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// hasData reports whether any partition of t ever had a record.
func (t *topicState) hasData() bool {
	for _, p := range t.parts {
		if p.hwm > 0 {
			return true
		}
	}
	return false
}
