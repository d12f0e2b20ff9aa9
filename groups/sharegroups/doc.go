// Package sharegroups is floe's share group coordinator (KIP-932,
// docs/design/share-groups.md): share groups' membership and assignment
// (ShareGroupHeartbeat, ShareGroupDescribe), the acquisitions of
// ShareFetch and ShareAcknowledge on their share-partitions (ShareAcquire,
// ShareRelease; package share is one share-partition's state machine),
// the share-group offsets admin APIs (Describe, Alter and
// DeleteShareGroupOffsets) and their metrics, answering with the error
// codes Apache Kafka returns. As Kafka keeps its share coordinator apart
// from its group coordinator, floe keeps it apart from package groups, but
// inside it: a share group is a third kind of group id, so package groups
// is its Host (the group ids and their mutexes, the topic snapshot, the
// group configs, the deadline loop, the Pebble it writes to) and
// groups.Groups forwards the share calls to a Coordinator.
//
//	groups.Groups ──ShareGroupHeartbeat, ShareAcquire, ...──▶ Coordinator
//	      ▲                                                       │
//	      └──────── Host: LockGroup (Entry), Topics, Config, ──────┘
//	                NewBatch, GroupRecord, WakeAt, Wake
//
// A share group's state (Group) lives in its Entry and is guarded by the
// Entry's mutex, with the rest of the group: whether a group id is a share
// group and what the share group holds change together.
//
// # Membership
//
// Members join with epoch 0 and their own member id, leave with -1, and
// are removed after Options.SessionTimeout without a heartbeat (Expire,
// from the Host's deadline loop, at Group.NextDeadline); at most
// Options.MaxGroupSize join. The simple assignor (assign.go) spreads the
// subscribed partitions: each partition to one member when members are
// fewer, else each member one partition and each partition ⌊M/P⌋ or
// ⌈M/P⌉ members, keeping what members had where the balance allows.
// There is no revocation (many members may read one partition): every
// membership, subscription or topic change bumps the group epoch, and a
// member takes its target, and the epoch, at its next heartbeat. The
// group is Empty or Stable, and stays (with its share-partitions) until
// DeleteGroups, which drops its share-partitions too (DeleteGroup).
//
// When a partition first enters the target assignment, the heartbeat
// starts its share-partition (package share) at the offset the group
// config share.auto.offset.reset names (Config.Reset): the high watermark
// (latest, the default), the log start (earliest), or the first offset at
// or after now minus a duration (by_duration:<ISO-8601>), read from
// Options.Partitions; its head goes in the heartbeat's write. A member
// removed has its acquired records released in the write that removes it.
//
// # Acquisitions
//
// ShareAcquire (fetch.go) serves each ShareFetch and ShareAcknowledge in
// one call, under the group's mutex: the acknowledgements, all or nothing
// per partition, then records acquired from the first available offset up
// to the high watermark (the last stable offset under
// share.isolation.level read_committed), their batches found in-process
// (Options.Partitions' FindBatches), then the call's rows in one batch
// through the Host's log, started under the mutex (so the log keeps the
// group's order) and waited for after it, before it answers (so the
// group's calls sync their writes together). With nothing to acquire it
// waits, without the mutex, for a commit notice (Options.Partitions'
// Subscribe, taken once a share group exists: SubscribeCommits), a
// release or an expiry, up to its max wait. Record locks expire on their
// own heap (sched.go; ExpireLocks, from the Host's deadline loop), one
// entry per share-partition at its earliest lock deadline, re-armed at
// Restore from the stored ones. ShareRelease gives back what a member took
// through one broker, when its share session there ends. A share group
// on a hierarchical view reads its base topic's records (views.go).
//
// # Durability
//
// A share group is written down as package groups writes a KIP-848 group:
// the group record (the Host's family 'g', type 2, its group epoch), its
// state key and one key per member in the 'h' family, compared with the
// last write and written with the share-partition rows ('q', package
// share's format) that changed, in one batch through the Host's log
// before the heartbeat answers. After a restart (Load, then Restore)
// members heartbeat at their epochs, sessions start afresh, and the
// share-partitions are loaded with their acquisitions (Restore fails on a
// share-partition whose rows do not tile).
//
// # Key families
//
// In the Host's Pebble, beside package groups' families (see its doc);
// lengths are big-endian uint16, values start with a format byte (1)
// followed by varints (encoding/binary); "str" is a uvarint length and the
// bytes. A member record's rack id (presence byte, str), topics and
// partition sets are written by package members, as a KIP-848 member's
// are (its doc draws their bytes); the record's format byte and field
// order are this package's.
//
//	family  key                                         value
//	------  ------------------------------------------  ------------------------------------------
//	sgroup  'h' len(2) group                            share group state: assignment epoch,
//	                                                    metadata digest str
//	smember 'h' len(2) group member id                  share group member: rack id (presence byte,
//	                                                    str), client id str, client host str,
//	                                                    epoch, previous epoch, n × topic str,
//	                                                    target, assigned (each n × (topic id(16),
//	                                                    n × partition))
//	spart   'q' len(2) group topic-id(16) partition(4)  a share-partition's head, and its ranges
//	srange  spart's key first-offset(8)                 under it: see package share
//
// A group's 'h' keys share the prefix 'h' len group (member ids are never
// empty, so the sgroup key is the prefix itself), and its share-partitions
// the prefix 'q' len group: deleting a share group is two range deletions.
//
// # Locks
//
// Locks are taken in this order, never the reverse:
//
//	Host.Enter (package groups' closeMu, read) for every call
//	  Coordinator.commits (the commit subscription; before any group)
//	  the Entry's mutex (package groups' group.mu: one group's state)
//	    the Host's locks, through its methods (group map, scheduler,
//	    group configs; its topic cache when a view is resolved)
//	    lockScheduler.mu (the record lock heap)
//	    waiters.mu (the held acquisitions)
//	    viewCache.mu (the views read)
//
// Each of the last three is held alone, for a map or heap operation. A
// held ShareAcquire waits with no lock held; its write is waited for after
// the group's mutex is released.
package sharegroups
