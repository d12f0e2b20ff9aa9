package kvindex

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/floe-io/floe/internal/testkit"
	"github.com/floe-io/floe/record"
)

var (
	kvTopic      = [16]byte{0: 0x4b, 15: 0x56}
	plainTopic   = [16]byte{0: 0x50}
	buildTopic   = [16]byte{0: 0x42}
	droppedTopic = [16]byte{0: 0x44}
	trimmedTopic = [16]byte{0: 0x54}
)

// noProducer builds batches as a producer without idempotence sends them.
var noProducer = record.BuildOptions{PartitionLeaderEpoch: -1, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}

func withTS(ts int64) record.BuildOptions {
	o := noProducer
	o.BaseTimestamp = ts
	return o
}

// fixture is a fakeLog holding topic "kv" (3 partitions, indexed), "plain" (not
// indexed) and "building" (being rebuilt), and the offsets of the records the cases ask
// for.
type fixture struct {
	log *fakeLog
	off map[string]int64 // by case name
}

// produce appends one batch of recs to the partition the first key hashes to.
func (f *fixture) produce(t testing.TB, opts record.BuildOptions, recs ...kv) int64 {
	t.Helper()
	return f.log.append(t, kvTopic, Partition(recs[0].key, 3), build(t, opts, recs...))
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	f := &fixture{log: newFakeLog(), off: map[string]int64{}}
	f.log.addTopic("kv", TopicInfo{ID: kvTopic, Partitions: 3, Indexed: true})
	f.log.addTopic("plain", TopicInfo{ID: plainTopic, Partitions: 3})
	f.log.addTopic("building", TopicInfo{ID: buildTopic, Partitions: 3, Indexed: true})
	f.log.notReady[buildTopic] = true
	// Turned off since the broker cached the topic: TopicInfo still says indexed.
	f.log.addTopic("dropped", TopicInfo{ID: droppedTopic, Partitions: 3, Indexed: true})
	f.log.dropped[droppedTopic] = true

	f.produce(t, withTS(1000), rec("a", "1"))
	f.off["a"] = f.produce(t, withTS(2000), rec("a", "2"))
	f.produce(t, withTS(1000), rec("dead", "x"))
	f.produce(t, withTS(1000), tomb("dead"))
	// Below the log start (DeleteRecords): the entry is left, the record is gone.
	f.log.addTopic("trimmed", TopicInfo{ID: trimmedTopic, Partitions: 1, Indexed: true})
	f.log.append(t, trimmedTopic, 0, build(t, withTS(1), rec("gone", "g")))
	f.log.append(t, trimmedTopic, 0, build(t, withTS(1), rec("kept", "k")))
	f.log.logStart[fakeKey{topic: trimmedTopic}] = 1
	f.off["kept"] = 1

	// Several keys in one batch of partition 0, whatever they hash to.
	f.off["m"] = f.log.append(t, kvTopic, 0, build(t, withTS(5000),
		kv{key: []byte("m1"), value: []byte("v1")},
		kv{key: []byte("m2"), value: []byte("v2"), tsDelta: 5},
		kv{key: []byte("m3"), value: []byte("v3"), tsDelta: 10}))
	if Partition([]byte("m2"), 3) == 0 {
		t.Fatal("fixture: m2 must not hash to partition 0")
	}

	f.off["slash"] = f.produce(t, withTS(1), rec("x/y", "slashed"))
	f.off["binary"] = f.produce(t, withTS(1), rec("\xff\x00\xfe\xfb", "binary"))
	f.off["space"] = f.produce(t, withTS(1), rec("a b+c", "spaced"))

	// An entry past the high watermark (the record is not committed yet).
	f.log.setEntry(kvTopic, Partition([]byte("uncommitted"), 3), "uncommitted", 1<<40)

	// Stale pointers: an entry at a record with another key, and one at an offset
	// compaction removed from its batch.
	stalePart := Partition([]byte("stale"), 3)
	staleAt := f.log.append(t, kvTopic, stalePart, build(t, withTS(1), rec("other", "o")))
	f.log.setEntry(kvTopic, stalePart, "stale", staleAt)
	gapPart := Partition([]byte("g1"), 3)
	gap := f.log.append(t, kvTopic, gapPart, gapBatch(t, record.CodecNone, 9000, 2, []int32{0, 2},
		kv{key: []byte("g0"), value: []byte("zero")},
		kv{key: []byte("g2"), value: []byte("two"), tsDelta: 2}))
	f.log.setEntry(kvTopic, gapPart, "g1", gap+1)
	f.log.setEntry(kvTopic, gapPart, "g2x", gap+2) // the record at gap+2 is g2
	f.off["g2"] = gap + 2
	// A control batch: never a user's record.
	ctl := noProducer
	ctl.Attributes = record.AttrControl
	ctlAt := f.log.append(t, kvTopic, 1, build(t, ctl, rec("ctl", "c")))
	f.log.setEntry(kvTopic, 1, "ctl", ctlAt)

	// Tiered storage only.
	coldPart := Partition([]byte("cold"), 3)
	f.off["cold"] = f.log.appendBatch(t, kvTopic, coldPart, fakeBatch{data: build(t, withTS(1), rec("cold", "frozen")), remote: true})
	// In a tiered segment, with a batch after it.
	segPart := Partition([]byte("segkey"), 3)
	f.off["segkey"] = 1 + f.log.appendBatch(t, kvTopic, segPart, fakeBatch{segment: true,
		data: build(t, withTS(40), rec("segother", "o"), kv{key: []byte("segkey"), value: []byte("in a segment"), tsDelta: 1})})
	f.log.append(t, kvTopic, segPart, build(t, withTS(50), rec("after", "a")))

	// Every codec, with the wanted record in the middle of its batch.
	for c := record.CodecNone; c <= record.CodecZstd; c++ {
		opts := withTS(3000)
		opts.Codec = c
		k := "z-" + c.String()
		p := Partition([]byte(k), 3)
		f.off[k] = 1 + f.log.append(t, kvTopic, p, build(t, opts,
			kv{key: []byte("before"), value: []byte("b")},
			kv{key: []byte(k), value: []byte(strings.Repeat(c.String(), 100)), tsDelta: 7},
			kv{key: []byte("after"), value: []byte("a")}))
	}

	// LogAppendTime: from the coordinator's coordinates, and from a patched header.
	f.off["lat"] = f.log.appendBatch(t, kvTopic, Partition([]byte("lat"), 3),
		fakeBatch{data: build(t, withTS(1), rec("lat", "l")), logAppendTime: 777})
	latHdr := noProducer
	latHdr.Attributes = record.AttrLogAppendTime
	b := build(t, latHdr, rec("lathdr", "h"))
	record.SetLogAppendTime(b, 888)
	f.off["lathdr"] = f.log.append(t, kvTopic, Partition([]byte("lathdr"), 3), b)
	return f
}

