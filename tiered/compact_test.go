package tiered

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"

	"github.com/floe-io/floe/record"
)

// TestCompactDataDriven runs the scripts under testdata/compact: a segment's
// batches in, the batches compaction keeps out. One command:
//
//	compact [horizon=MS] [map-bytes=N] [latest=K:O,...] [producers=PID:O,...]
//	    [retain-empty] [aborted=PID] [stamp=MS [through=O]] [now=MS]
//
// Its input is the segment's batches, one a line:
//
//	base=N [pid=P [epoch=E] [seq=S]] [codec=C] [xerial] [lad=N] [txn] [control]
//	    [logappend=MS] [dh=MS] [empty] | record record...
//
// A record is [DELTA:]KEY=VALUE@TS, DELTA its offset delta (default: the one
// after the previous record's), KEY <nokey> for a null key and VALUE
// <tombstone> for a null value; a control batch's records are commit@TS or
// abort@TS. lad is the batch's last offset delta (default: the last record's);
// a batch's base timestamp is its first record's, or its delete horizon dh
// (AttrDeleteHorizon set, as a pass that kept a tombstone wrote it). An empty
// batch is the bare header a compaction that removed all its records left.
//
// The offset map is built as Kafka's cleaner builds it (each keyed record of
// each non-control batch put in order, until the map of map-bytes, default
// 1 MiB, is full), or holds the latest= offsets. Records are kept by
// OffsetMap.Keep(horizon): tombstones older than horizon (default: none) go.
// A batch left empty is kept as a bare header with retain-empty, or when it
// holds the last offset of a producer of producers= (its last sequence). The
// transactional batches of producer aborted= are an aborted transaction's:
// left out of the map, and their records removed. With now=, tombstones in
// batches whose delete horizon is at or below it go (HorizonPassed). With
// stamp=, a batch without a horizon that keeps a tombstone at an offset up to
// through (default: any) gets stamp as its horizon.
//
// The output is the map's size and latest offset, each batch kept (header
// fields, "same" when returned unchanged, then its records with offsets) or
// dropped, and the stats.
func TestCompactDataDriven(t *testing.T) {
	datadriven.Walk(t, "testdata/compact", func(t *testing.T, path string) {
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			if d.Cmd != "compact" {
				d.Fatalf(t, "unknown command %s", d.Cmd)
			}
			var batches [][]byte
			for _, line := range strings.Split(strings.TrimSpace(d.Input), "\n") {
				b, err := parseBatch(line)
				if err != nil {
					d.Fatalf(t, "%s: %v", line, err)
				}
				batches = append(batches, b)
			}
			return runCompact(t, d, batches)
		})
	})
}

