package ha

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/coordinator"
	"github.com/floe-io/floe/coordinator/service"
)

// Defaults of Options.
const (
	DefaultLeaseTTL         = 5 * time.Second
	DefaultSnapshotInterval = 10 * time.Minute
	DefaultSnapshotsKept    = 2
)

// ErrNotLeader is answered by a coordinator that has stopped leading (its
// lease ran out, or its log fenced it) to requests it was still serving.
var ErrNotLeader = errors.New("ha: this coordinator is not the leader")

// Options configure a Node.
type Options struct {
	// Cluster is the cluster name: the log is stream <cluster>_coordlog on
	// subject <cluster>.coordlog, the lease bucket <cluster>_coordlease.
	Cluster string
	// ID names this coordinator in the lease; it must be unique among the
	// cluster's coordinators and stay the same across restarts, so that a
	// restarted leader takes its own lease back at once. Required.
	ID string
	// Addr is shown in the lease to say where the leader is (its HTTP
	// address). Optional.
	Addr string
	// Replicas is the replica count of the stream and the lease bucket:
	// 3 on a 3-node NATS cluster. Default: 1.
	Replicas int
	// LeaseTTL is how long a leader that stopped renewing keeps the lease:
	// the longest a failover waits. Default: 5s.
	LeaseTTL time.Duration
	// SnapshotInterval is how often the leader snapshots its state into
	// Snapshots and trims the log below the oldest snapshot kept.
	// Negative: never. Default: 10m.
	SnapshotInterval time.Duration
	// SnapshotsKept is how many snapshots are kept. Default: 2.
	SnapshotsKept int
	// Snapshots is where snapshots are kept, under
	// coordapi.SnapshotPrefix(SnapshotPrefix): "<prefix>/coordinator/snapshots/".
	// Snapshots that builds before it kept under "<prefix>coordinator/snapshots/"
	// (no separator) are still read, until a newer one is taken. Without it
	// the log is never trimmed and a wiped coordinator replays it whole.
	Snapshots SnapshotStore
	// SnapshotPrefix is the object key prefix (--s3-prefix).
	SnapshotPrefix string
	// Shard is the coordinator shard this node serves (--shard): shards
	// other than 0 keep their snapshots apart, under
	// coordapi.ShardSnapshotPrefix, as each has its own log. Default: 0.
	Shard int
	// Service is the coordinator service the leader runs: its
	// Coordinator.Dir and Groups.Dir hold the replica. Its Log and Gate
	// options are set by the node.
	Service service.Options
	// SyncState makes the leader sync every Pebble write, and a replica
	// whose state is ahead of the log's end (a log whose unsynced tail
	// was lost with the machine) resume the log from its state rather
	// than rebuild from the log. It is for a lone coordinator on an R1 log
	// that is not synced per message (the embedded default): Pebble keeps
	// the durability, at one fsync per write instead of JetStream's
	// dearer one. Never with standbys: their appends would not be there.
	SyncState bool
	// InflightMessages is how many messages of the log the leader has
	// awaiting the stream's acknowledgement before it groups the next
	// batches into one message, published at the next acknowledgement (see
	// the package doc). Negative: never grouped. Default:
	// DefaultInflightMessages. Not used with SyncState.
	InflightMessages int
	// Logger receives the node's logs. Default: Service.Logger.
	Logger *slog.Logger
	// Meters, when set, records the node's metrics (meter
	// "floe/coordinator/ha"). Default: Service.Meters.
	Meters service.Meters

	// testTail, when set, stands in for the stream a standby tails (its
	// OrderedConsumer), for tests of a tail that stops delivering.
	testTail func(jetstream.Stream) jetstream.Stream
}

// Role is what a node is doing.
type Role string

// The roles of a node.
const (
	RoleStarting Role = "starting"
	RoleStandby  Role = "standby"
	RoleLeader   Role = "leader"
)

