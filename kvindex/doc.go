// Package kvindex is floe's key index: for topics with kv.index.enabled it maps each
// record key to the Kafka offset of the latest record carrying it, and serves
// GET /kv/{topic}/{key} by looking the key up and reading that record back from the
// log. Values are never copied into the index: the log stays the only copy of the data,
// and the index is bounded by the live key set, not by value size.
//
// # Index
//
// The index lives in the coordinator's Pebble database under one key family byte the
// coordinator reserves for it (New's prefix). The coordinator calls Apply inside the
// Pebble batch that assigns a commit's offsets, so an index entry becomes durable in
// the same synced write as the offset it points at: the index never runs ahead of the
// log. Numbers are big-endian so that Pebble's byte order groups a topic's keys by
// partition.
//
//	entry   prefix(1) | topic id(16) | partition(4, 0..2^31-1) | raw key(n)  ->  offset(8)
//	marker  prefix(1) | topic id(16) | ff ff ff ff                          ->  01
//
//	 0      1                       17            21
//	+------+------------------------+-------------+---------------------+
//	|prefix|       topic id         |  partition  |  key bytes, as the  |
//	|  1B  |         16B            | int32 >= 0  |  producer sent them |
//	+------+------------------------+-------------+---------------------+
//	value: int64 Kafka offset of the latest record with that key
//
// A tombstone (a record whose value is null) deletes the key's entry. The marker key
// sits after every entry of its topic (partitions are never negative, so an entry's
// partition bytes start below 0x80) and exists while the topic's index is being
// (re)built from the log: such a topic answers 503 until Rebuild removes it. DropTopic
// removes a topic's entries and marker with one range deletion.
//
// # Transactions
//
// The key-index RFC leaves transactions open; floe closes it: the index never
// takes a key of an uncommitted or aborted record. A transactional batch's keys
// are not Applied with its commit; the coordinator holds them (durably, in its
// own rows) until the transaction's marker, and Applies them in the Pebble batch
// that commits the commit marker, or drops them with the abort marker. So /kv
// answers a transaction's values once, and only once, it committed, and an
// aborted overwrite never replaces the value before it. Rebuild skips the
// records of aborted and still-open transactions (TxnLog) for the same reason.
//
// # Turning the index on
//
// A topic created with kv.index.enabled=true is indexed from its first commit. A topic
// that turns it on later has data to index first: the coordinator commits
// SetReady(b, id, false) in the same batch as the config change, Applies entries for
// every commit from then on, and runs Rebuild, which replays the log into the index and
// marks the topic ready. The mark survives restarts, so a coordinator that finds an
// indexed topic not Ready at startup runs Rebuild again. Turning the index off, or
// deleting the topic, is DropTopic.
//
// # Postings
//
// For topics with hierarchical.enabled, Postings is a second key family (NewPostings'
// prefix, another byte the coordinator reserves): for each (topic, partition, key) the
// batches holding a record with that key, one posting per key per batch however often
// the key occurs in it. The coordinator Applies a batch's postings in the Pebble batch
// that assigns its offsets, as it does key index entries, so a posting never runs
// ahead of the log. Postings name batches by offsets, not by object coordinates: they
// stay true when consolidation moves a batch into a segment or compaction rewrites it
// (a reader resolves each posting to the batch now holding its base offset, and skips
// one whose batch is gone). The batch length lets a reader bound what it answers by
// bytes without resolving every posting first.
//
//	posting  prefix(1) | topic id(16) | partition(4) | key length (uvarint) | key |
//	         base offset(8)   ->   format(1) = 1 | last offset - base offset (uvarint) |
//	                                batch length in bytes (uvarint)
//	marker   prefix(1) | topic id(16) | ff ff ff ff   ->   01
//
//	 0      1            17          21             21+v        21+v+n        29+v+n
//	+------+------------+-----------+--------------+-----------+-------------+
//	|prefix|  topic id  | partition | key length n |    key    | base offset |
//	|  1B  |    16B     |    4B     | uvarint, v B |    n B    |  int64 BE   |
//	+------+------------+-----------+--------------+-----------+-------------+
//	value: 01 | uvarint(last offset - base offset) | uvarint(batch bytes); another
//	first byte is a newer format this code does not read (ErrBadPosting)
//
// The key length keeps one key's postings from sharing a prefix with another key's,
// and the big-endian base offset puts each key's postings in offset order: Find seeks
// to the last posting at or below the fetch offset and reads on. Postings below the
// log start (retention, DeleteRecords) are skipped by readers and removed lazily, one
// range deletion per key read (StaleBelow, DeleteBelow; a batch the log start cuts into
// stays), and for keys no one reads by SweepPartition, which the coordinator's tier loop
// runs now and then once the log start has moved; DropTopic removes a topic's postings with
// one range deletion when it is deleted or turns hierarchical.enabled off. A topic
// that turns it on with data already in its log is marked not ready
// (Postings.SetReady) in the same batch as the config change, and RebuildPostings
// replays the log into its postings as Rebuild does for the key index; until then
// readers fall back to reading the whole partition.
//
// # Lookups
//
// NewHandler serves GET /kv/{topic}/{key}[?partition=N][&key_encoding=base64url] over a
// Service, which the broker implements with its topic cache, the coordinator and its
// chunk cache. The key is the path segment after the topic, percent-decoded (a '/'
// inside a raw key must be sent as %2F; proxies that decode %2F break this, so
// key_encoding=base64url, RFC 4648's URL-safe alphabet with or without padding, is the
// safe way to send arbitrary bytes). Without ?partition=N the partition is
// Partition(key, partitions), the Java client's default partitioner.
//
// A lookup costs one coordinator round trip at most:
//
//	Service.Topic       id, partitions, kv.index.enabled   the broker's topic cache
//	Service.Lookup      ready, entry, log start, high      one coordinator call (KvGet)
//	                    watermark, the entry's batch
//	Service.            the batch inside the entry's       the segment's index (cached),
//	  ResolveSegment    tiered segment (remote reads on)   batch headers: the chunk cache
//	BatchCache          the batch, decoded or indexed      memory
//	Service.ReadBatch   the batch's bytes (first lookup),  the chunk cache
//	                    or the record's (uncompressed)
//
// The handler checks, in order: the topic exists and is indexed (as far as the topic
// cache knows: the lookup's answer has the last word), the partition is in range, the
// index is ready (else 503), the entry exists, its offset is below the high watermark
// and not below the log start, the batch holding it is readable (not only in tiered
// storage unless remote reads are enabled: the remote-read gate answers before any
// read, and only past it is a record in a tiered segment located inside the segment,
// Service.ResolveSegment), the record at that exact offset carries the same key (a mismatch or a missing
// record is a stale pointer left behind by compaction), and its value is not null.
// Records from aborted transactions are served like any other, as in the RFC this
// follows.
//
// Every batch read is checked and indexed once into a BatchCache
// (HandlerOptions.BatchCache, 64 MiB by default, S3-FIFO, keyed by object key and byte
// offset: committed batches never change, so entries are never invalidated). A
// compressed batch is kept decoded, so later lookups of any of its records read memory
// without decompressing; an uncompressed one as where its records start (4 bytes a
// record), so later lookups read their record's bytes alone from ReadBatch.
//
// A hit answers 200 with the raw value and Content-Type application/octet-stream, and
// the headers X-Kv-Partition, X-Kv-Offset and X-Kv-Timestamp (milliseconds: the batch's
// log append time when it has one, else the record's create time).
//
// # Errors
//
// Every error answers a JSON body {"error_code": <int>, "message": "..."}, with codes in
// the style of Redpanda's HTTP proxy (HTTP status followed by a two-digit reason; 40401
// and 40402 mean what they mean there):
//
//	status  error_code  meaning
//	------  ----------  ----------------------------------------------------------------
//	400     40001       malformed path or key: not /kv/{topic}/{key}, empty key, or a
//	                    raw key with a literal '/'
//	400     40002       bad key encoding: key_encoding other than base64url, or a key that
//	                    is not valid base64url
//	400     40003       bad partition: ?partition= not an integer, negative, or not below
//	                    the topic's partition count
//	401     40101       security is on and the request has no valid credentials: HTTP
//	                    Basic (a SCRAM user's password) or a client certificate
//	                    (WWW-Authenticate: Basic)
//	403     40301       the principal may not READ the topic (ACLs)
//	404     40401       topic not found
//	404     40402       partition not found (the Service reports ErrUnknownPartition)
//	404     40403       topic not indexed (kv.index.enabled is off)
//	404     40404       key not found: no entry, tombstoned, offset at or past the high
//	                    watermark, stale pointer, or record gone from the log
//	404     40405       record only available in tiered storage: remote reads are
//	                    disabled (--kv-remote-read-enabled=false; they are on by
//	                    default)
//	405     40501       method not allowed (Allow: GET)
//	429     42901       the principal's lookup quota is spent (--kv-quota-rps; Retry-After)
//	500     50001       internal error (logged)
//	503     50301       the topic's index is being rebuilt (Retry-After: 1)
package kvindex
