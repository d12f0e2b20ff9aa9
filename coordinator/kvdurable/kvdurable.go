// Package kvdurable knows, for each partition of a kv-indexed topic,
// which of its offsets the coordinator's log has made durable, so that a
// /kv lookup answered in the coordinator's process (the embedded default)
// need not wait for the log when its answer depends on durable commits
// only.
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
// every commit written to its partition so far is.
//
// A Tracker has one lock, taken alone: under none of the coordinator's,
// and taking none.
package kvdurable

import "sync"

// Tracker is the durable high watermarks of the partitions, keyed by K
// (the coordinator's partition key). The zero value is ready to use.
type Tracker[K comparable] struct {
	mu sync.Mutex
	// hwm is each partition's high watermark as of its last commit the
	// log made durable (it only grows: the log makes commits durable in
	// order).
	hwm map[K]int64
	// applied is each partition's high watermark after the last commit
	// written to it, set before the write.
	applied map[K]int64
	// marker is the high watermark after the last commit with a control
	// batch (a transaction's marker) in each partition, set before its
	// write: its keys become the index's then.
	marker map[K]int64
}

// Mark is a kv-indexed partition's high watermark after a commit.
type Mark[K comparable] struct {
	Key K
	HWM int64
}

// Writing notes a commit's partitions before its write: ms all of them,
// markers those where it holds a control batch (a transaction's marker).
// A lookup that sees the write in the index finds them noted.
func (d *Tracker[K]) Writing(ms, markers []Mark[K]) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.applied == nil {
		d.applied, d.marker = make(map[K]int64), make(map[K]int64)
	}
	for _, m := range ms {
		d.applied[m.Key] = max(d.applied[m.Key], m.HWM)
	}
	for _, m := range markers {
		d.marker[m.Key] = max(d.marker[m.Key], m.HWM)
	}
}

// Durable notes commits the log has made durable.
func (d *Tracker[K]) Durable(ms []Mark[K]) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.hwm == nil {
		d.hwm = make(map[K]int64)
	}
	for _, m := range ms {
		d.hwm[m.Key] = max(d.hwm[m.Key], m.HWM)
	}
}

// Covers reports whether every commit below end in a partition that
// wrote its index (a record's own, and every marker) is durable.
func (d *Tracker[K]) Covers(k K, end int64) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	h, ok := d.hwm[k]
	return ok && end <= h && d.marker[k] <= h
}

// AllDurable reports whether every commit written to a partition so far
// is durable: what a key not found needs, since any of them may have
// tombstoned it (the high watermark a lookup reads may lag the index,
// which a commit's write changes before the coordinator installs its
// high watermark).
func (d *Tracker[K]) AllDurable(k K) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	h, ok := d.hwm[k]
	return ok && d.applied[k] <= h && d.marker[k] <= h
}

// Forget forgets partitions (a deleted topic's).
func (d *Tracker[K]) Forget(keys ...K) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, k := range keys {
		delete(d.hwm, k)
		delete(d.applied, k)
		delete(d.marker, k)
	}
}
