package broker

import (
	"context"
	"errors"
	"hash/fnv"
	"net"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-io/floe/broker/fetchread"
	"github.com/floe-io/floe/coordapi"
)

// Metadata: v0-v12. v9+ flexible; v10+ topic ids; v12 null topic names.
// Every live broker leads some partitions (a stable hash), but any broker
// accepts any partition: the leader is only where clients send by default.
// With ACLs, a topic needs DESCRIBE: left out of an all-topics answer, else
// TOPIC_AUTHORIZATION_FAILED; auto-creation needs CLUSTER or TOPIC CREATE.
func init() { register(kmsg.Metadata, 0, 12, (*Broker).handleMetadata) }

// leaderEpoch is the fixed leader epoch of every partition, the one the
// read path patches into every batch it answers.
const leaderEpoch = fetchread.LeaderEpoch

// brokerInfo is one live broker as Metadata describes it.
type brokerInfo struct {
	nodeID int32
	host   string
	port   int32
	rack   *string
}

// self describes this broker as its options say.
func (b *Broker) self() brokerInfo {
	host, portStr, err := net.SplitHostPort(b.opts.AdvertisedAddr)
	if err != nil {
		host, portStr = b.opts.AdvertisedAddr, "9092"
	}
	port, _ := strconv.Atoi(portStr)
	self := brokerInfo{nodeID: b.opts.NodeID, host: host, port: int32(port)}
	if b.opts.Rack != "" {
		rack := b.opts.Rack
		self.rack = &rack
	}
	return self
}

// leaderFor spreads partition leadership over the live brokers by a stable
// hash of topic id and partition.
func leaderFor(id coordapi.TopicID, partition int32, brokers []brokerInfo) int32 {
	if len(brokers) == 1 {
		return brokers[0].nodeID
	}
	h := fnv.New32a()
	h.Write(id[:])
	h.Write([]byte{byte(partition >> 24), byte(partition >> 16), byte(partition >> 8), byte(partition)})
	return brokers[h.Sum32()%uint32(len(brokers))].nodeID
}

func (b *Broker) handleMetadata(ctx context.Context, r *request) (kmsg.Response, error) {
	resp, err := b.metadata(ctx, r)
	if err != nil {
		return nil, err
	}
	if b.acls == nil {
		return resp, nil
	}
	// With ACLs, the authorized operations asked for are the principal's.
	req := r.req.(*kmsg.MetadataRequest)
	if req.IncludeClusterAuthorizedOperations {
		resp.AuthorizedOperations = b.clusterAuthorizedOperations(r)
	}
	if req.IncludeTopicAuthorizedOperations {
		for i := range resp.Topics {
			if mt := &resp.Topics[i]; mt.ErrorCode == 0 && mt.Topic != nil {
				mt.AuthorizedOperations = b.topicAuthorizedOperations(r, *mt.Topic)
			}
		}
	}
	return resp, nil
}

// topicOperations are the operations on a topic, as Kafka lists them in
// authorized operations.
var topicOperations = [...]kmsg.ACLOperation{
	kmsg.ACLOperationRead, kmsg.ACLOperationWrite, kmsg.ACLOperationCreate, kmsg.ACLOperationDelete,
	kmsg.ACLOperationAlter, kmsg.ACLOperationDescribe, kmsg.ACLOperationDescribeConfigs, kmsg.ACLOperationAlterConfigs,
}

// topicAuthorizedOperations is the bit field of the operations r's
// principal may perform on topic.
func (b *Broker) topicAuthorizedOperations(r *request, topic string) int32 {
	var ops int32
	for _, op := range topicOperations {
		if b.authorizedQuiet(r, op, kmsg.ACLResourceTypeTopic, topic) {
			ops |= 1 << op
		}
	}
	return ops
}

