package tiered

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/cockroachdb/datadriven"
	"github.com/twmb/franz-go/pkg/kerr"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/objectstore"
	"github.com/floe-io/floe/record"
)

// The coordinator's client answers the key index's offsets.
var _ KeyOffsets = coordapi.Coordinator(nil)

// compactPartition is the partition compaction tests run on.
const compactPartition = 3

// memReader reads ranges of a Memory store as a WALReader.
type memReader struct{ m *objectstore.Memory }

func (r memReader) GetRange(ctx context.Context, key string, _, offset, length int64) ([]byte, error) {
	return r.m.GetRange(ctx, key, offset, length)
}

// compactFixture is a partition's segments in a store, which compaction
// jobs read and write, and which the fixture swaps as the coordinator would.
type compactFixture struct {
	store *objectstore.Memory
	segs  []coordapi.BatchCoord
	jobID uint64
}

func newCompactFixture() *compactFixture {
	return &compactFixture{store: objectstore.NewMemory(), jobID: 100}
}

// addSegment writes batches (real base offsets in) as the partition's next
// segment.
func (fx *compactFixture) addSegment(t *testing.T, batches [][]byte) {
	t.Helper()
	h, err := record.ParseHeader(batches[0])
	if err != nil {
		t.Fatal(err)
	}
	w, err := NewWriter(h.BaseOffset, Options{IndexIntervalBytes: 256})
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range batches {
		h, _ := record.ParseHeader(b)
		if err := w.Append(b, h.BaseOffset, 3); err != nil {
			t.Fatalf("segment batch at %d: %v", h.BaseOffset, err)
		}
	}
	obj, info, err := w.Finish()
	if err != nil {
		t.Fatal(err)
	}
	key := coordapi.SegmentKey(consPrefix, consTopic, compactPartition, info.BaseOffset, fmt.Sprintf("in-%d", len(fx.segs)))
	if err := fx.store.Put(t.Context(), key, obj); err != nil {
		t.Fatal(err)
	}
	fx.segs = append(fx.segs, coordapi.BatchCoord{ObjectKey: key, ObjectSize: info.Size, ByteLength: int32(info.DataLength),
		BaseOffset: info.BaseOffset, LastOffset: info.LastOffset, MaxTimestamp: info.MaxTimestamp, Segment: true})
}

// job returns a compaction job over every segment.
func (fx *compactFixture) job(cj coordapi.CompactJob) coordapi.TierJob {
	fx.jobID++
	cj.Segments = slices.Clone(fx.segs)
	return coordapi.TierJob{ID: fx.jobID, TopicID: consTopic, Partition: compactPartition, LeaseMs: 60_000,
		BaseOffset: fx.segs[0].BaseOffset, LastOffset: fx.segs[len(fx.segs)-1].LastOffset,
		Kind: coordapi.TierJobCompact, Compact: &cj}
}

// batches returns the batches of segment seg.
func (fx *compactFixture) batches(t *testing.T, seg coordapi.BatchCoord) [][]byte {
	t.Helper()
	data, err := fx.store.GetRange(t.Context(), seg.ObjectKey, 0, int64(seg.ByteLength))
	if err != nil {
		t.Fatal(err)
	}
	bs, n, err := ReadBatches(data)
	if err != nil || n != len(data) {
		t.Fatalf("segment %s: %d of %d bytes: %v", seg.ObjectKey, n, len(data), err)
	}
	return bs
}

