package zone

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/floe-io/floe/coordapi"
)

// objectChunks is how many chunks the shared object has: enough that each
// of three brokers owns some.
const objectChunks = 32

// TestZoneSharesChunks: three brokers of zone "a" and one of zone "b" read
// the same object through their caches. Zone "a" reads each chunk from
// the store once, its owner's load, and the other two brokers get it from
// the owner; zone "b" reads it once more.
func TestZoneSharesChunks(t *testing.T) {
	st := newStore()
	const key = "wal/0190-shared"
	const size = objectChunks*testChunk + testChunk/16 // the last chunk absorbs a tail
	data := st.add(t, key, size)
	l := &lister{}
	a := []*broker{
		startBroker(t, 1, "a", st, l, GetterOptions{}),
		startBroker(t, 2, "a", st, l, GetterOptions{}),
		startBroker(t, 3, "a", st, l, GetterOptions{}),
	}
	b := startBroker(t, 4, "b", st, l, GetterOptions{})
	refreshAll(t, append(a, b)...)
	owned := map[int32]int{}
	for idx := range int64(objectChunks) {
		o, _ := a[0].members.Owner(key, idx)
		owned[o.NodeID]++
	}
	if len(owned) != 3 {
		t.Fatalf("chunk owners %v: want each of zone a's three", owned)
	}

	ctx := context.Background()
	for _, br := range append(a, b) {
		// In two reads, so that some loads are read-ahead.
		for _, r := range []struct{ off, n int64 }{{0, size / 2}, {size / 2, size - size/2}} {
			got, err := br.cache.GetRange(ctx, key, size, r.off, r.n)
			if err != nil {
				t.Fatalf("broker %d: %v", br.info.NodeID, err)
			}
			if !bytes.Equal(got, data[r.off:r.off+r.n]) {
				t.Fatalf("broker %d: wrong bytes at %d", br.info.NodeID, r.off)
			}
		}
	}
	for idx := range int64(objectChunks) {
		if n := st.getsAt(key, idx*testChunk); n != 2 {
			t.Errorf("chunk %d: %d GETs, want 2 (one per zone)", idx, n)
		}
	}

	var fromStore, fromPeers, fallbacks, served, servedBytes int64
	for _, br := range a {
		fromStore += br.metrics.loads(t, SourceObjectStore)
		fromPeers += br.metrics.loads(t, SourcePeer)
		fallbacks += br.metrics.loads(t, SourcePeerFallback)
		served += br.metrics.sum(t, "floe.zone.peer_served")
		servedBytes += br.metrics.sum(t, "floe.zone.peer_served.bytes")
		if got, want := br.metrics.sum(t, "floe.zone.peer_served"), int64(2*owned[br.info.NodeID]); got != want {
			t.Errorf("broker %d served %d chunks to peers, want %d (its own, to both others)", br.info.NodeID, got, want)
		}
	}
	if fromStore != objectChunks || fromPeers != 2*objectChunks || fallbacks != 0 {
		t.Errorf("zone a's chunk loads: %d from the store, %d from peers, %d fallbacks; want %d, %d, 0",
			fromStore, fromPeers, fallbacks, objectChunks, 2*objectChunks)
	}
	if served != 2*objectChunks || servedBytes != 2*size {
		t.Errorf("zone a served %d chunks, %d bytes; want %d, %d", served, servedBytes, 2*objectChunks, 2*size)
	}
	if got := b.metrics.loads(t, SourceObjectStore); got != objectChunks {
		t.Errorf("zone b's broker loaded %d chunks from the store, want %d", got, objectChunks)
	}
}

