package broker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/ingest"
	"github.com/floe-io/floe/record"
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
				sp.ErrorCode = errorCode(terr)
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
					err = txnBatches(pb, req.TransactionID)
				}
				if err != nil {
					sp.ErrorCode = errorCode(err)
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

// validatePartition checks every batch of one partition's records, as Kafka
// does before appending any: all are appended or none. Each batch's header
// and CRC are checked, then each of its records (checkRecords), decompressing
// a compressed batch as it goes.
func (b *Broker) validatePartition(t coordapi.Topic, partition int32, records []byte) ([]ingest.Batch, error) {
	raw, err := record.Split(records)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", kerr.CorruptMessage, err)
	}
	if len(raw) == 0 {
		return nil, fmt.Errorf("%w: no record batch", kerr.CorruptMessage)
	}
	maxBytes := configInt(t, "max.message.bytes")
	compacted := strings.Contains(t.Config("cleanup.policy"), "compact")
	kvIndexed := strings.EqualFold(t.Config(coordapi.ConfigKVIndexEnabled), "true")
	hierarchical := strings.EqualFold(t.Config(coordapi.ConfigHierarchicalEnabled), "true")
	out := make([]ingest.Batch, 0, len(raw))
	for _, data := range raw {
		h, err := record.Validate(data)
		switch {
		case err != nil:
			return nil, batchError(err)
		case int64(len(data)) > maxBytes:
			return nil, fmt.Errorf("%w: batch of %d bytes exceeds max.message.bytes %d", kerr.MessageTooLarge, len(data), maxBytes)
		case h.Control():
			// Markers are the transaction coordinator's to write.
			return nil, fmt.Errorf("%w: a client may not produce control batches", kerr.InvalidRecord)
		case h.Transactional() && h.ProducerID < 0:
			return nil, fmt.Errorf("%w: a transactional batch without a producer id", kerr.InvalidRecord)
		}
		keys, nullKeys, err := checkRecordKeys(data, compacted, kvIndexed, hierarchical)
		if err != nil {
			return nil, err
		}
		if nullKeys > 0 {
			b.metrics.kvNullKeys.Add(context.Background(), nullKeys)
		}
		out = append(out, ingest.Batch{
			Data: data,
			Commit: coordapi.CommitBatch{
				TopicID:         t.ID,
				Partition:       partition,
				LastOffsetDelta: h.LastOffsetDelta,
				MaxTimestamp:    h.MaxTimestamp,
				ProducerID:      h.ProducerID,
				ProducerEpoch:   h.ProducerEpoch,
				BaseSequence:    h.BaseSequence,
				Keys:            keys,
				Transactional:   h.Transactional(),
			},
		})
	}
	return out, nil
}

// txnBatches checks a partition's transactional batches against the
// request's transactional id, and names it in their commits so that the
// coordinator accepts them only into that id's transaction: transactional
// records in a request without one are INVALID_RECORD, as in Kafka.
func txnBatches(bs []ingest.Batch, txnID *string) error {
	for i := range bs {
		cb := &bs[i].Commit
		if !cb.Transactional {
			continue
		}
		if txnID == nil {
			return fmt.Errorf("%w: a produce request with transactional records must carry its transactional id", kerr.InvalidRecord)
		}
		cb.TransactionalID = *txnID
	}
	return nil
}

// errMissingKey marks a keyless record on a compacted topic.
var errMissingKey = errors.New("compacted topic requires a key on every record")

// checkRecords checks every record of batch data as Kafka's LogValidator does
// on produce, compressed or not (see record.Records for the rules), in one
// pass that also does what the topic needs: on a compacted topic it rejects
// a keyless record (INVALID_RECORD, as Kafka), and on a kv-indexed topic it
// returns every keyed record's (key, offset delta, tombstone) for the key
// index, counting the keyless ones in nullKeys. A plain topic's pass only
// checks. Decompression streams: nothing of the records is kept but the
// keys returned.
func checkRecords(data []byte, compacted, kvIndexed bool) (keys []coordapi.KeyEntry, nullKeys int64, err error) {
	return checkRecordKeys(data, compacted, kvIndexed, false)
}

