package tierplan

import (
	"cmp"
	"context"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/floe-io/floe/coordapi"
)

// Table jobs (issue 41, docs/design/iceberg-tables.md): every
// Options.TableInterval, a table.enabled topic with new records in
// segments gets one job (TierJobTable) covering each partition this shard
// owns from its covered offset to the segment tier's end or the last
// stable offset, whichever is lower. The job is keyed in the registry by
// the topic and a negative partition (TableJobPart), so that it never
// waits for, nor blocks, a partition's consolidation or compaction. Up to
// MaxTableJobs jobs of one topic run at once, on disjoint sets of
// partitions (tableBusyLocked): a partition's segment can be larger than
// a job's budget, and a topic's partitions are then written side by side
// rather than one after the other; their commits race for the table's
// pointer, and a lost race re-does only the metadata. The covered offsets
// are a planning copy, learned from completions and kept by the
// coordinator in a row of family 'c' per topic (Config.ReadCovered), so
// that a restarted or promoted coordinator plans from them and holds
// retention at them at once: the table's snapshot summary is the
// authority, and a job re-reads it.

// Table job defaults and bounds.
const (
	// DefaultTableInterval is Options.TableInterval's default.
	DefaultTableInterval = time.Minute
	// MaxTableJobBytes bounds the segment bytes one table job reads: the
	// broker holds its decoded records until the commit (a job that
	// streams them to its data files is later work).
	MaxTableJobBytes = 64 << 20
	// MaxTableJobSegments bounds its segments, so that its claim reply
	// stays well within a NATS message.
	MaxTableJobSegments = 4096
	// MaxTableJobs bounds the table jobs of one topic (and shard) that
	// run at once, each on partitions no other holds: a broker runs four
	// tier jobs at once by default (--tier-job-concurrency), and each
	// holds its decoded records, up to a budget, until its commit.
	MaxTableJobs = 4
	// DefaultTableMaintainInterval is Options.TableMaintainInterval's
	// default.
	DefaultTableMaintainInterval = 24 * time.Hour
	// MinOrphanGrace is the least age of a file orphan collection takes:
	// the design's 2 × the tier job lease, at least an hour.
	MinOrphanGrace = time.Hour
)

// TableTopicPart is the partition key of a topic's (first) table job,
// TableMaintainPart that of its table maintenance job: a job of each kind
// may run at once (their commits race for the table's pointer, and each
// retries a lost race).
const (
	TableTopicPart    = -1
	TableMaintainPart = -2
)

// TableJobPart is the partition key of a topic's table job in slot i (0 ≤
// i < MaxTableJobs): TableTopicPart for the first, as in builds before
// there were several, then -3, -4 and on.
func TableJobPart(slot int) int32 {
	if slot == 0 {
		return TableTopicPart
	}
	return TableMaintainPart - int32(slot)
}

// tableOverlaps says whether table job job has a partition of busy.
func tableOverlaps(job *Job, busy map[int32]bool) bool {
	return slices.ContainsFunc(job.Table.Ranges, func(r coordapi.TableRange) bool { return busy[r.Partition] })
}

// Table is the planner's memory of one table topic.
type Table struct {
	// plannedMs is when its last job was built, maintainedMs its last
	// maintenance job (0: none in this run).
	plannedMs, maintainedMs int64
	// full says the last job stopped short of what was there to take
	// (MaxTableJobBytes, MaxTableJobSegments): the next is queued as it
	// completes, without waiting for the interval, so that a table keeps
	// up with a topic writing more than a job a interval.
	full bool
	// covered is the planning copy of each partition's covered offset.
	covered map[int32]int64
	// grew are each partition's high watermarks as the tier passes saw
	// them grow, oldest first, from the first one past the covered offset
	// on: the first says since when the oldest record the table lacks
	// has been waiting (floe.table.lag.seconds, to a tier interval).
	grew map[int32][]HWMSeen
}

// HWMSeen is a high watermark and when a tier pass saw it.
type HWMSeen struct{ Ms, HWM int64 }

// MaxHWMSeen bounds a partition's high watermarks seen: past it, every
// other one but the first goes (the ages read from them coarsen, the
// oldest stays exact).
const MaxHWMSeen = 512

// sawHWM records p's high watermark at nowMs and drops what the covered
// offset passed.
func (ts *Table) sawHWM(p TablePart, nowMs int64) {
	if ts.grew == nil {
		ts.grew = map[int32][]HWMSeen{}
	}
	g := ts.grew[p.Partition]
	if n := len(g); n == 0 || g[n-1].HWM < p.HWM {
		g = append(g, HWMSeen{nowMs, p.HWM})
	}
	covered := max(p.LogStart, ts.covered[p.Partition])
	i := 0
	for i < len(g) && g[i].HWM <= covered {
		i++
	}
	g = g[i:]
	if len(g) > MaxHWMSeen {
		kept := g[:1]
		for j := 2; j < len(g); j += 2 {
			kept = append(kept, g[j])
		}
		g = kept
	}
	ts.grew[p.Partition] = g
}