// handlerCase is one request and the answer expected.
type handlerCase struct {
	name   string
	method string // GET when empty
	target string
	gated  bool // HandlerOptions.RemoteReadDisabled
	setup  func(f *fixture)

	status int
	code   int    // error_code, for errors
	msg    string // a substring of the error message
	body   string // for 200s
	part   int32
	offset string // a key of fixture.off
	delta  int64  // added to the offset
	ts     int64
}

func TestHandler(t *testing.T) {
	b64 := base64.RawURLEncoding.EncodeToString
	b64pad := base64.URLEncoding.EncodeToString
	zstd := strings.Repeat("zstd", 100)
	cases := []handlerCase{
		{name: "latest value wins", target: "/kv/kv/a", status: 200, body: "2", part: Partition([]byte("a"), 3), offset: "a", ts: 2000},
		{name: "tombstone", target: "/kv/kv/dead", status: 404, code: CodeKeyNotFound},
		{name: "unknown key", target: "/kv/kv/missing", status: 404, code: CodeKeyNotFound, msg: "key not found"},
		{name: "unknown topic", target: "/kv/nope/a", status: 404, code: CodeTopicNotFound, msg: `topic "nope" not found`},
		{name: "unknown topic quoted", target: "/kv/n%22o%0Ape/a", status: 404, code: CodeTopicNotFound, msg: `topic "n\"o\npe" not found`},
		{name: "not indexed", target: "/kv/plain/a", status: 404, code: CodeTopicNotIndexed, msg: "not key-indexed"},
		{name: "not ready", target: "/kv/building/a", status: 503, code: CodeIndexNotReady},
		{name: "not ready bad partition", target: "/kv/building/a?partition=3", status: 400, code: CodeBadPartition},
		{name: "turned off since cached", target: "/kv/dropped/a", status: 404, code: CodeTopicNotIndexed, msg: "not key-indexed"},
		{name: "below log start", target: "/kv/trimmed/gone", status: 404, code: CodeKeyNotFound, msg: "deleted"},
		{name: "at log start", target: "/kv/trimmed/kept", status: 200, body: "k", offset: "kept", ts: 1},

		{name: "partition query", target: "/kv/kv/m2?partition=0", status: 200, body: "v2", part: 0, offset: "m", delta: 1, ts: 5005},
		{name: "partition query first wins", target: "/kv/kv/m3?partition=0&partition=x", status: 200, body: "v3", part: 0, offset: "m", delta: 2, ts: 5010},
		{name: "hashed partition misses", target: "/kv/kv/m2", status: 404, code: CodeKeyNotFound},
		{name: "other params ignored", target: "/kv/kv/m1?x=1&partition=0&y", status: 200, body: "v1", part: 0, offset: "m", ts: 5000},
		{name: "partition not int", target: "/kv/kv/a?partition=x", status: 400, code: CodeBadPartition},
		{name: "partition empty", target: "/kv/kv/a?partition=", status: 400, code: CodeBadPartition},
		{name: "partition negative", target: "/kv/kv/a?partition=-1", status: 400, code: CodeBadPartition},
		{name: "partition too big", target: "/kv/kv/a?partition=3", status: 400, code: CodeBadPartition, msg: "out of range"},
		{name: "partition overflow", target: "/kv/kv/a?partition=2147483648", status: 400, code: CodeBadPartition},
		{name: "bad partition on unknown topic", target: "/kv/nope/a?partition=x", status: 400, code: CodeBadPartition},

		{name: "empty key", target: "/kv/kv/", status: 400, code: CodeBadRequest, msg: "empty key"},
		{name: "no key", target: "/kv/kv", status: 400, code: CodeBadRequest},
		{name: "no topic", target: "/kv//a", status: 400, code: CodeBadRequest},
		{name: "bare prefix", target: "/kv/", status: 400, code: CodeBadRequest},
		{name: "outside prefix", target: "/other/kv/a", status: 400, code: CodeBadRequest},
		{name: "slash in raw key", target: "/kv/kv/x/y", status: 400, code: CodeBadRequest, msg: "base64url"},
		{name: "percent-encoded slash", target: "/kv/kv/x%2Fy", status: 200, body: "slashed", part: Partition([]byte("x/y"), 3), offset: "slash", ts: 1},
		{name: "percent-encoded bytes", target: "/kv/kv/%FF%00%FE%FB", status: 200, body: "binary", part: Partition([]byte("\xff\x00\xfe\xfb"), 3), offset: "binary", ts: 1},
		{name: "space and plus in path", target: "/kv/kv/a%20b+c", status: 200, body: "spaced", part: Partition([]byte("a b+c"), 3), offset: "space", ts: 1},

		{name: "base64url slash", target: "/kv/kv/" + b64([]byte("x/y")) + "?key_encoding=base64url", status: 200, body: "slashed", part: Partition([]byte("x/y"), 3), offset: "slash", ts: 1},
		{name: "base64url padded", target: "/kv/kv/" + b64pad([]byte("x/y!")[:3]) + "?key_encoding=base64url", status: 200, body: "slashed", part: Partition([]byte("x/y"), 3), offset: "slash", ts: 1},
		{name: "base64url binary", target: "/kv/kv/" + b64([]byte("\xff\x00\xfe\xfb")) + "?key_encoding=base64url", status: 200, body: "binary", part: Partition([]byte("\xff\x00\xfe\xfb"), 3), offset: "binary", ts: 1},
		{name: "base64url binary padded", target: "/kv/kv/" + b64pad([]byte("\xff\x00\xfe\xfb")) + "?key_encoding=base64url", status: 200, body: "binary", part: Partition([]byte("\xff\x00\xfe\xfb"), 3), offset: "binary", ts: 1},
		{name: "base64url encoded param", target: "/kv/kv/" + b64([]byte("x/y")) + "?key_encoding=base64%75rl", status: 200, body: "slashed", part: Partition([]byte("x/y"), 3), offset: "slash", ts: 1},
		{name: "base64url bad char", target: "/kv/kv/a+b?key_encoding=base64url", status: 400, code: CodeBadKeyEncoding},
		{name: "base64url bad length", target: "/kv/kv/a?key_encoding=base64url", status: 400, code: CodeBadKeyEncoding},
		{name: "base64url bad padding", target: "/kv/kv/YQ=?key_encoding=base64url", status: 400, code: CodeBadKeyEncoding},
		{name: "base64url newline", target: "/kv/kv/eC%0A95?key_encoding=base64url", status: 400, code: CodeBadKeyEncoding},
		{name: "base64url empty", target: "/kv/kv/?key_encoding=base64url", status: 400, code: CodeBadRequest},
		{name: "unknown encoding", target: "/kv/kv/a?key_encoding=hex", status: 400, code: CodeBadKeyEncoding},
		{name: "empty encoding", target: "/kv/kv/a?key_encoding=", status: 400, code: CodeBadKeyEncoding},

		{name: "POST", method: "POST", target: "/kv/kv/a", status: 405, code: CodeMethodNotAllowed},
		{name: "PUT", method: "PUT", target: "/kv/kv/a", status: 405, code: CodeMethodNotAllowed},
		{name: "DELETE", method: "DELETE", target: "/kv/kv/a", status: 405, code: CodeMethodNotAllowed},
		{name: "HEAD", method: "HEAD", target: "/kv/kv/a", status: 405},

		{name: "past high watermark", target: "/kv/kv/uncommitted", status: 404, code: CodeKeyNotFound, msg: "not committed"},
		{name: "stale pointer", target: "/kv/kv/stale", status: 404, code: CodeKeyNotFound, msg: "compacted"},
		{name: "compacted offset", target: "/kv/kv/g1", status: 404, code: CodeKeyNotFound, msg: "compacted"},
		{name: "key differs at offset", target: "/kv/kv/g2x", status: 404, code: CodeKeyNotFound},
		{name: "record after a gap", target: "/kv/kv/g2?partition=" + strconv.Itoa(int(Partition([]byte("g1"), 3))),
			status: 200, body: "two", part: Partition([]byte("g1"), 3), offset: "g2", ts: 9002},
		{name: "control batch", target: "/kv/kv/ctl?partition=1", status: 404, code: CodeKeyNotFound},
		{name: "remote gated", target: "/kv/kv/cold", gated: true, status: 404, code: CodeRecordOnlyTiered, msg: "record only available in tiered storage"},
		{name: "segment gated", target: "/kv/kv/segkey", gated: true, status: 404, code: CodeRecordOnlyTiered, msg: "record only available in tiered storage"},
		{name: "segment enabled", target: "/kv/kv/segkey", status: 200, body: "in a segment", part: Partition([]byte("segkey"), 3), offset: "segkey", ts: 41},
		{name: "segment resolve failure", target: "/kv/kv/segkey", setup: func(f *fixture) { f.log.resolveErr = errors.New("s3") }, status: 500, code: CodeInternal},
		{name: "segment gone", target: "/kv/kv/segkey", setup: func(f *fixture) { f.log.resolveErr = ErrOffsetOutOfRange }, status: 404, code: CodeKeyNotFound, msg: "deleted"},
		{name: "segment offset compacted away", target: "/kv/kv/segkey", setup: func(f *fixture) { f.log.resolvePast = true }, status: 404, code: CodeKeyNotFound, msg: "compacted"},
		{name: "remote enabled", target: "/kv/kv/cold", status: 200, body: "frozen", part: Partition([]byte("cold"), 3), offset: "cold", ts: 1},

		{name: "codec none", target: "/kv/kv/z-none", status: 200, body: strings.Repeat("none", 100), part: Partition([]byte("z-none"), 3), offset: "z-none", ts: 3007},
		{name: "codec gzip", target: "/kv/kv/z-gzip", status: 200, body: strings.Repeat("gzip", 100), part: Partition([]byte("z-gzip"), 3), offset: "z-gzip", ts: 3007},
		{name: "codec snappy", target: "/kv/kv/z-snappy", status: 200, body: strings.Repeat("snappy", 100), part: Partition([]byte("z-snappy"), 3), offset: "z-snappy", ts: 3007},
		{name: "codec lz4", target: "/kv/kv/z-lz4", status: 200, body: strings.Repeat("lz4", 100), part: Partition([]byte("z-lz4"), 3), offset: "z-lz4", ts: 3007},
		{name: "codec zstd", target: "/kv/kv/z-zstd", status: 200, body: zstd, part: Partition([]byte("z-zstd"), 3), offset: "z-zstd", ts: 3007},

		{name: "log append time from coordinates", target: "/kv/kv/lat", status: 200, body: "l", part: Partition([]byte("lat"), 3), offset: "lat", ts: 777},
		{name: "log append time from header", target: "/kv/kv/lathdr", status: 200, body: "h", part: Partition([]byte("lathdr"), 3), offset: "lathdr", ts: 888},

		{name: "topic failure", target: "/kv/kv/a", setup: func(f *fixture) { f.log.topicErr = errors.New("nats down") }, status: 500, code: CodeInternal},
		{name: "lookup failure", target: "/kv/kv/a", setup: func(f *fixture) { f.log.lookupErr = errors.New("pebble") }, status: 500, code: CodeInternal},
		{name: "unknown partition", target: "/kv/kv/a", setup: func(f *fixture) { f.log.lookupErr = ErrUnknownPartition }, status: 404, code: CodePartitionNotFound},
		{name: "no batch for a live entry", target: "/kv/kv/a", setup: func(f *fixture) { f.log.noBatch = true }, status: 500, code: CodeInternal},
		{name: "read failure", target: "/kv/kv/a", setup: func(f *fixture) { f.log.readErr = errors.New("s3") }, status: 500, code: CodeInternal},
		{name: "read failure compressed", target: "/kv/kv/z-zstd", setup: func(f *fixture) { f.log.readErr = errors.New("s3") }, status: 500, code: CodeInternal},
		{name: "record deleted", target: "/kv/kv/a", setup: func(f *fixture) { f.log.readErr = ErrOffsetOutOfRange }, status: 404, code: CodeKeyNotFound, msg: "deleted"},
		{name: "topic deleted meanwhile", target: "/kv/kv/a", setup: func(f *fixture) { f.log.readErr = ErrUnknownTopic }, status: 404, code: CodeKeyNotFound},
		{name: "batch not holding offset", target: "/kv/kv/a",
			setup:  func(f *fixture) { f.log.baseShift = -10 },
			status: 500, code: CodeInternal},
		{name: "compressed batch not holding offset", target: "/kv/kv/z-lz4",
			setup:  func(f *fixture) { f.log.baseShift = -10 },
			status: 500, code: CodeInternal},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			if tc.setup != nil {
				tc.setup(f)
			}
			var observed []int
			h := NewHandler(f.log, HandlerOptions{
				RemoteReadDisabled: tc.gated,
				Logger:             testkit.Logger(),
				Observer:           func(status int, d time.Duration) { observed = append(observed, status) },
			})
			method := tc.method
			if method == "" {
				method = http.MethodGet
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, httptest.NewRequest(method, tc.target, nil))
			checkAnswer(t, f, tc, w)
			if len(observed) != 1 || observed[0] != tc.status {
				t.Errorf("observer saw %v, want [%d]", observed, tc.status)
			}
			if strings.HasSuffix(tc.name, " gated") && (f.log.reads != 0 || f.log.resolves != 0) {
				t.Errorf("gated remote lookup read %d batches, resolved %d segments", f.log.reads, f.log.resolves)
			}
			if tc.name == "segment enabled" && f.log.resolves != 1 {
				t.Errorf("%d segment resolves, want 1", f.log.resolves)
			}
		})
	}
}

