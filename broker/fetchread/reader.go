package fetchread

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/floe-io/floe/broker/tailcache"
	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/internal/bufpool"
	"github.com/floe-io/floe/tiered"
)

// LeaderEpoch is the partition leader epoch of every batch read, and the
// one the broker answers everywhere. A diskless log is never truncated, so
// one epoch forever is correct for OffsetForLeaderEpoch.
const LeaderEpoch = 0

// Coordinator is what the read path asks the batch coordinator: where a
// partition's batches live, its offsets, the batch of a timestamp
// (coordapi.Coordinator implements it).
type Coordinator interface {
	FindBatches(ctx context.Context, req coordapi.FindBatchesRequest) (coordapi.FindBatchesResponse, error)
	FindBatchesMulti(ctx context.Context, reqs []coordapi.FindBatchesRequest) ([]coordapi.FindBatchesResult, error)
	FindKeyBatches(ctx context.Context, req coordapi.FindKeyBatchesRequest) (coordapi.FindKeyBatchesResponse, error)
	PartitionState(ctx context.Context, id coordapi.TopicID, partition int32) (coordapi.PartitionState, error)
	ListOffset(ctx context.Context, id coordapi.TopicID, partition int32, timestamp int64) (offset, ts int64, err error)
}

// RangeReader reads batch bytes back from object storage; the chunk cache
// implements it. Returned bytes must not be modified.
type RangeReader interface {
	GetRange(ctx context.Context, key string, objectSize, offset, length int64) ([]byte, error)
}

// DirectRangeReader is a RangeReader that can also read a range without
// loading cache chunks for it (cache.Cache.GetRangeDirect). A view fetch
// uses it for small batches; without it every read goes through GetRange.
type DirectRangeReader interface {
	RangeReader
	GetRangeDirect(ctx context.Context, key string, objectSize, offset, length int64) ([]byte, error)
	// ChunkBytes is the cache's chunk size.
	ChunkBytes() int64
}

// Options configure a Reader.
type Options struct {
	// Concurrency bounds the byte ranges one read takes at once (each a
	// chunk-cache read, a GET on a miss), and its per-partition
	// coordinator lookups when the coordinator predates batched ones. 1
	// reads them one after another. Default: 1.
	Concurrency int
	// Logger receives the read path's logs. Default: slog.Default().
	Logger *slog.Logger
	// Tracer, when set, traces the coordinator lookups of a traced
	// request. Default: nil, no tracing.
	Tracer trace.Tracer
	// Now is the clock of the retry gates of calls an old coordinator
	// does not serve. Default: time.Now.
	Now func() time.Time
}

// Reader is the broker's read path: it finds where a partition's batches
// live (the tail cache, else the coordinator; tiered segments through
// their index), plans what a response's byte budget lets each partition
// read, reads the ranges through the chunk cache and patches each batch
// for the wire. It also wakes the fetches waiting for new records. It is
// safe for concurrent use.
type Reader struct {
	opts   Options
	coord  Coordinator
	ranges RangeReader
	// bufs recycles the records read (Read with bufs).
	bufs *bufpool.Pool
	// segments finds batches inside tiered segment objects, read through
	// ranges; nil without ranges.
	segments *tiered.Reader
	// viewSegments finds a view's batches inside segments with exact
	// reads (DirectRangeReader) where ranges has them, else it is
	// segments.
	viewSegments *tiered.Reader
	tails        *tailcache.Cache
	waiters      *waiters
	// findMultiAt is when (Unix ns) a read may next try FindBatchesMulti:
	// a coordinator that does not know it is asked per partition until
	// then.
	findMultiAt atomic.Int64
	// findKeyAt is when (Unix ns) a view fetch may next try
	// FindKeyBatches: until then it reads the base partition.
	findKeyAt atomic.Int64
}

// New returns a Reader that asks coord where batches live and reads them
// through ranges (nil: reads fail), taking the buffers of Read's records
// from bufs.
func New(coord Coordinator, ranges RangeReader, bufs *bufpool.Pool, opts Options) *Reader {
	if opts.Concurrency <= 0 {
		opts.Concurrency = 1
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	rd := &Reader{opts: opts, coord: coord, ranges: ranges, bufs: bufs, tails: tailcache.New(), waiters: newWaiters()}
	if ranges != nil {
		rd.segments = tiered.NewReader(ranges, tiered.ReaderOptions{})
		rd.viewSegments = rd.segments
		if d, ok := ranges.(DirectRangeReader); ok {
			rd.viewSegments = tiered.NewReader(directRanges{d}, tiered.ReaderOptions{})
		}
	}
	return rd
}

// Notify takes in commit notices: the tail cache records their batches,
// then the fetches waiting on their partitions wake (in that order, so
// that they find the batches).
func (rd *Reader) Notify(ns []coordapi.CommitNotice) {
	rd.tails.Notify(ns)
	rd.waiters.notify(ns)
}

// Forget drops what the tail cache holds of a partition, so that its next
// read asks the coordinator (its log start moved).
func (rd *Reader) Forget(id coordapi.TopicID, partition int32) { rd.tails.Forget(id, partition) }

// nowNano is the Reader's clock in Unix nanoseconds, for the retry gates.
func (rd *Reader) nowNano() int64 { return rd.opts.Now().UnixNano() }

// directRanges reads through a DirectRangeReader's exact reads, for the
// segment reader of view fetches.
type directRanges struct{ d DirectRangeReader }

// GetRange implements tiered.RangeReader.
func (r directRanges) GetRange(ctx context.Context, key string, objectSize, offset, length int64) ([]byte, error) {
	return r.d.GetRangeDirect(ctx, key, objectSize, offset, length)
}
