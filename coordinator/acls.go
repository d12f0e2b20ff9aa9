package coordinator

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/cockroachdb/pebble"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/internal/valenc"
)

// ACL bindings (coordapi.ACLStore): every binding is a row of the ACL
// family, keyed by the binding itself so that creating one twice writes the
// same key, and all are held in memory (c.mu.acls). The meta row
// "macl-version" counts the changes; every write of the family also writes
// it, in the same batch, so that a broker polling ACLVersion sees a new
// number after any change, across restarts too.
//
//	a rt(1) pattern(1) name str principal str host str op(1) perm(1)
//	  -> version 1, rt(1), pattern(1), op(1), perm(1), name str, principal str, host str
const prefixACL byte = 'a'

// keyACLVersion is the meta row of the ACL change counter.
var keyACLVersion = []byte("macl-version")

func aclKey(b *coordapi.ACLBinding) []byte {
	k := make([]byte, 0, 8+len(b.ResourceName)+len(b.Principal)+len(b.Host))
	k = append(k, prefixACL, byte(b.ResourceType), byte(b.PatternType))
	k = valenc.AppendString(k, b.ResourceName)
	k = valenc.AppendString(k, b.Principal)
	k = valenc.AppendString(k, b.Host)
	return append(k, byte(b.Operation), byte(b.Permission))
}

func encodeACL(b *coordapi.ACLBinding) []byte {
	v := []byte{valenc.Version1, byte(b.ResourceType), byte(b.PatternType), byte(b.Operation), byte(b.Permission)}
	v = valenc.AppendString(v, b.ResourceName)
	v = valenc.AppendString(v, b.Principal)
	return valenc.AppendString(v, b.Host)
}

func decodeACL(v []byte) (coordapi.ACLBinding, error) {
	d := valenc.New("acl", v)
	var b coordapi.ACLBinding
	b.ResourceType = kmsg.ACLResourceType(d.Byte())
	b.PatternType = kmsg.ACLResourcePatternType(d.Byte())
	b.Operation = kmsg.ACLOperation(d.Byte())
	b.Permission = kmsg.ACLPermissionType(d.Byte())
	b.ResourceName = d.String()
	b.Principal = d.String()
	b.Host = d.String()
	return b, d.Done("acl")
}

// loadACLs reads the ACL family and the change counter. It runs before c
// is shared.
func (c *Coordinator) loadACLs() error {
	c.mu.acls = map[coordapi.ACLBinding]struct{}{}
	err := c.scan(prefixACL, func(k, v []byte) error {
		b, err := decodeACL(v)
		if err != nil {
			return fmt.Errorf("coordinator: acl %x: %w", k, err)
		}
		if string(aclKey(&b)) != string(k) {
			return fmt.Errorf("coordinator: acl row %x holds another binding (%+v)", k, b)
		}
		c.mu.acls[b] = struct{}{}
		return nil
	})
	if err != nil {
		return err
	}
	v, closer, err := c.db.Get(keyACLVersion)
	switch {
	case errors.Is(err, pebble.ErrNotFound):
		return nil
	case err != nil:
		return fmt.Errorf("coordinator: read acl version: %w", err)
	}
	defer closer.Close()
	c.mu.aclVersion, err = decodeUint64("acl version", v)
	return err
}

// CreateACLs stores bindings in one durable write, skipping those already
// stored; see coordapi.ACLStore. Every binding must pass
// coordapi.ValidateBinding, else nothing is stored and the error wraps
// kerr.InvalidRequest.
func (c *Coordinator) CreateACLs(ctx context.Context, bindings []coordapi.ACLBinding) error {
	for _, b := range bindings {
		if err := coordapi.ValidateBinding(b); err != nil {
			return fmt.Errorf("create acl %+v: %w", b, err)
		}
	}
	if err := c.enter(ctx); err != nil {
		return err
	}
	defer c.leave()
	var version uint64
	defer func() { c.notifyACLs(version) }()
	c.commit.Lock()
	defer c.commit.Unlock()
	var add []coordapi.ACLBinding
	for _, b := range bindings {
		if _, ok := c.mu.acls[b]; !ok && !slices.Contains(add, b) {
			add = append(add, b)
		}
	}
	if len(add) == 0 {
		return nil
	}
	next := c.mu.aclVersion + 1
	batch := c.db.NewBatch()
	defer batch.Close()
	for i := range add {
		_ = batch.Set(aclKey(&add[i]), encodeACL(&add[i]), nil)
	}
	_ = batch.Set(keyACLVersion, encodeUint64(next), nil)
	if err := c.write(batch, pebble.Sync); err != nil {
		return fmt.Errorf("create acls: commit: %w", err)
	}
	c.mu.Lock()
	for _, b := range add {
		c.mu.acls[b] = struct{}{}
	}
	c.mu.aclVersion = next
	c.mu.Unlock()
	version = next
	for _, b := range add {
		c.log.Info("acl created", aclLogAttrs(&b)...)
	}
	return nil
}

