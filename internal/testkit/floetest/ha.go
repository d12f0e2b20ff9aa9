package floetest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/floe-io/floe/internal/testkit"
	"github.com/floe-io/floe/internal/testkit/miniotest"
	"github.com/floe-io/floe/internal/testkit/natstest"
)

// HAOptions configure RunHA.
type HAOptions struct {
	// Coordinators is how many coordinator processes run. Default: 3.
	Coordinators int
	// Brokers is how many broker processes start (node ids 1..n).
	Brokers int
	// LeaseTTL is the coordinators' --lease-ttl. Default: 2s.
	LeaseTTL time.Duration
	// CoordinatorArgs are extra flags of every coordinator process (e.g.
	// --snapshot-interval), kept across restarts.
	CoordinatorArgs []string
	// BrokerArgs are extra flags of every broker process.
	BrokerArgs []string
}

// HACluster is a floe cluster whose coordinator is highly available: a real
// MinIO, a 3-node JetStream cluster in the test process, several
// coordinator processes on it (one leads, the others stand by) with the
// log and lease replicated 3 times, and broker processes given every NATS
// URL. Everything is stopped at cleanup.
type HACluster struct {
	t testing.TB
	// NATS are the NATS cluster's servers; NATSURLs their client URLs,
	// comma-separated, as the processes are given them.
	NATS     []*server.Server
	NATSURLs string
	MinIO    *miniotest.Server
	// Env is the environment of the cluster's processes.
	Env []string
	// Coords are the coordinators, in the order started (ids coord-1...).
	Coords []*HACoordinator
	// Brokers are the broker processes started, in order.
	Brokers  []*Process
	LeaseTTL time.Duration

	opts HAOptions
}

// HACoordinator is one coordinator of an HACluster: its id and data dir
// stay the same across restarts.
type HACoordinator struct {
	c *HACluster
	// ID is its --coordinator-id; Dir its --data-dir.
	ID  string
	Dir string
	// Proc is the process last started.
	Proc *Process
}

// RunHA starts MinIO, a 3-node NATS cluster, opts.Coordinators coordinators
// (one after the other, each once its /healthz answers: the first leads)
// and opts.Brokers brokers.
func RunHA(t testing.TB, opts HAOptions) *HACluster {
	t.Helper()
	if opts.Coordinators <= 0 {
		opts.Coordinators = 3
	}
	if opts.LeaseTTL <= 0 {
		opts.LeaseTTL = 2 * time.Second
	}
	srvs := natstest.StartCluster(t, 3)
	c := &HACluster{t: t, NATS: srvs, NATSURLs: natstest.URLs(srvs), MinIO: miniotest.Start(t), LeaseTTL: opts.LeaseTTL, opts: opts}
	c.Env = []string{"AWS_ACCESS_KEY_ID=" + c.MinIO.AccessKey, "AWS_SECRET_ACCESS_KEY=" + c.MinIO.SecretKey}
	root := t.TempDir()
	for i := 1; i <= opts.Coordinators; i++ {
		hc := &HACoordinator{c: c, ID: fmt.Sprintf("coord-%d", i), Dir: filepath.Join(root, fmt.Sprintf("coord-%d", i))}
		c.Coords = append(c.Coords, hc)
		hc.Start()
		if i == 1 {
			c.WaitLeader(t, 30*time.Second)
		}
	}
	for id := 1; id <= opts.Brokers; id++ {
		c.AddBroker(id)
	}
	return c
}

// Start starts (or restarts, on the same data dir and id) the coordinator
// with extra flags, for this start only, and waits until its /healthz
// answers 200 (it leads or stands by).
func (hc *HACoordinator) Start(extra ...string) *Process {
	c := hc.c
	c.t.Helper()
	args := []string{"--nats-url", c.NATSURLs, "--cluster", ClusterName,
		"--data-dir", hc.Dir, "--broker-ttl", "3s", "--s3-bucket", c.MinIO.Bucket,
		"--s3-endpoint", c.MinIO.Endpoint, "--s3-region", c.MinIO.Region, "--s3-path-style",
		"--replicas", "3", "--lease-ttl", c.LeaseTTL.String(), "--coordinator-id", hc.ID}
	args = append(append(args, c.opts.CoordinatorArgs...), extra...)
	hc.Proc = StartCoordinator(c.t, c.Env, args...)
	return hc.Proc
}

