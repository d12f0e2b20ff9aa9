package broker

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/floe-io/floe/broker/fetchread"
	"github.com/floe-io/floe/metrics"
)

// brokerMetrics are the Kafka front's instruments.
type brokerMetrics struct {
	requestDuration metric.Float64Histogram
	bytesIn         metric.Int64Counter
	bytesOut        metric.Int64Counter
	kvNullKeys      metric.Int64Counter
	authentications metric.Int64Counter
	authDenied      metric.Int64Counter
	// apiAttrs holds one precomputed attribute set per API key, so the
	// request path allocates nothing for metrics.
	apiAttrs [maxAPIKey]metric.MeasurementOption
}

func newBrokerMetrics(m metric.Meter) *brokerMetrics {
	m = metrics.OrNoop(m)
	bm := &brokerMetrics{}
	bm.requestDuration, _ = m.Float64Histogram("floe.kafka.request.duration", metric.WithUnit("s"),
		metric.WithDescription("Kafka request latency from read to response written, by API (produce includes the object upload and commit)."))
	bm.bytesIn, _ = m.Int64Counter("floe.kafka.produce.bytes", metric.WithUnit("By"),
		metric.WithDescription("Record batch bytes accepted by Produce."))
	bm.bytesOut, _ = m.Int64Counter("floe.kafka.fetch.bytes", metric.WithUnit("By"),
		metric.WithDescription("Record batch bytes returned by Fetch."))
	bm.kvNullKeys, _ = m.Int64Counter("floe.kv.null_keys", metric.WithUnit("{record}"),
		metric.WithDescription("Records without a key on kv-indexed topics, skipped by the key index."))
	bm.authentications, _ = m.Int64Counter("floe.kafka.authentications", metric.WithUnit("{exchange}"),
		metric.WithDescription("SASL exchanges on the Kafka listener, by mechanism and result (success, failure)."))
	bm.authDenied, _ = m.Int64Counter("floe.kafka.authorization.denied", metric.WithUnit("{check}"),
		metric.WithDescription("Authorization checks denied (ACLs), by API (kv for /kv lookups) and resource type."))
	for key := range bm.apiAttrs {
		bm.apiAttrs[key] = metric.WithAttributeSet(attribute.NewSet(attribute.String("api", kmsg.NameForKey(int16(key)))))
	}
	return bm
}

// observeParked reports the fetches parked in a long poll right now.
func observeParked(m metric.Meter, reads *fetchread.Reader) {
	_, _ = metrics.OrNoop(m).Int64ObservableGauge("floe.kafka.fetch.parked", metric.WithUnit("{request}"),
		metric.WithDescription("Fetches parked at the log end, waiting for new records or their max wait."),
		metric.WithInt64Callback(func(_ context.Context, o metric.Int64Observer) error {
			o.Observe(reads.Parked())
			return nil
		}))
}

// observeShareSessions reports the share sessions open right now, and the
// sessions ended by their connection closing rather than by their
// client's final epoch (Kafka's ShareSessionEvictionsPerSec): each gives
// back what its member held.
func observeShareSessions(m metric.Meter, c *shareSessions) {
	m = metrics.OrNoop(m)
	_, _ = m.Int64ObservableGauge("floe.kafka.share.sessions", metric.WithUnit("{session}"),
		metric.WithDescription("Share sessions (KIP-932) open on the broker."),
		metric.WithInt64Callback(func(_ context.Context, o metric.Int64Observer) error {
			o.Observe(int64(c.len()))
			return nil
		}))
	_, _ = m.Int64ObservableCounter("floe.kafka.share.session.evictions", metric.WithUnit("{session}"),
		metric.WithDescription("Share sessions dropped because their connection closed, their records given back."),
		metric.WithInt64Callback(func(_ context.Context, o metric.Int64Observer) error {
			o.Observe(c.evictions.Load())
			return nil
		}))
}

func (bm *brokerMetrics) request(key int16, start time.Time) {
	if key < 0 || int(key) >= len(bm.apiAttrs) {
		return
	}
	bm.requestDuration.Record(context.Background(), time.Since(start).Seconds(), bm.apiAttrs[key])
}

// authSucceeded and authFailed count a SASL exchange's outcome.
func (bm *brokerMetrics) authSucceeded(mechanism string) { bm.authResult(mechanism, "success") }
func (bm *brokerMetrics) authFailed(mechanism string)    { bm.authResult(mechanism, "failure") }

func (bm *brokerMetrics) authResult(mechanism, result string) {
	bm.authentications.Add(context.Background(), 1, metric.WithAttributes(
		attribute.String("mechanism", mechanism), attribute.String("result", result)))
}
