package floetest

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/floe-io/floe/internal/testkit"
)

var build struct {
	once sync.Once
	dir  string
	err  error
}

// Binary builds ./cmd/<name> of this module once per test process and
// returns its path.
func Binary(t testing.TB, name string) string {
	t.Helper()
	build.once.Do(func() {
		build.dir, build.err = os.MkdirTemp("", "floe-bin-")
	})
	if build.err != nil {
		t.Fatalf("temp dir for binaries: %v", build.err)
	}
	path := filepath.Join(build.dir, name)
	if _, err := os.Stat(path); err == nil {
		return path
	}
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "build", "-o", path, "./cmd/"+name)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/%s: %v\n%s", name, err, out)
	}
	return path
}

func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod above the working directory")
		}
		dir = parent
	}
}

// Process is a floe binary running for a test.
type Process struct {
	t    testing.TB
	name string
	cmd  *exec.Cmd
	out  *testkit.Buffer
	done chan struct{}
	// KafkaAddr is a broker's Kafka listener ("" for a coordinator).
	KafkaAddr string
	HTTPAddr  string
}

// StartBroker runs the broker binary with args plus free --kafka-addr and
// --http-addr, and env added to the test's environment, and waits until
// /healthz answers. It is killed at cleanup if still running. Pass
// "--nats-url", url in args to make it a broker of a cluster whose
// coordinator runs as a process (StartCoordinator).
func StartBroker(t testing.TB, env []string, args ...string) *Process {
	t.Helper()
	return StartBrokerBinary(t, Binary(t, "broker"), env, args...)
}

// StartBrokerBinary is StartBroker running bin, a broker binary built
// elsewhere (another commit's, to compare with).
func StartBrokerBinary(t testing.TB, bin string, env []string, args ...string) *Process {
	t.Helper()
	var kafka string
	p := start(t, "broker", bin, env, args, func() []string {
		kafka = testkit.FreeAddr(t)
		return []string{"--kafka-addr", kafka}
	})
	p.KafkaAddr = kafka
	return p
}

// StartCoordinator runs the coordinator binary with args (--nats-url and
// --data-dir at least) plus a free --http-addr, and env added to the
// test's environment, and waits until /healthz answers OK (it is connected
// to NATS). It is killed at cleanup if still running.
func StartCoordinator(t testing.TB, env []string, args ...string) *Process {
	t.Helper()
	return start(t, "coordinator", Binary(t, "coordinator"), env, args, nil)
}

// start runs bin (the binary of ./cmd/<name>) with args plus a free
// --http-addr and the flags ports returns (free addresses it picks; nil for
// none), and waits until its /healthz answers 200. A port picked free can
// be taken by another process before bin binds it: a process that exits
// with "address already in use" is started again on new ports, at most
// three times in all.
func start(t testing.TB, name, bin string, env, args []string, ports func() []string) *Process {
	t.Helper()
	for attempt := 1; ; attempt++ {
		p, err := startOnce(t, name, bin, env, args, ports)
		if err == nil {
			return p
		}
		if attempt == 3 || !strings.Contains(p.out.String(), "address already in use") {
			t.Fatal(err)
		}
		t.Logf("%s could not bind a port picked for it; starting it again: %v", name, err)
	}
}

// startOnce is one attempt of start: the process, and an error when its
// /healthz did not answer 200 in 30s or it exited first.
func startOnce(t testing.TB, name, bin string, env, args []string, ports func() []string) (*Process, error) {
	t.Helper()
	p := &Process{t: t, name: name, HTTPAddr: testkit.FreeAddr(t), out: new(testkit.Buffer), done: make(chan struct{})}
	flags := []string{"--http-addr", p.HTTPAddr}
	if ports != nil {
		flags = append(flags, ports()...)
	}
	p.cmd = exec.Command(bin, append(flags, args...)...)
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	if os.Getenv("FLOE_TEST_LOG") == "1" {
		p.cmd.Stdout, p.cmd.Stderr = os.Stderr, os.Stderr
	}
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	go func() { p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		p.Kill()
		if t.Failed() {
			p.logProblems()
		}
	})
	err := testkit.Poll(30*time.Second, 20*time.Millisecond, func() error {
		select {
		case <-p.done:
			return fmt.Errorf("%s exited: %s", name, p.out)
		default:
		}
		resp, err := http.Get("http://" + p.HTTPAddr + "/healthz")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s /healthz: %s", name, resp.Status)
		}
		return nil
	})
	if err != nil {
		p.Kill()
	}
	return p, err
}

// Stop sends SIGTERM and waits for a graceful exit.
func (p *Process) Stop() {
	p.t.Helper()
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(60 * time.Second):
		p.t.Errorf("%s did not stop within 60s; killing.\n%s", p.name, p.out)
		p.Kill()
	}
}

// Signal sends sig to the process: SIGSTOP and SIGCONT make a hung
// process and bring it back.
func (p *Process) Signal(sig os.Signal) error { return p.cmd.Process.Signal(sig) }

// Exited is closed when the process has exited.
func (p *Process) Exited() <-chan struct{} { return p.done }

// Kill sends SIGKILL (a crash) and waits for the exit.
func (p *Process) Kill() {
	select {
	case <-p.done:
		return
	default:
	}
	p.cmd.Process.Kill()
	<-p.done
}

// logProblems logs the process's warnings and errors (at most the last
// maxProblemLines), so that a failed test, on CI too, shows what its
// processes reported.
func (p *Process) logProblems() {
	var lines []string
	for l := range strings.SplitSeq(p.out.String(), "\n") {
		if strings.Contains(l, "level=WARN") || strings.Contains(l, "level=ERROR") {
			lines = append(lines, l)
		}
	}
	if len(lines) == 0 {
		return
	}
	if n := len(lines); n > maxProblemLines {
		lines = lines[n-maxProblemLines:]
	}
	p.t.Logf("%s warned or failed (last %d lines):\n%s", p.name, len(lines), strings.Join(lines, "\n"))
}

// maxProblemLines bounds the lines logProblems logs per process.
const maxProblemLines = 40

// Output returns what the process printed (when not streaming logs).
func (p *Process) Output() string { return p.out.String() }

// PID returns the process id, for reading its /proc entries (peak RSS in
// benchmarks).
func (p *Process) PID() int { return p.cmd.Process.Pid }
