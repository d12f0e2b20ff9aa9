package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-io/floe/coordapi"
)

// ShareAcknowledge: v1-v2 (KIP-932; v2 adds IsRenewAck and
// AcquisitionLockTimeoutMs). It shares ShareFetch's session: epoch 0 is
// INVALID_SHARE_SESSION_EPOCH, epoch n must match the session's and moves
// it on, epoch -1 applies the acknowledgements, closes the session and
// gives back the rest of its records. Acknowledgements are checked against
// the member, not the session, so a member acknowledges through any
// broker. ACLs as ShareFetch. Options.ShareGroupsDisabled hides it.
func init() { register(kmsg.ShareAcknowledge, 1, 2, (*Broker).handleShareAcknowledge) }

func (b *Broker) handleShareAcknowledge(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.req.(*kmsg.ShareAcknowledgeRequest)
	resp := req.ResponseKind().(*kmsg.ShareAcknowledgeResponse)
	fail := func(code int16) (kmsg.Response, error) {
		resp.ErrorCode = code
		return resp, nil
	}
	key, code := b.shareSessionOf(r, req.GroupID, req.MemberID)
	if code != 0 {
		return fail(code)
	}
	epoch := req.ShareSessionEpoch
	if epoch == shareInitialEpoch || epoch < shareFinalEpoch {
		return fail(kerr.InvalidShareSessionEpoch.Code)
	}
	ids := make([][16]byte, len(req.Topics))
	for i := range req.Topics {
		ids[i] = req.Topics[i].TopicID
	}
	asked := b.shareTopics(ctx, r, ids, func(i int) ([]int32, [][]coordapi.ShareAckBatch) {
		ps := req.Topics[i].Partitions
		parts, acks := make([]int32, len(ps)), make([][]coordapi.ShareAckBatch, len(ps))
		for j, p := range ps {
			parts[j] = p.Partition
			for _, ab := range p.AcknowledgementBatches {
				acks[j] = append(acks[j], coordapi.ShareAckBatch{First: ab.FirstOffset, Last: ab.LastOffset, Types: ab.AcknowledgeTypes})
			}
		}
		return parts, acks
	})
	sres := b.shares.next(key, epoch, nil, nil, r.conn)
	if sres.code != 0 {
		return fail(sres.code)
	}
	areq := coordapi.ShareAcquireRequest{Group: key.group, Member: key.member, Via: b.opts.NodeID, Renew: req.IsRenewAck}
	var idx []int // asked index of each areq partition
	codes := make([]int16, len(asked))
	msgs := make([]string, len(asked))
	for i, p := range asked {
		codes[i] = p.code
		switch {
		case p.code != 0:
		case !req.IsRenewAck && hasRenew(p.acks), !clientAckTypes(p.acks):
			// Renewals come with IsRenewAck, as ShareFetch's; types past
			// 4 are the broker's own (coordapi.ShareAckArchiveAborted).
			codes[i] = kerr.InvalidRequest.Code
		default:
			areq.Partitions = append(areq.Partitions, coordapi.ShareAcquirePartition{Topic: p.tp.id, Partition: p.tp.partition, Acks: p.acks})
			idx = append(idx, i)
		}
	}
	var lock int32
	if len(areq.Partitions) > 0 {
		aresp, _ := b.shareAcquire(ctx, areq, false)
		lock = aresp.LockDurationMs
		for j, a := range aresp.Partitions {
			codes[idx[j]], msgs[idx[j]] = a.AckErrorCode, a.AckErrorMessage
		}
	}
	if epoch == shareFinalEpoch {
		b.releaseShares(key, sres.dropped)
	}
	if lock == 0 {
		lock = b.shareLockMs(ctx, key.group)
	}
	resp.AcquisitionLockTimeoutMillis = lock
	topicIdx := map[coordapi.TopicID]int{}
	for i, p := range asked {
		ti, ok := topicIdx[p.tp.id]
		if !ok {
			ti = len(resp.Topics)
			topicIdx[p.tp.id] = ti
			t := kmsg.NewShareAcknowledgeResponseTopic()
			t.TopicID = p.tp.id
			resp.Topics = append(resp.Topics, t)
		}
		rp := kmsg.NewShareAcknowledgeResponseTopicPartition()
		rp.Partition, rp.ErrorCode = p.tp.partition, codes[i]
		if msgs[i] != "" {
			rp.ErrorMessage = kmsg.StringPtr(msgs[i])
		}
		rp.CurrentLeader.LeaderID, rp.CurrentLeader.LeaderEpoch = -1, -1
		resp.Topics[ti].Partitions = append(resp.Topics[ti].Partitions, rp)
	}
	return resp, nil
}

// shareLockMs is the group's record lock duration for an answer that
// acquired nothing: asked of the coordinator with an empty ShareAcquire;
// Kafka's default when it does not answer.
func (b *Broker) shareLockMs(ctx context.Context, group string) int32 {
	aresp, err := b.groups.ShareAcquire(ctx, coordapi.ShareAcquireRequest{Group: group})
	if err != nil {
		return defaultShareLockMs
	}
	return aresp.LockDurationMs
}
