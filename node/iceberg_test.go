package node_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-io/floe/broker"
	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/internal/testkit"
	"github.com/floe-io/floe/internal/testkit/floetest"
	"github.com/floe-io/floe/node"
	"github.com/floe-io/floe/table"
	"github.com/floe-io/floe/table/catalog"
)

// TestIcebergCatalogThroughNode serves the REST catalog from a running
// node with SASL and ACLs on, over its coordinator's table pointers:
// every request needs a SCRAM user's password (HTTP Basic), a table is
// listed with DESCRIBE and loaded with READ on its topic, writes are
// refused, and PyIceberg reads a table through it, every row once.
func TestIcebergCatalogThroughNode(t *testing.T) {
	users := filepath.Join(t.TempDir(), "users")
	if err := os.WriteFile(users, []byte("alice:alice-secret\nbob:bob-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	n := floetest.StartNode(t, node.Config{SASLUsersFile: users, Broker: broker.Options{
		SASLMechanisms: []string{"SCRAM-SHA-512"}, ACLsEnabled: true, SuperUsers: []string{"User:admin"}}})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// Two tables written as a table job will write them, through the
	// coordinator's catalog over NATS.
	tb, err := table.New(table.Options{Catalog: n.CoordinatorClient().TableCatalog(), Store: n.Store(), Root: n.TableRoot()})
	if err != nil {
		t.Fatal(err)
	}
	var want []table.Record
	for o := int64(0); o < 50; o++ {
		want = append(want, table.Record{Partition: int32(o % 2), Offset: o / 2, Timestamp: 1_765_000_000_000 + o,
			Key: fmt.Appendf(nil, "k%d", o%5), Value: fmt.Appendf(nil, "v%d", o)})
	}
	for _, name := range []string{"orders", "secret"} {
		id := table.Ident{Namespace: []string{node.DefaultTableNamespace}, Name: name}
		if _, err := tb.Create(ctx, id, table.Spec{}); err != nil {
			t.Fatal(err)
		}
		var ranges []table.Range
		for p := range int32(2) {
			var recs []table.Record
			for _, r := range want {
				if r.Partition == p {
					recs = append(recs, r)
				}
			}
			ranges = append(ranges, table.Range{Partition: p, From: 0, To: 25, Records: recs})
		}
		if _, err := tb.Commit(ctx, id, ranges...); err != nil {
			t.Fatal(err)
		}
	}
	// alice may read orders; bob may only describe it.
	acl := func(principal string, op kmsg.ACLOperation) coordapi.ACLBinding {
		return coordapi.ACLBinding{ResourceType: kmsg.ACLResourceTypeTopic, ResourceName: "orders", PatternType: kmsg.ACLResourcePatternTypeLiteral,
			Principal: principal, Host: "*", Operation: op, Permission: kmsg.ACLPermissionTypeAllow}
	}
	if err := n.CoordinatorClient().CreateACLs(ctx, []coordapi.ACLBinding{
		acl("User:alice", kmsg.ACLOperationRead), acl("User:alice", kmsg.ACLOperationDescribe), acl("User:bob", kmsg.ACLOperationDescribe),
	}); err != nil {
		t.Fatal(err)
	}
	testkit.CheckFor(t, 10*time.Second, 20*time.Millisecond, func() error {
		if !n.Broker().AuthorizeTopic("User:bob", "127.0.0.1", kmsg.ACLOperationDescribe, "orders") {
			return fmt.Errorf("the ACLs have not reached the broker")
		}
		return nil
	})

	base := "http://" + n.HTTPAddr() + catalog.RESTPrefix + "/v1"
	for _, tt := range []struct {
		name, method, path, user, password string
		status                             int
		body                               string // a substring of the answer
	}{
		{"config without credentials", "GET", "/config", "", "", 401, "Authentication required"},
		{"config with a wrong password", "GET", "/config", "alice", "nope", 401, "invalid username or password"},
		{"config", "GET", "/config", "bob", "bob-secret", 200, `"defaults"`},
		{"namespaces", "GET", "/namespaces", "bob", "bob-secret", 200, `"namespaces":[["floe"]]`},
		{"tables bob may describe", "GET", "/namespaces/floe/tables", "bob", "bob-secret", 200, `"identifiers":[{"namespace":["floe"],"name":"orders"}]`},
		{"load without READ", "GET", "/namespaces/floe/tables/orders", "bob", "bob-secret", 403, "may not READ"},
		{"load of a table without ACLs", "GET", "/namespaces/floe/tables/secret", "alice", "alice-secret", 403, "ForbiddenException"},
		{"load", "GET", "/namespaces/floe/tables/orders", "alice", "alice-secret", 200, `"metadata-location":"` + n.TableRoot()},
		{"load of a missing table", "GET", "/namespaces/floe/tables/gone", "alice", "alice-secret", 403, "ForbiddenException"},
		{"load in another namespace", "GET", "/namespaces/other/tables/orders", "alice", "alice-secret", 403, "not in namespace floe"},
		{"commit", "POST", "/namespaces/floe/tables/orders", "alice", "alice-secret", 405, "read-only"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequestWithContext(ctx, tt.method, base+tt.path, strings.NewReader("{}"))
			if err != nil {
				t.Fatal(err)
			}
			if tt.user != "" {
				req.SetBasicAuth(tt.user, tt.password)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tt.status || !strings.Contains(string(body), tt.body) {
				t.Fatalf("%s %s as %q: %d %s, want %d with %s", tt.method, tt.path, tt.user, resp.StatusCode, body, tt.status, tt.body)
			}
		})
	}

	t.Run("pyiceberg", func(t *testing.T) {
		py := tableReader(t)
		got, listed, summary := pyRead(t, ctx, py, n.HTTPAddr(), "floe.orders",
			`auth={"type":"basic","basic":{"username":"alice","password":"alice-secret"}}`)
		if !slices.Equal(listed, []string{"floe.orders"}) {
			t.Errorf("alice's listing: %v", listed)
		}
		if summary[table.SummaryNextOffsetPrefix+"0"] != "25" || summary[table.SummaryNextOffsetPrefix+"1"] != "25" {
			t.Errorf("summary %v", summary)
		}
		if len(got) != len(want) {
			t.Fatalf("read %d rows, want %d", len(got), len(want))
		}
		for i := range want {
			if got[i].Partition != want[i].Partition || got[i].Offset != want[i].Offset || !bytes.Equal(got[i].Value, want[i].Value) {
				t.Fatalf("row %d: %+v, want %+v", i, got[i], want[i])
			}
		}
	})
}

