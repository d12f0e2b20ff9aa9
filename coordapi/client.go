package coordapi

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Coordinator is the batch coordinator's API as its callers see it. The
// in-process *coordinator.Coordinator implements it, and so does the NATS
// client (*rpc.Client), so a caller never knows which one it has.
// Kafka-level failures are errors wrapping a *kerr.Error (often a
// *KafkaError with Kafka's message); other errors mean the coordinator did
// not answer.
type Coordinator interface {
	CreateTopic(ctx context.Context, req CreateTopicRequest) (Topic, error)
	DeleteTopic(ctx context.Context, name string) (TopicID, error)
	DeleteTopicByID(ctx context.Context, id TopicID) (string, error)
	CreatePartitions(ctx context.Context, name string, count int32, validateOnly bool) error
	AlterTopicConfigs(ctx context.Context, name string, ops []ConfigOp, incremental, validateOnly bool) error
	Topic(ctx context.Context, name string) (Topic, error)
	TopicByID(ctx context.Context, id TopicID) (Topic, error)
	Topics(ctx context.Context) ([]Topic, error)

	// CommitObject assigns offsets to every batch of one uploaded object
	// in one durable write.
	CommitObject(ctx context.Context, req *CommitRequest) (*CommitResponse, error)
	FindBatches(ctx context.Context, req FindBatchesRequest) (FindBatchesResponse, error)
	// FindBatchesMulti answers many FindBatches requests in one call: one
	// result per request, in request order, each as FindBatches would
	// answer it, a partition's Kafka-level failure in its result's
	// ErrorCode rather than in the error. An error means no partition was
	// answered: the coordinator is unreachable, or it is too old to know
	// the call (the error wraps errors.ErrUnsupported; ask with
	// FindBatches, one partition at a time).
	FindBatchesMulti(ctx context.Context, reqs []FindBatchesRequest) ([]FindBatchesResult, error)
	PartitionState(ctx context.Context, id TopicID, partition int32) (PartitionState, error)
	ListOffset(ctx context.Context, id TopicID, partition int32, timestamp int64) (offset, ts int64, err error)
	DeleteRecords(ctx context.Context, id TopicID, partition int32, offset int64) (int64, error)
	InitProducerID(ctx context.Context, req InitProducerIDRequest) (InitProducerIDResponse, error)
	// The transaction coordinator (txn.go): per-partition results carry
	// Kafka's error codes; a request-level failure is the error.
	AddPartitionsToTxn(ctx context.Context, req AddPartitionsRequest) ([]int16, error)
	AddOffsetsToTxn(ctx context.Context, p TxnProducer, group string) error
	EndTxn(ctx context.Context, req EndTxnRequest) error
	DescribeTransactions(ctx context.Context, ids []string) ([]TxnDescription, error)
	ListTransactions(ctx context.Context, states []TxnState, producerIDs []int64) ([]TxnListing, error)
	DescribeProducers(ctx context.Context, id TopicID, partition int32) ([]ProducerDescription, error)
	// Subscribe calls fn with every commit notice until cancel is called.
	Subscribe(fn func([]CommitNotice)) (cancel func())
	// SubscribeTopics calls fn with a notice of every topic created,
	// deleted or changed, until cancel is called. Notices can be lost
	// (a NATS disconnect): callers still bound how long they trust what
	// they cached.
	SubscribeTopics(fn func([]TopicNotice)) (cancel func())

	KvLookup(ctx context.Context, id TopicID, partition int32, key []byte) (offset, hwm int64, found bool, err error)
	KvReady(ctx context.Context, id TopicID) (bool, error)
	// KvGet is what a GET /kv lookup needs in one call: the index's
	// readiness, the key's offset, the partition's offsets and the
	// coordinates of the batch holding the record. KvLookup and KvReady
	// stay for callers that want one of them.
	KvGet(ctx context.Context, req KvGetRequest) (KvGetResult, error)
	// KvLatestOffsets returns the key index's latest offset of each key
	// in one partition, -1 for a key it has no entry for (never written,
	// or whose latest record is a tombstone): what a compaction job asks
	// instead of building a key map. It fails with KafkaStorageError
	// while the index is not ready.
	KvLatestOffsets(ctx context.Context, req KvOffsetsRequest) ([]int64, error)
	// FindKeyBatches answers a hierarchical view's fetch from the
	// topic's posting index: the batches at or after an offset that hold
	// a key, resolved to where they live now, and the partition's
	// offsets. A coordinator too old to know it fails with an error
	// wrapping errors.ErrUnsupported (read the whole partition instead).
	FindKeyBatches(ctx context.Context, req FindKeyBatchesRequest) (FindKeyBatchesResponse, error)

	// ClaimTierJob assigns the calling broker the next consolidation job,
	// ok false when none is due. CompleteTierJob reports the segment a
	// job wrote; the coordinator swaps the job's batches to it in one
	// durable write, or refuses with STALE_BROKER_EPOCH when the job
	// expired, was superseded, or its range changed (the caller deletes
	// its segment). AbandonTierJob gives a job back at once, so that it is
	// assigned again without waiting for its lease.
	ClaimTierJob(ctx context.Context, req ClaimTierJobRequest) (job TierJob, ok bool, err error)
	CompleteTierJob(ctx context.Context, req CompleteTierJobRequest) error
	AbandonTierJob(ctx context.Context, jobID uint64, reason string) error

	// UserScramCredential returns a user's stored SCRAM credential for
	// one mechanism (ok false: none), what a SASL exchange is checked
	// against. DescribeUserScramCredentials and AlterUserScramCredentials
	// are Kafka's admin APIs over the same users: results per user, with
	// Kafka's error codes in them.
	UserScramCredential(ctx context.Context, user string, m ScramMechanism) (cred ScramCredential, ok bool, err error)
	DescribeUserScramCredentials(ctx context.Context, users []string) ([]ScramUserInfo, error)
	AlterUserScramCredentials(ctx context.Context, dels []ScramDeletion, ups []ScramUpsertion) ([]ScramUserResult, error)
	// ACLStore holds the cluster's ACL bindings (acl.go).
	ACLStore

	// RegisterBroker registers a broker or renews its registration (the
	// brokers' heartbeat); DeregisterBroker removes it at once.
	RegisterBroker(ctx context.Context, info BrokerInfo) error
	DeregisterBroker(ctx context.Context, info BrokerInfo) error
	// ListBrokers returns the live brokers of the cluster (the registry
	// brokers heartbeat into), sorted by node id.
	ListBrokers(ctx context.Context) ([]BrokerInfo, error)
}

