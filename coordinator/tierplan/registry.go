package tierplan

import (
	"crypto/rand"
	"encoding/binary"
	"log/slog"
	"maps"
	"slices"
	"sync"

	"github.com/floe-io/floe/coordapi"
)

// Key is a job's key in a Registry: a partition, or a topic's table job
// slot (a negative partition, TableJobPart). The coordinator's own
// partition key implements it, so that neither package converts keys.
type Key interface {
	comparable
	// Topic and Partition are the key's topic and partition.
	Topic() coordapi.TopicID
	Partition() int32
}

// Config is what a Registry is made with.
type Config[K Key] struct {
	// Shards is the coordinator's shard count (0 or 1: unsharded).
	Shards int
	// Key makes the key of a topic's partition, or table job slot.
	Key func(coordapi.TopicID, int32) K
	// ReadCovered adds a table topic's covered offsets row, if any, to
	// covered: the first time the registry meets a table topic, so that
	// a restarted or promoted coordinator plans from them, and holds
	// retention at them, before a job reports. It runs under the
	// registry's lock.
	ReadCovered func(id coordapi.TopicID, covered map[int32]int64) error
	// Log gets the registry's warnings (lease ends, abandoned jobs).
	Log *slog.Logger
}

// Due is a key due for a job of one kind.
type Due[K Key] struct {
	Key  K
	Kind coordapi.TierJobKind
}

// Registry is the planner's memory: its jobs, its queue, its counters and
// its table topics. It is safe for concurrent use; its lock is a leaf
// (doc.go).
type Registry[K Key] struct {
	cfg Config[K]
	mu  struct {
		sync.Mutex
		nextID uint64
		// active is the assigned job of each key that has one.
		active map[K]*Job
		// due are the jobs the planner found due, in the order found:
		// WAL past its retention, a compaction pass, a table job;
		// queued marks them.
		due    []Due[K]
		queued map[Due[K]]bool
		stats  Stats
		// compaction is the planner's last view of each compacted
		// partition.
		compaction   map[K]CompactionState
		compactStats CompactionStats
		// tables is the table planner's memory of each table topic.
		tables map[coordapi.TopicID]*Table
		// tableJobBytes overrides MaxTableJobBytes, tableJobs
		// MaxTableJobs (SetTableLimits).
		tableJobBytes int64
		tableJobs     int
	}
}

// NewRegistry returns an empty registry whose job ids start at random.
func NewRegistry[K Key](cfg Config[K]) *Registry[K] {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	r := &Registry[K]{cfg: cfg}
	r.mu.active = map[K]*Job{}
	r.mu.queued = map[Due[K]]bool{}
	r.mu.compaction = map[K]CompactionState{}
	var b [8]byte
	_, _ = rand.Read(b[:])
	// Job ids of different coordinator runs never meet: a completion of a
	// job from before a restart is refused as unknown. With shards they
	// stay below 2^63 / Shards, room for a run's jobs included, so that
	// the brokers' router can fold the shard into them
	// (coordinator/shards: id × Shards + shard) without overflow.
	limit := uint64(1) << 63
	if cfg.Shards > 1 {
		limit /= uint64(cfg.Shards)
	}
	r.mu.nextID = binary.BigEndian.Uint64(b[:])%(limit/2) + 1
	return r
}

// Queue queues a job of kind for k unless one is queued or k has an
// active job.
func (r *Registry[K]) Queue(k K, kind coordapi.TierJobKind) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.queueLocked(k, kind)
}

// queueLocked is Queue. r.mu must be held.
func (r *Registry[K]) queueLocked(k K, kind coordapi.TierJobKind) {
	d := Due[K]{k, kind}
	if !r.mu.queued[d] && r.mu.active[k] == nil {
		r.mu.queued[d] = true
		r.mu.due = append(r.mu.due, d)
	}
}

// Next takes the first due job whose kind accept takes off the queue; ok
// is false when there is none. busy says its key has an active job (it
// is dropped: the key is planned again once that job ends).
func (r *Registry[K]) Next(accept func(coordapi.TierJobKind) bool) (d Due[K], busy, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	i := slices.IndexFunc(r.mu.due, func(d Due[K]) bool { return accept(d.Kind) })
	if i < 0 {
		return d, false, false
	}
	d = r.mu.due[i]
	r.mu.due = slices.Delete(r.mu.due, i, i+1)
	delete(r.mu.queued, d)
	return d, r.mu.active[d.Key] != nil, true
}

