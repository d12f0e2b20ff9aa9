package node

import (
	"context"
	"fmt"
	"net"

	"github.com/floe-io/floe/cache"
	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/zone"
)

// startZone puts the zone Getter between the cache and the store and, when
// this broker shares chunks with its zone (a rack, sharing not disabled),
// starts following the zone's members. The object store stays
// instrumented below the Getter, so GETs are counted whoever asks.
// chunkBytes is the cache's option (0 for its default). It must run after
// startCoordinator and after the HTTP listener is bound.
func (n *Node) startZone(chunkBytes int64) error {
	if chunkBytes == 0 {
		chunkBytes = cache.DefaultChunkBytes
	}
	rack := n.cfg.Broker.Rack
	if rack != "" && !n.cfg.ZoneCacheSharingDisabled {
		self := coordapi.BrokerInfo{NodeID: n.cfg.Broker.NodeID, Rack: rack}
		if n.httpLn != nil {
			self.InternalAddr = n.httpLn.Addr().String()
			if a := n.cfg.InternalAddr; a != "" {
				if _, _, err := net.SplitHostPort(a); err != nil {
					return fmt.Errorf("internal address %q: %w", a, err)
				}
				self.InternalAddr = a
			}
		}
		n.zone.members = zone.NewMembership(self, n.client, zone.MembershipOptions{Logger: n.log})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			n.zone.members.Run(ctx)
		}()
		n.zone.stop = func() { cancel(); <-done }
	}
	peerTLS, err := n.zoneTLS()
	if err != nil {
		return fmt.Errorf("zone peers' tls: %w", err)
	}
	n.zone.getter = zone.NewGetter(n.store, n.zone.members, zone.GetterOptions{
		TLS:        peerTLS,
		ChunkBytes: chunkBytes,
		Meter:      n.metrics.Meter("floe/zone"),
		Logger:     n.log,
	})
	return nil
}

// internalAddr is the address this broker registers for its zone's peers
// to read chunks from: "" unless it serves them.
func (n *Node) internalAddr() string {
	if n.zone.members == nil {
		return ""
	}
	return n.zone.members.Self().InternalAddr
}

// stopZone stops what startZone started; the cache must be closed first.
func (n *Node) stopZone() {
	if n.zone.stop != nil {
		n.zone.stop()
		n.zone.stop = nil
	}
	if n.zone.getter != nil {
		n.zone.getter.Close()
	}
}
