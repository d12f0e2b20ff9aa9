package coordinator

import (
	"context"
	"errors"
	"fmt"
	"maps"

	"github.com/cockroachdb/pebble"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/coordinator/handover"
	"github.com/floe-io/floe/coordinator/layout"
)

// The handover (package handover draws its four calls and the growth):
// this shard's side of each call, which reads and writes the partition's
// rows and its handover row ('e'), the last word on whether the partition
// is this shard's over the shard count (owns).

// placement is which partitions are this shard's: those coordapi.ShardOf
// gives it of shards, but for the partitions with a handover row (moves,
// by state). Immutable once stored: a change stores a copy.
type placement struct {
	shards  int
	version uint64 // the shard map's (grow.go)
	moves   map[partKey]byte
}

// owns reports whether a partition is this coordinator's: always, without
// shards and handovers.
func (c *Coordinator) owns(id coordapi.TopicID, partition int32) bool {
	pl := c.place.Load()
	if len(pl.moves) > 0 {
		if s, ok := pl.moves[partKey{id, partition}]; ok {
			return s == layout.HandoverIn
		}
	}
	// ShardOf answers 0 for a count of 1, which a shard above 0 serves by
	// while it waits for the growth that adds it.
	return coordapi.ShardOf(id, partition, pl.shards) == c.opts.Shard
}

// moveState returns a partition's handover state, 0 for none.
func (c *Coordinator) moveState(pk partKey) byte { return c.place.Load().moves[pk] }

// setMoveLocked installs a partition's handover state. c.commit must be
// held.
func (c *Coordinator) setMoveLocked(pk partKey, state byte) {
	pl := c.place.Load()
	next := &placement{shards: pl.shards, version: pl.version, moves: maps.Clone(pl.moves)}
	if next.moves == nil {
		next.moves = map[partKey]byte{}
	}
	next.moves[pk] = state
	c.place.Store(next)
}

// loadHandovers reads the handover rows into the placement. It runs from
// load, before c is shared.
func (c *Coordinator) loadHandovers() error {
	moves := map[partKey]byte{}
	err := c.scan(layout.PrefixHandover, func(k, v []byte) error {
		id, p, err := layout.DecodeHandoverKey(k)
		if err != nil {
			return err
		}
		state, _, err := layout.DecodeHandover(v)
		if err != nil {
			return fmt.Errorf("coordinator: handover row %x: %w", k, err)
		}
		moves[partKey{id, p}] = state
		return nil
	})
	if err != nil {
		return err
	}
	var version uint64
	v, closer, err := c.db.Get(layout.KeyMapVersion)
	switch {
	case errors.Is(err, pebble.ErrNotFound):
	case err != nil:
		return fmt.Errorf("coordinator: read the map version: %w", err)
	default:
		version, err = layout.DecodeUint64("map version", v)
		_ = closer.Close()
		if err != nil {
			return err
		}
	}
	c.place.Store(&placement{shards: max(c.layoutShards, 1), version: version, moves: moves})
	return nil
}

// notOwnedError is partitionLocked's refusal of a partition this shard
// does not serve.
func (c *Coordinator) notOwnedError(t *topicState, partition int32) error {
	if s := c.moveState(partKey{t.id, partition}); s != 0 {
		return fmt.Errorf("topic %q partition %d is moving between shards (handover state %d on shard %d): %w",
			t.name, partition, s, c.opts.Shard, kerr.NotLeaderForPartition)
	}
	return fmt.Errorf("topic %q partition %d is shard %d's, not this shard's (%d): %w", t.name, partition,
		coordapi.ShardOf(t.id, partition, c.place.Load().shards), c.opts.Shard, kerr.NotLeaderForPartition)
}

