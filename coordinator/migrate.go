package coordinator

import (
	"fmt"

	"github.com/cockroachdb/pebble"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/coordinator/layout"
)

// Format 1 keyed each batch alone ('b' topic partition last-offset), with
// a Version1 value: flags(1: LogAppendTime), object number, byte offset,
// byte length, last offset delta, max timestamp. Its partition records
// held the high watermark and max timestamp as of the last commit.
//
// migrateFormat1 rewrites each such batch as a run of one batch under the
// same key, then records format 2. The runs' max timestamp state is left
// at -1: every migrated run ends below its partition record's high
// watermark, so loadPartitionEnds never reads it. An interrupted migration
// is resumed by the next Open: values already rewritten (format byte 2) are
// skipped. It runs from load, before c is shared.
func (c *Coordinator) migrateFormat1() error {
	c.log.Info("migrating coordinator state from format 1 to 2", "dir", c.opts.Dir)
	const chunk = 4096
	b := c.db.NewBatch()
	defer func() { b.Close() }()
	var n int
	run := make([]coordapi.BatchCoord, 1)
	h := layout.RunHeader{MaxTimestamp: -1, MaxTimestampOffset: -1, MaxTimestampLast: -1}
	var val []byte
	err := c.scan(layout.PrefixBatch, func(k, v []byte) error {
		if len(v) > 0 && v[0] == layout.ValueRun {
			return nil
		}
		last, err := layout.DecodeBatchKey(k)
		if err != nil {
			return err
		}
		bv, err := layout.DecodeBatchV1(v)
		if err != nil {
			return fmt.Errorf("batch %x: %w", k, err)
		}
		h.Object, h.LogAppendTime = bv.Object, bv.LogAppendTime
		run[0] = coordapi.BatchCoord{
			ByteOffset: bv.ByteOffset, ByteLength: bv.ByteLength,
			BaseOffset: last - int64(bv.LastOffsetDelta), LastOffset: last, MaxTimestamp: bv.MaxTimestamp,
		}
		val = layout.AppendRunProducerCount(layout.AppendBatchRun(val[:0], &h, run), 0)
		_ = b.Set(k, val, nil)
		if n++; n%chunk == 0 {
			if err := c.write(b, pebble.NoSync); err != nil {
				return err
			}
			b.Close()
			b = c.db.NewBatch()
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("coordinator: migrate format 1: %w", err)
	}
	// The WAL is written in order: syncing the format key syncs every
	// rewrite before it.
	_ = b.Set(layout.KeyFormatVersion, layout.EncodeUint64(layout.FormatVersion2), nil)
	if err := c.write(b, pebble.Sync); err != nil {
		return fmt.Errorf("coordinator: migrate format 1: %w", err)
	}
	c.log.Info("coordinator state migrated to format 2", "batches", n)
	return nil
}

// Format 2 partition checkpoints (partition value format 1) end after the
// max timestamp state: they have no WAL start (no segments existed, so it
// is the log start) and no byte counts. migrateFormat2 counts the bytes of
// each such partition's runs, writes its checkpoint in the current
// layout, and records format 3, in one synced batch; until it commits,
// the next Open does it again. parts are the partitions whose checkpoint
// was format 1, their runs since it already replayed. It runs from load,
// before c is shared.
func (c *Coordinator) migrateFormat2(parts []partKey) error {
	c.log.Info("migrating coordinator state from format 2 to 3", "dir", c.opts.Dir, "partitions", len(parts))
	b := c.db.NewBatch()
	defer b.Close()
	for _, pk := range parts {
		t := c.mu.topicsByID[pk.topic]
		st := &t.parts[pk.partition]
		lower, upper := layout.BatchPartitionBounds(pk.topic, pk.partition)
		rs, err := c.rowStats(lower, upper)
		if err != nil {
			return fmt.Errorf("coordinator: migrate format 2: %w", err)
		}
		st.bytes, st.segBytes, st.segments, st.metaBytes = rs.Bytes, rs.SegBytes, rs.Segments, rs.RowBytes
		c.checkpointLocked(b, pk, st, nil)
	}
	_ = b.Set(layout.KeyFormatVersion, layout.EncodeUint64(layout.FormatVersion), nil)
	if err := c.write(b, pebble.Sync); err != nil {
		return fmt.Errorf("coordinator: migrate format 2: %w", err)
	}
	for _, pk := range parts {
		c.checkpointedLocked(pk)
	}
	c.log.Info("coordinator state migrated to format 3", "partitions", len(parts))
	return nil
}