func runCompact(t *testing.T, d *datadriven.TestData, batches [][]byte) string {
	horizon := int64(math.MinInt64)
	mapBytes := 1 << 20
	d.MaybeScanArgs(t, "horizon", &horizon)
	d.MaybeScanArgs(t, "map-bytes", &mapBytes)
	m, err := NewOffsetMap(mapBytes, 0)
	if err != nil {
		d.Fatalf(t, "%v", err)
	}
	if d.HasArg("latest") {
		for k, off := range scanPairs(t, d, "latest") {
			m.Put([]byte(k), off)
		}
	} else {
		aborted := int64(-1)
		d.MaybeScanArgs(t, "aborted", &aborted)
		buildOffsetMap(t, m, batches, aborted)
	}
	lastOf := map[int64]int64{} // producer id: its last data offset
	if d.HasArg("producers") {
		for pid, off := range scanPairs(t, d, "producers") {
			n, err := strconv.ParseInt(pid, 10, 64)
			if err != nil {
				d.Fatalf(t, "bad producer %s", pid)
			}
			lastOf[n] = off
		}
	}
	retainAll := d.HasArg("retain-empty")
	retain := func(h record.Header) bool {
		last, ok := lastOf[h.ProducerID]
		return retainAll || h.ProducerID >= 0 && ok && h.BaseOffset+int64(h.LastOffsetDelta) == last
	}
	keep := m.Keep(horizon)
	if d.HasArg("now") {
		var now int64
		d.ScanArgs(t, "now", &now)
		latest := keep
		keep = func(r RecordInfo) bool { return !HorizonPassed(r, now) && latest(r) }
	}
	policy := CompactPolicy{StampThrough: math.MaxInt64}
	d.MaybeScanArgs(t, "stamp", &policy.StampHorizon)
	d.MaybeScanArgs(t, "through", &policy.StampThrough)
	if d.HasArg("aborted") {
		var pid int64
		d.ScanArgs(t, "aborted", &pid)
		latest := keep
		keep = func(r RecordInfo) bool {
			return !(r.Batch.Transactional() && r.Batch.ProducerID == pid) && latest(r)
		}
	}
	policy.Keep, policy.RetainEmpty = keep, retain

	var (
		sb   strings.Builder
		data []byte
		want []byte
		sum  CompactStats
	)
	fmt.Fprintf(&sb, "map: keys=%d latest=%d\n", m.Len(), m.LatestOffset())
	for _, in := range batches {
		h, _ := record.ParseHeader(in)
		out, st, err := CompactBatch(in, policy)
		lazy := policy
		lazy.Lazy = true
		if lout, lst, lerr := CompactBatch(in, lazy); !bytes.Equal(lout, out) || lst != st || (lerr == nil) != (err == nil) {
			t.Errorf("base=%d: lazily %d bytes, %+v, %v; eagerly %d bytes, %+v, %v", h.BaseOffset, len(lout), lst, lerr, len(out), st, err)
		}
		if err != nil {
			fmt.Fprintf(&sb, "base=%d error: %v\n", h.BaseOffset, err)
			continue
		}
		data = append(data, in...)
		want = append(want, out...)
		sum.add(st)
		if out == nil {
			fmt.Fprintf(&sb, "dropped base=%d lad=%d\n", h.BaseOffset, h.LastOffsetDelta)
			continue
		}
		same := len(out) == len(in) && &out[0] == &in[0]
		sb.WriteString(renderBatch(t, out, same))
	}
	fmt.Fprintf(&sb, "stats: batches %d -> %d (%d empty, %d rewritten), records %d -> %d",
		sum.BatchesIn, sum.BatchesOut, sum.EmptyBatches, sum.RewrittenBatches, sum.RecordsIn, sum.RecordsKept)
	if sum.StampedBatches > 0 {
		fmt.Fprintf(&sb, ", %d stamped", sum.StampedBatches)
	}

	// The driver over the concatenated batches gives the same batches and stats.
	got, st, err := CompactBatches(data, policy)
	if err != nil {
		t.Fatalf("CompactBatches: %v", err)
	}
	if !bytes.Equal(got, want) || st != sum {
		t.Fatalf("CompactBatches differs from CompactBatch batch by batch:\n%+v\n%+v", st, sum)
	}
	if st.BytesIn != int64(len(data)) || st.BytesOut != int64(len(got)) {
		t.Fatalf("stats count %d -> %d bytes, want %d -> %d", st.BytesIn, st.BytesOut, len(data), len(got))
	}
	return sb.String()
}

// buildOffsetMap puts the keyed records of batches into m, in order, until m
// is full, as Kafka's Cleaner.buildOffsetMapForSegment does: it skips control
// batches and aborted transactions' (here: every transactional batch of
// producer aborted), and the pass covers each batch it read whole.
func buildOffsetMap(t *testing.T, m *OffsetMap, batches [][]byte, aborted int64) {
	for _, b := range batches {
		h, _ := record.ParseHeader(b)
		if h.Control() || h.Transactional() && h.ProducerID == aborted {
			m.AdvanceLatestOffset(h.BaseOffset + int64(h.LastOffsetDelta))
			continue
		}
		full := errors.New("full")
		err := record.Records(b, func(r *record.Record) error {
			if r.Key != nil && !m.Put(r.Key, h.BaseOffset+int64(r.OffsetDelta)) {
				return full
			}
			return nil
		})
		if err == full {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		m.AdvanceLatestOffset(h.BaseOffset + int64(h.LastOffsetDelta))
	}
}

// scanPairs parses arg's K:V,K:V value.
func scanPairs(t *testing.T, d *datadriven.TestData, arg string) map[string]int64 {
	var s string
	d.ScanArgs(t, arg, &s)
	out := map[string]int64{}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(kv, ":")
		n, err := strconv.ParseInt(v, 10, 64)
		if !ok || err != nil {
			d.Fatalf(t, "bad %s pair %q", arg, kv)
		}
		out[k] = n
	}
	return out
}

