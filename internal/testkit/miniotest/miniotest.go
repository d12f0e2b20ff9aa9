// Package miniotest runs a real MinIO server for a test, so that code
// written against objectstore.Store is also tested against an S3 API.
//
//	srv := miniotest.Start(t) // skips without a minio binary (fails when CI=true)
//	store := srv.Store(t)     // *objectstore.S3 on srv.Bucket
//
// The binary is found through FLOE_MINIO_BIN, then $(go env GOBIN)/minio,
// $(go env GOPATH)/bin/minio, ~/.cache/floe-gobin/minio, and finally
// minio on PATH. Install it with
//
//	GOBIN=~/.cache/floe-gobin go install github.com/minio/minio@latest
//
// MinIO's output is kept in memory and printed only when the test fails,
// or streamed to stderr when FLOE_TEST_LOG=1.
//
// With FLOE_S3_PROFILE set to a profile of package s3latency (s3-standard,
// s3-express, slow-tail), every server's Endpoint is a latency proxy in
// front of MinIO, so that any test on MinIO runs at that S3's latency:
//
//	FLOE_S3_PROFILE=s3-standard go test ./e2e -run Crash
//
// StartProfile puts a given profile in front of one server.
package miniotest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/floe-io/floe/objectstore"
	"github.com/floe-io/floe/s3latency"
	"github.com/floe-io/floe/tlsconfig"
)

const (
	// startTimeout bounds how long Start waits for MinIO to serve requests.
	startTimeout = 30 * time.Second
	// stopTimeout bounds how long Stop waits for the killed process.
	stopTimeout = 10 * time.Second
	// startAttempts is how often Start retries when MinIO exits at once,
	// usually because another process took the port it was given.
	startAttempts = 3
)

// Server is a running MinIO server with one bucket, owned by a test.
type Server struct {
	// Endpoint is the S3 API's base URL, e.g. "http://127.0.0.1:40123":
	// the latency proxy's when the server runs behind a profile.
	Endpoint string
	// Upstream is MinIO's own base URL; Endpoint unless behind a profile.
	Upstream string
	// Proxy is the latency proxy in front of MinIO, or nil.
	Proxy *s3latency.Proxy
	// AccessKey and SecretKey are the root credentials.
	AccessKey string
	SecretKey string
	// Region is the region clients sign with.
	Region string
	// Bucket exists when Start returns.
	Bucket string
	// DataDir is where MinIO keeps its objects; removed after the test.
	DataDir string

	// TLS is set when the server serves HTTPS: CAFile verifies it.
	TLS *TLSFiles

	cmd      *exec.Cmd
	exited   chan struct{} // closed when cmd has been waited for
	logs     *logBuffer
	stopOnce sync.Once
}

// Start runs a MinIO server on free 127.0.0.1 ports with a fresh data
// directory, waits until it serves requests and creates its bucket. The
// server is killed when the test ends. Without a minio binary the test is
// skipped, or fails when the environment variable CI is "true" (CI must
// never skip these tests silently) or FLOE_MINIO_BIN names no executable.
func Start(t testing.TB) *Server {
	t.Helper()
	s := start(t, nil)
	if name := os.Getenv("FLOE_S3_PROFILE"); name != "" {
		prof, err := s3latency.Lookup(name)
		if err != nil {
			t.Fatalf("miniotest: FLOE_S3_PROFILE: %v", err)
		}
		s.behind(t, prof)
	}
	return s
}

// StartProfile is Start with the server behind a latency proxy drawing
// from prof, whatever FLOE_S3_PROFILE says.
func StartProfile(t testing.TB, prof s3latency.Profile) *Server {
	t.Helper()
	s := start(t, nil)
	s.behind(t, prof)
	return s
}

