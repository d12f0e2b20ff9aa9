package main

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/floe-io/floe/coordinator"
	"github.com/floe-io/floe/coordinator/ha"
	"github.com/floe-io/floe/coordinator/service"
	"github.com/floe-io/floe/internal/probe"
	"github.com/floe-io/floe/internal/testkit"
	"github.com/floe-io/floe/internal/testkit/natstest"
	"github.com/floe-io/floe/metrics"
	"github.com/floe-io/floe/objectstore"
)

// TestReadiness runs a coordinator on a real NATS server and reads its
// /readyz while it leads, with its object store failing, and once it has
// stopped.
func TestReadiness(t *testing.T) {
	ns := natstest.Start(t)
	nc := natstest.Connect(t, ns)
	node, err := ha.Start(nc, ha.Options{
		ID: "c1", LeaseTTL: time.Second, SnapshotInterval: -1,
		Service: service.Options{Cluster: "readytest", Coordinator: coordinator.Options{Dir: t.TempDir(), TierInterval: -1, TxnCheckInterval: -1}},
	})
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	t.Cleanup(func() {
		if !closed {
			node.Close()
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := node.WaitLeader(ctx); err != nil {
		t.Fatal(err)
	}
	mp, err := metrics.New()
	if err != nil {
		t.Fatal(err)
	}
	defer mp.Shutdown(context.Background())
	store := objectstore.NewFaulty(objectstore.NewMemory(), objectstore.FaultOptions{})

	for _, step := range []struct {
		name   string
		do     func()
		failed map[string]bool
	}{
		{name: "leading", do: func() {}},
		{name: "store failing", do: func() { store.SetHeadErrorRate(1) }, failed: map[string]bool{"object_store": true}},
		{name: "stopped", do: func() {
			store.Heal()
			closed = true
			if err := node.Close(); err != nil {
				t.Fatal(err)
			}
			// Its status keeps the last role (the process exits after
			// Close); the cluster's coordinator no longer answers.
		}, failed: map[string]bool{"coordinator": true}},
	} {
		step.do()
		// A new Readiness for each step: no outcome cached from the last.
		h := httpHandler(nc, node, mp, readiness(nc, node, "readytest", store, "", testkit.Logger()))
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("GET", "/readyz", nil))
		var rep probe.Report
		if err := json.Unmarshal(w.Body.Bytes(), &rep); err != nil {
			t.Fatalf("%s: %q: %v", step.name, w.Body, err)
		}
		wantCode := 200
		if len(step.failed) > 0 {
			wantCode = 503
		}
		if w.Code != wantCode || len(rep.Checks) != 4 {
			t.Errorf("%s: %d %s, want %d and 4 checks", step.name, w.Code, w.Body, wantCode)
		}
		for _, c := range rep.Checks {
			if c.OK == step.failed[c.Name] {
				t.Errorf("%s: check %+v, want failed=%v", step.name, c, step.failed[c.Name])
			}
		}
	}
}