// TestPeerFailureFallsBack: whatever goes wrong asking the owner, the chunk
// comes from the store, without an error, and is counted; an owner that
// cannot be reached is not asked again for a while.
func TestPeerFailureFallsBack(t *testing.T) {
	tests := []struct {
		name     string
		handler  http.HandlerFunc // nil: nothing listens
		backsOff bool
	}{
		{name: "connection refused", backsOff: true},
		{name: "timeout", handler: func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }, backsOff: true},
		{name: "500", handler: func(w http.ResponseWriter, r *http.Request) { http.Error(w, "boom", http.StatusInternalServerError) }},
		{name: "404", handler: func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) }},
		{name: "short body", handler: func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Length", strconv.Itoa(testChunk))
			w.Write(make([]byte, testChunk/2))
		}, backsOff: true},
		{name: "wrong length", handler: func(w http.ResponseWriter, r *http.Request) { w.Write(make([]byte, testChunk-1)) }},
		{name: "too long", handler: func(w http.ResponseWriter, r *http.Request) { w.Write(make([]byte, testChunk+1)) }},
		{name: "too long, no length", handler: func(w http.ResponseWriter, r *http.Request) {
			w.Write(make([]byte, testChunk))
			w.(http.Flusher).Flush() // chunked: the length is not known up front
			w.Write([]byte{1})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := newStore()
			keys := []string{"wal/0190-a", "wal/0190-b"}
			objects := [][]byte{st.add(t, keys[0], 64*testChunk), st.add(t, keys[1], 64*testChunk)}
			peer := startFakePeer(t, 2, "a", tt.handler)
			l := &lister{}
			l.set([]coordapi.BrokerInfo{peer.info}, nil)
			self := startBroker(t, 1, "a", st, l, GetterOptions{PeerTimeout: 100 * time.Millisecond, PeerBackoff: time.Hour})
			refreshAll(t, self)

			// One chunk of each object that the peer owns.
			for i, key := range keys {
				off := chunkOwnedBy(t, self.members, key, 2) * testChunk
				got, err := self.getter.GetRange(context.Background(), key, off, testChunk)
				if err != nil {
					t.Fatalf("read %d: %v", i, err)
				}
				if !bytes.Equal(got, objects[i][off:off+testChunk]) {
					t.Fatalf("read %d: wrong bytes", i)
				}
				if n := st.getsAt(key, off); n != 1 {
					t.Fatalf("read %d: %d GETs of the store, want 1", i, n)
				}
			}
			if got := self.metrics.loads(t, SourcePeerFallback); got != 2 {
				t.Errorf("%d fallbacks counted, want 2", got)
			}
			if got := self.metrics.loads(t, SourcePeer); got != 0 {
				t.Errorf("%d peer loads counted, want 0", got)
			}
			if tt.handler == nil {
				return
			}
			want := 2
			if tt.backsOff {
				want = 1
			}
			if got := peer.requests(); got != want {
				t.Errorf("peer asked %d times, want %d", got, want)
			}
		})
	}
}

// TestServingPeerNeverForwards: a broker serving a peer reads the store
// for a chunk it thinks another broker owns (the two disagree on the
// members), through its cache, and never asks that other broker.
func TestServingPeerNeverForwards(t *testing.T) {
	st := newStore()
	const key = "wal/0190-obj"
	data := st.add(t, key, 64*testChunk)
	other := startFakePeer(t, 2, "a", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "a peer-served read came here", http.StatusTeapot)
	})
	l := &lister{}
	l.set([]coordapi.BrokerInfo{other.info}, nil)
	b := startBroker(t, 1, "a", st, l, GetterOptions{})
	refreshAll(t, b)
	idx := chunkOwnedBy(t, b.members, key, 2)

	q := url.Values{"key": {key}, "offset": {strconv.Itoa(int(idx) * testChunk)}, "length": {strconv.Itoa(testChunk)}}
	resp, err := http.Get(b.srv.URL + ChunkPath + "?" + q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("status %s, %v: %s", resp.Status, err, body)
	}
	if !bytes.Equal(body, data[idx*testChunk:(idx+1)*testChunk]) {
		t.Fatal("wrong bytes")
	}
	// Straight to the Getter, marked as serving a peer, as well.
	if _, err := b.getter.GetRange(withServingPeer(context.Background()), key, (idx)*testChunk, testChunk); err != nil {
		t.Fatal(err)
	}
	if n := other.requests(); n != 0 {
		t.Fatalf("the other broker was asked %d times", n)
	}
	if got := b.metrics.loads(t, SourceObjectStore); got != 2 {
		t.Fatalf("%d loads from the store counted, want 2", got)
	}
	// The chunk stays in the serving broker's cache: its own readers hit.
	hits := b.cache.Stats().Hits
	if _, err := b.cache.GetRange(context.Background(), key, 64*testChunk, idx*testChunk, 10); err != nil {
		t.Fatal(err)
	}
	if b.cache.Stats().Hits != hits+1 {
		t.Fatal("the chunk served to a peer is not resident")
	}
}

