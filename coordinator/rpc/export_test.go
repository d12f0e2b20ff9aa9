package rpc

import (
	"context"
	"maps"

	"github.com/nats-io/nats.go"

	"github.com/floe-io/floe/coordinator"
)

// The ops tests serve without, to play a coordinator that predates them.
const (
	OpKvGet            = opKvGet
	OpFindBatchesMulti = opFindBatchesMulti
)

// ServeWithoutOps is ServeWith without the batch coordinator ops named:
// a coordinator of an earlier build, which does not know them.
func ServeWithoutOps(ctx context.Context, nc *nats.Conn, cluster string, c *coordinator.Coordinator, opts ServerOptions, ops ...string) (*Server, error) {
	hs := maps.Clone(handlers)
	for _, op := range ops {
		delete(hs, op)
	}
	return serveOps(ctx, nc, cluster, c, opts, hs)
}
