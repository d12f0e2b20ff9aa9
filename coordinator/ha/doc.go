// Package ha makes the coordinator highly available on NATS JetStream: its
// state (the batch coordinator's Pebble and the group coordinator's) is a
// materialised view of a replicated log, a JetStream stream, and one of the
// cluster's coordinators leads while the others stand by, applying the log.
//
// # The log
//
// Every write of the coordinator and of the group coordinator is one Pebble
// batch (coordinator.Log, groups.Log). The leader appends the batch's bytes
// (pebble.Batch.Repr) to the stream and applies the batch to its own Pebble
// only once the stream has acknowledged it and every earlier entry is
// applied, so that the leader's databases go through exactly the states a
// standby's do, and nothing is answered before it is in the log. No feature
// has replication code of its own: a new kind of state is replicated by
// being written in a batch.
//
// Appends are pipelined (many in flight on one connection), and each
// message expects the stream's last sequence to be its predecessor's
// (Nats-Expected-Last-Sequence). A new leader first appends a leader entry;
// from then on every append of the leader before it fails, however late it
// runs, and its first failure stops it serving.
//
// Stream <cluster>_coordlog, subject <cluster>.coordlog, file storage,
// Options.Replicas replicas. Each message (format 1):
//
//	header Floe-Log   "1": the format of the message
//	header Floe-Db    "c" a batch of the coordinator's Pebble
//	                  "g" a batch of the group coordinator's Pebble
//	                  "L" a leader entry: JSON {"term", "id", "time_ms"}
//	                  "S" a snapshot entry: JSON {"seq"}: a snapshot holds
//	                      every entry up to seq
//	header Floe-Part  "i/n" when an entry is larger than a NATS message and
//	                  split over n consecutive messages (absent: n = 1); an
//	                  entry whose parts stop short (its leader failed) is
//	                  dropped when the next begins
//	data              the entry (for c and g, the batch's Repr)
//
// Each database records, in the batch that applies an entry, the entry's
// last sequence under key 0xff "ha-applied" (8 bytes, big-endian): a replica
// stopped anywhere resumes from the smaller of its two databases' positions
// and skips, per database, what it already has. Batches are blind writes, so
// applying them again in order from an earlier position gives the same
// state. Snapshot entries stamp both databases, so that one seldom written
// does not hold a restart far back. Pebble is written without sync: the log
// is the durable copy.
//
// # Leadership
//
// The lease is key "leader" of the KV bucket <cluster>_coordlease, whose
// max age is Options.LeaseTTL, value JSON {"id", "addr"}. A standby takes it
// with a create (which succeeds only once the key is gone), a leader renews
// it every third of the TTL with an update conditional on its revision, and
// stops counting itself leader a TTL after the start of its last renewal by
// its own clock: before the servers expire the key. The term is the
// revision the lease was taken at. A coordinator restarted under the same
// id takes its own lease back at once. Only the leader subscribes to the
// coordinator's request subjects, so brokers reach it with no configuration;
// a leader's every reply is gated on its lease and its log, so that a
// paused leader, once resumed, answers nothing it computed.
//
// A standby that takes the lease applies the log to its end, appends its
// leader entry, and opens the coordinator service on its databases, which
// loads its state as after a restart.
//
// # Snapshots
//
// Every Options.SnapshotInterval the leader checkpoints both databases
// (pebble.DB.Checkpoint, after writing an empty batch through the log to
// each, so that both record a recent position) and uploads them:
//
//	<prefix>coordinator/snapshots/<seq, 20 digits>/coordinator/<file>
//	<prefix>coordinator/snapshots/<seq, 20 digits>/groups/<file>
//	<prefix>coordinator/snapshots/<seq, 20 digits>/manifest.json   last:
//	    {"format": 1, "seq", "term", "created_ms",
//	     "files": [{"db", "name", "size", "crc32c"}]}
//
// seq is the smaller of the two checkpoints' positions. It then appends a
// snapshot entry, deletes all but the newest Options.SnapshotsKept
// snapshots, and purges the stream below the oldest kept one. A replica
// that is empty, or whose position the stream no longer holds, restores
// the newest snapshot and applies the log from there.
//
// A database written by a build before the log (state, but no position)
// started against an empty log is adopted as the log's starting state; its
// first leader snapshots it at once, so that standbys can start from it.
package ha
