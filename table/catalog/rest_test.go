package catalog_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/floe-io/floe/objectstore"
	"github.com/floe-io/floe/table"
	"github.com/floe-io/floe/table/catalog"
)

var topic = catalog.Ident{Namespace: []string{"floe"}, Name: "orders"}

// TestRESTHandler checks each route of the read-only REST catalog, its
// errors in the spec's form, and that Authorize hides and forbids.
func TestRESTHandler(t *testing.T) {
	ctx := context.Background()
	store := objectstore.NewMemory()
	cat := &catalog.MemCatalog{}
	tb, err := table.New(table.Options{Catalog: cat, Store: store, Root: "mem://floe"})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []catalog.Ident{topic, {Namespace: []string{"floe"}, Name: "secret"}, {Namespace: []string{"a", "b"}, Name: "c"}} {
		if _, err := tb.Create(ctx, id, table.Spec{}); err != nil {
			t.Fatal(err)
		}
	}
	loc, err := cat.Load(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(catalog.NewRESTHandler(cat, store, "mem://floe", catalog.RESTOptions{
		Defaults: map[string]string{"s3.region": "us-east-1"},
		Authorize: func(_ *http.Request, id catalog.Ident, load bool) error {
			if id.Name == "secret" {
				return errors.New("denied")
			}
			return nil
		},
	}))
	t.Cleanup(srv.Close)

	for _, tc := range []struct {
		method, path string
		code         int
		contains     []string
	}{
		{"GET", "/iceberg/v1/config", 200, []string{`"defaults":{"s3.region":"us-east-1"}`, `"overrides":{}`}},
		{"GET", "/iceberg/v1/namespaces", 200, []string{`"namespaces":[["a","b"],["floe"]]`}},
		{"GET", "/iceberg/v1/namespaces?parent=a", 200, []string{`"namespaces":[["a","b"]]`}},
		{"GET", "/iceberg/v1/namespaces/floe", 200, []string{`"namespace":["floe"]`}},
		{"HEAD", "/iceberg/v1/namespaces/floe", 204, nil},
		{"GET", "/iceberg/v1/namespaces/a%1Fb/tables", 200, []string{`{"namespace":["a","b"],"name":"c"}`}},
		{"GET", "/iceberg/v1/namespaces/nope", 404, []string{`"type":"NoSuchNamespaceException"`, `"code":404`}},
		{"GET", "/iceberg/v1/namespaces/floe/tables", 200, []string{`"identifiers":[{"namespace":["floe"],"name":"orders"}]`}},
		{"GET", "/iceberg/v1/namespaces/floe/tables/orders", 200, []string{`"metadata-location":"` + loc + `"`, `"format-version":2`, `"floe.table-version":"1"`}},
		{"HEAD", "/iceberg/v1/namespaces/floe/tables/orders", 204, nil},
		{"GET", "/iceberg/v1/namespaces/floe/tables/secret", 403, []string{`"type":"ForbiddenException"`}},
		{"GET", "/iceberg/v1/namespaces/floe/tables/nope", 404, []string{`"type":"NoSuchTableException"`}},
		{"POST", "/iceberg/v1/namespaces/floe/tables/orders", 405, []string{`"type":"NotSupportedException"`}},
		{"DELETE", "/iceberg/v1/namespaces/floe/tables/orders", 405, nil},
		{"GET", "/iceberg/v1/oauth/tokens", 404, nil},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			req, err := http.NewRequest(tc.method, srv.URL+tc.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != tc.code {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.code, body)
			}
			if tc.method != "HEAD" && !json.Valid(body) {
				t.Fatalf("not JSON: %s", body)
			}
			compact := strings.ReplaceAll(string(body), " ", "")
			for _, c := range tc.contains {
				if !strings.Contains(compact, c) {
					t.Errorf("body lacks %s: %s", c, body)
				}
			}
		})
	}
}
