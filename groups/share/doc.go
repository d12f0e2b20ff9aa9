// Package share is the state machine of one share-partition (KIP-932,
// issue 42; docs/design/share-groups.md): the records of one partition
// that a share group's members acquire under a time lock, then accept,
// release or reject. It is pure: a Partition changes in memory and returns
// the rows to write and what to answer; it takes no lock, reads no clock
// (callers pass the coordinator's time in milliseconds) and does no I/O.
// Package sharegroups (hosted by package groups) owns the locks, the log
// and the deadline scheduler.
//
// # Ranges
//
// A share-partition is its start offset (SPSO), the first offset not yet
// acknowledged or archived, and its end, the first offset never acquired.
// Between them, ranges tile [SPSO, end): runs of offsets with one state
// (Kafka's RecordState ids) and one delivery count, and when Acquired one
// holder (member, the broker it went out through, the lock's deadline).
//
//	SPSO                                                             end         bound (HW or LSO)
//	 ▼                                                                 ▼           ▼
//	 │ acquired(1) a │ available(2) │ archived │ acked │ acquired(1) b │ new ...   │
//	 └───────────── end - SPSO ≤ MaxRecordLocks ───────────────────────┘
//
// Records move between states as Kafka's SharePartition moves them:
//
//	            Acquire (count+1)
//	Available ───────────────────▶ Acquired ── AckAccept ─────────────────▶ Acknowledged
//	    ▲                           │  │  │
//	    │  AckRelease, expiry,      │  │  └─── AckReject, AckGap ──────────▶ Archived
//	    │  ReleaseMember            │  │
//	    └─ (count kept) ────────────┘  └───── the same at the delivery ────▶ Archived
//	                                          count limit
//
// AckRenew keeps a record Acquired and restarts its lock. Ranges split
// where an operation touches part of one, and merge again with neighbours
// that end up alike, so a partition read one record at a time in order
// stays a handful of ranges. After every operation SPSO moves past the
// leading Acknowledged and Archived ranges, which are dropped: only what
// is in flight is kept. Acquire takes new records only while end - SPSO is
// under Config.MaxRecordLocks (Kafka's window), so a share-partition holds
// at most that many offsets, plus the rest of the last log batch it
// acquired whole. A log start that passes SPSO (retention, DeleteRecords)
// archives everything below it, acquired records included. Skip archives
// offsets without acquiring them: a hierarchical view's share-partition
// acquires only the batches of its key and skips the base partition's
// offsets between them.
//
// Acknowledge is all or nothing: any acknowledgement of a record the
// member does not hold fails the partition's whole call with
// INVALID_RECORD_STATE, malformed batches with INVALID_REQUEST (see its
// doc for the cases, taken from Kafka 4.4's SharePartition and KafkaApis).
//
// # Rows
//
// A share-partition is stored in the group coordinator's Pebble, in the
// family 'q' beside groups' own families (see packages groups and
// sharegroups): a head row, and one row per range keyed by its first
// offset under the head's key. Every operation returns Mutations for one
// batch: the head if SPSO, end or the state epoch moved, a range deletion
// of the rows below a new SPSO, and the ranges it split, changed or merged
// (a set, or a delete for a range merged into its neighbour). Load reads the rows back into the
// same state. Keys are big-endian, so Pebble's order is offset order;
// values start with a format byte (1) followed by varints
// (encoding/binary); "str" is a uvarint length and the bytes.
//
//	family  key                                          value
//	------  -------------------------------------------  ---------------------------------------------
//	spart   'q' len(2) group topic-id(16) partition(4)   format 1: state epoch, SPSO, end, init ms
//	srange  spart's key first-offset(8)                  format 1: last offset, state(1: 0 available,
//	                                                     1 acquired, 2 acknowledged, 4 archived),
//	                                                     delivery count; if acquired: member id str,
//	                                                     via broker id, lock deadline ms (absolute,
//	                                                     on the coordinator's clock)
//
// A group's share-partitions share the prefix 'q' len group (GroupSpan),
// a topic's 'q' len group topic-id (TopicSpan), and a share-partition's
// ranges its head key: deleting a group's, a topic's or one partition's
// state (DeleteRows) is one range deletion, and moving SPSO forward is
// DeleteRange(head+0, head+SPSO). The head stores no count of completed
// offsets: Completed derives it from the ranges, which are in memory.
package share