// records calls fn with every record of the partition, in offset order.
func (fx *compactFixture) records(t *testing.T, fn func(h *record.Header, r *record.Record)) {
	t.Helper()
	for _, seg := range fx.segs {
		for _, b := range fx.batches(t, seg) {
			h, _ := record.ParseHeader(b)
			if err := record.Records(b, func(r *record.Record) error { fn(&h, r); return nil }); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// index returns a key index over the partition as the coordinator keeps it:
// each key's latest offset, no entry for a key whose latest record is a
// tombstone.
func (fx *compactFixture) index(t *testing.T) *fakeIndex {
	t.Helper()
	latest := map[string]int64{}
	fx.records(t, func(h *record.Header, r *record.Record) {
		switch {
		case h.Control() || r.Key == nil:
		case r.Value == nil:
			delete(latest, string(r.Key))
		default:
			latest[string(r.Key)] = h.BaseOffset + int64(r.OffsetDelta)
		}
	})
	return &fakeIndex{latest: latest}
}

// check checks that req, the completion of job, describes what the job
// wrote: outputs that replace whole inputs, contiguous from the job's base
// offset, each ending at its last input's last offset, with every field
// as its object says, grouped up to segment.bytes; and the counts.
func (fx *compactFixture) check(t *testing.T, job coordapi.TierJob, req coordapi.CompleteTierJobRequest) {
	t.Helper()
	res := req.Compacted
	if req.JobID != job.ID || req.TopicID != job.TopicID || req.Partition != job.Partition || req.BaseOffset != job.BaseOffset ||
		req.ObjectKey != "" || res == nil || len(res.Segments) == 0 {
		t.Fatalf("completion %+v of job %d", req, job.ID)
	}
	inputs := job.Compact.Segments
	replaced := 0
	for replaced < len(inputs) && inputs[replaced].BaseOffset <= res.CleanedThrough {
		replaced++
	}
	if replaced == 0 || req.LastOffset != inputs[replaced-1].LastOffset {
		t.Fatalf("completion ends at %d with cleaned-through %d, inputs %v", req.LastOffset, res.CleanedThrough, inputs)
	}
	if job.Compact.KeyIndex && res.CleanedThrough != job.LastOffset {
		t.Fatalf("an indexed pass cleaned through %d, not the job's last offset %d", res.CleanedThrough, job.LastOffset)
	}
	var bytesIn, recordsIn, bytesOut, recordsOut int64
	for _, seg := range inputs[:replaced] {
		bytesIn += int64(seg.ByteLength)
		for _, b := range fx.batches(t, seg) {
			h, _ := record.ParseHeader(b)
			recordsIn += int64(h.NumRecords)
		}
	}
	horizon := int64(-1)
	next := job.BaseOffset // where the next output must start
	var prevBytes int64
	segBytes := job.Compact.SegmentBytes
	if segBytes <= 0 {
		segBytes = defaultCompactSegmentBytes
	}
	for i, s := range res.Segments {
		if s.BaseOffset != next || s.LastOffset < s.BaseOffset || s.LastOffset > req.LastOffset {
			t.Fatalf("output %d covers %d-%d, want from %d, within the replaced inputs (to %d)", i, s.BaseOffset, s.LastOffset, next, req.LastOffset)
		}
		next = s.LastOffset + 1
		obj, err := fx.store.GetRange(t.Context(), s.ObjectKey, 0, -1)
		if err != nil {
			t.Fatalf("output %d: %v", i, err)
		}
		tr, err := ParseTrailer(obj)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ParseIndexes(obj[tr.IndexPos():], tr); err != nil {
			t.Fatal(err)
		}
		if int64(len(obj)) != s.ObjectSize || int64(tr.DataLength) != s.DataLength || tr.BaseOffset != s.BaseOffset ||
			tr.LastOffset != s.LastOffset || int64(tr.BatchCount) != s.Batches || tr.MaxTimestamp != s.MaxTimestamp ||
			!strings.HasPrefix(s.ObjectKey, fmt.Sprintf("pfx/tiered/%s/%d/%020d-%d-", consTopic, compactPartition, s.BaseOffset, job.ID)) {
			t.Fatalf("output %d: %+v, its object %d bytes with trailer %+v", i, s, len(obj), tr)
		}
		bs, n, err := ReadBatches(obj[:tr.DataLength]) // record.ValidateStored: CRCs
		if err != nil || int64(n) != s.DataLength {
			t.Fatalf("output %d: batches %d of %d bytes: %v", i, n, s.DataLength, err)
		}
		maxTS, tsOffset, tsLast := int64(-1), int64(-1), int64(-1)
		for _, b := range bs {
			h, _ := record.ParseHeader(b)
			if err := record.Records(b, nil); err != nil {
				t.Fatalf("output %d batch %d: %v", i, h.BaseOffset, err)
			}
			last := h.BaseOffset + int64(h.LastOffsetDelta)
			if h.MaxTimestamp > maxTS {
				maxTS, tsLast, tsOffset = h.MaxTimestamp, last, last
				if h.LogAppendTime() {
					tsOffset = h.BaseOffset
				}
			}
			if h.Attributes&record.AttrDeleteHorizon != 0 && (holdsTombstone(t, b) || h.Control()) && (horizon < 0 || h.BaseTimestamp < horizon) {
				horizon = h.BaseTimestamp
			}
			recordsOut += int64(h.NumRecords)
		}
		if s.MaxTimestamp != maxTS || s.MaxTimestampOffset != tsOffset || s.MaxTimestampLast != tsLast {
			t.Errorf("output %d: max timestamp %d at %d (batch last %d), want %d at %d (%d)", i, s.MaxTimestamp, s.MaxTimestampOffset, s.MaxTimestampLast, maxTS, tsOffset, tsLast)
		}
		// Outputs are cut at batch boundaries: one of several batches fits
		// segment.bytes, and each output starts anew only because its
		// first batch did not fit the previous output.
		if len(bs) > 1 && s.DataLength > segBytes {
			t.Errorf("output %d of %d batches holds %d bytes, above segment.bytes %d", i, len(bs), s.DataLength, segBytes)
		}
		if i > 0 && prevBytes+int64(len(bs[0])) <= segBytes {
			t.Errorf("output %d starts anew though its first batch's %d bytes fit after the previous output's %d (segment.bytes %d)", i, len(bs[0]), prevBytes, segBytes)
		}
		prevBytes = s.DataLength
		bytesOut += s.DataLength
	}
	if next != req.LastOffset+1 {
		t.Fatalf("outputs end at %d, the replaced inputs at %d", next-1, req.LastOffset)
	}
	if res.BytesIn != bytesIn || res.RecordsIn != recordsIn || res.BytesOut != bytesOut || res.RecordsOut != recordsOut || res.TombstoneHorizonMs != horizon {
		t.Errorf("result %+v, want bytes %d -> %d, records %d -> %d, horizon %d", res, bytesIn, bytesOut, recordsIn, recordsOut, horizon)
	}
}

// holdsTombstone reports whether batch b holds a keyed record with a null
// value.
func holdsTombstone(t *testing.T, b []byte) bool {
	t.Helper()
	found := false
	if err := record.Records(b, func(r *record.Record) error {
		found = found || r.Key != nil && r.Value == nil
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return found
}

// swap replaces the inputs req replaced with its outputs, as the
// coordinator's swap does.
func (fx *compactFixture) swap(req coordapi.CompleteTierJobRequest) {
	var segs []coordapi.BatchCoord
	for _, s := range req.Compacted.Segments {
		segs = append(segs, coordapi.BatchCoord{ObjectKey: s.ObjectKey, ObjectSize: s.ObjectSize, ByteLength: int32(s.DataLength),
			BaseOffset: s.BaseOffset, LastOffset: s.LastOffset, MaxTimestamp: s.MaxTimestamp, Segment: true})
	}
	for _, seg := range fx.segs {
		if seg.BaseOffset > req.LastOffset {
			segs = append(segs, seg)
		}
	}
	fx.segs = segs
}

// fakeIndex is a KeyOffsets over a map of latest offsets; it records each
// request's key count and key bytes.
type fakeIndex struct {
	mu       sync.Mutex
	latest   map[string]int64
	err      error
	short    bool // answer one offset too few
	requests []int
	keyBytes []int
}

func (f *fakeIndex) KvLatestOffsets(ctx context.Context, req coordapi.KvOffsetsRequest) ([]int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if req.TopicID != consTopic || req.Partition != compactPartition {
		return nil, fmt.Errorf("lookup in %s/%d", req.TopicID, req.Partition)
	}
	if f.err != nil {
		return nil, f.err
	}
	n := 0
	out := make([]int64, 0, len(req.Keys))
	for _, k := range req.Keys {
		n += len(k)
		off, ok := f.latest[string(k)]
		if !ok {
			off = -1
		}
		out = append(out, off)
	}
	f.requests = append(f.requests, len(req.Keys))
	f.keyBytes = append(f.keyBytes, n)
	if f.short {
		out = out[:len(out)-1]
	}
	return out, nil
}

// compactRun runs one job over fx's segments with a Consolidator of opts
// (prefix and leader epoch set here), checks a completion, swaps it in and
// returns it.
func (fx *compactFixture) compact(t *testing.T, cj coordapi.CompactJob, opts ConsolidatorOptions) coordapi.CompleteTierJobRequest {
	t.Helper()
	job := fx.job(cj)
	jobs := newFakeJobs(job)
	opts.Prefix, opts.LeaderEpoch = consPrefix, 3
	con, err := NewConsolidator(jobs, memReader{fx.store}, fx.store, opts)
	if err != nil {
		t.Fatal(err)
	}
	if ran, err := con.RunOnce(t.Context()); !ran || err != nil {
		t.Fatalf("RunOnce = %v, %v; want a completed job", ran, err)
	}
	if len(jobs.completed) != 1 || len(jobs.abandoned) != 0 {
		t.Fatalf("completed %v abandoned %v", jobs.completed, jobs.abandoned)
	}
	req := jobs.completed[0]
	fx.check(t, job, req)
	fx.swap(req)
	return req
}

// TestCompactJobDataDriven runs the scripts under testdata/compactjob: a
// partition's segments, then compaction jobs over them. Commands:
//
//	segments
//	<batches of the first segment, one a line, as TestCompactDataDriven reads them>
//	--
//	<batches of the next segment>
//
// sets the partition's segments, written by Writer, and lists them.
//
//	compact [dirty=O] [now=MS] [retention=MS] [segment-bytes=N] [dedupe=N]
//	    [max-read=N] [producers=O,...] [indexed [tail=K:O,...]]
//
// runs one compaction job over every segment (dirty defaults to the first
// base offset, segment-bytes to the default, producers lists the producers'
// last offsets), through Consolidator.RunOnce with DedupeBufferBytes dedupe
// and MaxReadBytes max-read; with indexed the job asks a key index built
// from the segments, with tail's entries over it (records in the WAL tail
// after the segments; -1 for a key whose latest record there is a
// tombstone), and prints each lookup's key count. It checks the completion against the objects (see
// compactFixture.check), swaps the outputs in for the inputs they replace,
// and prints the completion and the partition's segments after the swap:
// each output ("out") with its batches, each input left ("in").
func TestCompactJobDataDriven(t *testing.T) {
	datadriven.Walk(t, "testdata/compactjob", func(t *testing.T, path string) {
		var fx *compactFixture
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			switch d.Cmd {
			case "segments":
				fx = newCompactFixture()
				for _, part := range strings.Split(strings.TrimSpace(d.Input), "\n--\n") {
					var batches [][]byte
					for _, line := range strings.Split(part, "\n") {
						b, err := parseBatch(line)
						if err != nil {
							d.Fatalf(t, "%s: %v", line, err)
						}
						batches = append(batches, b)
					}
					fx.addSegment(t, batches)
				}
				return fx.render(t, nil)
			case "compact":
				cj := coordapi.CompactJob{DirtyOffset: fx.segs[0].BaseOffset}
				var opts ConsolidatorOptions
				d.MaybeScanArgs(t, "dirty", &cj.DirtyOffset)
				d.MaybeScanArgs(t, "now", &cj.NowMs)
				d.MaybeScanArgs(t, "retention", &cj.DeleteRetentionMs)
				d.MaybeScanArgs(t, "segment-bytes", &cj.SegmentBytes)
				d.MaybeScanArgs(t, "dedupe", &opts.DedupeBufferBytes)
				d.MaybeScanArgs(t, "max-read", &opts.MaxReadBytes)
				if d.HasArg("producers") {
					var s string
					d.ScanArgs(t, "producers", &s)
					for _, f := range strings.Split(s, ",") {
						n, err := strconv.ParseInt(f, 10, 64)
						if err != nil {
							d.Fatalf(t, "bad producers %s", s)
						}
						cj.ProducerLastOffsets = append(cj.ProducerLastOffsets, n)
					}
				}
				var idx *fakeIndex
				if d.HasArg("indexed") {
					cj.KeyIndex = true
					idx = fx.index(t)
					opts.KeyIndex = idx
					if d.HasArg("tail") {
						for k, off := range scanPairs(t, d, "tail") {
							idx.latest[k] = off
							if off < 0 {
								delete(idx.latest, k)
							}
						}
					}
				}
				req := fx.compact(t, cj, opts)
				var sb strings.Builder
				res := req.Compacted
				fmt.Fprintf(&sb, "completed %d-%d: cleaned-through=%d horizon=%d bytes %d -> %d, records %d -> %d\n",
					req.BaseOffset, req.LastOffset, res.CleanedThrough, res.TombstoneHorizonMs, res.BytesIn, res.BytesOut, res.RecordsIn, res.RecordsOut)
				if idx != nil {
					fmt.Fprintf(&sb, "lookups: %v keys\n", idx.requests)
				}
				sb.WriteString(fx.render(t, res.Segments))
				return sb.String()
			}
			d.Fatalf(t, "unknown command %s", d.Cmd)
			return ""
		})
	})
}

// render lists fx's segments, with the batches of those outputs names.
func (fx *compactFixture) render(t *testing.T, outputs []coordapi.CompactedSegment) string {
	var sb strings.Builder
	for _, seg := range fx.segs {
		i := slices.IndexFunc(outputs, func(s coordapi.CompactedSegment) bool { return s.ObjectKey == seg.ObjectKey })
		if i < 0 {
			fmt.Fprintf(&sb, "in %d-%d: data=%d\n", seg.BaseOffset, seg.LastOffset, seg.ByteLength)
			continue
		}
		s := outputs[i]
		fmt.Fprintf(&sb, "out %d-%d: data=%d batches=%d max-ts=%d@%d\n", s.BaseOffset, s.LastOffset, s.DataLength, s.Batches, s.MaxTimestamp, s.MaxTimestampOffset)
		for _, b := range fx.batches(t, seg) {
			sb.WriteString(renderBatch(t, b, false))
		}
	}
	return sb.String()
}

// genSegments writes random segments into fx: n segments of 10-20 batches
// (10-80 with big) of 1-30 records (1-200) each over keys
// key-0...key-<keys-1>, in every codec, with overwrites, keyless records, a
// producer's batches and, for some keys, one tombstone as their last record.
// It returns the producers' last offsets.
func genSegments(t *testing.T, fx *compactFixture, seed uint64, n, keys int, big bool) []int64 {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 7))
	deleted := map[int]bool{} // keys whose tombstone was written
	off, ts := int64(0), int64(1_700_000_000_000)
	var producerLast int64
	for range n {
		var batches [][]byte
		nb, nr := 10+rng.IntN(11), 30
		if big {
			nb, nr = 10+rng.IntN(71), 200
		}
		for range nb {
			var recs []record.Record
			for i := range 1 + rng.IntN(nr) {
				k := rng.IntN(keys)
				r := record.Record{Key: fmt.Appendf(nil, "key-%d", k), Value: fmt.Appendf(nil, "v%d-%s", off+int64(i), bytes.Repeat([]byte{'x'}, rng.IntN(40))), TimestampDelta: int64(i)}
				switch {
				case deleted[k]:
					r.Key = nil // the key is gone: a keyless record instead
				case rng.IntN(40) == 0:
					r.Value, deleted[k] = nil, true
				case rng.IntN(50) == 0:
					r.Key = nil
				}
				recs = append(recs, r)
			}
			opts := record.BuildOptions{Codec: codecs[rng.IntN(len(codecs))], BaseOffset: off, BaseTimestamp: ts,
				PartitionLeaderEpoch: 3, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}
			if rng.IntN(3) == 0 {
				opts.ProducerID, opts.ProducerEpoch, opts.BaseSequence = 11, 0, int32(off)
				producerLast = off + int64(len(recs)) - 1
			}
			b, err := record.Build(opts, recs)
			if err != nil {
				t.Fatal(err)
			}
			batches = append(batches, b)
			off += int64(len(recs))
			ts += int64(len(recs))
		}
		fx.addSegment(t, batches)
	}
	return []int64{producerLast}
}

// survivors returns each record of fx's segments as "offset key=value",
// sorted by offset.
func survivors(t *testing.T, fx *compactFixture) []string {
	t.Helper()
	var out []string
	fx.records(t, func(h *record.Header, r *record.Record) {
		out = append(out, fmt.Sprintf("%d %s=%s", h.BaseOffset+int64(r.OffsetDelta), r.Key, r.Value))
	})
	return out
}

// TestCompactJobKeepsLatest compacts random segments with a key map (the
// default buffer, a buffer that fills, small read windows) and with the key
// index, and checks each against the model: the latest record of each key
// at its own offset, and every keyless record. The key index is asked in
// requests of at most 4096 keys.
func TestCompactJobKeepsLatest(t *testing.T) {
	for _, tc := range []struct {
		name       string
		opts       ConsolidatorOptions
		indexed    bool
		segBytes   int64
		passes     int  // at least; a buffer that fills takes several
		fullLookup bool // some lookup takes maxLookupKeys keys
	}{
		{name: "key map", passes: 1},
		{name: "key map in windows", opts: ConsolidatorOptions{MaxReadBytes: 20_000}, segBytes: 100_000, passes: 1},
		{name: "key map that fills", opts: ConsolidatorOptions{DedupeBufferBytes: 4000 * OffsetMapEntrySize}, passes: 3},
		{name: "key index", indexed: true, passes: 1, fullLookup: true},
		{name: "key index in small windows", indexed: true, opts: ConsolidatorOptions{MaxReadBytes: 300}, passes: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fx := newCompactFixture()
			producers := genSegments(t, fx, 1, 3, 50_000, true)
			// The model: every keyless record, and each key's latest
			// record (tombstones too: no horizon has passed).
			latest := map[string]int64{}
			fx.records(t, func(h *record.Header, r *record.Record) {
				if r.Key != nil {
					latest[string(r.Key)] = h.BaseOffset + int64(r.OffsetDelta)
				}
			})
			var want []string
			fx.records(t, func(h *record.Header, r *record.Record) {
				off := h.BaseOffset + int64(r.OffsetDelta)
				if r.Key == nil || latest[string(r.Key)] == off {
					want = append(want, fmt.Sprintf("%d %s=%s", off, r.Key, r.Value))
				}
			})
			lastOffset := fx.segs[len(fx.segs)-1].LastOffset
			dirty, passes := int64(0), 0
			var idx *fakeIndex
			for dirty <= lastOffset {
				cj := coordapi.CompactJob{DirtyOffset: dirty, NowMs: 1, DeleteRetentionMs: 1000, SegmentBytes: tc.segBytes, ProducerLastOffsets: producers}
				opts := tc.opts
				if tc.indexed {
					cj.KeyIndex = true
					idx = fx.index(t)
					opts.KeyIndex = idx
				}
				wal := &fakeWAL{inner: memReader{fx.store}}
				job := fx.job(cj)
				jobs := newFakeJobs(job)
				opts.Prefix, opts.LeaderEpoch = consPrefix, 3
				con, err := NewConsolidator(jobs, wal, fx.store, opts)
				if err != nil {
					t.Fatal(err)
				}
				if ran, err := con.RunOnce(t.Context()); !ran || err != nil {
					t.Fatalf("pass %d: RunOnce = %v, %v", passes, ran, err)
				}
				req := jobs.completed[0]
				fx.check(t, job, req)
				fx.swap(req)
				if opts.MaxReadBytes > 0 {
					// A read is one window, or one batch larger than it.
					window := max(opts.MaxReadBytes, record.HeaderSize)
					if got := wal.maxLen.Load(); got > window && got > maxBatchSize(t, fx, job.Compact.Segments) {
						t.Errorf("a read of %d bytes, above the window %d and every batch", got, window)
					}
				}
				if req.Compacted.CleanedThrough < dirty {
					t.Fatalf("pass %d cleaned through %d, from %d", passes, req.Compacted.CleanedThrough, dirty)
				}
				dirty = req.Compacted.CleanedThrough + 1
				passes++
			}
			if passes < tc.passes {
				t.Errorf("%d passes, want at least %d", passes, tc.passes)
			}
			if got := survivors(t, fx); !slices.Equal(got, want) {
				t.Errorf("after %d passes %d records, want %d; first difference at %d", passes, len(got), len(want), firstDiff(got, want))
			}
			if idx != nil {
				if len(idx.requests) < 2 {
					t.Errorf("key index asked %v: want the keys split into several requests", idx.requests)
				}
				for i, n := range idx.requests {
					if n > maxLookupKeys || n == 0 || idx.keyBytes[i] > maxLookupKeyBytes {
						t.Errorf("request %d of %d keys, %d bytes", i, n, idx.keyBytes[i])
					}
				}
				if tc.fullLookup && slices.Max(idx.requests) != maxLookupKeys {
					t.Errorf("requests of %v keys: want a window of more keys than one request takes", idx.requests)
				}
			}
		})
	}
}

