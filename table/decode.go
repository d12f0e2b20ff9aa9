package table

import (
	"bytes"
	"fmt"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/record"
)

// Decode appends to dst the committed records of partition's batches b:
// Kafka v2 record batches with their real base offsets, in offset order,
// as a segment's data part or a WAL range holds them. It is what a table
// job turns a range into, the read_committed rule applied:
//
//   - control batches (transaction markers) give no row;
//   - a transactional batch of a producer with an aborted transaction
//     whose [FirstOffset, LastOffset] holds the batch's base offset gives
//     no row (aborted lists the partition's aborted transactions in the
//     range, coordapi.AbortedTxn, as Fetch and compaction jobs get them);
//   - a LogAppendTime batch's records take its MaxTimestamp, as a fetch
//     patches it.
//
// The job's range must end at or below the partition's last stable
// offset, so that no open transaction is in it. Keys, values and headers
// are copied: the records do not alias b. Decode also returns how many
// records it dropped as aborted.
func Decode(dst []Record, partition int32, b []byte, aborted []coordapi.AbortedTxn) ([]Record, int, error) {
	dropped := 0
	for batch, err := range record.Batches(b) {
		if err != nil {
			return dst, dropped, fmt.Errorf("table: decode partition %d: %w", partition, err)
		}
		h, err := record.ParseHeader(batch)
		if err != nil {
			return dst, dropped, fmt.Errorf("table: decode partition %d: %w", partition, err)
		}
		if h.Control() {
			continue
		}
		if h.Transactional() && isAborted(h, aborted) {
			dropped += int(h.NumRecords)
			continue
		}
		err = record.Records(batch, func(r *record.Record) error {
			rec := Record{
				Partition: partition,
				Offset:    h.BaseOffset + int64(r.OffsetDelta),
				Timestamp: h.BaseTimestamp + r.TimestampDelta,
				Key:       bytes.Clone(r.Key),
				Value:     bytes.Clone(r.Value),
			}
			if h.LogAppendTime() {
				rec.Timestamp = h.MaxTimestamp
			}
			if len(r.Headers) > 0 {
				rec.Headers = make([]Header, len(r.Headers))
				for i, rh := range r.Headers {
					rec.Headers[i] = Header{Key: rh.Key, Value: bytes.Clone(rh.Value)}
				}
			}
			dst = append(dst, rec)
			return nil
		})
		if err != nil {
			return dst, dropped, fmt.Errorf("table: decode partition %d batch at offset %d: %w", partition, h.BaseOffset, err)
		}
	}
	return dst, dropped, nil
}

// isAborted reports whether transactional batch h belongs to one of the
// aborted transactions.
func isAborted(h record.Header, aborted []coordapi.AbortedTxn) bool {
	for _, a := range aborted {
		if a.ProducerID == h.ProducerID && a.FirstOffset <= h.BaseOffset && h.BaseOffset <= a.LastOffset {
			return true
		}
	}
	return false
}
