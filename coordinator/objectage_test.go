package coordinator

import (
	"context"
	"encoding/binary"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/coordinator/commitcheck"
	"github.com/floe-io/floe/objectstore"
)

// v7At returns a UUIDv7 whose time is t, as a broker rolling an object at
// t names it.
func v7At(t time.Time, seq byte) uuid.UUID {
	var id uuid.UUID
	var ms [8]byte
	binary.BigEndian.PutUint64(ms[:], uint64(t.UnixMilli()))
	copy(id[:6], ms[2:])
	id[6] = 0x70
	id[8] = 0x80
	id[15] = seq
	return id
}

func TestObjectKeyTime(t *testing.T) {
	at := time.UnixMilli(1_700_000_123_456)
	for _, tc := range []struct {
		key  string
		ok   bool
		want time.Time
	}{
		{key: coordapi.WALKey("floe", v7At(at, 1).String()), ok: true, want: at},
		{key: coordapi.WALKey("", "txn-"+v7At(at, 2).String()), ok: true, want: at},
		{key: v7At(at, 3).String(), ok: true, want: at},
		{key: coordapi.WALKey("", uuid.NewSHA1(uuid.NameSpaceURL, []byte("x")).String())}, // version 5
		{key: "wal/obj-1"},
		{key: ""},
	} {
		got, ok := commitcheck.KeyTime(tc.key)
		if ok != tc.ok || ok && !got.Equal(tc.want) {
			t.Errorf("KeyTime(%q) = %v, %v; want %v, %v", tc.key, got, ok, tc.want, tc.ok)
		}
	}
}

// A commit that comes later than MaxObjectAge after its object was named
// is refused, retriably, and leaves nothing behind: the collector may
// already have taken such an object as an orphan.
func TestCommitObjectAge(t *testing.T) {
	for _, tc := range []struct {
		name   string
		maxAge time.Duration
		gc     bool // a collector runs here: the default is half the grace
		age    time.Duration
		key    func(time.Time) string
		want   *kerr.Error
	}{
		{name: "young", maxAge: 5 * time.Minute, age: time.Minute},
		{name: "old", maxAge: 5 * time.Minute, age: 6 * time.Minute, want: kerr.RequestTimedOut},
		{name: "old marker object", maxAge: 5 * time.Minute, age: 6 * time.Minute, want: kerr.RequestTimedOut,
			key: func(at time.Time) string { return coordapi.WALKey("", "txn-"+v7At(at, 9).String()) }},
		{name: "ahead of this clock", maxAge: 5 * time.Minute, age: -time.Hour},
		{name: "not a UUIDv7", maxAge: 5 * time.Minute, age: time.Hour, key: func(time.Time) string { return "wal/obj-1" }},
		{name: "no limit", maxAge: -1, gc: true, age: time.Hour},
		{name: "default without collector", age: time.Hour},
		{name: "default with collector", gc: true, age: 6 * time.Minute, want: kerr.RequestTimedOut},
		{name: "default with collector, young", gc: true, age: 4 * time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, func(o *Options) {
				o.MaxObjectAge, o.GCGrace, o.GCInterval = tc.maxAge, 10*time.Minute, time.Hour
				if tc.gc {
					o.GCStore = objectstore.NewMemory()
				}
			})
			tp := e.topic("t", 1, nil)
			at := e.clock.Now().Add(-tc.age)
			key := coordapi.WALKey("", v7At(at, 1).String())
			if tc.key != nil {
				key = tc.key(at)
			}
			_, err := e.c.CommitObject(context.Background(), objectReq(key, plain(tp.ID, 0, 4)))
			if tc.want == nil {
				if err != nil {
					t.Fatalf("commit: %v", err)
				}
				if hw := e.state(tp.ID, 0).HighWatermark; hw != 5 {
					t.Fatalf("high watermark %d, want 5", hw)
				}
				return
			}
			wantKerr(t, err, tc.want)
			if hw := e.state(tp.ID, 0).HighWatermark; hw != 0 {
				t.Fatalf("high watermark %d after a refused commit", hw)
			}
			if objs, _ := e.c.Objects(context.Background()); len(objs) != 0 {
				t.Fatalf("a refused commit recorded objects: %+v", objs)
			}
		})
	}
}

func TestMaxObjectAgeAboveGrace(t *testing.T) {
	o := Options{Dir: t.TempDir(), GCGrace: time.Minute, MaxObjectAge: 2 * time.Minute}
	if err := o.Validate(); err == nil {
		t.Fatal("Validate took a --max-object-age above --gc-grace")
	}
}
