package node

import (
	"context"
	"fmt"

	"github.com/floe-io/floe/internal/probe"
)

// readiness is the broker's /readyz (package probe): the coordinator
// answers a cheap request (ListBrokers), this broker is in its answer, the
// broker registry ("registered", so that every broker's Metadata names
// it), and the object store answers a HEAD. One ListBrokers a round
// settles the first two. /healthz, by contrast, says only that the process serves
// HTTP.
func (n *Node) readiness() *probe.Readiness {
	return probe.New([]probe.Check{
		{Name: "coordinator", Then: "registered", Run: func(ctx context.Context) error {
			brokers, err := n.client.ListBrokers(ctx)
			if err != nil {
				return err
			}
			id := n.cfg.Broker.NodeID
			for _, b := range brokers {
				if b.NodeID == id {
					return nil
				}
			}
			return &probe.ThenFailed{Err: fmt.Errorf("broker %d is not in the coordinator's broker registry", id)}
		}},
		probe.ObjectStore(n.store, n.cfg.S3Prefix),
	}, probe.Options{})
}
