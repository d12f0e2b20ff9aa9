package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// FindCoordinator: v0-v4. v3+ flexible; v4+ batches keys. Group state
// lives in the cluster's coordinator and every broker serves every group,
// so a group's coordinator (key type 0) is the broker asked: a live one, by
// definition. A client whose coordinator died asks another broker and
// carries on through it at once, rather than be sent back to the dead one
// until the registry forgets it. Transactions (key type 1) live in the
// coordinator too, and are served the same way; any other type is
// INVALID_REQUEST. The error message is never null: Kafka sends its
// error's message, "NONE" on success. With ACLs a group key needs GROUP
// DESCRIBE, a transactional id TRANSACTIONAL_ID DESCRIBE.
func init() { register(kmsg.FindCoordinator, 0, 4, (*Broker).handleFindCoordinator) }

const (
	coordinatorTypeGroup       = 0
	coordinatorTypeTransaction = 1
)

func (b *Broker) handleFindCoordinator(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.req.(*kmsg.FindCoordinatorRequest)
	resp := req.ResponseKind().(*kmsg.FindCoordinatorResponse)
	if req.CoordinatorType == coordinatorTypeGroup && b.groups != nil {
		b.ensureOffsetsTopic(ctx)
	}
	if req.Version < 4 {
		c := b.findCoordinator(r, req.CoordinatorType, req.CoordinatorKey)
		resp.ErrorCode, resp.NodeID, resp.Host, resp.Port = c.ErrorCode, c.NodeID, c.Host, c.Port
		if req.Version >= 1 {
			resp.ErrorMessage = c.ErrorMessage
		}
		return resp, nil
	}
	for _, key := range req.CoordinatorKeys {
		resp.Coordinators = append(resp.Coordinators, b.findCoordinator(r, req.CoordinatorType, key))
	}
	return resp, nil
}

func (b *Broker) findCoordinator(r *request, typ int8, key string) kmsg.FindCoordinatorResponseCoordinator {
	zone := r.clientZone()
	c := kmsg.NewFindCoordinatorResponseCoordinator()
	c.Key = key
	c.ErrorMessage = kmsg.StringPtr("NONE") // Kafka's Errors.NONE.message()
	fail := func(e *kerr.Error) kmsg.FindCoordinatorResponseCoordinator {
		c.NodeID, c.Port = -1, -1
		c.ErrorCode = e.Code
		c.ErrorMessage = kmsg.StringPtr(e.Description)
		return c
	}
	switch typ {
	case coordinatorTypeGroup:
		if !b.authorized(r, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeGroup, key) {
			return fail(kerr.GroupAuthorizationFailed)
		}
	case coordinatorTypeTransaction:
		if !b.authorized(r, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTransactionalId, key) {
			return fail(kerr.TransactionalIDAuthorizationFailed)
		}
	default:
		return fail(kerr.InvalidRequest)
	}
	if typ == coordinatorTypeGroup && b.groups == nil {
		return fail(kerr.CoordinatorNotAvailable)
	}
	// Every broker serves every group: this one, unless the client is of
	// another zone that has brokers (zones.go), then one of them by key.
	bi := b.self()
	if zone != "" && zone != b.opts.Rack {
		if local, ok := zoneBrokers(b.liveBrokers(), zone); ok {
			bi = pickByKey(key, local)
		}
	}
	c.NodeID, c.Host, c.Port = bi.nodeID, bi.host, bi.port
	return c
}