// Status is a node's state, for /healthz and metrics.
type Status struct {
	Role Role `json:"role"`
	// Term is the leader's term (this node's when it leads).
	Term uint64 `json:"term"`
	// Leader is the lease holder's id, as last seen.
	Leader string `json:"leader"`
	// Applied is the log sequence applied up to; Lag how many messages
	// of the log a standby has not applied yet.
	Applied uint64 `json:"applied"`
	Lag     uint64 `json:"lag"`
	// SnapshotSeq and SnapshotTime describe the newest snapshot taken or
	// restored by this node.
	SnapshotSeq  uint64    `json:"snapshot_seq"`
	SnapshotTime time.Time `json:"snapshot_time"`
	// StreamMessages and StreamBytes are the log's size, as last seen.
	StreamMessages uint64 `json:"stream_messages"`
	StreamBytes    uint64 `json:"stream_bytes"`
	// Failovers counts the times this node took over.
	Failovers int64 `json:"failovers"`
	// Error is the error that last ended a role of this node, "" for none.
	Error string `json:"error,omitempty"`
}

// Node is one coordinator of a cluster: a standby applying the log until it
// takes the lease, then the leader serving the coordinator service until it
// loses it, and a standby again.
type Node struct {
	nc     *nats.Conn
	opts   Options
	log    *slog.Logger
	names  names
	cancel context.CancelFunc
	done   chan struct{}

	mu struct {
		sync.Mutex
		status Status
		svc    *service.Service
		w      *writer       // the leader's log writer
		leader chan struct{} // closed while leading
	}
	stopMetrics func()
}

// names are the JetStream names of a cluster's log and lease.
type names struct {
	stream, subject, bucket string
}

var badNameChars = regexp.MustCompile(`[^A-Za-z0-9_-]`)

func namesOf(cluster string) names {
	safe := badNameChars.ReplaceAllString(cluster, "_")
	return names{stream: safe + "_coordlog", subject: cluster + ".coordlog", bucket: safe + "_coordlease"}
}

