package broker

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-io/floe/broker/fetchread"
	"github.com/floe-io/floe/coordapi"
)

// ShareFetch: v1-v2 (KIP-932; v2 adds ShareAcquireMode, KIP-1206, and
// IsRenewAck with acknowledge type 4, KIP-1222). Share sessions are kept
// per (group, member) on this broker (shares.go); the records come from
// one ShareAcquire on the group coordinator, which applies the
// acknowledgements and acquires records under a lock, waiting up to
// MaxWaitMs when there are none; the bytes are read as Fetch reads them
// (share_read.go). Any broker serves any partition: CurrentLeader is
// -1/-1. With ACLs it needs GROUP READ (GROUP_AUTHORIZATION_FAILED) and
// TOPIC READ on each topic (TOPIC_AUTHORIZATION_FAILED), as Kafka.
// Options.ShareGroupsDisabled hides it.
func init() { register(kmsg.ShareFetch, 1, 2, (*Broker).handleShareFetch) }

// defaultShareLockMs is Kafka's default record lock duration
// (group.share.record.lock.duration.ms), answered as
// AcquisitionLockTimeoutMs when the group coordinator could not be asked:
// such an answer acquires nothing, and a client given 0 clamps its lock
// to 1 s and logs it.
const defaultShareLockMs = 30000

// sharePart is one partition a share request names.
type sharePart struct {
	tp   topicPartition
	acks []coordapi.ShareAckBatch
	// code is the partition's failure before the coordinator is asked:
	// unknown topic id or partition, or no TOPIC READ.
	code int16
}

// shareTopics resolves the topic ids of a share request, each partition
// with its acknowledgements (types per acks). A topic the principal may
// not READ is TOPIC_AUTHORIZATION_FAILED; an unknown id UNKNOWN_TOPIC_ID,
// an unknown partition UNKNOWN_TOPIC_OR_PARTITION.
func (b *Broker) shareTopics(ctx context.Context, r *request, ids [][16]byte, parts func(i int) ([]int32, [][]coordapi.ShareAckBatch)) []sharePart {
	var out []sharePart
	for i, id := range ids {
		var code int16
		t, err := b.topics.ByID(ctx, coordapi.TopicID(id))
		switch {
		case errors.Is(err, kerr.UnknownTopicOrPartition) || errors.Is(err, kerr.UnknownTopicID):
			code = kerr.UnknownTopicID.Code
		case err != nil:
			code = coordapi.ErrorCode(err)
		case !b.authorizedTopic(r, kmsg.ACLOperationRead, t.Name):
			code = kerr.TopicAuthorizationFailed.Code
		}
		ps, acks := parts(i)
		for j, p := range ps {
			sp := sharePart{tp: topicPartition{coordapi.TopicID(id), p}, acks: acks[j], code: code}
			if code == 0 && (p < 0 || p >= t.Partitions) {
				sp.code = kerr.UnknownTopicOrPartition.Code
			}
			out = append(out, sp)
		}
	}
	return out
}

// shareAcquire asks the coordinator for the session's records and acks,
// and reads the bytes of what was acquired. Partitions the coordinator
// could not serve answer KAFKA_STORAGE_ERROR (retriable), as Fetch does.
func (b *Broker) shareAcquire(ctx context.Context, areq coordapi.ShareAcquireRequest, read bool) (coordapi.ShareAcquireResponse, map[topicPartition]*fetchread.ShareRead) {
	// A release of the member's records still in flight here comes first:
	// it must not give back what this call acquires.
	b.shares.waitReleases(ctx, shareSessionKey{areq.Group, areq.Member})
	hctx, cancel := b.heldContext(ctx)
	aresp, err := b.groups.ShareAcquire(hctx, areq)
	drained := hctx.Err() != nil && ctx.Err() == nil
	cancel()
	if err == nil && len(aresp.Partitions) != len(areq.Partitions) {
		err = errors.New("the group coordinator answered another number of share-partitions")
	}
	if err != nil && drained && len(areq.Partitions) > 0 && !hasAnyAcks(areq) {
		// The broker is draining: a held fetch answers empty, as Fetch
		// does, rather than with errors.
		aresp = coordapi.ShareAcquireResponse{Partitions: make([]coordapi.ShareAcquired, len(areq.Partitions))}
		for i, p := range areq.Partitions {
			aresp.Partitions[i].Topic, aresp.Partitions[i].Partition = p.Topic, p.Partition
		}
		return aresp, map[topicPartition]*fetchread.ShareRead{}
	}
	if err != nil {
		b.log.Debug("share acquire", "group", areq.Group, "err", err)
		aresp = coordapi.ShareAcquireResponse{LockDurationMs: defaultShareLockMs, Partitions: make([]coordapi.ShareAcquired, len(areq.Partitions))}
		for i, p := range areq.Partitions {
			a := &aresp.Partitions[i]
			a.Topic, a.Partition = p.Topic, p.Partition
			a.ErrorCode = kerr.KafkaStorageError.Code
			if len(p.Acks) > 0 {
				a.AckErrorCode = kerr.KafkaStorageError.Code
			}
		}
	}
	reads := map[topicPartition]*fetchread.ShareRead{}
	if read {
		var list []*fetchread.ShareRead
		for i := range aresp.Partitions {
			a := &aresp.Partitions[i]
			if len(a.Acquired) > 0 {
				sr := &fetchread.ShareRead{TopicPartition: fetchread.TopicPartition{Topic: a.Topic, Partition: a.Partition}, Acq: a}
				reads[topicPartition{a.Topic, a.Partition}] = sr
				list = append(list, sr)
			}
		}
		b.readShared(ctx, list)
		b.sendShareInternalAcks(areq.Group, areq.Member, list)
	}
	return aresp, reads
}

