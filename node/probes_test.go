package node_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/floe-io/floe/broker"
	"github.com/floe-io/floe/internal/probe"
	"github.com/floe-io/floe/internal/testkit"
	"github.com/floe-io/floe/internal/testkit/floetest"
	"github.com/floe-io/floe/internal/testkit/natstest"
	"github.com/floe-io/floe/node"
	"github.com/floe-io/floe/objectstore"
)

// TestProbes starts real nodes, healthy or with a part failing, and reads
// /healthz and /readyz: /healthz answers "ok" while the process serves;
// /readyz answers 503 naming the check that failed.
func TestProbes(t *testing.T) {
	for _, tc := range []struct {
		name string
		// start returns a running node and breaks what the case breaks.
		start  func(t *testing.T) *node.Node
		ready  bool
		failed []string // the checks that fail
		// cluster: the node uses a cluster's coordinator (--nats-url),
		// so /readyz also checks its shard count.
		cluster bool
	}{
		{
			name:  "healthy",
			start: func(t *testing.T) *node.Node { return floetest.StartNode(t, node.Config{}) },
			ready: true,
		},
		{
			name: "object store failing",
			start: func(t *testing.T) *node.Node {
				store := objectstore.NewFaulty(objectstore.NewMemory(), objectstore.FaultOptions{})
				n := floetest.StartNode(t, node.Config{Store: store})
				store.SetHeadErrorRate(1)
				return n
			},
			failed: []string{"object_store"},
		},
		{
			name: "object store too slow",
			start: func(t *testing.T) *node.Node {
				store := objectstore.NewFaulty(objectstore.NewMemory(), objectstore.FaultOptions{})
				n := floetest.StartNode(t, node.Config{Store: store})
				store.SetLatency(5*time.Second, 0)
				return n
			},
			failed: []string{"object_store"},
		},
		{
			// A cluster broker whose coordinator is not running: NATS
			// answers, nobody serves the coordinator's subjects.
			name: "no coordinator",
			start: func(t *testing.T) *node.Node {
				ns := natstest.Start(t)
				return floetest.StartNode(t, node.Config{NATSURL: ns.ClientURL(), CoordinatorTimeout: 300 * time.Millisecond})
			},
			failed:  []string{"coordinator", "registered", "shards"},
			cluster: true,
		},
		{
			name:    "cluster broker",
			start:   func(t *testing.T) *node.Node { return clusterBroker(t, 0) },
			ready:   true,
			cluster: true,
		},
		{
			// Told the cluster's coordinator has 3 shards when it has
			// one: its partitions' calls would go to shards that do not
			// exist.
			name:    "cluster broker told another shard count",
			start:   func(t *testing.T) *node.Node { return clusterBroker(t, 3) },
			failed:  []string{"shards"},
			cluster: true,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := tc.start(t)
			if code, body := httpGet(t, n, "/healthz"); code != 200 || body != "ok\n" {
				t.Fatalf("/healthz: %d %q", code, body)
			}
			want := map[string]bool{"coordinator": true, "registered": true, "object_store": true}
			if tc.cluster {
				want["shards"] = true
			}
			for _, name := range tc.failed {
				want[name] = false
			}
			wantCode := map[bool]int{true: 200, false: 503}[tc.ready]
			// The broker registers moments after it starts: wait for the
			// answer the case expects, every check's outcome included.
			var rep probe.Report
			testkit.CheckFor(t, 10*time.Second, 100*time.Millisecond, func() error {
				code, body := httpGet(t, n, "/readyz")
				rep = probe.Report{}
				if err := json.Unmarshal([]byte(body), &rep); err != nil {
					t.Fatalf("/readyz body %q: %v", body, err)
				}
				if code != wantCode || rep.Ready != tc.ready || len(rep.Checks) != len(want) {
					return fmt.Errorf("/readyz: %d %s, want %d with outcomes %v", code, body, wantCode, want)
				}
				for _, c := range rep.Checks {
					if ok, known := want[c.Name]; !known || c.OK != ok || (c.Error == "") != ok {
						return fmt.Errorf("check %+v, want ok=%v", c, ok)
					}
				}
				return nil
			})
			for _, c := range rep.Checks {
				if c.TookMs > 1500 {
					t.Errorf("check %s took %.0f ms, past its timeout", c.Name, c.TookMs)
				}
			}
		})
	}
}

// clusterBroker starts a node on the coordinator of another, embedded one
// (whose NATS listens), as brokers use cmd/coordinator, routing over
// shards coordinator shards (--coordinator-shards).
func clusterBroker(t *testing.T, shards int) *node.Node {
	t.Helper()
	n1 := floetest.StartNode(t, node.Config{NATSListen: "127.0.0.1:0", Cluster: "probetest"})
	return floetest.StartNode(t, node.Config{Store: n1.Store(), NATSURL: n1.NATSURL(), Cluster: "probetest",
		CoordinatorShards: shards, Broker: broker.Options{NodeID: 2}})
}

func httpGet(t *testing.T, n *node.Node, path string) (int, string) {
	t.Helper()
	cl := &http.Client{Timeout: 5 * time.Second}
	resp, err := cl.Get("http://" + n.HTTPAddr() + path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	return resp.StatusCode, string(b)
}
