package coordinator

import (
	"context"
	"time"

	"github.com/floe-io/floe/coordapi"
)

// defaultBrokerTTL is Options.BrokerTTL's default: brokers heartbeat every
// couple of seconds, so a broker that died stops being named within a few.
const defaultBrokerTTL = 6 * time.Second

// defaultGCGrace is Options.GCGrace's default (--gc-grace).
const defaultGCGrace = 10 * time.Minute

// RegisterBroker registers a broker or renews its registration
// (brokers.Registry.Register): a broker not heard from for
// Options.BrokerTTL is no longer listed.
func (c *Coordinator) RegisterBroker(ctx context.Context, info coordapi.BrokerInfo) error {
	if err := c.enter(ctx); err != nil {
		return err
	}
	defer c.leave()
	return c.brokers.Register(info)
}

// DeregisterBroker removes a broker's registration at once
// (brokers.Registry.Deregister).
func (c *Coordinator) DeregisterBroker(ctx context.Context, info coordapi.BrokerInfo) error {
	if err := c.enter(ctx); err != nil {
		return err
	}
	defer c.leave()
	c.brokers.Deregister(info)
	return nil
}

// ListBrokers returns the live brokers (registered or heartbeating within
// Options.BrokerTTL), sorted by node id.
func (c *Coordinator) ListBrokers(ctx context.Context) ([]coordapi.BrokerInfo, error) {
	if err := c.enter(ctx); err != nil {
		return nil, err
	}
	defer c.leave()
	return c.brokers.Live(), nil
}
