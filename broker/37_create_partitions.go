package broker

import (
	"context"
	"fmt"

	"github.com/floe-io/floe/coordapi"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// CreatePartitions: v0-v3. v2+ flexible; v3 adds nothing. Validate-only is
// honored; one result per requested topic with a message on error. A manual
// assignment must name one replica list per new partition (non-empty, no
// duplicates, live brokers) and is otherwise ignored: every broker serves
// every partition. A topic asked for twice is INVALID_REQUEST, as in Kafka.
// With ACLs a topic needs TOPIC ALTER (TOPIC_AUTHORIZATION_FAILED).
func init() { register(kmsg.CreatePartitions, 0, 3, (*Broker).handleCreatePartitions) }

func (b *Broker) handleCreatePartitions(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.req.(*kmsg.CreatePartitionsRequest)
	resp := req.ResponseKind().(*kmsg.CreatePartitionsResponse)
	counts := make(map[string]int, len(req.Topics))
	for _, rt := range req.Topics {
		counts[rt.Topic]++
	}
	for _, rt := range req.Topics {
		st := kmsg.NewCreatePartitionsResponseTopic()
		st.Topic = rt.Topic
		var err error
		if counts[rt.Topic] > 1 {
			err = fmt.Errorf("%w: Duplicate topic name.", kerr.InvalidRequest)
		} else if !b.authorizedTopic(r, kmsg.ACLOperationAlter, rt.Topic) {
			err = kerr.TopicAuthorizationFailed
		} else {
			err = b.createPartitions(ctx, rt, req.ValidateOnly)
		}
		if err != nil {
			st.ErrorCode = coordapi.ErrorCode(err)
			st.ErrorMessage = adminErrorMessage(err)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}

func (b *Broker) createPartitions(ctx context.Context, rt kmsg.CreatePartitionsRequestTopic, validateOnly bool) error {
	if rt.Assignment != nil {
		t, err := b.coord.Topic(ctx, rt.Topic)
		if err != nil {
			return err
		}
		// A count that does not grow the topic is the coordinator's to
		// reject, in Kafka's words.
		if added := rt.Count - t.Partitions; added > 0 {
			if int32(len(rt.Assignment)) != added {
				return fmt.Errorf("%w: Attempted to add %d additional partition(s), but only %d assignment(s) were specified.", kerr.InvalidReplicaAssignment, added, len(rt.Assignment))
			}
			for i, a := range rt.Assignment {
				if err := b.checkReplicas(t.Partitions+int32(i), a.Replicas, len(rt.Assignment[0].Replicas)); err != nil {
					return err
				}
			}
		}
	}
	if err := b.coord.CreatePartitions(ctx, rt.Topic, rt.Count, validateOnly); err != nil {
		return err
	}
	b.topicChanged(coordapi.TopicID{}, rt.Topic)
	return nil
}
