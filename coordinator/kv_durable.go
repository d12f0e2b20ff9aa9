package coordinator

import (
	"sync"

	"github.com/floe-io/floe/coordapi"
)

// kvDurable knows, for each partition of a kv-indexed topic, which of its
// offsets the coordinator's log has made durable, so that a /kv lookup
// answered in the coordinator's process (the embedded default) need not
// wait for the log when its answer depends on durable commits only.
//
// A commit installs its partitions' state in memory (and its index entries
// in Pebble) before the log has it; an answer read from that state must
// not leave the process before the log does (as rpc replies, which the
// log gates). ha.Node.Barrier makes an answer wait for everything the
// coordinator has done, which under load is always a commit or two in
// flight: every lookup waited for the device's sync of commits that had
// nothing to do with its key, 115-167 ms when those syncs stalled
// (execution traces of the lifecycle soak, 2026-12-07).
// A found key's answer depends on the commit that wrote its entry: the
// commit holding its offset, or, for a transactional batch, the commit of
// its transaction's marker, which writes the held keys. So an answer whose
// offset is below durable and whose partition had no marker committed
// since that high watermark is durable already. A key not found may have
// been tombstoned by any commit the lookup saw: its answer is durable once
// every commit below the high watermark read after the lookup is.
type kvDurable struct {
	mu sync.Mutex
	// hwm is each partition's high watermark as of its last commit the
	// log made durable (it only grows: the log makes commits durable in
	// order).
	hwm map[partKey]int64
	// marker is the high watermark after the last commit with a control
	// batch (a transaction's marker) in each partition, set before its
	// write: its keys become the index's then.
	marker map[partKey]int64
}

// kvMark is a kv-indexed partition's high watermark after a commit.
type kvMark struct {
	pk  partKey
	hwm int64
}

// markers notes commits with markers, before their write.
func (d *kvDurable) markers(ms []kvMark) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.marker == nil {
		d.marker = make(map[partKey]int64)
	}
	for _, m := range ms {
		d.marker[m.pk] = max(d.marker[m.pk], m.hwm)
	}
}

// durable notes commits the log has made durable.
func (d *kvDurable) durable(ms []kvMark) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.hwm == nil {
		d.hwm = make(map[partKey]int64)
	}
	for _, m := range ms {
		d.hwm[m.pk] = max(d.hwm[m.pk], m.hwm)
	}
}

// covers reports whether every commit below end in a partition that
// wrote its index (a record's own, and every marker) is durable.
func (d *kvDurable) covers(pk partKey, end int64) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	h, ok := d.hwm[pk]
	return ok && end <= h && d.marker[pk] <= h
}

// drop forgets a deleted topic's partitions.
func (d *kvDurable) drop(id coordapi.TopicID, partitions int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for p := range partitions {
		delete(d.hwm, partKey{id, int32(p)})
		delete(d.marker, partKey{id, int32(p)})
	}
}

// KvDurable reports whether a ready KvGet answer depends on durable commits
// only, so that it may leave the process without waiting for the log (see
// kvDurable): a key found at an offset in [log start, high watermark), or
// a key not found.
func (c *Coordinator) KvDurable(req coordapi.KvGetRequest, res coordapi.KvGetResult) bool {
	pk := partKey{req.TopicID, req.Partition}
	switch {
	case !res.Ready:
		return false
	case !res.Found:
		return c.kvDur.covers(pk, res.HighWatermark)
	case res.Offset < res.LogStartOffset || res.Offset >= res.HighWatermark:
		return false // the log start or high watermark decided it
	default:
		return c.kvDur.covers(pk, res.Offset+1)
	}
}