// maxBatchSize returns the size of the largest batch of segs.
func maxBatchSize(t *testing.T, fx *compactFixture, segs []coordapi.BatchCoord) int64 {
	t.Helper()
	var n int64
	for _, seg := range segs {
		for _, b := range fx.batches(t, seg) {
			n = max(n, int64(len(b)))
		}
	}
	return n
}

func firstDiff(a, b []string) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

func TestLookupChunk(t *testing.T) {
	keys := func(n, size int) [][]byte {
		out := make([][]byte, n)
		for i := range out {
			out[i] = make([]byte, size)
		}
		return out
	}
	for _, tc := range []struct {
		name string
		keys [][]byte
		want int
	}{
		{"none", nil, 0},
		{"one", keys(1, 3), 1},
		{"under both limits", keys(100, 10), 100},
		{"at the key limit", keys(maxLookupKeys, 1), maxLookupKeys},
		{"over the key limit", keys(maxLookupKeys+1, 1), maxLookupKeys},
		{"at the byte limit", keys(4, maxLookupKeyBytes/4), 4},
		{"over the byte limit", keys(5, maxLookupKeyBytes/4), 4},
		{"one key over the byte limit", keys(3, maxLookupKeyBytes+1), 1},
		{"empty keys", keys(maxLookupKeys*2, 0), maxLookupKeys},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := lookupChunk(tc.keys); got != tc.want {
				t.Errorf("lookupChunk = %d, want %d", got, tc.want)
			}
		})
	}
}

