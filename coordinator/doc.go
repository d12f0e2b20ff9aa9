// Package coordinator is floe's batch coordinator: it owns topics, partition
// offsets, the coordinates of every committed batch, the objects batches
// live in, and idempotent producers' state. Brokers upload objects and call
// CommitObject to get offsets; fetches call FindBatches to learn where to
// read. The methods take and return plain data so that the same API can be
// served over NATS request/reply.
//
// # Errors
//
// Kafka-level failures are errors wrapping franz-go's *kerr.Error (get the
// code with errors.As), often through a *KafkaError that also carries
// Kafka's error message. Per-batch commit outcomes are error codes in
// BatchResult. Any other error is a storage or infrastructure failure.
//
// # Durability
//
// All state lives in one Pebble database, every mutation written with
// pebble.Sync. The hot part (topics, partition offsets, producer state,
// objects) is loaded into memory at Open. A mutation builds one Pebble
// batch from memory (CommitObject reads nothing from Pebble), commits it,
// and only then installs the new state in memory: a failed write leaves
// memory as it was, with no offsets half-assigned.
//
// # Key families
//
// Every key starts with a one-byte family tag; numbers are big-endian so
// that Pebble's byte order is numeric order (offsets and ids are never
// negative). Values start with a format byte (1) followed by varints
// (encoding/binary); "str" is a uvarint length and the bytes.
//
//	family         key                                          value
//	-------------  -------------------------------------------  ----------------------------------------------
//	meta           'm' name                                     8-byte big-endian counter:
//	                 "mformat"                                    on-disk format version (1)
//	                 "mnext-producer-id"                          next producer id to hand out
//	                 "mnext-object"                               next object number
//	topic name     'n' name                                     topic id (16 bytes)
//	topic          't' topic-id(16)                             name str, partitions, created ms,
//	                                                            n configs, n × (name str, value str)
//	partition      'p' topic-id(16) partition(4)                log start, high watermark, max timestamp,
//	                                                            its ListOffsets offset, its batch's last offset
//	batch          'b' topic-id(16) partition(4) last-offset(8) flags(1: LogAppendTime), object number,
//	                                                            byte offset, byte length, last offset delta,
//	                                                            max timestamp
//	object         'o' object-number(8)                         state(1), size, live bytes, created ms,
//	                                                            garbage-since ms, broker id, object key str
//	producer       'r' producer-id(8) topic-id(16) partition(4) epoch, last update ms, n(1),
//	                                                            n × (base seq, last seq, base offset, timestamp)
//	producer id    'i' producer-id(8)                           epoch, epoch it was bumped from
//
// Batches are keyed by their last offset, so the batch containing offset o
// is the first key >= (topic, partition, o): FindBatches is one seek. An
// object is named by a compact number in batch values; the object family
// maps it to its key, size and live bytes (the summed lengths of the
// batches still referencing it). An object with no live bytes is garbage:
// all its batches were rejected, or their records or topic were deleted.
// The producer id family only holds ids whose epoch was bumped
// (InitProducerID); other ids below the counter have epoch 0.
//
// # Broker registry
//
// Brokers register (node id, advertised address, rack) and heartbeat with
// RegisterBroker; ListBrokers names those heard from within
// Options.BrokerTTL. The registry is kept in memory only: after a restart
// brokers register again with their next heartbeat.
//
// # Locks
//
// Locks are taken in this order, never the reverse:
//
//	closeMu (read: every public call; write: Close)
//	  commit (serializes mutations: commits, topic admin, DeleteRecords,
//	          ExpireProducers; guards producer state and the object counter)
//	    mu (RWMutex over topics, partitions and objects in memory; written
//	        only with commit held, so commit's holder reads without it)
//	pids (producer id allocation; taken under closeMu only)
//	subs (subscriber list; taken alone)
//	brokers (broker registry; taken alone)
//
// Subscribers are called with no lock held.
package coordinator