// checkAnswer checks w against tc.
func checkAnswer(t *testing.T, f *fixture, tc handlerCase, w *httptest.ResponseRecorder) {
	t.Helper()
	res := w.Result()
	if res.StatusCode != tc.status {
		t.Fatalf("status %d, want %d; body %s", res.StatusCode, tc.status, w.Body)
	}
	hdr := res.Header
	if tc.status == http.StatusOK {
		want := map[string]string{
			"Content-Type":   "application/octet-stream",
			"Content-Length": strconv.Itoa(len(tc.body)),
			"X-Kv-Partition": strconv.Itoa(int(tc.part)),
			"X-Kv-Offset":    strconv.FormatInt(f.off[tc.offset]+tc.delta, 10),
			"X-Kv-Timestamp": strconv.FormatInt(tc.ts, 10),
		}
		for k, v := range want {
			if got := hdr.Get(k); got != v {
				t.Errorf("%s: %q, want %q", k, got, v)
			}
		}
		if got := w.Body.String(); got != tc.body {
			t.Errorf("body %q, want %q", got, tc.body)
		}
		return
	}
	if ct := hdr.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q", ct)
	}
	switch tc.status {
	case http.StatusMethodNotAllowed:
		if a := hdr.Get("Allow"); a != "GET" {
			t.Errorf("Allow %q, want GET", a)
		}
	case http.StatusServiceUnavailable:
		if ra := hdr.Get("Retry-After"); ra != "1" {
			t.Errorf("Retry-After %q, want 1", ra)
		}
	}
	if tc.method == http.MethodHead {
		return
	}
	var eb ErrorBody
	if err := json.Unmarshal(w.Body.Bytes(), &eb); err != nil {
		t.Fatalf("error body %q: %v", w.Body, err)
	}
	if eb.ErrorCode != tc.code {
		t.Errorf("error_code %d, want %d (%q)", eb.ErrorCode, tc.code, eb.Message)
	}
	if !strings.Contains(eb.Message, tc.msg) {
		t.Errorf("message %q, want it to contain %q", eb.Message, tc.msg)
	}
	if eb.ErrorCode/100 != tc.status {
		t.Errorf("error_code %d does not start with status %d", eb.ErrorCode, tc.status)
	}
}

func TestAppendJSONString(t *testing.T) {
	for _, s := range []string{"", "plain", `q"b\s`, "\x00\x1f\n\r\t", "é日本", "\xff\xfe", "\u2028\u2029", "<&>"} {
		var got string
		if err := json.Unmarshal(appendJSONString(nil, s), &got); err != nil {
			t.Errorf("%q: %v", s, err)
			continue
		}
		want, _ := json.Marshal(s)
		var w string
		_ = json.Unmarshal(want, &w)
		if got != w {
			t.Errorf("%q round-trips to %q, encoding/json to %q", s, got, w)
		}
	}
}