// metadata answers a Metadata request, its authorized operations left as
// the defaults.
func (b *Broker) metadata(ctx context.Context, r *request) (*kmsg.MetadataResponse, error) {
	req := r.req.(*kmsg.MetadataRequest)
	resp := req.ResponseKind().(*kmsg.MetadataResponse)
	brokers := b.liveBrokers()
	// Leaders in the client's zone when it is known (zones.go); the
	// response still names every broker.
	leaders := inZone(brokers, r.clientZone())
	for _, bi := range brokers {
		mb := kmsg.NewMetadataResponseBroker()
		mb.NodeID, mb.Host, mb.Port, mb.Rack = bi.nodeID, bi.host, bi.port, bi.rack
		resp.Brokers = append(resp.Brokers, mb)
	}
	clusterID := b.opts.ClusterID
	resp.ClusterID = &clusterID
	resp.ControllerID = brokers[0].nodeID

	if req.Topics == nil || (req.Version == 0 && len(req.Topics) == 0) {
		topics, err := b.coord.Topics(ctx)
		if err != nil {
			return nil, err
		}
		for _, t := range topics {
			// Topics the principal may not describe are left out,
			// silently, as Kafka lists all topics.
			if !b.authorizedQuiet(r, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTopic, t.Name) {
				continue
			}
			resp.Topics = append(resp.Topics, b.metadataTopic(t, leaders))
		}
		return resp, nil
	}
	autoCreate := b.opts.AutoCreateTopics && (req.Version < 4 || req.AllowAutoTopicCreation)
	for _, rt := range req.Topics {
		var (
			t   coordapi.Topic
			err error
		)
		switch {
		case rt.Topic != nil && *rt.Topic != "":
			// Kafka checks DESCRIBE before the topic's existence, so that
			// a denied name discloses nothing.
			if !b.authorizedTopic(r, kmsg.ACLOperationDescribe, *rt.Topic) {
				err = kerr.TopicAuthorizationFailed
				break
			}
			t, err = b.coord.Topic(ctx, *rt.Topic)
			if autoCreate && errors.Is(err, kerr.UnknownTopicOrPartition) {
				if b.mayCreateTopic(r, *rt.Topic) {
					t, err = b.autoCreate(ctx, *rt.Topic)
				} else {
					err = kerr.TopicAuthorizationFailed
				}
			}
		case rt.TopicID != [16]byte{}:
			t, err = b.coord.TopicByID(ctx, coordapi.TopicID(rt.TopicID))
			if err == nil && !b.authorizedTopic(r, kmsg.ACLOperationDescribe, t.Name) {
				err = kerr.TopicAuthorizationFailed // a topic id is not secret: answered with it
			}
		default:
			err = kerr.InvalidRequest
		}
		if err != nil {
			mt := kmsg.NewMetadataResponseTopic()
			mt.Topic, mt.TopicID = rt.Topic, rt.TopicID
			mt.ErrorCode = coordapi.ErrorCode(err)
			resp.Topics = append(resp.Topics, mt)
			continue
		}
		// Metadata asks the coordinator itself, and leaves the answer for
		// the requests a client sends next (ListOffsets, Fetch, Produce).
		b.topics.Put(t)
		resp.Topics = append(resp.Topics, b.metadataTopic(t, leaders))
	}
	return resp, nil
}

// autoCreate creates a topic with the cluster defaults; a concurrent creation
// by another client is not an error.
func (b *Broker) autoCreate(ctx context.Context, name string) (coordapi.Topic, error) {
	t, err := b.coord.CreateTopic(ctx, coordapi.CreateTopicRequest{Name: name, Partitions: b.opts.DefaultPartitions, ReplicationFactor: -1})
	if errors.Is(err, kerr.TopicAlreadyExists) {
		return b.coord.Topic(ctx, name)
	}
	if errors.Is(err, kerr.InvalidTopicException) {
		return t, kerr.InvalidTopicException
	}
	return t, err
}

func (b *Broker) metadataTopic(t coordapi.Topic, brokers []brokerInfo) kmsg.MetadataResponseTopic {
	mt := kmsg.NewMetadataResponseTopic()
	name := t.Name
	mt.Topic = &name
	mt.TopicID = t.ID
	mt.IsInternal = isInternalTopic(t.Name)
	for p := range t.Partitions {
		mp := kmsg.NewMetadataResponseTopicPartition()
		mp.Partition = p
		mp.Leader = leaderFor(dataID(t), p, brokers) // a view's are its base's
		mp.LeaderEpoch = leaderEpoch
		mp.Replicas = []int32{mp.Leader}
		mp.ISR = []int32{mp.Leader}
		mt.Partitions = append(mt.Partitions, mp)
	}
	return mt
}
