package rpc_test

import (
	"context"
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/floe-io/floe/table/catalog"
	"github.com/floe-io/floe/table/catalog/catalogtest"
)

// TestTableCatalogOverNATS runs the catalog contract against the client's
// TableCatalog: every call a request over a real NATS server to a
// coordinator's table family.
func TestTableCatalogOverNATS(t *testing.T) {
	catalogtest.Run(t, func(t *testing.T) catalog.Catalog { return newEnv(t, nil).client.TableCatalog() })
}

// TestTableCatalogErrors checks what crosses the wire besides the
// contract: the sentinels keep the coordinator's text, a bad identifier
// is INVALID_REQUEST, and the pointers are the coordinator's own.
func TestTableCatalogErrors(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	cat := e.client.TableCatalog()
	id := catalog.Ident{Namespace: []string{"floe"}, Name: "orders"}
	tests := []struct {
		name string
		call func() error
		want error
	}{
		{"load of a missing table", func() error { _, err := cat.Load(ctx, id); return err }, catalog.ErrNoSuchTable},
		{"create", func() error { return cat.Swap(ctx, id, "", "m1") }, nil},
		{"create again", func() error { return cat.Swap(ctx, id, "", "m2") }, catalog.ErrConflict},
		{"swap from a stale pointer", func() error { return cat.Swap(ctx, id, "m0", "m2") }, catalog.ErrConflict},
		{"swap", func() error { return cat.Swap(ctx, id, "m1", "m2") }, nil},
		{"load of a bad identifier", func() error { _, err := cat.Load(ctx, catalog.Ident{Name: "t"}); return err }, kerr.InvalidRequest},
		{"swap of a bad identifier", func() error { return cat.Swap(ctx, catalog.Ident{Namespace: []string{""}, Name: "t"}, "", "m") }, kerr.InvalidRequest},
	}
	for _, tt := range tests {
		err := tt.call()
		if tt.want == nil && err != nil || tt.want != nil && !errors.Is(err, tt.want) {
			t.Fatalf("%s: %v, want %v", tt.name, err, tt.want)
		}
	}
	if loc, err := e.coord.TableLoad(ctx, id); err != nil || loc != "m2" {
		t.Fatalf("the coordinator's pointer: %q, %v", loc, err)
	}
	_, err := cat.Load(ctx, catalog.Ident{Namespace: []string{"floe"}, Name: "nope"})
	if !errors.Is(err, catalog.ErrNoSuchTable) || err.Error() == catalog.ErrNoSuchTable.Error() {
		t.Fatalf("a missing table's error says nothing of which: %v", err)
	}
}