// parseBatch builds the batch a test line describes (see TestCompactDataDriven).
func parseBatch(line string) ([]byte, error) {
	head, recs, ok := strings.Cut(line, "|")
	if !ok {
		return nil, errors.New("no | before the records")
	}
	opts := record.BuildOptions{PartitionLeaderEpoch: 3, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}
	var (
		lad       = int32(-1)
		logAppend = int64(-1)
		horizon   = int64(-1)
		control   bool
		empty     bool
	)
	for _, f := range strings.Fields(head) {
		k, v, _ := strings.Cut(f, "=")
		n, err := strconv.ParseInt(v, 10, 64)
		if v != "" && k != "codec" && err != nil {
			return nil, fmt.Errorf("bad %s", f)
		}
		switch k {
		case "base":
			opts.BaseOffset = n
		case "pid":
			opts.ProducerID, opts.ProducerEpoch, opts.BaseSequence = n, 0, 0
		case "epoch":
			opts.ProducerEpoch = int16(n)
		case "seq":
			opts.BaseSequence = int32(n)
		case "codec":
			c, err := parseCodec(v)
			if err != nil {
				return nil, err
			}
			opts.Codec = c
		case "xerial":
			opts.SnappyXerial = true
		case "lad":
			lad = int32(n)
		case "txn":
			opts.Attributes |= record.AttrTransactional
		case "control":
			opts.Attributes |= record.AttrControl
			control = true
		case "logappend":
			logAppend = n
		case "dh":
			horizon = n
			opts.Attributes |= record.AttrDeleteHorizon
		case "empty":
			empty = true
		default:
			return nil, fmt.Errorf("unknown batch field %s", f)
		}
	}
	var rs []record.Record
	var stamps []int64
	next := int32(0)
	for _, tok := range strings.Fields(recs) {
		r, ts, err := parseRecord(tok, next, control)
		if err != nil {
			return nil, fmt.Errorf("record %q: %w", tok, err)
		}
		if r.OffsetDelta != next || lad >= 0 {
			opts.KeepOffsetDeltas = true
		}
		next = r.OffsetDelta + 1
		rs = append(rs, r)
		stamps = append(stamps, ts)
	}
	if len(rs) == 0 {
		return nil, errors.New("no records")
	}
	opts.BaseTimestamp = stamps[0]
	if horizon >= 0 {
		opts.BaseTimestamp = horizon
	}
	for i := range rs {
		rs[i].TimestampDelta = stamps[i] - opts.BaseTimestamp
	}
	opts.LastOffsetDelta = lad
	b, err := record.Build(opts, rs)
	if err != nil {
		return nil, err
	}
	if logAppend >= 0 {
		record.SetLogAppendTime(b, logAppend)
	}
	if empty {
		h, err := record.ParseHeader(b)
		if err != nil {
			return nil, err
		}
		b = emptyBatch(h)
	}
	return b, nil
}

func parseCodec(s string) (record.Codec, error) {
	for c := record.CodecNone; c <= record.CodecZstd; c++ {
		if c.String() == s {
			return c, nil
		}
	}
	return 0, fmt.Errorf("unknown codec %s", s)
}

// parseRecord parses [DELTA:]KEY=VALUE@TS, or [DELTA:]commit@TS or abort@TS in
// a control batch; next is the default delta.
func parseRecord(tok string, next int32, control bool) (record.Record, int64, error) {
	r := record.Record{OffsetDelta: next}
	if d, rest, ok := strings.Cut(tok, ":"); ok {
		n, err := strconv.ParseInt(d, 10, 32)
		if err != nil {
			return r, 0, err
		}
		r.OffsetDelta, tok = int32(n), rest
	}
	kv, tss, ok := strings.Cut(tok, "@")
	ts, err := strconv.ParseInt(tss, 10, 64)
	if !ok || err != nil {
		return r, 0, errors.New("no @timestamp")
	}
	if control {
		typ := map[string]uint16{"abort": 0, "commit": 1}
		t, ok := typ[kv]
		if !ok {
			return r, 0, errors.New("a control record is commit or abort")
		}
		r.Key = binary.BigEndian.AppendUint16([]byte{0, 0}, t)
		r.Value = []byte{0, 0, 0, 0, 0, 0} // version 0, coordinator epoch 0
		return r, ts, nil
	}
	k, v, ok := strings.Cut(kv, "=")
	if !ok {
		return r, 0, errors.New("no key=value")
	}
	if k != "<nokey>" {
		r.Key = []byte(k)
	}
	if v != "<tombstone>" {
		r.Value = []byte(v)
	}
	return r, ts, nil
}

