// Package handover moves partitions between a sharded coordinator's
// shards, and grows the shard count (docs/design/coordinator-shards.md,
// "Adding shards"). It drives the shards only through interfaces (Peer,
// ShardPeer: a *coordinator.Coordinator, or rpc.Client over NATS) and
// decides, with no state, what a chunk of rows holds; package coordinator
// keeps the handover rows, reads and writes Pebble and takes its locks.
//
// A partition moves from the shard that owns it to another in four calls
// (Move):
//
//	old shard   FencePartition    'e' row "out": commits, DeleteRecords and
//	                              tier jobs of the partition are refused
//	                              (NOT_LEADER_OR_FOLLOWER, retriable)
//	old shard   ExportPartition   its rows in key order, a chunk at a time
//	                              (ExportRows)
//	new shard   ImportPartition   each chunk written through the new shard's
//	                              log (PlanRows renumbers its batch rows);
//	                              the first drops what an interrupted
//	                              import left, the last ('e' row "in")
//	                              makes the partition the new shard's
//	old shard   DropPartition     its rows deleted, their bytes taken off
//	                              its objects ('e' row "gone")
//
// The import counts the moved batches' bytes live in objects of its own,
// found by key or created under its own numbers, before the old shard
// drops them: at every moment some shard has each of the partition's
// objects live, and the old shard's drop makes them garbage only from
// then on, so shard 0's collection (object_states) never takes one a
// shard refers to. A handover row is the last word on whether the
// partition is this shard's, over the shard count (the coordinator's
// owns).
//
// Growing the shard count from N to M (Grow): shard 0 moves every
// partition whose jump hash changes, then has every shard commit M and
// the map version (CommitShards), the other shards first and itself last,
// so that brokers, which take the count from shard 0, route by M only
// once every shard serves by it. A shard commits M only when it holds no
// partition with data that M takes from it and that it did not hand over;
// a commit refused for that (a partition created, or first written, after
// the moves were listed) makes Grow list and move again. The commit holds
// the shard's commit lock, so no commit lands between its check and its
// new placement. Handover rows stay after the commit: they agree with M,
// and keep a repeated Grow from moving a partition twice.
//
// # Locks
//
// The package has no lock and no state: Move and Grow hold nothing while
// they call the shards, whose calls take their own locks.
package handover
