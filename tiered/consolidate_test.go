package tiered

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/floe-io/floe/cache"
	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/objectstore"
	"github.com/floe-io/floe/record"
)

// The real implementations satisfy the Consolidator's dependencies.
var (
	_ JobSource    = coordapi.Coordinator(nil)
	_ WALReader    = (*cache.Cache)(nil)
	_ SegmentStore = objectstore.Store(nil)
)

const consPrefix = "pfx/"

var consTopic = coordapi.TopicID{0xab, 0xcd, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14}

// fakeJobs is an in-memory JobSource: it hands out the queued jobs in order
// and records what it is told.
type fakeJobs struct {
	mu          sync.Mutex
	queue       []coordapi.TierJob
	claims      int
	claimErr    error
	completeErr error
	completed   []coordapi.CompleteTierJobRequest
	abandoned   map[uint64]string
	// changed gets a value after each call (dropped when one is pending),
	// so that tests wait on the calls, not on time.
	changed chan struct{}
}

func newFakeJobs(jobs ...coordapi.TierJob) *fakeJobs {
	return &fakeJobs{queue: jobs, abandoned: map[uint64]string{}, changed: make(chan struct{}, 1)}
}

// notify signals a change; f.mu must be held.
func (f *fakeJobs) notify() {
	select {
	case f.changed <- struct{}{}:
	default:
	}
}

func (f *fakeJobs) ClaimTierJob(ctx context.Context, req coordapi.ClaimTierJobRequest) (coordapi.TierJob, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	defer f.notify()
	f.claims++
	if f.claimErr != nil {
		return coordapi.TierJob{}, false, f.claimErr
	}
	if len(f.queue) == 0 {
		return coordapi.TierJob{}, false, nil
	}
	j := f.queue[0]
	f.queue = f.queue[1:]
	return j, true, nil
}

func (f *fakeJobs) CompleteTierJob(ctx context.Context, req coordapi.CompleteTierJobRequest) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	defer f.notify()
	if f.completeErr != nil {
		return f.completeErr
	}
	f.completed = append(f.completed, req)
	return nil
}