// DeleteACLs removes the bindings each filter matches in one durable write
// and returns them per filter; see coordapi.ACLStore. Every filter must
// pass coordapi.ValidateFilter, else nothing is deleted and the error wraps
// kerr.InvalidRequest.
func (c *Coordinator) DeleteACLs(ctx context.Context, filters []coordapi.ACLFilter) ([][]coordapi.ACLBinding, error) {
	for _, f := range filters {
		if err := coordapi.ValidateFilter(f); err != nil {
			return nil, fmt.Errorf("delete acls %+v: %w", f, err)
		}
	}
	if err := c.enter(ctx); err != nil {
		return nil, err
	}
	defer c.leave()
	var version uint64
	defer func() { c.notifyACLs(version) }()
	c.commit.Lock()
	defer c.commit.Unlock()
	out := make([][]coordapi.ACLBinding, len(filters))
	del := map[coordapi.ACLBinding]struct{}{}
	for i := range filters {
		out[i] = c.matchACLsLocked(&filters[i])
		for _, b := range out[i] {
			del[b] = struct{}{}
		}
	}
	if len(del) == 0 {
		return out, nil
	}
	next := c.mu.aclVersion + 1
	batch := c.db.NewBatch()
	defer batch.Close()
	for b := range del {
		_ = batch.Delete(aclKey(&b), nil)
	}
	_ = batch.Set(keyACLVersion, encodeUint64(next), nil)
	if err := c.write(batch, pebble.Sync); err != nil {
		return nil, fmt.Errorf("delete acls: commit: %w", err)
	}
	c.mu.Lock()
	for b := range del {
		delete(c.mu.acls, b)
	}
	c.mu.aclVersion = next
	c.mu.Unlock()
	version = next
	for b := range del {
		c.log.Info("acl deleted", aclLogAttrs(&b)...)
	}
	return out, nil
}

// DescribeACLs returns the bindings filter matches, sorted; see
// coordapi.ACLStore.
func (c *Coordinator) DescribeACLs(ctx context.Context, filter coordapi.ACLFilter) ([]coordapi.ACLBinding, error) {
	if err := coordapi.ValidateFilter(filter); err != nil {
		return nil, fmt.Errorf("describe acls %+v: %w", filter, err)
	}
	if err := c.enter(ctx); err != nil {
		return nil, err
	}
	defer c.leave()
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.matchACLsLocked(&filter), nil
}

// matchACLsLocked returns the stored bindings f matches, sorted. c.mu (read)
// or c.commit must be held.
func (c *Coordinator) matchACLsLocked(f *coordapi.ACLFilter) []coordapi.ACLBinding {
	var out []coordapi.ACLBinding
	for b := range c.mu.acls {
		if f.Matches(&b) {
			out = append(out, b)
		}
	}
	slices.SortFunc(out, func(a, b coordapi.ACLBinding) int { return a.Compare(&b) })
	return out
}

// ACLVersion returns the ACL change counter; see coordapi.ACLStore.
func (c *Coordinator) ACLVersion(ctx context.Context) (uint64, error) {
	if err := c.enter(ctx); err != nil {
		return 0, err
	}
	defer c.leave()
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.mu.aclVersion, nil
}

// SubscribeACLs registers fn to be called with the new ACL version after
// every change of the bindings committed. fn runs on the changing
// goroutine after its locks are released and should return quickly. The
// returned cancel stops further calls.
func (c *Coordinator) SubscribeACLs(fn func(version uint64)) (cancel func()) {
	c.subs.Lock()
	defer c.subs.Unlock()
	if c.subs.acls == nil {
		c.subs.acls = map[int]func(uint64){}
	}
	id := c.subs.next
	c.subs.next++
	c.subs.acls[id] = fn
	return func() {
		c.subs.Lock()
		delete(c.subs.acls, id)
		c.subs.Unlock()
	}
}

// notifyACLs calls every ACL subscriber with version, unless it is 0 (no
// change). ACL changes defer it before taking their locks.
func (c *Coordinator) notifyACLs(version uint64) {
	if version == 0 {
		return
	}
	c.subs.Lock()
	fns := make([]func(uint64), 0, len(c.subs.acls))
	for _, fn := range c.subs.acls {
		fns = append(fns, fn)
	}
	c.subs.Unlock()
	for _, fn := range fns {
		fn(version)
	}
}

// aclLogAttrs are a binding's log attributes.
func aclLogAttrs(b *coordapi.ACLBinding) []any {
	return []any{"resource_type", b.ResourceType.String(), "pattern", b.PatternType.String(), "name", b.ResourceName,
		"principal", b.Principal, "host", b.Host, "operation", b.Operation.String(), "permission", b.Permission.String()}
}