// TestCompactJobReusesKeyMap checks that the dedupe buffer is allocated by
// the first job that builds a key map, and only then.
func TestCompactJobReusesKeyMap(t *testing.T) {
	fx := newCompactFixture()
	genSegments(t, fx, 3, 2, 50, false)
	idx := fx.index(t)
	var queue []coordapi.TierJob
	for _, indexed := range []bool{true, false, false} {
		queue = append(queue, fx.job(coordapi.CompactJob{KeyIndex: indexed}))
	}
	jobs := newFakeJobs(queue...)
	con, err := NewConsolidator(jobs, memReader{fx.store}, fx.store, ConsolidatorOptions{Prefix: consPrefix, KeyIndex: idx, DedupeBufferBytes: 1 << 16})
	if err != nil {
		t.Fatal(err)
	}
	var maps []*OffsetMap
	for i := range queue {
		if ran, err := con.RunOnce(t.Context()); !ran || err != nil {
			t.Fatalf("job %d: %v, %v", i, ran, err)
		}
		maps = append(maps, con.compaction.keys)
	}
	if maps[0] != nil || maps[1] == nil || maps[2] != maps[1] || maps[1].SizeBytes() > 1<<16 {
		t.Fatalf("key maps after each job %p %p %p: want none, then one kept", maps[0], maps[1], maps[2])
	}
}