func (f *fakeJobs) AbandonTierJob(ctx context.Context, jobID uint64, reason string) error {
	if err := ctx.Err(); err != nil {
		return err // abandon must run even when the job's context has ended
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	defer f.notify()
	f.abandoned[jobID] = reason
	return nil
}

// state returns the number of claims, completions and abandons so far.
func (f *fakeJobs) state() (claims, completed, abandoned int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.claims, len(f.completed), len(f.abandoned)
}

// fakeWAL wraps a WALReader: it counts reads in flight and records the
// longest, and can fail, block or corrupt them.
type fakeWAL struct {
	inner    WALReader
	inFlight atomic.Int32
	maxSeen  atomic.Int32
	maxLen   atomic.Int64  // the longest read so far
	entered  chan struct{} // if set, gets a value as each read starts
	gate     chan struct{} // if set, each read waits for a value (or ctx)
	// fail, block and corrupt apply to reads of key (all keys when "*").
	failKey    string
	blockKey   string
	corruptKey string
	corrupt    func([]byte) // modifies a copy of the bytes read
}

// walAt is a WALReaderAt over a store, counting its reads into buffers and
// the reads in flight.
type walAt struct {
	*fakeWAL
	store    objectstore.Store
	reads    atomic.Int64
	maxSeen  atomic.Int32
	inFlight atomic.Int32
}

func (w *walAt) ReadRangeAt(ctx context.Context, key string, _, offset int64, dst []byte) (int, error) {
	n := w.inFlight.Add(1)
	defer w.inFlight.Add(-1)
	for m := w.maxSeen.Load(); n > m && !w.maxSeen.CompareAndSwap(m, n); m = w.maxSeen.Load() {
	}
	w.reads.Add(1)
	clear(dst) // a reused buffer's old bytes must never show
	return objectstore.ReadRangeAt(ctx, w.store, key, offset, dst)
}

func (w *fakeWAL) GetRange(ctx context.Context, key string, objectSize, offset, length int64) ([]byte, error) {
	n := w.inFlight.Add(1)
	defer w.inFlight.Add(-1)
	for m := w.maxSeen.Load(); n > m && !w.maxSeen.CompareAndSwap(m, n); m = w.maxSeen.Load() {
	}
	for m := w.maxLen.Load(); length > m && !w.maxLen.CompareAndSwap(m, length); m = w.maxLen.Load() {
	}
	if w.entered != nil {
		w.entered <- struct{}{}
	}
	if w.gate != nil {
		select {
		case <-w.gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	match := func(k string) bool { return k == "*" || k == key }
	if match(w.failKey) {
		return nil, fmt.Errorf("get %s: %w", key, errInjected)
	}
	if match(w.blockKey) {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	data, err := w.inner.GetRange(ctx, key, objectSize, offset, length)
	if err == nil && match(w.corruptKey) {
		data = bytes.Clone(data)
		w.corrupt(data)
	}
	return data, err
}

var errInjected = errors.New("injected failure")

// fakeStore wraps a SegmentStore: it can fail Puts (all, or the Nth from
// one) and counts Puts and Deletes.
type fakeStore struct {
	inner     *objectstore.Memory
	failPut   bool
	failPutAt int32 // if above 0, the Put of that number fails
	puts      atomic.Int32
	deletes   atomic.Int32
}

func (s *fakeStore) Put(ctx context.Context, key string, data []byte) error {
	n := s.puts.Add(1)
	if s.failPut || n == s.failPutAt {
		return fmt.Errorf("put %s: %w", key, errInjected)
	}
	return s.inner.Put(ctx, key, data)
}

func (s *fakeStore) Delete(ctx context.Context, key string) error {
	s.deletes.Add(1)
	return s.inner.Delete(ctx, key)
}

// segments lists the segment objects in s.
func segments(t *testing.T, s *objectstore.Memory) []objectstore.ObjectInfo {
	t.Helper()
	infos, err := s.List(t.Context(), coordapi.TieredPrefix(consPrefix))
	if err != nil {
		t.Fatal(err)
	}
	return infos
}

// consBatch builds a producer's batch (base offset 0, no leader epoch) of n
// records with timestamps from ts.
func consBatch(t *testing.T, n int, ts int64, seed uint64) []byte {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 2))
	recs := make([]record.Record, n)
	for i := range recs {
		v := make([]byte, 20+rng.IntN(200))
		for j := range v {
			v[j] = byte('a' + rng.IntN(26))
		}
		recs[i] = record.Record{Key: fmt.Appendf(nil, "k%d", i), Value: v, TimestampDelta: int64(i)}
	}
	codec := codecs[seed%uint64(len(codecs))]
	b, err := record.Build(record.BuildOptions{Codec: codec, BaseTimestamp: ts, PartitionLeaderEpoch: -1,
		ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}, recs)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// walFixture is a job over batches in WAL objects, the objects in a store.
type walFixture struct {
	store   *objectstore.Memory
	job     coordapi.TierJob
	batches [][]byte // the WAL bytes of the job's batches, in order
}

// buildWAL writes one WAL object per layout entry, holding that many of the
// job's batches mixed with other partitions' batches (some of the job's back
// to back, some apart), and returns the job over them, from offset 1000.
func buildWAL(t *testing.T, layout []int, logAppendTime bool) walFixture {
	t.Helper()
	ctx := t.Context()
	fx := walFixture{store: objectstore.NewMemory()}
	fx.job = coordapi.TierJob{ID: 42, TopicID: consTopic, Partition: 3, BaseOffset: 1000, LeaseMs: 60_000, LogAppendTime: logAppendTime}
	off := fx.job.BaseOffset
	seed := uint64(0)
	for o, n := range layout {
		key := coordapi.WALKey(consPrefix, fmt.Sprintf("obj%d", o))
		var obj []byte
		var coords []coordapi.BatchCoord
		for i := range n {
			if i%2 == 0 { // another partition's batch in between
				seed++
				obj = append(obj, consBatch(t, 2, 5, seed)...)
			}
			seed++
			records := 1 + int(seed%4)
			ts := 1_700_000_000_000 + int64(seed)*10
			b := consBatch(t, records, ts, seed)
			h, err := record.ParseHeader(b)
			if err != nil {
				t.Fatal(err)
			}
			maxTS := h.MaxTimestamp
			if logAppendTime {
				maxTS = 1_800_000_000_000 + int64(seed) // the append time, not the producer's
			}
			coords = append(coords, coordapi.BatchCoord{ObjectKey: key, ByteOffset: int64(len(obj)), ByteLength: int32(len(b)),
				BaseOffset: off, LastOffset: off + int64(records) - 1, MaxTimestamp: maxTS, LogAppendTime: logAppendTime})
			obj = append(obj, b...)
			fx.batches = append(fx.batches, b)
			off += int64(records)
		}
		obj = append(obj, consBatch(t, 1, 5, 999)...) // a trailing foreign batch
		for i := range coords {
			coords[i].ObjectSize = int64(len(obj))
		}
		fx.job.Batches = append(fx.job.Batches, coords...)
		if err := fx.store.Put(ctx, key, obj); err != nil {
			t.Fatal(err)
		}
	}
	fx.job.LastOffset = off - 1
	return fx
}

// newCache returns a cache over store with small chunks, so that ranges span
// chunks.
func newCache(t *testing.T, store cache.Getter) *cache.Cache {
	t.Helper()
	c, err := cache.New(store, cache.Options{ChunkBytes: 512, MaxBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// readMetrics returns every counter's and histogram count's value, by name
// and outcome attribute ("name" alone for none).
func readMetrics(t *testing.T, r *sdkmetric.ManualReader) map[string]int64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.Collect(t.Context(), &rm); err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, dp := range d.DataPoints {
					got[metricName(m.Name, dp.Attributes)] += dp.Value
				}
			case metricdata.Histogram[float64]:
				for _, dp := range d.DataPoints {
					got[metricName(m.Name, dp.Attributes)] += int64(dp.Count)
				}
			}
		}
	}
	return got
}

// metricName names a data point: the metric's name and its attributes.
func metricName(name string, attrs attribute.Set) string {
	for _, kv := range attrs.ToSlice() {
		name += " " + string(kv.Key) + "=" + kv.Value.Emit()
	}
	return name
}

// checkSegment parses obj and checks it holds fx's batches as the job asked:
// real offsets, the leader epoch, valid CRCs, stamped when LogAppendTime.
func checkSegment(t *testing.T, fx walFixture, obj []byte, epoch int32) {
	t.Helper()
	tr, err := ParseTrailer(obj[len(obj)-TrailerSize:])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ParseIndexes(obj[tr.IndexPos():], tr); err != nil {
		t.Fatal(err)
	}
	if tr.BaseOffset != fx.job.BaseOffset || tr.LastOffset != fx.job.LastOffset || tr.BatchCount != uint64(len(fx.batches)) {
		t.Fatalf("trailer %+v, want offsets %d-%d and %d batches", tr, fx.job.BaseOffset, fx.job.LastOffset, len(fx.batches))
	}
	got, n, err := ReadBatches(obj[:tr.DataLength]) // checks every CRC
	if err != nil || uint64(n) != tr.DataLength || len(got) != len(fx.batches) {
		t.Fatalf("ReadBatches: %d batches, %d of %d bytes, %v; want %d batches", len(got), n, tr.DataLength, err, len(fx.batches))
	}
	for i, b := range got {
		bc := fx.job.Batches[i]
		h, _ := record.ParseHeader(b)
		if h.BaseOffset != bc.BaseOffset || h.PartitionLeaderEpoch != epoch {
			t.Errorf("batch %d: base offset %d epoch %d, want %d and %d", i, h.BaseOffset, h.PartitionLeaderEpoch, bc.BaseOffset, epoch)
		}
		orig := fx.batches[i]
		if fx.job.LogAppendTime {
			if !h.LogAppendTime() || h.MaxTimestamp != bc.MaxTimestamp {
				t.Errorf("batch %d: LogAppendTime %v max timestamp %d, want stamped with %d", i, h.LogAppendTime(), h.MaxTimestamp, bc.MaxTimestamp)
			}
			if !bytes.Equal(b[record.HeaderSize:], orig[record.HeaderSize:]) {
				t.Errorf("batch %d: records differ from the WAL's", i)
			}
		} else if !bytes.Equal(b[17:], orig[17:]) { // from the CRC on: untouched
			t.Errorf("batch %d: bytes from the CRC on differ from the WAL's", i)
		}
	}
}

func TestConsolidatorJob(t *testing.T) {
	cases := []struct {
		name          string
		layout        []int
		logAppendTime bool
		concurrency   int
		maxReadBytes  int64
		epoch         int32
		readAt        bool // the reader is a WALReaderAt: reads go into pooled buffers
	}{
		{name: "one batch", layout: []int{1}},
		{name: "three objects", layout: []int{3, 5, 2}, epoch: 7},
		{name: "log append time", layout: []int{2, 4}, logAppendTime: true},
		{name: "one range per batch, one read at a time", layout: []int{4, 4}, concurrency: 1, maxReadBytes: 1},
		{name: "many ranges, four reads at a time", layout: []int{10, 10, 10}, concurrency: 4, maxReadBytes: 1, epoch: 1},
		{name: "ranges of several batches", layout: []int{12, 9}, maxReadBytes: 1200, logAppendTime: true},
		{name: "into reused buffers, one at a time", layout: []int{6, 6}, concurrency: 1, maxReadBytes: 1, readAt: true},
		{name: "into reused buffers, four at a time", layout: []int{10, 10, 10}, concurrency: 4, maxReadBytes: 1, logAppendTime: true, readAt: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			fx := buildWAL(t, tc.layout, tc.logAppendTime)
			jobs := newFakeJobs(fx.job)
			c := newCache(t, fx.store)
			wal := &fakeWAL{inner: c}
			var reader WALReader = wal
			at := &walAt{fakeWAL: wal, store: fx.store}
			if tc.readAt {
				reader = at
			}
			segs := objectstore.NewMemory()
			metrics := sdkmetric.NewManualReader()
			meter := sdkmetric.NewMeterProvider(sdkmetric.WithReader(metrics)).Meter("test")
			con, err := NewConsolidator(jobs, reader, segs, ConsolidatorOptions{BrokerID: 1, Prefix: consPrefix, LeaderEpoch: tc.epoch,
				ReadConcurrency: tc.concurrency, MaxReadBytes: tc.maxReadBytes, IndexIntervalBytes: 256, Meter: meter})
			if err != nil {
				t.Fatal(err)
			}
			ran, err := con.RunOnce(ctx)
			if !ran || err != nil {
				t.Fatalf("RunOnce = %v, %v; want a completed job", ran, err)
			}
			limit := tc.concurrency
			if limit == 0 {
				limit = DefaultReadConcurrency
			}
			if seen := max(wal.maxSeen.Load(), at.maxSeen.Load()); seen > int32(limit) {
				t.Errorf("%d reads in flight, want at most %d", seen, limit)
			}
			if n := at.reads.Load(); tc.readAt != (n > 0) || tc.readAt && wal.maxLen.Load() > 0 {
				t.Errorf("%d reads into the job's buffers and reads up to %d bytes through GetRange; want all reads one way or the other (readAt %v)",
					n, wal.maxLen.Load(), tc.readAt)
			}

			if len(jobs.completed) != 1 || len(jobs.abandoned) != 0 {
				t.Fatalf("completed %v, abandoned %v; want one completion", jobs.completed, jobs.abandoned)
			}
			req := jobs.completed[0]
			infos := segments(t, segs)
			if len(infos) != 1 || infos[0].Key != req.ObjectKey {
				t.Fatalf("segments %v, want one: %s", infos, req.ObjectKey)
			}
			obj, err := segs.GetRange(ctx, req.ObjectKey, 0, -1)
			if err != nil {
				t.Fatal(err)
			}
			var dataLen int64
			for _, b := range fx.batches {
				dataLen += int64(len(b))
			}
			keyStart := fmt.Sprintf("pfx/tiered/%s/3/%020d-42-", consTopic, fx.job.BaseOffset)
			want := coordapi.CompleteTierJobRequest{JobID: 42, TopicID: consTopic, Partition: 3, BaseOffset: fx.job.BaseOffset,
				LastOffset: fx.job.LastOffset, ObjectKey: req.ObjectKey, ObjectSize: int64(len(obj)), DataLength: dataLen}
			if req != want || !strings.HasPrefix(req.ObjectKey, keyStart) || !strings.HasSuffix(req.ObjectKey, ".seg") {
				t.Fatalf("CompleteTierJob(%+v), want %+v with a key %s<unique>.seg", req, want, keyStart)
			}
			checkSegment(t, fx, obj, tc.epoch)

			// The job patched copies: the cache still serves the WAL bytes.
			for i, bc := range fx.job.Batches {
				b, err := c.GetRange(ctx, bc.ObjectKey, bc.ObjectSize, bc.ByteOffset, int64(bc.ByteLength))
				if err != nil || !bytes.Equal(b, fx.batches[i]) {
					t.Fatalf("batch %d in the cache changed (%v)", i, err)
				}
			}

			m := readMetrics(t, metrics)
			wantM := map[string]int64{"floe.tiered.jobs outcome=completed": 1, "floe.tiered.job.duration outcome=completed": 1,
				"floe.tiered.job.bytes": dataLen}
			for k, v := range wantM {
				if m[k] != v {
					t.Errorf("metric %s = %d, want %d (all: %v)", k, m[k], v, m)
				}
			}
		})
	}
}

func TestConsolidatorFailures(t *testing.T) {
	cases := []struct {
		name string
		// setup breaks the job, the reader, the store or the job source.
		setup         func(fx *walFixture, wal *fakeWAL, store *fakeStore, jobs *fakeJobs)
		wantErr       error
		wantAbandoned bool
		wantSegments  int // left in the store
		wantDeletes   bool
		wantOutcome   string
	}{
		{
			name: "read failure",
			setup: func(fx *walFixture, wal *fakeWAL, _ *fakeStore, _ *fakeJobs) {
				wal.failKey = fx.job.Batches[len(fx.job.Batches)-1].ObjectKey
			},
			wantErr: errInjected, wantAbandoned: true, wantOutcome: "failed",
		},
		{
			name: "header does not parse",
			setup: func(fx *walFixture, wal *fakeWAL, _ *fakeStore, _ *fakeJobs) {
				wal.corruptKey = "*"
				wal.corrupt = func(b []byte) { b[16] = 1 } // magic 1 at the first batch
			},
			wantErr: ErrBatchMismatch, wantAbandoned: true, wantOutcome: "failed",
		},
		{
			name: "offsets do not match the header",
			setup: func(fx *walFixture, _ *fakeWAL, _ *fakeStore, _ *fakeJobs) {
				fx.job.Batches[len(fx.job.Batches)-1].LastOffset++
				fx.job.LastOffset++
			},
			wantErr: ErrBatchMismatch, wantAbandoned: true, wantOutcome: "failed",
		},
		{
			name: "length does not match the header",
			setup: func(fx *walFixture, _ *fakeWAL, _ *fakeStore, _ *fakeJobs) {
				fx.job.Batches[0].ByteLength-- // the object has room: other batches follow
			},
			wantErr: ErrBatchMismatch, wantAbandoned: true, wantOutcome: "failed",
		},
		{
			name: "crc mismatch",
			setup: func(fx *walFixture, wal *fakeWAL, _ *fakeStore, _ *fakeJobs) {
				wal.corruptKey = "*"
				wal.corrupt = func(b []byte) { b[len(b)-1] ^= 0xff }
			},
			wantErr: ErrInvalidBatch, wantAbandoned: true, wantOutcome: "failed",
		},
		{
			name: "gap in the batches",
			setup: func(fx *walFixture, _ *fakeWAL, _ *fakeStore, _ *fakeJobs) {
				fx.job.Batches = append(fx.job.Batches[:1:1], fx.job.Batches[2:]...)
			},
			wantErr: ErrBadJob, wantAbandoned: true, wantOutcome: "failed",
		},
		{
			name: "batch outside its object",
			setup: func(fx *walFixture, _ *fakeWAL, _ *fakeStore, _ *fakeJobs) {
				fx.job.Batches[1].ByteOffset = fx.job.Batches[1].ObjectSize
			},
			wantErr: ErrBadJob, wantAbandoned: true, wantOutcome: "failed",
		},
		{
			name:    "no lease left",
			setup:   func(fx *walFixture, _ *fakeWAL, _ *fakeStore, _ *fakeJobs) { fx.job.LeaseMs = 0 },
			wantErr: nil, wantAbandoned: true, wantOutcome: "failed",
		},
		{
			name:    "put failure",
			setup:   func(_ *walFixture, _ *fakeWAL, s *fakeStore, _ *fakeJobs) { s.failPut = true },
			wantErr: errInjected, wantAbandoned: true, wantDeletes: true, wantOutcome: "failed",
		},
		{
			name: "refused as stale",
			setup: func(_ *walFixture, _ *fakeWAL, _ *fakeStore, j *fakeJobs) {
				j.completeErr = fmt.Errorf("rpc: %w", coordapi.Errorf(kerr.StaleBrokerEpoch, "job 42 superseded"))
			},
			wantErr: kerr.StaleBrokerEpoch, wantDeletes: true, wantOutcome: "refused",
		},
		{
			// Not a refusal: the coordinator may have swapped the segment
			// in already, so it stays (for the GC if not).
			name: "another Kafka error",
			setup: func(_ *walFixture, _ *fakeWAL, _ *fakeStore, j *fakeJobs) {
				j.completeErr = coordapi.Errorf(kerr.InvalidRequest, "data length mismatch")
			},
			wantErr: kerr.InvalidRequest, wantAbandoned: true, wantSegments: 1, wantOutcome: "failed",
		},
		{
			// What the rpc client answers for a request that timed out:
			// a retriable Kafka error, with the swap maybe committed.
			name: "completion timed out",
			setup: func(_ *walFixture, _ *fakeWAL, _ *fakeStore, j *fakeJobs) {
				j.completeErr = fmt.Errorf("rpc complete_tier_job: %w: %w", kerr.KafkaStorageError, context.DeadlineExceeded)
			},
			wantErr: kerr.KafkaStorageError, wantAbandoned: true, wantSegments: 1, wantOutcome: "failed",
		},
		{
			name: "completion unanswered",
			setup: func(_ *walFixture, _ *fakeWAL, _ *fakeStore, j *fakeJobs) {
				j.completeErr = fmt.Errorf("nats: %w", context.DeadlineExceeded)
			},
			// The coordinator may have taken it: the object stays for the GC.
			wantErr: context.DeadlineExceeded, wantAbandoned: true, wantSegments: 1, wantOutcome: "failed",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fx := buildWAL(t, []int{3, 2}, false)
			wal := &fakeWAL{inner: newCache(t, fx.store)}
			store := &fakeStore{inner: objectstore.NewMemory()}
			jobs := newFakeJobs()
			tc.setup(&fx, wal, store, jobs)
			jobs.queue = []coordapi.TierJob{fx.job}
			reader := sdkmetric.NewManualReader()
			meter := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)).Meter("test")
			con, err := NewConsolidator(jobs, wal, store, ConsolidatorOptions{Prefix: consPrefix, MaxReadBytes: 1, Meter: meter})
			if err != nil {
				t.Fatal(err)
			}
			ran, err := con.RunOnce(t.Context())
			if !ran || err == nil {
				t.Fatalf("RunOnce = %v, %v; want a failed job", ran, err)
			}
			if tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
				t.Fatalf("RunOnce error %v, want %v", err, tc.wantErr)
			}
			if _, ok := jobs.abandoned[fx.job.ID]; ok != tc.wantAbandoned {
				t.Errorf("abandoned %v, want %v", jobs.abandoned, tc.wantAbandoned)
			}
			if len(jobs.completed) != 0 {
				t.Errorf("completed %v, want none", jobs.completed)
			}
			if n := len(segments(t, store.inner)); n != tc.wantSegments {
				t.Errorf("%d segments left, want %d", n, tc.wantSegments)
			}
			if got := store.deletes.Load() > 0; got != tc.wantDeletes {
				t.Errorf("deleted: %v, want %v", got, tc.wantDeletes)
			}
			if m := readMetrics(t, reader); m["floe.tiered.jobs outcome="+tc.wantOutcome] != 1 || m["floe.tiered.job.bytes"] != 0 {
				t.Errorf("metrics %v, want one %s job and no bytes", m, tc.wantOutcome)
			}
		})
	}
}

