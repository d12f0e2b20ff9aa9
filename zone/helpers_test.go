package zone

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/floe-io/floe/cache"
	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/internal/testkit"
	"github.com/floe-io/floe/objectstore"
)

// testChunk is the chunk size of the tests' caches.
const testChunk = 1024

// lister is a BrokerLister whose answer the test sets.
type lister struct {
	mu      sync.Mutex
	brokers []coordapi.BrokerInfo
	err     error
}

func (l *lister) ListBrokers(context.Context) ([]coordapi.BrokerInfo, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return nil, l.err
	}
	return append([]coordapi.BrokerInfo(nil), l.brokers...), nil
}

func (l *lister) set(bs []coordapi.BrokerInfo, err error) {
	l.mu.Lock()
	l.brokers, l.err = bs, err
	l.mu.Unlock()
}

func (l *lister) add(b coordapi.BrokerInfo) {
	l.mu.Lock()
	l.brokers = append(l.brokers, b)
	l.mu.Unlock()
}

// store is an in-memory object store that counts GETs by key and offset
// and fails every GET of a key in broken.
type store struct {
	*objectstore.Memory
	mu     sync.Mutex
	gets   map[string]int // "key@offset"
	broken map[string]bool
}

func newStore() *store {
	return &store{Memory: objectstore.NewMemory(), gets: map[string]int{}, broken: map[string]bool{}}
}

// add stores a random object of size bytes under key and returns it.
func (s *store) add(t testing.TB, key string, size int) []byte {
	t.Helper()
	data := make([]byte, size)
	r := rand.New(rand.NewPCG(uint64(size), uint64(len(key))))
	for i := range data {
		data[i] = byte(r.Uint32())
	}
	if err := s.Put(context.Background(), key, data); err != nil {
		t.Fatal(err)
	}
	return data
}

var errBroken = errors.New("test store: broken")

func (s *store) GetRange(ctx context.Context, key string, offset, length int64) ([]byte, error) {
	s.mu.Lock()
	s.gets[key+"@"+strconv.FormatInt(offset, 10)]++
	broken := s.broken[key]
	s.mu.Unlock()
	if broken {
		return nil, fmt.Errorf("get %s: %w", key, errBroken)
	}
	return s.Memory.GetRange(ctx, key, offset, length)
}

// getsAt is how many GETs of key at offset the store served.
func (s *store) getsAt(key string, offset int64) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gets[key+"@"+strconv.FormatInt(offset, 10)]
}

// total is how many GETs the store served.
func (s *store) total() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	var n int
	for _, c := range s.gets {
		n += c
	}
	return n
}

// metrics is a meter provider whose counters a test reads.
type metrics struct {
	reader *sdkmetric.ManualReader
	mp     *sdkmetric.MeterProvider
}

func newMetrics(t testing.TB) *metrics {
	r := sdkmetric.NewManualReader()
	m := &metrics{reader: r, mp: sdkmetric.NewMeterProvider(sdkmetric.WithReader(r))}
	t.Cleanup(func() { m.mp.Shutdown(context.Background()) })
	return m
}

// sum returns counter name's total over the points that carry attrs.
func (m *metrics) sum(t testing.TB, name string, attrs ...attribute.KeyValue) int64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := m.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, sm := range rm.ScopeMetrics {
		for _, mt := range sm.Metrics {
			if mt.Name != name {
				continue
			}
			sum, ok := mt.Data.(metricdata.Sum[int64])
			if !ok {
				t.Fatalf("metric %s is a %T", name, mt.Data)
			}
		points:
			for _, dp := range sum.DataPoints {
				for _, a := range attrs {
					if v, ok := dp.Attributes.Value(a.Key); !ok || v != a.Value {
						continue points
					}
				}
				n += dp.Value
			}
		}
	}
	return n
}

// loads returns the chunk loads counted with source.
func (m *metrics) loads(t testing.TB, source string) int64 {
	t.Helper()
	return m.sum(t, "floe.cache.chunk_loads", attribute.String("source", source))
}

// broker is one broker of a test zone: a cache over a Getter over the
// shared store, and the chunk handler on an HTTP server on 127.0.0.1.
type broker struct {
	info    coordapi.BrokerInfo
	members *Membership
	getter  *Getter
	cache   *cache.Cache
	srv     *httptest.Server
	metrics *metrics
}

// startBroker starts broker id of rack over st and adds it to l. Its
// membership is refreshed by the test (refreshAll), not in the background.
func startBroker(t *testing.T, id int32, rack string, st cache.Getter, l *lister, gopts GetterOptions) *broker {
	t.Helper()
	mux := http.NewServeMux()
	b := &broker{srv: httptest.NewServer(mux), metrics: newMetrics(t)}
	t.Cleanup(b.srv.Close)
	b.info = coordapi.BrokerInfo{NodeID: id, Host: "127.0.0.1", Port: 9000 + id, Rack: rack, InternalAddr: b.srv.Listener.Addr().String()}
	b.members = NewMembership(b.info, l, MembershipOptions{Logger: testkit.Logger()})
	gopts.ChunkBytes, gopts.Meter, gopts.Logger = testChunk, b.metrics.mp.Meter("zone"), testkit.Logger()
	b.getter = NewGetter(st, b.members, gopts)
	t.Cleanup(b.getter.Close)
	c, err := cache.New(b.getter, cache.Options{ChunkBytes: testChunk, MaxBytes: 256 * testChunk, Logger: testkit.Logger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	b.cache = c
	mux.Handle("GET "+ChunkPath, NewHandler(c.GetChunk, HandlerOptions{
		ChunkBytes: testChunk,
		Prefixes:   []string{"wal/", "tiered/"},
		Meter:      b.metrics.mp.Meter("zone"),
		Logger:     testkit.Logger(),
	}))
	l.add(b.info)
	return b
}

func refreshAll(t *testing.T, bs ...*broker) {
	t.Helper()
	for _, b := range bs {
		if err := b.members.Refresh(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
}

// fakePeer is a broker of the zone that answers chunk requests with
// handler, counting them.
type fakePeer struct {
	info coordapi.BrokerInfo
	mu   sync.Mutex
	reqs int
}

func (p *fakePeer) requests() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.reqs
}

// startFakePeer starts a peer of node id in rack whose chunk requests
// handler answers; a nil handler leaves nothing listening at its address.
func startFakePeer(t *testing.T, id int32, rack string, handler http.HandlerFunc) *fakePeer {
	t.Helper()
	p := &fakePeer{}
	addr := testkit.FreeAddr(t) // nothing listens here unless a server does
	if handler != nil {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			p.mu.Lock()
			p.reqs++
			p.mu.Unlock()
			handler(w, r)
		}))
		t.Cleanup(srv.Close)
		addr = srv.Listener.Addr().String()
	}
	host, port, _ := net.SplitHostPort(addr)
	pn, _ := strconv.Atoi(port)
	p.info = coordapi.BrokerInfo{NodeID: id, Host: host, Port: int32(pn), Rack: rack, InternalAddr: addr}
	return p
}

// chunkOwnedBy returns the first chunk index of key, from 0, that m says
// node owns.
func chunkOwnedBy(t testing.TB, m *Membership, key string, node int32) int64 {
	t.Helper()
	for idx := int64(0); idx < 1000; idx++ {
		if o, _ := m.Owner(key, idx); o.NodeID == node {
			return idx
		}
	}
	t.Fatalf("broker %d owns no chunk of %s", node, key)
	return 0
}