// Start starts a node on nc; it runs until Close. It returns at once: the
// node sets up the stream and the bucket, and then takes its role, in the
// background (WaitLeader waits for the leader role).
func Start(nc *nats.Conn, opts Options) (*Node, error) {
	if opts.ID == "" {
		return nil, errors.New("ha: a coordinator id is required")
	}
	if opts.Service.Coordinator.Dir == "" {
		return nil, errors.New("ha: the coordinator's data dir is required")
	}
	if opts.Service.Groups.Dir == "" {
		opts.Service.Groups.Dir = filepath.Join(opts.Service.Coordinator.Dir, "groups")
	}
	if opts.Service.Cluster == "" {
		opts.Service.Cluster = "floe"
	}
	if opts.Cluster == "" {
		opts.Cluster = opts.Service.Cluster
	}
	if opts.Replicas <= 0 {
		opts.Replicas = 1
	}
	if opts.LeaseTTL <= 0 {
		opts.LeaseTTL = DefaultLeaseTTL
	}
	if opts.SnapshotInterval == 0 {
		opts.SnapshotInterval = DefaultSnapshotInterval
	}
	if opts.SnapshotsKept <= 0 {
		opts.SnapshotsKept = DefaultSnapshotsKept
	}
	if opts.InflightMessages == 0 {
		opts.InflightMessages = DefaultInflightMessages
	}
	if opts.Logger == nil {
		opts.Logger = opts.Service.Logger
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Service.Logger == nil {
		opts.Service.Logger = opts.Logger
	}
	if opts.Meters == nil {
		opts.Meters = opts.Service.Meters
	}
	ctx, cancel := context.WithCancel(context.Background())
	n := &Node{nc: nc, opts: opts, log: opts.Logger.With("component", "ha", "id", opts.ID), names: namesOf(opts.Cluster),
		cancel: cancel, done: make(chan struct{})}
	n.mu.status.Role = RoleStarting
	n.mu.leader = make(chan struct{})
	if opts.Meters != nil {
		stop, err := n.registerMetrics(opts.Meters.Meter("floe/coordinator/ha"))
		if err != nil {
			cancel()
			return nil, err
		}
		n.stopMetrics = stop
	}
	go func() {
		defer close(n.done)
		n.run(ctx)
	}()
	return n, nil
}

// Close stops the node: a leader stops serving and gives its lease up, so
// that a standby takes over at once.
func (n *Node) Close() error {
	n.cancel()
	<-n.done
	if n.stopMetrics != nil {
		n.stopMetrics()
	}
	return nil
}

// Status returns the node's state.
func (n *Node) Status() Status {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.mu.status
}

// Coordinator returns the coordinator while this node leads, else nil.
func (n *Node) Coordinator() *coordinator.Coordinator {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.mu.svc == nil {
		return nil
	}
	return n.mu.svc.Coordinator()
}

// Service returns the coordinator service while this node leads, else nil.
func (n *Node) Service() *service.Service {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.mu.svc
}

// Barrier returns once the log has every change this node's coordinator
// made so far, or an error when it does not lead: an answer computed in
// process (not through the rpc server, whose replies are gated) goes out
// only after it.
func (n *Node) Barrier() error {
	n.mu.Lock()
	w := n.mu.w
	n.mu.Unlock()
	if w == nil {
		return ErrNotLeader
	}
	return w.barrier()
}

// WaitLeader waits until this node leads (or ctx ends).
func (n *Node) WaitLeader(ctx context.Context) error {
	for {
		n.mu.Lock()
		ch, leading := n.mu.leader, n.mu.svc != nil
		n.mu.Unlock()
		if leading {
			return nil
		}
		select {
		case <-ch:
		case <-n.done:
			return errors.New("ha: node closed")
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (n *Node) setStatus(f func(*Status)) {
	n.mu.Lock()
	f(&n.mu.status)
	n.mu.Unlock()
}

// run is the node's life: set up, then standby and leader in turn.
func (n *Node) run(ctx context.Context) {
	js, stream, kv, err := n.setup(ctx)
	if err != nil {
		if ctx.Err() == nil {
			n.log.Error("coordinator log setup failed", "err", err)
		}
		return
	}
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		l := &lease{kv: kv, ttl: n.opts.LeaseTTL, me: leaseValue{ID: n.opts.ID, Addr: n.opts.Addr}}
		last, adopted, err := n.standby(ctx, stream, l)
		if err == nil {
			err = n.lead(ctx, js, stream, l, last, adopted)
		}
		if errors.Is(err, errGap) && ctx.Err() == nil {
			// The log was trimmed under a replica that had not restored
			// the snapshot it now needs (taken meanwhile): again at once.
			n.log.Info("the log moved past this replica; restoring", "err", err)
			continue
		}
		if errors.Is(err, errStalled) && ctx.Err() == nil {
			n.log.Warn("the log's tail stopped delivering; tailing it again", "err", err)
			continue
		}
		if err != nil && ctx.Err() == nil {
			n.log.Warn("coordinator role ended", "err", err)
			n.setStatus(func(s *Status) { s.Error = err.Error() })
			select {
			case <-ctx.Done():
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, 2*time.Second)
			continue
		}
		backoff = 100 * time.Millisecond
	}
}

// setup creates (or updates) the log stream and the lease bucket, retrying
// while the NATS cluster forms.
func (n *Node) setup(ctx context.Context) (jetstream.JetStream, jetstream.Stream, jetstream.KeyValue, error) {
	js, err := jetstream.New(n.nc)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("ha: jetstream: %w", err)
	}
	warned := time.Time{}
	for {
		stream, kv, err := n.trySetup(ctx, js)
		if err == nil {
			return js, stream, kv, nil
		}
		if errors.Is(err, jetstream.ErrJetStreamNotEnabled) || errors.Is(err, jetstream.ErrJetStreamNotEnabledForAccount) {
			return nil, nil, nil, fmt.Errorf("ha: the NATS server has no JetStream (start nats-server with -js): the coordinator keeps its log there: %w", err)
		}
		if time.Since(warned) > 5*time.Second {
			n.log.Warn("waiting for jetstream to set up the coordinator log", "err", err)
			warned = time.Now()
		}
		select {
		case <-ctx.Done():
			return nil, nil, nil, ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func (n *Node) trySetup(ctx context.Context, js jetstream.JetStream) (jetstream.Stream, jetstream.KeyValue, error) {
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	stream, err := js.CreateOrUpdateStream(sctx, jetstream.StreamConfig{
		Name:        n.names.stream,
		Description: "floe coordinator log: every change of the coordinator's state, in order",
		Subjects:    []string{n.names.subject},
		Retention:   jetstream.LimitsPolicy,
		Storage:     jetstream.FileStorage,
		Replicas:    n.opts.Replicas,
		MaxMsgs:     -1,
		MaxBytes:    -1,
		Discard:     jetstream.DiscardNew,
		DenyDelete:  true,
		AllowDirect: true,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("create stream %s: %w", n.names.stream, err)
	}
	kv, err := js.CreateOrUpdateKeyValue(sctx, jetstream.KeyValueConfig{
		Bucket:      n.names.bucket,
		Description: "floe coordinator leader lease",
		TTL:         n.opts.LeaseTTL,
		History:     1,
		Storage:     jetstream.FileStorage,
		Replicas:    n.opts.Replicas,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("create lease bucket %s: %w", n.names.bucket, err)
	}
	return stream, kv, nil
}

// pollInterval is how often a standby tries the lease.
func (n *Node) pollInterval() time.Duration {
	return min(n.opts.LeaseTTL/10, 250*time.Millisecond)
}

// openReplica opens the replica, restoring the newest snapshot when it is
// empty, behind the log's first message, or diverged from the log (a
// leader's last entries, applied before the log had them, never got in).
// adopted is set for a database of a build before the log (state, but no
// log position) on an empty log.
func (n *Node) openReplica(ctx context.Context, stream jetstream.Stream) (r *replica, adopted bool, err error) {
	copts := n.opts.Service
	info, err := stream.Info(ctx)
	if err != nil {
		return nil, false, fmt.Errorf("ha: stream info: %w", err)
	}
	first, last := info.State.FirstSeq, info.State.LastSeq
	restored, wiped := false, false
	for {
		if r, err = openReplica(copts.Coordinator.Dir, copts.Groups.Dir, n.log); err != nil {
			return nil, false, err
		}
		r.fromScratch = r.empty && !restored
		if !r.empty && !wiped {
			diverged, err := n.diverged(ctx, stream, r, first, last)
			if err != nil {
				r.close()
				return nil, false, err
			}
			if diverged {
				// Everything this replica has is in the log or a
				// snapshot but the entries that diverged: start over.
				r.close()
				n.log.Warn("this replica holds entries the log does not: rebuilding it from the snapshot and the log",
					"coordinator", r.applied[dbCoordinator], "groups", r.applied[dbGroups], "log_first", first, "log_last", last)
				if err := os.RemoveAll(copts.Groups.Dir); err != nil {
					return nil, false, fmt.Errorf("ha: wipe diverged replica: %w", err)
				}
				if err := os.RemoveAll(copts.Coordinator.Dir); err != nil {
					return nil, false, fmt.Errorf("ha: wipe diverged replica: %w", err)
				}
				wiped = true
				continue
			}
		}
		pos := r.position()
		behind := !r.empty && pos+1 < first
		// A wiped replica starts from the newest snapshot when there is
		// one; one behind the log's first message must.
		if (r.empty || behind) && !restored && n.opts.Snapshots != nil {
			m, err := n.snapshots().latest(ctx)
			switch {
			case err != nil && r.empty && first <= 1:
				// The log holds everything: the snapshot only saves a replay.
				n.log.Warn("cannot read the snapshots; replaying the whole log", "err", err)
			case err != nil:
				r.close()
				return nil, false, err
			case m != nil:
				r.close()
				n.log.Info("restoring the coordinator state from a snapshot", "seq", m.Seq, "term", m.Term)
				if err := n.snapshots().restore(ctx, m, copts.Coordinator.Dir, copts.Groups.Dir); err != nil {
					return nil, false, err
				}
				n.setStatus(func(s *Status) { s.SnapshotSeq, s.SnapshotTime = m.Seq, time.UnixMilli(m.Created) })
				restored = true
				continue
			}
		}
		switch {
		case r.empty && first > 1:
			r.close()
			return nil, false, fmt.Errorf("ha: this replica is empty, the log starts at %d and there is no snapshot to start from", first)
		case behind:
			r.close()
			return nil, false, fmt.Errorf("ha: the log starts at %d, after this replica's position %d, and no snapshot reaches it", first, pos)
		}
		_, stamped, _ := readApplied(r.coord)
		ahead := n.opts.SyncState && pos > last
		if ahead {
			n.log.Warn("the log ends before this replica's synced state (its unsynced tail was lost): resuming it from the state",
				"position", pos, "log_last", last)
		}
		return r, (!r.empty && !stamped && last == 0) || ahead, nil
	}
}

// diverged reports whether r holds an entry the log does not have, or has
// where replicas skip it: a database positioned past the log's end, or one
// whose entries since the log last acknowledged were not all appended in
// its term (another leader's, or a deposed one's, got in between, and the
// replicas skipped the rest of its term). A standby's position is what the
// log holds; a leader's is checked message by message from the last
// acknowledgement it had seen.
func (n *Node) diverged(ctx context.Context, stream jetstream.Stream, r *replica, first, last uint64) (bool, error) {
	for _, p := range r.applied {
		switch {
		case p.seq == 0 || p.seq < first:
			continue // nothing to compare: a snapshot decides
		case p.seq > last:
			// An empty log with state is adopted, and so is a log that
			// lost its tail under a synced state.
			return last > 0 && !n.opts.SyncState, nil
		}
		from := max(min(p.acked, p.seq-1), first-1) + 1
		if p.seq-from > maxUnackedCheck {
			return true, nil
		}
		for seq := from; seq <= p.seq; seq++ {
			m, err := stream.GetMsg(ctx, seq)
			if errors.Is(err, jetstream.ErrMsgNotFound) {
				return true, nil
			}
			if err != nil {
				return false, fmt.Errorf("ha: read log message %d: %w", seq, err)
			}
			if m.Header.Get(hdrTerm) != strconv.FormatUint(p.term, 10) {
				return true, nil
			}
		}
	}
	return false, nil
}

// maxUnackedCheck bounds the messages diverged reads for one database: a
// leader has at most a few thousand in flight.
const maxUnackedCheck = 1 << 16

// snapshots returns the node's snapshot store view.
func (n *Node) snapshots() snapshots {
	if n.opts.Shard > 0 {
		return snapshots{store: n.opts.Snapshots, prefix: coordapi.ShardSnapshotPrefix(n.opts.SnapshotPrefix, n.opts.Shard)}
	}
	return snapshots{store: n.opts.Snapshots, prefix: coordapi.SnapshotPrefix(n.opts.SnapshotPrefix),
		legacy: coordapi.LegacySnapshotPrefix(n.opts.SnapshotPrefix)}
}

// standby applies the log until this node takes the lease and has applied
// the whole log; it returns the log's last sequence then, and whether the
// state is adopted from before the log.
func (n *Node) standby(ctx context.Context, stream jetstream.Stream, l *lease) (last uint64, adopted bool, err error) {
	r, adopted, err := n.openReplica(ctx, stream)
	if err != nil {
		return 0, false, err
	}
	defer r.close()
	n.setStatus(func(s *Status) { s.Role, s.Applied = RoleStandby, r.position() })
	if adopted {
		n.log.Info("adopting a coordinator state from before the log")
	}
	tail := stream
	if n.opts.testTail != nil {
		tail = n.opts.testTail(stream)
	}
	cons, err := tail.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{
		DeliverPolicy: jetstream.DeliverByStartSequencePolicy, OptStartSeq: r.next,
	})
	if err != nil {
		return 0, false, fmt.Errorf("ha: tail the log: %w", err)
	}
	// One long-lived iterator: each Fetch of an ordered consumer deletes
	// and recreates its consumer on the servers, and a pull sent right
	// after the create can find no responder on another server yet.
	it, err := cons.Messages()
	if err != nil {
		return 0, false, fmt.Errorf("ha: tail the log: %w", err)
	}
	defer it.Stop()
	nextTry, nextInfo := time.Time{}, time.Time{}
	holding := false
	stall := stallWatch{every: n.stallInterval(), at: r.position(), next: time.Now().Add(n.stallInterval()), log: n.log}
	for {
		if ctx.Err() != nil {
			return 0, false, ctx.Err()
		}
		if err := stall.check(ctx, stream, r.position()); err != nil {
			return 0, false, err
		}
		if !holding && time.Now().After(nextTry) {
			nextTry = time.Now().Add(n.pollInterval())
			holder, err := l.tryAcquire(ctx)
			switch {
			case err == nil:
				holding = true
				n.log.Info("took the coordinator lease; catching up with the log", "term", l.term(), "applied", r.position())
			case errors.Is(err, errLeaseHeld):
				n.setStatus(func(s *Status) { s.Leader = holder })
			default:
				n.log.Debug("lease", "err", err)
			}
		}
		wait := n.pollInterval()
		if holding {
			if time.Now().After(nextInfo) {
				nextInfo = time.Now().Add(50 * time.Millisecond)
				info, err := stream.Info(ctx)
				if err != nil {
					return 0, false, fmt.Errorf("ha: stream info: %w", err)
				}
				if last = info.State.LastSeq; r.position() >= last {
					// Terms only grow along the log, whatever the
					// lease's revision.
					l.raiseTerm(r.leader.Term + 1)
					return last, adopted, nil
				}
			}
			wait = 50 * time.Millisecond
		}
		m, err := it.Next(jetstream.NextMaxWait(wait))
		switch {
		case errors.Is(err, nats.ErrTimeout), errors.Is(err, context.DeadlineExceeded):
		case err != nil:
			return 0, false, fmt.Errorf("ha: read the log: %w", err)
		default:
			meta, err := m.Metadata()
			if err != nil {
				return 0, false, fmt.Errorf("ha: log message: %w", err)
			}
			if err := r.apply(meta.Sequence.Stream, m.Headers(), m.Data()); err != nil {
				return 0, false, err
			}
			n.setStatus(func(s *Status) {
				s.Applied, s.Lag, s.Term = r.position(), meta.NumPending, max(s.Term, r.leader.Term)
				if r.leader.ID != "" {
					s.Leader = r.leader.ID
				}
			})
		}
		if holding && !l.valid() {
			return 0, false, errors.New("ha: the lease ran out while catching up with the log")
		}
	}
}

// errStalled is returned by a standby whose tail of the log stopped
// delivering while the log held more: it starts over, with a new consumer.
var errStalled = errors.New("ha: the log's tail stopped delivering")

// stallInterval is how often a standby whose tail delivers nothing checks
// it: ten lease polls, at least a second. A tail is made again once it has
// delivered nothing for two intervals while the log held more.
func (n *Node) stallInterval() time.Duration {
	return max(10*n.pollInterval(), time.Second)
}

// stallWatch notices a standby's tail that stopped: an ordered consumer
// lost on the servers, or a first pull that found no responder (a server
// of the cluster not yet knowing the consumer), can leave Next timing out
// for good while the log grows, and a standby stuck so could never lead.
// Every interval without progress it asks the stream how far the log goes,
// and it calls the tail stalled only when the position is still short of
// where the log ended an interval before: a message appended just before
// the question is still on its way, not lost.
type stallWatch struct {
	every  time.Duration
	at     uint64 // the position at the last check
	behind uint64 // the log's last sequence an interval ago, 0: not behind
	next   time.Time
	log    *slog.Logger
}

// check returns errStalled when the position has not moved for two
// intervals and is still short of where the log ended at the first. A
// failed question is logged and asked again an interval later: the
// standby goes on tailing meanwhile.
func (w *stallWatch) check(ctx context.Context, stream jetstream.Stream, pos uint64) error {
	now := time.Now()
	if pos != w.at {
		w.at, w.behind, w.next = pos, 0, now.Add(w.every)
		return nil
	}
	if now.Before(w.next) {
		return nil
	}
	w.next = now.Add(w.every)
	if w.behind > pos {
		return fmt.Errorf("%w: at %d for %v, the log at %d by then", errStalled, pos, 2*w.every, w.behind)
	}
	info, err := stream.Info(ctx)
	if err != nil {
		w.log.Debug("stream info for the stall check", "err", err)
		return nil
	}
	if last := info.State.LastSeq; last > pos {
		w.behind = last
	}
	return nil
}

// lead fences the log, opens the coordinator service on the replica and
// serves until the lease or the log is lost, or ctx ends.
func (n *Node) lead(ctx context.Context, js jetstream.JetStream, stream jetstream.Stream, l *lease, last uint64, adopted bool) (err error) {
	graceful := false
	defer func() {
		if graceful || err != nil {
			rctx, cancel := context.WithTimeout(context.Background(), time.Second)
			l.release(rctx)
			cancel()
		}
	}()
	w := newWriter(js, n.names.stream, n.names.subject, n.nc.MaxPayload(), last, l.term(), n.opts.LeaseTTL, n.opts.SyncState, n.opts.InflightMessages)
	defer w.close()
	entry, _ := json.Marshal(leaderEntry{Term: l.term(), ID: n.opts.ID, Time: time.Now().UnixMilli(), Adopted: adopted})
	if _, err := w.append(kindLeader, entry); err != nil {
		return fmt.Errorf("ha: fence the log at %d: %w", last, err)
	}
	gate := func() error {
		if !l.valid() {
			return fmt.Errorf("%w: its lease ran out", ErrNotLeader)
		}
		// Nothing goes out before the log has every change made
		// before it (the change it answers for, and any it saw).
		if err := w.barrier(); err != nil {
			return fmt.Errorf("%w: %w", ErrNotLeader, err)
		}
		if !l.valid() {
			return fmt.Errorf("%w: its lease ran out", ErrNotLeader)
		}
		return nil
	}
	sopts := n.opts.Service
	sopts.Coordinator.Log = dbLog{w, dbCoordinator}
	sopts.Groups.Log = dbLog{w, dbGroups}
	sopts.Gate = gate
	// A reply that depends only on what the log has waits for nothing
	// but the lease's check.
	sopts.SettledGate = func() error {
		if !l.valid() {
			return fmt.Errorf("%w: its lease ran out", ErrNotLeader)
		}
		return nil
	}
	// Each term subscribes in a queue group of its own: a deposed leader
	// still subscribed (stopped, hung) gets a copy of each request rather
	// than a share of them.
	sopts.QueueGroup = fmt.Sprintf("floe-coordinator-term-%d", l.term())
	svc, err := service.Start(n.nc, sopts)
	if err != nil {
		return fmt.Errorf("ha: start the coordinator: %w", err)
	}
	n.mu.Lock()
	n.mu.svc, n.mu.w = svc, w
	close(n.mu.leader)
	n.mu.status.Role, n.mu.status.Term, n.mu.status.Leader, n.mu.status.Lag = RoleLeader, l.term(), n.opts.ID, 0
	n.mu.status.Applied = w.applied()
	n.mu.status.Failovers++
	n.mu.Unlock()
	n.log.Info("leading the coordinators", "term", l.term(), "log_seq", last+1)
	defer func() {
		n.mu.Lock()
		n.mu.svc, n.mu.w = nil, nil
		n.mu.leader = make(chan struct{})
		n.mu.status.Role = RoleStandby
		n.mu.Unlock()
		if cerr := svc.Close(); cerr != nil {
			n.log.Warn("close the coordinator", "err", cerr)
		}
		n.log.Info("stopped leading", "term", l.term(), "err", err)
	}()

	dbs := map[string]checkpointer{"coordinator": svc.Coordinator(), "groups": svc.Groups()}
	// Snapshots run beside the loop, one at a time, so that uploading a
	// large state never holds up the lease's renewal; they stop with the
	// term, before the coordinator closes (the deferred calls run in
	// reverse).
	sctx, scancel := context.WithCancel(ctx)
	var snaps sync.WaitGroup
	defer snaps.Wait()
	defer scancel()
	snapping := make(chan struct{}, 1)
	snap := func() {
		if n.opts.Snapshots == nil {
			return
		}
		select {
		case snapping <- struct{}{}:
		default:
			return // the last one is still running
		}
		snaps.Add(1)
		go func() {
			defer snaps.Done()
			defer func() { <-snapping }()
			if err := n.snapshot(sctx, w, stream, l.term(), dbs); err != nil && sctx.Err() == nil {
				n.log.Warn("snapshot failed", "err", err)
			}
		}()
	}
	var snapC <-chan time.Time
	if n.opts.SnapshotInterval > 0 {
		t := time.NewTicker(n.opts.SnapshotInterval)
		defer t.Stop()
		snapC = t.C
	}
	if m, err := n.snapshotsOrNil(ctx); (m == nil && err == nil) || adopted {
		snap() // the first, or of an adopted state: standbys start from it
	}
	renew := time.NewTicker(n.opts.LeaseTTL / 3)
	defer renew.Stop()
	refreshing := make(chan struct{}, 1)
	for {
		select {
		case <-ctx.Done():
			graceful = true
			return nil
		case <-w.Failed():
			return w.Err()
		case <-renew.C:
			if !l.renew(ctx) {
				return errors.New("ha: lost the lease")
			}
			// Beside the loop: a slow answer must not delay the next
			// renewal.
			select {
			case refreshing <- struct{}{}:
				go func() {
					defer func() { <-refreshing }()
					n.refreshStreamStatus(sctx, stream, w)
				}()
			default:
			}
		case <-snapC:
			snap()
		}
	}
}

// snapshotsOrNil returns the newest snapshot's manifest, nil when there is
// none or no store.
func (n *Node) snapshotsOrNil(ctx context.Context) (*manifest, error) {
	if n.opts.Snapshots == nil {
		return nil, nil
	}
	return n.snapshots().latest(ctx)
}

// snapshot takes a snapshot, tells the standbys, prunes old snapshots and
// trims the log below the oldest kept.
func (n *Node) snapshot(ctx context.Context, w *writer, stream jetstream.Stream, term uint64, dbs map[string]checkpointer) error {
	start := time.Now()
	m, err := n.snapshots().take(ctx, tempDir(n.opts.Service.Coordinator.Dir), term, dbs, w.waitAcked)
	if err != nil {
		return err
	}
	entry, _ := json.Marshal(snapshotEntry{Seq: m.Seq})
	if _, err := w.append(kindSnapshot, entry); err != nil {
		return err
	}
	n.setStatus(func(s *Status) { s.SnapshotSeq, s.SnapshotTime = m.Seq, time.UnixMilli(m.Created) })
	oldest, err := n.snapshots().prune(ctx, n.opts.SnapshotsKept)
	if err != nil {
		return err
	}
	if oldest > 0 {
		// Never past the log's end: a purge there empties the stream
		// (a snapshot of another log in the store would ask for it).
		info, err := stream.Info(ctx)
		if err != nil {
			return fmt.Errorf("ha: trim the log: %w", err)
		}
		if oldest > info.State.LastSeq {
			return fmt.Errorf("ha: the oldest snapshot kept, at %d, is past this log's end, %d: is the store shared with another log?", oldest, info.State.LastSeq)
		}
		if err := stream.Purge(ctx, jetstream.WithPurgeSequence(oldest+1)); err != nil {
			return fmt.Errorf("ha: trim the log below %d: %w", oldest+1, err)
		}
	}
	var size int64
	for _, f := range m.Files {
		size += f.Size
	}
	n.log.Info("snapshot taken", "seq", m.Seq, "files", len(m.Files), "bytes", size, "took", time.Since(start), "log_trimmed_below", oldest+1)
	return nil
}

// refreshStreamStatus records the log's size and the leader's position.
func (n *Node) refreshStreamStatus(ctx context.Context, stream jetstream.Stream, w *writer) {
	ictx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	info, err := stream.Info(ictx)
	if err != nil {
		return
	}
	n.setStatus(func(s *Status) {
		s.StreamMessages, s.StreamBytes, s.Applied = info.State.Msgs, info.State.Bytes, w.applied()
	})
}

// tempDir is a directory beside dir for snapshots in progress.
func tempDir(dir string) string {
	dir = filepath.Clean(dir)
	p := filepath.Join(filepath.Dir(dir), "."+filepath.Base(dir)+"-snapshots")
	_ = os.MkdirAll(p, 0o755)
	return p
}
