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
// settles the first two. A broker of a cluster's coordinator (--nats-url)
// is also ready only while it routes over as many coordinator shards
// (--coordinator-shards) as the cluster has (its cluster_info answer): a
// broker told another count would send partitions' calls to shards that
// do not own them, which refuse them (NOT_LEADER_OR_FOLLOWER), and
// /readyz says why. /healthz, by contrast, says only that the process
// serves HTTP.
func (n *Node) readiness() *probe.Readiness {
	checks := []probe.Check{
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
	}
	if n.cfg.NATSURL != "" {
		checks = append(checks, probe.Check{Name: "shards", Run: n.checkShards})
	}
	return probe.New(checks, probe.Options{})
}

// checkShards compares the shard count this broker routes over with the
// cluster's: it follows the cluster's growth (shards.Router.Follow), but
// never routes over fewer shards than --coordinator-shards says.
func (n *Node) checkShards(ctx context.Context) error {
	ci, err := n.client.ClusterInfo(ctx)
	if err != nil {
		return fmt.Errorf("cluster_info: %w", err)
	}
	if routes := n.shards.Shards(); ci.Shards != routes {
		return fmt.Errorf("this broker routes over %d coordinator shards (--coordinator-shards, or a growth it followed) but the cluster's coordinators have %d", routes, ci.Shards)
	}
	return nil
}
