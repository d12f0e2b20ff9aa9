// Package rpc serves the coordinator service's API over NATS request/reply:
// the batch coordinator's (package coordinator) and the group
// coordinator's (package groups). It is also the brokers' client for both.
// The coordinator service (package coordinator/service, in cmd/coordinator
// or embedded in a broker) runs ServeWith; brokers call it through a Client,
// which implements coordapi.Coordinator as *coordinator.Coordinator does,
// and its GroupClient, which implements coordapi.GroupCoordinator.
//
// # Subjects
//
//	<cluster>.coord.<op>   request/reply; the coordinator subscribes in the
//	                       queue group "floe-coordinator"
//	<cluster>.commits      commit notices, published by the coordinator
//	<cluster>.topics       topic change notices (created, deleted,
//	                       partitions added, configs altered)
//
// The ops are create_topic, delete_topic, delete_topic_by_id,
// create_partitions, alter_topic_configs, topic, topic_by_id, topics,
// find_batches, find_batches_multi, partition_state, list_offset,
// delete_records,
// init_producer_id, commit_object, kv_lookup, kv_ready, register_broker,
// deregister_broker, list_brokers, ping (the server's instance id, new
// on every start) and kv_get (a /kv lookup in one round trip; the client
// falls back to kv_ready, kv_lookup and find_batches against a coordinator
// without it); find_key_batches (a hierarchical view's batches from the
// posting index, see messages.go; a broker falls back to reading the whole
// partition against a coordinator without it); claim_tier_job, complete_tier_job and abandon_tier_job
// (consolidation jobs, see messages.go); object_states, forget_objects,
// txn_view, and the handover's fence_partition, export_partition,
// import_partition, drop_partition and commit_shards (between a sharded
// coordinator's shards, shards.go); table_load,
// table_swap, table_list and table_namespaces (the Iceberg tables'
// metadata pointers, Client.TableCatalog, tables.go); and, when the server is given a group
// coordinator (ServerOptions.Groups), the group ops join_group, sync_group,
// heartbeat, leave_group, offset_commit, offset_fetch, offset_delete,
// txn_offset_commit, describe_groups, list_groups, delete_groups, consumer_group_heartbeat,
// consumer_group_describe, share_group_heartbeat, share_group_describe,
// describe_group_configs and alter_group_configs, and the share ops
// share_acquire (one ShareFetch or ShareAcknowledge, held up to its max
// wait like join_group) and share_release (see share.go).
//
// # Encoding
//
// Every message is binary (encoding/binary), with a version byte first.
// Numbers are varints: signed ones (int16, int32, int64) zigzag-encoded,
// counts and lengths unsigned. A str or bytes is a uvarint length and the
// bytes; an optional str a presence byte (0 or 1) and the str when present;
// a bool one byte (0 or 1); a topic id its 16 raw bytes; a map of strings a
// count and the (key, value) pairs sorted by key.
//
//	request   +---------+-------------------+----------------------------+
//	          | version | timeout ms        | body (per op)              |
//	          | 1 byte  | uvarint           |                            |
//	          +---------+-------------------+----------------------------+
//	reply     +---------+-------------------+----------------------------+
//	          | version | status            | body (per op), status 0    |
//	          | 1 byte  | 0 ok, 1 error     | or error, status 1         |
//	          +---------+-------------------+----------------------------+
//	error     Kafka error code (varint; 0: not a Kafka-level failure),
//	          flags (1 byte; bit 0: a coordapi.KafkaError, with a Kafka
//	          error message), Kafka error message (str), error text (str)
//	find_batches_multi (see findmulti.go)
//	  request n topic ids × (id(16)), n requests × (topic index,
//	            partition, offset, max bytes)
//	  reply   n objects × (key (str), size), n results × (error code,
//	            log start offset, high watermark, n batches × (object
//	            index, byte offset, byte length, base offset, last offset
//	            - base offset, max timestamp, flags))
//	notice    version, n topics × (topic id(16), n partitions × (
//	            partition, high watermark, log start offset,
//	            n batches × (object key (str), object size, byte offset,
//	              byte length, base offset, last offset - base offset,
//	              max timestamp, log append time (bool))))
//	topic     version, n × (topic id(16), name (str))
//	notice
//
// A group op's body is the Kafka request version (int16), the Kafka
// client's id and host (str, str), for offset_commit and txn_offset_commit
// the topics' ids (a count and 16 bytes each: the broker resolved them; the
// Kafka body carries them only from OffsetCommit v10 and TxnOffsetCommit
// v6, where they must match the body's), and last the Kafka request body as kmsg encodes it
// at that version, to the end of the message (a later envelope field goes
// before it). Its reply body is the Kafka response body at the same
// version. JoinGroup and SyncGroup are held in a rebalance: they may ask
// for up to 31 minutes and do not count against the server's concurrency
// bound, so that a mass rebalance cannot stall commits. While one is held,
// the client pings every 2 seconds; two pings unanswered, or answered by
// another instance (the coordinator restarted and lost the request), end
// it at once with ErrUnavailable rather than at its timeout.
//
// The timeout is what is left of the caller's deadline when it sent the
// request: the coordinator gives up on a request once it passes, so that a
// request queued too long is not executed after its caller stopped waiting.
// Each op's body lays its fields out in order (see messages.go,
// commit.go and findmulti.go). Decoders bound every count by the bytes left, so that a
// forged message cannot make them allocate, and ignore trailing bytes, so
// that a later version may append fields. A message of another version is
// answered with UNSUPPORTED_VERSION.
//
// # Errors
//
// A Kafka-level failure travels as its code and message: the client returns
// a *RemoteError that unwraps to the same *kerr.Error (and
// *coordapi.KafkaError) the coordinator returned, so errors.Is and
// errors.As work as they do in-process. Any other failure of the
// coordinator unwraps to ErrInternal; a request that got no answer (no
// coordinator, deadline passed, NATS down) to ErrUnavailable. Both also
// unwrap to kerr.KafkaStorageError, a retriable code.
//
// # Size
//
// A NATS message is at most the server's max_payload (1 MiB by default;
// embedded servers use 8 MiB). The client splits a commit too large for one
// message into consecutive commits of the same object (the coordinator
// adds the batches of a repeated object key to it), the server trims a
// find_batches answer to what fits (fetches return fewer batches), and
// topics are listed in pages. A find_batches_multi reply answers the first
// requests whose results fit, the last of them trimmed to fewer batches
// (never to none); the client asks again for the rest, and splits
// requests too many for one message.
//
// # Versions of the API
//
// An op is added, never changed: a new call gets a new op name, and a
// coordinator that predates it has no subscriber for it, so a request for
// it fails at once with no responders. The client turns that into an
// error wrapping errors.ErrUnsupported, and callers use the older ops
// (brokers fall back from find_batches_multi to find_batches per
// partition); old brokers keep using the old ops against new
// coordinators.
package rpc
