package broker

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-io/floe/coordapi"
)

// DeleteTopics: v0-v6. v4+ flexible; v5+ error messages; v6 names each
// topic by name or by topic id (an unknown id is UNKNOWN_TOPIC_ID) and
// answers with both. One result per requested topic; a name or id asked for
// twice is INVALID_REQUEST, as in Kafka. With ACLs a topic needs TOPIC
// DELETE (TOPIC_AUTHORIZATION_FAILED).
func init() { register(kmsg.DeleteTopics, 0, 6, (*Broker).handleDeleteTopics) }

func (b *Broker) handleDeleteTopics(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.req.(*kmsg.DeleteTopicsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteTopicsResponse)
	topics := req.Topics
	if req.Version < 6 {
		topics = make([]kmsg.DeleteTopicsRequestTopic, 0, len(req.TopicNames))
		for _, name := range req.TopicNames {
			rt := kmsg.NewDeleteTopicsRequestTopic()
			rt.Topic = kmsg.StringPtr(name)
			topics = append(topics, rt)
		}
	}
	names := make(map[string]int, len(topics))
	ids := make(map[[16]byte]int, len(topics))
	for _, rt := range topics {
		if rt.Topic != nil {
			names[*rt.Topic]++
		} else {
			ids[rt.TopicID]++
		}
	}
	for _, rt := range topics {
		st := kmsg.NewDeleteTopicsResponseTopic()
		st.Topic, st.TopicID = rt.Topic, rt.TopicID
		var err error
		switch {
		case rt.Topic != nil && rt.TopicID != [16]byte{}:
			err = fmt.Errorf("%w: You may not specify both topic name and topic id.", kerr.InvalidRequest)
		case rt.Topic != nil && names[*rt.Topic] > 1:
			err = fmt.Errorf("%w: Duplicate topic name.", kerr.InvalidRequest)
		case rt.Topic != nil && !b.authorizedTopic(r, kmsg.ACLOperationDelete, *rt.Topic):
			err = kerr.TopicAuthorizationFailed // before its existence, as Kafka
		case rt.Topic != nil:
			var id coordapi.TopicID
			id, err = b.coord.DeleteTopic(ctx, *rt.Topic)
			if err == nil {
				st.TopicID = id
				b.topicChanged(id, *rt.Topic)
			}
		case rt.TopicID == [16]byte{}:
			err = fmt.Errorf("%w: Neither topic name nor id were specified.", kerr.InvalidRequest)
		case ids[rt.TopicID] > 1:
			err = fmt.Errorf("%w: Duplicate topic id.", kerr.InvalidRequest)
		case !b.deleteByIDAuthorized(ctx, r, coordapi.TopicID(rt.TopicID), &st):
			err = kerr.TopicAuthorizationFailed
		default:
			var name string
			name, err = b.coord.DeleteTopicByID(ctx, coordapi.TopicID(rt.TopicID))
			if errors.Is(err, kerr.UnknownTopicOrPartition) {
				err = fmt.Errorf("%w: Topic id %s does not exist.", kerr.UnknownTopicID, coordapi.TopicID(rt.TopicID))
			}
			if err == nil {
				st.Topic = kmsg.StringPtr(name)
				b.topicChanged(coordapi.TopicID(rt.TopicID), name)
			}
		}
		if err != nil {
			st.ErrorCode = coordapi.ErrorCode(err)
			if req.Version >= 5 {
				st.ErrorMessage = adminErrorMessage(err)
			}
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}

// deleteByIDAuthorized reports whether r's principal may delete the topic
// whose id is id. An id no topic has is allowed here: the deletion answers
// UNKNOWN_TOPIC_ID, as Kafka does before it checks. A denied topic's name
// is set in st when the principal may describe it, as Kafka answers.
func (b *Broker) deleteByIDAuthorized(ctx context.Context, r *request, id coordapi.TopicID, st *kmsg.DeleteTopicsResponseTopic) bool {
	if b.acls == nil {
		return true
	}
	t, err := b.coord.TopicByID(ctx, id)
	if err != nil {
		return true
	}
	if b.authorizedTopic(r, kmsg.ACLOperationDelete, t.Name) {
		return true
	}
	if b.authorizedQuiet(r, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTopic, t.Name) {
		st.Topic = kmsg.StringPtr(t.Name)
	}
	return false
}
