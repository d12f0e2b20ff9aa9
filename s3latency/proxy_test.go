package s3latency

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// upstream is a fake S3 API that records what it received.
type upstream struct {
	srv  *httptest.Server
	got  chan *http.Request
	body chan []byte
}

func newUpstream(t *testing.T, respond func(w http.ResponseWriter, r *http.Request)) *upstream {
	u := &upstream{got: make(chan *http.Request, 16), body: make(chan []byte, 16)}
	u.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		u.got <- r
		u.body <- b
		respond(w, r)
	}))
	t.Cleanup(u.srv.Close)
	return u
}

func listen(t *testing.T, opts Options) *Server {
	t.Helper()
	s, err := Listen("127.0.0.1:0", opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// fixed is a profile whose every latency is d, so that a test can check
// lower bounds that cannot flake.
func fixed(d time.Duration, throughput float64) Profile {
	c := Dist{P50: d, P99: d}
	return Profile{Name: "fixed", FirstByte: c, PutSmall: c, PutLarge: c, ThroughputMin: throughput, ThroughputMax: throughput}
}

// TestForwardsUnchanged: method, path, query, headers (Host included: SigV4
// signs it) and body reach the upstream as the client sent them, and the
// upstream's answer reaches the client.
func TestForwardsUnchanged(t *testing.T) {
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("ETag", `"abc"`)
		w.WriteHeader(http.StatusOK)
		io.WriteString(w, "answer")
	})
	s := listen(t, Options{Upstream: up.srv.URL, Profile: fixed(time.Millisecond, 0)})
	req, _ := http.NewRequest("PUT", s.URL+"/bucket/p/wal/k?x-id=PutObject", strings.NewReader("payload"))
	req.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential=...")
	req.Header.Set("X-Amz-Content-Sha256", "UNSIGNED-PAYLOAD")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != "answer" || resp.Header.Get("ETag") != `"abc"` {
		t.Errorf("answer %d %q etag %q", resp.StatusCode, body, resp.Header.Get("ETag"))
	}
	r, b := <-up.got, <-up.body
	want := strings.TrimPrefix(s.URL, "http://")
	switch {
	case r.Method != "PUT", r.URL.Path != "/bucket/p/wal/k", r.URL.RawQuery != "x-id=PutObject":
		t.Errorf("upstream got %s %s", r.Method, r.URL)
	case r.Host != want:
		t.Errorf("upstream Host = %q, want the proxy's %q", r.Host, want)
	case r.Header.Get("Authorization") == "" || r.Header.Get("X-Amz-Content-Sha256") != "UNSIGNED-PAYLOAD":
		t.Errorf("headers lost: %v", r.Header)
	case r.Header.Get("X-Forwarded-For") != "":
		t.Errorf("proxy added X-Forwarded-For")
	case string(b) != "payload":
		t.Errorf("upstream body %q", b)
	}
	st := s.Proxy.Stats()
	if st.Ops["put"].Requests != 1 || st.Ops["put"].Delay != time.Millisecond {
		t.Errorf("stats %+v", st)
	}
}

// TestDelays: each operation takes at least its drawn latency, and a GET's
// body at least its size over the throughput.
func TestDelays(t *testing.T) {
	big := bytes.Repeat([]byte("x"), 512<<10)
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Method == "GET" {
			w.Write(big)
		}
	})
	const lat = 40 * time.Millisecond
	const rate = 4 << 20 // 512 KiB takes 125 ms
	s := listen(t, Options{Upstream: up.srv.URL, Profile: fixed(lat, rate)})
	for _, tc := range []struct {
		method, path string
		min          time.Duration
	}{
		{"PUT", "/b/k/1", lat},
		{"HEAD", "/b/k/1", lat},
		{"DELETE", "/b/k/1", lat},
		{"GET", "/b?list-type=2", lat}, // a LIST answer is not throttled
		{"GET", "/b/k/1", lat + 125*time.Millisecond},
	} {
		start := time.Now()
		req, _ := http.NewRequest(tc.method, s.URL+tc.path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if took := time.Since(start); took < tc.min {
			t.Errorf("%s %s took %v, want at least %v", tc.method, tc.path, took, tc.min)
		}
	}
}

// TestSlowDown: a throttled PUT is answered as S3 answers it, and never
// reaches the upstream; the per-prefix rate lets a second's burst through.
func TestSlowDown(t *testing.T) {
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {})
	put := func(s *Server, path string) (int, string) {
		req, _ := http.NewRequest("PUT", s.URL+path, strings.NewReader(strings.Repeat("z", 300<<10)))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}

	always := Profile{Name: "always", SlowDownFraction: 1}
	s := listen(t, Options{Upstream: up.srv.URL, Profile: always})
	code, body := put(s, "/b/p/wal/1")
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "<Code>SlowDown</Code>") {
		t.Errorf("throttled PUT answered %d %q", code, body)
	}
	if len(up.got) != 0 {
		t.Error("a throttled PUT reached the upstream")
	}
	if s.Proxy.Stats().SlowDowns != 1 {
		t.Errorf("slowdowns = %d", s.Proxy.Stats().SlowDowns)
	}

	rated := Profile{Name: "rated", SlowDownPutRate: 3}
	s = listen(t, Options{Upstream: up.srv.URL, Profile: rated})
	var codes []int
	for range 4 {
		code, _ := put(s, "/b/p/wal/x")
		codes = append(codes, code)
	}
	if codes[0] != 200 || codes[3] != http.StatusServiceUnavailable {
		t.Errorf("4 PUTs to one prefix at 3/s answered %v: want the burst of 3 through, then 503", codes)
	}
	if code, _ := put(s, "/b/other/x"); code != 200 {
		t.Errorf("a PUT to another prefix answered %d", code)
	}
}

// TestClientGivesUp: a request whose client leaves stops waiting, so a
// hedged request's loser holds nothing.
func TestClientGivesUp(t *testing.T) {
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {})
	p, err := New(Options{Upstream: up.srv.URL, Profile: fixed(time.Hour, 0)})
	if err != nil {
		t.Fatal(err)
	}
	returned := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.ServeHTTP(w, r)
		close(returned)
	}))
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-up.got // forwarded: now waiting out its hour
		cancel()
	}()
	req, _ := http.NewRequestWithContext(ctx, "PUT", srv.URL+"/b/k/1", strings.NewReader("x"))
	if _, err := http.DefaultClient.Do(req); !errors.Is(err, context.Canceled) {
		t.Fatalf("request error %v, want canceled", err)
	}
	select {
	case <-returned:
	case <-time.After(10 * time.Second):
		t.Fatal("the proxy still waits for a request whose client left")
	}
}

func TestNewRejectsBadUpstream(t *testing.T) {
	for _, u := range []string{"", "127.0.0.1:9000", "ftp://x"} {
		if _, err := New(Options{Upstream: u}); err == nil {
			t.Errorf("New(%q) succeeded", u)
		}
	}
}