// TestCompactJobMetrics checks the compaction counters and the job counts.
func TestCompactJobMetrics(t *testing.T) {
	fx := newCompactFixture()
	genSegments(t, fx, 4, 2, 30, false)
	job := fx.job(coordapi.CompactJob{})
	jobs := newFakeJobs(job)
	reader := sdkmetric.NewManualReader()
	meter := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)).Meter("test")
	con, err := NewConsolidator(jobs, memReader{fx.store}, fx.store, ConsolidatorOptions{Prefix: consPrefix, Meter: meter})
	if err != nil {
		t.Fatal(err)
	}
	if ran, err := con.RunOnce(t.Context()); !ran || err != nil {
		t.Fatal(ran, err)
	}
	res := jobs.completed[0].Compacted
	m := readMetrics(t, reader)
	for k, v := range map[string]int64{
		"floe.tiered.jobs outcome=completed":            1,
		"floe.tiered.compaction.jobs outcome=completed": 1,
		"floe.tiered.job.duration outcome=completed":    1,
		"floe.tiered.compaction.bytes_in":               res.BytesIn,
		"floe.tiered.compaction.bytes_out":              res.BytesOut,
		"floe.tiered.compaction.records_in":             res.RecordsIn,
		"floe.tiered.compaction.records_out":            res.RecordsOut,
		"floe.tiered.job.bytes":                         0,
	} {
		if m[k] != v {
			t.Errorf("metric %s = %d, want %d (all: %v)", k, m[k], v, m)
		}
	}
	if res.RecordsOut >= res.RecordsIn || res.BytesOut >= res.BytesIn {
		t.Errorf("result %+v: want fewer records and bytes out", res)
	}
}