// ClientInfo identifies the Kafka connection a group request came on: its
// client id and its host as Kafka shows it in DescribeGroups
// ("/127.0.0.1").
type ClientInfo struct {
	ID   string
	Host string
}

// GroupCoordinator is the group coordinator's API: consumer groups (classic
// and KIP-848), committed offsets and transactional offsets
// (TxnOffsetCommit; the transaction coordinator completes them in its own
// process, not through this API). The cluster's is reached over NATS
// (*rpc.GroupClient); groups.Direct serves one in this process. Requests
// and responses are Kafka's own messages at the client's version.
// Kafka-level failures are error codes in the responses; an error means the
// coordinator did not answer (it is down or unreachable, or ctx ended), and
// a broker answers COORDINATOR_NOT_AVAILABLE. JoinGroup and SyncGroup block
// until the rebalance answers them.
type GroupCoordinator interface {
	JoinGroup(ctx context.Context, c ClientInfo, req *kmsg.JoinGroupRequest) (*kmsg.JoinGroupResponse, error)
	SyncGroup(ctx context.Context, req *kmsg.SyncGroupRequest) (*kmsg.SyncGroupResponse, error)
	Heartbeat(ctx context.Context, req *kmsg.HeartbeatRequest) (*kmsg.HeartbeatResponse, error)
	LeaveGroup(ctx context.Context, req *kmsg.LeaveGroupRequest) (*kmsg.LeaveGroupResponse, error)
	OffsetCommit(ctx context.Context, req *kmsg.OffsetCommitRequest) (*kmsg.OffsetCommitResponse, error)
	OffsetFetch(ctx context.Context, req *kmsg.OffsetFetchRequest) (*kmsg.OffsetFetchResponse, error)
	OffsetDelete(ctx context.Context, req *kmsg.OffsetDeleteRequest) (*kmsg.OffsetDeleteResponse, error)
	// TxnOffsetCommit writes a transactional producer's offsets as
	// pending offsets of the group, made committed offsets or dropped when
	// the transaction ends. Below v6 each topic's TopicID (which the body
	// does not carry) is the id the broker resolved, stored with them.
	TxnOffsetCommit(ctx context.Context, req *kmsg.TxnOffsetCommitRequest) (*kmsg.TxnOffsetCommitResponse, error)
	DescribeGroups(ctx context.Context, req *kmsg.DescribeGroupsRequest) (*kmsg.DescribeGroupsResponse, error)
	ListGroups(ctx context.Context, req *kmsg.ListGroupsRequest) (*kmsg.ListGroupsResponse, error)
	DeleteGroups(ctx context.Context, req *kmsg.DeleteGroupsRequest) (*kmsg.DeleteGroupsResponse, error)
	ConsumerGroupHeartbeat(ctx context.Context, c ClientInfo, req *kmsg.ConsumerGroupHeartbeatRequest) (*kmsg.ConsumerGroupHeartbeatResponse, error)
	ConsumerGroupDescribe(ctx context.Context, req *kmsg.ConsumerGroupDescribeRequest) (*kmsg.ConsumerGroupDescribeResponse, error)
	// ShareGroupHeartbeat and ShareGroupDescribe serve KIP-932 share
	// groups' membership (v1).
	ShareGroupHeartbeat(ctx context.Context, c ClientInfo, req *kmsg.ShareGroupHeartbeatRequest) (*kmsg.ShareGroupHeartbeatResponse, error)
	ShareGroupDescribe(ctx context.Context, req *kmsg.ShareGroupDescribeRequest) (*kmsg.ShareGroupDescribeResponse, error)
	// DescribeGroupConfigs and AlterGroupConfigs serve the group configs
	// (ConfigResource type GROUP): req holds only GROUP resources, the
	// broker's share of a DescribeConfigs or IncrementalAlterConfigs.
	DescribeGroupConfigs(ctx context.Context, req *kmsg.DescribeConfigsRequest) (*kmsg.DescribeConfigsResponse, error)
	AlterGroupConfigs(ctx context.Context, req *kmsg.IncrementalAlterConfigsRequest) (*kmsg.IncrementalAlterConfigsResponse, error)
	// DescribeShareGroupOffsets, AlterShareGroupOffsets and
	// DeleteShareGroupOffsets serve the share groups' offsets admin APIs
	// (KIP-932): start offsets and lag; an Empty group's start offsets
	// moved or its share state of a topic dropped.
	DescribeShareGroupOffsets(ctx context.Context, req *kmsg.DescribeShareGroupOffsetsRequest) (*kmsg.DescribeShareGroupOffsetsResponse, error)
	AlterShareGroupOffsets(ctx context.Context, req *kmsg.AlterShareGroupOffsetsRequest) (*kmsg.AlterShareGroupOffsetsResponse, error)
	DeleteShareGroupOffsets(ctx context.Context, req *kmsg.DeleteShareGroupOffsetsRequest) (*kmsg.DeleteShareGroupOffsetsResponse, error)
	// ShareAcquire serves one ShareFetch or ShareAcknowledge of a share
	// group member: its acknowledgements, then records acquired under a
	// lock with their batch coordinates, waiting up to req.MaxWaitMs when
	// there is nothing to acquire (share.go).
	ShareAcquire(ctx context.Context, req ShareAcquireRequest) (ShareAcquireResponse, error)
	// ShareRelease makes the records a member acquired through one broker
	// available again.
	ShareRelease(ctx context.Context, req ShareReleaseRequest) error
}