// pyRead reads table ident with PyIceberg through the node's REST
// catalog: its rows (partition, offset, key, value, headers) sorted by
// offset then partition, the tables the catalog lists in its namespace,
// and the current snapshot's summary.
func pyRead(t *testing.T, ctx context.Context, py, httpAddr, ident string, props ...string) (rows []table.Record, listed []string, summary map[string]string) {
	t.Helper()
	out := pyReadTable(t, ctx, py, httpAddr, ident, props...)
	for _, r := range out.rows {
		rows = append(rows, r.Record)
	}
	return rows, out.listed, out.summary
}

// pyRow is a row PyIceberg read: the fixed columns, and the others
// (typed value columns, _error) JSON-encoded by name.
type pyRow struct {
	table.Record
	typed map[string]string
}

type pyTable struct {
	rows    []pyRow
	listed  []string
	summary map[string]string
}

// pyReadTable is pyRead with the typed columns.
func pyReadTable(t *testing.T, ctx context.Context, py, httpAddr, ident string, props ...string) pyTable {
	t.Helper()
	return pyReadCatalog(t, ctx, py, "http://"+httpAddr+catalog.RESTPrefix, ident, props...)
}

// pyReadCatalog is pyReadTable through the REST catalog at uri.
func pyReadCatalog(t *testing.T, ctx context.Context, py, uri, ident string, props ...string) pyTable {
	t.Helper()
	cmd := exec.CommandContext(ctx, py, append([]string{"../table/testdata/pyiceberg_read.py", "--rest", uri, ident}, props...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("pyiceberg: %v\n%s", err, stderr.String())
	}
	var res pyTable
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var row struct {
			Tables    []string          `json:"tables"`
			Summary   map[string]string `json:"summary"`
			Partition int32             `json:"partition"`
			Offset    int64             `json:"offset"`
			Key       []byte            `json:"key"`   // base64
			Value     []byte            `json:"value"` // base64
			Headers   [][2]*string      `json:"headers"`
			Typed     map[string]string `json:"typed"`
		}
		if err := json.Unmarshal(sc.Bytes(), &row); err != nil {
			t.Fatalf("%v: %s", err, sc.Text())
		}
		switch {
		case row.Tables != nil:
			res.listed = row.Tables
		case row.Summary != nil:
			res.summary = row.Summary
		default:
			r := table.Record{Partition: row.Partition, Offset: row.Offset, Key: row.Key, Value: row.Value}
			for _, h := range row.Headers {
				r.Headers = append(r.Headers, table.Header{Key: *h[0]})
			}
			res.rows = append(res.rows, pyRow{Record: r, typed: row.Typed})
		}
	}
	slices.SortFunc(res.rows, func(a, b pyRow) int {
		if a.Offset != b.Offset {
			return int(a.Offset - b.Offset)
		}
		return int(a.Partition - b.Partition)
	})
	return res
}

// tableReader returns the Python that has PyIceberg: $FLOE_PYTHON, else
// python3; without one the test is skipped, saying how to get it, but
// a $FLOE_PYTHON named and broken fails it (CI installs it).
func tableReader(t *testing.T) string {
	t.Helper()
	py := os.Getenv("FLOE_PYTHON")
	if py == "" {
		py = "python3"
	}
	if out, err := exec.Command(py, "-c", "import pyiceberg, pyarrow").CombinedOutput(); err != nil {
		skip := t.Skipf
		if os.Getenv("FLOE_PYTHON") != "" {
			skip = t.Fatalf
		}
		skip("no PyIceberg for %s (%v: %s); install it with `eval \"$(./scripts/table-readers-venv.sh)\"`", py, err, bytes.TrimSpace(out))
	}
	return py
}
