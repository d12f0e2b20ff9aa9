package broker

import (
	"context"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/groups"
)

func TestZoneFromClientID(t *testing.T) {
	for _, tc := range []struct{ id, want string }{
		{"", ""},
		{"producer-1", ""},
		{"floe_az=us-east-1a", "us-east-1a"},
		{"app,floe_az=b", "b"},
		{"app;floe_az=b;x=y", "b"},
		{"floe_az=b other", "b"},
		{"diskless_az=c", "c"},
		{"app-diskless_az=c,more", "c"},
		{"floe_az=", ""},
		{"floe_az=," + "x", ""},
		{"floe_az=" + string(make([]byte, maxZoneLen+1)), ""},
	} {
		if got := zoneFromClientID(tc.id); got != tc.want {
			t.Errorf("zoneFromClientID(%q) = %q, want %q", tc.id, got, tc.want)
		}
	}
}

// zoneCluster registers six brokers in three zones (1-2 in a, 3-4 in b,
// 5-6 in c) and returns broker 1 (zone a) over it, with topic "t" of 60
// partitions.
func zoneCluster(t *testing.T) (*Broker, coordapi.Topic) {
	t.Helper()
	rc := newRegistryCoordinator(t)
	tp := createTopic(t, rc, "t", 60, nil)
	var infos []coordapi.BrokerInfo
	for id := int32(1); id <= 6; id++ {
		infos = append(infos, coordapi.BrokerInfo{NodeID: id, Host: fmt.Sprintf("127.0.0.%d", id), Port: 9092, Rack: string(rune('a' + (id-1)/2))})
	}
	registerBrokers(t, rc, infos...)
	b := newTestBroker(t, Deps{Coordinator: rc, Groups: groups.Direct(newTestGroups(t, rc))}, func(o *Options) { o.Rack = "a" })
	return b, tp
}

// serveOn sends req at version as client clientID on connection c (nil:
// none) through the broker's handler.
func serveOn[R kmsg.Response](t *testing.T, b *Broker, c *conn, clientID string, req kmsg.Request, version int16) R {
	t.Helper()
	req.SetVersion(version)
	frame := kmsg.NewRequestFormatter(kmsg.FormatterClientID(clientID)).AppendRequest(nil, req, 7)
	r, a, err := parseRequest(frame[4:])
	if err != nil {
		t.Fatal(err)
	}
	r.conn = c
	resp, err := a.fn(b, context.Background(), r)
	if err != nil {
		t.Fatalf("%s: %v", kmsg.NameForKey(req.Key()), err)
	}
	return resp.(R)
}

// leaders returns the leaders Metadata names for t's partitions.
func leaders(t *testing.T, b *Broker, c *conn, clientID string) []int32 {
	t.Helper()
	req := kmsg.NewPtrMetadataRequest()
	topic := "t"
	req.Topics = []kmsg.MetadataRequestTopic{{Topic: &topic}}
	resp := serveOn[*kmsg.MetadataResponse](t, b, c, clientID, req, 12)
	if len(resp.Brokers) != 6 {
		t.Fatalf("Metadata names %d brokers, want all 6", len(resp.Brokers))
	}
	out := make([]int32, len(resp.Topics[0].Partitions))
	for _, p := range resp.Topics[0].Partitions {
		out[p.Partition] = p.Leader
	}
	return out
}

