package coordinator

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"math"
	"strings"

	"github.com/cockroachdb/pebble"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/coordinator/layout"
	"github.com/floe-io/floe/coordinator/logread"
	"github.com/floe-io/floe/coordinator/rowscan"
	"github.com/floe-io/floe/kvindex"
)

// ObjectReader reads batch bytes back from object storage, for rebuilding
// the key index from the log. objectstore.Store implements it.
type ObjectReader interface {
	GetRange(ctx context.Context, key string, offset, length int64) ([]byte, error)
}

func isKVIndexed(configs map[string]string) bool {
	return strings.EqualFold(configs[coordapi.ConfigKVIndexEnabled], "true")
}

// kvEntries converts a batch's keys for the index.
func kvEntries(keys []coordapi.KeyEntry) []kvindex.Entry {
	out := make([]kvindex.Entry, len(keys))
	for i, k := range keys {
		out[i] = kvindex.Entry(k)
	}
	return out
}

// kvReady reports whether t's key index answers lookups: on and not being
// built. c.mu (or c.commit) must be held.
func (t *topicState) kvReady() bool { return t.kvIndexed && !t.kvRebuilding }

// KvLookup returns the Kafka offset of the latest record with key in a
// partition of an indexed topic, and the partition's high watermark read at
// the same time. found is false for an absent or tombstoned key.
func (c *Coordinator) KvLookup(ctx context.Context, id coordapi.TopicID, partition int32, key []byte) (offset, hwm int64, found bool, err error) {
	if err := c.enter(ctx); err != nil {
		return 0, 0, false, err
	}
	defer c.leave()
	c.mu.RLock()
	_, st, err := c.partitionLocked(id, partition)
	c.mu.RUnlock()
	if err != nil {
		return 0, 0, false, err
	}
	offset, found, err = c.kv.Lookup(id, partition, key)
	if err != nil {
		return 0, 0, false, fmt.Errorf("kv lookup: %w", err)
	}
	return offset, st.hwm, found, nil
}

// KvGet answers what a GET /kv lookup needs in one call: whether the
// topic is indexed and its index ready, the key's offset, the partition's
// offsets, and the coordinates of the batch holding the offset when it is
// in [log start, high watermark). The index entry is read first and the
// offsets after it: a commit writes an entry in the same Pebble batch that
// assigns its offset and installs the high watermark in memory only after
// that write, so an offset below the high watermark read here is a
// committed record. Kafka-level failures: UnknownTopicID,
// UnknownTopicOrPartition.
func (c *Coordinator) KvGet(ctx context.Context, req coordapi.KvGetRequest) (coordapi.KvGetResult, error) {
	if err := c.enter(ctx); err != nil {
		return coordapi.KvGetResult{}, err
	}
	defer c.leave()
	var (
		offset int64
		found  bool
	)
	epoch := c.indexEpoch.Load()
	if req.Partition >= 0 { // else partitionLocked answers UnknownTopicOrPartition
		var err error
		if offset, found, err = c.kv.Lookup(req.TopicID, req.Partition, req.Key); err != nil {
			return coordapi.KvGetResult{}, fmt.Errorf("kv get: %w", err)
		}
	}
	c.mu.RLock()
	t, st, err := c.partitionLocked(req.TopicID, req.Partition)
	if err != nil {
		c.mu.RUnlock()
		return coordapi.KvGetResult{}, err
	}
	// An index dropped for a rebuild since the entry was read may have
	// missed it: not ready, as during the rebuild.
	res := coordapi.KvGetResult{Indexed: t.kvIndexed, Ready: t.kvReady() && c.indexEpoch.Load() == epoch}
	if !res.Ready {
		c.mu.RUnlock()
		return res, nil
	}
	res.Found, res.Offset, res.PartitionState = found, offset, st.public()
	if !found || offset < st.logStart || offset >= st.hwm {
		c.mu.RUnlock()
		return res, nil
	}
	// The batch holding offset, as FindBatches finds it (its consistency
	// rule: the iterator taken with the state under mu sees every batch
	// below the high watermark; a second hold settles a removal since).
	fb := coordapi.FindBatchesRequest{TopicID: req.TopicID, Partition: req.Partition, Offset: offset, MaxBytes: 1}
	it, err := c.db.NewIter(&pebble.IterOptions{
		LowerBound: layout.BatchKey(req.TopicID, req.Partition, offset),
		UpperBound: layout.BatchKey(req.TopicID, req.Partition, st.hwm),
	})
	c.mu.RUnlock()
	if err != nil {
		return coordapi.KvGetResult{}, fmt.Errorf("kv get: new iterator: %w", err)
	}
	fr := coordapi.FindBatchesResponse{PartitionState: st.public()}
	var nums []uint64
	fr.Batches, nums, err = rowscan.Batches(it, fb, math.MaxInt64)
	if cerr := it.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("kv get: iterate: %w", cerr)
	}
	if err != nil {
		return coordapi.KvGetResult{}, err
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	switch err := c.finishLocked(fb, &fr, nums); {
	case errors.Is(err, kerr.OffsetOutOfRange):
		// DeleteRecords removed the record since: answered as of now.
		res.PartitionState = fr.PartitionState
		return res, nil
	case err != nil:
		return coordapi.KvGetResult{}, fmt.Errorf("kv get: %w", err)
	case len(fr.Batches) == 0 || fr.Batches[0].BaseOffset > offset:
		return coordapi.KvGetResult{}, fmt.Errorf("kv get: no batch of %s/%d holds offset %d below the high watermark %d", req.TopicID, req.Partition, offset, st.hwm)
	}
	res.Batch = fr.Batches[0]
	return res, nil
}

