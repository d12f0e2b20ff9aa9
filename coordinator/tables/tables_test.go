package tables_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/floe-io/floe/coordinator/tables"
	"github.com/floe-io/floe/objectstore"
	"github.com/floe-io/floe/table"
	"github.com/floe-io/floe/table/catalog"
	"github.com/floe-io/floe/table/catalog/catalogtest"
)

// memRows is Rows in memory, failing writes while fail is set.
type memRows struct {
	mu   sync.Mutex
	m    map[string][]byte
	fail error
}

func (r *memRows) Apply(sets [][2][]byte, deletes [][]byte) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fail != nil {
		return r.fail
	}
	if r.m == nil {
		r.m = map[string][]byte{}
	}
	for _, kv := range sets {
		r.m[string(kv[0])] = slices.Clone(kv[1])
	}
	for _, k := range deletes {
		delete(r.m, string(k))
	}
	return nil
}

func (r *memRows) Scan(fn func(k, v []byte) error) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	keys := make([]string, 0, len(r.m))
	for k := range r.m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if err := fn([]byte(k), r.m[k]); err != nil {
			return err
		}
	}
	return nil
}

func TestCatalogContract(t *testing.T) {
	catalogtest.Run(t, func(t *testing.T) catalog.Catalog {
		c, err := tables.New(&memRows{})
		if err != nil {
			t.Fatal(err)
		}
		return c
	})
}

// TestCatalogReload: a catalog opened again over the same rows (a
// restarted or new leader coordinator) has every pointer, multi-level
// namespaces and drops included; a failed write changes nothing; a row
// it cannot read fails the open.
func TestCatalogReload(t *testing.T) {
	ctx := context.Background()
	a := catalog.Ident{Namespace: []string{"floe"}, Name: "a"}
	b := catalog.Ident{Namespace: []string{"x", "y.z"}, Name: "b"}
	gone := catalog.Ident{Namespace: []string{"floe"}, Name: "gone"}
	rows := &memRows{}
	c, err := tables.New(rows)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []struct {
		id         catalog.Ident
		prev, next string
	}{{a, "", "a0"}, {a, "a0", "a1"}, {b, "", "b0"}, {gone, "", "g0"}, {gone, "g0", ""}} {
		if err := c.Swap(ctx, s.id, s.prev, s.next); err != nil {
			t.Fatal(err)
		}
	}
	rows.fail = errors.New("log append fenced")
	if err := c.Swap(ctx, a, "a1", "a2"); err == nil || errors.Is(err, catalog.ErrConflict) {
		t.Fatalf("swap with a failing write: %v", err)
	}
	if got, _ := c.Load(ctx, a); got != "a1" {
		t.Fatalf("after a failed write: %q", got)
	}
	rows.fail = nil

	re, err := tables.New(rows)
	if err != nil {
		t.Fatal(err)
	}
	for id, want := range map[*catalog.Ident]string{&a: "a1", &b: "b0"} {
		if got, err := re.Load(ctx, *id); err != nil || got != want {
			t.Errorf("reloaded %s: %q, %v; want %q", id, got, err, want)
		}
	}
	if _, err := re.Load(ctx, gone); !errors.Is(err, catalog.ErrNoSuchTable) {
		t.Errorf("dropped table after reload: %v", err)
	}
	if nss, _ := re.Namespaces(ctx); !slices.EqualFunc(nss, [][]string{{"floe"}, {"x", "y.z"}}, slices.Equal[[]string]) {
		t.Errorf("namespaces after reload: %v", nss)
	}

	for _, bad := range []struct{ name, k, v string }{
		{"unknown version", "\x01\x04floe\x01t", "\x09"},
		{"truncated value", "\x01\x04floe\x01t", "\x01\x05ab"},
		{"bad key", "\x05", "\x01\x00\x00"},
	} {
		t.Run(bad.name, func(t *testing.T) {
			r := &memRows{m: map[string][]byte{bad.k: []byte(bad.v)}}
			if _, err := tables.New(r); err == nil {
				t.Fatal("opened")
			}
		})
	}
}

// TestTablesCommitOverCatalog: table.Tables commits through the
// coordinator's catalog, and after a reload (a new leader) a retried
// commit of the same range is a no-op.
func TestTablesCommitOverCatalog(t *testing.T) {
	ctx := context.Background()
	rows := &memRows{}
	store := objectstore.NewMemory()
	id := catalog.Ident{Namespace: []string{"floe"}, Name: "orders"}
	rng := table.Range{Partition: 0, From: 0, To: 3, Records: []table.Record{
		{Offset: 0, Timestamp: 1, Value: []byte("a")}, {Offset: 2, Timestamp: 2, Key: []byte("k")},
	}}
	for i, want := range []table.Result{{Rows: 2}, {Skipped: true}} {
		c, err := tables.New(rows)
		if err != nil {
			t.Fatal(err)
		}
		tb, err := table.New(table.Options{Catalog: c, Store: store, Root: "mem://floe"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tb.Create(ctx, id, table.Spec{}); err != nil {
			t.Fatal(err)
		}
		res, err := tb.Commit(ctx, id, rng)
		if err != nil {
			t.Fatal(err)
		}
		if res.Skipped != want.Skipped || res.Rows != want.Rows {
			t.Fatalf("commit %d: %+v, want %+v", i, res, want)
		}
		if cov, err := tb.Covered(ctx, id); err != nil || cov[0] != 3 {
			t.Fatalf("covered %v, %v", cov, err)
		}
	}
}
