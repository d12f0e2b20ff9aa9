package tiered

// Consolidation, the broker's side of a tier job:
//
//	ClaimTierJob ─> job ─> GetRange (WAL objects, ReadConcurrency ranges in flight, in order)
//	  ─> check each batch's header against its coordinates ─> LogAppendTime stamp (a copy)
//	  ─> stream Writer.Append (base offset, leader epoch) ─> Upload <prefix>/tiered/...seg
//	     (S3: multipart, 8 MiB parts) ─> Close ─> Commit
//	  ─> CompleteTierJob ─> done
//	failure: AbandonTierJob, abort the upload and delete the object; refused (STALE_BROKER_EPOCH): delete it
//
// Before it reads, a job reserves its buffers in the Consolidator's budget
// (JobBufferBytes): an upload's part and its largest WAL range; it reads
// further ranges ahead only with bytes the budget has left.
//
// A compaction job (Kind TierJobCompact) runs instead through runCompactJob
// (compactjob.go), under the same lease and outcome rules.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/twmb/franz-go/pkg/kerr"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/internal/bufpool"
	"github.com/floe-io/floe/metrics"
	"github.com/floe-io/floe/objectstore"
	"github.com/floe-io/floe/record"
)

// JobSource hands out consolidation jobs and takes their outcomes: the batch
// coordinator's tier job API, which coordapi.Coordinator satisfies.
// CompleteTierJob fails with an error wrapping kerr.StaleBrokerEpoch when the
// job is no longer the range's newest assignment; any error wrapping a
// *kerr.Error is the coordinator's answer, any other means it may not have
// answered.
type JobSource interface {
	ClaimTierJob(ctx context.Context, req coordapi.ClaimTierJobRequest) (job coordapi.TierJob, ok bool, err error)
	CompleteTierJob(ctx context.Context, req coordapi.CompleteTierJobRequest) error
	AbandonTierJob(ctx context.Context, jobID uint64, reason string) error
}

// WALReader reads byte ranges of WAL objects, as *cache.Cache does: length
// bytes of key, an object of objectSize bytes, from offset. The returned bytes
// may be shared with other readers and must not be modified.
type WALReader interface {
	GetRange(ctx context.Context, key string, objectSize, offset, length int64) ([]byte, error)
}

// WALReaderAt is a WALReader that can also read a range into the caller's
// buffer (the local directory's store, read without the cache): the jobs
// then read their ranges into buffers they reuse instead of one allocated
// for each range. It returns how many bytes it read, fewer than len(dst)
// only where the object ends.
type WALReaderAt interface {
	WALReader
	ReadRangeAt(ctx context.Context, key string, objectSize, offset int64, dst []byte) (int, error)
}

// SegmentStore writes and removes segment objects, as objectstore.Store does.
// A store that is also an objectstore.Uploader gets each segment as a
// stream (S3 and Dir hold objectstore.UploadBufferBytes of it); any other
// gets it whole, in one Put.
type SegmentStore interface {
	Put(ctx context.Context, key string, data []byte) error
	Delete(ctx context.Context, key string) error
}

// Defaults of ConsolidatorOptions.
const (
	DefaultPollInterval    = 5 * time.Second
	DefaultMaxBackoff      = time.Minute
	DefaultLeaseMargin     = 10 * time.Second
	DefaultReadConcurrency = 4
	DefaultMaxReadBytes    = 8 << 20
)

// cleanupTimeout bounds one best-effort AbandonTierJob or Delete, which run
// even when the job's or the caller's context has ended.
const cleanupTimeout = 10 * time.Second

// recentJobs is how many job ids a Consolidator remembers, to never run one
// twice.
const recentJobs = 64

// ErrBatchMismatch reports WAL bytes that do not match the batch coordinates
// the job gave for them: the header does not parse, or its length or offset
// range differs. The job fails; the coordinates or the object are wrong.
var ErrBatchMismatch = errors.New("tiered: batch does not match its coordinates")

// ErrBadJob reports a job whose coordinates are not a run of batches a segment
// can hold: empty, out of order, with gaps, not covering the job's range, or
// outside their objects.
var ErrBadJob = errors.New("tiered: malformed tier job")

