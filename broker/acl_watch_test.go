package broker

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/internal/testkit"
)

// deafCoordinator loses every ACL notice, as a broker does across a NATS
// disconnect, and can fail ACLVersion.
type deafCoordinator struct {
	coordapi.Coordinator
	fail atomic.Bool
}

func (d *deafCoordinator) SubscribeACLs(func(uint64)) func() { return func() {} }

func (d *deafCoordinator) ACLVersion(ctx context.Context) (uint64, error) {
	if d.fail.Load() {
		return 0, errors.New("coordinator unreachable")
	}
	return d.Coordinator.ACLVersion(ctx)
}

// TestACLChangesReachEveryBroker: an ACL created through one broker applies
// on another at once (notice), and on one that lost the notice within its
// poll interval; a broker that cannot reach the coordinator keeps what it
// loaded.
func TestACLChangesReachEveryBroker(t *testing.T) {
	e := newACLEnv(t)
	e.topic("t", 1, nil)
	deaf := &deafCoordinator{Coordinator: e.coord}
	// The default poll interval: a change applies within about a second.
	b2, addr2 := e.startBroker(2, deaf, func(o *Options) { o.ACLRefreshInterval = 0 })
	e.waitACLs(b2)

	md := func(addr string) int16 {
		return send[*kmsg.MetadataResponse](t, e.clientOf(addr, "alice"), metadataRequest("t")).Topics[0].ErrorCode
	}
	wantCode(t, "broker 2 before", md(addr2), kerr.TopicAuthorizationFailed)

	start := time.Now()
	results, err := e.admin().CreateACLs(t.Context(), kadm.NewACLs().Topics("t").Allow("User:alice").Operations(kadm.OpDescribe))
	if err != nil || results[0].Err != nil {
		t.Fatalf("create acl: %v %+v", err, results)
	}
	wantCode(t, "broker 1, right after the create", md(e.addr), nil) // it applies a change before answering
	testkit.CheckFor(t, 10*time.Second, 10*time.Millisecond, func() error {
		if code := md(addr2); code != 0 {
			return kerr.ErrorForCode(code)
		}
		return nil
	})
	if d := time.Since(start); d > 2500*time.Millisecond {
		t.Fatalf("broker 2 applied the change after %s, want within about a second", d)
	}

	// Unreachable: the loaded bindings stay in force.
	deaf.fail.Store(true)
	v, _ := b2.aclState()
	e.revoke(kadm.NewACLs().Topics("t").Allow("User:alice").AllowHosts().Operations(kadm.OpDescribe))
	wantCode(t, "broker 1 after the revoke", md(e.addr), kerr.TopicAuthorizationFailed)
	if got, loaded := b2.aclState(); got != v || !loaded {
		t.Fatalf("broker 2 moved to version %d (loaded %v) without a coordinator", got, loaded)
	}
	wantCode(t, "broker 2, coordinator unreachable", md(addr2), nil)
	deaf.fail.Store(false)
	e.waitACLs(b2)
	wantCode(t, "broker 2 after the revoke", md(addr2), kerr.TopicAuthorizationFailed)
}

// countingHandler counts log records by level and message.
type countingHandler struct {
	mu     sync.Mutex
	counts map[string]int
}

func (h *countingHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *countingHandler) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *countingHandler) WithGroup(string) slog.Handler            { return h }
func (h *countingHandler) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.counts[r.Level.String()+" "+r.Message]++
	return nil
}

func (h *countingHandler) count(key string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.counts[key]
}

// TestACLDenialsCountedAndLogged: every denial is counted in
// floe.kafka.authorization.denied by API and resource type; a client that
// retries is logged once at Info.
func TestACLDenialsCountedAndLogged(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	logs := &countingHandler{counts: map[string]int{}}
	e := newACLEnv(t, func(o *Options) {
		o.Meter = mp.Meter("test")
		o.Logger = slog.New(logs)
	})
	e.topic("t", 1, nil)
	const n = 5
	for range n {
		wantCode(t, "alice fetch", e.fetchCode("alice", "t"), kerr.TopicAuthorizationFailed)
	}
	if !e.b.AuthorizeTopic("User:admin", "127.0.0.1", kmsg.ACLOperationRead, "t") || e.b.AuthorizeTopic("User:bob", "127.0.0.1", kmsg.ACLOperationRead, "t") {
		t.Fatal("AuthorizeTopic")
	}

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(t.Context(), &rm); err != nil {
		t.Fatal(err)
	}
	got := map[[2]string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != "floe.kafka.authorization.denied" {
				continue
			}
			for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
				api, _ := dp.Attributes.Value(attribute.Key("api"))
				rt, _ := dp.Attributes.Value(attribute.Key("resource_type"))
				got[[2]string{api.AsString(), rt.AsString()}] += dp.Value
			}
		}
	}
	if got[[2]string{"Fetch", "TOPIC"}] != n || got[[2]string{"kv", "TOPIC"}] != 1 {
		t.Fatalf("denials counted: %v", got)
	}
	if c := logs.count("DEBUG authorization denied"); c != n+1 {
		t.Fatalf("%d denials logged at debug, want %d", c, n+1)
	}
	// One Info line for alice's fetches, one for bob's lookup.
	if c := logs.count("INFO authorization denied (logged once a minute per principal, operation and resource)"); c != 2 {
		t.Fatalf("%d denials logged at info, want 2", c)
	}
}
