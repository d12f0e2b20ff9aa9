// Package follow keeps a shard's copy of the topic metadata level with
// the coordinator that owns it (shard 0 of a sharded cluster,
// docs/design/coordinator-shards.md): shard i > 0 keeps a copy of every
// topic of shard 0 to check commits and plan its partitions' tiers with.
// It reads the owner (Owner: *rpc.Client, or a *coordinator.Coordinator)
// and changes the copy only through the calls an admin request would take
// (Copy, the shard's coordinator), so a config that turns the key index
// on starts its rebuild as usual:
//
//	Run: now, at each of the owner's topic notices, every interval
//	  └─▶ Topics: owner.Topics ──▶ Topic for each ──▶ delete the copies
//	                                                   the owner lacks
//	a commit naming a topic or partition the copy lacks
//	  └─▶ TopicID: owner.TopicByID ──▶ Topic (or delete the copy)
//	Topic: create (under the owner's id), grow partitions, set configs
//
// # Locks
//
// A Follower has one lock, a semaphore of one over its follows (Topics
// and TopicID, each reading the owner inside it), so that a listing taken
// before a topic was created cannot delete the copy a later follow made
// of it; a commit waiting behind a follow gives up with its context. It
// is taken before any of the coordinator's: it holds it while it calls
// the copy, whose calls take theirs.
package follow
