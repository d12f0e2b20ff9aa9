// Package layout is the on-disk format of the coordinator's Pebble state:
// the key families and their key constructors, and the codecs of every
// value the coordinator writes itself (topics, partition checkpoints,
// batch runs and segment rows, objects, producers, and the smaller
// families of views, transactions and table planning). It holds no state
// and takes no locks; package coordinator decides what to write when (its
// doc draws the durability rule and the lock order). Rows of the families
// lent to other parts (transactions 'x', SCRAM users 'u', ACLs 'a',
// tables 'l', the key index 'k' and the postings 'h') are those parts'
// own layouts: only their family bytes are reserved here.
//
// Every decoder here reads bytes from disk: it returns an error for any
// input it does not recognise and never panics (the Fuzz tests hold it to
// that).
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
//	                 "mformat"                                    on-disk format version (3)
//	                 "mnext-producer-id"                          next producer id to hand out
//	                 "mnext-object"                               next object number
//	                 "macl-version"                               ACL change counter (package acls)
//	                 "mshards", "mshard"                          the shard count and which shard this state
//	                                                            is (coordinator/follow.go), written at the first open
//	                 "mmap-version"                               the shard map's version, written with
//	                                                            "mshards" when a growth commits (grow.go)
//	topic name     'n' name                                     topic id (16 bytes)
//	topic          't' topic-id(16)                             name str, partitions, created ms,
//	                                                            n configs, n × (name str, value str)
//	partition      'p' topic-id(16) partition(4)                checkpoint (format 3): log start, high
//	                                                            watermark, max timestamp, its ListOffsets
//	                                                            offset, its batch's last offset, WAL start,
//	                                                            bytes, segment bytes, segments, rows' bytes,
//	                                                            clean offset, tombstone horizon ms, last
//	                                                            cleaned ms (formats 1 and 2 read)
//	batch run      'b' topic-id(16) partition(4) last-offset(8) format 2: flags(1: LogAppendTime), object
//	                                                            number, n, base offset, the partition's max
//	                                                            timestamp state (3 varints), n × (byte
//	                                                            offset delta, byte length, last offset
//	                                                            delta, max timestamp delta), m × (producer
//	                                                            id, producer state): drawn below
//	object         'o' object-number(8)                         state(1), size, live bytes, created ms,
//	                                                            garbage-since ms, broker id, object key str
//	producer       'r' producer-id(8) topic-id(16) partition(4) checkpoint: epoch, last update ms, n(1),
//	                                                            n × (base seq, last seq, base offset, timestamp)
//	producer id    'i' producer-id(8)                           epoch, epoch it was bumped from
//	transaction    'x' transactional id                          package txn's row of a transactional id (its
//	                                                            doc); 'y', 'q', 'z': the partitions' side of
//	                                                            transactions (drawn below)
//	view           'v' view-topic-id(16)                        base topic id (16 bytes), key str: a
//	                                                            hierarchical view named once (coordinator/views.go)
//	txn open       'y' topic-id(16) partition(4) producer-id(8)  first offset: a transaction open in the
//	                                                            partition, deleted by its marker's commit
//	aborted        'q' topic-id(16) partition(4) marker         first offset: an aborted transaction, as
//	                 offset(8) producer-id(8)                     Fetch lists it for read_committed
//	txn keys       'z' topic-id(16) partition(4) producer-      n, n × (key str, offset delta, tombstone(1)):
//	                 id(8) base-offset(8)                         a kv-indexed transactional batch's keys,
//	                                                            held until its marker
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
//	                                                            (coordinator/tabletier.go)
//	base's view    'w' base-topic-id(16) view-topic-id(16)      format 1, nothing else: finds a base
//	                                                            topic's views when it is deleted (coordinator/views.go)
//	handover       'e' topic-id(16) partition(4)                format 1, state(1), map version: a partition
//	                                                            moving between shards (coordinator/handover.go):
//	                                                            1 out (fenced here), 2 importing, 3 in
//	                                                            (imported here), 4 gone (dropped here); it
//	                                                            decides whether the partition is this shard's
//	                                                            over the shard count
//	staged object  's' object key                               the object's bytes: an inline object
//	                                                            committed, not yet persisted (coordinator/inline)
//	key index      'k' (kvindex.Index owns the layout)          kv.index.enabled topics: key -> offset
//	postings       'h' (kvindex.Postings owns the layout)       hierarchical.enabled topics: (key, batch
//	                                                            base offset) -> last offset, batch bytes
//
// The handover family is new and needs no migration: a state that never
// took part in a handover has no row of it. A build without it would
// ignore the rows, serving a partition moved away as its own again: do not
// go back to one after a handover.
//
// The staged family is new in format 3's layout and needs no migration: it
// is empty after a clean Close (the flusher persists what it holds), and
// rows a crash leaves are persisted by the next Open. A build without it
// would ignore such rows: after a crash, start this build once before
// going back to an earlier one.
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
// # Batch runs
//
// A batch run is the consecutive batches one commit appended to one
// partition: they live in the same object and their offsets follow each
// other. Its value starts with format byte 2 (ValueRun):
//
//	field           encoding   meaning
//	--------------  ---------  ------------------------------------------------
//	format          byte       2
//	flags           byte       1: LogAppendTime (every batch of the run)
//	object          uvarint    object number of every batch
//	n               uvarint    batch count, >= 1
//	base offset     uvarint    base offset of the first batch
//	max timestamp   varint     the partition's max timestamp state
//	ts offset       varint       (Partition.MaxTimestamp, MaxTimestampOffset
//	ts last         varint       and MaxTimestampLast) once the run was appended
//	n × batch:
//	  byte offset   varint     minus the end of the previous batch (0 first)
//	  byte length   uvarint
//	  offset delta  uvarint    last offset - base offset
//	  max timestamp varint     minus the previous batch's (0 first)
//	m               uvarint    producer states the run changed
//	m × producer:
//	  producer id   uvarint
//	  state         (fields)   the producer value's fields, no format byte:
//	                           its state on this partition after the run
//
// A batch's base offset is the previous batch's last offset + 1; the last
// batch's last offset must equal the key's. The coordinator's
// checkpoint.go says how the runs after a partition's record rebuild its
// state at Open.
//
// # Segment rows
//
// A segment row is the other value of the batch family: one segment
// object (tiered/doc.go) that consolidation wrote from the partition's
// runs, keyed like a run by its last offset, so that the row holding
// offset o is still the first key >= (topic, partition, o) whichever tier
// it is in. Its value starts with format byte 3 (ValueSegment):
//
//	field           encoding   meaning
//	--------------  ---------  ------------------------------------------------
//	format          byte       3
//	flags           byte       1: LogAppendTime (its batches carry the time)
//	object          uvarint    object number of the segment object
//	base offset     uvarint    the first batch's base offset
//	batches         uvarint    batch count, >= 1
//	data length     uvarint    the segment's data part: its batches' bytes
//	max timestamp   varint     the largest batch max timestamp (-1: none)
//	ts offset       varint     what ListOffsets(TimestampMax) answers for it,
//	ts last           and the last offset of the batch holding it (as
//	                           the coordinator's partState.noteBatch keeps them)
//
// A segment row carries no producer states: consolidation writes the
// partition's checkpoint in the same batch, so no replay reaches it.
package layout
