package table

import (
	"errors"

	"github.com/floe-io/floe/table/catalog"
)

// Ident names a table (catalog.Ident), so that users of Tables need one
// import.
type Ident = catalog.Ident

// Catalog holds the tables' metadata pointers (catalog.Catalog).
type Catalog = catalog.Catalog

// Sentinel errors of the package, checked with errors.Is. A lost swap
// wraps catalog.ErrConflict, a missing table catalog.ErrNoSuchTable.
var (
	// ErrOffsetGap is returned (wrapped) by Tables.Commit when a range
	// starts after the partition's covered offset: the records in between
	// would never reach the table.
	ErrOffsetGap = errors.New("table: range starts after the partition's covered offset")
)