// Running reports whether the coordinator's last process has not exited
// (it may be stopped with SIGSTOP).
func (hc *HACoordinator) Running() bool {
	if hc.Proc == nil {
		return false
	}
	select {
	case <-hc.Proc.Exited():
		return false
	default:
		return true
	}
}

// Wipe removes the coordinator's data dir (its replica), which must not be
// in use, and leaves it empty.
func (hc *HACoordinator) Wipe() error {
	if hc.Running() {
		return fmt.Errorf("%s is running", hc.ID)
	}
	if err := os.RemoveAll(hc.Dir); err != nil {
		return err
	}
	return os.MkdirAll(hc.Dir, 0o755)
}

// Health is a coordinator's /healthz answer.
type Health struct {
	// Code is the HTTP status; Body the answer's text.
	Code int
	Body string
	// Role is "leader" or "standby" (with 200), else the 503 body.
	Role string
	// Leader is the lease holder a standby saw.
	Leader             string
	Term, Applied, Lag uint64
}

func (h Health) String() string { return fmt.Sprintf("%d %s", h.Code, h.Body) }

// ParseHealth parses a coordinator's /healthz body: "leader term=N
// applied=N" or "standby leader=<id> term=N applied=N lag=N".
func ParseHealth(code int, body string) Health {
	h := Health{Code: code, Body: strings.TrimSpace(body)}
	fields := strings.Fields(h.Body)
	if len(fields) == 0 {
		return h
	}
	h.Role = fields[0]
	for _, f := range fields[1:] {
		k, v, _ := strings.Cut(f, "=")
		n, _ := strconv.ParseUint(v, 10, 64)
		switch k {
		case "leader":
			h.Leader = v
		case "term":
			h.Term = n
		case "applied":
			h.Applied = n
		case "lag":
			h.Lag = n
		}
	}
	return h
}

var healthClient = &http.Client{Timeout: time.Second}

