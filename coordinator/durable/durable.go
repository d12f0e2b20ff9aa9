// Package durable knows, for each partition, which of its offsets the
// coordinator's log has made durable, so that an answer that depends only
// on those need not wait for the log: a fetch's FindBatches reads no
// further than the durable high watermark, and a /kv lookup answered in
// the coordinator's process (the embedded default) leaves at once when its
// key's entry is durable.
//
// A commit installs its partitions' state in memory (and its index entries
// in Pebble) before the log has it; an answer read from that state must
// not leave the coordinator before the log does. Package ha's barrier
// makes an answer wait for everything the coordinator has done, which
// under load is always a commit or two in flight: every lookup and every
// fetch waited for the log (the device's sync in the embedded default, a
// replication round trip on a cluster) of commits that had nothing to do
// with it: /kv lookups waited 115-167 ms when those syncs stalled
// (execution traces of the lifecycle soak, 2026-12-07).
//
// A commit notes its partitions before its write (Writing), with the high
// watermark it gives each, and again once the log has it (Durable); the
// log makes commits durable in order, so a partition's durable high
// watermark only grows. A partition with nothing written since the
// Tracker started is durable whole: the coordinator's state then is what
// it read from its log.
//
// What depends on a transaction's marker (a control batch, committed like
// a broker's batches) is more than its offset: it closes its partition's
// open transaction (the last stable offset, the aborted list) and writes
// the transaction's held keys into the key index. So Mark.Marker notes it,
// and answers that depend on those (read_committed fetches, /kv) are
// durable only once every marker written to the partition is.
//
// A Tracker's lock is the innermost: taken under the coordinator's (a
// commit notes its partitions under its commit lock, a read under its
// state's), and taking none.
package durable

import "sync"

// Tracker is the durable high watermarks of the partitions, keyed by K
// (the coordinator's partition key). The zero value is ready to use.
type Tracker[K comparable] struct {
	mu    sync.Mutex
	parts map[K]part
}

// part is one partition's marks.
type part struct {
	// durable is the high watermark after the last commit the log made
	// durable; known says one was.
	durable int64
	known   bool
	// written is the high watermark after the last commit written, set
	// before the write.
	written int64
	// marker is the high watermark after the last commit with a marker,
	// set before its write.
	marker int64
}

// Mark is a partition's high watermark after a commit, and whether the
// commit holds a transaction's marker there.
type Mark[K comparable] struct {
	Key    K
	HWM    int64
	Marker bool
}

// Writing notes a commit's partitions before its write: an answer that
// sees the write finds them noted.
func (d *Tracker[K]) Writing(ms []Mark[K]) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.parts == nil {
		d.parts = make(map[K]part)
	}
	for _, m := range ms {
		p := d.parts[m.Key]
		p.written = max(p.written, m.HWM)
		if m.Marker {
			p.marker = max(p.marker, m.HWM)
		}
		d.parts[m.Key] = p
	}
}

// Durable notes commits the log has made durable.
func (d *Tracker[K]) Durable(ms []Mark[K]) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, m := range ms {
		p, ok := d.parts[m.Key]
		if !ok {
			continue // forgotten meanwhile
		}
		p.durable, p.known = max(p.durable, m.HWM), true
		d.parts[m.Key] = p
	}
}

// ReadLimit is how far an answer may read partition k, whose high
// watermark in memory is hwm, and still depend only on durable commits:
// hwm itself when nothing was written to k since the Tracker started,
// else its durable high watermark (at most hwm). With markers, an answer
// that depends on markers too (the last stable offset, the aborted
// transactions), ok is false while a marker written to k is not durable;
// it is false too while k's first commit is, its durable high watermark
// unknown. A caller with !ok waits for the log (package ha's barrier).
func (d *Tracker[K]) ReadLimit(k K, hwm int64, markers bool) (limit int64, ok bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	p, written := d.parts[k]
	switch {
	case !written:
		return hwm, true
	case !p.known, markers && p.marker > p.durable:
		return 0, false
	}
	return min(hwm, p.durable), true
}

// Covers reports whether every commit below end in partition k that wrote
// its key index (a record's own, and every marker) is durable: what a
// key found at offset end-1 depends on.
func (d *Tracker[K]) Covers(k K, end int64) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	p, written := d.parts[k]
	return !written || p.known && end <= p.durable && p.marker <= p.durable
}

// AllDurable reports whether every commit written to partition k so far
// is durable: what a key not found needs, since any of them may have
// tombstoned it (the high watermark a lookup reads may lag the index,
// which a commit's write changes before the coordinator installs its
// high watermark).
func (d *Tracker[K]) AllDurable(k K) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	p, written := d.parts[k]
	return !written || p.known && p.written <= p.durable && p.marker <= p.durable
}

// Noted reports whether commits to partition k were noted since the
// Tracker started, or since k was forgotten.
func (d *Tracker[K]) Noted(k K) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	_, ok := d.parts[k]
	return ok
}

// Forget forgets partitions whose history ends or starts again (a deleted
// topic's, a partition moved to another shard or imported from one).
// A commit to one still in flight when it is forgotten leaves no mark
// (Durable skips it); its next commit's Writing notes it again.
func (d *Tracker[K]) Forget(keys ...K) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, k := range keys {
		delete(d.parts, k)
	}
}