func TestCompactJobFailures(t *testing.T) {
	type env struct {
		fx    *compactFixture
		job   *coordapi.TierJob
		wal   *fakeWAL
		store *fakeStore
		jobs  *fakeJobs
		opts  *ConsolidatorOptions
	}
	// corruptSeg rewrites segment i's object with fn applied to a copy of
	// its data part.
	corruptSeg := func(e env, i int, fn func(data []byte) []byte) {
		seg := e.job.Compact.Segments[i]
		obj, err := e.fx.store.GetRange(context.Background(), seg.ObjectKey, 0, -1)
		if err != nil {
			panic(err)
		}
		data := fn(bytes.Clone(obj[:seg.ByteLength]))
		obj = append(data, obj[seg.ByteLength:]...)
		if err := e.fx.store.Put(context.Background(), seg.ObjectKey, obj); err != nil {
			panic(err)
		}
		e.job.Compact.Segments[i].ByteLength = int32(len(data))
		e.job.Compact.Segments[i].ObjectSize = int64(len(obj))
	}
	cases := []struct {
		name          string
		setup         func(t *testing.T, e env)
		wantErr       error
		wantMsg       string
		wantAbandoned bool
		wantLeft      int // outputs left in the store; -1: every one put, several
		wantDeletes   bool
		wantOutcome   string
	}{
		{
			name: "refused as stale deletes every output",
			setup: func(t *testing.T, e env) {
				e.jobs.completeErr = fmt.Errorf("rpc: %w", coordapi.Errorf(kerr.StaleBrokerEpoch, "job superseded"))
			},
			wantErr: kerr.StaleBrokerEpoch, wantDeletes: true, wantOutcome: "refused",
		},
		{
			name: "another completion error leaves the outputs to the GC",
			setup: func(t *testing.T, e env) {
				e.jobs.completeErr = fmt.Errorf("rpc complete_tier_job: %w: %w", kerr.KafkaStorageError, context.DeadlineExceeded)
			},
			wantErr: kerr.KafkaStorageError, wantAbandoned: true, wantLeft: -1, wantOutcome: "failed",
		},
		{
			name:    "read failure in the key map",
			setup:   func(t *testing.T, e env) { e.wal.failKey = e.job.Compact.Segments[2].ObjectKey },
			wantErr: errInjected, wantAbandoned: true, wantOutcome: "failed",
		},
		{
			// Nothing is dirty: the failure comes as the last input is
			// rewritten, after two outputs were put.
			name: "read failure after outputs were put deletes them",
			setup: func(t *testing.T, e env) {
				e.job.Compact.DirtyOffset = e.job.LastOffset + 1
				e.wal.failKey = e.job.Compact.Segments[2].ObjectKey
			},
			wantErr: errInjected, wantAbandoned: true, wantDeletes: true, wantOutcome: "failed",
		},
		{
			name:    "put failure deletes the outputs put",
			setup:   func(t *testing.T, e env) { e.store.failPutAt = 2 },
			wantErr: errInjected, wantAbandoned: true, wantDeletes: true, wantOutcome: "failed",
		},
		{
			name: "crc mismatch",
			setup: func(t *testing.T, e env) {
				corruptSeg(e, 1, func(b []byte) []byte { b[len(b)-1] ^= 0xff; return b })
			},
			wantErr: ErrCorrupt, wantAbandoned: true, wantOutcome: "failed",
		},
		{
			name: "batches end before the segment's last offset",
			setup: func(t *testing.T, e env) {
				corruptSeg(e, 0, func(b []byte) []byte {
					h, _ := record.ParseHeader(b)
					return b[:h.Size()] // the first batch alone
				})
			},
			wantErr: ErrCorrupt, wantAbandoned: true, wantOutcome: "failed",
		},
		{
			name: "a batch cut short",
			setup: func(t *testing.T, e env) {
				corruptSeg(e, 0, func(b []byte) []byte { return b[:len(b)-5] })
			},
			wantErr: ErrCorrupt, wantAbandoned: true, wantOutcome: "failed",
		},
		{
			name: "offsets out of order",
			setup: func(t *testing.T, e env) {
				corruptSeg(e, 0, func(b []byte) []byte {
					h, _ := record.ParseHeader(b)
					record.SetBaseOffset(b[h.Size():], h.BaseOffset) // the second batch at the first's offset
					return b
				})
			},
			wantErr: ErrCorrupt, wantAbandoned: true, wantOutcome: "failed",
		},
		{
			name: "offsets past the segment",
			setup: func(t *testing.T, e env) {
				e.job.Compact.Segments[0].LastOffset--
				e.job.Compact.Segments[1].BaseOffset--
			},
			wantErr: ErrCorrupt, wantAbandoned: true, wantOutcome: "failed",
		},
		{
			name:    "no segments",
			setup:   func(t *testing.T, e env) { e.job.Compact.Segments = nil },
			wantErr: ErrBadJob, wantAbandoned: true, wantOutcome: "failed",
		},
		{
			name:    "no CompactJob",
			setup:   func(t *testing.T, e env) { e.job.Compact = nil },
			wantErr: ErrBadJob, wantAbandoned: true, wantOutcome: "failed",
		},
		{
			name:    "a WAL batch",
			setup:   func(t *testing.T, e env) { e.job.Compact.Segments[1].Segment = false },
			wantErr: ErrBadJob, wantAbandoned: true, wantOutcome: "failed",
		},
		{
			name:    "a gap",
			setup:   func(t *testing.T, e env) { e.job.Compact.Segments = slices.Delete(e.job.Compact.Segments, 1, 2) },
			wantErr: ErrBadJob, wantAbandoned: true, wantOutcome: "failed",
		},
		{
			name:    "not covering the job",
			setup:   func(t *testing.T, e env) { e.job.LastOffset++ },
			wantErr: ErrBadJob, wantAbandoned: true, wantOutcome: "failed",
		},
		{
			name:    "an empty segment",
			setup:   func(t *testing.T, e env) { e.job.Compact.Segments[0].ByteLength = 0 },
			wantErr: ErrBadJob, wantAbandoned: true, wantOutcome: "failed",
		},
		{
			name:    "producer offsets unsorted",
			setup:   func(t *testing.T, e env) { e.job.Compact.ProducerLastOffsets = []int64{5, 2} },
			wantErr: ErrBadJob, wantAbandoned: true, wantOutcome: "failed",
		},
		{
			name:    "unknown kind",
			setup:   func(t *testing.T, e env) { e.job.Kind = 7 },
			wantErr: ErrBadJob, wantAbandoned: true, wantOutcome: "failed",
		},
		{
			name:    "key index asked, none configured",
			setup:   func(t *testing.T, e env) { e.job.Compact.KeyIndex = true },
			wantErr: errNoKeyIndex, wantAbandoned: true, wantOutcome: "failed",
		},
		{
			name: "key index failure",
			setup: func(t *testing.T, e env) {
				e.job.Compact.KeyIndex = true
				e.opts.KeyIndex = &fakeIndex{err: coordapi.Errorf(kerr.KafkaStorageError, "index not ready")}
			},
			wantErr: kerr.KafkaStorageError, wantAbandoned: true, wantOutcome: "failed",
		},
		{
			name: "key index answers too few",
			setup: func(t *testing.T, e env) {
				e.job.Compact.KeyIndex = true
				e.opts.KeyIndex = &fakeIndex{short: true}
			},
			wantMsg: "offsets for", wantAbandoned: true, wantOutcome: "failed",
		},
		{
			name: "dedupe buffer smaller than a batch",
			setup: func(t *testing.T, e env) {
				e.opts.DedupeBufferBytes = 3 * OffsetMapEntrySize // two keys
				for _, b := range e.fx.batches(t, e.job.Compact.Segments[1]) {
					if h, _ := record.ParseHeader(b); h.NumRecords > 2 {
						e.job.Compact.DirtyOffset = h.BaseOffset
						return
					}
				}
				t.Fatal("no batch of three records")
			},
			wantMsg: "holds fewer keys", wantAbandoned: true, wantOutcome: "failed",
		},
		{
			name:    "no lease left",
			setup:   func(t *testing.T, e env) { e.job.LeaseMs = 0 },
			wantMsg: "leaves no time", wantAbandoned: true, wantOutcome: "failed",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fx := newCompactFixture()
			genSegments(t, fx, 5, 3, 40, false)
			job := fx.job(coordapi.CompactJob{SegmentBytes: 1}) // one output per batch
			e := env{fx: fx, job: &job, wal: &fakeWAL{inner: memReader{fx.store}}, store: &fakeStore{inner: fx.store},
				jobs: newFakeJobs(), opts: &ConsolidatorOptions{Prefix: consPrefix}}
			tc.setup(t, e)
			e.jobs.queue = []coordapi.TierJob{job}
			reader := sdkmetric.NewManualReader()
			e.opts.Meter = sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)).Meter("test")
			con, err := NewConsolidator(e.jobs, e.wal, e.store, *e.opts)
			if err != nil {
				t.Fatal(err)
			}
			ran, err := con.RunOnce(t.Context())
			if !ran || err == nil {
				t.Fatalf("RunOnce = %v, %v; want a failed job", ran, err)
			}
			if tc.wantErr != nil && !errors.Is(err, tc.wantErr) || !strings.Contains(err.Error(), tc.wantMsg) {
				t.Fatalf("RunOnce error %v, want %v %q", err, tc.wantErr, tc.wantMsg)
			}
			if _, ok := e.jobs.abandoned[job.ID]; ok != tc.wantAbandoned {
				t.Errorf("abandoned %v, want %v", e.jobs.abandoned, tc.wantAbandoned)
			}
			if len(e.jobs.completed) != 0 {
				t.Errorf("completed %v", e.jobs.completed)
			}
			// The store holds the three inputs and the outputs left.
			n := len(segments(t, fx.store)) - 3
			if tc.wantLeft < 0 && (n < 2 || n != int(e.store.puts.Load())) || tc.wantLeft >= 0 && n != tc.wantLeft {
				t.Errorf("%d outputs left (%d put), want %d", n, e.store.puts.Load(), tc.wantLeft)
			}
			if got := e.store.deletes.Load() > 0; got != tc.wantDeletes {
				t.Errorf("deleted: %v, want %v", got, tc.wantDeletes)
			}
			if m := readMetrics(t, reader); m["floe.tiered.jobs outcome="+tc.wantOutcome] != 1 || m["floe.tiered.compaction.bytes_in"] != 0 {
				t.Errorf("metrics %v, want one %s job and no bytes", m, tc.wantOutcome)
			}
		})
	}
}