// behind puts a latency proxy for prof in front of the server: Endpoint
// becomes the proxy's. The proxy stops when the test ends, before MinIO.
func (s *Server) behind(t testing.TB, prof s3latency.Profile) {
	t.Helper()
	px, err := s3latency.Listen("127.0.0.1:0", s3latency.Options{Upstream: s.Upstream, Profile: prof})
	if err != nil {
		t.Fatalf("miniotest: %v", err)
	}
	t.Cleanup(func() { px.Close() })
	s.Endpoint, s.Proxy = px.URL, px.Proxy
	fmt.Fprintf(s.logs.writer(), "miniotest: %s behind s3latency profile %s at %s\n", s.Upstream, prof.Name, px.URL)
}

// TLSFiles make a server serve HTTPS: its certificate and key, and the
// CA bundle that verifies it (PEM files).
type TLSFiles struct {
	CertFile, KeyFile, CAFile string
}

// StartTLS is Start with MinIO serving HTTPS with tf's certificate.
func StartTLS(t testing.TB, tf TLSFiles) *Server {
	t.Helper()
	return start(t, &tf)
}

func start(t testing.TB, tf *TLSFiles) *Server {
	t.Helper()
	bin, err := findBinary()
	if err != nil {
		if os.Getenv("CI") == "true" || os.Getenv("FLOE_MINIO_BIN") != "" {
			t.Fatalf("miniotest: %v", err)
		}
		t.Skipf("miniotest: %v", err)
	}
	dataDir := t.TempDir() // removed after the Cleanup below has killed MinIO
	s := &Server{
		AccessKey: "floetest",
		SecretKey: "floetest-secret",
		Region:    "us-east-1",
		Bucket:    "floe-test",
		DataDir:   filepath.Join(dataDir, "data"),
		TLS:       tf,
		logs:      &logBuffer{},
	}
	if tf != nil {
		certs := filepath.Join(dataDir, "certs")
		for src, dst := range map[string]string{tf.CertFile: "public.crt", tf.KeyFile: "private.key", tf.CAFile: filepath.Join("CAs", "ca.crt")} {
			data, err := os.ReadFile(src)
			if err == nil {
				err = os.MkdirAll(filepath.Dir(filepath.Join(certs, dst)), 0o700)
			}
			if err == nil {
				err = os.WriteFile(filepath.Join(certs, dst), data, 0o600)
			}
			if err != nil {
				t.Fatalf("miniotest: certificates: %v", err)
			}
		}
	}
	t.Cleanup(func() {
		s.Stop()
		if t.Failed() && !logToStderr() {
			t.Logf("miniotest: minio output:\n%s", s.logs.String())
		}
	})

	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	for attempt := 1; ; attempt++ {
		err = s.start(ctx, bin, filepath.Join(dataDir, "certs"))
		if err == nil {
			break
		}
		s.Stop()
		if !errors.Is(err, errExited) || attempt == startAttempts {
			t.Fatalf("miniotest: start %s: %v\nminio output:\n%s", bin, err, s.logs.String())
		}
	}

	store := s.Store(t)
	err = retry(ctx, s.exited, func() error { return store.EnsureBucket(ctx) })
	if err != nil {
		t.Fatalf("miniotest: create bucket %s: %v\nminio output:\n%s", s.Bucket, err, s.logs.String())
	}
	return s
}

// errExited reports that MinIO exited before it became ready.
var errExited = errors.New("minio exited")