// checkRecordKeys is checkRecords that also serves hierarchical topics: with
// hierarchical set (and kvIndexed not) it returns each distinct key of the
// batch once, at its first record's offset delta, for the posting index
// (one posting per key per batch); keyless records are counted, not
// refused, unless the topic is compacted.
func checkRecordKeys(data []byte, compacted, kvIndexed, hierarchical bool) (keys []coordapi.KeyEntry, nullKeys int64, err error) {
	var (
		visit func(*record.Record) error // nil: check only
		arena []byte                     // every key's bytes, back to back
		ends  []int                      // where each key ends in arena
	)
	switch {
	case hierarchical && !kvIndexed:
		arena = make([]byte, 0, 64)
		var seen map[string]struct{} // past a few keys
		visit = func(rec *record.Record) error {
			if rec.Key == nil {
				if compacted {
					return errMissingKey
				}
				nullKeys++
				return nil
			}
			if seenKey(arena, ends, rec.Key, &seen) {
				return nil
			}
			arena = append(arena, rec.Key...)
			ends = append(ends, len(arena))
			keys = append(keys, coordapi.KeyEntry{OffsetDelta: rec.OffsetDelta, Tombstone: rec.Value == nil})
			return nil
		}
	case kvIndexed:
		if h, err := record.ParseHeader(data); err == nil && h.NumRecords > 0 {
			n := min(int(h.NumRecords), len(data)) // a record takes at least a byte
			keys, ends = make([]coordapi.KeyEntry, 0, n), make([]int, 0, n)
		}
		arena = make([]byte, 0, 256) // never nil: an empty key stays empty, not null
		visit = func(rec *record.Record) error {
			if rec.Key == nil {
				if compacted {
					return errMissingKey
				}
				nullKeys++
				return nil
			}
			// rec.Key aliases a decompression buffer valid only in this
			// call: copied into one arena for the batch, sliced below.
			arena = append(arena, rec.Key...)
			ends = append(ends, len(arena))
			keys = append(keys, coordapi.KeyEntry{OffsetDelta: rec.OffsetDelta, Tombstone: rec.Value == nil})
			return nil
		}
	case compacted:
		visit = func(rec *record.Record) error {
			if rec.Key == nil {
				return errMissingKey
			}
			return nil
		}
	}
	err = record.Records(data, visit)
	switch {
	case errors.Is(err, errMissingKey):
		return nil, 0, fmt.Errorf("%w: %v", kerr.InvalidRecord, err)
	case err != nil:
		return nil, 0, batchError(err)
	}
	start := 0
	for i, end := range ends {
		keys[i].Key = arena[start:end:end]
		start = end
	}
	return keys, nullKeys, nil
}

// seenKey reports whether key is one of the keys stored back to back in
// arena (ending at ends), and notes it when not: a scan of the last few keys
// (producers flushing per device write runs of one key), a set past that.
func seenKey(arena []byte, ends []int, key []byte, seen *map[string]struct{}) bool {
	const linear = 8
	if len(ends) <= linear {
		start := 0
		for _, end := range ends {
			if bytes.Equal(arena[start:end], key) {
				return true
			}
			start = end
		}
		return false
	}
	if *seen == nil {
		*seen = make(map[string]struct{}, 2*len(ends))
		start := 0
		for _, end := range ends {
			(*seen)[string(arena[start:end])] = struct{}{}
			start = end
		}
	}
	if _, ok := (*seen)[string(key)]; ok {
		return true
	}
	(*seen)[string(key)] = struct{}{}
	return false
}

// batchError maps a record-format error to the code Kafka answers: bad
// framing or CRC is CORRUPT_MESSAGE (retried), a well-formed batch that
// breaks a rule is INVALID_RECORD (not retried), an old magic is
// UNSUPPORTED_FOR_MESSAGE_FORMAT, and a batch that decompresses past the
// limit is MESSAGE_TOO_LARGE (the Java producer splits and retries).
//
// Records that do not decompress are INVALID_RECORD too. There Kafka's
// record iterator throws a plain KafkaException ("Failed to decompress
// record stream"), which reaches the producer as UNKNOWN_SERVER_ERROR;
// INVALID_RECORD is what Kafka answers for every other malformed record,
// and, like UNKNOWN_SERVER_ERROR, clients do not retry it, but it blames
// the batch rather than the broker.
func batchError(err error) error {
	switch {
	case errors.Is(err, record.ErrUnsupportedMagic):
		return fmt.Errorf("%w: %v", kerr.UnsupportedForMessageFormat, err)
	case errors.Is(err, record.ErrTooLarge):
		return fmt.Errorf("%w: %v", kerr.MessageTooLarge, err)
	case errors.Is(err, record.ErrInvalid):
		return fmt.Errorf("%w: %v", kerr.InvalidRecord, err)
	default:
		return fmt.Errorf("%w: %v", kerr.CorruptMessage, err)
	}
}