// TestGetterOnlySharesWholeChunks: a range that is not one whole aligned
// chunk, or any range without a membership, reads the store.
func TestGetterOnlySharesWholeChunks(t *testing.T) {
	st := newStore()
	const key = "wal/0190-obj"
	st.add(t, key, 64*testChunk)
	peer := startFakePeer(t, 2, "a", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "not a whole chunk", http.StatusTeapot)
	})
	l := &lister{}
	l.set([]coordapi.BrokerInfo{peer.info}, nil)
	b := startBroker(t, 1, "a", st, l, GetterOptions{})
	refreshAll(t, b)
	idx := chunkOwnedBy(t, b.members, key, 2)
	base := idx * testChunk

	tests := []struct {
		name           string
		g              *Getter
		offset, length int64
	}{
		{"unaligned", b.getter, base + 1, testChunk},
		{"longer than a chunk and a tail", b.getter, base, testChunk + testChunk/8 + 1},
		{"empty", b.getter, base, 0},
		{"to the end", b.getter, base, -1},
		{"no membership", NewGetter(st, nil, GetterOptions{ChunkBytes: testChunk}), base, testChunk},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := st.total()
			if _, err := tt.g.GetRange(context.Background(), key, tt.offset, tt.length); err != nil {
				t.Fatal(err)
			}
			if st.total() != before+1 {
				t.Fatal("the store was not read")
			}
		})
	}
	if n := peer.requests(); n != 0 {
		t.Fatalf("the owner was asked %d times", n)
	}
}

// TestOwnerLeaves: when the owner of a chunk stops, a broker reading it
// gets it from the store at once (no errors) and, once the registry drops
// the owner, from the chunk's new owner.
func TestOwnerLeaves(t *testing.T) {
	st := newStore()
	const key = "wal/0190-obj"
	const size = 64 * testChunk
	data := st.add(t, key, size)
	l := &lister{}
	bs := []*broker{
		startBroker(t, 1, "a", st, l, GetterOptions{}),
		startBroker(t, 2, "a", st, l, GetterOptions{}),
		startBroker(t, 3, "a", st, l, GetterOptions{}),
	}
	refreshAll(t, bs...)
	idx := chunkOwnedBy(t, bs[0].members, key, 3)
	bs[2].srv.Close()

	if got, err := bs[0].cache.GetRange(context.Background(), key, size, idx*testChunk, testChunk); err != nil || !bytes.Equal(got, data[idx*testChunk:(idx+1)*testChunk]) {
		t.Fatalf("read with the owner down: %v", err)
	}
	if got := bs[0].metrics.loads(t, SourcePeerFallback); got != 1 {
		t.Fatalf("%d fallbacks, want 1", got)
	}

	// The registry forgets broker 3: its chunks move to 1 and 2. Broker 1
	// reads another one that went to 2 from 2.
	before := view(t, bs[0].info, []coordapi.BrokerInfo{bs[0].info, bs[1].info, bs[2].info})
	l.set([]coordapi.BrokerInfo{bs[0].info, bs[1].info}, nil)
	refreshAll(t, bs[:2]...)
	moved := int64(-1)
	for i := range int64(objectChunks) {
		was, _ := before.Owner(key, i)
		now, _ := bs[0].members.Owner(key, i)
		if now.NodeID == 3 {
			t.Fatalf("chunk %d stayed with the broker that left", i)
		}
		if was.NodeID == 3 && now.NodeID == 2 && moved < 0 && i != idx { // idx is in broker 1's cache
			moved = i
		}
	}
	if moved < 0 {
		t.Fatal("none of broker 3's chunks moved to broker 2")
	}
	if got, err := bs[0].cache.GetRange(context.Background(), key, size, moved*testChunk, testChunk); err != nil || !bytes.Equal(got, data[moved*testChunk:(moved+1)*testChunk]) {
		t.Fatalf("read from the new owner: %v", err)
	}
	if got := bs[0].metrics.loads(t, SourcePeer); got != 1 {
		t.Fatalf("%d loads from a peer, want 1", got)
	}
	if got := bs[1].metrics.sum(t, "floe.zone.peer_served"); got != 1 {
		t.Fatalf("broker 2 served %d chunks, want 1", got)
	}
}