// TablePart is a partition's offsets as the table planner sees them.
type TablePart struct {
	Partition                       int32
	LogStart, WALStart, Stable, HWM int64
}

// Span is the offsets of p a table job would cover: from the covered
// offset (not below the log start) to the last stable offset, or to the
// segment tier's end if lower, unless wal (a job that reads WAL batches
// too: ClaimTierJobRequest.TableWAL). covered says whether the covered
// offset is known.
func Span(p TablePart, covered int64, known, wal bool) (from, to int64) {
	from = p.LogStart
	if known {
		from = max(from, covered)
	}
	if wal {
		return from, p.Stable
	}
	return from, min(p.WALStart, p.Stable)
}

// span is Span with ts's covered offset of p.
func (ts *Table) span(p TablePart, wal bool) (from, to int64) {
	cov, ok := ts.covered[p.Partition]
	return Span(p, cov, ok, wal)
}

// tableLocked returns id's table state, creating it with the covered
// offsets Config.ReadCovered finds. r.mu must be held.
func (r *Registry[K]) tableLocked(id coordapi.TopicID) *Table {
	ts := r.mu.tables[id]
	if ts == nil {
		ts = &Table{covered: map[int32]int64{}}
		if r.cfg.ReadCovered != nil {
			if err := r.cfg.ReadCovered(id, ts.covered); err != nil {
				// The planner then starts from the log start, as before
				// the row existed: the job re-reads the table's summary.
				r.cfg.Log.Warn("table covered offsets unreadable", "topic", id, "err", err)
				clear(ts.covered)
			}
		}
		if r.mu.tables == nil {
			r.mu.tables = map[coordapi.TopicID]*Table{}
		}
		r.mu.tables[id] = ts
	}
	return ts
}

// tableBusyLocked returns the partitions of topic id that its active
// table jobs but except's hold. r.mu must be held.
func (r *Registry[K]) tableBusyLocked(id coordapi.TopicID, except K) map[int32]bool {
	busy := map[int32]bool{}
	for k, j := range r.mu.active {
		if k.Topic() != id || k == except || j.Kind != coordapi.TierJobTable || j.Table == nil {
			continue
		}
		for _, rg := range j.Table.Ranges {
			busy[rg.Partition] = true
		}
	}
	return busy
}

// DropTables forgets the table topics not in keep (deleted, or their
// table turned off) and returns them.
func (r *Registry[K]) DropTables(keep func(coordapi.TopicID) bool) []coordapi.TopicID {
	r.mu.Lock()
	defer r.mu.Unlock()
	var dropped []coordapi.TopicID
	for id := range r.mu.tables {
		if !keep(id) {
			delete(r.mu.tables, id)
			dropped = append(dropped, id)
		}
	}
	return dropped
}

// PlanTables notes the high watermarks of topics' partitions (each table
// topic's, this shard's) at nowMs and queues the table maintenance job of
// each topic whose maintainInterval passed, and table jobs for each one
// whose interval passed (or whose last job was full) and whose partitions
// have offsets to cover: one a partition waiting that no job holds, up to
// the free slots (a job built finds how many it can take).
func (r *Registry[K]) PlanTables(ctx context.Context, topics map[coordapi.TopicID][]TablePart, nowMs int64, interval, maintainInterval time.Duration) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	var none K
	for id, parts := range topics {
		if err := ctx.Err(); err != nil {
			return err
		}
		ts := r.tableLocked(id)
		for _, p := range parts {
			ts.sawHWM(p, nowMs)
		}
		if ts.maintainedMs == 0 || nowMs-ts.maintainedMs >= maintainInterval.Milliseconds() {
			r.queueLocked(r.cfg.Key(id, TableMaintainPart), coordapi.TierJobTableMaintain)
		}
		if ts.plannedMs != 0 && !ts.full && nowMs-ts.plannedMs < interval.Milliseconds() {
			continue
		}
		busy := r.tableBusyLocked(id, none)
		waiting := 0
		for _, p := range parts {
			// Planned as for brokers whose jobs read WAL batches: a job
			// built for one of an earlier build finds less, or nothing.
			if from, to := ts.span(p, true); from < to && !busy[p.Partition] {
				waiting++
			}
		}
		for slot := 0; slot < cmp.Or(r.mu.tableJobs, MaxTableJobs) && waiting > 0; slot++ {
			k := r.cfg.Key(id, TableJobPart(slot))
			if r.mu.active[k] != nil {
				continue
			}
			r.queueLocked(k, coordapi.TierJobTable)
			waiting--
		}
	}
	return nil
}

