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
// Every key starts with a one-byte family tag. The families, every value's
// layout, batch runs and segment rows, and the staged family's migration
// rule are drawn in package layout (coordinator/layout/doc.go), which owns
// the keys and the codecs; this package decides what to write when.
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
// # Shards
//
// A partition moves between shards (package handover draws it) by
// FencePartition on the shard it leaves, ExportPartition's chunks
// imported by ImportPartition on the shard it joins, and DropPartition on
// the first: handover.go is this shard's side of each, its rows and
// locks; handover.Move drives the four over HandoverPeer, and
// handover.Grow the growth of the shard count (Grow, CommitShards in
// grow.go). Each call writes through the log: the partition's handover
// row ('e') is, over the shard count, what says whether the partition is
// this shard's (owns), so a standby promoted mid-move refuses and serves
// what the leader did. A shard above 0 keeps a copy of shard 0's topics
// (package follow, through followCopy).
//
// # Rules and readers
//
// Pure parts decide from what this package reads, in packages of their
// own: idempotence, topicrules, commitcheck (a commit request), rowscan
// (what reads answer from batch rows), sortedwrites, logread (the log
// read back for index builds), durable (which offsets the log has: reads
// answer no further, and leave without waiting for it) and markers (a
// transaction's).
//
// # Tier planning
//
// The tier loop (TierTick) and the tier jobs' calls (ClaimTierJob,
// CompleteTierJob, AbandonTierJob) are planned by package tierplan, which
// holds the jobs and decides from what this package reads of the rows;
// this package reads the runs and segments from Pebble, enforces
// retention and writes each completed job's swap in one synced batch
// (tier.go, compact.go, tabletier.go).
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
//	follow (package follow's semaphore: a shard's follows of shard 0's
//	        topics, one at a time; the calls it makes take the rest;
//	        ImportPartition follows an unknown topic before it enters;
//	        Grow, like a follow, holds none: the calls it makes enter)
//	closeMu (read: every public call; write: Close)
//	  commit (serializes mutations: commits, topic admin, DeleteRecords,
//	          ExpireProducers; guards producer state, what partitions
//	          appended since their checkpoints and the object counter)
//	    mu (RWMutex over topics, partitions and objects in memory; written
//	        only with commit held, so commit's holder reads without it)
//	    place (an atomic pointer to the placement, handover.go: stored
//	           with commit held, loaded under any lock or none)
//	sweeps (the tier loop's postings sweeps; mu is taken under it)
//	the tier planner's lock (package tierplan's Registry: taken alone, or
//	  under commit; a leaf, it takes none of these)
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