// TestCompactJobOneAtATime runs two compaction jobs at once on one
// Consolidator: the second waits for the first to finish, and when its
// lease ends first it is abandoned without having read anything.
func TestCompactJobOneAtATime(t *testing.T) {
	fx := newCompactFixture()
	genSegments(t, fx, 6, 1, 20, false)
	first := fx.job(coordapi.CompactJob{})
	second := fx.job(coordapi.CompactJob{})
	second.LeaseMs = 40 // its budget ends 30ms after its claim
	jobs := newFakeJobs(first, second)
	wal := &fakeWAL{inner: memReader{fx.store}, entered: make(chan struct{}, 64), gate: make(chan struct{})}
	con, err := NewConsolidator(jobs, wal, fx.store, ConsolidatorOptions{Prefix: consPrefix})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := con.RunOnce(t.Context())
		done <- err
	}()
	<-wal.entered // the first job holds the slot, reading
	if ran, err := con.RunOnce(t.Context()); !ran || !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "wait for the running compaction job") {
		t.Fatalf("second RunOnce = %v, %v; want its lease to end waiting", ran, err)
	}
	if _, ok := jobs.abandoned[second.ID]; !ok {
		t.Errorf("abandoned %v, want the second job", jobs.abandoned)
	}
	if n := len(wal.entered); n != 0 {
		t.Errorf("%d reads started while the first job was blocked, want none from the second", n)
	}
	close(wal.gate)
	if err := <-done; err != nil {
		t.Fatalf("first job: %v", err)
	}
	if len(jobs.completed) != 1 || jobs.completed[0].JobID != first.ID {
		t.Fatalf("completed %v, want the first job", jobs.completed)
	}
}