// FencePartition starts moving a partition out of this shard, as part of
// map version version: from its return on, the partition's commits,
// DeleteRecords and tier jobs are refused with NOT_LEADER_OR_FOLLOWER,
// and every commit accepted before it is in the rows ExportPartition
// reads. Fencing a fenced partition does nothing. Kafka-level failures:
// UnknownTopicID, UnknownTopicOrPartition, NotLeaderForPartition (not
// this shard's), CoordinatorLoadInProgress (its topic's key index or
// postings are being built from the log: retry once they are).
func (c *Coordinator) FencePartition(ctx context.Context, id coordapi.TopicID, partition int32, version uint64) error {
	if err := c.enter(ctx); err != nil {
		return err
	}
	defer c.leave()
	c.commit.Lock()
	defer c.commit.Unlock()
	pk := partKey{id, partition}
	if s := c.moveState(pk); s == layout.HandoverOut || s == layout.HandoverGone {
		return nil
	}
	c.mu.RLock()
	t, _, err := c.partitionLocked(id, partition)
	rebuilding := err == nil && (t.kvRebuilding || t.postingsRebuilding)
	c.mu.RUnlock()
	if err != nil {
		return fmt.Errorf("fence: %w", err)
	}
	if rebuilding {
		return fmt.Errorf("fence %q/%d: %w", t.name, partition,
			coordapi.Errorf(kerr.CoordinatorLoadInProgress, "the topic's key index or postings are being built from the log"))
	}
	b := c.db.NewBatch()
	defer b.Close()
	_ = b.Set(layout.HandoverKey(id, partition), layout.EncodeHandover(layout.HandoverOut, version), nil)
	if err := c.write(b, pebble.Sync); err != nil {
		return fmt.Errorf("fence %q/%d: %w", t.name, partition, err)
	}
	c.setMoveLocked(pk, layout.HandoverOut)
	c.log.Info("partition fenced for a handover", "topic", t.name, "partition", partition, "version", version)
	return nil
}

// DefaultChunkBytes is ExportPartition's chunk size when asked for none.
const DefaultChunkBytes = handover.DefaultChunkBytes

// ExportPartition answers the chunk of a fenced partition's rows that
// follows cursor (nil: the first), at most about maxBytes of keys and
// values (at least one row; DefaultChunkBytes when 0). The last chunk
// (Done) carries the partition's checkpoint, producer states and table
// covered offset. The rows do not change while the partition is fenced,
// so the chunks of one pass are consistent; a pass started again from
// nil is another whole copy. A partition dropped here after its handover
// answers a chunk with Gone set and nothing else: its rows are on the
// shard it moved to, which must not import an empty partition over them.
// A partition not fenced is refused with NotLeaderForPartition.
func (c *Coordinator) ExportPartition(ctx context.Context, id coordapi.TopicID, partition int32, cursor []byte, maxBytes int) (coordapi.PartitionChunk, error) {
	ch := coordapi.PartitionChunk{TopicID: id, Partition: partition, First: len(cursor) == 0, TableCovered: -1}
	if err := c.enter(ctx); err != nil {
		return ch, err
	}
	defer c.leave()
	if maxBytes <= 0 {
		maxBytes = DefaultChunkBytes
	}
	pk := partKey{id, partition}
	switch c.moveState(pk) {
	case layout.HandoverOut:
	case layout.HandoverGone:
		ch.First, ch.Gone = false, true
		return ch, nil
	default:
		return ch, fmt.Errorf("export %s/%d: %w", id, partition,
			coordapi.Errorf(kerr.NotLeaderForPartition, "the partition is not fenced for a handover on shard %d", c.opts.Shard))
	}
	rows, objects, full, err := handover.ExportRows(layout.PartitionRowsBounds(id, partition), cursor, maxBytes, c.scanRange)
	if err != nil {
		return ch, fmt.Errorf("export %s/%d: %w", id, partition, err)
	}
	ch.Rows = rows
	if len(objects) > 0 {
		c.mu.RLock()
		for num := range objects {
			o := c.mu.objects[num]
			if o == nil {
				c.mu.RUnlock()
				return ch, fmt.Errorf("export %s/%d: a batch row names object %d, which has no row", id, partition, num)
			}
			ch.Objects = append(ch.Objects, coordapi.ChunkObject{Num: num, Key: o.key, Size: o.size, CreatedMs: o.createdMs, BrokerID: o.brokerID})
		}
		c.mu.RUnlock()
	}
	if full {
		ch.Cursor = ch.Rows[len(ch.Rows)-1].Key
		return ch, nil
	}
	// The last chunk: the partition's state, as of the rows above (the
	// fence keeps commits out).
	c.commit.Lock()
	defer c.commit.Unlock()
	c.mu.RLock()
	t := c.mu.topicsByID[id]
	if t == nil || int(partition) >= len(t.parts) {
		c.mu.RUnlock()
		return ch, fmt.Errorf("export %s/%d: %w", id, partition, kerr.UnknownTopicOrPartition)
	}
	st := t.parts[partition]
	c.mu.RUnlock()
	ch.Done = true
	ch.Checkpoint = st.encode()
	for prk, ps := range c.commit.producers {
		if prk.topic == id && prk.partition == partition {
			ch.Producers = append(ch.Producers, coordapi.ChunkRow{
				Key: layout.ProducerKey(prk.producerID, id, partition), Value: layout.EncodeProducer(&ps.Producer)})
		}
	}
	covered := map[int32]int64{}
	if err := c.readTableCovered(id, covered); err != nil {
		return ch, fmt.Errorf("export %s/%d: table covered offsets: %w", id, partition, err)
	}
	if next, ok := covered[partition]; ok {
		ch.TableCovered = next
	}
	return ch, nil
}

