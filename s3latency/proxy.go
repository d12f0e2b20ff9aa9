package s3latency

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"
)

// Options configure a Proxy.
type Options struct {
	// Upstream is the S3 API's base URL, e.g. "http://127.0.0.1:9000".
	// Required.
	Upstream string
	// Profile is the latency to add. Default: none.
	Profile Profile
	// Seed makes the draws repeatable. Default: 0, a random seed.
	Seed uint64
	// Transport reaches the upstream. Default: a transport of its own
	// that keeps enough idle connections for parallel clients.
	Transport http.RoundTripper
}

// Proxy is an http.Handler that forwards S3 requests to an upstream after
// the latency its profile draws for each; see the package doc.
type Proxy struct {
	profile Profile
	rp      *httputil.ReverseProxy

	mu struct {
		sync.Mutex
		rng     *rand.Rand
		buckets map[string]*rate.Limiter // SlowDown's per-prefix PUT rate
	}

	ops       [numOps]opCounters
	slowDowns atomic.Int64
	tails     atomic.Int64
}

type opCounters struct {
	requests atomic.Int64
	delay    atomic.Int64 // nanoseconds drawn, before the upstream's own time
}

// New returns a proxy to opts.Upstream.
func New(opts Options) (*Proxy, error) {
	u, err := url.Parse(opts.Upstream)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("s3latency: upstream %q must be an http:// or https:// URL", opts.Upstream)
	}
	seed := opts.Seed
	if seed == 0 {
		seed = rand.Uint64()
	}
	tr := opts.Transport
	if tr == nil {
		tr = &http.Transport{
			Proxy:               nil,
			DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			MaxIdleConns:        1024,
			MaxIdleConnsPerHost: 256,
			IdleConnTimeout:     90 * time.Second,
			DisableCompression:  true,
		}
	}
	p := &Proxy{profile: opts.Profile}
	p.mu.rng = rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	p.mu.buckets = make(map[string]*rate.Limiter)
	p.rp = &httputil.ReverseProxy{
		// Rewrite, not SetURL: the Host header stays the one the client
		// signed, and no X-Forwarded headers are added.
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL.Scheme = u.Scheme
			pr.Out.URL.Host = u.Host
		},
		Transport:     &delayTransport{base: tr},
		FlushInterval: -1, // a throttled GET body reaches the client as it is read
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if errors.Is(err, context.Canceled) || r.Context().Err() != nil {
				return // the client left; nobody to answer
			}
			http.Error(w, "s3latency: upstream: "+err.Error(), http.StatusBadGateway)
		},
	}
	return p, nil
}

// plan is what the proxy decided for one request.
type plan struct {
	op         Op
	start      time.Time
	latency    time.Duration // from start to the answer's (first) byte
	throughput float64       // bytes/s for a GET's body; 0 unbounded
	slowDown   bool
}

type planKey struct{}

// ServeHTTP draws the request's latency and forwards it.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	pl := p.plan(r)
	if pl.slowDown {
		p.slowDowns.Add(1)
		// Read the body, so that the client sees the answer rather than a
		// connection closed under its upload.
		io.Copy(io.Discard, r.Body)
		if sleepUntil(r.Context(), pl.start.Add(pl.latency)) != nil {
			return
		}
		writeSlowDown(w)
		return
	}
	p.rp.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), planKey{}, pl)))
}

// plan classifies r and draws its latency, throughput and fate.
func (p *Proxy) plan(r *http.Request) *plan {
	op, size := Classify(r)
	pl := &plan{op: op, start: time.Now()}
	if p.profile.zero() {
		p.ops[op].requests.Add(1)
		return pl
	}
	prof := &p.profile
	p.mu.Lock()
	rng := p.mu.rng
	if prof.ThroughputMax > 0 {
		pl.throughput = prof.ThroughputMin + rng.Float64()*(prof.ThroughputMax-prof.ThroughputMin)
	}
	switch op {
	case OpPut, OpPart, OpMultipart:
		var d Dist
		if op == OpMultipart {
			d = prof.PutSmall
		} else {
			d = prof.Put(size)
		}
		pl.latency = d.Sample(rng)
		if size > LargeBytes && pl.throughput > 0 {
			pl.latency += time.Duration(float64(size-LargeBytes) / pl.throughput * float64(time.Second))
		}
		if op != OpMultipart && p.throttledLocked(prefixOf(r.URL.Path), pl.start, rng) {
			pl.slowDown = true
			pl.latency = prof.FirstByte.Sample(rng)
		}
	default:
		pl.latency = prof.FirstByte.Sample(rng)
	}
	if prof.TailFraction > 0 && rng.Float64() < prof.TailFraction {
		pl.latency += prof.TailMin + time.Duration(rng.Float64()*float64(prof.TailMax-prof.TailMin))
		p.tails.Add(1)
	}
	p.mu.Unlock()
	p.ops[op].requests.Add(1)
	p.ops[op].delay.Add(int64(pl.latency))
	return pl
}