// ConsolidatorOptions configure a Consolidator. The zero value is the default
// (broker 0, no prefix).
type ConsolidatorOptions struct {
	// BrokerID is the broker's node id, sent with each claim.
	BrokerID int32
	// Prefix is the object key prefix (--s3-prefix) segments are written under.
	// Default: "" (none).
	Prefix string
	// LeaderEpoch is the partition leader epoch written into every batch; the
	// broker's partitions have one fixed epoch. Default: 0.
	LeaderEpoch int32
	// PollInterval is how long Run waits after a claim found no job. After a
	// completed job Run claims again at once. Default: 5s.
	PollInterval time.Duration
	// MaxBackoff bounds Run's wait after repeated failures (of a claim or of a
	// job), which doubles from PollInterval. Default: 1m, and at least
	// PollInterval.
	MaxBackoff time.Duration
	// LeaseMargin is how long before the job's lease ends it must be
	// completed: a job runs under a context that ends LeaseMargin before the
	// lease does (at most a quarter of the lease before). Default: 10s.
	LeaseMargin time.Duration
	// ReadConcurrency is how many WAL ranges a job reads at once. Default: 4.
	ReadConcurrency int
	// MaxReadBytes bounds one WAL range: batches back to back in one object
	// are read as one range up to this size (a larger batch is read alone).
	// Default: 8 MiB.
	MaxReadBytes int64
	// Concurrency is how many jobs Run keeps running at once. Jobs claimed
	// together are mostly the partitions of one topic over the same WAL
	// objects (the coordinator plans them in topic and partition order),
	// so running them side by side lets the chunk cache load each WAL
	// chunk once for all of them, where one after the other would read
	// it again per partition once a job's span outgrows the cache. Each
	// job streams its segment to the store (Memory: JobBufferBytes).
	// Default: 4.
	Concurrency int
	// JobBufferBytes bounds the buffers the jobs hold at once, whatever
	// segment.bytes is, as Kafka's log.cleaner.io.buffer.size bounds its
	// cleaner threads': each job reserves an upload part
	// (objectstore.UploadBufferBytes) and its largest read (MaxReadBytes,
	// or a larger batch) before it starts, waiting for them, and reads
	// ahead (up to ReadConcurrency ranges) only with what is left. A
	// compaction job reserves a part and two read windows (the window
	// and its compacted batches); its dedupe buffer is DedupeBufferBytes,
	// besides. A job that needs more than JobBufferBytes (one batch
	// larger than the budget) runs alone. Default: 64 MiB
	// (DefaultJobBufferBytes); when set, at least an upload part and one
	// read, objectstore.UploadBufferBytes+MaxReadBytes.
	JobBufferBytes int64
	// IOBytesPerSecond paces the bytes the jobs read (WAL ranges, input
	// segments) and write (segments) together, as Kafka's
	// log.cleaner.io.max.bytes.per.second paces its cleaner, so that they
	// spread their work instead of taking the device and the cores from
	// produce and fetch in bursts. Consolidation reads and writes each
	// byte once: it keeps up with an ingest rate of up to about half of
	// this (less what compaction takes), and with Ingested the pace rises
	// with the ingest. Default: 0, unpaced.
	IOBytesPerSecond int64
	// Ingested, when set, returns the bytes this broker has ingested so
	// far (a counter): the pace of IOBytesPerSecond rises to twice the
	// ingest rate when that is more, so that consolidation keeps up with
	// any sustained ingest (ioThrottle.follow), and falls back with it.
	Ingested func() int64
	// IndexIntervalBytes is the segments' offset index interval
	// (Options.IndexIntervalBytes). Default: 4096.
	IndexIntervalBytes int
	// KeyIndex answers the key index's latest offset of keys, for the
	// compaction jobs of topics whose index is ready (CompactJob.KeyIndex):
	// coordapi.Coordinator satisfies it. Default: nil, and such a job fails
	// (it is abandoned, and the coordinator assigns it again).
	KeyIndex KeyOffsets
	// DedupeBufferBytes is the memory of the key map a compaction job
	// without the key index builds (OffsetMap), Kafka's
	// log.cleaner.dedupe.buffer.size: about DedupeBufferBytes/24*0.9 keys,
	// 1.4 million in the default; a pass over more keys cleans what they
	// fill and leaves the rest to the next pass. It is allocated by the
	// first such job and kept for the next. Default: 32 MiB; at least 48
	// bytes (two slots) when set.
	DedupeBufferBytes int
	// Tables runs table jobs (TierJobTable, tablejob.go): with it set the
	// broker claims them too. Default: nil, no table jobs.
	Tables TableJobRunner
	// Logger receives job outcomes and errors. Default: discard.
	Logger *slog.Logger
	// Meter registers floe.tiered.jobs (by outcome), floe.tiered.job.bytes and
	// floe.tiered.job.duration (of both job kinds), and for compaction jobs
	// floe.tiered.compaction.jobs (by outcome), floe.tiered.compaction.bytes_in,
	// .bytes_out, .records_in and .records_out. Default: nil (no metrics).
	Meter metric.Meter
	// Now is the clock, for tests. Default: time.Now.
	Now func() time.Time
}

