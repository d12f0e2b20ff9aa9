package broker

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/coordinator"
)

// registryCoordinator is the real coordinator with its ListBrokers
// counted, and failing with err when set (the coordinator unreachable).
type registryCoordinator struct {
	*coordinator.Coordinator
	mu    sync.Mutex
	err   error
	calls int
	// panics makes the next ListBrokers panic (a bug in the call).
	panics bool
}

// newRegistryCoordinator returns a real coordinator in memory whose broker
// registrations outlive the test.
func newRegistryCoordinator(t *testing.T) *registryCoordinator {
	return &registryCoordinator{Coordinator: newTestCoordinator(t, func(o *coordinator.Options) { o.BrokerTTL = time.Hour })}
}

func (r *registryCoordinator) ListBrokers(ctx context.Context) ([]coordapi.BrokerInfo, error) {
	r.mu.Lock()
	r.calls++
	err, panics := r.err, r.panics
	r.panics = false
	r.mu.Unlock()
	if panics {
		panic("list brokers")
	}
	if err != nil {
		return nil, err
	}
	return r.Coordinator.ListBrokers(ctx)
}

func (r *registryCoordinator) fail(err error) {
	r.mu.Lock()
	r.err = err
	r.mu.Unlock()
}

func (r *registryCoordinator) listCalls() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls
}

// registerBrokers registers brokers with c, as their heartbeats do.
func registerBrokers(t *testing.T, c coordapi.Coordinator, brokers ...coordapi.BrokerInfo) {
	t.Helper()
	for _, bi := range brokers {
		if err := c.RegisterBroker(t.Context(), bi); err != nil {
			t.Fatalf("register broker %d: %v", bi.NodeID, err)
		}
	}
}

// metadataBrokers returns the node ids Metadata names, and the leaders of
// topic t's partitions.
func metadataBrokers(t *testing.T, b *Broker) ([]int32, map[int32]int) {
	t.Helper()
	req := kmsg.NewPtrMetadataRequest()
	topic := "t"
	req.Topics = []kmsg.MetadataRequestTopic{{Topic: &topic}}
	resp := serveVersion[*kmsg.MetadataResponse](t, b, req, 12)
	var ids []int32
	for _, mb := range resp.Brokers {
		ids = append(ids, mb.NodeID)
	}
	leaders := map[int32]int{}
	for _, mt := range resp.Topics {
		for _, mp := range mt.Partitions {
			leaders[mp.Leader]++
		}
	}
	return ids, leaders
}

func TestMetadataNamesRegisteredBrokers(t *testing.T) {
	rc := newRegistryCoordinator(t)
	createTopic(t, rc, "t", 60, nil)
	registerBrokers(t, rc,
		coordapi.BrokerInfo{NodeID: 3, Host: "127.0.0.3", Port: 9092, Rack: "c"},
		// The registry's entry for this broker is overridden by its own
		// view of itself.
		coordapi.BrokerInfo{NodeID: 1, Host: "stale", Port: 1},
		coordapi.BrokerInfo{NodeID: 2, Host: "127.0.0.2", Port: 9092},
	)
	b := newAdminBroker(t, rc)
	ids, leaders := metadataBrokers(t, b)
	if len(ids) != 3 || ids[0] != 1 || ids[1] != 2 || ids[2] != 3 {
		t.Fatalf("brokers %v, want [1 2 3]", ids)
	}
	for _, id := range ids {
		if leaders[id] == 0 {
			t.Errorf("broker %d leads none of 60 partitions: %v", id, leaders)
		}
	}
	live := b.liveBrokers()
	if live[0].host != "127.0.0.1" || live[0].port != 9092 || live[2].rack == nil || *live[2].rack != "c" {
		t.Errorf("live brokers %+v", live)
	}

	// The list is cached for registryRefresh: no call per Metadata.
	calls := rc.listCalls()
	metadataBrokers(t, b)
	if n := rc.listCalls() - calls; n != 0 {
		t.Errorf("%d ListBrokers calls for a second Metadata within the refresh interval", n)
	}
}

func TestMetadataWithoutRegistry(t *testing.T) {
	rc := newRegistryCoordinator(t)
	createTopic(t, rc, "t", 4, nil)
	// A registered broker the broker cannot learn of.
	registerBrokers(t, rc, coordapi.BrokerInfo{NodeID: 2, Host: "127.0.0.2", Port: 9092})
	rc.fail(errors.New("coordinator unreachable"))
	b := newAdminBroker(t, rc)
	ids, leaders := metadataBrokers(t, b)
	if len(ids) != 1 || ids[0] != 1 || leaders[1] != 4 {
		t.Fatalf("brokers %v leaders %v, want only this broker", ids, leaders)
	}
}

// TestRegistryRefreshAfterPanic checks that a refresh that panicked (the
// request serving it recovers) does not leave the registry marked as being
// refreshed, which would keep the list from ever being fetched again.
func TestRegistryRefreshAfterPanic(t *testing.T) {
	rc := newRegistryCoordinator(t)
	registerBrokers(t, rc, coordapi.BrokerInfo{NodeID: 2, Host: "127.0.0.2", Port: 9092})
	b := newAdminBroker(t, rc)
	rc.mu.Lock()
	rc.panics = true
	rc.mu.Unlock()
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("ListBrokers' panic did not reach the caller")
			}
		}()
		b.registeredBrokers()
	}()
	// Past registryRefresh, as if a second had gone by.
	b.registry.mu.Lock()
	b.registry.mu.tried = time.Time{}
	b.registry.mu.Unlock()
	calls := rc.listCalls()
	list := b.registeredBrokers()
	if n := rc.listCalls() - calls; n != 1 {
		t.Fatalf("%d ListBrokers calls after the refresh interval, want 1", n)
	}
	if len(list) != 1 || list[0].NodeID != 2 {
		t.Fatalf("registered brokers %+v, want broker 2", list)
	}
}