// renderBatch checks b, a batch compaction returned, and renders its header
// and records in the notation parseBatch reads.
func renderBatch(t *testing.T, b []byte, same bool) string {
	t.Helper()
	h, err := record.ParseHeader(b)
	if err != nil {
		t.Fatalf("result does not parse: %v", err)
	}
	if err := checkStored(b, h); err != nil {
		t.Fatalf("result does not check: %v", err)
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "base=%d lad=%d records=%d codec=%s", h.BaseOffset, h.LastOffsetDelta, h.NumRecords, h.Codec())
	if h.ProducerID >= 0 {
		fmt.Fprintf(&sb, " pid=%d/%d/%d", h.ProducerID, h.ProducerEpoch, h.BaseSequence)
	}
	fmt.Fprintf(&sb, " ts=%d..%d", h.BaseTimestamp, h.MaxTimestamp)
	for _, f := range []struct {
		on   bool
		name string
	}{
		{h.Codec() == record.CodecSnappy && bytes.HasPrefix(b[record.HeaderSize:], xerialMagic), "xerial"},
		{h.Transactional(), "txn"}, {h.Control(), "control"}, {h.LogAppendTime(), "logappend"},
		{h.Attributes&record.AttrDeleteHorizon != 0, "horizon"},
		{h.PartitionLeaderEpoch != 3, fmt.Sprintf("leader-epoch=%d", h.PartitionLeaderEpoch)},
		{same, "same"},
	} {
		if f.on {
			sb.WriteString(" " + f.name)
		}
	}
	sb.WriteString("\n")
	err = record.Records(b, func(r *record.Record) error {
		ts := h.BaseTimestamp + r.TimestampDelta
		if h.LogAppendTime() {
			ts = h.MaxTimestamp
		}
		fmt.Fprintf(&sb, "  %d ", h.BaseOffset+int64(r.OffsetDelta))
		switch {
		case h.Control() && len(r.Key) == 4:
			sb.WriteString(map[uint16]string{0: "abort", 1: "commit"}[binary.BigEndian.Uint16(r.Key[2:])])
		case r.Key == nil:
			sb.WriteString("<nokey>=")
		default:
			sb.WriteString(string(r.Key) + "=")
		}
		if !h.Control() {
			if r.Value == nil {
				sb.WriteString("<tombstone>")
			} else {
				sb.Write(r.Value)
			}
		}
		fmt.Fprintf(&sb, "@%d\n", ts)
		return nil
	})
	if err != nil {
		t.Fatalf("result's records: %v", err)
	}
	return sb.String()
}

