package producecheck

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/ingest"
	"github.com/floe-io/floe/record"
)

// Rules are what a topic asks of the batches produced to it, from its
// configs.
type Rules struct {
	// MaxBytes is max.message.bytes: the largest batch accepted.
	MaxBytes int64
	// Compacted (cleanup.policy has compact) refuses keyless records.
	Compacted bool
	// KVIndexed (kv.index.enabled) returns every keyed record's key.
	KVIndexed bool
	// Hierarchical (hierarchical.enabled) returns each distinct key of
	// a batch once, for the posting index.
	Hierarchical bool
}

// Batches checks every batch of one partition's records, as Kafka does
// before appending any: all are appended or none. Each batch's header and
// CRC are checked, then each of its records (Records), decompressing a
// compressed batch as it goes. It returns the batches with their commits
// (topic id, partition, producer fields, keys), and the keyless records
// of indexed topics counted until it returned, even with an error.
func Batches(id coordapi.TopicID, partition int32, records []byte, rules Rules) (out []ingest.Batch, nullKeys int64, err error) {
	raw, err := record.Split(records)
	if err != nil {
		return nil, 0, fmt.Errorf("%w: %v", kerr.CorruptMessage, err)
	}
	if len(raw) == 0 {
		return nil, 0, fmt.Errorf("%w: no record batch", kerr.CorruptMessage)
	}
	maxBytes := rules.MaxBytes
	out = make([]ingest.Batch, 0, len(raw))
	for _, data := range raw {
		h, err := record.Validate(data)
		switch {
		case err != nil:
			return nil, nullKeys, batchError(err)
		case int64(len(data)) > maxBytes:
			return nil, nullKeys, fmt.Errorf("%w: batch of %d bytes exceeds max.message.bytes %d", kerr.MessageTooLarge, len(data), maxBytes)
		case h.Control():
			// Markers are the transaction coordinator's to write.
			return nil, nullKeys, fmt.Errorf("%w: a client may not produce control batches", kerr.InvalidRecord)
		case h.Transactional() && h.ProducerID < 0:
			return nil, nullKeys, fmt.Errorf("%w: a transactional batch without a producer id", kerr.InvalidRecord)
		}
		keys, n, err := Records(data, rules)
		if err != nil {
			return nil, nullKeys, err
		}
		nullKeys += n
		out = append(out, ingest.Batch{
			Data: data,
			Commit: coordapi.CommitBatch{
				TopicID:         id,
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
	return out, nullKeys, nil
}

// Transactional checks a partition's transactional batches against the
// request's transactional id, and names it in their commits so that the
// coordinator accepts them only into that id's transaction: transactional
// records in a request without one are INVALID_RECORD, as in Kafka.
func Transactional(bs []ingest.Batch, txnID *string) error {
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
