package groups

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/groups/sharegroups"
)

// ErrClosed is returned by DeleteTopicOffsets, ShareAcquire and
// ShareRelease once the coordinator is closed; the Kafka-facing methods
// answer NOT_COORDINATOR then. It is sharegroups.ErrClosed.
var ErrClosed = sharegroups.ErrClosed

// Groups is the group coordinator: classic consumer groups (JoinGroup,
// SyncGroup, Heartbeat, LeaveGroup), KIP-848 consumer groups, and the
// committed offsets of both, durable in Pebble; and the host of the share
// group coordinator (package sharegroups), whose calls it forwards.
//
// Its methods take and return kmsg requests and responses at the request's
// version; Kafka-level failures are error codes in the response. JoinGroup
// and SyncGroup block until the rebalance answers them; they return an error
// only when ctx ends first.
type Groups struct {
	opts Options
	log  *slog.Logger
	now  func() time.Time
	db   *pebble.DB

	// closeMu is held for reading by every call while it uses the state
	// (never while it waits for a rebalance), and for writing by Close.
	closeMu sync.RWMutex
	closed  bool // guarded by closeMu

	mu struct {
		sync.Mutex
		groups map[string]*group
	}

	sched      scheduler
	topicCache topicCache

	// cfg holds the group configs by group (group_configs.go); its mutex
	// is taken after group.mu, never before.
	cfg struct {
		mu sync.Mutex
		m  map[string]map[string]string
	}

	// seq is the last seq handed to an offset write (offsetRecord.seq).
	seq atomic.Uint64

	cancel context.CancelFunc
	done   chan struct{}
	// stopTopics ends the topic notices (TopicSubscriber); a no-op without.
	stopTopics func()
	// shares is the share group coordinator; its groups' state lives in
	// the groups' entries (group.mu.share), under group.mu (share.go).
	shares *sharegroups.Coordinator
}

// Open opens (creating if needed) the committed offsets and group metadata
// in opts.Dir, and starts the loop that expires sessions and offsets.
func Open(opts Options) (*Groups, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	opts.setDefaults()
	gs := &Groups{opts: opts, log: opts.Logger, now: opts.Now, done: make(chan struct{})}
	gs.mu.groups = make(map[string]*group)
	gs.sched.init()
	gs.shares = sharegroups.New(shareHost{gs}, gs.shareOptions())
	db, err := openDB(opts.Dir, opts.FS, opts.Logger, opts.Log)
	if err != nil {
		return nil, err
	}
	gs.db = db
	l, err := loadAll(db)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("groups: load %s: %w", opts.Dir, err)
	}
	gs.cfg.m = l.configs
	now := gs.now()
	nOffsets, nMembers := 0, 0
	hasShare := false // a share group exists: subscribe to commit notices
	for name, r := range l.groups {
		g := newGroup(gs, name)
		g.mu.persisted = true
		g.mu.protocolType = r.protocolType
		since := now
		if r.emptySinceMs > 0 {
			since = time.UnixMilli(r.emptySinceMs)
		}
		if r.share {
			hasShare = true
			ls := l.shares[name]
			g.mu.Lock()
			err := gs.shares.Restore(g, r.generation, since, r.encode(), ls, now)
			g.mu.Unlock()
			if err != nil {
				db.Close()
				return nil, fmt.Errorf("groups: load %s: share group %q: %w", opts.Dir, name, err)
			}
			if ls != nil {
				nMembers += ls.Members()
			}
		} else if r.consumer {
			c := newConsumerGroup(r.generation, since)
			c.writtenGroup = r.encode()
			g.mu.consumer = c
			if lc := l.consumers[name]; lc != nil {
				g.mu.Lock()
				g.restoreConsumerLocked(lc, now)
				g.mu.Unlock()
				nMembers += len(lc.members)
			}
		} else {
			g.mu.generation = r.generation
			g.mu.stateSince = since
			if s, ok := l.stable[name]; ok && validStable(s, r) {
				g.mu.Lock()
				g.restoreStableLocked(s, now)
				g.mu.Unlock()
				nMembers += len(s.members)
			}
		}
		gs.mu.groups[name] = g
	}
	for name, topics := range l.offsets {
		g := gs.mu.groups[name]
		if g == nil {
			g = newGroup(gs, name) // a simple group: offsets only
			gs.mu.groups[name] = g
		}
		g.mu.offsets = topics
		for _, ps := range topics {
			nOffsets += len(ps)
		}
	}
	nPending := 0
	for name, txns := range l.pending {
		g := gs.mu.groups[name]
		if g == nil {
			g = newGroup(gs, name) // a simple group: pending offsets only
			gs.mu.groups[name] = g
		}
		g.mu.txns = txns
		nPending += len(txns)
	}
	gs.seq.Store(l.maxSeq)
	// Consumer-family keys of a group that is not (or no longer) a
	// KIP-848 group are left over from a write that failed: drop them,
	// so that a later consumer group of that name does not inherit them.
	stray := gs.newBatch()
	for name := range l.consumers {
		if r, ok := l.groups[name]; !ok || !r.consumer {
			stray.deleteConsumer(name)
		}
	}
	for name := range l.shares {
		if r, ok := l.groups[name]; !ok || !r.share {
			sharegroups.DeleteGroup(stray, name)
		}
	}
	if err := stray.commit(); err != nil {
		db.Close()
		return nil, fmt.Errorf("groups: drop stale consumer group state: %w", err)
	}
	gs.stopTopics = func() {}
	if sub, ok := opts.Topics.(TopicSubscriber); ok {
		gs.stopTopics = sub.SubscribeTopics(func([]coordapi.TopicNotice) { gs.dropTopics() })
	}
	if hasShare {
		gs.shares.SubscribeCommits()
	}
	ctx, cancel := context.WithCancel(context.Background())
	gs.cancel = cancel
	go gs.run(ctx)
	gs.log.Info("group coordinator opened", "dir", opts.Dir, "groups", len(gs.mu.groups), "offsets", nOffsets, "members", nMembers, "open transactions", nPending)
	return gs, nil
}

