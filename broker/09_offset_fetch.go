package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// OffsetFetch: v0-v9. v2+ null topics fetch every committed partition and
// a group-level error; v5+ leader epoch; v6+ flexible; v7+ RequireStable
// (a partition with pending transactional offsets is
// UNSTABLE_OFFSET_COMMIT, and the client retries); v8+ several groups; v9+ a KIP-848 member's id and epoch, checked (STALE_MEMBER_EPOCH).
// Every asked partition is answered, -1 where nothing is committed. v10
// (topic ids) is not served. Needs GROUP DESCRIBE per group
// (GROUP_AUTHORIZATION_FAILED) and TOPIC DESCRIBE per topic: named topics
// the principal may not describe are answered TOPIC_AUTHORIZATION_FAILED,
// and left out of an all-topics answer, as Kafka (offset_fetch_acl.go).
func init() { register(kmsg.OffsetFetch, 0, 9, (*Broker).handleOffsetFetch) }

func (b *Broker) handleOffsetFetch(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.req.(*kmsg.OffsetFetchRequest)
	if b.acls != nil {
		return b.offsetFetchAuthorized(ctx, r, req), nil
	}
	return b.offsetFetch(ctx, req), nil
}

// offsetFetch answers req from the group coordinator, or with the code of
// its failure.
func (b *Broker) offsetFetch(ctx context.Context, req *kmsg.OffsetFetchRequest) *kmsg.OffsetFetchResponse {
	code := b.groupsError()
	if code == 0 {
		resp, err := b.groups.OffsetFetch(ctx, req)
		if err == nil {
			return resp
		}
		code = b.groupsFailed("OffsetFetch", err)
	}
	return offsetFetchFailed(req, code)
}

// offsetFetchFailed answers every group and partition of req with code.
func offsetFetchFailed(req *kmsg.OffsetFetchRequest, code int16) *kmsg.OffsetFetchResponse {
	resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)
	resp.ErrorCode = code
	for _, g := range req.Groups {
		sg := kmsg.NewOffsetFetchResponseGroup()
		sg.Group, sg.ErrorCode = g.Group, code
		resp.Groups = append(resp.Groups, sg)
	}
	if req.Version < 2 {
		for _, t := range req.Topics {
			st := kmsg.NewOffsetFetchResponseTopic()
			st.Topic = t.Topic
			for _, p := range t.Partitions {
				sp := kmsg.NewOffsetFetchResponseTopicPartition()
				sp.Partition, sp.Offset, sp.ErrorCode = p, -1, code
				sp.Metadata = kmsg.StringPtr("") // Kafka's NO_METADATA, not null
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
	}
	return resp
}
