package zone

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"testing"

	"github.com/floe-io/floe/cache"
	"github.com/floe-io/floe/internal/testkit"
)

func TestHandler(t *testing.T) {
	st := newStore()
	const size = 3*testChunk + 10
	data := st.add(t, "wal/0190-obj", size)
	st.add(t, "wal/0190-broken", size)
	st.broken["wal/0190-broken"] = true
	st.add(t, "other/secret", size)
	c, err := cache.New(st, cache.Options{ChunkBytes: testChunk, MaxBytes: 64 * testChunk, Logger: testkit.Logger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	m := newMetrics(t)
	h := NewHandler(c.GetChunk, HandlerOptions{ChunkBytes: testChunk, Prefixes: []string{"wal/", "tiered/"}, Meter: m.mp.Meter("zone"), Logger: testkit.Logger()})

	q := func(kv ...string) string {
		v := url.Values{}
		for i := 0; i < len(kv); i += 2 {
			v.Set(kv[i], kv[i+1])
		}
		return ChunkPath + "?" + v.Encode()
	}
	chunk := strconv.Itoa(testChunk)
	tests := []struct {
		name   string
		method string // "": GET
		target string
		status int
		want   []byte // the body of a 200
	}{
		{name: "first chunk", target: q("key", "wal/0190-obj", "offset", "0", "length", chunk), status: 200, want: data[:testChunk]},
		{name: "with its chunk size", target: q("key", "wal/0190-obj", "offset", chunk, "length", chunk, "chunk_bytes", chunk), status: 200, want: data[testChunk : 2*testChunk]},
		{name: "last chunk and tail", target: q("key", "wal/0190-obj", "offset", strconv.Itoa(2*testChunk), "length", strconv.Itoa(size-2*testChunk)), status: 200, want: data[2*testChunk:]},
		{name: "no key", target: q("offset", "0", "length", chunk), status: 400},
		{name: "invalid key", target: q("key", "wal/../etc", "offset", "0", "length", chunk), status: 400},
		{name: "absolute key", target: q("key", "/wal/0190-obj", "offset", "0", "length", chunk), status: 400},
		{name: "key outside the prefixes", target: q("key", "other/secret", "offset", "0", "length", chunk), status: 400},
		{name: "no offset", target: q("key", "wal/0190-obj", "length", chunk), status: 400},
		{name: "offset not a number", target: q("key", "wal/0190-obj", "offset", "x", "length", chunk), status: 400},
		{name: "unaligned offset", target: q("key", "wal/0190-obj", "offset", "1", "length", chunk), status: 400},
		{name: "negative offset", target: q("key", "wal/0190-obj", "offset", "-"+chunk, "length", chunk), status: 400},
		{name: "no length", target: q("key", "wal/0190-obj", "offset", "0"), status: 400},
		{name: "zero length", target: q("key", "wal/0190-obj", "offset", "0", "length", "0"), status: 400},
		{name: "longer than a chunk and a tail", target: q("key", "wal/0190-obj", "offset", "0", "length", strconv.Itoa(testChunk+testChunk/8+1)), status: 400},
		{name: "another chunk size", target: q("key", "wal/0190-obj", "offset", "0", "length", chunk, "chunk_bytes", "2048"), status: 400},
		{name: "chunk size not a number", target: q("key", "wal/0190-obj", "offset", "0", "length", chunk, "chunk_bytes", "big"), status: 400},
		{name: "beyond the object", target: q("key", "wal/0190-obj", "offset", strconv.Itoa(8*testChunk), "length", chunk), status: 400},
		{name: "missing object", target: q("key", "wal/0190-none", "offset", "0", "length", chunk), status: 404},
		{name: "store failure", target: q("key", "wal/0190-broken", "offset", "0", "length", chunk), status: 500},
		{name: "POST", method: http.MethodPost, target: q("key", "wal/0190-obj", "offset", "0", "length", chunk), status: 405},
	}
	var served, servedBytes int64
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			method := tt.method
			if method == "" {
				method = http.MethodGet
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, httptest.NewRequestWithContext(context.Background(), method, tt.target, nil))
			if w.Code != tt.status {
				t.Fatalf("status %d, want %d: %s", w.Code, tt.status, w.Body)
			}
			if tt.status != 200 {
				return
			}
			served++
			servedBytes += int64(len(tt.want))
			if !bytes.Equal(w.Body.Bytes(), tt.want) {
				t.Fatal("wrong bytes")
			}
			if got := w.Header().Get("Content-Length"); got != strconv.Itoa(len(tt.want)) {
				t.Fatalf("Content-Length %s, want %d", got, len(tt.want))
			}
		})
	}
	if got := m.sum(t, "floe.zone.peer_served"); got != served {
		t.Errorf("peer_served %d, want %d", got, served)
	}
	if got := m.sum(t, "floe.zone.peer_served.bytes"); got != servedBytes {
		t.Errorf("peer_served.bytes %d, want %d", got, servedBytes)
	}
	if st.getsAt("other/secret", 0) != 0 {
		t.Error("a key outside the prefixes reached the store")
	}
}