// TableSpans picks the partitions of parts (one table topic's) that the
// table job of slot k may take: those no other job of the topic holds,
// the partitions whose oldest uncovered record has waited longest first.
// It returns them with their spans (Span) and the job's byte budget.
func (r *Registry[K]) TableSpans(k K, parts []TablePart, wal bool) ([]TablePart, [][2]int64, int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ts := r.tableLocked(k.Topic())
	// Partitions another job of the topic holds are not this one's.
	busy := r.tableBusyLocked(k.Topic(), k)
	parts = slices.DeleteFunc(parts, func(p TablePart) bool { return busy[p.Partition] })
	// With a job's budget shared, the table's lag (the longest wait)
	// falls fastest, and no partition waits behind the others'.
	waiting := func(p TablePart) int64 {
		if g := ts.grew[p.Partition]; len(g) > 0 {
			return g[0].Ms
		}
		return math.MaxInt64
	}
	slices.SortStableFunc(parts, func(a, b TablePart) int { return cmp.Compare(waiting(a), waiting(b)) })
	spans := make([][2]int64, len(parts))
	for i, p := range parts {
		spans[i][0], spans[i][1] = ts.span(p, wal)
	}
	return parts, spans, cmp.Or(r.mu.tableJobBytes, int64(MaxTableJobBytes))
}

// TablePlanned notes that a table job of topic id was built at nowMs, and
// whether it was full (it stopped short of what was there to take).
func (r *Registry[K]) TablePlanned(id coordapi.TopicID, nowMs int64, full bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ts := r.tableLocked(id)
	ts.plannedMs, ts.full = nowMs, full
}

// TableMaintained notes that a table maintenance job of topic id was
// built at nowMs: the next is due a maintenance interval later.
func (r *Registry[K]) TableMaintained(id coordapi.TopicID, nowMs int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.tableLocked(id).maintainedMs = nowMs
}

// TableCompleted drops job, table job slot k's active job, as completed,
// and learns the covered offsets it reports of its own partitions (those
// of others' partitions are learnt as those complete). It returns the
// topic's covered offsets to write if they changed (else nil), and
// queues the slot again if the job, or the topic's last one, was full.
func (r *Registry[K]) TableCompleted(k K, job *Job, covered []coordapi.TableCovered) (row map[int32]int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ts := r.tableLocked(k.Topic())
	for _, cov := range covered {
		if !slices.ContainsFunc(job.Table.Ranges, func(r coordapi.TableRange) bool { return r.Partition == cov.Partition }) {
			// Not the job's: another job of the topic may hold it, and
			// learns it when it completes.
			continue
		}
		if old, ok := ts.covered[cov.Partition]; !ok || old != cov.Next {
			row = ts.covered
		}
		ts.covered[cov.Partition] = cov.Next
	}
	if row != nil {
		row = maps.Clone(row)
	}
	if r.mu.active[k] == job {
		delete(r.mu.active, k)
		if job.TableFull || ts.full {
			r.queueLocked(k, coordapi.TierJobTable)
		}
	}
	r.mu.stats.JobsCompleted++
	return row
}

// TableCovered returns the planning copy of a table topic's covered
// offsets, by partition.
func (r *Registry[K]) TableCovered(id coordapi.TopicID) map[int32]int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return maps.Clone(r.tableLocked(id).covered)
}

// TableHold returns how far retention may move a table topic's
// partition's log start: to the table's covered offset, so that retention
// never deletes records its table has not taken (the design's table
// hold). Before the covered offset is known (no job of the topic ever
// completed, or its row was written by none), it is -1: nothing is
// deleted.
func (r *Registry[K]) TableHold(id coordapi.TopicID, partition int32) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	if cov, known := r.tableLocked(id).covered[partition]; known {
		return cov
	}
	return -1
}

// LagPart is a table topic's partition, for TableLags.
type LagPart struct {
	ID            coordapi.TopicID
	Name          string
	Partition     int32
	LogStart, HWM int64
}

// TableLag is a table topic's lag on this shard.
type TableLag struct {
	// Offsets are its partitions' offsets past their table's covered
	// offsets (the high watermark less the planner's copy, or the log
	// start before a job ever reported one), summed.
	Offsets int64
	// Ms is how long the oldest record its table lacks has been waiting,
	// as the tier passes saw the high watermarks grow (0: none waits, or
	// no pass saw it yet).
	Ms int64
}

// TableLags returns the lag at nowMs of the table topics of parts, by
// topic name.
func (r *Registry[K]) TableLags(parts []LagPart, nowMs int64) map[string]TableLag {
	out := map[string]TableLag{}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, p := range parts {
		ts := r.tableLocked(p.ID)
		covered := p.LogStart
		if cov, ok := ts.covered[p.Partition]; ok {
			covered = max(covered, cov)
		}
		l := out[p.Name]
		l.Offsets += max(p.HWM-covered, 0)
		if p.HWM > covered {
			for _, g := range ts.grew[p.Partition] {
				if g.HWM > covered {
					l.Ms = max(l.Ms, nowMs-g.Ms)
					break
				}
			}
		}
		out[p.Name] = l
	}
	return out
}

// SetTableCovered sets the planning copy of a partition's covered offset
// (tests: a covered offset without a table job).
func (r *Registry[K]) SetTableCovered(id coordapi.TopicID, partition int32, next int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.tableLocked(id).covered[partition] = next
}

// SetTableLimits overrides MaxTableJobBytes and MaxTableJobs (0: keep
// it), so that tests reach the bounds with a few small records.
func (r *Registry[K]) SetTableLimits(jobBytes int64, jobs int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.mu.tableJobBytes, r.mu.tableJobs = jobBytes, jobs
}
