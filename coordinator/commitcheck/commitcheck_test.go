package commitcheck

import (
	"encoding/binary"
	"math"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/floe-io/floe/coordapi"
)

// v7Key returns a WAL object key whose last segment is a UUIDv7 made at
// t (millisecond precision), under prefix.
func v7Key(prefix string, t time.Time) string {
	var id uuid.UUID
	var ms [8]byte
	binary.BigEndian.PutUint64(ms[:], uint64(t.UnixMilli()))
	copy(id[:6], ms[2:])
	id[6] = 0x70 | 0x01 // version 7
	id[7] = 0x23
	id[8] = 0x80 | 0x05 // RFC 4122 variant
	for i := 9; i < 16; i++ {
		id[i] = byte(i)
	}
	return prefix + id.String()
}

// errCode is the Kafka error code err carries, 0 for nil.
func errCode(err error) int16 { return coordapi.ErrorCode(err) }

func TestRequest(t *testing.T) {
	batch := func(off int64, n, delta int32) coordapi.CommitBatch {
		return coordapi.CommitBatch{ByteOffset: off, ByteLength: n, LastOffsetDelta: delta}
	}
	invalid := kerr.InvalidRequest.Code
	for _, tc := range []struct {
		name string
		req  coordapi.CommitRequest
		want int16
	}{
		{"valid, no batches", coordapi.CommitRequest{ObjectKey: "k", ObjectSize: 0}, 0},
		{"valid, batches fill the object",
			coordapi.CommitRequest{ObjectKey: "k", ObjectSize: 100, Batches: []coordapi.CommitBatch{batch(0, 60, 0), batch(60, 40, 9)}}, 0},
		{"empty key", coordapi.CommitRequest{ObjectSize: 10}, invalid},
		{"negative size", coordapi.CommitRequest{ObjectKey: "k", ObjectSize: -1}, invalid},
		{"inline matches size", coordapi.CommitRequest{ObjectKey: "k", ObjectSize: 3, Inline: []byte("abc")}, 0},
		{"inline empty, size 0", coordapi.CommitRequest{ObjectKey: "k", ObjectSize: 0, Inline: []byte{}}, 0},
		{"inline shorter than size", coordapi.CommitRequest{ObjectKey: "k", ObjectSize: 4, Inline: []byte("abc")}, invalid},
		{"inline longer than size", coordapi.CommitRequest{ObjectKey: "k", ObjectSize: 2, Inline: []byte("abc")}, invalid},
		{"inline at the limit",
			coordapi.CommitRequest{ObjectKey: "k", ObjectSize: coordapi.MaxInlineObject, Inline: make([]byte, coordapi.MaxInlineObject)}, 0},
		{"inline over the limit",
			coordapi.CommitRequest{ObjectKey: "k", ObjectSize: coordapi.MaxInlineObject + 1, Inline: make([]byte, coordapi.MaxInlineObject+1)}, invalid},
		{"batch negative offset",
			coordapi.CommitRequest{ObjectKey: "k", ObjectSize: 100, Batches: []coordapi.CommitBatch{batch(-1, 10, 0)}}, invalid},
		{"batch zero length",
			coordapi.CommitRequest{ObjectKey: "k", ObjectSize: 100, Batches: []coordapi.CommitBatch{batch(0, 0, 0)}}, invalid},
		{"batch negative length",
			coordapi.CommitRequest{ObjectKey: "k", ObjectSize: 100, Batches: []coordapi.CommitBatch{batch(0, -5, 0)}}, invalid},
		{"batch ends one byte past the object",
			coordapi.CommitRequest{ObjectKey: "k", ObjectSize: 100, Batches: []coordapi.CommitBatch{batch(0, 10, 0), batch(90, 11, 0)}}, invalid},
		{"batch ends exactly at the object's end",
			coordapi.CommitRequest{ObjectKey: "k", ObjectSize: 100, Batches: []coordapi.CommitBatch{batch(99, 1, 0)}}, 0},
		{"batch in an empty object",
			coordapi.CommitRequest{ObjectKey: "k", ObjectSize: 0, Batches: []coordapi.CommitBatch{batch(0, 1, 0)}}, invalid},
		{"batch negative last offset delta",
			coordapi.CommitRequest{ObjectKey: "k", ObjectSize: 100, Batches: []coordapi.CommitBatch{batch(0, 10, 0), batch(10, 10, -1)}}, invalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Request(&tc.req)
			if got := errCode(err); got != tc.want {
				t.Fatalf("Request: code %d (%v), want %d", got, err, tc.want)
			}
		})
	}
}

