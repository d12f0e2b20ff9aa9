// Package txn is floe's transaction coordinator (KIP-98, with KIP-360's
// epoch bumps and KIP-890's ordering), a part of the coordinator service
// beside the batch coordinator (package coordinator) and the group
// coordinator (package groups), as Apache Kafka keeps its
// TransactionCoordinator apart from its logs and its group coordinator.
//
// It owns what is per transactional id: the producer id and epoch a
// transactional id has, its transaction's state, partitions, groups and
// timeout. What is per partition stays with the partitions (the batch
// coordinator): which producers have a transaction open there and from
// which offset, the aborted transactions fetches list, the keys held back
// from the key index until a marker. The two meet through small
// interfaces defined here, which the batch coordinator implements:
//
//	InitProducerId ─┐                       Partitions (the batch coordinator)
//	AddPartitions   ├─▶ txn.Coordinator ──▶ AllocateProducerID, CheckPartitions,
//	AddOffsets      │    (a row per id,     SetTxnView (what commits check),
//	EndTxn ─────────┘     in Rows)          WriteTxnMarkers (a control batch per
//	                                         partition, committed like an object)
//	                          └──▶ Offsets (the group coordinator): commit or
//	                               drop the groups' transactional offsets
//
// # State
//
// A transactional id's state is one row in Rows (the batch coordinator's
// Pebble, family 'x', replicated with it through its log), rewritten and
// synced by each step:
//
//	x <transactional id> -> version 1, producer id, epoch, previous producer
//	                        id, previous epoch, timeout ms, state(1), start
//	                        ms, update ms, n partitions × (topic id(16),
//	                        partition), n groups × group str
//
// Numbers are varints (encoding/binary), str a uvarint length and the
// bytes. The format is the one the batch coordinator wrote before this
// package existed: nothing migrates.
//
// EndTxn moves the state to PrepareCommit or PrepareAbort (durable), which
// stops the transaction's batches from being accepted (its view says not
// ongoing); writes the markers into every partition of the transaction;
// commits or drops its groups' transactional offsets; and moves the state
// to CompleteCommit or CompleteAbort. A coordinator that stops between
// Prepare and Complete finishes the transaction at its next Tick after
// New, as does a completion that failed.
//
// A marker is the control batch Kafka writes (MarkerBatch): the batch
// coordinator commits one a partition for WriteTxnMarkers.
//
// Every view a step installs is installed after its row is durable, so
// that the partitions never accept a batch that a crash would make the
// transaction forget.
//
// # Locks
//
// In this order, never the reverse:
//
//	state.mu (one transactional id's steps: InitProducerId, AddPartitions,
//	  AddOffsets, EndTxn, Tick), held across the calls to Rows,
//	  Partitions and Offsets; the group coordinator's group lock is taken
//	  under it (Offsets), and the batch coordinator's locks
//	  mu (the registry's maps; taken alone, or under a state.mu)
//	views (the views VerifyTxnOffsetCommit reads; taken alone: it runs
//	  under a group's lock, which EndTxn takes under a state.mu)
package txn
