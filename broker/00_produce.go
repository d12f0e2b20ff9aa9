package broker

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-io/floe/broker/producecheck"
	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/ingest"
)

// Produce: v3-v11. v9+ flexible. v12 (KIP-890) and v13 (topic ids) are not
// served. Every broker accepts every partition. The batches of a request go
// into the open object buffer on the connection's read loop, so one
// producer's pipelined requests keep their order; the answer waits for the
// commit, whatever acks says (acks=0 only sends nothing).
func init() { registerStaged(kmsg.Produce, 3, 11, (*Broker).handleProduce) }

// producePartition tracks one partition of a Produce request.
type producePartition struct {
	topic     int // index into resp.Topics
	partition int // index into resp.Topics[topic].Partitions
	first     int // index of its first batch in the Append call
	n         int // its batch count
}

func (b *Broker) handleProduce(ctx context.Context, r *request) func() (kmsg.Response, error) {
	req := r.req.(*kmsg.ProduceRequest)
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	var (
		zoneBytes int64 // the batches' bytes, counted once below
		batches   []ingest.Batch
		parts     []producePartition
		topics    = make(map[string]coordapi.Topic, len(req.Topics))
	)
	for ti, rt := range req.Topics {
		st := kmsg.NewProduceResponseTopic()
		st.Topic = rt.Topic
		// Kafka checks TRANSACTIONAL_ID WRITE, then TOPIC WRITE before the
		// topic's existence.
		txnAllowed := req.TransactionID == nil || b.txnAuthorized(r, *req.TransactionID)
		allowed := txnAllowed && b.authorizedTopic(r, kmsg.ACLOperationWrite, rt.Topic)
		var (
			t    coordapi.Topic
			terr error
		)
		if allowed {
			t, terr = b.produceTopic(ctx, topics, rt.Topic)
		}
		for pi, rp := range rt.Partitions {
			sp := kmsg.NewProduceResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.BaseOffset = -1
			sp.LogAppendTime = -1
			sp.LogStartOffset = -1
			switch {
			case !txnAllowed:
				sp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
			case !allowed:
				sp.ErrorCode = kerr.TopicAuthorizationFailed.Code
			case terr != nil:
				sp.ErrorCode = coordapi.ErrorCode(terr)
			case isInternalTopic(rt.Topic):
				sp.ErrorCode = kerr.InvalidTopicException.Code // Kafka: cannot append to an internal topic
			case t.View != nil:
				sp.ErrorCode = kerr.InvalidTopicException.Code // a hierarchical view is read-only
				msg := errViewWrite(t).Error()
				sp.ErrorMessage = &msg
			case rp.Partition < 0 || rp.Partition >= t.Partitions:
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			default:
				pb, err := b.validatePartition(t, rp.Partition, rp.Records)
				if err == nil {
					err = producecheck.Transactional(pb, req.TransactionID)
				}
				if err != nil {
					sp.ErrorCode = coordapi.ErrorCode(err)
					msg := err.Error()
					sp.ErrorMessage = &msg
					break
				}
				for _, bt := range pb {
					zoneBytes += int64(len(bt.Data))
				}
				parts = append(parts, producePartition{topic: ti, partition: pi, first: len(batches), n: len(pb)})
				batches = append(batches, pb...)
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	timeout := time.Duration(req.TimeoutMillis) * time.Millisecond
	timeout = max(timeout, time.Second)
	var (
		pending   *ingest.Pending
		appendErr error
	)
	switch {
	case len(batches) == 0:
	case r.span != nil:
		pending, appendErr = b.tracedAppend(ctx, r, timeout, batches)
	default:
		pending, appendErr = b.ingest.AppendFrom(ctx, r.conn.src, timeout, batches)
	}
	// Counted once the batches are on their way to the commit, which need
	// not wait for the instruments (a few microseconds each when the
	// broker is quiet).
	if zoneBytes > 0 {
		b.metrics.bytesIn.Add(ctx, zoneBytes)
	}
	b.zoneMetrics.add(ctx, true, r.clientZone(), zoneBytes)
	return func() (kmsg.Response, error) {
		if pending != nil || appendErr != nil {
			var (
				results []coordapi.BatchResult
				err     = appendErr
			)
			switch {
			case err != nil:
			case r.span != nil:
				results, err = b.tracedWait(ctx, r, pending, timeout)
			default:
				results, err = pending.WaitWithin(ctx, timeout)
			}
			for _, pp := range parts {
				sp := &resp.Topics[pp.topic].Partitions[pp.partition]
				if err != nil {
					sp.ErrorCode = produceErrorCode(err)
					continue
				}
				res := results[pp.first : pp.first+pp.n]
				sp.BaseOffset = res[0].BaseOffset
				sp.LogAppendTime = res[0].LogAppendTime
				sp.LogStartOffset = res[0].LogStartOffset
				for _, br := range res {
					if br.ErrorCode != 0 {
						sp.ErrorCode = br.ErrorCode
						sp.BaseOffset = -1
						if staleTopic(br.ErrorCode) {
							// The coordinator knows the topic otherwise
							// (deleted, grown, indexed): ask it again.
							b.topics.Invalidate([]coordapi.TopicNotice{{Name: resp.Topics[pp.topic].Topic}})
						}
						break
					}
				}
			}
		}
		if req.Acks == 0 {
			return nil, nil
		}
		return resp, nil
	}
}

// staleTopic reports whether a batch's commit failed because the broker's
// view of its topic was stale: UNKNOWN_TOPIC_ID (deleted or recreated),
// UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER (kv.index.enabled turned on: the
// batch came without its keys).
func staleTopic(code int16) bool {
	switch code {
	case kerr.UnknownTopicID.Code, kerr.UnknownTopicOrPartition.Code, kerr.NotLeaderForPartition.Code:
		return true
	}
	return false
}

// produceErrorCode maps a failed append or commit to a retriable code.
func produceErrorCode(err error) int16 {
	if errors.Is(err, ingest.ErrClosed) {
		return kerr.NotLeaderForPartition.Code // the client moves to another broker
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Code
	}
	return kerr.KafkaStorageError.Code
}

// produceTopic looks a topic up once per request.
func (b *Broker) produceTopic(ctx context.Context, seen map[string]coordapi.Topic, name string) (coordapi.Topic, error) {
	if t, ok := seen[name]; ok {
		return t, nil
	}
	t, err := b.topics.ByName(ctx, name)
	if err != nil {
		return t, err
	}
	seen[name] = t
	return t, nil
}

// validatePartition checks every batch of one partition's records against
// the topic's rules (producecheck), and counts the keyless records of
// indexed topics (floe.kv.null_keys).
func (b *Broker) validatePartition(t coordapi.Topic, partition int32, records []byte) ([]ingest.Batch, error) {
	batches, nullKeys, err := producecheck.Batches(t.ID, partition, records, producecheck.Rules{
		MaxBytes:     configInt(t, "max.message.bytes"),
		Compacted:    strings.Contains(t.Config("cleanup.policy"), "compact"),
		KVIndexed:    strings.EqualFold(t.Config(coordapi.ConfigKVIndexEnabled), "true"),
		Hierarchical: strings.EqualFold(t.Config(coordapi.ConfigHierarchicalEnabled), "true"),
	})
	if nullKeys > 0 {
		b.metrics.kvNullKeys.Add(context.Background(), nullKeys)
	}
	return batches, err
}
