package coordinator

import (
	"context"
	"sort"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/floe-io/floe/coordapi"
)

// defaultBrokerTTL is Options.BrokerTTL's default: brokers heartbeat every
// couple of seconds, so a broker that died stops being named within a few.
const defaultBrokerTTL = 6 * time.Second

// defaultGCGrace is Options.GCGrace's default (--gc-grace).
const defaultGCGrace = 10 * time.Minute

// brokerRegistry holds the live brokers. It lives in memory only: after a
// coordinator restart the brokers register again with their next heartbeat.
type brokerRegistry struct {
	sync.Mutex
	byID map[int32]brokerEntry
}

type brokerEntry struct {
	info    coordapi.BrokerInfo
	expires time.Time
}

// RegisterBroker registers a broker, or renews its registration: brokers
// call it every few seconds as their heartbeat, and a broker not heard from
// for Options.BrokerTTL is no longer listed. A registration replaces a live
// one of the same node id only when the address is the same (the broker
// restarted); another broker claiming a live node id gets an error wrapping
// kerr.DuplicateBrokerRegistration. A bad node id, host or port is
// kerr.InvalidRequest.
func (c *Coordinator) RegisterBroker(ctx context.Context, info coordapi.BrokerInfo) error {
	if err := c.enter(ctx); err != nil {
		return err
	}
	defer c.leave()
	switch {
	case info.NodeID < 0:
		return coordapi.Errorf(kerr.InvalidRequest, "broker node id %d is negative", info.NodeID)
	case info.Host == "":
		return coordapi.Errorf(kerr.InvalidRequest, "broker %d has no host", info.NodeID)
	case info.Port <= 0 || info.Port > 65535:
		return coordapi.Errorf(kerr.InvalidRequest, "broker %d has port %d, want 1..65535", info.NodeID, info.Port)
	}
	now := c.now()
	r := &c.brokers
	r.Lock()
	defer r.Unlock()
	if r.byID == nil {
		r.byID = map[int32]brokerEntry{}
	}
	old, ok := r.byID[info.NodeID]
	if ok && now.Before(old.expires) && old.info.Addr() != info.Addr() {
		return coordapi.Errorf(kerr.DuplicateBrokerRegistration, "broker %d is already registered at %s, not %s",
			info.NodeID, old.info.Addr(), info.Addr())
	}
	if !ok || !now.Before(old.expires) || old.info != info {
		c.log.Info("broker registered", "node_id", info.NodeID, "addr", info.Addr(), "rack", info.Rack, "internal_addr", info.InternalAddr)
	}
	r.byID[info.NodeID] = brokerEntry{info: info, expires: now.Add(c.opts.BrokerTTL)}
	return nil
}

// DeregisterBroker removes a broker's registration at once, as a broker
// shutting down gracefully does. It is a no-op unless the registration is
// the same node id at the same address.
func (c *Coordinator) DeregisterBroker(ctx context.Context, info coordapi.BrokerInfo) error {
	if err := c.enter(ctx); err != nil {
		return err
	}
	defer c.leave()
	r := &c.brokers
	r.Lock()
	defer r.Unlock()
	if old, ok := r.byID[info.NodeID]; ok && old.info.Addr() == info.Addr() {
		delete(r.byID, info.NodeID)
		c.log.Info("broker deregistered", "node_id", info.NodeID, "addr", info.Addr())
	}
	return nil
}

// ListBrokers returns the live brokers (registered or heartbeating within
// Options.BrokerTTL), sorted by node id.
func (c *Coordinator) ListBrokers(ctx context.Context) ([]coordapi.BrokerInfo, error) {
	if err := c.enter(ctx); err != nil {
		return nil, err
	}
	defer c.leave()
	return c.liveBrokers(), nil
}

// liveBrokers returns the live brokers sorted by node id, forgetting the
// expired ones. The caller is inside enter/leave.
func (c *Coordinator) liveBrokers() []coordapi.BrokerInfo {
	now := c.now()
	r := &c.brokers
	r.Lock()
	out := make([]coordapi.BrokerInfo, 0, len(r.byID))
	for id, e := range r.byID {
		if !now.Before(e.expires) {
			delete(r.byID, id)
			c.log.Info("broker expired", "node_id", id, "addr", e.info.Addr())
			continue
		}
		out = append(out, e.info)
	}
	r.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].NodeID < out[j].NodeID })
	return out
}
