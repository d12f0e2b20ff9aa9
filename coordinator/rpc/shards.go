package rpc

import (
	"context"
	"fmt"

	"github.com/floe-io/floe/coordapi"
)

// object_states request: n, n × key (str). Reply: n, n × (known (bool),
// garbage since ms (varint)). forget_objects request: the same keys; reply:
// the keys kept (live), n, n × key (str).
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

// ForgetObjects has the shard drop its garbage rows of keys, and returns
// the keys it kept, live there; see coordinator.Coordinator.ForgetObjects.
func (c *Client) ForgetObjects(ctx context.Context, keys []string) ([]string, error) {
	return call(c, ctx, opForgetObjects, func(e *encoder) { encStrings(e, keys) }, decStrings)
}
