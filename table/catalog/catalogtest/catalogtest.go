// Package catalogtest is the contract every catalog.Catalog passes: one
// test body that MemCatalog runs and the coordinator's catalog will run,
// as objectstore's contract test runs over every store.
package catalogtest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/floe-io/floe/table/catalog"
)

// Run checks the Catalog that newCatalog returns (a fresh, empty one
// per call): loads, creates, swaps, drops, listings, and that of
// concurrent swaps from one pointer exactly one wins.
func Run(t *testing.T, newCatalog func(t *testing.T) catalog.Catalog) {
	a := catalog.Ident{Namespace: []string{"floe"}, Name: "a"}
	b := catalog.Ident{Namespace: []string{"floe"}, Name: "b"}
	c := catalog.Ident{Namespace: []string{"x", "y"}, Name: "c"}
	type step struct {
		op       string // load, swap
		id       catalog.Ident
		prev     string
		next     string
		want     string // load's answer
		wantErr  error
		anyError bool
	}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{name: "load of a missing table", steps: []step{
			{op: "load", id: a, wantErr: catalog.ErrNoSuchTable},
		}},
		{name: "create then load", steps: []step{
			{op: "swap", id: a, next: "m0"},
			{op: "load", id: a, want: "m0"},
			{op: "load", id: b, wantErr: catalog.ErrNoSuchTable},
		}},
		{name: "create twice", steps: []step{
			{op: "swap", id: a, next: "m0"},
			{op: "swap", id: a, next: "other", wantErr: catalog.ErrConflict},
			{op: "load", id: a, want: "m0"},
		}},
		{name: "swap from the current pointer", steps: []step{
			{op: "swap", id: a, next: "m0"},
			{op: "swap", id: a, prev: "m0", next: "m1"},
			{op: "load", id: a, want: "m1"},
		}},
		{name: "swap from a stale pointer", steps: []step{
			{op: "swap", id: a, next: "m0"},
			{op: "swap", id: a, prev: "m0", next: "m1"},
			{op: "swap", id: a, prev: "m0", next: "m2", wantErr: catalog.ErrConflict},
			{op: "load", id: a, want: "m1"},
		}},
		{name: "swap of a missing table", steps: []step{
			{op: "swap", id: a, prev: "m0", next: "m1", wantErr: catalog.ErrConflict},
		}},
		{name: "drop", steps: []step{
			{op: "swap", id: a, next: "m0"},
			{op: "swap", id: a, prev: "m0"},
			{op: "load", id: a, wantErr: catalog.ErrNoSuchTable},
			{op: "swap", id: a, next: "n0"},
			{op: "load", id: a, want: "n0"},
		}},
		{name: "invalid identifiers", steps: []step{
			{op: "swap", id: catalog.Ident{Name: "t"}, next: "m0", anyError: true},
			{op: "swap", id: catalog.Ident{Namespace: []string{""}, Name: "t"}, next: "m0", anyError: true},
			{op: "swap", id: catalog.Ident{Namespace: []string{"n"}}, next: "m0", anyError: true},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			cat := newCatalog(t)
			for i, s := range tc.steps {
				var got string
				var err error
				switch s.op {
				case "load":
					got, err = cat.Load(ctx, s.id)
				case "swap":
					err = cat.Swap(ctx, s.id, s.prev, s.next)
				}
				switch {
				case s.anyError && err == nil:
					t.Fatalf("step %d (%s %s): no error", i, s.op, s.id)
				case s.wantErr != nil && !errors.Is(err, s.wantErr):
					t.Fatalf("step %d (%s %s): err %v, want %v", i, s.op, s.id, err, s.wantErr)
				case s.wantErr == nil && !s.anyError && err != nil:
					t.Fatalf("step %d (%s %s): %v", i, s.op, s.id, err)
				case got != s.want:
					t.Fatalf("step %d (%s %s): %q, want %q", i, s.op, s.id, got, s.want)
				}
			}
		})
	}

	t.Run("listings", func(t *testing.T) {
		ctx := context.Background()
		cat := newCatalog(t)
		for _, id := range []catalog.Ident{c, b, a} {
			if err := cat.Swap(ctx, id, "", "m-"+id.Name); err != nil {
				t.Fatal(err)
			}
		}
		ids, err := cat.List(ctx, []string{"floe"})
		if err != nil {
			t.Fatal(err)
		}
		if len(ids) != 2 || ids[0].Name != "a" || ids[1].Name != "b" {
			t.Fatalf("List(floe) = %v", ids)
		}
		if ids, err := cat.List(ctx, []string{"x"}); err != nil || len(ids) != 0 {
			t.Fatalf("List(x) = %v, %v", ids, err)
		}
		nss, err := cat.Namespaces(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.EqualFunc(nss, [][]string{{"floe"}, {"x", "y"}}, slices.Equal[[]string]) {
			t.Fatalf("Namespaces = %v", nss)
		}
	})

	t.Run("concurrent swaps: one wins", func(t *testing.T) {
		ctx := context.Background()
		cat := newCatalog(t)
		if err := cat.Swap(ctx, a, "", "m0"); err != nil {
			t.Fatal(err)
		}
		const n = 8
		var wg sync.WaitGroup
		errs := make([]error, n)
		for i := range n {
			wg.Go(func() { errs[i] = cat.Swap(ctx, a, "m0", fmt.Sprintf("m1-%d", i)) })
		}
		wg.Wait()
		won := -1
		for i, err := range errs {
			switch {
			case err == nil && won >= 0:
				t.Fatalf("swaps %d and %d both won", won, i)
			case err == nil:
				won = i
			case !errors.Is(err, catalog.ErrConflict):
				t.Fatalf("swap %d: %v", i, err)
			}
		}
		if won < 0 {
			t.Fatal("no swap won")
		}
		if got, err := cat.Load(ctx, a); err != nil || got != fmt.Sprintf("m1-%d", won) {
			t.Fatalf("load %q, %v; swap %d won", got, err, won)
		}
	})
}
