package broker

import (
	"context"
	"sort"
	"sync"
	"time"

	"github.com/floe-io/floe/coordapi"
)

const (
	// registryRefresh is how long the broker list fetched from the
	// coordinator is used before Metadata fetches it again.
	registryRefresh = time.Second
	// registryStale is how long a list may go without a successful
	// refresh before it is dropped (the coordinator is unreachable: name
	// this broker alone).
	registryStale = 10 * time.Second
	// registryTimeout bounds one refresh.
	registryTimeout = time.Second
)

// registry caches the coordinator's list of live brokers for Metadata,
// DescribeCluster and FindCoordinator. One caller at a time refreshes it;
// the others use the list as it is meanwhile.
type registry struct {
	mu struct {
		sync.Mutex
		brokers    []coordapi.BrokerInfo
		tried      time.Time // last refresh attempt
		fetched    time.Time // last successful refresh
		refreshing bool
	}
}

// registeredBrokers returns the coordinator's live brokers, refreshed at
// most every registryRefresh; nil when they could not be fetched for
// registryStale.
func (b *Broker) registeredBrokers() []coordapi.BrokerInfo {
	r := &b.registry
	r.mu.Lock()
	now := time.Now()
	if r.mu.refreshing || now.Sub(r.mu.tried) < registryRefresh {
		list := r.listLocked(now)
		r.mu.Unlock()
		return list
	}
	r.mu.refreshing = true
	r.mu.tried = now
	r.mu.Unlock()
	// Cleared however the call ends: a panic (recovered by the request
	// serving it) must not leave the list refreshed by no one, for good.
	defer func() {
		r.mu.Lock()
		r.mu.refreshing = false
		r.mu.Unlock()
	}()

	ctx, cancel := context.WithTimeout(context.Background(), registryTimeout)
	list, err := b.coord.ListBrokers(ctx)
	cancel()

	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		b.log.Debug("list brokers from the coordinator", "err", err)
	} else {
		r.mu.brokers, r.mu.fetched = list, time.Now()
	}
	return r.listLocked(time.Now())
}

// listLocked returns the cached list unless it is stale. r.mu must be held.
func (r *registry) listLocked(now time.Time) []coordapi.BrokerInfo {
	if now.Sub(r.mu.fetched) > registryStale {
		return nil
	}
	return r.mu.brokers
}

// liveBrokers returns the brokers to name in Metadata, sorted by node id:
// the registered ones, and always this broker itself (as it describes
// itself) even when the coordinator cannot be reached.
func (b *Broker) liveBrokers() []brokerInfo {
	self := b.self()
	out := []brokerInfo{self}
	for _, bi := range b.registeredBrokers() {
		if bi.NodeID == self.nodeID {
			continue
		}
		info := brokerInfo{nodeID: bi.NodeID, host: bi.Host, port: bi.Port}
		if bi.Rack != "" {
			rack := bi.Rack
			info.rack = &rack
		}
		out = append(out, info)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].nodeID < out[j].nodeID })
	return out
}
