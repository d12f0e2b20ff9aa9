package broker

import (
	"context"
	"hash/fnv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kmsg"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// Zones (DESIGN.md, Zones): every broker serves every partition, so a
// client whose zone is known is given leaders in its own zone, and its
// produce and fetch bytes need not cross a zone. A connection learns its
// client's zone from what clients already send:
//
//   - a marker in client.id, "floe_az=<zone>" (or Inkless's
//     "diskless_az=<zone>"), on any request: producers and admin clients,
//     which send no rack;
//   - Fetch's rack id (client.rack, KIP-392), v11 and later.
//
// The zone learned last stays with the connection. With a zone known,
// Metadata names for every partition a leader among the live brokers of
// that zone (leaderFor's stable hash within the zone), FindCoordinator a
// broker of the zone, and a Fetch from a rack-tagged consumer to a broker
// of another zone answers, as Kafka does for follower fetching, the zone's
// broker for each partition as its preferred read replica, with no
// records, so the consumer moves there. A zone with no live broker, or an
// unknown one, falls back to all brokers. Produce and Fetch stay accepted
// everywhere: a stale leader costs one cross-zone hop, nothing else.

// zoneMarkers are the client.id markers that name a client's zone.
var zoneMarkers = []string{"floe_az=", "diskless_az="}

// maxZoneLen bounds a zone name taken from a client, which also bounds the
// metrics' attribute values.
const maxZoneLen = 64

// zoneFromClientID returns the zone a client.id names with a marker, ""
// when none: the marker's value runs to the next ',', ';', space or the
// end.
func zoneFromClientID(id string) string {
	for _, m := range zoneMarkers {
		i := strings.Index(id, m)
		if i < 0 {
			continue
		}
		v := id[i+len(m):]
		if j := strings.IndexAny(v, ",; \t"); j >= 0 {
			v = v[:j]
		}
		if v != "" && len(v) <= maxZoneLen {
			return v
		}
	}
	return ""
}

// connZone is what a connection knows of its client's zone; safe for
// the connection's concurrent requests.
type connZone struct{ zone atomic.Pointer[string] }

func (z *connZone) get() string {
	if p := z.zone.Load(); p != nil {
		return *p
	}
	return ""
}

func (z *connZone) set(zone string) {
	if zone == "" || len(zone) > maxZoneLen || zone == z.get() {
		return
	}
	z.zone.Store(&zone)
}

// clientZone returns the zone of r's client: a client.id marker on r (which
// the connection then keeps), else what the connection learned before; ""
// when unknown.
func (r *request) clientZone() string {
	z := ""
	if r.clientID != nil {
		z = zoneFromClientID(*r.clientID)
	}
	if r.conn == nil {
		return z
	}
	if z != "" {
		r.conn.zone.set(z)
		return z
	}
	return r.conn.zone.get()
}

// inZone returns the brokers of zone among brokers, or brokers when the
// zone is unknown or has none of them.
func inZone(brokers []brokerInfo, zone string) []brokerInfo {
	if local, ok := zoneBrokers(brokers, zone); ok {
		return local
	}
	return brokers
}

// zoneBrokers returns the brokers of zone among brokers; ok is false when
// the zone is unknown ("") or none is in it.
func zoneBrokers(brokers []brokerInfo, zone string) (local []brokerInfo, ok bool) {
	if zone == "" {
		return nil, false
	}
	for _, bi := range brokers {
		if bi.rack != nil && *bi.rack == zone {
			local = append(local, bi)
		}
	}
	return local, len(local) > 0
}

// pickByKey returns a broker of brokers chosen by a stable hash of key.
func pickByKey(key string, brokers []brokerInfo) brokerInfo {
	h := fnv.New32a()
	h.Write([]byte(key))
	return brokers[h.Sum32()%uint32(len(brokers))]
}

// redirectZone reports whether a fetch from a consumer in zone is to be
// sent to its zone's brokers, as Kafka does for follower fetching, and
// returns them: the fetch names a rack (v11+), this broker is of another
// zone, and the client's zone has live brokers.
func (b *Broker) redirectZone(req *kmsg.FetchRequest, zone string) ([]brokerInfo, bool) {
	if req.Version < 11 || req.Rack == "" || zone == "" || b.opts.Rack == "" || zone == b.opts.Rack {
		return nil, false
	}
	return zoneBrokers(b.liveBrokers(), zone)
}

// setPreferredReplicas gives every partition of resp without an error the
// broker of local (the client's zone) that Metadata names its leader, as
// its preferred read replica; resp carries no records.
func (b *Broker) setPreferredReplicas(ctx context.Context, req *kmsg.FetchRequest, resp *kmsg.FetchResponse, local []brokerInfo) {
	for ti := range resp.Topics {
		st := &resp.Topics[ti]
		t, err := b.fetchTopic(ctx, req.Version, st.Topic, st.TopicID)
		for pi := range st.Partitions {
			sp := &st.Partitions[pi]
			if err != nil || sp.ErrorCode != 0 {
				continue
			}
			sp.PreferredReadReplica = leaderFor(dataID(t), sp.Partition, local) // a view's leaders are its base's
		}
	}
}

// zoneMetrics count Kafka bytes by the client's zone and this broker's.
type zoneMetrics struct {
	bytes metric.Int64Counter
	rack  string
	mu    sync.Mutex
	attrs map[zoneAttrKey]metric.MeasurementOption
}

type zoneAttrKey struct {
	in         bool
	clientZone string
}

func newZoneMetrics(m metric.Meter, rack string) *zoneMetrics {
	zm := &zoneMetrics{rack: rack, attrs: map[zoneAttrKey]metric.MeasurementOption{}}
	zm.bytes, _ = m.Int64Counter("floe.kafka.zone.bytes", metric.WithUnit("By"),
		metric.WithDescription("Record batch bytes produced (direction=in) and fetched (direction=out), by the client's zone (\"unknown\" when it named none) and this broker's: the cross-zone traffic is where they differ."))
	return zm
}

// add counts n bytes moved between a client of clientZone and this broker.
func (zm *zoneMetrics) add(ctx context.Context, in bool, clientZone string, n int64) {
	if n <= 0 {
		return
	}
	if clientZone == "" {
		clientZone = "unknown"
	}
	k := zoneAttrKey{in, clientZone}
	zm.mu.Lock()
	opt, ok := zm.attrs[k]
	if !ok {
		dir := "out"
		if in {
			dir = "in"
		}
		rack := zm.rack
		if rack == "" {
			rack = "unknown"
		}
		opt = metric.WithAttributeSet(attribute.NewSet(attribute.String("direction", dir),
			attribute.String("client_zone", clientZone), attribute.String("broker_zone", rack)))
		if len(zm.attrs) < 1024 { // bounded: zones come from clients
			zm.attrs[k] = opt
		}
	}
	zm.mu.Unlock()
	zm.bytes.Add(ctx, n, opt)
}