// KvReady reports whether a topic's key index answers lookups: false while
// it is being built from the log after kv.index.enabled was turned on.
func (c *Coordinator) KvReady(ctx context.Context, id coordapi.TopicID) (bool, error) {
	if err := c.enter(ctx); err != nil {
		return false, err
	}
	defer c.leave()
	return c.kv.Ready(id), nil
}

// RebuildKVIndex drops a topic's key index and builds it again from the
// log, then marks it ready. Lookups on the topic answer 503 meanwhile. It
// is the repair tool for an index suspected wrong, and what turning
// kv.index.enabled on for a topic with data runs in the background.
func (c *Coordinator) RebuildKVIndex(ctx context.Context, name string) error {
	if err := c.enter(ctx); err != nil {
		return err
	}
	done, err := c.startKVRebuild(name)
	// Not entered while the build runs: it calls FindBatches, and Close
	// stops it.
	c.leave()
	if err != nil {
		return err
	}
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// startKVRebuild drops the index of topic name and starts its build.
func (c *Coordinator) startKVRebuild(name string) (<-chan error, error) {
	c.commit.Lock()
	defer c.commit.Unlock()
	t := c.mu.topicsByName[name]
	if t == nil {
		return nil, fmt.Errorf("rebuild key index of %q: %w", name, kerr.UnknownTopicOrPartition)
	}
	if !t.kvIndexed {
		return nil, coordapi.Errorf(kerr.InvalidConfig, "topic %q does not have %s=true", name, coordapi.ConfigKVIndexEnabled)
	}
	c.stopRebuildLocked(t.id)
	// Not ready before the commit drops the index: a lookup must not
	// read the dropped index as a complete one.
	c.mu.Lock()
	wasRebuilding := t.kvRebuilding
	t.kvRebuilding = true
	c.indexEpoch.Add(1)
	c.mu.Unlock()
	b := c.db.NewBatch()
	c.kv.DropTopic(b, t.id)
	c.kv.SetReady(b, t.id, false)
	err := c.write(b, pebble.Sync)
	b.Close()
	if err != nil {
		c.mu.Lock()
		t.kvRebuilding = wasRebuilding
		c.mu.Unlock()
		return nil, fmt.Errorf("rebuild key index of %q: %w", name, err)
	}
	return c.startRebuildLocked(t), nil
}

// startRebuildLocked builds t's index from the log in the background. The
// returned channel receives its outcome. c.commit must be held.
func (c *Coordinator) startRebuildLocked(t *topicState) <-chan error {
	done := make(chan error, 1)
	if c.commit.closing {
		done <- fmt.Errorf("rebuild key index of %q: %w", t.name, coordapi.ErrClosed)
		return done
	}
	if c.opts.Objects == nil {
		err := fmt.Errorf("rebuild key index of %q: no object reader configured", t.name)
		c.log.Error("key index stays not ready", "topic", t.name, "err", err)
		done <- err
		return done
	}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	c.rebuilds[t.id] = rebuild{cancel: cancel, stopped: stopped}
	id, name, partitions := t.id, t.name, int32(len(t.parts))
	go func() {
		defer close(stopped)
		err := kvindex.Rebuild(ctx, c.kv, id, partitions, logSource{c})
		if err == nil {
			// Ready is committed: lookups may use the index.
			c.mu.Lock()
			t.kvRebuilding = false
			c.indexEpoch.Add(1) // a lookup that began during the build fails its check
			c.mu.Unlock()
			c.log.Info("key index built from the log", "topic", name)
		} else if !errors.Is(err, context.Canceled) && !errors.Is(err, kvindex.ErrRebuildAborted) {
			c.log.Error("key index rebuild failed", "topic", name, "err", err)
		}
		done <- err
	}()
	return done
}

// stopRebuildLocked cancels a running rebuild of id and waits for it.
// c.commit must be held (the rebuild takes it only in HighWatermark, which
// gives up on the cancel).
func (c *Coordinator) stopRebuildLocked(id coordapi.TopicID) {
	if r, ok := c.rebuilds[id]; ok {
		r.cancel()
		<-r.stopped
		delete(c.rebuilds, id)
	}
}

// rebuildRunningLocked reports whether a rebuild of id is running.
// c.commit must be held.
func (c *Coordinator) rebuildRunningLocked(id coordapi.TopicID) bool {
	r, ok := c.rebuilds[id]
	if !ok {
		return false
	}
	select {
	case <-r.stopped:
		return false
	default:
		return true
	}
}

// lockCommit locks c.commit, or returns ctx's error if ctx is done first
// (then c.commit is unlocked as soon as it is got).
func (c *Coordinator) lockCommit(ctx context.Context) error {
	locked := make(chan struct{})
	go func() {
		c.commit.Lock()
		close(locked)
	}()
	select {
	case <-locked:
		return nil
	case <-ctx.Done():
		go func() {
			<-locked
			c.commit.Unlock()
		}()
		return ctx.Err()
	}
}

type rebuild struct {
	cancel  context.CancelFunc
	stopped chan struct{}
}

// logSource serves the committed log to kvindex.Rebuild.
type logSource struct{ c *Coordinator }

// HighWatermark reads under c.commit, so that every offset below it is in
// Pebble and its index entries are written by the commit that wrote it. It
// gives up waiting for c.commit when ctx is done: the rebuild's stopper
// holds c.commit while it waits for the rebuild.
func (s logSource) HighWatermark(ctx context.Context, id [16]byte, partition int32) (int64, error) {
	if err := s.c.lockCommit(ctx); err != nil {
		return 0, err
	}
	defer s.c.commit.Unlock()
	if !s.c.owns(coordapi.TopicID(id), partition) {
		return 0, nil // another shard's: nothing of it is here to index
	}
	s.c.mu.RLock()
	defer s.c.mu.RUnlock()
	_, st, err := s.c.partitionLocked(coordapi.TopicID(id), partition)
	return st.hwm, err
}

// Batches reads the partition's batches back from the object store
// (logread.Batches).
func (s logSource) Batches(ctx context.Context, id [16]byte, partition int32, from int64) iter.Seq2[kvindex.LogBatch, error] {
	return logread.Batches(ctx, s.c, s.c.opts.Objects, coordapi.TopicID(id), partition, from)
}
