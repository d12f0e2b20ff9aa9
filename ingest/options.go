package ingest

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"time"

	"go.opentelemetry.io/otel/metric"

	"github.com/floe-io/floe/coordapi"
)

// Options configure an Ingester. The zero value of a field means its default.
type Options struct {
	// MaxBytes rolls the open object when it reaches this size
	// (--ingest-max-bytes). Default: 8 MiB.
	MaxBytes int
	// Linger is the longest a batch waits in the open object before it is
	// rolled (--ingest-linger). Default: 250ms.
	Linger time.Duration
	// TxnLinger is the longest a transactional batch waits
	// (--ingest-txn-linger): its producer's EndTxn waits for it, so a
	// transaction shorter than Linger would spend most of its time there.
	// It costs at most a PUT per TxnLinger while transactions are written.
	// Default: 50ms (at most Linger).
	TxnLinger time.Duration
	// MaxPutRate is the budget of objects per second for early rolls
	// (--ingest-max-put-rate): when nothing else is being uploaded the
	// object rolls at once rather than lingering, but only while the budget
	// allows. Every PUT costs money on S3; this is the operator's
	// latency/cost knob. PutRateLocal is no budget at all (every idle
	// append rolls at once). node picks PutRateLocal or PutRateS3 by its
	// object store. Default: 100.
	MaxPutRate float64
	// MaxPutsPerGiB grows the early-roll budget with the traffic
	// (--ingest-max-puts-per-gib): every GiB appended earns this many
	// early rolls, and MaxPutRate's fades out as appends reach 8 MiB/s
	// (putRateFade). Under load PUTs then follow the bytes, and the bill
	// with them (384 per GiB costs $1.97 per TiB at S3 Standard's list
	// price) whatever the broker count, while an idle or trickling broker
	// stays within MaxPutRate. Uploads still go one at a time unless objects fill
	// up, so the PUT rate stays below one per upload's latency. node picks
	// PutsPerGiBS3 on S3. Default: none.
	MaxPutsPerGiB float64
	// EarlyRollWait is the longest an early roll (MaxPutRate) waits for
	// more batches while the producers that appended in the last second
	// are still sending (--ingest-early-roll-wait): the open object rolls
	// at once when every one of them has as many requests waiting as it
	// ever had in flight lately (it waits for its answers: waiting longer
	// gains nothing), when it holds EarlyRollBytes, or after this wait.
	// So a lone producer still costs one object per request at low load,
	// and a busy broker on a local directory, where PUTs are free and an
	// idle uploader rolled every request into its own object (620 objects
	// a second at 20 MiB/s), makes fewer, larger ones. 0: no wait, every
	// early roll at once. node sets EarlyRollWaitLocal on a local
	// directory. Default: 0.
	EarlyRollWait time.Duration
	// EarlyRollBytes is the size at which an object waiting for more
	// (EarlyRollWait) rolls at once (--ingest-early-roll-bytes). Default,
	// with EarlyRollWait set: EarlyRollBytesLocal.
	EarlyRollBytes int
	// UploadAheadBytes lets an object that holds at least this many bytes
	// roll early while earlier objects are still uploading, up to
	// MaxUploads at once and within the PUT budget, instead of waiting for
	// every upload to end (--ingest-upload-ahead-bytes). Where a PUT takes
	// long next to the time its bytes take to arrive (a MinIO on busy
	// cores, a loaded broker with no PUT budget), one upload at a time
	// makes objects as large as a PUT's duration of traffic, and every
	// produce waits for a whole such PUT behind the one before: at 94
	// MiB/s to a MinIO on this project's 2-core machine, objects of 3.4
	// MiB and a produce p50 of 117 ms. Default: 0, an early roll waits
	// until no upload is running (node: UploadAheadFree where PUTs cost
	// nothing).
	UploadAheadBytes int
	// MaxBufferedBytes bounds bytes appended but not yet committed
	// (--ingest-max-buffered-bytes); Append waits for room beyond it.
	// Default: 256 MiB.
	MaxBufferedBytes int64
	// InlineMax sends objects of at most this many bytes to the coordinator
	// inside their commit (coordapi.CommitRequest.Inline) instead of
	// uploading them: the coordinator stages the object in the store and
	// makes it durable in the commit's own synced write, so a produce waits
	// for one device round trip, not two. Only for a coordinator that takes
	// them, writing to this broker's store (coordinator.Options.Inline):
	// node sets InlineLocal for the embedded default on its directory.
	// At most coordapi.MaxInlineObject. Default: 0, every object uploaded.
	InlineMax int
	// InlineMaxRate bounds the bytes per second that go inline; objects
	// past it are uploaded. An inline object's bytes go through the
	// coordinator's Pebble WAL and its replicated log (kept until the next
	// snapshot, 10 minutes), so the low loads whose latency inlining
	// serves use it, and a busy broker's objects do not. Default, with
	// InlineMax set: InlineLocalRate.
	InlineMaxRate float64
	// MaxUploads bounds the objects being uploaded at once
	// (--ingest-max-uploads). Default: 8 (node: MaxUploadsS3 on S3).
	MaxUploads int
	// UploadTimeout bounds one object's upload, retries included.
	// Default: 30s.
	UploadTimeout time.Duration
	// CommitTimeout bounds one CommitObject call. Default: 10s.
	CommitTimeout time.Duration
	// Prefix is prepended to object keys: <Prefix>/wal/<uuidv7>.
	Prefix string
	// BrokerID is sent with every commit.
	BrokerID int32
	// Logger receives ingest's logs. Default: slog.Default().
	Logger *slog.Logger
	// Meter records ingest's metrics. Default: no metrics.
	Meter metric.Meter
}

