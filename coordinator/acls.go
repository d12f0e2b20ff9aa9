package coordinator

import (
	"context"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/coordinator/layout"
)

// ACL bindings live in package acls, in this state's family 'a' and its
// meta row "macl-version" (its doc draws the rows): cluster-wide, like
// topics and SCRAM users.

// aclRows is the ACL family and its change counter (acls.Rows).
type aclRows struct{ c *Coordinator }

// Apply writes the bindings' rows and the counter in one synced write.
func (r aclRows) Apply(sets [][2][]byte, deletes [][]byte, version uint64) error {
	return familyRows{r.c, layout.PrefixACL}.apply(sets, deletes, layout.KeyACLVersion, layout.EncodeUint64(version))
}

// Scan calls fn with every binding row.
func (r aclRows) Scan(fn func(key, value []byte) error) error {
	return familyRows{r.c, layout.PrefixACL}.Scan(fn)
}

// Version reads the change counter, 0 when none was written.
func (r aclRows) Version() (uint64, error) {
	v, closer, err := r.c.db.Get(layout.KeyACLVersion)
	switch {
	case errors.Is(err, pebble.ErrNotFound):
		return 0, nil
	case err != nil:
		return 0, fmt.Errorf("read acl version: %w", err)
	}
	defer closer.Close()
	return layout.DecodeUint64("acl version", v)
}

// CreateACLs is acls.Store.CreateACLs.
func (c *Coordinator) CreateACLs(ctx context.Context, bindings []coordapi.ACLBinding) error {
	if err := c.enter(ctx); err != nil {
		return err
	}
	defer c.leave()
	return c.acls.CreateACLs(ctx, bindings)
}

// DeleteACLs is acls.Store.DeleteACLs.
func (c *Coordinator) DeleteACLs(ctx context.Context, filters []coordapi.ACLFilter) ([][]coordapi.ACLBinding, error) {
	if err := c.enter(ctx); err != nil {
		return nil, err
	}
	defer c.leave()
	return c.acls.DeleteACLs(ctx, filters)
}

// DescribeACLs is acls.Store.DescribeACLs.
func (c *Coordinator) DescribeACLs(ctx context.Context, filter coordapi.ACLFilter) ([]coordapi.ACLBinding, error) {
	if err := c.enter(ctx); err != nil {
		return nil, err
	}
	defer c.leave()
	return c.acls.DescribeACLs(ctx, filter)
}

// ACLVersion is acls.Store.ACLVersion.
func (c *Coordinator) ACLVersion(ctx context.Context) (uint64, error) {
	if err := c.enter(ctx); err != nil {
		return 0, err
	}
	defer c.leave()
	return c.acls.ACLVersion(ctx)
}

// SubscribeACLs is acls.Store.SubscribeACLs.
func (c *Coordinator) SubscribeACLs(fn func(version uint64)) (cancel func()) {
	return c.acls.SubscribeACLs(fn)
}
