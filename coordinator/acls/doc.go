// Package acls keeps the cluster's ACL bindings (coordapi.ACLStore), which
// brokers authorize every request with (package acl): CreateACLs,
// DeleteACLs, DescribeACLs, the change counter brokers poll (ACLVersion)
// and the notices they are told of changes by (SubscribeACLs). The
// bindings are cluster-wide: with the topics, SCRAM users and producer ids
// they are the coordinator state that every shard of a sharded
// coordinator shares, not state per partition.
//
// Every binding is a row of Rows (the batch coordinator's family 'a',
// which prefixes its byte), keyed by the binding itself so that creating
// one twice writes the same key; all are held in memory. The change counter
// is a row of its own (the batch coordinator's meta row "macl-version",
// 8 bytes big-endian), which every change writes in the same durable write
// as its bindings, so that a broker polling ACLVersion sees a new number
// after any change, across restarts too.
//
//	rt(1) pattern(1) name str principal str host str op(1) perm(1)
//	  -> version 1, rt(1), pattern(1), op(1), perm(1), name str, principal str, host str
//
// rt, pattern, op and perm are kmsg's codes; str is a uvarint length and
// the bytes. The format is the one the batch coordinator wrote before this
// package existed.
//
// # Locks
//
// Store.mu serializes changes and guards the bindings; subscribers are
// called after it is released, under none. Store.subs is taken alone.
package acls