// Health asks the coordinator's /healthz; an error when it does not answer
// within a second (it is down or stopped).
func (hc *HACoordinator) Health() (Health, error) {
	if hc.Proc == nil {
		return Health{}, fmt.Errorf("%s never started", hc.ID)
	}
	if !hc.Running() {
		return Health{}, fmt.Errorf("%s exited", hc.ID)
	}
	resp, err := healthClient.Get("http://" + hc.Proc.HTTPAddr + "/healthz")
	if err != nil {
		return Health{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return Health{}, err
	}
	return ParseHealth(resp.StatusCode, string(b)), nil
}

// IsLeader reports whether the coordinator's /healthz says it leads.
func (hc *HACoordinator) IsLeader() bool {
	h, err := hc.Health()
	return err == nil && h.Code == http.StatusOK && h.Role == "leader"
}

// WaitRole waits until the coordinator's /healthz says role ("leader" or
// "standby") and returns that answer.
func (hc *HACoordinator) WaitRole(t testing.TB, role string, within time.Duration) Health {
	t.Helper()
	var h Health
	testkit.CheckFor(t, within, 20*time.Millisecond, func() error {
		var err error
		if h, err = hc.Health(); err != nil {
			return fmt.Errorf("%s: %w", hc.ID, err)
		}
		if h.Code != http.StatusOK || h.Role != role {
			return fmt.Errorf("%s /healthz: %s, waiting for %s", hc.ID, h, role)
		}
		return nil
	})
	return h
}

// Leader returns the one running coordinator whose /healthz says it leads,
// and the answers of all of them (by id); an error unless exactly one
// does. Coordinators in except are not asked.
func (c *HACluster) Leader(except ...*HACoordinator) (*HACoordinator, map[string]string, error) {
	var leaders []*HACoordinator
	seen := map[string]string{}
	for _, hc := range c.Coords {
		skip := false
		for _, e := range except {
			skip = skip || e == hc
		}
		if skip || !hc.Running() {
			continue
		}
		h, err := hc.Health()
		if err != nil {
			seen[hc.ID] = err.Error()
			continue
		}
		seen[hc.ID] = h.String()
		if h.Code == http.StatusOK && h.Role == "leader" {
			leaders = append(leaders, hc)
		}
	}
	switch len(leaders) {
	case 1:
		return leaders[0], seen, nil
	case 0:
		return nil, seen, fmt.Errorf("no coordinator leads: %v", seen)
	default:
		return nil, seen, fmt.Errorf("%d coordinators say they lead: %v", len(leaders), seen)
	}
}

// WaitLeader waits until exactly one coordinator (not counting except)
// says it leads, and returns it.
func (c *HACluster) WaitLeader(t testing.TB, within time.Duration, except ...*HACoordinator) *HACoordinator {
	t.Helper()
	var leader *HACoordinator
	testkit.CheckFor(t, within, 20*time.Millisecond, func() error {
		var err error
		leader, _, err = c.Leader(except...)
		return err
	})
	return leader
}

// Standbys returns the running coordinators other than leader.
func (c *HACluster) Standbys(leader *HACoordinator) []*HACoordinator {
	var out []*HACoordinator
	for _, hc := range c.Coords {
		if hc != leader && hc.Running() {
			out = append(out, hc)
		}
	}
	return out
}

// AddBroker starts broker id on a fresh data dir, given every NATS URL,
// with extra flags args.
func (c *HACluster) AddBroker(id int, args ...string) *Process {
	c.t.Helper()
	all := []string{"--node-id", strconv.Itoa(id), "--nats-url", c.NATSURLs, "--cluster", ClusterName,
		"--data-dir", c.t.TempDir(), "--s3-bucket", c.MinIO.Bucket, "--s3-endpoint", c.MinIO.Endpoint,
		"--s3-region", c.MinIO.Region, "--s3-path-style", "--coordinator-timeout", "3s"}
	all = append(append(all, c.opts.BrokerArgs...), args...)
	b := StartBroker(c.t, c.Env, all...)
	c.Brokers = append(c.Brokers, b)
	return b
}

// KafkaAddrs returns the Kafka addresses of the brokers started.
func (c *HACluster) KafkaAddrs() []string {
	out := make([]string, len(c.Brokers))
	for i, b := range c.Brokers {
		out[i] = b.KafkaAddr
	}
	return out
}

// LogStream is the JetStream stream of the cluster's coordinator log.
const LogStream = ClusterName + "_coordlog"

// SnapshotManifests lists the keys of the snapshot manifests in the
// bucket (<seq>/manifest.json under coordinator/snapshots/), oldest first.
func (c *HACluster) SnapshotManifests(ctx context.Context) ([]string, error) {
	infos, err := c.MinIO.Store(c.t).List(ctx, "coordinator/snapshots/")
	if err != nil {
		return nil, err
	}
	var out []string
	for _, o := range infos {
		if strings.HasSuffix(o.Key, "/manifest.json") {
			out = append(out, o.Key)
		}
	}
	return out, nil
}

// CountLines returns how many lines of out contain s.
func CountLines(out, s string) int {
	n := 0
	for line := range strings.SplitSeq(out, "\n") {
		if strings.Contains(line, s) {
			n++
		}
	}
	return n
}

// Lines returns the lines of out that contain any of subs.
func Lines(out string, subs ...string) []string {
	var lines []string
	for line := range strings.SplitSeq(out, "\n") {
		for _, s := range subs {
			if strings.Contains(line, s) {
				lines = append(lines, line)
				break
			}
		}
	}
	return lines
}

// NATSServerOf returns the server of the cluster's NATS that process p is
// connected to (by matching p's TCP sockets, read from /proc, with the
// servers' client connections), nil when none is found. Linux only.
func (c *HACluster) NATSServerOf(p *Process) *server.Server {
	ports, err := localPorts(p.PID())
	if err != nil {
		return nil
	}
	for _, s := range c.NATS {
		if !s.Running() {
			continue
		}
		cz, err := s.Connz(&server.ConnzOptions{})
		if err != nil {
			continue
		}
		for _, ci := range cz.Conns {
			if ports[ci.Port] {
				return s
			}
		}
	}
	return nil
}

// localPorts returns the local ports of process pid's TCP sockets.
func localPorts(pid int) (map[int]bool, error) {
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return nil, err
	}
	inodes := map[string]bool{}
	for _, fd := range fds {
		l, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name()))
		if err == nil && strings.HasPrefix(l, "socket:[") {
			inodes[strings.TrimSuffix(strings.TrimPrefix(l, "socket:["), "]")] = true
		}
	}
	ports := map[int]bool{}
	for _, f := range []string{"tcp", "tcp6"} {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/net/%s", pid, f))
		if err != nil {
			continue
		}
		for line := range strings.SplitSeq(string(b), "\n") {
			// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
			fields := strings.Fields(line)
			if len(fields) < 10 || !inodes[fields[9]] {
				continue
			}
			_, hexPort, ok := strings.Cut(fields[1], ":")
			if !ok {
				continue
			}
			if port, err := strconv.ParseUint(hexPort, 16, 16); err == nil {
				ports[int(port)] = true
			}
		}
	}
	return ports, nil
}

