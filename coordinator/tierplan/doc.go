// Package tierplan is the coordinator's tier planner: its memory of the
// jobs it hands brokers (consolidation, compaction, table and table
// maintenance), and its pure decisions. Package coordinator reads a
// partition's rows from Pebble and writes a completed job's swap; this
// package decides from what it is given, and remembers:
//
//	TierTick ──▶ Queue, SetCompaction, PlanTables ──▶ due queue (deduped)
//	ClaimTierJob ──▶ Next ──▶ the coordinator builds the job ──▶ Assign
//	                                                (id, lease, active job)
//	CompleteTierJob ──▶ Check ──▶ the coordinator swaps rows ──▶ Completed,
//	                                                Compacted, TableCompleted
//	                  └─▶ Refuse                    (or Expire, Abandon)
//
// What it holds (Registry): a job id counter, each key's active job (a
// partition, or a topic's table job slot: a negative partition,
// TableJobPart), the due queue, the tier and compaction counters, the
// last compaction view of each compacted partition, and each table
// topic's planning memory (Table: its covered offsets and the high
// watermarks the tier passes saw). All of it is memory only: a restart
// forgets the jobs, and the covered offsets are read back through
// Config.ReadCovered.
//
// What it decides, with no state: a topic's tier and cleaner settings
// from its configs (SettingsOf, CompactSettingsOf), which WAL runs a
// consolidation job takes (Cut), whether a compacted partition is due for
// a pass (PlanCompaction), which offsets a table job would cover (Span)
// and which slot keys a topic's table jobs take (TableJobPart), and
// whether a broker's completion report matches its job (CheckConsolidation,
// CheckCompaction, CheckTable).
//
// The registry is generic over its key type (Key), so that the
// coordinator keeps its own partition key.
//
// # Locks
//
// A Registry has one mutex, a leaf: it is taken alone, or under the
// coordinator's commit lock (CompleteTierJob, retention), never with
// another of the coordinator's locks held under it. Config.ReadCovered
// runs under it (it reads Pebble, and takes no lock of the
// coordinator's), as does logging.
package tierplan