func (b *Broker) handleShareFetch(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.req.(*kmsg.ShareFetchRequest)
	resp := req.ResponseKind().(*kmsg.ShareFetchResponse)
	fail := func(code int16) (kmsg.Response, error) {
		resp.ErrorCode = code
		return resp, nil
	}
	key, code := b.shareSessionOf(r, req.GroupID, req.MemberID)
	if code != 0 {
		return fail(code)
	}
	epoch := req.ShareSessionEpoch
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
	hasAcks := false
	for _, p := range asked {
		if len(p.acks) > 0 {
			hasAcks = true
		} else if epoch == shareFinalEpoch {
			// The final fetch only acknowledges: it adds no partition.
			return fail(kerr.InvalidRequest.Code)
		}
	}
	switch {
	case epoch == shareInitialEpoch && hasAcks:
		// A new session has acquired nothing to acknowledge.
		return fail(kerr.InvalidRequest.Code)
	case epoch == shareFinalEpoch && len(req.ForgottenTopicsData) > 0:
		return fail(kerr.InvalidRequest.Code)
	case req.IsRenewAck && (req.MaxRecords != 0 || req.MaxWaitMillis != 0 || req.MaxBytes != 0 || req.MinBytes != 0 || !allAck(asked)):
		// KafkaApis (KIP-1222): a renewing fetch fetches nothing, and
		// every partition it names acknowledges.
		return fail(kerr.InvalidRequest.Code)
	case epoch < shareFinalEpoch:
		return fail(kerr.InvalidShareSessionEpoch.Code)
	}
	var valid []topicPartition
	for _, p := range asked {
		if p.code == 0 {
			valid = append(valid, p.tp)
		}
	}
	var forgotten []topicPartition
	for _, f := range req.ForgottenTopicsData {
		for _, p := range f.Partitions {
			forgotten = append(forgotten, topicPartition{coordapi.TopicID(f.TopicID), p})
		}
	}
	var sres shareSessionResult
	if epoch == shareInitialEpoch {
		sres = b.shares.open(key, valid, r.conn, b.opts.MaxShareSessions)
	} else {
		sres = b.shares.next(key, epoch, valid, forgotten, r.conn)
	}
	// A replaced session's records and those of forgotten partitions stay
	// the member's until it acknowledges them or their lock expires, as in
	// Kafka (SharePartitionManager.newContext only updates the session):
	// the client may hold them still. A closing session's go back once its
	// acknowledgements are applied.
	if sres.code != 0 {
		return fail(sres.code)
	}

	fetch := epoch != shareFinalEpoch && !req.IsRenewAck
	areq := coordapi.ShareAcquireRequest{
		Group: key.group, Member: key.member, Via: b.opts.NodeID, Renew: req.IsRenewAck,
		MaxRecords: req.MaxRecords, BatchSize: req.BatchSize, Mode: req.ShareAcquireMode,
		MaxBytes: req.MaxBytes, MaxWaitMs: req.MaxWaitMillis,
	}
	index := map[topicPartition]int{}
	add := func(tp topicPartition) *coordapi.ShareAcquirePartition {
		if i, ok := index[tp]; ok {
			return &areq.Partitions[i]
		}
		index[tp] = len(areq.Partitions)
		areq.Partitions = append(areq.Partitions, coordapi.ShareAcquirePartition{Topic: tp.id, Partition: tp.partition})
		return &areq.Partitions[len(areq.Partitions)-1]
	}
	if fetch {
		for _, tp := range sres.parts {
			add(tp).Fetch = true
		}
	}
	ackRefused := map[topicPartition]bool{}
	for _, p := range asked {
		switch {
		case p.code != 0 || len(p.acks) == 0:
		case !req.IsRenewAck && hasRenew(p.acks), !clientAckTypes(p.acks):
			// A renewal goes alone, with IsRenewAck (KafkaApis), and types
			// past 4 are the broker's own: the partition's
			// acknowledgements fail, none applied.
			ackRefused[p.tp] = true
		default:
			add(p.tp).Acks = p.acks
		}
	}
	aresp, reads := b.shareAcquire(ctx, areq, fetch)
	if epoch == shareFinalEpoch {
		b.releaseShares(key, sres.dropped)
	}
	resp.AcquisitionLockTimeoutMillis = aresp.LockDurationMs

	// The answer: every partition of a new session; else those with
	// records, an error or an acknowledgement outcome, or new to the
	// session; and the partitions that failed before the coordinator.
	added := map[topicPartition]bool{}
	for _, tp := range sres.added {
		added[tp] = true
	}
	topicIdx := map[coordapi.TopicID]int{}
	answer := func(tp topicPartition) *kmsg.ShareFetchResponseTopicPartition {
		ti, ok := topicIdx[tp.id]
		if !ok {
			ti = len(resp.Topics)
			topicIdx[tp.id] = ti
			t := kmsg.NewShareFetchResponseTopic()
			t.TopicID = tp.id
			resp.Topics = append(resp.Topics, t)
		}
		p := kmsg.NewShareFetchResponseTopicPartition()
		p.Partition = tp.partition
		p.CurrentLeader.LeaderID, p.CurrentLeader.LeaderEpoch = -1, -1
		p.Records = []byte{}
		p.AcquiredRecords = []kmsg.ShareFetchResponseTopicPartitionAcquiredRecord{}
		resp.Topics[ti].Partitions = append(resp.Topics[ti].Partitions, p)
		return &resp.Topics[ti].Partitions[len(resp.Topics[ti].Partitions)-1]
	}
	for _, p := range asked {
		if p.code != 0 {
			sp := answer(p.tp)
			sp.ErrorCode = p.code
			if len(p.acks) > 0 {
				sp.AcknowledgeErrorCode = p.code
			}
		}
	}
	answered := map[topicPartition]bool{}
	for i := range aresp.Partitions {
		a := &aresp.Partitions[i]
		tp := topicPartition{a.Topic, a.Partition}
		rd := reads[tp]
		hasAck := len(areq.Partitions[i].Acks) > 0 || ackRefused[tp]
		if epoch != shareInitialEpoch && !added[tp] && a.ErrorCode == 0 && !hasAck && (rd == nil || rd.Code == 0 && len(rd.Records) == 0) {
			continue
		}
		answered[tp] = true
		sp := answer(tp)
		sp.ErrorCode, sp.AcknowledgeErrorCode = a.ErrorCode, a.AckErrorCode
		if ackRefused[tp] {
			sp.AcknowledgeErrorCode = kerr.InvalidRequest.Code
		}
		if a.AckErrorMessage != "" {
			sp.AcknowledgeErrorMessage = kmsg.StringPtr(a.AckErrorMessage)
		}
		switch {
		case rd == nil:
		case rd.Code != 0:
			sp.ErrorCode = rd.Code
		default:
			sp.Records = rd.Records
			for _, ar := range a.Acquired {
				sp.AcquiredRecords = append(sp.AcquiredRecords, kmsg.ShareFetchResponseTopicPartitionAcquiredRecord{
					FirstOffset: ar.First, LastOffset: ar.Last, DeliveryCount: ar.DeliveryCount})
			}
		}
	}
	for tp := range ackRefused {
		if !answered[tp] { // not in the session (a final fetch)
			sp := answer(tp)
			sp.AcknowledgeErrorCode = kerr.InvalidRequest.Code
		}
	}
	return resp, nil
}

// hasAnyAcks reports whether areq acknowledges anything.
func hasAnyAcks(areq coordapi.ShareAcquireRequest) bool {
	for _, p := range areq.Partitions {
		if len(p.Acks) > 0 {
			return true
		}
	}
	return false
}

// allAck reports whether every partition asked acknowledges something.
func allAck(asked []sharePart) bool {
	for _, p := range asked {
		if len(p.acks) == 0 {
			return false
		}
	}
	return true
}

// clientAckTypes reports whether every type in acks is one a client may
// send (0 gap to 4 renew), as KafkaApis checks them; the types past 4 are
// the broker's internal ones (coordapi.ShareAckArchiveAborted).
func clientAckTypes(acks []coordapi.ShareAckBatch) bool {
	for _, a := range acks {
		for _, t := range a.Types {
			if t < 0 || t > 4 {
				return false
			}
		}
	}
	return true
}

// hasRenew reports whether acks renew any record (type 4, KIP-1222).
func hasRenew(acks []coordapi.ShareAckBatch) bool {
	for _, a := range acks {
		for _, t := range a.Types {
			if t == 4 {
				return true
			}
		}
	}
	return false
}
