package rpc

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
)

// version is the only message version this build reads and writes.
const version = 1

// queueGroup is the queue group coordinators subscribe in, so that each
// request reaches one of them.
const queueGroup = "floe-coordinator"

// Op names: the last token of a request's subject.
const (
	opCreateTopic       = "create_topic"
	opDeleteTopic       = "delete_topic"
	opDeleteTopicByID   = "delete_topic_by_id"
	opCreatePartitions  = "create_partitions"
	opAlterTopicConfigs = "alter_topic_configs"
	opTopic             = "topic"
	opTopicByID         = "topic_by_id"
	opTopics            = "topics"
	opFindBatches       = "find_batches"
	opFindBatchesMulti  = "find_batches_multi"
	opPartitionState    = "partition_state"
	opListOffset        = "list_offset"
	opDeleteRecords     = "delete_records"
	opInitProducerID    = "init_producer_id"
	opCommitObject      = "commit_object"
	opRegisterBroker    = "register_broker"
	opDeregisterBroker  = "deregister_broker"
	opListBrokers       = "list_brokers"
	opKvLookup          = "kv_lookup"
	opKvLatestOffsets   = "kv_latest_offsets"
	opKvReady           = "kv_ready"
	// opPing answers the serving coordinator's instance id: a client
	// holding a request checks with it that the coordinator it sent the
	// request to is still there.
	opPing = "ping"
	// opKvGet answers a /kv lookup in one round trip (kv_lookup and
	// kv_ready stay, for brokers of earlier builds).
	opKvGet = "kv_get"
	// opFindKeyBatches answers a hierarchical view's fetch from the
	// posting index.
	opFindKeyBatches = "find_key_batches"
	// The tier job ops: brokers claim consolidation jobs, and complete or
	// abandon them.
	opClaimTierJob    = "claim_tier_job"
	opCompleteTierJob = "complete_tier_job"
	opAbandonTierJob  = "abandon_tier_job"
	// The SCRAM user ops: a broker reads a credential to check a SASL
	// exchange; the admin APIs describe and alter them.
	// The transaction ops (txn.go).
	opAddPartitionsToTxn  = "add_partitions_to_txn"
	opAddOffsetsToTxn     = "add_offsets_to_txn"
	opEndTxn              = "end_txn"
	opDescribeTxns        = "describe_transactions"
	opListTxns            = "list_transactions"
	opDescribeProducers   = "describe_producers"
	opUserScramCredential = "user_scram_credential"
	opDescribeUserScram   = "describe_user_scram"
	opAlterUserScram      = "alter_user_scram"
	// The ACL ops (acls.go): brokers create, delete and list ACL bindings
	// and poll the ACL version.
	opCreateACLs   = "create_acls"
	opDeleteACLs   = "delete_acls"
	opDescribeACLs = "describe_acls"
	opACLVersion   = "acl_version"
	// The ops between the shards of a sharded coordinator (shards.go):
	// shard 0's collector asks the other shards what they know of the
	// objects it is about to delete, and has them drop their garbage
	// rows of those it deletes.
	opObjectStates  = "object_states"
	opForgetObjects = "forget_objects"
	// opTxnView answers a producer's transaction view, for the shards
	// that take its transactional batches.
	opTxnView = "txn_view"
	// opClusterInfo answers the cluster's layout (its shard count), which
	// brokers route by.
	opClusterInfo = "cluster_info"
	// The handover ops (shards.go): a partition moving between shards is
	// fenced on the shard it leaves, exported from it a chunk at a time,
	// imported by the shard it joins, and dropped from the first.
	opFencePartition  = "fence_partition"
	opExportPartition = "export_partition"
	opImportPartition = "import_partition"
	opDropPartition   = "drop_partition"
	// opCommitShards has a shard serve by a grown shard count and map
	// version once shard 0 moved the partitions.
	opCommitShards = "commit_shards"
	// The table catalog ops (tables.go): brokers load, swap and list the
	// Iceberg tables' metadata pointers, kept by shard 0.
	opTableLoad       = "table_load"
	opTableSwap       = "table_swap"
	opTableList       = "table_list"
	opTableNamespaces = "table_namespaces"
)

// Reply statuses.
const (
	statusOK    = 0
	statusError = 1
)

// CheckCluster reports whether name can prefix the cluster's subjects: one
// NATS subject token (no dots, wildcards or whitespace).
func CheckCluster(name string) error {
	if name == "" || strings.ContainsAny(name, ".*> \t\r\n") {
		return fmt.Errorf("rpc: cluster name %q is not one NATS subject token", name)
	}
	return nil
}

// ShardCluster returns the name shard of a sharded coordinator serves
// under (docs/design/coordinator-shards.md): cluster itself for shard 0,
// so that a cluster of one shard is named as before shards, and
// "<cluster>_shard<shard>" for the others; its subjects, log stream and
// lease are named from it as a cluster's are.
func ShardCluster(cluster string, shard int) string {
	if shard == 0 {
		return cluster
	}
	return cluster + "_shard" + strconv.Itoa(shard)
}

// Subject returns the request subject of op in cluster.
func Subject(cluster, op string) string { return cluster + ".coord." + op }

// CommitsSubject returns the subject commit notices are published on.
func CommitsSubject(cluster string) string { return cluster + ".commits" }

// TopicsSubject returns the subject topic change notices are published on.
func TopicsSubject(cluster string) string { return cluster + ".topics" }

// encoders recycles message buffers: NATS copies a message when it is
// published, so a buffer is free again once Publish or Request returns.
var encoders = sync.Pool{New: func() any { return &encoder{b: make([]byte, 0, 256)} }}

// maxPooledBuffer keeps rare huge buffers out of the pool.
const maxPooledBuffer = 1 << 20

func getEncoder() *encoder { e := encoders.Get().(*encoder); e.b, e.settled = e.b[:0], false; return e }

func putEncoder(e *encoder) {
	if cap(e.b) <= maxPooledBuffer {
		encoders.Put(e)
	}
}