// TestCompactJobTransactions: an aborted transaction's records are removed
// and never a key's latest, so the committed value before them survives;
// the transaction markers stay, commit and abort.
func TestCompactJobTransactions(t *testing.T) {
	const pid = 7
	build := func(base int64, attrs int16, recs ...record.Record) []byte {
		return producerBatch(t, base, pid, attrs, recs...)
	}
	kv := func(k, v string) record.Record { return record.Record{Key: []byte(k), Value: []byte(v)} }
	marker := func(base int64, commit bool) []byte { return markerBatch(t, base, pid, commit) }
	txn := int16(record.AttrTransactional)
	for _, indexed := range []bool{false, true} {
		fx := newCompactFixture()
		fx.addSegment(t, [][]byte{
			build(0, txn, kv("k", "committed"), kv("j", "j1")),
			marker(2, true),
			build(3, txn, kv("k", "aborted"), kv("j", "j-aborted")),
			marker(5, false),
			build(6, 0, kv("x", "x1")),
		})
		cj := coordapi.CompactJob{DirtyOffset: 0, NowMs: 2000, Aborted: []coordapi.AbortedTxn{{ProducerID: pid, FirstOffset: 3, LastOffset: 5}},
			ProducerLastOffsets: []int64{6}}
		opts := ConsolidatorOptions{}
		if indexed {
			// The key index never holds an aborted key (coordinator).
			cj.KeyIndex = true
			opts.KeyIndex = &fakeIndex{latest: map[string]int64{"k": 0, "j": 1, "x": 6}}
		}
		fx.compact(t, cj, opts)
		got := strings.Join(survivors(t, fx), "; ")
		want := "0 k=committed; 1 j=j1; 2 \x00\x00\x00\x01=\x00\x00\x00\x00\x00\x00; 5 \x00\x00\x00\x00=\x00\x00\x00\x00\x00\x00; 6 x=x1"
		if got != want {
			t.Errorf("indexed %v: survivors %q, want %q", indexed, got, want)
		}
	}
}

// TestCompactJobCommitMarkers: a commit marker stays while a batch of its
// transaction is left; in the first pass after the last one went it gets a
// delete horizon (delete.retention.ms on), and a pass at or past the horizon
// removes it, or keeps it as a bare header when it is its producer's last
// batch. An abort marker stays, and so does a marker past what the pass
// indexed.
func TestCompactJobCommitMarkers(t *testing.T) {
	const pid, other = 7, 8
	build := func(base int64, pid int64, attrs int16, recs ...record.Record) []byte {
		return producerBatch(t, base, pid, attrs, recs...)
	}
	kv := func(k, v string) record.Record { return record.Record{Key: []byte(k), Value: []byte(v)} }
	marker := func(base int64, pid int64, commit bool) []byte { return markerBatch(t, base, pid, commit) }
	txn := int16(record.AttrTransactional)
	// markers lists the partition's control batches: offset, c(ommit) or
	// a(bort), +h when it carries a delete horizon, "bare" when empty.
	markers := func(fx *compactFixture) string {
		var out []string
		for _, seg := range fx.segs {
			for _, b := range fx.batches(t, seg) {
				h, _ := record.ParseHeader(b)
				if !h.Control() {
					continue
				}
				s := fmt.Sprintf("%d", h.BaseOffset)
				err := record.Records(b, func(r *record.Record) error {
					s += map[byte]string{0: "a", 1: "c"}[r.Key[3]]
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
				if h.NumRecords == 0 {
					s += "bare"
				}
				if h.Attributes&record.AttrDeleteHorizon != 0 {
					s += fmt.Sprintf("+h%d", h.BaseTimestamp)
				}
				out = append(out, s)
			}
		}
		return strings.Join(out, " ")
	}
	for _, tc := range []struct {
		name     string
		indexed  bool
		lastOffs []int64 // the producers' last offsets
		passes   []string
	}{
		{"key map", false, []int64{9}, []string{"2c 5a 10c", "2c+h3500 5a 10c", "2c+h3500 5a 10c", "5a 10c"}},
		{"key index", true, []int64{9}, []string{"2c 5a 10c", "2c+h3500 5a 10c", "2c+h3500 5a 10c", "5a 10c"}},
		{"producer's last batch", false, []int64{2, 9}, []string{"2c 5a 10c", "2c+h3500 5a 10c", "2c+h3500 5a 10c", "2bare 5a 10c"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fx := newCompactFixture()
			fx.addSegment(t, [][]byte{
				build(0, pid, txn, kv("k", "t1"), kv("j", "t1")),
				marker(2, pid, true),
				build(3, other, txn, kv("a", "aborted"), kv("b", "aborted")),
				marker(5, other, false),
				build(6, 0, 0, kv("k", "v"), kv("j", "v"), kv("x", "v")),
				build(9, other, txn, kv("y", "t2")), // its transaction's marker is at 10, past the segment
			})
			fx.addSegment(t, [][]byte{marker(10, other, true), build(11, 0, 0, kv("z", "v"))})
			aborted := []coordapi.AbortedTxn{{ProducerID: other, FirstOffset: 3, LastOffset: 5}}
			for i, nowMs := range []int64{2000, 2500, 3000, 3500} {
				cj := coordapi.CompactJob{DirtyOffset: 0, NowMs: nowMs, DeleteRetentionMs: 1000, Aborted: aborted, ProducerLastOffsets: tc.lastOffs}
				var opts ConsolidatorOptions
				if tc.indexed {
					cj.KeyIndex = true
					opts.KeyIndex = fx.index(t)
				}
				req := fx.compact(t, cj, opts)
				// The marker at 10 closes the transaction whose batch at 9
				// is kept (y's latest): it stays.
				if got := markers(fx); got != tc.passes[i] {
					t.Errorf("pass %d at %d ms: markers %q, want %q", i+1, nowMs, got, tc.passes[i])
				}
				if i == 1 && req.Compacted.TombstoneHorizonMs != 3500 {
					t.Errorf("pass 2: horizon %d, want 3500 (the marker's)", req.Compacted.TombstoneHorizonMs)
				}
			}
		})
	}
}

// producerBatch builds a batch of producer pid at base (sequence base,
// timestamps 1000) with attrs.
func producerBatch(t *testing.T, base, pid int64, attrs int16, recs ...record.Record) []byte {
	t.Helper()
	b, err := record.Build(record.BuildOptions{BaseOffset: base, Attributes: attrs, BaseTimestamp: 1000,
		ProducerID: pid, ProducerEpoch: 0, BaseSequence: int32(base)}, recs)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// markerBatch builds producer pid's commit or abort marker at base.
func markerBatch(t *testing.T, base, pid int64, commit bool) []byte {
	t.Helper()
	typ := byte(0)
	if commit {
		typ = 1
	}
	b, err := record.Build(record.BuildOptions{BaseOffset: base, Attributes: record.AttrTransactional | record.AttrControl,
		BaseTimestamp: 1000, ProducerID: pid, BaseSequence: -1}, []record.Record{{Key: []byte{0, 0, 0, typ}, Value: []byte{0, 0, 0, 0, 0, 0}}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}
