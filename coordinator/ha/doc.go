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
// in the same critical section, so that its databases go through exactly
// the states a standby's do, in log order; and it answers nothing until the
// stream has acknowledged every message published before the answer (the
// rpc server's gate waits on it, and a write on its own entry), but for the
// answers that depend only on what the stream has: a fetch's FindBatches
// reads no further than the durable high watermarks (package
// coordinator/durable), and checks the lease alone
// (rpc.ServerOptions.SettledGate). No feature
// has replication code of its own: a new kind of state is replicated by
// being written in a batch.
//
// Appends are pipelined (many in flight on one connection), and each
// message expects the stream's last sequence to be its predecessor's
// (Nats-Expected-Last-Sequence). A new leader first appends a leader entry
// of a higher term than any in the log; the first append of the leader
// before it that comes after fails, and its first failure stops it
// serving. A deposed leader's later appends in flight may still get in
// (each expects the sequence before it, which the new leader's appends may
// come round to): every replica skips a message of an older term than the
// last leader entry's, and the rest of the current term after it (its
// leader's append whose place it took was refused, so that leader stopped
// and answered nothing after it), until the next leader entry.
//
// Under load, batches are grouped (Options.InflightMessages): while that
// many messages await the stream's acknowledgement, the next batches of one
// database are applied as ever but published together, as one entry (one
// Pebble batch holding all their records, their counts summed) at the next
// acknowledgement; the group's sequence is reserved when it opens, so each
// of its batches records that position. Replicas need nothing new: a
// grouped entry is a batch like any other. An append costs JetStream about
// the same up to tens of KiB, so the servers' work per commit falls with
// the group's size.
//
// Stream <cluster>_coordlog, subject <cluster>.coordlog, file storage,
// Options.Replicas replicas. Each message (format 1):
//
//	header Floe-Log   "1": the format of the message
//	header Floe-Term  the term of the leader that appended it (decimal)
//	header Floe-Db    "c" a batch of the coordinator's Pebble
//	                  "g" a batch of the group coordinator's Pebble
//	                  "L" a leader entry: JSON {"term", "id", "time_ms",
//	                      "adopted"}
//	                  "S" a snapshot entry: JSON {"seq"}: a snapshot holds
//	                      every entry up to seq
//	header Floe-Part  "i/n" when an entry is larger than a NATS message and
//	                  split over n consecutive messages (absent: n = 1); an
//	                  entry whose parts stop short (its leader failed) is
//	                  dropped when the next begins
//	data              the entry (for c and g, the batch's Repr)
//
// Each database records its position, in the batch that applies an entry,
// under key 0xff "ha-applied": the entry's last sequence, its term, and the
// sequence up to which the log had acknowledged everything when it was
// applied (8 bytes each, big-endian). The leader's position is the last
// record of the batch it publishes (filled in place, so that the bytes
// published are the bytes applied); a standby sets its own after it. A replica stopped anywhere resumes
// from the smaller of its two databases' positions, in that position's
// term, and skips, per database, what it already has. Batches are blind
// writes, so applying them again in order from an earlier position gives
// the same state. Snapshot entries stamp both databases, so that one seldom
// written does not hold a restart far back. Pebble is written without sync
// (Options.SyncState aside): the log is the durable copy.
//
// A leader applies before the log acknowledges, so when it stops (fenced,
// killed) its databases may hold entries the log never got, or got where
// replicas skip them. When a replica is opened, every message from its
// acknowledged sequence to its position must be in the log in its term;
// if not, it has diverged, and it is wiped and rebuilt from the newest
// snapshot and the log.
//
// # A lone coordinator's trailing log
//
// With Options.SyncState (the embedded default: one coordinator, an R1 log
// not synced per message) the leader's Pebble, synced on every write, is
// the durable copy, and the log trails it: a batch is applied and synced
// first and answered then; its messages are published behind it, in
// order, a millisecond later (with whatever was applied meanwhile), by a
// goroutine of their own, so that neither the publish nor the NATS work it
// wakes is on the commit's path. The gate waits for the syncs of what was
// applied, not for the stream; the log's own entries (a leader entry, a
// snapshot entry) still wait for their acknowledgement. An entry applied is
// committed whatever becomes of the log: a leader stopped (or a log
// failed) before the log had its tail leaves a state ahead of the log's
// end, which the next start resumes the log from; a graceful stop lets
// the log catch up first.
//
// # Leadership
//
// The lease is key "leader" of the KV bucket <cluster>_coordlease, whose
// max age is Options.LeaseTTL, value JSON {"id", "addr"}. A standby takes it
// with a create (which succeeds only once the key is gone), a leader renews
// it every third of the TTL with an update conditional on its revision, and
// stops counting itself leader a TTL after the start of its last renewal by
// its own clock: before the servers expire the key. The term is the
// revision the lease was taken at (raised above the log's last term). A
// coordinator restarted under the same id takes its own lease back at once.
// Only the leader subscribes to the coordinator's request subjects, in a
// queue group of its term's, so brokers reach it with no configuration, and
// a deposed leader still subscribed (stopped, hung) gets a copy of each
// request rather than a share of them; a leader's every reply is gated on
// its lease and (but for the settled reads above) its log, so that a
// paused leader, once resumed, answers nothing it computed.
//
// A standby that takes the lease applies the log to its end, appends its
// leader entry, and opens the coordinator service on its databases, which
// loads its state as after a restart. A standby whose tail of the log (an
// ordered consumer) delivers nothing for two checks, ten lease polls (a
// second at least) apart, while the log held more at the first, tails it
// again from where it is: a consumer lost on the servers would otherwise
// leave it behind for good, unable to lead.
//
// # Snapshots
//
// Every Options.SnapshotInterval the leader checkpoints both databases
// (pebble.DB.Checkpoint, after writing an empty batch through the log to
// each, so that both record a recent position) and uploads them:
//
//	<prefix>/coordinator/snapshots/<seq, 20 digits>/coordinator/<file>
//	<prefix>/coordinator/snapshots/<seq, 20 digits>/groups/<file>
//	<prefix>/coordinator/snapshots/<seq, 20 digits>/manifest.json   last:
//	    {"format": 1, "seq", "term", "created_ms",
//	     "files": [{"db", "name", "size", "crc32c"}]}
//
// seq is the smaller of the two checkpoints' positions; the manifest is
// uploaded only once the log has the larger (a grouped batch is applied
// before it is published). It then appends a snapshot entry, deletes all
// but the newest Options.SnapshotsKept snapshots, and purges the stream
// below the oldest kept one (never past the stream's end). Shard i > 0 of
// a sharded coordinator (Options.Shard) keeps its snapshots under
// <prefix>/coordinator/shard-<i>/snapshots/: each shard has its own log. A replica
// that is empty, or whose position the stream no longer holds, restores
// the newest snapshot and applies the log from there. (<prefix>/ is absent
// without a prefix: coordapi.SnapshotPrefix. Builds before it wrote
// <prefix>coordinator/snapshots/, with no separator; those are read while
// the new place holds no snapshot, and deleted by the first prune after.)
//
// A database written by a build before the log (state, but no position)
// started against an empty log is adopted as the log's starting state; its
// first leader snapshots it at once, so that standbys can start from it.
package ha
