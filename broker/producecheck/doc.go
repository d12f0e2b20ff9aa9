// Package producecheck checks the record batches of a Produce request
// before any is appended, as Kafka's LogValidator does, and extracts what
// a topic's commits carry besides the bytes: the keys of kv-indexed and
// hierarchical topics, the producer fields, the transactional id.
//
//	records ─Split─▶ batch ─Validate (header, CRC)─▶ Records (each record;
//	    compressed batches streamed) ─▶ ingest.Batch{Data, Commit}
//
// A Kafka-level problem comes back as an error wrapping its *kerr.Error
// (CORRUPT_MESSAGE, INVALID_RECORD, MESSAGE_TOO_LARGE,
// UNSUPPORTED_FOR_MESSAGE_FORMAT), whose message the broker sends.
package producecheck