func (o *Options) setDefaults() {
	if o.MaxBytes == 0 {
		o.MaxBytes = 8 << 20
	}
	if o.Linger == 0 {
		o.Linger = 250 * time.Millisecond
	}
	if o.TxnLinger == 0 {
		o.TxnLinger = 50 * time.Millisecond
	}
	o.TxnLinger = min(o.TxnLinger, o.Linger)
	if o.MaxPutRate == 0 {
		o.MaxPutRate = 100
	}
	if o.MaxBufferedBytes == 0 {
		o.MaxBufferedBytes = 256 << 20
	}
	if o.MaxUploads == 0 {
		o.MaxUploads = 8
	}
	if o.InlineMax > 0 && o.InlineMaxRate == 0 {
		o.InlineMaxRate = InlineLocalRate
	}
	if o.EarlyRollWait > 0 && o.EarlyRollBytes == 0 {
		o.EarlyRollBytes = EarlyRollBytesLocal
	}
	if o.UploadTimeout == 0 {
		o.UploadTimeout = 30 * time.Second
	}
	if o.CommitTimeout == 0 {
		o.CommitTimeout = 10 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
}

// Validate reports every bad combination of options at once.
func (o Options) Validate() error {
	var errs []error
	if o.MaxBytes < 0 {
		errs = append(errs, fmt.Errorf("ingest max bytes %d is negative", o.MaxBytes))
	}
	if o.Linger < 0 || o.TxnLinger < 0 {
		errs = append(errs, fmt.Errorf("ingest linger %s and transactional linger %s must not be negative", o.Linger, o.TxnLinger))
	}
	if o.MaxPutRate < 0 {
		errs = append(errs, fmt.Errorf("ingest max put rate %g is negative", o.MaxPutRate))
	}
	if o.MaxPutsPerGiB < 0 || math.IsNaN(o.MaxPutsPerGiB) || math.IsInf(o.MaxPutsPerGiB, 0) {
		errs = append(errs, fmt.Errorf("ingest max puts per GiB %g must be a finite number, not negative", o.MaxPutsPerGiB))
	}
	if o.MaxBufferedBytes < 0 {
		errs = append(errs, fmt.Errorf("ingest max buffered bytes %d is negative", o.MaxBufferedBytes))
	} else if o.MaxBufferedBytes > 0 && o.MaxBufferedBytes < int64(o.MaxBytes) {
		errs = append(errs, fmt.Errorf("ingest max buffered bytes %d is below max object bytes %d", o.MaxBufferedBytes, o.MaxBytes))
	}
	if o.InlineMaxRate < 0 || math.IsNaN(o.InlineMaxRate) {
		errs = append(errs, fmt.Errorf("ingest inline max rate %g is negative", o.InlineMaxRate))
	}
	if o.InlineMax < 0 || o.InlineMax > coordapi.MaxInlineObject {
		errs = append(errs, fmt.Errorf("ingest inline max %d is out of range 0..%d", o.InlineMax, coordapi.MaxInlineObject))
	}
	if o.EarlyRollWait < 0 || o.EarlyRollBytes < 0 {
		errs = append(errs, fmt.Errorf("ingest early roll wait %s and early roll bytes %d must not be negative", o.EarlyRollWait, o.EarlyRollBytes))
	}
	if o.MaxUploads < 0 {
		errs = append(errs, fmt.Errorf("ingest max uploads %d is negative", o.MaxUploads))
	}
	if o.UploadAheadBytes < 0 {
		errs = append(errs, fmt.Errorf("ingest upload ahead bytes %d is negative", o.UploadAheadBytes))
	}
	return errors.Join(errs...)
}

// Early-roll waits on a local directory (Options.EarlyRollWait and
// EarlyRollBytes), where a PUT costs a file and a sync, no money, so no
// PUT budget bounds the objects: a roll waits up to 10 ms for producers
// still sending, or until the object holds 256 KiB. At 20 MiB/s from two
// producers that makes objects of about 240 KiB (87 a second; 5 ms made
// 145 of 145 KiB, for 2.5 ms less produce p50), and a lone producer, or
// every producer waiting for its answers, still rolls at once.
const (
	EarlyRollWaitLocal  = 10 * time.Millisecond
	EarlyRollBytesLocal = 256 << 10
)

// UploadAheadFree is node's Options.UploadAheadBytes on an S3 store whose
// requests cost nothing (--ingest-put-budget=none: a MinIO of one's own):
// objects of 512 KiB go up beside the uploads still running.
const UploadAheadFree = 512 << 10

// InlineLocal is Options.InlineMax for the embedded default: an object of
// up to 64 KiB (a low-load roll: a few batches) goes in its commit, and
// larger ones, which a busy broker rolls, are uploaded as before.
const InlineLocal = 64 << 10

// InlineLocalRate is Options.InlineMaxRate's default: 1 MiB/s, ten times a
// producer of 1 KiB records at 100 requests/s, and at most 600 MiB in the
// embedded coordinator's log between two snapshots.
const InlineLocalRate = 1 << 20

// MaxUploadsS3 is node's Options.MaxUploads on S3, where a PUT of 8 MiB
// takes 60 ms at p50 and up to 400 at p99 (the s3-standard profile of
// package s3latency): at 8 in flight a broker's uploads top out near
// 8 x 8 MiB per PUT latency, and a straggler holds a slot.
const MaxUploadsS3 = 16

// Default early-roll budgets (Options.MaxPutRate) per kind of object store.
const (
	// PutRateLocal is the budget on a local directory or in memory, where
	// a PUT costs nothing: none, so a lone producer never waits the linger.
	PutRateLocal = math.MaxFloat64
	// PutRateS3 is the budget on S3: at S3 Standard's list price ($0.005
	// per 1,000 PUTs) 10 objects/s costs about $130 a month per broker, on
	// top of the linger's rolls (4/s at 250ms under a trickle). Past the
	// budget, appends wait for the linger (or fill the object by size).
	PutRateS3 = 10
	// PutsPerGiBS3 is the budget that grows with the bytes on S3
	// (Options.MaxPutsPerGiB): 384 early rolls per GiB, at most $1.97 per
	// TiB produced at list price (a twelfth of a month's S3 Standard
	// storage of it). Three brokers sharing 50 MiB/s behind the
	// s3-standard latency profile, producers at linger.ms 50, three
	// consumer groups: 388 PUTs per GiB, produce p50/p99 159/349 ms,
	// end-to-end p99 360 ms (scripts/bench-s3-cluster.sh, 2026-12-06),
	// where the earlier 10/s + 512 per GiB, added, made 1,003 PUTs per GiB
	// for p99 329/336 ms. (2026-12-02, one producer at 20 MiB/s on bare
	// MinIO with 512: produce p50/p99 72/136 ms against 144/341 ms
	// without a per-GiB budget, scripts/bench-put-budget.sh.)
	PutsPerGiBS3 = 384
)