// throttledLocked reports whether a PUT to prefix at now is answered 503
// SlowDown: past the prefix's rate, or by chance. p.mu must be held.
func (p *Proxy) throttledLocked(prefix string, now time.Time, rng *rand.Rand) bool {
	prof := &p.profile
	if prof.SlowDownFraction > 0 && rng.Float64() < prof.SlowDownFraction {
		return true
	}
	if prof.SlowDownPutRate <= 0 {
		return false
	}
	b := p.mu.buckets[prefix]
	if b == nil {
		// A second's burst.
		b = rate.NewLimiter(rate.Limit(prof.SlowDownPutRate), max(1, int(prof.SlowDownPutRate)))
		p.mu.buckets[prefix] = b
	}
	return !b.AllowN(now, 1)
}

// writeSlowDown answers as S3 does when it throttles a prefix.
func writeSlowDown(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/xml")
	w.Header().Set("Retry-After", "1")
	w.WriteHeader(http.StatusServiceUnavailable)
	io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?>`+
		`<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message>`+
		`<RequestId>s3latency</RequestId><HostId>s3latency</HostId></Error>`)
}

// delayTransport forwards a request, then holds the answer until the
// request's planned latency has passed, and streams a GET's body at its
// planned throughput.
type delayTransport struct {
	base http.RoundTripper
}

func (t *delayTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	pl, _ := req.Context().Value(planKey{}).(*plan)
	resp, err := t.base.RoundTrip(req)
	if err != nil || pl == nil {
		return resp, err
	}
	if err := sleepUntil(req.Context(), pl.start.Add(pl.latency)); err != nil {
		resp.Body.Close()
		return nil, err
	}
	if pl.op == OpGet && pl.throughput > 0 && resp.Body != nil {
		resp.Body = &throttledBody{rc: resp.Body, ctx: req.Context(), rate: pl.throughput, start: time.Now()}
	}
	return resp, nil
}

// throttledBody reads no faster than rate bytes a second from start.
type throttledBody struct {
	rc    io.ReadCloser
	ctx   context.Context
	rate  float64
	start time.Time
	n     int64
}

// throttleChunk bounds one read, so that the pace is smooth.
const throttleChunk = 64 << 10

func (b *throttledBody) Read(p []byte) (int, error) {
	if len(p) > throttleChunk {
		p = p[:throttleChunk]
	}
	n, err := b.rc.Read(p)
	b.n += int64(n)
	due := b.start.Add(time.Duration(float64(b.n) / b.rate * float64(time.Second)))
	if serr := sleepUntil(b.ctx, due); serr != nil && err == nil {
		err = serr
	}
	return n, err
}

func (b *throttledBody) Close() error { return b.rc.Close() }

// sleepUntil waits until t or until ctx ends, whichever is first.
func sleepUntil(ctx context.Context, t time.Time) error {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err()
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// OpStats counts one operation's requests.
type OpStats struct {
	Requests int64
	// Delay is the latency drawn for them in all, the upstream's own time
	// counted within it.
	Delay time.Duration
}

// Stats is what a proxy has done so far.
type Stats struct {
	Ops       map[string]OpStats
	SlowDowns int64 // requests answered 503 SlowDown
	Tails     int64 // requests given the profile's tail delay
}

// Stats returns the counts so far.
func (p *Proxy) Stats() Stats {
	s := Stats{Ops: make(map[string]OpStats), SlowDowns: p.slowDowns.Load(), Tails: p.tails.Load()}
	for op := range numOps {
		c := &p.ops[op]
		if n := c.requests.Load(); n > 0 {
			s.Ops[op.String()] = OpStats{Requests: n, Delay: time.Duration(c.delay.Load())}
		}
	}
	return s
}

// Server is a Proxy listening on a TCP address.
type Server struct {
	// URL is the proxy's base URL, to use as the S3 endpoint.
	URL string
	// Proxy serves the requests.
	Proxy *Proxy

	srv  *http.Server
	done chan struct{}
}

// Listen starts a proxy on addr ("127.0.0.1:0" picks a free port).
func Listen(addr string, opts Options) (*Server, error) {
	p, err := New(opts)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("s3latency: listen: %w", err)
	}
	s := &Server{
		URL:   "http://" + ln.Addr().String(),
		Proxy: p,
		srv:   &http.Server{Handler: p, ReadHeaderTimeout: 30 * time.Second},
		done:  make(chan struct{}),
	}
	go func() {
		defer close(s.done)
		s.srv.Serve(ln)
	}()
	return s, nil
}

// Close stops the listener and every request in flight.
func (s *Server) Close() error {
	err := s.srv.Close()
	<-s.done
	return err
}
