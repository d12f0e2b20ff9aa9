// Package tables is the coordinator's Iceberg catalog (issue 41,
// docs/design/iceberg-tables.md): the metadata pointer of every table, a
// table/catalog.Catalog whose compare-and-swap is one durable write of the
// coordinator's replicated state. It owns the rows of a key family lent
// by the batch coordinator, as package txn owns its transactional ids:
//
//	family  key                                      value
//	------  ---------------------------------------  ------------------------------------------
//	table   'l' n(uvarint) n × level str, name str   version 1: metadata location str,
//	                                                 previous metadata location str
//
// str is a uvarint length and the bytes (internal/valenc). The family byte
// 'l' is the batch coordinator's, which lends the family
// (coordinator/tables.go, drawn in coordinator/layout/doc.go); the rows here
// never include it. Later versions add the table's topic id and the covered
// offsets the planner keeps (the design's planning copy of the snapshot
// summary); a version-1 row stays readable.
//
// Every pointer is held in memory, loaded by New from Rows; Swap checks
// the pointer and writes the row under one mutex, and changes memory only
// once the write is durable, so a failed write changes nothing a reader
// sees (its outcome in the replicated log may still be unknown: the
// caller reloads, as table.Tables does).
package tables

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/floe-io/floe/internal/valenc"
	"github.com/floe-io/floe/table/catalog"
)

// Rows is where the catalog keeps a row per table, keyed as the package
// doc draws: a key family of the batch coordinator's replicated state
// (the coordinator's familyRows implements it).
type Rows interface {
	// Apply sets sets' key-value pairs and deletes deletes, in one
	// durable write.
	Apply(sets [][2][]byte, deletes [][]byte) error
	// Scan calls fn with every row in key order; key and value are valid
	// during the call only.
	Scan(fn func(key, value []byte) error) error
}

// Catalog is the coordinator's catalog.Catalog.
type Catalog struct {
	rows Rows
	mu   struct {
		sync.Mutex
		byKey map[string]entry // by row key
	}
}

type entry struct {
	id   catalog.Ident
	loc  string
	prev string
}

var _ catalog.Catalog = (*Catalog)(nil)

// New loads every table's pointer from rows.
func New(rows Rows) (*Catalog, error) {
	c := &Catalog{rows: rows}
	c.mu.byKey = make(map[string]entry)
	err := rows.Scan(func(k, v []byte) error {
		id, err := decodeKey(k)
		if err != nil {
			return err
		}
		e, err := decodeValue(id, v)
		if err != nil {
			return err
		}
		c.mu.byKey[string(k)] = e
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("tables: load: %w", err)
	}
	return c, nil
}

// Load implements catalog.Catalog.
func (c *Catalog) Load(_ context.Context, id catalog.Ident) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.mu.byKey[string(encodeKey(id))]
	if !ok {
		return "", fmt.Errorf("tables: load %s: %w", id, catalog.ErrNoSuchTable)
	}
	return e.loc, nil
}

// Swap implements catalog.Catalog: the check and the durable write happen
// under one lock, so of concurrent swaps from one pointer one wins.
func (c *Catalog) Swap(_ context.Context, id catalog.Ident, prev, next string) error {
	if err := id.Validate(); err != nil {
		return err
	}
	k := encodeKey(id)
	c.mu.Lock()
	defer c.mu.Unlock()
	cur, ok := c.mu.byKey[string(k)]
	if cur.loc != prev || ok != (prev != "") {
		return fmt.Errorf("tables: swap %s from %q: current %q: %w", id, prev, cur.loc, catalog.ErrConflict)
	}
	if next == "" {
		if err := c.rows.Apply(nil, [][]byte{k}); err != nil {
			return fmt.Errorf("tables: drop %s: %w", id, err)
		}
		delete(c.mu.byKey, string(k))
		return nil
	}
	e := entry{id: id, loc: next, prev: prev}
	if err := c.rows.Apply([][2][]byte{{k, encodeValue(e)}}, nil); err != nil {
		return fmt.Errorf("tables: swap %s: %w", id, err)
	}
	c.mu.byKey[string(k)] = e
	return nil
}

// List implements catalog.Catalog.
func (c *Catalog) List(_ context.Context, namespace []string) ([]catalog.Ident, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []catalog.Ident
	for _, e := range c.mu.byKey {
		if slices.Equal(e.id.Namespace, namespace) {
			out = append(out, e.id)
		}
	}
	slices.SortFunc(out, func(a, b catalog.Ident) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// Namespaces implements catalog.Catalog.
func (c *Catalog) Namespaces(_ context.Context) ([][]string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out [][]string
	for _, e := range c.mu.byKey {
		if !slices.ContainsFunc(out, func(ns []string) bool { return slices.Equal(ns, e.id.Namespace) }) {
			out = append(out, slices.Clone(e.id.Namespace))
		}
	}
	slices.SortFunc(out, slices.Compare[[]string])
	return out, nil
}

// encodeKey is a table's row key (package doc), without the family byte.
func encodeKey(id catalog.Ident) []byte {
	k := binary.AppendUvarint(nil, uint64(len(id.Namespace)))
	for _, l := range id.Namespace {
		k = valenc.AppendString(k, l)
	}
	return valenc.AppendString(k, id.Name)
}

func decodeKey(k []byte) (catalog.Ident, error) {
	d := valenc.Fields(k)
	var id catalog.Ident
	n := d.Uvarint()
	for i := uint64(0); i < n && d.Err() == nil; i++ {
		id.Namespace = append(id.Namespace, d.String())
	}
	id.Name = d.String()
	if err := d.Done("table key"); err != nil {
		return id, err
	}
	return id, id.Validate()
}

// encodeValue is a table's row value, version 1.
func encodeValue(e entry) []byte {
	v := []byte{valenc.Version1}
	v = valenc.AppendString(v, e.loc)
	return valenc.AppendString(v, e.prev)
}

func decodeValue(id catalog.Ident, v []byte) (entry, error) {
	d := valenc.New("table", v) // refuses any version but 1
	e := entry{id: id, loc: d.String(), prev: d.String()}
	if err := d.Done("table"); err != nil {
		return entry{}, fmt.Errorf("table %s: %w", id, err)
	}
	return e, nil
}