// ImportPartition writes one chunk of a partition moving to this shard
// (ExportPartition's, in order) through the log. The first chunk drops
// whatever the partition has here (the rows of an interrupted import);
// each batch row is renumbered to this shard's object of the same key,
// created if needed, whose live bytes count the row; the last chunk
// installs the partition's checkpoint, producer states and table covered
// offset and makes the partition this shard's. A chunk sent again is
// written again to the same effect: rows are blind writes, and a batch
// row's bytes are counted once whatever it replaces. A partition this
// shard already serves, or one moving out of it, is refused.
func (c *Coordinator) ImportPartition(ctx context.Context, ch *coordapi.PartitionChunk) error {
	id, partition := ch.TopicID, ch.Partition
	if c.opts.TopicOwner != nil {
		c.mu.RLock()
		t := c.mu.topicsByID[id]
		known := t != nil && int(partition) < len(t.parts)
		c.mu.RUnlock()
		if !known { // before entering: a follow enters the calls it makes
			if _, err := c.FollowTopicID(ctx, c.opts.TopicOwner, id); err != nil {
				return fmt.Errorf("import %s/%d: %w", id, partition, err)
			}
		}
	}
	if err := c.enter(ctx); err != nil {
		return err
	}
	defer c.leave()
	c.commit.Lock()
	defer c.commit.Unlock()
	// Its history here starts again (package durable).
	defer c.dur.Forget(partKey{id, partition})
	wrap := func(err error) error { return fmt.Errorf("import %s/%d: %w", id, partition, err) }
	c.mu.RLock()
	t := c.mu.topicsByID[id]
	var cur partState
	if t != nil && partition >= 0 && int(partition) < len(t.parts) {
		cur = t.parts[partition]
	}
	c.mu.RUnlock()
	switch {
	case t == nil:
		return wrap(kerr.UnknownTopicID)
	case partition < 0 || int(partition) >= len(t.parts):
		return wrap(kerr.UnknownTopicOrPartition)
	}
	pk := partKey{id, partition}
	state := c.moveState(pk)
	switch {
	case ch.Gone:
		return wrap(errors.New("the partition moved out of the exporting shard earlier: nothing to import"))
	case state == layout.HandoverOut || state == layout.HandoverGone:
		return wrap(fmt.Errorf("the partition is moving out of shard %d, not into it", c.opts.Shard))
	case ch.First && state == 0 && c.owns(id, partition) && (cur.hwm > 0 || cur.logStart > 0):
		return wrap(fmt.Errorf("shard %d serves the partition already, up to offset %d", c.opts.Shard, cur.hwm))
	case !ch.First && state != layout.HandoverImporting:
		return wrap(errors.New("no import of the partition is in progress: start again from its first chunk"))
	}
	ranges := layout.PartitionRowsBounds(id, partition)
	nowMs := c.now().UnixMilli()
	b := c.db.NewBatch()
	defer b.Close()
	live := map[uint64]int64{} // this shard's objects: bytes the chunk adds (or takes)
	var dropProducers []producerStateKey
	if ch.First {
		rs, err := c.rowStats(ranges[0][0], ranges[0][1])
		if err != nil {
			return wrap(err)
		}
		for num, n := range rs.Dead {
			live[num] -= n
		}
		for _, r := range ranges {
			_ = b.DeleteRange(r[0], r[1], nil)
		}
		for prk := range c.commit.producers {
			if prk.topic == id && prk.partition == partition {
				dropProducers = append(dropProducers, prk)
				_ = b.Delete(layout.ProducerKey(prk.producerID, id, partition), nil)
			}
		}
	}
	local := func(key string) (uint64, bool) { num, ok := c.mu.objectsByKey[key]; return num, ok }
	rows, err := handover.PlanRows(ch, ranges, c.commit.nextObject, live, local, c.batchRowBytes)
	if err != nil {
		return wrap(err)
	}
	next, meta, written := rows.Next, rows.Meta, rows.Written
	createdNums := make(map[uint64]*objectState, len(rows.Created))
	for num, co := range rows.Created {
		createdNums[num] = &objectState{num: num, key: co.Key, size: co.Size, state: ObjectGarbage,
			createdMs: co.CreatedMs, garbageSinceMs: nowMs, brokerID: co.BrokerID}
	}
	for _, row := range rows.Rows {
		_ = b.Set(row.Key, row.Value, nil)
	}
	var (
		cp        layout.Partition
		producers map[producerStateKey]*producerState
	)
	if ch.Done {
		var err error
		if cp, _, err = layout.DecodePartition(ch.Checkpoint); err != nil {
			return wrap(err)
		}
		// The coordinates' size here: the rows of earlier chunks and
		// this chunk's.
		if !ch.First {
			err := c.scanRange(ranges[0][0], ranges[0][1], func(k, v []byte) error {
				if !written[string(k)] {
					meta += int64(len(k) + len(v))
				}
				return nil
			})
			if err != nil {
				return wrap(err)
			}
		}
		cp.MetaBytes = meta
		_ = b.Set(layout.PartitionKey(id, partition), layout.EncodePartition(&cp), nil)
		ps, err := handover.Producers(ch)
		if err != nil {
			return wrap(err)
		}
		producers = make(map[producerStateKey]*producerState, len(ps))
		for i, p := range ps {
			producers[producerStateKey{p.ID, id, partition}] = &producerState{Producer: p.State}
			_ = b.Set(ch.Producers[i].Key, ch.Producers[i].Value, nil)
		}
		covered := map[int32]int64{}
		if err := c.readTableCovered(id, covered); err != nil {
			return wrap(err)
		}
		_, had := covered[partition]
		if ch.TableCovered >= 0 {
			covered[partition] = ch.TableCovered
		} else {
			delete(covered, partition)
		}
		switch {
		case len(covered) > 0:
			_ = b.Set(layout.TableCoveredKey(id), layout.EncodeTableCovered(covered), nil)
		case had:
			_ = b.Delete(layout.TableCoveredKey(id), nil)
		}
		_ = b.Set(layout.HandoverKey(id, partition), layout.EncodeHandover(layout.HandoverIn, 0), nil)
	} else if ch.First {
		_ = b.Set(layout.HandoverKey(id, partition), layout.EncodeHandover(layout.HandoverImporting, 0), nil)
	}
	objs := make([]*objectState, 0, len(live))
	for num, n := range live {
		var o objectState
		if old := c.mu.objects[num]; old != nil {
			o = *old
		} else if nc := createdNums[num]; nc != nil {
			o = *nc
		} else {
			return wrap(fmt.Errorf("object %d has no row", num))
		}
		o.live += n
		switch {
		case o.live > 0 && o.state == ObjectGarbage:
			o.state, o.garbageSinceMs = ObjectLive, 0
		case o.live <= 0:
			if o.live < 0 {
				c.log.Error("object live bytes went negative in an import", "object", o.key, "live", o.live)
			}
			o.live = 0
			if o.state == ObjectLive {
				o.state, o.garbageSinceMs = ObjectGarbage, nowMs
			}
		}
		_ = b.Set(layout.ObjectKey(num), o.encode(), nil)
		objs = append(objs, &o)
	}
	if next != c.commit.nextObject {
		_ = b.Set(layout.KeyNextObject, layout.EncodeUint64(next), nil)
	}
	c.indexEpoch.Add(1) // key index rows of the partition change
	if err := c.write(b, pebble.Sync); err != nil {
		return wrap(err)
	}

	// Written: install in memory.
	c.commit.nextObject = next
	c.mu.Lock()
	c.installObjectsLocked(objs)
	if ch.First {
		t.parts[partition] = newPartState()
		c.forgetPartTxnsLocked(pk)
	}
	var loadErr error
	if ch.Done {
		t.parts[partition] = partStateOf(cp)
		loadErr = c.loadPartTxnsLocked(pk)
	}
	c.mu.Unlock()
	for _, prk := range dropProducers {
		delete(c.commit.producers, prk)
	}
	delete(c.commit.logs, pk)
	switch {
	case ch.Done:
		maps.Copy(c.commit.producers, producers)
		if ch.TableCovered >= 0 {
			c.tier.SetTableCovered(id, partition, ch.TableCovered)
		}
		c.setMoveLocked(pk, layout.HandoverIn)
		c.log.Info("partition imported", "topic", t.name, "partition", partition, "log_start", cp.LogStart, "high_watermark", cp.HWM)
	case ch.First:
		c.setMoveLocked(pk, layout.HandoverImporting)
	}
	if loadErr != nil {
		return wrap(loadErr)
	}
	return nil
}