// TestRequestOffsetOverflow checks that a batch whose end overflows int64
// is refused like any other batch outside the object.
func TestRequestOffsetOverflow(t *testing.T) {
	req := coordapi.CommitRequest{ObjectKey: "k", ObjectSize: 100,
		Batches: []coordapi.CommitBatch{{ByteOffset: math.MaxInt64, ByteLength: 1}}}
	if got, want := errCode(Request(&req)), kerr.InvalidRequest.Code; got != want {
		t.Fatalf("Request: code %d, want %d", got, want)
	}
}

func TestKeyTime(t *testing.T) {
	at := time.Date(2026, 3, 14, 15, 9, 26, 535_000_000, time.UTC)
	v4 := uuid.MustParse("9b2f4c6e-1d3a-4f5b-8c7d-0e1f2a3b4c5d")
	for _, tc := range []struct {
		name   string
		key    string
		want   time.Time
		wantOK bool
	}{
		{"bare v7", v7Key("", at), at, true},
		{"v7 under a path", v7Key("wal/2026/03/", at), at, true},
		{"txn- marker object", v7Key("wal/txn-", at), at, true},
		{"v7 at the epoch", v7Key("wal/", time.UnixMilli(0)), time.UnixMilli(0), true},
		{"v4", "wal/" + v4.String(), time.Time{}, false},
		{"not a uuid", "wal/object-1", time.Time{}, false},
		{"empty", "", time.Time{}, false},
		{"trailing slash", v7Key("wal/", at) + "/", time.Time{}, false},
		{"v7 not in the last segment", v7Key("wal/", at) + "/x", time.Time{}, false},
		{"other prefix than txn-", v7Key("wal/tx-", at), time.Time{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := KeyTime(tc.key)
			if ok != tc.wantOK || !got.Equal(tc.want) {
				t.Fatalf("KeyTime(%q) = %v, %v; want %v, %v", tc.key, got, ok, tc.want, tc.wantOK)
			}
		})
	}
}

// TestKeyTimeNewV7 checks KeyTime against the uuid package's own UUIDv7.
func TestKeyTimeNewV7(t *testing.T) {
	before := time.Now().Truncate(time.Millisecond)
	id, err := uuid.NewV7()
	if err != nil {
		t.Fatal(err)
	}
	after := time.Now()
	got, ok := KeyTime("wal/" + id.String())
	if !ok || got.Before(before) || got.After(after) {
		t.Fatalf("KeyTime = %v, %v; want a time in [%v, %v]", got, ok, before, after)
	}
}

func TestAge(t *testing.T) {
	made := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	key := v7Key("wal/", made)
	const limit = 30 * time.Second
	for _, tc := range []struct {
		name    string
		key     string
		now     time.Time
		limit   time.Duration
		wantAge time.Duration
		want    int16
	}{
		{"fresh", key, made.Add(time.Second), limit, 0, 0},
		{"exactly at the limit", key, made.Add(limit), limit, 0, 0},
		{"just past the limit", key, made.Add(limit + time.Nanosecond), limit, limit + time.Nanosecond, kerr.RequestTimedOut.Code},
		{"long past the limit", key, made.Add(time.Hour), limit, time.Hour, kerr.RequestTimedOut.Code},
		{"key from the future", key, made.Add(-time.Hour), limit, 0, 0},
		{"limit 0 never refuses", key, made.Add(time.Hour), 0, 0, 0},
		{"negative limit never refuses", key, made.Add(time.Hour), -time.Second, 0, 0},
		{"not a UUIDv7 never refuses", "wal/object-1", made.Add(time.Hour), limit, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			age, err := Age(tc.key, tc.now, tc.limit)
			if got := errCode(err); got != tc.want {
				t.Fatalf("Age: code %d (%v), want %d", got, err, tc.want)
			}
			if age != tc.wantAge {
				t.Fatalf("Age: age %v, want %v", age, tc.wantAge)
			}
		})
	}
}

// TestV7Key checks the test's own key builder against the uuid package.
func TestV7Key(t *testing.T) {
	at := time.UnixMilli(1_700_000_000_123)
	k := v7Key("p/", at)
	id, err := uuid.Parse(k[2:])
	if err != nil || id.Version() != 7 || id.Variant() != uuid.RFC4122 || id.Time() != uuid.Time(at.UnixMilli()*10_000+0x01B21DD213814000) {
		t.Fatalf("v7Key(%v) = %q: %v, version %d, variant %v", at, k, err, id.Version(), id.Variant())
	}
}
