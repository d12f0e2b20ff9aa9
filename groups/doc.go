// Package groups is floe's group coordinator, a peer of the batch
// coordinator (package coordinator) in the coordinator service, with its own
// Pebble: classic consumer groups (JoinGroup, SyncGroup,
// Heartbeat, LeaveGroup), KIP-848 consumer groups (ConsumerGroupHeartbeat,
// ConsumerGroupDescribe), the host of KIP-932 share groups (package
// sharegroups: ShareGroupHeartbeat, ShareGroupDescribe, the acquisitions
// of ShareFetch and ShareAcknowledge, the share-group offsets admin APIs;
// share-partitions in package share), group configs (DescribeConfigs
// and IncrementalAlterConfigs of GROUP resources), committed offsets
// (OffsetCommit, OffsetFetch, OffsetDelete), transactional offsets (TxnOffsetCommit, completed by the
// transaction coordinator with CompleteTxnOffsets) and group
// administration (DescribeGroups, ListGroups, DeleteGroups), answering
// with the error codes Apache Kafka returns.
//
// The methods take and return kmsg requests and responses, so the broker's
// handlers stay thin and the calls travel over NATS as the Kafka bodies
// themselves: the coordinator service (coordinator/service, in
// cmd/coordinator or embedded in a broker) opens Groups beside the batch
// coordinator and serves it with rpc.ServeWith; every broker reaches it
// through rpc.GroupClient, which implements coordapi.GroupCoordinator (as
// Direct does in-process). Its only use of the batch coordinator is the
// topic list (TopicLister), through coordapi's types. There is one group
// state per cluster, so any broker serves any group, and committed offsets
// outlive every broker.
//
// # Classic groups
//
// A group moves through Kafka's states:
//
//	                 a member joins, leaves or expires
//	        ┌───────────────────────────┬──────────────────────────┐
//	        ▼                           │                          │
//	Empty ─────▶ PreparingRebalance ─────────▶ CompletingRebalance ─────▶ Stable
//	  ▲   join          │         all rejoined or         │      leader's
//	  │                 │         rebalance timeout       │      SyncGroup
//	  └─────────────────┘                                 │
//	    nobody rejoined                                   └─ REBALANCE_IN_PROGRESS
//	                                                         to waiting SyncGroups
//
// DeleteGroups removes an Empty group (Dead), with its offsets.
//
// JoinGroup responses are held while the group prepares a rebalance: until
// every known member rejoined or the longest rebalance timeout passed
// (dynamic members that did not rejoin are then dropped). The leader's
// response carries every member's metadata; followers' SyncGroups wait for
// the leader's, however long: a new rebalance (with REBALANCE_IN_PROGRESS)
// is the only other way out. Members that got a JoinGroup response but send
// no SyncGroup within the rebalance timeout are dropped. Sessions expire on
// the coordinator's own clock (Options.Now) from a loop that sleeps until
// the next deadline. Static members (group.instance.id, KIP-345) that join
// again with a new member id fence the old one and, in a Stable group whose
// selected protocol stays the same, take over its assignment without a
// rebalance.
//
// # KIP-848 consumer groups
//
// A group id is either classic or a KIP-848 consumer group; an empty group
// of one kind becomes the other when a member of the other kind joins, and
// keeps its offsets. The coordinator assigns the partitions itself, with
// the server assignor the members prefer: "uniform" (sticky and balanced)
// or "range". Every membership, subscription or subscribed-topic change
// (new partitions, a new topic matching a regex; topic metadata comes from
// Options.Topics, at most topicCacheTTL old) bumps the group epoch and
// recomputes the target assignment. Members move towards their target as
// Kafka's CurrentAssignmentBuilder does: partitions leaving a member are
// revoked first (it keeps its epoch until its heartbeat no longer reports
// them), and a partition goes to its new member only once the old one
// released it. A member that does not revoke within its rebalance timeout,
// or misses its session (Options.ConsumerSessionTimeout), is fenced. A
// static member that leaves with epoch -2 keeps its partitions reserved
// until it is back under a new member id, which takes them over without a
// new group epoch. Offset commits are fenced as Kafka 4.3 does (KIP-1251):
// at the member's epoch, or at an older one for the partitions it has held
// since.
//
// # Share groups
//
// A share group (KIP-932, docs/design/share-groups.md) is a third kind of
// group id: a classic or KIP-848 group's id is GROUP_ID_NOT_FOUND to
// ShareGroupHeartbeat, a share group's INCONSISTENT_GROUP_PROTOCOL to
// JoinGroup and GROUP_ID_NOT_FOUND to ConsumerGroupHeartbeat and
// OffsetCommit, as in Kafka. Package sharegroups serves share groups (see
// its doc): Groups forwards the share calls to it and hosts it
// (share.go, sharegroups.Host): a share group's state lives in its group's
// entry (group.mu.share) under group.mu, its sessions expire on this
// package's scheduler, its records are written to this Pebble with the
// group record, and its configs are among the group configs. The group
// is Empty or Stable, and stays (with its share-partitions) until
// DeleteGroups, which drops its share-partitions too.
//
// Group configs (group_configs.go) are stored per group id, before the
// group exists too: share.auto.offset.reset, share.isolation.level
// (read_committed by default, unlike Kafka), share.record.lock.duration.ms
// and share.delivery.count.limit, checked as Kafka's GroupConfig.
//
// # Transactional offsets
//
// TxnOffsetCommit (KIP-98, KIP-447) writes a producer's offsets as pending
// offsets of (group, producer id): OffsetFetch does not show them, and
// with RequireStable answers their partitions UNSTABLE_OFFSET_COMMIT (the
// client retries until the transaction ended). A later TxnOffsetCommit of
// the producer replaces its pending offset of the same partition. When the
// transaction ends, the transaction coordinator (in the same process)
// calls CompleteTxnOffsets once for each of its groups: a commit turns the
// producer's pending offsets into committed offsets, with the metadata,
// leader epoch and commit time of their TxnOffsetCommit; an abort drops
// them. Every offset write takes the next seq (the order Kafka reads from
// its offsets log): a committed offset written after the TxnOffsetCommit
// (by OffsetCommit, or another producer's transaction) is newer and stays.
// OffsetDelete, DeleteGroups and a deleted topic drop pending offsets too;
// the retention pass expires no offset of a partition with pending offsets
// and keeps a group that has any. Options.VerifyTxn lets the transaction
// coordinator check each TxnOffsetCommit (see TxnVerifier).
//
// # Durability
//
// Committed offsets are written to Pebble with pebble.Sync before
// OffsetCommit answers; pending offsets before TxnOffsetCommit answers,
// and CompleteTxnOffsets writes the committed offsets and deletes the
// pending ones in one synced batch before it returns. Each generation change also writes the group's
// record (protocol type, generation, and when it became Empty), so that
// after a restart every group that has offsets is listed and described,
// and its offsets expire on schedule. A classic group that becomes Stable
// (the leader's SyncGroup, or a static member's replacement) also writes
// its members (ids, instance ids, clients, protocols, timeouts and
// assignments) before SyncGroup answers: after a restart it is Stable again
// at that generation, its members' heartbeats and commits are accepted,
// and each member's session starts afresh, as Kafka reloads a group from
// __consumer_offsets. A classic group restarted after a join phase whose
// generation was never synced comes back Empty, and its members rejoin.
//
// A KIP-848 group is written down whole, as Kafka's coordinator writes its
// member metadata, target assignment and current assignment records: the
// group epoch (in the group record), its assignment epoch, assignor and
// the digest of the subscribed topics' metadata, and each member (ids,
// client, rack, epochs, reconciliation state, rebalance timeout, assignor,
// subscription, target, assigned and revoking partitions and the epochs
// they were assigned at). After each operation the members it touched are
// encoded again and those whose bytes changed are written, with the group
// fields, in one batch with pebble.Sync before the heartbeat answers (a
// failed write answers COORDINATOR_NOT_AVAILABLE); a steady heartbeat
// writes nothing, and members that left or were fenced are deleted. After
// a restart the members heartbeat and commit at their epochs and keep
// their partitions; sessions, and the rebalance timeout of a member still
// revoking, start afresh, and a topic that changed meanwhile bumps the
// epoch at the first heartbeat. What is derived (partition owners, static
// members, compiled regexes) is rebuilt at Open.
//
// A share group is written down as a KIP-848 group is (package
// sharegroups: the group record, type 2, its 'h' keys and its
// share-partitions' 'q' rows, in one batch through the log before the
// heartbeat answers); Open loads them (sharegroups.Load, Restore) and
// fails on a share-partition whose rows do not tile.
//
// # Key families
//
// Every key starts with a one-byte family tag; lengths are big-endian
// uint16. Values start with a format byte (1, or the layout's version
// where a layout changed) followed by varints (encoding/binary); "str" is
// a uvarint length and the bytes.
//
//	family  key                                                 value
//	------  --------------------------------------------------  ------------------------------------------
//	meta    'm' "format"                                        8-byte big-endian format version (1)
//	group   'g' group                                           protocol type str, generation (group epoch
//	                                                            of a KIP-848 group), empty-since ms (0: not
//	                                                            Empty when written), type(1: 0 classic,
//	                                                            1 KIP-848 consumer group, 2 share group)
//	offset  'o' len(2) group len(2) topic partition(4)          format 2: offset, leader epoch, commit ms,
//	                                                            metadata str, topic id(16; zero: unknown),
//	                                                            seq (uvarint); format 1: the same without
//	                                                            seq (read as seq 0)
//	pending 'p' len(2) group producer id(8) len(2) topic        a pending transactional offset: offset,
//	        partition(4)                                        leader epoch, commit ms, metadata str,
//	                                                            topic id(16), seq (uvarint), producer epoch
//	stable  's' group                                           generation, protocol str, leader str,
//	                                                            n members × (member id str, instance id
//	                                                            (presence byte, str), client id str,
//	                                                            client host str, n × (protocol name str,
//	                                                            metadata str), session ms, rebalance ms,
//	                                                            assignment str)
//	cgroup  'c' len(2) group                                    KIP-848 group state: assignment epoch,
//	                                                            assignor str, metadata digest str
//	                                                            (SHA-256; "": no subscribed topic)
//	member  'c' len(2) group member id                          KIP-848 member: instance id (presence
//	                                                            byte, str), rack id (same), client id
//	                                                            str, client host str, epoch, previous
//	                                                            epoch, state byte (0 stable, 1 revoking,
//	                                                            2 waiting for partitions), rebalance ms,
//	                                                            assignor str, n × topic str, regex str,
//	                                                            target, assigned, revoking (each n ×
//	                                                            (topic id(16), n × partition)), n ×
//	                                                            (topic id(16), n × (partition, epoch
//	                                                            assigned at)))
//
//	sgroup  'h' len(2) group                                    share group state, and its members: see
//	smember 'h' len(2) group member id                          package sharegroups
//	spart   'q' len(2) group topic-id(16) partition(4)          a share-partition's head, and its ranges
//	srange  spart's key first-offset(8)                         under it: see package share
//	gconfig 'f' group                                           group configs: n × (name str, value str)
//
// A member record's presence-byte strings, topic list and partition sets
// are written by package members, as a share group member's are (its doc
// draws their bytes); the record's format byte and field order are this
// package's.
//
// A stable record is used only when its generation is the group record's:
// the join phase of the next generation deletes it in the same batch that
// writes the new generation.
//
// A group's offsets share the prefix 'o' len group, its pending offsets
// 'p' len group (one producer's 'p' len group producer id), and its
// KIP-848 keys the prefix 'c' len group (member ids are never empty, so
// the cgroup key is the prefix itself): deleting a group, completing a
// producer's transaction, or turning an empty KIP-848 group classic, is a
// range deletion. The seq counter is not stored: Open resumes it from the
// highest seq of the offsets it loads (only the order of existing offsets
// matters). 'c' keys of a group whose record is
// not a KIP-848 group's (left by a failed write) are dropped at Open. An
// offset remembers its topic's id: once the topic was deleted and created
// again (a new id), OffsetFetch no longer returns the old topic's offsets,
// as Kafka, which deletes them with the topic.
//
// # Locks
//
// Locks are taken in this order, never the reverse:
//
//	Groups.closeMu (read: every call while it uses the state; write: Close)
//	  group.mu (one group's state, a share group's included)
//	    topicCache.mu (the topic snapshot: under group.mu only when a
//	    share group resolves a view; mostly taken before, alone)
//	    Options.VerifyTxn (the transaction coordinator's locks)
//	    Groups.mu (the group map)
//	    scheduler.mu (the deadline heap)
//	    Groups.cfg.mu (the group configs)
//	    package sharegroups' own (its record lock heap, held acquisitions,
//	    view cache): see its doc
//
// A call looks a group up under Groups.mu, releases it, then locks the
// group; a group found dead (deleted meanwhile) is looked up again. No lock
// is held while a JoinGroup or SyncGroup waits for its answer.
package groups