// Validate reports every invalid setting at once. Zero fields are valid: they
// take their defaults.
func (o ConsolidatorOptions) Validate() error {
	var errs []error
	if o.PollInterval < 0 {
		errs = append(errs, fmt.Errorf("tiered: poll interval %v is negative", o.PollInterval))
	}
	if o.MaxBackoff < 0 {
		errs = append(errs, fmt.Errorf("tiered: max backoff %v is negative", o.MaxBackoff))
	}
	if o.LeaseMargin < 0 {
		errs = append(errs, fmt.Errorf("tiered: lease margin %v is negative", o.LeaseMargin))
	}
	if o.ReadConcurrency < 0 {
		errs = append(errs, fmt.Errorf("tiered: read concurrency %d is negative", o.ReadConcurrency))
	}
	if o.MaxReadBytes < 0 {
		errs = append(errs, fmt.Errorf("tiered: max read bytes %d is negative", o.MaxReadBytes))
	}
	if o.Concurrency < 0 {
		errs = append(errs, fmt.Errorf("tiered: concurrency %d is negative", o.Concurrency))
	}
	least := objectstore.UploadBufferBytes + int64(DefaultMaxReadBytes)
	if o.MaxReadBytes > 0 {
		least = objectstore.UploadBufferBytes + o.MaxReadBytes
	}
	switch {
	case o.JobBufferBytes < 0:
		errs = append(errs, fmt.Errorf("tiered: job buffer bytes %d is negative", o.JobBufferBytes))
	case o.JobBufferBytes > 0 && o.JobBufferBytes < least:
		errs = append(errs, fmt.Errorf("tiered: job buffer bytes %d is below %d, an upload part and one read", o.JobBufferBytes, least))
	}
	if o.IOBytesPerSecond < 0 {
		errs = append(errs, fmt.Errorf("tiered: I/O bytes per second %d is negative", o.IOBytesPerSecond))
	}
	if o.IndexIntervalBytes < 0 {
		errs = append(errs, fmt.Errorf("tiered: index interval %d is negative", o.IndexIntervalBytes))
	}
	switch {
	case o.DedupeBufferBytes < 0:
		errs = append(errs, fmt.Errorf("tiered: dedupe buffer bytes %d is negative", o.DedupeBufferBytes))
	case o.DedupeBufferBytes > 0 && o.DedupeBufferBytes < 2*OffsetMapEntrySize:
		errs = append(errs, fmt.Errorf("tiered: dedupe buffer of %d bytes is below %d, two key slots", o.DedupeBufferBytes, 2*OffsetMapEntrySize))
	}
	return errors.Join(errs...)
}