// TestConsolidatorLeaseEnds checks that a job stops before its lease ends: its
// reads never return on their own, and the job is abandoned at the margin.
func TestConsolidatorLeaseEnds(t *testing.T) {
	fx := buildWAL(t, []int{2}, false)
	fx.job.LeaseMs = 40 // a margin of 10ms: the job ends 30ms after the claim
	jobs := newFakeJobs(fx.job)
	wal := &fakeWAL{inner: newCache(t, fx.store), blockKey: "*"}
	segs := objectstore.NewMemory()
	con, err := NewConsolidator(jobs, wal, segs, ConsolidatorOptions{Prefix: consPrefix})
	if err != nil {
		t.Fatal(err)
	}
	ran, err := con.RunOnce(t.Context())
	if !ran || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("RunOnce = %v, %v; want the lease's deadline", ran, err)
	}
	if _, ok := jobs.abandoned[fx.job.ID]; !ok || len(jobs.completed) != 0 || len(segments(t, segs)) != 0 {
		t.Fatalf("abandoned %v completed %v: want abandoned, nothing written", jobs.abandoned, jobs.completed)
	}
}

// TestConsolidatorNeverRunsTwice claims the same job id twice: the second is
// given back without running.
func TestConsolidatorNeverRunsTwice(t *testing.T) {
	fx := buildWAL(t, []int{2}, false)
	jobs := newFakeJobs(fx.job, fx.job)
	segs := objectstore.NewMemory()
	con, err := NewConsolidator(jobs, newCache(t, fx.store), segs, ConsolidatorOptions{Prefix: consPrefix})
	if err != nil {
		t.Fatal(err)
	}
	if ran, err := con.RunOnce(t.Context()); !ran || err != nil {
		t.Fatalf("first RunOnce = %v, %v", ran, err)
	}
	if ran, err := con.RunOnce(t.Context()); !ran || err == nil {
		t.Fatalf("second RunOnce = %v, %v; want a refused job", ran, err)
	}
	if _, ok := jobs.abandoned[fx.job.ID]; !ok || len(jobs.completed) != 1 || len(segments(t, segs)) != 1 {
		t.Fatalf("abandoned %v completed %d segments %d: want one run, then abandoned", jobs.abandoned, len(jobs.completed), len(segments(t, segs)))
	}
	if ran, err := con.RunOnce(t.Context()); ran || err != nil {
		t.Fatalf("third RunOnce = %v, %v; want no job", ran, err)
	}
}