// TestZoneMetadata: a client whose zone is known gets every leader in its
// zone, spread over the zone's brokers; an unknown zone, or none, gets all
// brokers; the connection keeps a zone learned from client.id.
func TestZoneMetadata(t *testing.T) {
	b, _ := zoneCluster(t)
	for _, tc := range []struct {
		clientID string
		want     []int32
	}{
		{"app,floe_az=b", []int32{3, 4}},
		{"diskless_az=c", []int32{5, 6}},
		{"floe_az=a", []int32{1, 2}},
		{"floe_az=elsewhere", []int32{1, 2, 3, 4, 5, 6}},
		{"plain", []int32{1, 2, 3, 4, 5, 6}},
	} {
		t.Run(tc.clientID, func(t *testing.T) {
			seen := map[int32]int{}
			for _, l := range leaders(t, b, &conn{}, tc.clientID) {
				seen[l]++
			}
			if len(seen) != len(tc.want) {
				t.Fatalf("leaders %v, want spread over %v", seen, tc.want)
			}
			for _, id := range tc.want {
				if seen[id] == 0 {
					t.Fatalf("leaders %v, want spread over %v", seen, tc.want)
				}
			}
		})
	}
	// A connection keeps the zone its client named.
	c := &conn{}
	first := leaders(t, b, c, "floe_az=b")
	if again := leaders(t, b, c, "no-marker"); fmt.Sprint(again) != fmt.Sprint(first) {
		t.Fatalf("second Metadata on the connection: leaders %v, want the zone's %v", again, first)
	}
}

// TestZoneFindCoordinator: a group's coordinator is a broker of the
// client's zone (stable per key), this broker when the zone is unknown.
func TestZoneFindCoordinator(t *testing.T) {
	b, _ := zoneCluster(t)
	find := func(clientID, key string) int32 {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.CoordinatorKeys = []string{key}
		resp := serveOn[*kmsg.FindCoordinatorResponse](t, b, &conn{}, clientID, req, 4)
		return resp.Coordinators[0].NodeID
	}
	for i := range 20 {
		key := fmt.Sprintf("group-%d", i)
		if n := find("floe_az=c", key); n != 5 && n != 6 {
			t.Errorf("%s from zone c: coordinator %d, want 5 or 6", key, n)
		}
		if n := find("floe_az=c", key); n != find("floe_az=c", key) {
			t.Errorf("%s: coordinator not stable", key)
		}
		if n := find("plain", key); n != 1 {
			t.Errorf("%s with no zone: coordinator %d, want this broker", key, n)
		}
		if n := find("floe_az=a", key); n != 1 {
			t.Errorf("%s from this broker's zone: coordinator %d, want this broker", key, n)
		}
	}
}

// TestZoneFetchPreferredReplica: a rack-tagged consumer fetching from a
// broker of another zone is told, for each partition, the broker of its
// zone that Metadata names as leader, with no records; one of the same
// zone, an untagged one, or one before v11 is served here.
func TestZoneFetchPreferredReplica(t *testing.T) {
	b, tp := zoneCluster(t)
	fetch := func(version int16, rack string) *kmsg.FetchResponse {
		req := kmsg.NewPtrFetchRequest()
		req.MaxWaitMillis, req.MaxBytes, req.Rack = 0, 1<<20, rack
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic, rt.TopicID = "t", tp.ID
		for p := range int32(60) {
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.Partition, rp.PartitionMaxBytes = p, 1<<20
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = []kmsg.FetchRequestTopic{rt}
		return serveOn[*kmsg.FetchResponse](t, b, &conn{}, "consumer", req, version)
	}
	want := leaders(t, b, &conn{}, "floe_az=b")
	resp := fetch(13, "b")
	for _, p := range resp.Topics[0].Partitions {
		if p.ErrorCode != 0 || p.PreferredReadReplica != want[p.Partition] || len(p.RecordBatches) != 0 || p.HighWatermark != 0 || p.LogStartOffset != 0 {
			t.Fatalf("partition %d: error %d, preferred %d (want %d), %d bytes, offsets %d-%d (want the empty partition's 0-0)",
				p.Partition, p.ErrorCode, p.PreferredReadReplica, want[p.Partition], len(p.RecordBatches), p.LogStartOffset, p.HighWatermark)
		}
	}
	for _, tc := range []struct {
		name    string
		version int16
		rack    string
	}{{"same zone", 13, "a"}, {"untagged", 13, ""}, {"v10", 10, "b"}, {"zone without brokers", 13, "elsewhere"}} {
		for _, p := range fetch(tc.version, tc.rack).Topics[0].Partitions {
			if p.PreferredReadReplica != -1 {
				t.Fatalf("%s: partition %d preferred %d, want -1", tc.name, p.Partition, p.PreferredReadReplica)
			}
		}
	}
}
