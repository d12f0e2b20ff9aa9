package broker

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-io/floe/coordapi"
)

// CreateTopics: v0-v7. v1+ validate-only and error messages; v5+ flexible,
// and each result carries the partition count, replication factor and
// configs of the topic; v7 its topic id.
//
// One result per requested topic, each with its own error. A manual replica
// assignment is accepted when it is consistent (partitions 0..n-1, equal
// non-empty replica lists of live brokers), and only fixes the partition
// count: every broker serves every partition. The replication factor is
// accepted for compatibility (object storage replicates the data) and
// reported as 1, as Metadata does. With ACLs a topic needs CLUSTER CREATE
// or TOPIC CREATE (TOPIC_AUTHORIZATION_FAILED), and its configs are only
// returned with TOPIC DESCRIBE_CONFIGS, as Kafka.
func init() { register(kmsg.CreateTopics, 0, 7, (*Broker).handleCreateTopics) }

func (b *Broker) handleCreateTopics(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.req.(*kmsg.CreateTopicsRequest)
	resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
	counts := make(map[string]int, len(req.Topics))
	for _, rt := range req.Topics {
		counts[rt.Topic]++
	}
	for _, rt := range req.Topics {
		st := kmsg.NewCreateTopicsResponseTopic()
		st.Topic = rt.Topic
		// v5+: an empty list on errors, as Kafka sends, not null.
		st.Configs = []kmsg.CreateTopicsResponseTopicConfig{}
		if counts[rt.Topic] > 1 {
			setCreateTopicError(&st, req.Version, fmt.Errorf("%w: Duplicate topic name.", kerr.InvalidRequest))
			resp.Topics = append(resp.Topics, st)
			continue
		}
		if !b.mayCreateTopic(r, rt.Topic) {
			setCreateTopicError(&st, req.Version, &coordapi.KafkaError{Code: kerr.TopicAuthorizationFailed, Message: "Authorization failed."})
			resp.Topics = append(resp.Topics, st)
			continue
		}
		t, err := b.createTopic(ctx, rt, req.ValidateOnly)
		if err != nil {
			setCreateTopicError(&st, req.Version, err)
			resp.Topics = append(resp.Topics, st)
			continue
		}
		st.TopicID = t.ID
		st.NumPartitions = t.Partitions
		st.ReplicationFactor = 1
		if !b.authorizedQuiet(r, kmsg.ACLOperationDescribeConfigs, kmsg.ACLResourceTypeTopic, t.Name) {
			// Kafka: created, but its configs are not shown.
			st.ConfigErrorCode = kerr.TopicAuthorizationFailed.Code
			st.NumPartitions, st.ReplicationFactor = -1, -1
			resp.Topics = append(resp.Topics, st)
			continue
		}
		for _, e := range coordapi.DescribeTopicConfig(t) {
			c := kmsg.NewCreateTopicsResponseTopicConfig()
			c.Name = e.Name
			c.Value = kmsg.StringPtr(e.Value)
			c.ReadOnly = e.ReadOnly
			c.Source = int8(e.Source)
			c.IsSensitive = e.Sensitive
			if e.Sensitive {
				c.Value = nil
			}
			st.Configs = append(st.Configs, c)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}

// createTopic validates one requested topic the way Kafka does before the
// coordinator creates it (or, validate-only, checks that it could).
func (b *Broker) createTopic(ctx context.Context, rt kmsg.CreateTopicsRequestTopic, validateOnly bool) (coordapi.Topic, error) {
	partitions := rt.NumPartitions
	if len(rt.ReplicaAssignment) > 0 {
		if rt.NumPartitions != -1 || rt.ReplicationFactor != -1 {
			return coordapi.Topic{}, fmt.Errorf("%w: Both numPartitions or replicationFactor and replicasAssignments were set. Both cannot be used at the same time.", kerr.InvalidRequest)
		}
		if err := b.checkCreateAssignment(rt.ReplicaAssignment); err != nil {
			return coordapi.Topic{}, err
		}
		partitions = int32(len(rt.ReplicaAssignment))
	}
	if partitions == -1 {
		partitions = b.opts.DefaultPartitions // num.partitions, as DescribeConfigs shows it
	}
	// The coordinator checks the name, the partition count and the
	// replication factor, in Kafka's words.
	var configs map[string]string
	var nulls []string
	for _, c := range rt.Configs {
		if c.Value == nil {
			nulls = append(nulls, c.Name)
			continue
		}
		if configs == nil {
			configs = make(map[string]string, len(rt.Configs))
		}
		configs[c.Name] = *c.Value
	}
	if len(nulls) > 0 {
		return coordapi.Topic{}, fmt.Errorf("%w: Null value not supported for topic configs: %s", kerr.InvalidConfig, strings.Join(nulls, ","))
	}
	return b.coord.CreateTopic(ctx, coordapi.CreateTopicRequest{
		Name:              rt.Topic,
		Partitions:        partitions,
		ReplicationFactor: rt.ReplicationFactor,
		Configs:           configs,
		ValidateOnly:      validateOnly,
	})
}

// checkCreateAssignment checks a manual replica assignment as Kafka does:
// partitions numbered 0..n-1 once each, replica lists of one length without
// duplicates, naming live brokers.
func (b *Broker) checkCreateAssignment(as []kmsg.CreateTopicsRequestTopicReplicaAssignment) error {
	seen := make([]bool, len(as))
	for _, a := range as {
		if a.Partition < 0 || int(a.Partition) >= len(as) || seen[a.Partition] {
			return fmt.Errorf("%w: partitions should be a consecutive 0-based integer sequence", kerr.InvalidReplicaAssignment)
		}
		seen[a.Partition] = true
		if err := b.checkReplicas(a.Partition, a.Replicas, len(as[0].Replicas)); err != nil {
			return err
		}
	}
	return nil
}

// checkReplicas checks one partition's manual replica list: non-empty,
// want long, no duplicates, only live brokers.
func (b *Broker) checkReplicas(partition int32, replicas []int32, want int) error {
	if len(replicas) == 0 {
		return fmt.Errorf("%w: The manual partition assignment includes an empty replica list.", kerr.InvalidReplicaAssignment)
	}
	if len(replicas) != want {
		return fmt.Errorf("%w: The manual partition assignment includes a partition with %d replica(s), but this is not consistent with previous partitions, which have %d replica(s).", kerr.InvalidReplicaAssignment, len(replicas), want)
	}
	brokers := b.liveBrokers()
	for i, id := range replicas {
		if slices.Contains(replicas[:i], id) {
			return fmt.Errorf("%w: The manual partition assignment of partition %d includes the broker %d more than once.", kerr.InvalidReplicaAssignment, partition, id)
		}
		if !slices.ContainsFunc(brokers, func(bi brokerInfo) bool { return bi.nodeID == id }) {
			return fmt.Errorf("%w: The manual partition assignment includes broker %d, but no such broker is registered.", kerr.InvalidReplicaAssignment, id)
		}
	}
	return nil
}

func setCreateTopicError(st *kmsg.CreateTopicsResponseTopic, version int16, err error) {
	st.ErrorCode = coordapi.ErrorCode(err)
	if version >= 1 {
		st.ErrorMessage = adminErrorMessage(err)
	}
}

// adminErrorMessage is the error_message of an admin response: the message
// Apache Kafka would give when the coordinator has it, else the error's
// text without the Kafka error name.
func adminErrorMessage(err error) *string {
	if err == nil {
		return nil
	}
	var ke *coordapi.KafkaError
	if errors.As(err, &ke) && ke.Message != "" {
		msg := ke.Message
		return &msg
	}
	var kerrErr *kerr.Error
	msg := err.Error()
	if errors.As(err, &kerrErr) {
		// "INVALID_REQUEST: <kerr's description>: detail" -> "detail".
		if rest, ok := strings.CutPrefix(msg, kerrErr.Error()+": "); ok {
			msg = rest
		}
	}
	return &msg
}
