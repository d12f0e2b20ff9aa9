package broker

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-io/floe/coordapi"
)

// registryCoordinator is the fake coordinator with a settable broker
// registry.
type registryCoordinator struct {
	*fakeCoordinator
	mu      sync.Mutex
	brokers []coordapi.BrokerInfo
	err     error
	calls   int
}

func (r *registryCoordinator) ListBrokers(context.Context) ([]coordapi.BrokerInfo, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls++
	return r.brokers, r.err
}

func (r *registryCoordinator) set(brokers []coordapi.BrokerInfo, err error) {
	r.mu.Lock()
	r.brokers, r.err = brokers, err
	r.mu.Unlock()
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
	rc := &registryCoordinator{fakeCoordinator: newFakeCoordinator()}
	rc.addTopic("t", 60, nil)
	rc.set([]coordapi.BrokerInfo{
		{NodeID: 3, Host: "127.0.0.3", Port: 9092, Rack: "c"},
		// The registry's entry for this broker is overridden by its own
		// view of itself.
		{NodeID: 1, Host: "stale", Port: 1},
		{NodeID: 2, Host: "127.0.0.2", Port: 9092},
	}, nil)
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
	calls := rc.calls
	metadataBrokers(t, b)
	if rc.calls != calls {
		t.Errorf("%d ListBrokers calls for a second Metadata within the refresh interval", rc.calls-calls)
	}
}

func TestMetadataWithoutRegistry(t *testing.T) {
	rc := &registryCoordinator{fakeCoordinator: newFakeCoordinator()}
	rc.addTopic("t", 4, nil)
	rc.set(nil, errors.New("coordinator unreachable"))
	b := newAdminBroker(t, rc)
	ids, leaders := metadataBrokers(t, b)
	if len(ids) != 1 || ids[0] != 1 || leaders[1] != 4 {
		t.Fatalf("brokers %v leaders %v, want only this broker", ids, leaders)
	}
}