// waitState waits until cond holds of jobs' claims, completions and
// abandons, checking after each call jobs gets; it fails the test after 10s
// without one.
func waitState(t *testing.T, jobs *fakeJobs, what string, cond func(claims, completed, abandoned int) bool) {
	t.Helper()
	timeout := time.NewTimer(10 * time.Second)
	defer timeout.Stop()
	for !cond(jobs.state()) {
		select {
		case <-jobs.changed:
		case <-timeout.C:
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// runInBackground starts c.Run and returns its stop function, which cancels
// it and waits for it to return.
func runInBackground(t *testing.T, c *Consolidator) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.Run(ctx)
	}()
	stop = func() {
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("Run did not return after its context was cancelled")
		}
	}
	t.Cleanup(stop)
	return stop
}

func TestConsolidatorRun(t *testing.T) {
	t.Run("claims again at once after a job", func(t *testing.T) {
		var queue []coordapi.TierJob
		fx := buildWAL(t, []int{2, 1}, false)
		for id := range uint64(3) {
			j := fx.job
			j.ID = 100 + id
			queue = append(queue, j)
		}
		jobs := newFakeJobs(queue...)
		// An hour's poll interval: only claiming at once finishes the queue.
		con, err := NewConsolidator(jobs, newCache(t, fx.store), objectstore.NewMemory(),
			ConsolidatorOptions{Prefix: consPrefix, PollInterval: time.Hour, Concurrency: 1})
		if err != nil {
			t.Fatal(err)
		}
		stop := runInBackground(t, con)
		waitState(t, jobs, "three completed jobs and a claim finding none", func(claims, completed, _ int) bool {
			return completed == 3 && claims == 4
		})
		stop()
	})

	t.Run("cancel while idle", func(t *testing.T) {
		jobs := newFakeJobs()
		con, err := NewConsolidator(jobs, &fakeWAL{}, objectstore.NewMemory(), ConsolidatorOptions{PollInterval: time.Hour, Concurrency: 1})
		if err != nil {
			t.Fatal(err)
		}
		stop := runInBackground(t, con)
		waitState(t, jobs, "a claim", func(claims, _, _ int) bool { return claims == 1 })
		stop()
	})

	t.Run("cancel while backing off", func(t *testing.T) {
		jobs := newFakeJobs()
		jobs.claimErr = errors.New("coordinator unreachable")
		con, err := NewConsolidator(jobs, &fakeWAL{}, objectstore.NewMemory(), ConsolidatorOptions{PollInterval: time.Hour, Concurrency: 1})
		if err != nil {
			t.Fatal(err)
		}
		stop := runInBackground(t, con)
		waitState(t, jobs, "a claim", func(claims, _, _ int) bool { return claims == 1 })
		stop()
	})

	t.Run("cancel during a job abandons it", func(t *testing.T) {
		fx := buildWAL(t, []int{2}, false)
		jobs := newFakeJobs(fx.job)
		wal := &fakeWAL{inner: newCache(t, fx.store), blockKey: "*", entered: make(chan struct{}, 16)}
		segs := objectstore.NewMemory()
		con, err := NewConsolidator(jobs, wal, segs, ConsolidatorOptions{Prefix: consPrefix, PollInterval: time.Hour, Concurrency: 1})
		if err != nil {
			t.Fatal(err)
		}
		stop := runInBackground(t, con)
		<-wal.entered // the job is reading
		stop()
		if _, completed, abandoned := jobs.state(); completed != 0 || abandoned != 1 || len(segments(t, segs)) != 0 {
			t.Fatalf("completed %d abandoned %d: want the job abandoned, nothing written", completed, abandoned)
		}
	})

	t.Run("runs Concurrency jobs at once", func(t *testing.T) {
		fx := buildWAL(t, []int{2}, false)
		var queue []coordapi.TierJob
		for id := range uint64(3) {
			j := fx.job
			j.ID = 200 + id
			queue = append(queue, j)
		}
		jobs := newFakeJobs(queue...)
		wal := &fakeWAL{inner: newCache(t, fx.store), blockKey: "*", entered: make(chan struct{}, 16)}
		con, err := NewConsolidator(jobs, wal, objectstore.NewMemory(), ConsolidatorOptions{Prefix: consPrefix, PollInterval: time.Hour, Concurrency: 3})
		if err != nil {
			t.Fatal(err)
		}
		stop := runInBackground(t, con)
		// Every read blocks until stop: three reads started are three
		// jobs reading at once (each job's two batches are one read).
		for i := range 3 {
			select {
			case <-wal.entered:
			case <-time.After(10 * time.Second):
				t.Fatalf("%d jobs reading after 10s, want 3 at once", i)
			}
		}
		stop()
		if _, _, abandoned := jobs.state(); abandoned != 3 {
			t.Fatalf("%d jobs abandoned at stop, want 3", abandoned)
		}
	})
}

