// Package brokers is the coordinator's broker registry: the live brokers
// of the cluster, each with its node id, advertised address, rack and
// internal address, which brokers heartbeat into (RegisterBroker) and
// Metadata answers from (ListBrokers). It is cluster-wide, like Kafka's
// broker registrations in KRaft, and lives in memory only: after a
// coordinator restart or failover the brokers register again with their
// next heartbeat. Registry's lock is taken alone.
package brokers

import (
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/floe-io/floe/coordapi"
)

// Registry holds the live brokers: those registered or heartbeating within
// its TTL.
type Registry struct {
	ttl time.Duration
	now func() time.Time
	log *slog.Logger

	mu   sync.Mutex
	byID map[int32]entry
}

type entry struct {
	info    coordapi.BrokerInfo
	expires time.Time
}

// New returns an empty registry whose registrations live ttl after their
// last heartbeat, on now's clock. log receives a line per change (nil:
// none).
func New(ttl time.Duration, now func() time.Time, log *slog.Logger) *Registry {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Registry{ttl: ttl, now: now, log: log, byID: map[int32]entry{}}
}

// Register registers a broker, or renews its registration: brokers call it
// every few seconds as their heartbeat, and a broker not heard from for
// the TTL is no longer listed. A registration replaces a live one of the
// same node id only when the address is the same (the broker restarted);
// another broker claiming a live node id gets an error wrapping
// kerr.DuplicateBrokerRegistration. A bad node id, host or port is
// kerr.InvalidRequest.
func (r *Registry) Register(info coordapi.BrokerInfo) error {
	switch {
	case info.NodeID < 0:
		return coordapi.Errorf(kerr.InvalidRequest, "broker node id %d is negative", info.NodeID)
	case info.Host == "":
		return coordapi.Errorf(kerr.InvalidRequest, "broker %d has no host", info.NodeID)
	case info.Port <= 0 || info.Port > 65535:
		return coordapi.Errorf(kerr.InvalidRequest, "broker %d has port %d, want 1..65535", info.NodeID, info.Port)
	}
	now := r.now()
	r.mu.Lock()
	defer r.mu.Unlock()
	old, ok := r.byID[info.NodeID]
	if ok && now.Before(old.expires) && old.info.Addr() != info.Addr() {
		return coordapi.Errorf(kerr.DuplicateBrokerRegistration, "broker %d is already registered at %s, not %s",
			info.NodeID, old.info.Addr(), info.Addr())
	}
	if !ok || !now.Before(old.expires) || old.info != info {
		r.log.Info("broker registered", "node_id", info.NodeID, "addr", info.Addr(), "rack", info.Rack, "internal_addr", info.InternalAddr)
	}
	r.byID[info.NodeID] = entry{info: info, expires: now.Add(r.ttl)}
	return nil
}

// Deregister removes a broker's registration at once, as a broker shutting
// down gracefully does. It is a no-op unless the registration is the same
// node id at the same address.
func (r *Registry) Deregister(info coordapi.BrokerInfo) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if old, ok := r.byID[info.NodeID]; ok && old.info.Addr() == info.Addr() {
		delete(r.byID, info.NodeID)
		r.log.Info("broker deregistered", "node_id", info.NodeID, "addr", info.Addr())
	}
}

// Live returns the live brokers sorted by node id, forgetting the expired
// ones.
func (r *Registry) Live() []coordapi.BrokerInfo {
	now := r.now()
	r.mu.Lock()
	out := make([]coordapi.BrokerInfo, 0, len(r.byID))
	for id, e := range r.byID {
		if !now.Before(e.expires) {
			delete(r.byID, id)
			r.log.Info("broker expired", "node_id", id, "addr", e.info.Addr())
			continue
		}
		out = append(out, e.info)
	}
	r.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].NodeID < out[j].NodeID })
	return out
}