// withDefaults returns o with every zero field set to its default.
func (o ConsolidatorOptions) withDefaults() ConsolidatorOptions {
	if o.PollInterval == 0 {
		o.PollInterval = DefaultPollInterval
	}
	if o.MaxBackoff == 0 {
		o.MaxBackoff = DefaultMaxBackoff
	}
	o.MaxBackoff = max(o.MaxBackoff, o.PollInterval)
	if o.LeaseMargin == 0 {
		o.LeaseMargin = DefaultLeaseMargin
	}
	if o.ReadConcurrency == 0 {
		o.ReadConcurrency = DefaultReadConcurrency
	}
	if o.MaxReadBytes == 0 {
		o.MaxReadBytes = DefaultMaxReadBytes
	}
	if o.DedupeBufferBytes == 0 {
		o.DedupeBufferBytes = DefaultDedupeBufferBytes
	}
	if o.JobBufferBytes == 0 {
		o.JobBufferBytes = DefaultJobBufferBytes
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

// Consolidator runs the consolidation jobs the coordinator assigns this
// broker: for each, it reads the partition's batches from the WAL objects,
// writes them into one segment object (Writer), uploads it and reports it.
// Each job is claimed once and never retried under its id: a failed job is
// abandoned, and the coordinator assigns its range again under a new id.
//
// Memory: the jobs' buffers are bounded together by JobBufferBytes, whatever
// segment.bytes is. A running job streams its segment to the store, holding
// an upload part (objectstore.UploadBufferBytes) and the segment's indexes
// (at most 20 bytes a batch), and reads WAL ranges of at most MaxReadBytes
// each (8 MiB), the one being copied and those read ahead, up to
// ReadConcurrency, while the budget has room. Ranges that fit in one cache
// chunk are shared with the cache rather than copied; the budget counts
// them all the same.
//
// A compaction job holds the dedupe buffer (DedupeBufferBytes, when it builds
// a key map), and within the budget one read window (MaxReadBytes, or one
// larger batch), the compacted batches of one window, and the upload part of
// the output segment being written; at most one runs at a time.
//
// A Consolidator is safe for concurrent use: goroutines calling Run or RunOnce
// each run their own job, with that memory each.
type Consolidator struct {
	jobs  JobSource
	wal   WALReader
	store SegmentStore
	opts  ConsolidatorOptions
	log   *slog.Logger
	m     *consolidatorMetrics

	mu struct {
		sync.Mutex
		recent [recentJobs]uint64 // ids of jobs claimed, a ring
		n      int                // ids in recent so far
	}

	// budget bounds the jobs' buffers (JobBufferBytes).
	budget *jobBudget
	// bufs recycles the buffers of WAL ranges read with WALReaderAt.
	bufs bufpool.Pool
	// io paces the jobs' reads and writes (IOBytesPerSecond); nil: unpaced.
	io *ioThrottle

	// compaction is the state compaction jobs share, one job at a time.
	compaction struct {
		// slot holds a token while a compaction job runs.
		slot chan struct{}
		// keys is the dedupe buffer, allocated by the first job that
		// builds a key map; only the job holding slot touches it.
		keys *OffsetMap
	}
}

// NewConsolidator returns a Consolidator that claims jobs from jobs, reads WAL
// bytes through wal and writes segments to store.
func NewConsolidator(jobs JobSource, wal WALReader, store SegmentStore, opts ConsolidatorOptions) (*Consolidator, error) {
	if jobs == nil || wal == nil || store == nil {
		return nil, errors.New("tiered: NewConsolidator needs a job source, a WAL reader and a segment store")
	}
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	c := &Consolidator{
		jobs:  jobs,
		wal:   wal,
		store: store,
		opts:  opts,
		log:   opts.Logger,
		m:     newConsolidatorMetrics(opts.Meter),
	}
	c.budget = newJobBudget(opts.JobBufferBytes)
	c.io = newIOThrottle(opts.IOBytesPerSecond)
	c.compaction.slot = make(chan struct{}, 1)
	return c, nil
}

// Job outcomes, the values of the metrics' outcome attribute.
const (
	outcomeCompleted = iota // the coordinator took the segment
	outcomeFailed           // the job could not be run, or its completion failed
	outcomeRefused          // the coordinator refused a stale job
	numOutcomes
)

var outcomeNames = [numOutcomes]string{"completed", "failed", "refused"}

// consolidatorMetrics are a Consolidator's instruments.
type consolidatorMetrics struct {
	jobs     metric.Int64Counter
	bytes    metric.Int64Counter
	duration metric.Float64Histogram
	outcome  [numOutcomes]metric.MeasurementOption

	// Compaction jobs: counted by outcome, and what completed ones read
	// and wrote of the segments they replaced.
	compactJobs       metric.Int64Counter
	compactBytesIn    metric.Int64Counter
	compactBytesOut   metric.Int64Counter
	compactRecordsIn  metric.Int64Counter
	compactRecordsOut metric.Int64Counter
}

func newConsolidatorMetrics(m metric.Meter) *consolidatorMetrics {
	m = metrics.OrNoop(m)
	cm := &consolidatorMetrics{}
	cm.jobs, _ = m.Int64Counter("floe.tiered.jobs", metric.WithUnit("{job}"),
		metric.WithDescription("Tier jobs (consolidation and compaction) run, by outcome (completed, failed, refused as stale)."))
	cm.bytes, _ = m.Int64Counter("floe.tiered.job.bytes", metric.WithUnit("By"),
		metric.WithDescription("Batch bytes moved from WAL objects into segments by completed consolidation jobs."))
	cm.duration, _ = m.Float64Histogram("floe.tiered.job.duration", metric.WithUnit("s"),
		metric.WithDescription("Tier job (consolidation and compaction) time from claim to outcome, by outcome."))
	cm.compactJobs, _ = m.Int64Counter("floe.tiered.compaction.jobs", metric.WithUnit("{job}"),
		metric.WithDescription("Compaction jobs run, by outcome (completed, failed, refused as stale)."))
	cm.compactBytesIn, _ = m.Int64Counter("floe.tiered.compaction.bytes_in", metric.WithUnit("By"),
		metric.WithDescription("Batch bytes of the segments completed compaction jobs replaced."))
	cm.compactBytesOut, _ = m.Int64Counter("floe.tiered.compaction.bytes_out", metric.WithUnit("By"),
		metric.WithDescription("Batch bytes of the segments completed compaction jobs wrote."))
	cm.compactRecordsIn, _ = m.Int64Counter("floe.tiered.compaction.records_in", metric.WithUnit("{record}"),
		metric.WithDescription("Records of the segments completed compaction jobs replaced."))
	cm.compactRecordsOut, _ = m.Int64Counter("floe.tiered.compaction.records_out", metric.WithUnit("{record}"),
		metric.WithDescription("Records of the segments completed compaction jobs wrote."))
	for i, name := range outcomeNames {
		cm.outcome[i] = metric.WithAttributeSet(attribute.NewSet(attribute.String("outcome", name)))
	}
	return cm
}

// Run claims and runs jobs until ctx ends: after a completed job it claims
// again at once, after a claim that found none it waits PollInterval, and
// after a failure it waits a backoff that doubles from PollInterval up to
// MaxBackoff. Failures are logged, never returned. A job running when ctx
// ends is abandoned. It runs Concurrency such loops at once.
func (c *Consolidator) Run(ctx context.Context) {
	n := c.opts.Concurrency
	if n <= 0 {
		n = defaultConcurrency
	}
	var wg sync.WaitGroup
	if c.io != nil && c.opts.Ingested != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.followIngest(ctx)
		}()
	}
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.runLoop(ctx)
		}()
	}
	wg.Wait()
}

// followIngest samples the broker's ingest every second and sets the I/O
// pace from it (ioThrottle.follow), until ctx ends.
func (c *Consolidator) followIngest(ctx context.Context) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		c.io.follow(c.opts.Ingested(), c.opts.Now())
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// defaultConcurrency is ConsolidatorOptions.Concurrency's default.
const defaultConcurrency = 4

