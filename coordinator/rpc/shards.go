package rpc

import (
	"context"
	"fmt"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/coordinator"
)

// object_states request: n, n × key (str). Reply: n, n × (known (bool),
// garbage since ms (varint)).
func encObjectStates(e *encoder, states []coordapi.ObjectState) {
	e.uvarint(uint64(len(states)))
	for _, s := range states {
		e.bool(s.Known)
		e.varint(s.GarbageSinceMs)
	}
}

func decObjectStates(d *decoder) []coordapi.ObjectState {
	n := d.count(2)
	if n == 0 {
		return nil
	}
	out := make([]coordapi.ObjectState, n)
	for i := range out {
		out[i].Known = d.bool()
		out[i].GarbageSinceMs = d.varint()
	}
	return out
}

// forgetObjects serves forget_objects.
func forgetObjects(c *coordinator.Coordinator, ctx context.Context, keys []string) (int64, error) {
	n, err := c.ForgetObjects(ctx, keys)
	return int64(n), err
}

// ObjectStates asks the shard what it knows of each object; see
// coordinator.Coordinator.ObjectStates. Client implements
// coordinator.ObjectPeer.
func (c *Client) ObjectStates(ctx context.Context, keys []string) ([]coordapi.ObjectState, error) {
	out, err := call(c, ctx, opObjectStates, func(e *encoder) { encStrings(e, keys) }, decObjectStates)
	if err == nil && len(out) != len(keys) {
		return nil, &clientError{opObjectStates, ErrInternal, fmt.Errorf("%w: %d states for %d keys", errMalformed, len(out), len(keys))}
	}
	return out, err
}

// ForgetObjects has the shard drop its garbage rows of keys; see
// coordinator.Coordinator.ForgetObjects.
func (c *Client) ForgetObjects(ctx context.Context, keys []string) (int, error) {
	n, err := call(c, ctx, opForgetObjects, func(e *encoder) { encStrings(e, keys) }, decInt64)
	return int(n), err
}