// TestCompactBatchKeepsRecordBytes checks that a rewritten batch's records are
// its kept records exactly: null and empty keys and values apart, headers
// (null header values too), and each record's attributes, offset and
// timestamp; and that the batch's unknown attribute bits and leader epoch stay.
func TestCompactBatchKeepsRecordBytes(t *testing.T) {
	recs := []record.Record{
		{Key: []byte("gone"), Value: []byte("x")},
		{Key: []byte{}, Value: []byte{}, TimestampDelta: 5, Headers: []record.RecordHeader{{Key: "h", Value: nil}, {Key: "", Value: []byte{}}}},
		{Key: []byte("gone"), Value: []byte("y"), TimestampDelta: 1},
		{Key: nil, Value: []byte("keyless"), TimestampDelta: -3},
		{Key: []byte("k"), Value: nil, TimestampDelta: 9, Headers: []record.RecordHeader{{Key: "trace", Value: []byte("abc")}}},
		{Key: []byte("gone"), Value: []byte("z"), TimestampDelta: 2},
	}
	for c := record.CodecNone; c <= record.CodecZstd; c++ {
		t.Run(c.String(), func(t *testing.T) {
			b, err := record.Build(record.BuildOptions{Codec: c, BaseOffset: 100, PartitionLeaderEpoch: 9, Attributes: 0x80,
				BaseTimestamp: 5000, ProducerID: 3, ProducerEpoch: 4, BaseSequence: 50}, recs)
			if err != nil {
				t.Fatal(err)
			}
			var seen []int64
			out, st, err := CompactBatch(b, CompactPolicy{Keep: func(r RecordInfo) bool {
				seen = append(seen, r.Offset)
				if r.Batch.BaseOffset != 100 || r.Timestamp != 5000+recs[r.Offset-100].TimestampDelta {
					t.Errorf("record %d: batch at %d, timestamp %d", r.Offset, r.Batch.BaseOffset, r.Timestamp)
				}
				return string(r.Key) != "gone"
			}})
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(seen) != "[100 101 102 104 105]" { // not the keyless 103
				t.Errorf("keep asked about %v", seen)
			}
			if st.RecordsIn != 6 || st.RecordsKept != 3 || st.RewrittenBatches != 1 || st.BytesIn != int64(len(b)) || st.BytesOut != int64(len(out)) {
				t.Errorf("stats %+v", st)
			}
			h, err := record.ParseHeader(out)
			if err != nil {
				t.Fatal(err)
			}
			if h.Attributes != 0x80|int16(c) || h.PartitionLeaderEpoch != 9 || h.BaseTimestamp != 5000 || h.MaxTimestamp != 5009 || h.LastOffsetDelta != 5 {
				t.Errorf("header %+v", h)
			}
			var got []record.Record
			err = record.Records(out, func(r *record.Record) error {
				cp := *r
				cp.Key, cp.Value = cloneNil(r.Key), cloneNil(r.Value)
				cp.Headers = nil
				for _, rh := range r.Headers {
					cp.Headers = append(cp.Headers, record.RecordHeader{Key: rh.Key, Value: cloneNil(rh.Value)})
				}
				got = append(got, cp)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			want := []record.Record{recs[1], recs[3], recs[4]}
			want[0].OffsetDelta, want[1].OffsetDelta, want[2].OffsetDelta = 1, 3, 4
			if g, w := fmt.Sprintf("%#v", got), fmt.Sprintf("%#v", want); g != w {
				t.Errorf("records\n got %s\nwant %s", g, w)
			}
		})
	}
}

// TestCompactBatchEveryMask compacts a batch under every choice of kept
// records, in every codec: the kept records come out, rebuilt, whichever
// record is dropped first (a lazy pass decodes again when kept records came
// before it), and a batch keeping all of them comes back as itself.
func TestCompactBatchEveryMask(t *testing.T) {
	const n = 5
	recs := make([]record.Record, n)
	for i := range recs {
		recs[i] = record.Record{Key: fmt.Appendf(nil, "k%d", i), Value: fmt.Appendf(nil, "v%d", i), OffsetDelta: int32(i), TimestampDelta: int64(i)}
	}
	for c := record.CodecNone; c <= record.CodecZstd; c++ {
		b, err := record.Build(record.BuildOptions{Codec: c, BaseOffset: 40, BaseTimestamp: 1000}, recs)
		if err != nil {
			t.Fatal(err)
		}
		for mask := range 1 << (n + 1) { // the top bit: Lazy
			asked := map[int64]int{}
			lazy := mask>>n == 1
			mask := mask & (1<<n - 1)
			out, st, err := CompactBatch(b, CompactPolicy{
				Lazy: lazy,
				Keep: func(r RecordInfo) bool {
					asked[r.Offset]++
					return mask>>(r.Offset-40)&1 == 1
				},
				RetainEmpty: func(record.Header) bool { return false },
			})
			if err != nil {
				t.Fatalf("%v mask %05b: %v", c, mask, err)
			}
			for off, k := range asked {
				if k > 2 || (!lazy || mask == 1<<n-1) && k > 1 { // lazy decodes twice only to rebuild
					t.Errorf("%v mask %05b: keep asked %d times about offset %d", c, mask, k, off)
				}
			}
			var want []string
			for i := range n {
				if mask>>i&1 == 1 {
					want = append(want, fmt.Sprintf("%d:k%d=v%d", 40+i, i, i))
				}
			}
			switch {
			case mask == 0:
				if out != nil || st.BatchesOut != 0 {
					t.Errorf("%v: nothing kept gave %d bytes, stats %+v", c, len(out), st)
				}
				continue
			case mask == 1<<n-1:
				if len(out) != len(b) || &out[0] != &b[0] || st.RewrittenBatches != 0 {
					t.Errorf("%v: every record kept, but the batch was rebuilt (stats %+v)", c, st)
				}
			case st.RewrittenBatches != 1 || st.RecordsKept != int64(len(want)):
				t.Errorf("%v mask %05b: stats %+v", c, mask, st)
			}
			var got []string
			if err := record.Records(out, func(r *record.Record) error {
				got = append(got, fmt.Sprintf("%d:%s=%s", 40+int64(r.OffsetDelta), r.Key, r.Value))
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("%v mask %05b: records %v, want %v", c, mask, got, want)
			}
		}
	}
}

func cloneNil(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte{}, b...)
}

// resignBatch recomputes b's CRC after a test changed it.
func resignBatch(b []byte) []byte {
	binary.BigEndian.PutUint32(b[batchOffCRC:], batchCRC(b))
	return b
}

func TestCompactBatchRefuses(t *testing.T) {
	good, err := record.Build(record.BuildOptions{Codec: record.CodecLZ4, BaseOffset: 7},
		[]record.Record{{Key: []byte("a"), Value: []byte("1")}, {Key: []byte("b"), Value: []byte("2")}})
	if err != nil {
		t.Fatal(err)
	}
	plain, err := record.Build(record.BuildOptions{BaseOffset: 7},
		[]record.Record{{Key: []byte("a"), Value: []byte("1")}, {Key: []byte("b"), Value: []byte("2")}})
	if err != nil {
		t.Fatal(err)
	}
	edit := func(b []byte, fn func(b []byte) []byte) []byte { return fn(append([]byte{}, b...)) }
	for _, tc := range []struct {
		name  string
		batch []byte
	}{
		{"empty", nil},
		{"short header", good[:40]},
		{"cut short", good[:len(good)-1]},
		{"a byte after", append(append([]byte{}, good...), 0)},
		{"crc", edit(good, func(b []byte) []byte { b[len(b)-1] ^= 1; return b })},
		{"magic 1", edit(good, func(b []byte) []byte { b[16] = 1; return b })},
		{"batch length too small", edit(good, func(b []byte) []byte { binary.BigEndian.PutUint32(b[8:], 20); return b })},
		{"codec 7", edit(good, func(b []byte) []byte { b[22] |= 7; return resignBatch(b) })},
		{"records past the last offset delta", edit(good, func(b []byte) []byte {
			binary.BigEndian.PutUint32(b[23:], 0)
			return resignBatch(b)
		})},
		{"negative record count", edit(good, func(b []byte) []byte {
			binary.BigEndian.PutUint32(b[57:], 0xffffffff)
			return resignBatch(b)
		})},
		{"fewer records than the count", edit(plain, func(b []byte) []byte {
			binary.BigEndian.PutUint32(b[23:], 2)
			binary.BigEndian.PutUint32(b[57:], 3)
			return resignBatch(b)
		})},
		{"compressed data corrupt", edit(good, func(b []byte) []byte { b[len(b)-6] ^= 0xff; return resignBatch(b) })},
		{"record fields past its length", edit(plain, func(b []byte) []byte { b[record.HeaderSize] = 2; return resignBatch(b) })},
		{"control batch whose records do not decode", edit(plain, func(b []byte) []byte {
			b[22] |= record.AttrControl
			b[record.HeaderSize] = 2
			return resignBatch(b)
		})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			keepAll := func(RecordInfo) bool { return true }
			retain := func(record.Header) bool { return true }
			if _, _, err := CompactBatch(tc.batch, CompactPolicy{Keep: keepAll, RetainEmpty: retain}); !errors.Is(err, ErrCorrupt) {
				t.Errorf("CompactBatch: err = %v, want ErrCorrupt", err)
			}
			data := append(append([]byte{}, plain...), tc.batch...)
			if _, _, err := CompactBatches(data, CompactPolicy{Keep: keepAll}); len(tc.batch) > 0 && !errors.Is(err, ErrCorrupt) {
				t.Errorf("CompactBatches: err = %v, want ErrCorrupt", err)
			}
		})
	}
	if _, _, err := CompactBatch(good, CompactPolicy{}); err == nil {
		t.Error("CompactBatch took a nil keep")
	}
	if _, _, err := CompactBatches(good, CompactPolicy{}); err == nil {
		t.Error("CompactBatches took a nil keep")
	}
	if out, st, err := CompactBatches(nil, CompactPolicy{Keep: func(RecordInfo) bool { return true }}); out != nil || st != (CompactStats{}) || err != nil {
		t.Errorf("CompactBatches(nil) = %v, %+v, %v", out, st, err)
	}
}

// FuzzCompactBatch compacts arbitrary bytes with a keep that picks records by
// their offsets' bits in mask: no panic, and whatever comes out is one batch
// with a right CRC, the input's offsets, and records that decode. With resign,
// the input's CRC is made right first, so that mutations reach the records.
func FuzzCompactBatch(f *testing.F) {
	recs := []record.Record{
		{Key: []byte("a"), Value: []byte("1")},
		{Key: nil, Value: []byte("2"), TimestampDelta: 1, OffsetDelta: 1},
		{Key: []byte("b"), Value: nil, TimestampDelta: -1, OffsetDelta: 2, Headers: []record.RecordHeader{{Key: "h", Value: []byte("v")}}},
		{Key: []byte("c"), Value: []byte("3"), TimestampDelta: 2, OffsetDelta: 5},
	}
	for c := record.CodecNone; c <= record.CodecZstd; c++ {
		for _, opts := range []record.BuildOptions{
			{Codec: c, BaseOffset: 10, BaseTimestamp: 1000, ProducerID: 1},
			{Codec: c, BaseOffset: 20, KeepOffsetDeltas: true, LastOffsetDelta: 9, Attributes: record.AttrLogAppendTime},
			{Codec: c, Attributes: record.AttrControl | record.AttrTransactional, ProducerID: 2},
			{Codec: c, SnappyXerial: true},
		} {
			b, err := record.Build(opts, recs)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(b, uint64(0b1010), true, true, int64(0))
			f.Add(b, uint64(0b1111), false, true, int64(9000))
			f.Add(b, uint64(1)<<63|0b1111, true, false, int64(9000)) // markers let go
			f.Add(b, uint64(1)<<62|0b1010, true, true, int64(0))     // lazy
			f.Add(b, uint64(1)<<62|0b1111, false, true, int64(9000)) // lazy, a tombstone stamped
		}
	}
	f.Add(emptyBatch(record.Header{BaseOffset: 3, LastOffsetDelta: 4, ProducerID: 1, MaxTimestamp: 9}), uint64(0), false, false, int64(0))
	f.Fuzz(func(t *testing.T, b []byte, mask uint64, retain, resign bool, stamp int64) {
		if resign && len(b) >= record.HeaderSize {
			resignBatch(b)
		}
		in := append([]byte{}, b...)
		policy := CompactPolicy{
			Keep:         func(r RecordInfo) bool { return mask>>(uint64(r.Offset)%62)&1 == 1 },
			Lazy:         mask>>62&1 == 1,
			RetainEmpty:  func(record.Header) bool { return retain },
			Marker:       func(record.Header, bool) bool { return mask>>63 == 1 },
			NowMs:        stamp / 2,
			StampHorizon: stamp,
			StampThrough: math.MaxInt64,
		}
		out, st, err := CompactBatch(b, policy)
		other := policy
		other.Lazy = !policy.Lazy
		if oout, ost, oerr := CompactBatch(b, other); !bytes.Equal(oout, out) || ost != st || (oerr == nil) != (err == nil) {
			t.Fatalf("lazy %v: %d bytes, %+v, %v; lazy %v: %d bytes, %+v, %v", policy.Lazy, len(out), st, err, other.Lazy, len(oout), ost, oerr)
		}
		if !bytes.Equal(b, in) {
			t.Fatal("CompactBatch changed its input")
		}
		if err != nil {
			if out != nil {
				t.Fatal("an error with a batch")
			}
			return
		}
		h, _ := record.ParseHeader(b)
		if st.RecordsKept > st.RecordsIn || st.RecordsIn != int64(h.NumRecords) {
			t.Fatalf("stats %+v for %d records", st, h.NumRecords)
		}
		if out == nil {
			return
		}
		g, err := record.ParseHeader(out)
		if err != nil {
			t.Fatal(err)
		}
		if err := checkStored(out, g); err != nil {
			t.Fatal(err)
		}
		if g.BaseOffset != h.BaseOffset || g.LastOffsetDelta != h.LastOffsetDelta || g.ProducerID != h.ProducerID ||
			g.BaseSequence != h.BaseSequence || int64(g.NumRecords) != st.RecordsKept {
			t.Fatalf("header %+v from %+v, stats %+v", g, h, st)
		}
		if err := record.Records(out, nil); err != nil {
			t.Fatal(err)
		}
	})
}

func BenchmarkCompactBatch(b *testing.B) {
	recs := make([]record.Record, 500)
	for i := range recs {
		recs[i] = record.Record{Key: fmt.Appendf(nil, "key-%d", i%250), Value: bytes.Repeat([]byte{byte(i)}, 100), TimestampDelta: int64(i)}
	}
	keeps := []struct {
		name string
		keep func(RecordInfo) bool
	}{
		{"half", func(r RecordInfo) bool { return r.Offset%2 == 0 }},
		{"all", func(RecordInfo) bool { return true }},                      // a view's batch of its key
		{"last-dropped", func(r RecordInfo) bool { return r.Offset < 499 }}, // decoded twice when lazy
	}
	for _, c := range []record.Codec{record.CodecNone, record.CodecLZ4, record.CodecZstd} {
		batch, err := record.Build(record.BuildOptions{Codec: c}, recs)
		if err != nil {
			b.Fatal(err)
		}
		for _, k := range keeps {
			for _, lazy := range []bool{false, true} {
				b.Run(fmt.Sprintf("%v/keep=%s/lazy=%v", c, k.name, lazy), func(b *testing.B) {
					b.SetBytes(int64(len(batch)))
					b.ReportAllocs()
					for range b.N {
						if _, _, err := CompactBatch(batch, CompactPolicy{Keep: k.keep, Lazy: lazy}); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		}
	}
}

// TestCompactedSegment writes compacted batches (with gaps, and one left
// empty for its producer) into a segment and reads them back: the segment
// format takes what compaction leaves.
func TestCompactedSegment(t *testing.T) {
	var in [][]byte
	for _, line := range []string{
		"base=0 pid=5 seq=0 | a=1@1000 b=1@1001 a=2@1002 c=1@1003",
		"base=4 pid=5 seq=4 | a=3@1004 b=2@1005",
	} {
		b, err := parseBatch(line)
		if err != nil {
			t.Fatal(err)
		}
		in = append(in, b)
	}
	latest := map[string]int64{"a": 4, "b": 5, "c": 3}
	keep := func(r RecordInfo) bool { return r.Offset >= latest[string(r.Key)] }
	var data []byte
	for _, b := range in {
		data = append(data, b...)
	}
	out, st, err := CompactBatches(data, CompactPolicy{Keep: keep, RetainEmpty: func(record.Header) bool { return true }})
	if err != nil {
		t.Fatal(err)
	}
	if st.RecordsKept != 3 {
		t.Fatalf("kept %d records, want 3 (c@3, a@4, b@5)", st.RecordsKept)
	}
	w, err := NewWriter(0, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for h, b := range Batches(out) {
		if err := w.Append(b, h.BaseOffset, 0); err != nil {
			t.Fatalf("append compacted batch at %d: %v", h.BaseOffset, err)
		}
	}
	obj, info, err := w.Finish()
	if err != nil {
		t.Fatal(err)
	}
	if info.LastOffset != 5 {
		t.Fatalf("segment ends at %d, want 5 (the last offset delta kept)", info.LastOffset)
	}
	tr, err := ParseTrailer(obj)
	if err != nil {
		t.Fatal(err)
	}
	batches, _, err := ReadBatches(obj[:tr.DataLength])
	if err != nil || len(batches) != 2 {
		t.Fatalf("read back %d batches: %v", len(batches), err)
	}
}