func TestConsolidatorBackoff(t *testing.T) {
	con, err := NewConsolidator(newFakeJobs(), &fakeWAL{}, objectstore.NewMemory(),
		ConsolidatorOptions{PollInterval: time.Second, MaxBackoff: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		failures int
		want     time.Duration
	}{
		{1, time.Second},
		{2, 2 * time.Second},
		{3, 4 * time.Second},
		{4, 8 * time.Second},
		{5, 10 * time.Second},
		{1000, 10 * time.Second},
	} {
		if got := con.backoff(tc.failures); got != tc.want {
			t.Errorf("backoff(%d) = %v, want %v", tc.failures, got, tc.want)
		}
	}
}

func TestConsolidatorOptionsValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts ConsolidatorOptions
		want []string // substrings of the error, none for valid
	}{
		{name: "zero", opts: ConsolidatorOptions{}},
		{name: "set", opts: ConsolidatorOptions{PollInterval: time.Second, MaxBackoff: time.Millisecond, ReadConcurrency: 1}},
		{name: "negative poll", opts: ConsolidatorOptions{PollInterval: -1}, want: []string{"poll interval"}},
		{name: "everything negative", opts: ConsolidatorOptions{PollInterval: -1, MaxBackoff: -1, LeaseMargin: -1,
			ReadConcurrency: -1, MaxReadBytes: -1, IndexIntervalBytes: -1, DedupeBufferBytes: -1},
			want: []string{"poll interval", "max backoff", "lease margin", "read concurrency", "max read bytes", "index interval", "dedupe buffer"}},
		{name: "dedupe buffer of two slots", opts: ConsolidatorOptions{DedupeBufferBytes: 2 * OffsetMapEntrySize}},
		{name: "dedupe buffer below two slots", opts: ConsolidatorOptions{DedupeBufferBytes: 2*OffsetMapEntrySize - 1}, want: []string{"dedupe buffer of 47 bytes"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.opts.Validate()
			if (err != nil) != (len(tc.want) > 0) {
				t.Fatalf("Validate() = %v, want errors %q", err, tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Validate() = %v, want it to name %q", err, w)
				}
			}
		})
	}
}