// LogAudit is what AuditLog found in the coordinator log.
type LogAudit struct {
	// First and Last are the stream's first and last sequences read.
	First, Last uint64
	// Leaders are the leader entries, in log order.
	Leaders []LogLeader
	// Stale are the messages appended out of turn: under a term older
	// than the one of a leader entry before them (an earlier leader's
	// append that got in after a newer leader fenced the log), or under
	// the newest term but after such a message (its leader's append that
	// expected its own refused message before it).
	Stale []LogMessage
}

// LogLeader is a leader entry of the log.
type LogLeader struct {
	Seq, Term uint64
	ID        string
}

// LogMessage is a message of the log.
type LogMessage struct {
	Seq, Term, LeaderTerm uint64
	// Kind is its Floe-Db header.
	Kind string
	// AfterStale is set for a message of the newest term after a stale
	// one.
	AfterStale bool
}

func (m LogMessage) String() string {
	if m.AfterStale {
		return fmt.Sprintf("seq %d kind %s term %d after a stale message", m.Seq, m.Kind, m.Term)
	}
	return fmt.Sprintf("seq %d kind %s term %d after a leader entry of term %d", m.Seq, m.Kind, m.Term, m.LeaderTerm)
}

// AuditLog reads the whole coordinator log (the stream LogStream) and
// lists the messages appended out of turn (LogAudit.Stale): with a leader
// entry a new leader fences the log, and every later message must be its
// own (or a later leader's), each right after the one before it. Messages
// without a term header (Floe-Term) are not checked.
func (c *HACluster) AuditLog(ctx context.Context) (LogAudit, error) {
	var a LogAudit
	nc, err := nats.Connect(c.NATSURLs)
	if err != nil {
		return a, err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return a, err
	}
	stream, err := js.Stream(ctx, LogStream)
	if err != nil {
		return a, err
	}
	info, err := stream.Info(ctx)
	if err != nil {
		return a, err
	}
	a.First, a.Last = info.State.FirstSeq, info.State.LastSeq
	if info.State.Msgs == 0 {
		return a, nil
	}
	cons, err := stream.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{})
	if err != nil {
		return a, err
	}
	it, err := cons.Messages()
	if err != nil {
		return a, err
	}
	defer it.Stop()
	var leaderTerm uint64
	broken := false
	for {
		m, err := it.Next(jetstream.NextContext(ctx))
		if err != nil {
			return a, fmt.Errorf("read the log: %w", err)
		}
		meta, err := m.Metadata()
		if err != nil {
			return a, err
		}
		seq, h := meta.Sequence.Stream, m.Headers()
		kind := h.Get("Floe-Db")
		term, terr := strconv.ParseUint(h.Get("Floe-Term"), 10, 64)
		switch {
		case kind == "L":
			var l struct {
				Term uint64 `json:"term"`
				ID   string `json:"id"`
			}
			if err := json.Unmarshal(m.Data(), &l); err != nil {
				return a, fmt.Errorf("leader entry %d: %w", seq, err)
			}
			a.Leaders = append(a.Leaders, LogLeader{seq, l.Term, l.ID})
			if l.Term < leaderTerm {
				a.Stale = append(a.Stale, LogMessage{Seq: seq, Term: l.Term, LeaderTerm: leaderTerm, Kind: kind})
				broken = true
			} else {
				leaderTerm, broken = l.Term, false
			}
		case terr != nil:
		case term < leaderTerm:
			a.Stale = append(a.Stale, LogMessage{Seq: seq, Term: term, LeaderTerm: leaderTerm, Kind: kind})
			broken = true
		case broken:
			a.Stale = append(a.Stale, LogMessage{Seq: seq, Term: term, LeaderTerm: leaderTerm, Kind: kind, AfterStale: true})
		default:
			leaderTerm = max(leaderTerm, term)
		}
		if seq >= a.Last {
			return a, nil
		}
	}
}