// start launches MinIO on two fresh ports and waits until it is live.
func (s *Server) start(ctx context.Context, bin, certsDir string) error {
	s.cmd, s.exited, s.stopOnce = nil, nil, sync.Once{}
	ports, err := freePorts(2)
	if err != nil {
		return err
	}
	addr := "127.0.0.1:" + strconv.Itoa(ports[0])
	s.Endpoint = "http://" + addr
	if s.TLS != nil {
		s.Endpoint = "https://" + addr
	}
	s.Upstream = s.Endpoint
	cmd := exec.Command(bin, "server",
		"--address", addr,
		"--console-address", "127.0.0.1:"+strconv.Itoa(ports[1]),
		"--certs-dir", certsDir,
		"--quiet",
		s.DataDir)
	cmd.Env = append(environWithoutMinio(),
		"MINIO_ROOT_USER="+s.AccessKey,
		"MINIO_ROOT_PASSWORD="+s.SecretKey,
		"MINIO_BROWSER=off",
		"MINIO_UPDATE=off",
	)
	out := s.logs.writer()
	cmd.Stdout, cmd.Stderr = out, out
	setProcAttr(cmd)
	fmt.Fprintf(out, "miniotest: %s\n", strings.Join(cmd.Args, " "))
	if err := cmd.Start(); err != nil {
		return err
	}
	s.cmd = cmd
	s.exited = make(chan struct{})
	go func() {
		err := cmd.Wait()
		fmt.Fprintf(out, "miniotest: minio exited: %v\n", err)
		close(s.exited)
	}()

	client := &http.Client{Timeout: time.Second}
	if s.TLS != nil {
		tc, err := tlsconfig.Client(tlsconfig.ClientFiles{CAFile: s.TLS.CAFile})
		if err != nil {
			return err
		}
		client.Transport = &http.Transport{TLSClientConfig: tc}
	}
	live := s.Endpoint + "/minio/health/live"
	return retry(ctx, s.exited, func() error {
		resp, err := client.Get(live)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET %s: %s", live, resp.Status)
		}
		return nil
	})
}

// Options returns the S3 options that reach the server's bucket.
func (s *Server) Options() objectstore.S3Options {
	return objectstore.S3Options{
		Bucket:    s.Bucket,
		Endpoint:  s.Endpoint,
		Region:    s.Region,
		PathStyle: true,
		AccessKey: s.AccessKey,
		SecretKey: s.SecretKey,
		TLS:       s.tlsClient(),
	}
}

func (s *Server) tlsClient() tlsconfig.ClientFiles {
	if s.TLS == nil {
		return tlsconfig.ClientFiles{}
	}
	return tlsconfig.ClientFiles{CAFile: s.TLS.CAFile}
}

// Store returns an S3 store on the server's bucket.
func (s *Server) Store(t testing.TB) *objectstore.S3 {
	t.Helper()
	store, err := objectstore.NewS3(context.Background(), s.Options())
	if err != nil {
		t.Fatalf("miniotest: %v", err)
	}
	return store
}

// PID is the MinIO server's process id, for reading what it spent
// (testkit.ProcessCPU).
func (s *Server) PID() int { return s.cmd.Process.Pid }

// Stop kills MinIO and waits for it to exit. It is safe to call more than
// once; Start arranges for it to run when the test ends.
func (s *Server) Stop() {
	s.stopOnce.Do(func() {
		if s.cmd == nil || s.cmd.Process == nil {
			return
		}
		killProcess(s.cmd)
		select {
		case <-s.exited:
		case <-time.After(stopTimeout):
			fmt.Fprintf(s.logs.writer(), "miniotest: minio pid %d did not exit within %v\n", s.cmd.Process.Pid, stopTimeout)
		}
	})
}

// retry calls fn every 50ms until it succeeds, ctx ends or exited is
// closed, and returns fn's last error with the reason it stopped.
func retry(ctx context.Context, exited <-chan struct{}, fn func() error) error {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		err := fn()
		if err == nil {
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("%w (last error: %v)", errExited, err)
		case <-ctx.Done():
			return fmt.Errorf("%w (last error: %v)", ctx.Err(), err)
		case <-tick.C:
		}
	}
}

// freePorts returns n distinct ports that were free on 127.0.0.1 a moment
// ago. Another process may take one before MinIO binds it; Start retries.
func freePorts(n int) ([]int, error) {
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("find free port: %w", err)
		}
		defer l.Close() // held until all are picked so they differ
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// environWithoutMinio returns the process environment minus MINIO_*
// variables, which could reconfigure the test server.
func environWithoutMinio() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "MINIO_") {
			env = append(env, kv)
		}
	}
	return env
}

// logToStderr reports whether FLOE_TEST_LOG asks for logs in tests.
func logToStderr() bool { return os.Getenv("FLOE_TEST_LOG") == "1" }
