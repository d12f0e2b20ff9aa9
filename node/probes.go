package node

import (
	"context"
	"errors"
	"fmt"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/internal/probe"
	"github.com/floe-io/floe/objectstore"
)

// readyCheckKey is the object the readiness probe asks the store for: none
// has this name, so the store answers "not found", which is an answer. On S3
// a HEAD costs what a GET costs, a twelfth of a LIST.
func readyCheckKey(prefix string) string { return coordapi.WALPrefix(prefix) + "floe-ready-check" }

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
		{Name: "object_store", Run: func(ctx context.Context) error {
			return storeAnswers(ctx, n.store, n.cfg.S3Prefix)
		}},
	}, probe.Options{})
}

// storeAnswers asks store for an object that does not exist: "not found"
// is the answer that says it works.
func storeAnswers(ctx context.Context, store objectstore.Store, prefix string) error {
	_, err := store.Head(ctx, readyCheckKey(prefix))
	if err == nil || errors.Is(err, objectstore.ErrNotFound) {
		return nil
	}
	return err
}