// runLoop is one of Run's job loops.
func (c *Consolidator) runLoop(ctx context.Context) {
	failures := 0
	for ctx.Err() == nil {
		ran, err := c.RunOnce(ctx)
		var wait time.Duration
		switch {
		case ctx.Err() != nil:
			if err != nil {
				c.log.Info("tiered: stopped with a job running (abandoned)", "err", err)
			}
			return
		case err != nil:
			failures++
			wait = c.backoff(failures)
			c.logRunError(err, failures)
		case ran:
			failures = 0
			continue
		default:
			failures = 0
			wait = c.opts.PollInterval
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// backoff is the wait after the n-th failure in a row: PollInterval doubled
// n-1 times, at most MaxBackoff.
func (c *Consolidator) backoff(n int) time.Duration {
	d := c.opts.PollInterval
	for i := 1; i < n && d < c.opts.MaxBackoff; i++ {
		d *= 2
	}
	return min(d, c.opts.MaxBackoff)
}

// logRunError logs a failed claim or job; a coordinator that does not serve
// tier jobs is noted once, not at every poll.
func (c *Consolidator) logRunError(err error, failures int) {
	if errors.Is(err, errors.ErrUnsupported) {
		if failures == 1 {
			c.log.Info("tiered: the coordinator does not run tier jobs; polling on", "err", err)
		}
		return
	}
	c.log.Warn("tiered: consolidation failed", "err", err, "failures_in_a_row", failures)
}

// RunOnce claims one job and runs it. ran reports whether a job was claimed;
// err is the claim's failure, or the job's (already abandoned, its segment
// deleted where that is safe). A completed job is ran true, err nil.
func (c *Consolidator) RunOnce(ctx context.Context) (ran bool, err error) {
	start := c.opts.Now()
	job, ok, err := c.jobs.ClaimTierJob(ctx, coordapi.ClaimTierJobRequest{BrokerID: c.opts.BrokerID,
		Tables: c.opts.Tables != nil, TableMaintain: c.opts.Tables != nil, TableWAL: c.opts.Tables != nil})
	if err != nil {
		return false, fmt.Errorf("tiered: claim tier job: %w", err)
	}
	if !ok {
		return false, nil
	}
	if !c.firstClaim(job.ID) {
		err := fmt.Errorf("tiered: job %d claimed again; a job id is never run twice", job.ID)
		c.abandon(ctx, job, err)
		return true, err
	}
	var outcome int
	switch job.Kind {
	case coordapi.TierJobConsolidate:
		var bytes int64
		outcome, bytes, err = c.runJob(ctx, job, start)
		if outcome == outcomeCompleted {
			c.m.bytes.Add(ctx, bytes)
		}
	case coordapi.TierJobCompact:
		var res *coordapi.CompactResult
		outcome, res, err = c.runCompactJob(ctx, job, start)
		c.m.compactJobs.Add(ctx, 1, c.m.outcome[outcome])
		if outcome == outcomeCompleted {
			c.m.compactBytesIn.Add(ctx, res.BytesIn)
			c.m.compactBytesOut.Add(ctx, res.BytesOut)
			c.m.compactRecordsIn.Add(ctx, res.RecordsIn)
			c.m.compactRecordsOut.Add(ctx, res.RecordsOut)
		}
	case coordapi.TierJobTable:
		if c.opts.Tables == nil {
			outcome, err = outcomeFailed, fmt.Errorf("%w: a table job for a broker without table jobs", ErrBadJob)
			c.abandon(ctx, job, err)
			break
		}
		outcome, _, err = c.runTableJob(ctx, job, start)
	case coordapi.TierJobTableMaintain:
		if c.opts.Tables == nil {
			outcome, err = outcomeFailed, fmt.Errorf("%w: a table maintenance job for a broker without table jobs", ErrBadJob)
			c.abandon(ctx, job, err)
			break
		}
		outcome, err = c.runTableMaintainJob(ctx, job, start)
	default:
		outcome, err = outcomeFailed, fmt.Errorf("%w: unknown job kind %d", ErrBadJob, job.Kind)
		c.abandon(ctx, job, err)
	}
	elapsed := c.opts.Now().Sub(start)
	c.m.jobs.Add(ctx, 1, c.m.outcome[outcome])
	c.m.duration.Record(ctx, elapsed.Seconds(), c.m.outcome[outcome])
	if err != nil {
		return true, fmt.Errorf("tiered: job %d (topic %s partition %d offsets %d-%d): %w",
			job.ID, job.TopicID, job.Partition, job.BaseOffset, job.LastOffset, err)
	}
	return true, nil
}

// firstClaim records id as claimed and reports whether it was not already.
func (c *Consolidator) firstClaim(id uint64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range min(c.mu.n, recentJobs) {
		if c.mu.recent[i] == id {
			return false
		}
	}
	c.mu.recent[c.mu.n%recentJobs] = id
	c.mu.n++
	return true
}

// runJob runs job, claimed at start, and returns its outcome and, when
// completed, the data bytes it moved. The job runs under a context that ends
// LeaseMargin before its lease, so that it completes while the coordinator
// still accepts it.
func (c *Consolidator) runJob(ctx context.Context, job coordapi.TierJob, start time.Time) (outcome int, bytes int64, err error) {
	jctx, cancel, err := c.leaseContext(ctx, job, start)
	if err != nil {
		c.abandon(ctx, job, err)
		return outcomeFailed, 0, err
	}
	defer cancel()

	key := coordapi.SegmentKey(c.opts.Prefix, job.TopicID, job.Partition, job.BaseOffset, uniqueName(job.ID))
	info, err := c.build(jctx, job, key)
	if err != nil {
		c.abandon(ctx, job, err)
		return outcomeFailed, 0, err
	}
	size := info.Size

	err = c.jobs.CompleteTierJob(jctx, coordapi.CompleteTierJobRequest{
		JobID:      job.ID,
		TopicID:    job.TopicID,
		Partition:  job.Partition,
		BaseOffset: job.BaseOffset,
		LastOffset: job.LastOffset,
		ObjectKey:  key,
		ObjectSize: size,
		DataLength: info.DataLength,
	})
	switch {
	case err == nil:
		c.log.Info("tiered: job completed", "job", job.ID, "topic_id", job.TopicID.String(), "partition", job.Partition,
			"base_offset", job.BaseOffset, "last_offset", job.LastOffset, "batches", info.BatchCount,
			"key", key, "bytes", size, "elapsed", c.opts.Now().Sub(start))
		return outcomeCompleted, info.DataLength, nil
	case errors.Is(err, kerr.StaleBrokerEpoch):
		// The coordinator's refusal, made before any swap: no row names
		// the object.
		c.deleteObject(ctx, job, key)
		return outcomeRefused, 0, fmt.Errorf("complete: refused as stale: %w", err)
	default:
		// Anything else may have come after the swap committed (a timeout,
		// a lost answer, a coordinator that died after its write; the rpc
		// client reports those as retriable Kafka errors too): the object
		// stays, and the GC collects it if no row names it. The job is
		// given back, which is a no-op if it was completed.
		err = fmt.Errorf("complete (segment %s left to the GC): %w", key, err)
		c.abandon(ctx, job, err)
		return outcomeFailed, 0, err
	}
}

// leaseContext returns the context job, claimed at start, runs under: ctx
// ending LeaseMargin (at most a quarter of the lease) before the job's lease
// does, so that the job completes while the coordinator still accepts it. It
// fails when the lease leaves no time.
func (c *Consolidator) leaseContext(ctx context.Context, job coordapi.TierJob, start time.Time) (context.Context, context.CancelFunc, error) {
	lease := time.Duration(job.LeaseMs) * time.Millisecond
	margin := min(c.opts.LeaseMargin, lease/4)
	budget := lease - margin - c.opts.Now().Sub(start)
	if budget <= 0 {
		return nil, nil, fmt.Errorf("lease of %v leaves no time to run", lease)
	}
	jctx, cancel := context.WithTimeout(ctx, budget)
	return jctx, cancel, nil
}

// uniqueName returns a fresh unique part of a segment key for an attempt at
// job id: the job id and a UUIDv7, so that no two attempts share a key.
func uniqueName(id uint64) string {
	u, err := uuid.NewV7()
	if err != nil {
		u = uuid.New()
	}
	return fmt.Sprintf("%d-%s", id, u)
}

// abandon gives job back to the coordinator, best effort and even when ctx
// has ended (the caller is shutting down): the coordinator assigns it again
// at once rather than at its lease's end.
func (c *Consolidator) abandon(ctx context.Context, job coordapi.TierJob, cause error) {
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	reason := cause.Error()
	if len(reason) > 512 {
		reason = reason[:512]
	}
	if err := c.jobs.AbandonTierJob(actx, job.ID, reason); err != nil {
		c.log.Warn("tiered: abandon job", "job", job.ID, "err", err)
	}
}

// deleteObject deletes a segment no coordinator row names, best effort: an
// object left behind is an orphan the coordinator's GC collects.
func (c *Consolidator) deleteObject(ctx context.Context, job coordapi.TierJob, key string) {
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	if err := c.store.Delete(dctx, key); err != nil {
		c.log.Warn("tiered: delete unused segment (left to the GC)", "job", job.ID, "key", key, "err", err)
	}
}

// readRange is one WAL read: batches back to back in one object.
type readRange struct {
	key        string
	objectSize int64
	offset     int64
	length     int64
	batches    []coordapi.BatchCoord
}

// build reads job's batches and streams them into a segment object under
// key, which it commits: when it returns nil, the object is stored. On
// failure the upload is aborted, and after a failed Commit, which may
// still have written the object (a timeout after the write), the object is
// deleted.
func (c *Consolidator) build(ctx context.Context, job coordapi.TierJob, key string) (Info, error) {
	if err := checkJob(job); err != nil {
		return Info{}, err
	}
	ranges := planRanges(job.Batches, c.opts.MaxReadBytes)
	var largest int64
	for _, r := range ranges {
		largest = max(largest, r.length)
	}
	// The job's reservation: an upload part and one range, what it needs
	// to make progress; it reads ahead with what the budget has left.
	reserved, err := c.budget.acquire(ctx, objectstore.UploadBufferBytes+largest)
	if err != nil {
		return Info{}, fmt.Errorf("wait for job buffers: %w", err)
	}
	defer c.budget.release(reserved)

	up, err := c.newUpload(ctx, key)
	if err != nil {
		return Info{}, fmt.Errorf("start upload of segment %s: %w", key, err)
	}
	// Until Commit is tried, a failure aborts the upload; a failed Commit
	// aborts it itself and deletes what it may have left.
	committing := false
	defer func() {
		if !committing {
			c.abortUpload(ctx, job, key, up)
		}
	}()
	w, err := NewStreamWriter(job.BaseOffset, Options{IndexIntervalBytes: c.opts.IndexIntervalBytes}, up)
	if err != nil {
		return Info{}, fmt.Errorf("new segment writer: %w", err)
	}
	err = c.readRanges(ctx, ranges, func(r readRange, data []byte) error {
		for _, bc := range r.batches {
			at := bc.ByteOffset - r.offset
			b := data[at : at+int64(bc.ByteLength) : at+int64(bc.ByteLength)]
			if err := checkBatch(bc, b); err != nil {
				return fmt.Errorf("batch %d-%d in %s at %d: %w", bc.BaseOffset, bc.LastOffset, bc.ObjectKey, bc.ByteOffset, err)
			}
			// Each batch as Fetch patches it: its own flag, not the topic's
			// (batches committed before a switch to LogAppendTime keep the
			// producer's timestamps). The stamp goes on the segment's copy.
			var err error
			if bc.LogAppendTime {
				err = w.AppendLogAppendTime(b, bc.BaseOffset, c.opts.LeaderEpoch, bc.MaxTimestamp)
			} else {
				err = w.Append(b, bc.BaseOffset, c.opts.LeaderEpoch)
			}
			if err != nil {
				return fmt.Errorf("batch %d-%d in %s at %d: %w", bc.BaseOffset, bc.LastOffset, bc.ObjectKey, bc.ByteOffset, err)
			}
		}
		return nil
	})
	if err != nil {
		return Info{}, err
	}
	info, err := w.Close()
	if err != nil {
		return Info{}, fmt.Errorf("finish segment: %w", err)
	}
	committing = true
	if err := up.Commit(ctx); err != nil {
		c.abortUpload(ctx, job, key, up)
		c.deleteObject(ctx, job, key)
		return Info{}, fmt.Errorf("put segment %s: %w", key, err)
	}
	return info, nil
}

// newUpload starts the upload of a segment: the store's own stream if it is
// an objectstore.Uploader, else one Put of the whole object at Commit; its
// writes wait for the I/O throttle.
func (c *Consolidator) newUpload(ctx context.Context, key string) (objectstore.Upload, error) {
	up, err := objectstore.NewUpload(ctx, c.store, key)
	if err != nil || c.io == nil {
		return up, err
	}
	return &throttledUpload{Upload: up, ctx: ctx, t: c.io}, nil
}

// abortUpload aborts up, best effort and even when ctx has ended.
func (c *Consolidator) abortUpload(ctx context.Context, job coordapi.TierJob, key string, up objectstore.Upload) {
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	if err := up.Abort(actx); err != nil {
		c.log.Warn("tiered: abort segment upload", "job", job.ID, "key", key, "err", err)
	}
}

// checkJob checks that job's batches are a gapless run over its range that a
// segment can hold, each within its object.
func checkJob(job coordapi.TierJob) error {
	if len(job.Batches) == 0 {
		return fmt.Errorf("%w: no batches", ErrBadJob)
	}
	if first, last := job.Batches[0], job.Batches[len(job.Batches)-1]; first.BaseOffset != job.BaseOffset || last.LastOffset != job.LastOffset {
		return fmt.Errorf("%w: batches cover %d-%d, the job %d-%d", ErrBadJob, first.BaseOffset, last.LastOffset, job.BaseOffset, job.LastOffset)
	}
	var total int64
	for i, bc := range job.Batches {
		switch {
		case bc.Segment:
			return fmt.Errorf("%w: batch %d is a segment, not a WAL batch", ErrBadJob, i)
		case bc.LastOffset < bc.BaseOffset:
			return fmt.Errorf("%w: batch %d has offsets %d-%d", ErrBadJob, i, bc.BaseOffset, bc.LastOffset)
		case i > 0 && bc.BaseOffset != job.Batches[i-1].LastOffset+1:
			return fmt.Errorf("%w: batch %d starts at %d, after %d", ErrBadJob, i, bc.BaseOffset, job.Batches[i-1].LastOffset)
		case bc.ByteLength < record.HeaderSize || bc.ByteOffset < 0 || bc.ByteOffset > bc.ObjectSize-int64(bc.ByteLength):
			return fmt.Errorf("%w: batch %d at %d+%d is not within %s (%d bytes)", ErrBadJob, i, bc.ByteOffset, bc.ByteLength, bc.ObjectKey, bc.ObjectSize)
		}
		total += int64(bc.ByteLength)
	}
	if total > maxDataLength {
		return fmt.Errorf("%w: %d bytes of batches exceed a segment's %d", ErrBadJob, total, uint64(maxDataLength))
	}
	return nil
}

// checkBatch checks that b, read at bc's coordinates, is the batch bc names:
// its header parses, and its length and offset range are bc's. Writer.Append
// then checks the rest (the CRC, the record count).
func checkBatch(bc coordapi.BatchCoord, b []byte) error {
	h, err := record.ParseHeader(b)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrBatchMismatch, err)
	}
	if h.Size() != len(b) {
		return fmt.Errorf("%w: batch length %d, coordinates %d", ErrBatchMismatch, h.Size(), len(b))
	}
	if want := bc.LastOffset - bc.BaseOffset; int64(h.LastOffsetDelta) != want || int64(h.NumRecords) != want+1 {
		return fmt.Errorf("%w: last offset delta %d and %d records, coordinates %d-%d", ErrBatchMismatch, h.LastOffsetDelta, h.NumRecords, bc.BaseOffset, bc.LastOffset)
	}
	return nil
}

// planRanges groups batches into reads: batches back to back in one object
// make one range, up to maxBytes (a larger batch makes a range alone).
func planRanges(batches []coordapi.BatchCoord, maxBytes int64) []readRange {
	var out []readRange
	for i, bc := range batches {
		if n := len(out); n > 0 {
			r := &out[n-1]
			if r.key == bc.ObjectKey && r.objectSize == bc.ObjectSize && r.offset+r.length == bc.ByteOffset &&
				r.length+int64(bc.ByteLength) <= maxBytes {
				r.length += int64(bc.ByteLength)
				r.batches = batches[i-len(r.batches) : i+1]
				continue
			}
		}
		out = append(out, readRange{key: bc.ObjectKey, objectSize: bc.ObjectSize, offset: bc.ByteOffset,
			length: int64(bc.ByteLength), batches: batches[i : i+1]})
	}
	return out
}

// readRanges reads ranges and calls fn with each range's bytes, in order;
// fn must not keep them (they may be read into a buffer reused next).
// The range fn takes next is read under the job's reservation; up to
// ReadConcurrency-1 more are read ahead, each only if the budget has its
// bytes, held until fn has taken it. It returns the first error, of a read
// or of fn, once every read it started has returned.
func (c *Consolidator) readRanges(ctx context.Context, ranges []readRange, fn func(readRange, []byte) error) error {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	held := make([]int64, len(ranges)) // budget bytes a range read ahead holds
	started := 0                       // ranges [0, started) were started
	defer func() {
		wg.Wait()
		for i := range held {
			c.budget.release(held[i])
		}
	}()
	defer cancel()
	type result struct {
		data   []byte
		err    error
		pooled bool // data is c.bufs', given back once fn has taken it
	}
	results := make([]chan result, len(ranges))
	into, _ := c.wal.(WALReaderAt)
	start := func(i int) {
		results[i] = make(chan result, 1)
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := ranges[i]
			if err := c.io.wait(ctx, r.length); err != nil {
				results[i] <- result{err: err}
				return
			}
			if into != nil {
				buf := c.bufs.Get(int(r.length))
				n, err := into.ReadRangeAt(ctx, r.key, r.objectSize, r.offset, buf)
				results[i] <- result{buf[:n], err, true}
				return
			}
			data, err := c.wal.GetRange(ctx, r.key, r.objectSize, r.offset, r.length)
			results[i] <- result{data, err, false}
		}()
	}
	for i, r := range ranges {
		if started == i {
			start(i) // under the reservation
			started++
		}
		for started < len(ranges) && started < i+c.opts.ReadConcurrency && c.budget.tryAcquire(ranges[started].length) {
			held[started] = ranges[started].length
			start(started)
			started++
		}
		res := <-results[i]
		results[i] = nil
		if res.err != nil {
			return fmt.Errorf("read %s at %d+%d: %w", r.key, r.offset, r.length, res.err)
		}
		if int64(len(res.data)) != r.length {
			return fmt.Errorf("read %s at %d+%d: %d bytes: %w", r.key, r.offset, r.length, len(res.data), ErrBatchMismatch)
		}
		if err := fn(r, res.data); err != nil {
			return err
		}
		if res.pooled {
			c.bufs.Put(res.data) // fn keeps nothing of it (see readRanges)
		}
		c.budget.release(held[i])
		held[i] = 0
	}
	return nil
}
