package node_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/floe-io/floe/broker"
	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/ingest"
	"github.com/floe-io/floe/internal/testkit"
	"github.com/floe-io/floe/internal/testkit/floetest"
	"github.com/floe-io/floe/node"
	"github.com/floe-io/floe/zone"
)

// TestZoneCacheSharing runs three brokers of one zone on one coordinator
// and store: two share chunks, one has sharing off. The sharing ones
// register their HTTP listeners as internal addresses and serve chunks
// there; records produced through one are read through the other, every
// chunk load of which came from the store or its peer, never a failure.
func TestZoneCacheSharing(t *testing.T) {
	linger := ingest.Options{Linger: 5 * time.Millisecond}
	n1 := floetest.StartNode(t, node.Config{NATSListen: "127.0.0.1:0", Cluster: "zonetest", TierJobsDisabled: true, Ingest: linger,
		Broker: broker.Options{NodeID: 1, Rack: "a"}})
	peer := func(id int32, disabled bool) *node.Node {
		return floetest.StartNode(t, node.Config{Store: n1.Store(), NATSURL: n1.NATSURL(), Cluster: "zonetest", TierJobsDisabled: true, Ingest: linger,
			Broker: broker.Options{NodeID: id, Rack: "a"}, ZoneCacheSharingDisabled: disabled})
	}
	n2, n3 := peer(2, false), peer(3, true)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	want := map[int32]string{1: n1.HTTPAddr(), 2: n2.HTTPAddr(), 3: ""}
	testkit.CheckFor(t, 10*time.Second, 20*time.Millisecond, func() error {
		bs, err := n1.CoordinatorClient().ListBrokers(ctx)
		if err != nil {
			return err
		}
		got := map[int32]string{}
		for _, b := range bs {
			got[b.NodeID] = b.InternalAddr
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			return fmt.Errorf("internal addresses %v, want %v", got, want)
		}
		return nil
	})

	c1 := pinned(t, n1.KafkaAddr(), kgo.ProducerLinger(0))
	if _, err := kadm.NewClient(c1).CreateTopic(ctx, 1, 1, nil, "t"); err != nil {
		t.Fatal(err)
	}
	const records = 8
	for i := range records {
		if err := c1.ProduceSync(ctx, &kgo.Record{Topic: "t", Value: []byte("record " + strconv.Itoa(i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	c2 := pinned(t, n2.KafkaAddr(), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"t": {0: kgo.NewOffset().AtStart()}}))
	for got := 0; got < records; {
		fs := c2.PollFetches(ctx)
		if err := fs.Err(); err != nil {
			t.Fatal(err)
		}
		got += fs.NumRecords()
	}
	loads := func(n *node.Node, source string) float64 {
		v, err := floetest.Metric(n.HTTPAddr(), "floe_cache_chunk_loads_total", `source="`+source+`"`)
		if err != nil && !strings.Contains(err.Error(), "no floe_cache_chunk_loads_total") {
			t.Fatal(err)
		}
		return v
	}
	if _, err := floetest.Metric(n2.HTTPAddr(), "floe_cache_chunk_loads_total"); err != nil {
		t.Fatal(err) // n2 loaded what it read, by some source
	}
	if f := loads(n2, zone.SourcePeerFallback); f != 0 {
		t.Errorf("broker 2 fell back to the store %v times", f)
	}
	served, err := floetest.Metric(n1.HTTPAddr(), "floe_zone_peer_served_total")
	if err != nil && loads(n2, zone.SourcePeer) != 0 {
		t.Fatal(err)
	}
	t.Logf("broker 2's chunk loads: %v from the store, %v from broker 1", loads(n2, zone.SourceObjectStore), loads(n2, zone.SourcePeer))
	if p := loads(n2, zone.SourcePeer); p != served {
		t.Errorf("broker 2 loaded %v chunks from its peer, broker 1 served %v", p, served)
	}

	// Broker 1 serves a WAL object's chunk; broker 3, not sharing, has no
	// chunk endpoint.
	objs, err := n1.Store().List(ctx, coordapi.WALPrefix(""))
	if err != nil || len(objs) == 0 {
		t.Fatalf("WAL objects %v: %v", objs, err)
	}
	obj := objs[0]
	wantBytes, err := n1.Store().GetRange(ctx, obj.Key, 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	q := url.Values{"key": {obj.Key}, "offset": {"0"}, "length": {strconv.FormatInt(obj.Size, 10)}}
	for _, tt := range []struct {
		n      *node.Node
		status int
	}{{n1, http.StatusOK}, {n3, http.StatusNotFound}} {
		resp, err := http.Get("http://" + tt.n.HTTPAddr() + zone.ChunkPath + "?" + q.Encode())
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != tt.status {
			t.Fatalf("GET %s on %s: %s, %v", zone.ChunkPath, tt.n.HTTPAddr(), resp.Status, err)
		}
		if tt.status == http.StatusOK && !bytes.Equal(body, wantBytes) {
			t.Fatalf("broker 1 served the wrong bytes")
		}
	}
	after, err := floetest.Metric(n1.HTTPAddr(), "floe_zone_peer_served_total")
	if err != nil || after != served+1 {
		t.Fatalf("broker 1 served %v chunks after one more, had %v (%v)", after, served, err)
	}
	if b, err := floetest.Metric(n1.HTTPAddr(), "floe_zone_peer_served_bytes_total"); err != nil || b < float64(obj.Size) {
		t.Fatalf("broker 1 served %v bytes, at least %d (%v)", b, obj.Size, err)
	}
}
