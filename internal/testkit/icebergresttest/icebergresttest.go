// Package icebergresttest runs Apache Iceberg's reference REST catalog
// server for tests: the external catalog floe's tables commit to with
// --table-catalog-url. It is Iceberg's own code (a JdbcCatalog on SQLite
// behind Iceberg's RESTCatalogServlet, what the apache/iceberg-rest-fixture
// image serves), started by scripts/iceberg-rest-fixture.sh on 127.0.0.1
// and a free port:
//
//	srv := icebergresttest.Start(t, icebergresttest.Options{Warehouse: "file:///dir"})
//	// srv.URL is the catalog's base URI
//
// It needs Java 17+ and Maven (the first start fetches its classpath into
// ~/.cache/floe-iceberg-rest); without them the test is skipped, or fails
// when the environment variable CI is "true" (scripts/test.sh installs
// both). FLOE_TEST_LOG=1 copies the server's output to stderr.
package icebergresttest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Options configure the server.
type Options struct {
	// Warehouse is the catalog's warehouse URI (file:///dir or s3://...):
	// where tables created without a location go. Required.
	Warehouse string
	// Token, when set, makes the server refuse every request without
	// "Authorization: Bearer <Token>". Default: "", no check.
	Token string
}

// Server is a running catalog server.
type Server struct {
	// URL is the catalog's base URI: http://127.0.0.1:<port>.
	URL string

	cmd  *exec.Cmd
	logs *logBuffer
	done chan struct{}
}

// fetchTimeout bounds the first run's Maven download; startTimeout the
// JVM's start.
const (
	fetchTimeout = 10 * time.Minute
	startTimeout = 2 * time.Minute
)

// fetchOnce runs the script's fetch once per test process.
var fetchOnce struct {
	once sync.Once
	err  error
}

// Start runs the server until the test ends.
func Start(t testing.TB, opts Options) *Server {
	t.Helper()
	if opts.Warehouse == "" {
		t.Fatal("icebergresttest: Options.Warehouse is required")
	}
	unavailable := t.Skipf
	if os.Getenv("CI") == "true" {
		unavailable = t.Fatalf
	}
	for _, tool := range []string{"java", "mvn"} {
		if _, err := exec.LookPath(tool); err != nil {
			unavailable("icebergresttest: no %s on PATH (Java 17+ and Maven run Iceberg's reference REST catalog; scripts/test.sh installs them): %v", tool, err)
		}
	}
	script, err := findScript()
	if err != nil {
		t.Fatalf("icebergresttest: %v", err)
	}
	fetchOnce.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), fetchTimeout)
		defer cancel()
		out, err := exec.CommandContext(ctx, script, "fetch").CombinedOutput()
		if err != nil {
			fetchOnce.err = fmt.Errorf("%s fetch: %w\n%s", script, err, out)
		}
	})
	if fetchOnce.err != nil {
		t.Fatalf("icebergresttest: %v", fetchOnce.err)
	}

	s := &Server{logs: &logBuffer{}, done: make(chan struct{})}
	s.cmd = exec.Command(script, "run", opts.Warehouse, "0")
	s.cmd.Env = append(os.Environ(), "REST_TOKEN="+opts.Token,
		"CATALOG_URI=jdbc:sqlite:"+filepath.Join(t.TempDir(), "catalog.db"))
	// Its own process group, killed with the test process if that dies
	// without running its cleanups.
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	pr, pw := io.Pipe()
	s.cmd.Stdout, s.cmd.Stderr = pw, pw
	if err := s.cmd.Start(); err != nil {
		t.Fatalf("icebergresttest: start %s: %v", script, err)
	}
	go func() {
		_ = s.cmd.Wait()
		_ = pw.Close()
		close(s.done)
	}()
	t.Cleanup(func() {
		s.Stop()
		if t.Failed() {
			t.Logf("icebergresttest: server output:\n%s", s.logs.String())
		}
	})

	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			line := sc.Text()
			s.logs.add(line)
			if m := listening.FindStringSubmatch(line); m != nil {
				select {
				case ready <- m[1]:
				default:
				}
			}
		}
		_, _ = io.Copy(io.Discard, pr)
	}()
	select {
	case s.URL = <-ready:
	case <-s.done:
		t.Fatalf("icebergresttest: the server exited before serving:\n%s", s.logs.String())
	case <-time.After(startTimeout):
		t.Fatalf("icebergresttest: the server did not serve within %v:\n%s", startTimeout, s.logs.String())
	}
	return s
}

var listening = regexp.MustCompile(`iceberg-rest-fixture listening on (http://127\.0\.0\.1:\d+)`)

// Stop kills the server and waits for it to exit.
func (s *Server) Stop() {
	if s.cmd.Process != nil {
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
	}
	<-s.done
}

// findScript finds scripts/iceberg-rest-fixture.sh in the working
// directory or a parent (go test runs in the package's directory).
func findScript() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		p := filepath.Join(dir, "scripts", "iceberg-rest-fixture.sh")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("scripts/iceberg-rest-fixture.sh not found above the working directory")
		}
		dir = parent
	}
}

// logBuffer keeps the server's output, copied to stderr with
// FLOE_TEST_LOG=1.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) add(line string) {
	if os.Getenv("FLOE_TEST_LOG") == "1" {
		fmt.Fprintln(os.Stderr, "iceberg-rest:", line)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf.WriteString(line)
	l.buf.WriteByte('\n')
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}