// Assign makes job, built for d, d's key's active job, with the next id,
// assigned to broker. It is false when the key got an active job while
// job was built, or when job is a table job and another table job of its
// topic took one of its partitions meanwhile (d is then queued again, to
// be built again).
func (r *Registry[K]) Assign(d Due[K], job *Job, broker int32) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.mu.active[d.Key] != nil {
		return false
	}
	if job.Kind == coordapi.TierJobTable && tableOverlaps(job, r.tableBusyLocked(d.Key.Topic(), d.Key)) {
		r.queueLocked(d.Key, d.Kind)
		return false
	}
	job.ID = r.mu.nextID
	r.mu.nextID++
	job.Broker = broker
	r.mu.active[d.Key] = job
	r.mu.stats.JobsAssigned++
	return true
}

// Expire drops the jobs whose lease ended at nowMs, queueing their keys
// again.
func (r *Registry[K]) Expire(nowMs int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for k, j := range r.mu.active {
		if nowMs >= j.Deadline {
			delete(r.mu.active, k)
			r.mu.stats.JobsExpired++
			r.cfg.Log.Warn("tier job lease ended", "job", j.ID, "topic", k.Topic(), "partition", k.Partition(), "broker", j.Broker)
			d := Due[K]{k, j.Kind}
			if !r.mu.queued[d] {
				r.mu.queued[d] = true
				r.mu.due = append(r.mu.due, d)
			}
		}
	}
}

// Check returns k's active job for a completion of job id at nowMs. It
// is nil when k has no active job of that id, and not ok when its lease
// ended (it is dropped); both count as refused.
func (r *Registry[K]) Check(k K, id uint64, nowMs int64) (job *Job, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	job = r.mu.active[k]
	if job == nil || job.ID != id {
		r.mu.stats.JobsRefused++
		return nil, false
	}
	if nowMs >= job.Deadline {
		delete(r.mu.active, k)
		r.mu.stats.JobsRefused++
		return job, false
	}
	return job, true
}

// Refuse drops job, k's active job, after its completion was refused.
func (r *Registry[K]) Refuse(k K, job *Job) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.mu.active[k] == job {
		delete(r.mu.active, k)
	}
	r.mu.stats.JobsRefused++
}

// Completed drops job, k's active job, as completed; consolidated is the
// WAL bytes it swapped into a segment.
func (r *Registry[K]) Completed(k K, job *Job, consolidated int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.mu.active[k] == job {
		delete(r.mu.active, k)
	}
	r.mu.stats.JobsCompleted++
	r.mu.stats.BytesConsolidated += consolidated
}

// Compacted drops job, k's active compaction job, as completed, adding
// pass (one pass's counts) to the compaction counters.
func (r *Registry[K]) Compacted(k K, job *Job, pass CompactionStats) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.mu.active[k] == job {
		delete(r.mu.active, k)
	}
	r.mu.stats.JobsCompleted++
	cs := &r.mu.compactStats
	cs.Passes += pass.Passes
	cs.BytesIn += pass.BytesIn
	cs.BytesOut += pass.BytesOut
	cs.RecordsIn += pass.RecordsIn
	cs.RecordsOut += pass.RecordsOut
}

// Abandon drops the active job of id, so that its key is planned again at
// the next round rather than at the end of its lease. An unknown id is
// not an error.
func (r *Registry[K]) Abandon(id uint64, reason string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for k, j := range r.mu.active {
		if j.ID == id {
			delete(r.mu.active, k)
			r.mu.stats.JobsAbandoned++
			r.cfg.Log.Warn("tier job abandoned", "job", id, "topic", k.Topic(), "partition", k.Partition(), "broker", j.Broker, "reason", reason)
			return
		}
	}
}

// Retained counts a log start move by retention that removed bytes.
func (r *Registry[K]) Retained(bytes int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.mu.stats.RetentionDeletions++
	r.mu.stats.RetentionBytes += bytes
}

// Stats returns the tiering counters.
func (r *Registry[K]) Stats() Stats {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.mu.stats
}

// SetCompaction records the planner's view of compacted partition k, and
// queues a pass if due.
func (r *Registry[K]) SetCompaction(k K, state CompactionState, due bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.mu.compaction[k] = state
	if due {
		r.queueLocked(k, coordapi.TierJobCompact)
	}
}

// KeepCompaction forgets the view of every partition but those of seen:
// those no longer compacted, or gone.
func (r *Registry[K]) KeepCompaction(seen map[K]bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	maps.DeleteFunc(r.mu.compaction, func(k K, _ CompactionState) bool { return !seen[k] })
}

// Compaction returns a copy of the planner's view of every compacted
// partition.
func (r *Registry[K]) Compaction() map[K]CompactionState {
	r.mu.Lock()
	defer r.mu.Unlock()
	return maps.Clone(r.mu.compaction)
}

// CompactionStats returns the compaction counters.
func (r *Registry[K]) CompactionStats() CompactionStats {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.mu.compactStats
}