// batchRowBytes is handover.RowBytes of the row of key k in Pebble, if any.
func (c *Coordinator) batchRowBytes(k []byte) (n int64, object uint64, found bool, err error) {
	v, closer, err := c.db.Get(k)
	if errors.Is(err, pebble.ErrNotFound) {
		return 0, 0, false, nil
	}
	if err != nil {
		return 0, 0, false, fmt.Errorf("read %x: %w", k, err)
	}
	defer closer.Close()
	n, object, err = handover.RowBytes(k, v)
	return n, object, err == nil, err
}

// forgetPartTxnsLocked forgets a partition's open and aborted
// transactions and held keys. c.commit and c.mu must be held.
func (c *Coordinator) forgetPartTxnsLocked(pk partKey) {
	delete(c.mu.aborted, pk)
	delete(c.commit.openTxns, pk)
	delete(c.commit.txnKeys, pk)
	c.setFirstOpenLocked(pk)
}

// loadPartTxnsLocked reads a partition's open and aborted transactions
// and held keys from its rows, as loadTxns does for all. c.commit and
// c.mu must be held.
func (c *Coordinator) loadPartTxnsLocked(pk partKey) error {
	c.forgetPartTxnsLocked(pk)
	ranges := layout.PartitionRowsBounds(pk.topic, pk.partition)
	for _, r := range ranges {
		var err error
		switch r[0][0] {
		case layout.PrefixTxnOpen:
			err = c.scanRange(r[0], r[1], c.loadOpenTxnLocked)
		case layout.PrefixAborted:
			err = c.scanRange(r[0], r[1], c.loadAbortedLocked)
		case layout.PrefixTxnKeys:
			err = c.scanRange(r[0], r[1], c.loadTxnKeysLocked)
		}
		if err != nil {
			return err
		}
	}
	c.setFirstOpenLocked(pk)
	return nil
}

