package zone

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync/atomic"
	"time"

	"github.com/floe-io/floe/coordapi"
)

// Defaults applied to zero-valued MembershipOptions fields.
const (
	DefaultRefreshInterval = time.Second
	DefaultRefreshTimeout  = time.Second
)

// BrokerLister lists the cluster's live brokers: the coordinator client
// (rpc.Client) in a node, a fake in tests.
type BrokerLister interface {
	ListBrokers(ctx context.Context) ([]coordapi.BrokerInfo, error)
}

// MembershipOptions configure a Membership. The zero value is usable.
type MembershipOptions struct {
	// RefreshInterval is how often Run lists the brokers again.
	// Default: 1s.
	RefreshInterval time.Duration
	// RefreshTimeout bounds one listing. Default: 1s.
	RefreshTimeout time.Duration
	// Logger receives refresh failures. Default: discard.
	Logger *slog.Logger
}

// Membership is this broker's view of its zone: the live brokers of the
// same rack that serve chunks to peers, which Owner hashes chunks over. It
// is safe for concurrent use; Owner takes no lock.
type Membership struct {
	self   coordapi.BrokerInfo
	lister BrokerLister
	opts   MembershipOptions
	// members are the zone's chunk owners sorted by node id, self
	// included; replaced whole by each successful refresh.
	members atomic.Pointer[[]coordapi.BrokerInfo]
	failing atomic.Bool // the last refresh failed (logged once per outage)
}

// NewMembership returns the zone membership of self, the broker it runs
// in (its NodeID, Rack and InternalAddr count), which owns every chunk
// until the first refresh. A self with no rack shares nothing: it owns
// every chunk whatever the registry says.
func NewMembership(self coordapi.BrokerInfo, lister BrokerLister, opts MembershipOptions) *Membership {
	if opts.RefreshInterval <= 0 {
		opts.RefreshInterval = DefaultRefreshInterval
	}
	if opts.RefreshTimeout <= 0 {
		opts.RefreshTimeout = DefaultRefreshTimeout
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	m := &Membership{self: self, lister: lister, opts: opts}
	m.members.Store(&[]coordapi.BrokerInfo{self})
	return m
}

// Self returns the broker this membership runs in.
func (m *Membership) Self() coordapi.BrokerInfo { return m.self }

// Sharing reports whether chunks are shared at all: this broker has a rack.
func (m *Membership) Sharing() bool { return m.self.Rack != "" }

// Run refreshes the membership now and every RefreshInterval until ctx
// ends. A failed refresh keeps the last good list (the chunks of a broker
// that died meanwhile fall back to the store until the next success).
func (m *Membership) Run(ctx context.Context) {
	t := time.NewTicker(m.opts.RefreshInterval)
	defer t.Stop()
	for {
		rctx, cancel := context.WithTimeout(ctx, m.opts.RefreshTimeout)
		err := m.Refresh(rctx)
		cancel()
		switch {
		case ctx.Err() != nil:
			return
		case err != nil && !m.failing.Swap(true):
			m.opts.Logger.Warn("zone: cannot list brokers; keeping the last list", "err", err)
		case err == nil && m.failing.Swap(false):
			m.opts.Logger.Info("zone: listing brokers again")
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Refresh lists the brokers once and keeps those of this broker's zone
// that have an internal address, and this broker. On an error the list is
// unchanged.
func (m *Membership) Refresh(ctx context.Context) error {
	if !m.Sharing() {
		return nil
	}
	all, err := m.lister.ListBrokers(ctx)
	if err != nil {
		return fmt.Errorf("zone: list brokers: %w", err)
	}
	members := []coordapi.BrokerInfo{m.self}
	for _, b := range all {
		if b.NodeID != m.self.NodeID && b.Rack == m.self.Rack && b.InternalAddr != "" {
			members = append(members, b)
		}
	}
	slices.SortFunc(members, func(a, b coordapi.BrokerInfo) int { return cmp.Compare(a.NodeID, b.NodeID) })
	members = slices.CompactFunc(members, func(a, b coordapi.BrokerInfo) bool { return a.NodeID == b.NodeID })
	m.members.Store(&members)
	return nil
}

// Members returns the zone's chunk owners, this broker included, sorted by
// node id. Callers must not modify the slice.
func (m *Membership) Members() []coordapi.BrokerInfo { return *m.members.Load() }

// Owner returns the broker that owns chunk idx of key, and whether that is
// this broker. It is a pure function of the key, the index and the members'
// node ids (highest random weight): every broker with the same list picks
// the same owner.
func (m *Membership) Owner(key string, idx int64) (owner coordapi.BrokerInfo, self bool) {
	members := *m.members.Load()
	if len(members) == 1 {
		return members[0], true
	}
	h := chunkHash(key, idx)
	best, bestScore := 0, score(h, members[0].NodeID)
	for i := 1; i < len(members); i++ {
		// Ties (astronomically rare) go to the lower node id: members
		// are sorted and only a strictly higher score wins.
		if s := score(h, members[i].NodeID); s > bestScore {
			best, bestScore = i, s
		}
	}
	return members[best], members[best].NodeID == m.self.NodeID
}
