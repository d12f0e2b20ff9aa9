// Package catalog holds the Iceberg tables' metadata pointers (Catalog,
// and MemCatalog for tests) and serves them as the read-only subset of the
// Iceberg REST catalog API (NewRESTHandler). It imports no Iceberg or
// Arrow library, so a broker can serve the catalog without linking the
// table writer (package table, whose doc draws the formats).
package catalog

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// Sentinel errors of the package, checked with errors.Is.
var (
	// ErrNoSuchTable is returned (wrapped) when a catalog holds no pointer
	// for a table.
	ErrNoSuchTable = errors.New("catalog: no such table")
	// ErrConflict is returned (wrapped) by Catalog.Swap when the table's
	// pointer is no longer the one the caller read: another commit won.
	ErrConflict = errors.New("catalog: metadata pointer changed (commit conflict)")
)

// Ident names a table: a namespace (one or more levels) and a name, as
// Iceberg does. A topic's table is Ident{Namespace: {ns}, Name: topic}.
type Ident struct {
	Namespace []string
	Name      string
}

// String joins the levels and the name with dots, Iceberg's notation.
func (id Ident) String() string {
	return strings.Join(append(slices.Clone(id.Namespace), id.Name), ".")
}

// Validate reports whether id has a namespace of non-empty levels and a
// name.
func (id Ident) Validate() error {
	if id.Name == "" || len(id.Namespace) == 0 {
		return fmt.Errorf("catalog: identifier %q needs a namespace and a name", id.String())
	}
	for _, l := range id.Namespace {
		if l == "" {
			return fmt.Errorf("catalog: identifier %q has an empty namespace level", id.String())
		}
	}
	return nil
}

// Catalog holds, per table, the location of its current metadata file:
// Iceberg's one mutable thing. Everything else (metadata JSON, manifest
// lists, manifests, Parquet data files) is written once under the table's
// location and never changed, so a compare-and-swap of this pointer is a
// commit. The coordinator implements Catalog over its own state (package
// coordinator/tables); MemCatalog is the in-process one for tests. Every
// implementation passes package catalogtest's contract and is safe for
// concurrent use.
type Catalog interface {
	// Load returns the table's current metadata location, or an error
	// wrapping ErrNoSuchTable.
	Load(ctx context.Context, id Ident) (string, error)
	// Swap replaces the table's pointer with next if it is still prev.
	// prev "" creates the table (and fails with ErrConflict if it
	// exists); next "" drops it. A lost race is an error wrapping
	// ErrConflict, and changes nothing.
	Swap(ctx context.Context, id Ident, prev, next string) error
	// List returns the tables of a namespace, sorted by name.
	List(ctx context.Context, namespace []string) ([]Ident, error)
	// Namespaces returns every namespace that holds a table, sorted.
	Namespaces(ctx context.Context) ([][]string, error)
}

// MemCatalog is a Catalog in memory. The zero value is ready to use.
type MemCatalog struct {
	mu struct {
		sync.Mutex
		ptr map[string]memEntry
	}
}

type memEntry struct {
	id  Ident
	loc string
}

var _ Catalog = (*MemCatalog)(nil)

func catalogKey(id Ident) string {
	return strings.Join(append(slices.Clone(id.Namespace), id.Name), "\x00")
}

// Load implements Catalog.
func (c *MemCatalog) Load(_ context.Context, id Ident) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.mu.ptr[catalogKey(id)]
	if !ok {
		return "", fmt.Errorf("load %s: %w", id, ErrNoSuchTable)
	}
	return e.loc, nil
}

// Swap implements Catalog.
func (c *MemCatalog) Swap(_ context.Context, id Ident, prev, next string) error {
	if err := id.Validate(); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	k := catalogKey(id)
	cur, ok := c.mu.ptr[k]
	if cur.loc != prev || ok != (prev != "") {
		return fmt.Errorf("swap %s from %q: current %q: %w", id, prev, cur.loc, ErrConflict)
	}
	if next == "" {
		delete(c.mu.ptr, k)
		return nil
	}
	if c.mu.ptr == nil {
		c.mu.ptr = make(map[string]memEntry)
	}
	c.mu.ptr[k] = memEntry{id: id, loc: next}
	return nil
}

// List implements Catalog.
func (c *MemCatalog) List(_ context.Context, namespace []string) ([]Ident, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []Ident
	for _, e := range c.mu.ptr {
		if slices.Equal(e.id.Namespace, namespace) {
			out = append(out, e.id)
		}
	}
	slices.SortFunc(out, func(a, b Ident) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// Namespaces implements Catalog.
func (c *MemCatalog) Namespaces(_ context.Context) ([][]string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out [][]string
	for _, e := range c.mu.ptr {
		if !slices.ContainsFunc(out, func(ns []string) bool { return slices.Equal(ns, e.id.Namespace) }) {
			out = append(out, slices.Clone(e.id.Namespace))
		}
	}
	slices.SortFunc(out, slices.Compare[[]string])
	return out, nil
}
