package coordinator

import (
	"context"
	"errors"
	"testing"

	"github.com/floe-io/floe/table/catalog"
	"github.com/floe-io/floe/table/catalog/catalogtest"
)

// TestTablesCatalogContract runs the catalog contract against the
// coordinator's own catalog, its pointers in family 'l' of a real Pebble.
func TestTablesCatalogContract(t *testing.T) {
	catalogtest.Run(t, func(t *testing.T) catalog.Catalog { return newEnv(t).c.Tables() })
}

// TestTablesReopen checks that the pointers are durable (a reopen reads
// them back) and that the table family leaves the coordinator's own state
// alone.
func TestTablesReopen(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	e.topic("orders", 2, nil)
	id := catalog.Ident{Namespace: []string{"floe"}, Name: "orders"}
	steps := []struct{ prev, next string }{{"", "s3://b/t/v1.json"}, {"s3://b/t/v1.json", "s3://b/t/v2.json"}}
	for _, s := range steps {
		if err := e.c.TableSwap(ctx, id, s.prev, s.next); err != nil {
			t.Fatalf("swap %q -> %q: %v", s.prev, s.next, err)
		}
	}
	if err := e.c.TableSwap(ctx, id, "s3://b/t/v1.json", "s3://b/t/v3.json"); !errors.Is(err, catalog.ErrConflict) {
		t.Fatalf("stale swap: %v, want ErrConflict", err)
	}
	e.reopen()
	if loc, err := e.c.TableLoad(ctx, id); err != nil || loc != "s3://b/t/v2.json" {
		t.Fatalf("after reopen: %q, %v", loc, err)
	}
	if ids, err := e.c.TableList(ctx, []string{"floe"}); err != nil || len(ids) != 1 || ids[0].Name != "orders" {
		t.Fatalf("list after reopen: %v, %v", ids, err)
	}
	if ns, err := e.c.TableNamespaces(ctx); err != nil || len(ns) != 1 || ns[0][0] != "floe" {
		t.Fatalf("namespaces after reopen: %v, %v", ns, err)
	}
	if _, err := e.c.Topic(ctx, "orders"); err != nil {
		t.Fatalf("the topic after reopen: %v", err)
	}
	if err := e.c.TableSwap(ctx, id, "s3://b/t/v2.json", ""); err != nil {
		t.Fatal(err)
	}
	e.reopen()
	if _, err := e.c.TableLoad(ctx, id); !errors.Is(err, catalog.ErrNoSuchTable) {
		t.Fatalf("dropped table after reopen: %v", err)
	}
}