// Close stops the expiry loop, answers every held JoinGroup and SyncGroup
// with NOT_COORDINATOR (the client finds the coordinator again and
// rejoins), and closes Pebble after the calls in progress finish. Closing
// twice is a no-op.
func (gs *Groups) Close() error {
	gs.closeMu.Lock()
	if gs.closed {
		gs.closeMu.Unlock()
		return nil
	}
	gs.closed = true
	gs.closeMu.Unlock()
	gs.stopTopics()
	gs.shares.Close()
	gs.cancel()
	<-gs.done
	for _, g := range gs.snapshot() {
		g.mu.Lock()
		for _, m := range g.mu.members {
			g.answerJoinLocked(m, errorJoinResponse(m.id, kerr.NotCoordinator))
			g.answerSyncLocked(m, &kmsg.SyncGroupResponse{ErrorCode: kerr.NotCoordinator.Code})
		}
		g.mu.Unlock()
	}
	if err := gs.db.Close(); err != nil {
		return fmt.Errorf("groups: close pebble: %w", err)
	}
	return nil
}

// enter starts a call: false once closed, else closeMu is held for reading
// until leave.
func (gs *Groups) enter() bool {
	gs.closeMu.RLock()
	if gs.closed {
		gs.closeMu.RUnlock()
		return false
	}
	return true
}

func (gs *Groups) leave() { gs.closeMu.RUnlock() }

// nextSeq returns the seq of the next offset write.
func (gs *Groups) nextSeq() uint64 { return gs.seq.Add(1) }

// lockGroup returns name's group with its mutex held, creating it (Empty)
// when create is set; nil when it does not exist. created reports a new
// group, which the caller drops again if its request left it unused.
func (gs *Groups) lockGroup(name string, create bool) (g *group, created bool) {
	for {
		gs.mu.Lock()
		g = gs.mu.groups[name]
		created = false
		if g == nil {
			if !create {
				gs.mu.Unlock()
				return nil, false
			}
			g = newGroup(gs, name)
			gs.mu.groups[name] = g
			created = true
		}
		gs.mu.Unlock()
		g.mu.Lock()
		if !g.mu.dead {
			return g, created
		}
		g.mu.Unlock() // deleted meanwhile: look again
	}
}

// snapshot returns the current groups.
func (gs *Groups) snapshot() []*group {
	gs.mu.Lock()
	defer gs.mu.Unlock()
	out := make([]*group, 0, len(gs.mu.groups))
	for _, g := range gs.mu.groups {
		out = append(out, g)
	}
	return out
}

// removeLocked marks g dead and drops it from Groups (g.mu held). Its
// durable state must already be deleted.
func (g *group) removeLocked() {
	g.mu.dead = true
	g.mu.state = Dead
	g.gs.mu.Lock()
	if g.gs.mu.groups[g.name] == g {
		delete(g.gs.mu.groups, g.name)
	}
	g.gs.mu.Unlock()
}

// persistLocked writes the group record (protocol type, generation, when
// it became Empty) and, for a Stable classic group, its members (see
// snapshot.go). A failure is logged: members and generations live in
// memory, and the next write catches up.
func (g *group) persistLocked() {
	r := groupRecord{protocolType: g.mu.protocolType, generation: g.mu.generation}
	if g.mu.state == Empty {
		r.emptySinceMs = msOf(g.mu.stateSince)
	}
	b := g.gs.newBatch()
	b.setGroup(g.name, r)
	if g.mu.state == Stable && g.mu.consumer == nil && len(g.mu.members) > 0 {
		b.setStable(g.name, g.stableLocked())
	} else {
		b.deleteStable(g.name)
	}
	if err := b.commit(); err != nil {
		g.gs.log.Error("persist group", "group", g.name, "err", err)
		return
	}
	g.mu.persisted = true
}
