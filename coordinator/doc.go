// Package coordinator is floe's batch coordinator: it owns topics, partition
// offsets, the coordinates of every committed batch, the objects batches
// live in, and idempotent producers' state. Brokers upload objects and call
// CommitObject to get offsets; fetches call FindBatches (or, for many
// partitions at once, FindBatchesMulti) to learn where to read. The methods
// take and return plain data so that the same API can be served over NATS
// request/reply.
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
// A commit writes one key per partition it appends to (a batch run, which
// also carries the partition's new max timestamp and the producer states
// the commit changed there) and its object: partition and producer records
// are checkpoints, written every few dozen runs of a partition and by
// DeleteRecords and ExpireProducers (see checkpoint.go). Open loads the
// checkpoints and replays the runs written after them.
//
// # Key families
//
// Every key starts with a one-byte family tag; numbers are big-endian so
// that Pebble's byte order is numeric order (offsets and ids are never
// negative). Values start with a format byte (1, or 2 for batch runs)
// followed by varints (encoding/binary); "str" is a uvarint length and the
// bytes.
//
//	family         key                                          value
//	-------------  -------------------------------------------  ----------------------------------------------
//	meta           'm' name                                     8-byte big-endian counter:
//	                 "mformat"                                    on-disk format version (2)
//	                 "mnext-producer-id"                          next producer id to hand out
//	                 "mnext-object"                               next object number
//	                 "macl-version"                               ACL change counter (package acls)
//	                 "mshards", "mshard"                          the shard count and which shard this state
//	                                                            is (follow.go), written at the first open
//	topic name     'n' name                                     topic id (16 bytes)
//	topic          't' topic-id(16)                             name str, partitions, created ms,
//	                                                            n configs, n × (name str, value str)
//	partition      'p' topic-id(16) partition(4)                checkpoint (format 3): log start, high
//	                                                            watermark, max timestamp, its ListOffsets
//	                                                            offset, its batch's last offset, WAL start,
//	                                                            bytes, segment bytes, segments, rows' bytes,
//	                                                            clean offset, tombstone horizon ms, last
//	                                                            cleaned ms (values.go; formats 1 and 2 read)
//	batch run      'b' topic-id(16) partition(4) last-offset(8) format 2: flags(1: LogAppendTime), object
//	                                                            number, n, base offset, the partition's max
//	                                                            timestamp state (3 varints), n × (byte
//	                                                            offset delta, byte length, last offset
//	                                                            delta, max timestamp delta), m × (producer
//	                                                            id, producer state): see runs.go
//	object         'o' object-number(8)                         state(1), size, live bytes, created ms,
//	                                                            garbage-since ms, broker id, object key str
//	producer       'r' producer-id(8) topic-id(16) partition(4) checkpoint: epoch, last update ms, n(1),
//	                                                            n × (base seq, last seq, base offset, timestamp)
//	producer id    'i' producer-id(8)                           epoch, epoch it was bumped from
//	transaction    'x' transactional id                          package txn's row of a transactional id (its
//	                                                            doc); 'y', 'q', 'z': the partitions' side of
//	                                                            transactions (txn.go)
//	view           'v' view-topic-id(16)                        base topic id (16 bytes), key str: a
//	                                                            hierarchical view named once (views.go)
//	SCRAM user     'u' mechanism(1) user name                   package users' row of a credential (its doc):
//	                                                            iterations, salt, stored key, server key
//	acl            'a' rt(1) pattern(1) name str                version 1: rt(1), pattern(1), operation(1),
//	                 principal str host str                     permission(1), name str, principal str,
//	                 operation(1) permission(1)                 host str: one ACL binding (package acls; rt,
//	                                                            pattern, operation, permission: kmsg's codes)
//	table          'l' n(uvarint) n × level str, name str       version 1: metadata location str, previous
//	                                                            location str: an Iceberg table's pointer
//	                                                            (package tables; shard 0 only)
//	table covered  'c' topic-id(16)                             version 1: n, n × (partition, next offset)
//	                                                            (varints): the table planner's covered
//	                                                            offsets, each shard its partitions'
//	                                                            (tabletier.go)
//	base's view    'w' base-topic-id(16) view-topic-id(16)      format 1, nothing else: finds a base
//	                                                            topic's views when it is deleted (views.go)
//	staged object  's' object key                               the object's bytes: an inline object
//	                                                            committed, not yet persisted (inline.go)
//	key index      'k' (kvindex.Index owns the layout)          kv.index.enabled topics: key -> offset
//	postings       'h' (kvindex.Postings owns the layout)       hierarchical.enabled topics: (key, batch
//	                                                            base offset) -> last offset, batch bytes
//
// The staged family is new in format 3's layout and needs no migration: it
// is empty after a clean Close (the flusher persists what it holds), and
// rows a crash leaves are persisted by the next Open. A build without it
// would ignore such rows: after a crash, start this build once before
// going back to an earlier one.
//
// The key index and the postings are written in the Pebble batch of the
// commit that assigns their offsets (commit.go), dropped with their topic
// (or when their config is turned off), and built from the log in the
// background when their config is turned on for a topic with data
// (kv.go, postings.go). FindKeyBatches resolves postings to the batches'
// current coordinates through the batch rows, so they follow consolidation;
// postings below the log start are skipped, deleted for the key a read
// asks for, and swept for all keys by the tier loop (at most every 10
// minutes a partition, once its log start moved).
//
// A batch run is the consecutive batches one commit appended to one
// partition, all in one object, keyed by its last batch's last offset: the
// batch containing offset o is in the first key >= (topic, partition, o),
// so FindBatches is still one seek. An object is named by a compact number
// in runs; the object family maps it to its key, size and live bytes (the
// summed lengths of the batches still referencing it). An object with no
// live bytes is garbage: all its batches were rejected, or their records
// or topic were deleted. The producer id family only holds ids whose epoch
// was bumped (InitProducerID); other ids below the counter have epoch 0.
//
// A partition's high watermark, max timestamp and producer states are its
// checkpoint ('p' and its 'r' keys) updated by the runs whose last offset
// is at or above the checkpoint's high watermark, in order. Format 1 (a key
// per batch, 'p' and 'r' written by every commit) is migrated at Open.
//
// # Cluster-wide parts
//
// Four parts keep cluster-wide state in this database through a key
// family lent to them (rows.go), each a package of its own that draws its
// rows: the transaction coordinator (package txn, family 'x'), the SCRAM
// users (package users, 'u'), the ACL bindings (package acls, 'a' and
// "macl-version") and the Iceberg tables' metadata pointers (package
// tables, 'l'; docs/design/iceberg-tables.md), which a sharded
// coordinator keeps on shard 0 like topics. The table family is new
// and needs no migration: a build without it never reads its rows; nor
// does one without the table covered family 'c', which the coordinator
// writes itself when a table job completes. Every
// write of theirs is one synced batch through the log, like the
// coordinator's own; they take none of its locks but those their
// interfaces take (txnPartitions).
//
// # Broker registry
//
// Brokers register (node id, advertised address, rack, internal address)
// and heartbeat with RegisterBroker; ListBrokers names those heard from
// within Options.BrokerTTL. The registry (package brokers) is kept in
// memory only: after a restart brokers register again with their next
// heartbeat.
//
// # Locks
//
// Locks are taken in this order, never the reverse:
//
//	follow (FollowTopics, FollowTopicID: a shard's follows of shard 0's
//	        topics, one at a time; the calls it makes take the rest)
//	closeMu (read: every public call; write: Close)
//	  commit (serializes mutations: commits, topic admin, DeleteRecords,
//	          ExpireProducers; guards producer state, what partitions
//	          appended since their checkpoints and the object counter)
//	    mu (RWMutex over topics, partitions and objects in memory; written
//	        only with commit held, so commit's holder reads without it)
//	sweeps (the tier loop's postings sweeps; mu is taken under it)
//	pids (producer id allocation; taken under closeMu only)
//	subs (subscriber lists: commits, topics; taken alone)
//	the broker registry's lock (package brokers; taken alone)
//	users.Store's, acls.Store's and tables.Catalog's locks (taken alone)
//	the transaction coordinator's locks (package txn: a transactional id's
//	  steps hold its lock while they call its Rows and txnPartitions, which
//	  take closeMu's holders' locks: commit and mu) before commit and mu,
//	  and before the group coordinator's group lock (EndTxn completes the
//	  groups' offsets while holding it); the group coordinator verifies a
//	  TxnOffsetCommit under its group lock with txn's views lock alone
//
// Subscribers are called with no lock held.
package coordinator
