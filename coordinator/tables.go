package coordinator

import (
	"context"

	"github.com/floe-io/floe/table/catalog"
)

// The Iceberg tables' metadata pointers live in package tables, in this
// state's family 'l' (its doc draws the rows): cluster-wide, like topics,
// so on shard 0 of a sharded coordinator (docs/design/iceberg-tables.md).

// Tables returns the coordinator's Iceberg catalog (package tables): the
// metadata pointer of every topic's table, a compare-and-swap through
// this coordinator's log. It is valid until Close; its calls do not take
// the coordinator's closeMu, so the catalog methods below are what remote
// callers use.
func (c *Coordinator) Tables() catalog.Catalog { return c.tables }

// TableLoad returns a table's current metadata location, or an error
// wrapping catalog.ErrNoSuchTable (catalog.Catalog.Load).
func (c *Coordinator) TableLoad(ctx context.Context, id catalog.Ident) (string, error) {
	if err := c.enter(ctx); err != nil {
		return "", err
	}
	defer c.leave()
	return c.tables.Load(ctx, id)
}

// TableSwap replaces a table's metadata pointer with next if it is still
// prev, in one synced write; a lost race wraps catalog.ErrConflict
// (catalog.Catalog.Swap).
func (c *Coordinator) TableSwap(ctx context.Context, id catalog.Ident, prev, next string) error {
	if err := c.enter(ctx); err != nil {
		return err
	}
	defer c.leave()
	return c.tables.Swap(ctx, id, prev, next)
}

// TableList returns the tables of a namespace, sorted by name
// (catalog.Catalog.List).
func (c *Coordinator) TableList(ctx context.Context, namespace []string) ([]catalog.Ident, error) {
	if err := c.enter(ctx); err != nil {
		return nil, err
	}
	defer c.leave()
	return c.tables.List(ctx, namespace)
}

// TableNamespaces returns every namespace holding a table, sorted
// (catalog.Catalog.Namespaces).
func (c *Coordinator) TableNamespaces(ctx context.Context) ([][]string, error) {
	if err := c.enter(ctx); err != nil {
		return nil, err
	}
	defer c.leave()
	return c.tables.Namespaces(ctx)
}
