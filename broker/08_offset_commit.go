package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// OffsetCommit: v0-v9. v1 per-partition timestamp (ignored); v2-v4
// retention time (ignored: offsets.retention.minutes applies); v6+ leader
// epoch; v7+ group.instance.id; v8+ flexible; v9 answers a generation
// commit to a missing group GROUP_ID_NOT_FOUND (ILLEGAL_GENERATION before).
// v10 names topics by id and is not served. As in Kafka, partitions of
// unknown topics are answered UNKNOWN_TOPIC_OR_PARTITION here, and the
// group coordinator sees only the rest (none: it is not asked). Needs GROUP
// READ (else every partition is GROUP_AUTHORIZATION_FAILED) and TOPIC READ
// (else the topic's partitions are TOPIC_AUTHORIZATION_FAILED), as Kafka.
func init() { register(kmsg.OffsetCommit, 0, 9, (*Broker).handleOffsetCommit) }

func (b *Broker) handleOffsetCommit(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.req.(*kmsg.OffsetCommitRequest)
	resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
	topics := make([]string, len(req.Topics))
	parts := make([][]int32, len(req.Topics))
	for i, t := range req.Topics {
		topics[i] = t.Topic
		for _, p := range t.Partitions {
			parts[i] = append(parts[i], p.Partition)
		}
	}
	if !b.authorized(r, kmsg.ACLOperationRead, kmsg.ACLResourceTypeGroup, req.Group) {
		// Kafka: GROUP READ first, every partition answered with it.
		for i, t := range req.Topics {
			st := kmsg.NewOffsetCommitResponseTopic()
			st.Topic = t.Topic
			for _, p := range req.Topics[i].Partitions {
				sp := kmsg.NewOffsetCommitResponseTopicPartition()
				sp.Partition, sp.ErrorCode = p.Partition, kerr.GroupAuthorizationFailed.Code
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil
	}
	codes, keep, ids := b.knownPartitions(ctx, r, kmsg.ACLOperationRead, topics, parts)
	if code := b.groupsError(); code != 0 {
		setKept(codes, keep, code)
	} else {
		valid := *req
		var from []int
		valid.Topics, from = keptTopics(keep, func(i int, kept []int) kmsg.OffsetCommitRequestTopic {
			vt := req.Topics[i]
			vt.Partitions = nil
			vt.TopicID = ids[i] // stored with the offsets: a recreated topic starts afresh
			for _, j := range kept {
				vt.Partitions = append(vt.Partitions, req.Topics[i].Partitions[j])
			}
			return vt
		})
		if len(valid.Topics) > 0 {
			gr, err := b.groups.OffsetCommit(ctx, &valid)
			if err != nil {
				setKept(codes, keep, b.groupsFailed("OffsetCommit", err))
			} else {
				for k, t := range gr.Topics {
					for n, p := range t.Partitions {
						putAnswer(codes, keep, from, k, n, p.ErrorCode)
					}
				}
			}
		}
	}
	for i, t := range req.Topics {
		st := kmsg.NewOffsetCommitResponseTopic()
		st.Topic = t.Topic
		for j, p := range t.Partitions {
			sp := kmsg.NewOffsetCommitResponseTopicPartition()
			sp.Partition = p.Partition
			sp.ErrorCode = codes[i][j]
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}