// DropPartition deletes the rows of a partition fenced and moved to
// another shard, taking their bytes off this shard's objects (which
// become garbage here if nothing else of this shard is in them, from now:
// collection keeps them a grace longer), and marks it gone, so that
// ExportPartition refuses it from then on. Call it only once the
// partition's import completed on the shard it moved to. Dropping a
// dropped partition does nothing; one not fenced is refused.
func (c *Coordinator) DropPartition(ctx context.Context, id coordapi.TopicID, partition int32) error {
	if err := c.enter(ctx); err != nil {
		return err
	}
	defer c.leave()
	c.commit.Lock()
	defer c.commit.Unlock()
	pk := partKey{id, partition}
	defer c.dur.Forget(pk) // its history here ends (package durable)
	switch c.moveState(pk) {
	case layout.HandoverGone:
		return nil
	case layout.HandoverOut:
	default:
		return fmt.Errorf("drop %s/%d: %w", id, partition,
			coordapi.Errorf(kerr.NotLeaderForPartition, "the partition is not fenced for a handover on shard %d", c.opts.Shard))
	}
	c.mu.RLock()
	t := c.mu.topicsByID[id]
	c.mu.RUnlock()
	if t == nil || partition < 0 || int(partition) >= len(t.parts) {
		return fmt.Errorf("drop %s/%d: %w", id, partition, kerr.UnknownTopicOrPartition)
	}
	ranges := layout.PartitionRowsBounds(id, partition)
	rs, err := c.rowStats(ranges[0][0], ranges[0][1])
	if err != nil {
		return fmt.Errorf("drop %s/%d: %w", id, partition, err)
	}
	b := c.db.NewBatch()
	defer b.Close()
	for _, r := range ranges {
		_ = b.DeleteRange(r[0], r[1], nil)
	}
	var producers []producerStateKey
	for prk := range c.commit.producers {
		if prk.topic == id && prk.partition == partition {
			producers = append(producers, prk)
			_ = b.Delete(layout.ProducerKey(prk.producerID, id, partition), nil)
		}
	}
	empty := newPartState()
	_ = b.Set(layout.PartitionKey(id, partition), empty.encode(), nil)
	covered := map[int32]int64{}
	if err := c.readTableCovered(id, covered); err != nil {
		return fmt.Errorf("drop %s/%d: %w", id, partition, err)
	}
	if _, ok := covered[partition]; ok {
		delete(covered, partition)
		if len(covered) == 0 {
			_ = b.Delete(layout.TableCoveredKey(id), nil)
		} else {
			_ = b.Set(layout.TableCoveredKey(id), layout.EncodeTableCovered(covered), nil)
		}
	}
	_ = b.Set(layout.HandoverKey(id, partition), layout.EncodeHandover(layout.HandoverGone, 0), nil)
	objects := c.deadBytesLocked(b, rs.Dead, c.now().UnixMilli())
	c.indexEpoch.Add(1) // before the drop is committed
	if err := c.write(b, pebble.Sync); err != nil {
		return fmt.Errorf("drop %s/%d: %w", id, partition, err)
	}
	c.mu.Lock()
	t.parts[partition] = empty
	c.installObjectsLocked(objects)
	c.forgetPartTxnsLocked(pk)
	c.mu.Unlock()
	for _, prk := range producers {
		delete(c.commit.producers, prk)
	}
	delete(c.commit.logs, pk)
	c.setMoveLocked(pk, layout.HandoverGone)
	c.log.Info("partition dropped after its handover", "topic", t.name, "partition", partition,
		"batches", rs.Batches, "segments", rs.Segments, "objects_touched", len(objects))
	return nil
}

// HandoverPeer is a shard as a handover drives it (package handover).
type HandoverPeer = handover.Peer

var _ HandoverPeer = (*Coordinator)(nil)
