package groups

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// OffsetCommit serves OffsetCommit (v0-v9). A member of a classic group
// commits with its member id and generation; a commit with generation -1
// (and no member) is a simple commit, accepted only while the group is
// Empty, and creates the group when it does not exist. Offsets are durable
// (a synced Pebble write) before the response. The caller answers
// partitions of unknown topics itself; every partition in req is stored,
// with the topic id the caller puts in each topic's TopicID (below v10 a
// field clients do not send) so that a recreated topic starts without
// offsets.
func (gs *Groups) OffsetCommit(_ context.Context, req *kmsg.OffsetCommitRequest) *kmsg.OffsetCommitResponse {
	resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
	codes := gs.commit(req)
	for i, t := range req.Topics {
		st := kmsg.NewOffsetCommitResponseTopic()
		st.Topic = t.Topic
		st.TopicID = t.TopicID
		for j, p := range t.Partitions {
			sp := kmsg.NewOffsetCommitResponseTopicPartition()
			sp.Partition = p.Partition
			sp.ErrorCode = codes.code(i, j)
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}

// commitCodes is the outcome of a commit: one code for every partition, or
// a code per partition.
type commitCodes struct {
	all   int16
	parts [][]int16
}

func (c commitCodes) code(topic, partition int) int16 {
	if c.parts == nil {
		return c.all
	}
	return c.parts[topic][partition]
}

func allCodes(e *kerr.Error) commitCodes { return commitCodes{all: e.Code} }

func (gs *Groups) commit(req *kmsg.OffsetCommitRequest) commitCodes {
	if req.Group == "" {
		return allCodes(kerr.InvalidGroupID)
	}
	if !gs.enter() {
		return allCodes(kerr.NotCoordinator)
	}
	defer gs.leave()
	g, created := gs.lockGroup(req.Group, req.Generation < 0)
	if g == nil {
		if req.Version >= 9 {
			return allCodes(kerr.GroupIDNotFound)
		}
		return allCodes(kerr.IllegalGeneration)
	}
	defer g.mu.Unlock()
	if created {
		g.gs.log.Info("creating a simple group for a manual offset commit", "group", g.name)
	}
	var (
		err   *kerr.Error
		check func(topic string, id topicID, p int32) *kerr.Error
	)
	switch {
	case g.mu.share != nil:
		// Share groups keep no committed offsets (Kafka's
		// ShareGroup.validateOffsetCommit).
		err = kerr.GroupIDNotFound
		if req.Version < 9 {
			err = kerr.IllegalGeneration
		}
	case g.mu.consumer != nil:
		err, check = g.validateConsumerCommitLocked(req)
	default:
		err = g.validateCommitLocked(req)
	}
	if err != nil {
		if created && g.unusedLocked() {
			g.removeLocked()
		}
		return allCodes(err)
	}

	now := gs.now()
	codes := commitCodes{parts: make([][]int16, len(req.Topics))}
	b := gs.newBatch()
	type write struct {
		topic     string
		partition int32
		r         offsetRecord
	}
	var writes []write
	for i, t := range req.Topics {
		codes.parts[i] = make([]int16, len(t.Partitions))
		for j, p := range t.Partitions {
			if p.Metadata != nil && len(*p.Metadata) > gs.opts.MaxMetadataBytes {
				codes.parts[i][j] = kerr.OffsetMetadataTooLarge.Code
				continue
			}
			if check != nil {
				if err := check(t.Topic, t.TopicID, p.Partition); err != nil {
					codes.parts[i][j] = err.Code
					continue
				}
			}
			r := offsetRecord{offset: p.Offset, leaderEpoch: p.LeaderEpoch, commitMs: msOf(now), topicID: t.TopicID, seq: gs.nextSeq()}
			if req.Version < 6 || r.leaderEpoch < -1 {
				r.leaderEpoch = -1
			}
			if p.Metadata != nil {
				r.metadata = strings.Clone(*p.Metadata)
			}
			w := write{topic: strings.Clone(t.Topic), partition: p.Partition, r: r}
			b.setOffset(g.name, w.topic, w.partition, r)
			writes = append(writes, w)
		}
	}
	if err := b.commit(); err != nil {
		gs.log.Error("commit offsets", "group", g.name, "err", err)
		for i := range codes.parts {
			for j := range codes.parts[i] {
				if codes.parts[i][j] == 0 {
					codes.parts[i][j] = kerr.CoordinatorNotAvailable.Code
				}
			}
		}
		if created && g.unusedLocked() {
			g.removeLocked()
		}
		return codes
	}
	for _, w := range writes {
		g.setOffsetLocked(w.topic, w.partition, w.r)
	}
	if created && g.unusedLocked() {
		g.removeLocked()
	}
	return codes
}

// validateCommitLocked checks a commit against a classic group, as Kafka's
// ClassicGroup.validateOffsetCommit; it also keeps the member's session
// alive.
func (g *group) validateCommitLocked(req *kmsg.OffsetCommitRequest) *kerr.Error {
	if req.Generation < 0 && g.mu.state == Empty {
		return nil // a simple commit (admin, or a consumer without a group)
	}
	if req.Generation >= 0 || req.MemberID != "" || req.InstanceID != nil {
		if err := g.validateMemberLocked(req.MemberID, req.InstanceID); err != nil {
			return err
		}
		if req.Generation != g.mu.generation {
			return kerr.IllegalGeneration
		}
	} else if g.mu.state != Empty {
		return kerr.UnknownMemberID
	}
	if g.mu.state == CompletingRebalance {
		// The member has this generation's JoinGroup response but
		// not its assignment yet.
		return kerr.RebalanceInProgress
	}
	if m := g.mu.members[req.MemberID]; m != nil && (g.mu.state == Stable || g.mu.state == PreparingRebalance) {
		g.touchLocked(m)
	}
	return nil
}

// OffsetFetch serves OffsetFetch (v0-v8; v8+ asks for several groups). Every
// asked partition is answered, with offset -1, leader epoch -1 and empty
// metadata where nothing is committed; null topics ask for every committed
// partition. A group that does not exist has nothing committed (no error).
// With RequireStable (v7+, KIP-447), a partition with pending transactional
// offsets (TxnOffsetCommit) of any producer is UNSTABLE_OFFSET_COMMIT, on
// which the client retries until the transaction ends; without it the
// committed offset is returned.
func (gs *Groups) OffsetFetch(ctx context.Context, req *kmsg.OffsetFetchRequest) *kmsg.OffsetFetchResponse {
	resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)
	snap, err := gs.topics(ctx)
	if err != nil {
		snap = nil // cannot tell recreated topics apart: show every offset
	}
	if req.Version >= 8 {
		for _, rg := range req.Groups {
			resp.Groups = append(resp.Groups, gs.fetchGroup(req.Version, rg, req.RequireStable, snap))
		}
		return resp
	}
	rg := kmsg.NewOffsetFetchRequestGroup()
	rg.Group = req.Group
	if req.Topics != nil {
		rg.Topics = make([]kmsg.OffsetFetchRequestGroupTopic, 0, len(req.Topics))
		for _, t := range req.Topics {
			rt := kmsg.NewOffsetFetchRequestGroupTopic()
			rt.Topic, rt.Partitions = t.Topic, t.Partitions
			rg.Topics = append(rg.Topics, rt)
		}
	}
	sg := gs.fetchGroup(req.Version, rg, req.Version >= 7 && req.RequireStable, snap)
	resp.ErrorCode = sg.ErrorCode
	for _, t := range sg.Topics {
		st := kmsg.NewOffsetFetchResponseTopic()
		st.Topic = t.Topic
		for _, p := range t.Partitions {
			sp := kmsg.NewOffsetFetchResponseTopicPartition()
			sp.Partition, sp.Offset, sp.LeaderEpoch, sp.Metadata, sp.ErrorCode = p.Partition, p.Offset, p.LeaderEpoch, p.Metadata, p.ErrorCode
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	if req.Version < 2 && sg.ErrorCode != 0 {
		// No group-level error field before v2: every asked
		// partition carries it.
		for _, t := range req.Topics {
			st := kmsg.NewOffsetFetchResponseTopic()
			st.Topic = t.Topic
			for _, p := range t.Partitions {
				sp := kmsg.NewOffsetFetchResponseTopicPartition()
				sp.Partition, sp.Offset, sp.ErrorCode = p, -1, sg.ErrorCode
				sp.Metadata = strPtr("") // Kafka's NO_METADATA, not null
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
	}
	return resp
}

// fetchGroup answers one group of an OffsetFetch. Offsets committed to a
// topic that has since been recreated (snap names it with another id) are
// not shown. With requireStable, partitions with pending transactional
// offsets are UNSTABLE_OFFSET_COMMIT (when every offset is asked, only
// those with a committed offset are listed, as Kafka's fetchAllOffsets).
func (gs *Groups) fetchGroup(version int16, rg kmsg.OffsetFetchRequestGroup, requireStable bool, snap *topicSnapshot) kmsg.OffsetFetchResponseGroup {
	sg := kmsg.NewOffsetFetchResponseGroup()
	sg.Group = rg.Group
	if !gs.enter() {
		sg.ErrorCode = kerr.NotCoordinator.Code
		return sg
	}
	defer gs.leave()
	var offsets map[string]map[int32]offsetRecord
	unstable := func(string, int32) bool { return false }
	if g, _ := gs.lockGroup(rg.Group, false); g != nil {
		if version >= 9 && g.mu.consumer != nil {
			if err := g.validateConsumerFetchLocked(rg); err != nil {
				g.mu.Unlock()
				sg.ErrorCode = err.Code
				return sg
			}
		}
		offsets = g.mu.offsets
		if requireStable && len(g.mu.txns) > 0 {
			unstable = g.hasPendingLocked
		}
		defer g.mu.Unlock()
	}
	current := func(topic string, r offsetRecord) bool {
		if snap == nil || r.topicID == (topicID{}) {
			return true
		}
		tm, ok := snap.byName[topic]
		return !ok || tm.id == r.topicID
	}
	if rg.Topics == nil {
		for _, topic := range slices.Sorted(maps.Keys(offsets)) {
			st := kmsg.NewOffsetFetchResponseGroupTopic()
			st.Topic = topic
			for _, p := range slices.Sorted(maps.Keys(offsets[topic])) {
				if r := offsets[topic][p]; current(topic, r) {
					if unstable(topic, p) {
						st.Partitions = append(st.Partitions, unstablePartition(p))
						continue
					}
					st.Partitions = append(st.Partitions, fetchedPartition(p, r, true))
				}
			}
			if len(st.Partitions) > 0 {
				sg.Topics = append(sg.Topics, st)
			}
		}
		return sg
	}
	for _, t := range rg.Topics {
		st := kmsg.NewOffsetFetchResponseGroupTopic()
		st.Topic, st.TopicID = t.Topic, t.TopicID
		for _, p := range t.Partitions {
			if unstable(t.Topic, p) {
				st.Partitions = append(st.Partitions, unstablePartition(p))
				continue
			}
			r, ok := offsets[t.Topic][p]
			ok = ok && current(t.Topic, r)
			st.Partitions = append(st.Partitions, fetchedPartition(p, r, ok))
		}
		sg.Topics = append(sg.Topics, st)
	}
	return sg
}

// unstablePartition is a partition with pending transactional offsets, to
// an OffsetFetch that requires stable offsets.
func unstablePartition(p int32) kmsg.OffsetFetchResponseGroupTopicPartition {
	sp := fetchedPartition(p, offsetRecord{}, false)
	sp.ErrorCode = kerr.UnstableOffsetCommit.Code
	return sp
}

func fetchedPartition(p int32, r offsetRecord, ok bool) kmsg.OffsetFetchResponseGroupTopicPartition {
	sp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
	sp.Partition = p
	if !ok {
		sp.Offset, sp.LeaderEpoch, sp.Metadata = -1, -1, strPtr("")
		return sp
	}
	sp.Offset, sp.LeaderEpoch, sp.Metadata = r.offset, r.leaderEpoch, strPtr(r.metadata)
	return sp
}

// OffsetDelete serves OffsetDelete (v0): it deletes committed offsets of an
// Empty group, or of topics a consumer group is not subscribed to
// (GROUP_SUBSCRIBED_TO_TOPIC for those it is), and every producer's pending
// transactional offsets of those partitions, as Kafka's offset tombstone.
// The caller answers partitions of unknown topics itself.
func (gs *Groups) OffsetDelete(_ context.Context, req *kmsg.OffsetDeleteRequest) *kmsg.OffsetDeleteResponse {
	resp := req.ResponseKind().(*kmsg.OffsetDeleteResponse)
	code, parts := gs.deleteOffsets(req)
	resp.ErrorCode = code
	if code != 0 {
		return resp
	}
	for i, t := range req.Topics {
		st := kmsg.NewOffsetDeleteResponseTopic()
		st.Topic = t.Topic
		for j, p := range t.Partitions {
			sp := kmsg.NewOffsetDeleteResponseTopicPartition()
			sp.Partition = p.Partition
			sp.ErrorCode = parts[i][j]
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}

func (gs *Groups) deleteOffsets(req *kmsg.OffsetDeleteRequest) (int16, [][]int16) {
	if req.Group == "" {
		return kerr.InvalidGroupID.Code, nil
	}
	if !gs.enter() {
		return kerr.NotCoordinator.Code, nil
	}
	defer gs.leave()
	g, _ := gs.lockGroup(req.Group, false)
	if g == nil {
		return kerr.GroupIDNotFound.Code, nil
	}
	defer g.mu.Unlock()
	if g.mu.consumer == nil && g.mu.state != Empty && g.mu.protocolType != consumerProtocolType {
		return kerr.NonEmptyGroup.Code, nil
	}
	subscribedOK := g.mu.consumer != nil || g.mu.state != Empty
	parts := make([][]int16, len(req.Topics))
	b := gs.newBatch()
	type del struct {
		topic     string
		partition int32
	}
	var dels []del
	var applies []func()
	for i, t := range req.Topics {
		parts[i] = make([]int16, len(t.Partitions))
		subscribed := subscribedOK && g.isSubscribedLocked(t.Topic)
		for j, p := range t.Partitions {
			if subscribed {
				parts[i][j] = kerr.GroupSubscribedToTopic.Code
				continue
			}
			if _, ok := g.mu.offsets[t.Topic][p.Partition]; ok {
				b.deleteOffset(g.name, t.Topic, p.Partition)
				dels = append(dels, del{t.Topic, p.Partition})
			}
			applies = append(applies, g.dropPendingLocked(b, t.Topic, p.Partition))
		}
	}
	if err := b.commit(); err != nil {
		gs.log.Error("delete offsets", "group", g.name, "err", err)
		return kerr.CoordinatorNotAvailable.Code, nil
	}
	for _, d := range dels {
		g.deleteOffsetLocked(d.topic, d.partition)
	}
	for _, apply := range applies {
		apply()
	}
	return 0, parts
}

func (g *group) setOffsetLocked(topic string, partition int32, r offsetRecord) {
	ps := g.mu.offsets[topic]
	if ps == nil {
		ps = make(map[int32]offsetRecord)
		g.mu.offsets[topic] = ps
	}
	ps[partition] = r
}

func (g *group) deleteOffsetLocked(topic string, partition int32) {
	ps := g.mu.offsets[topic]
	delete(ps, partition)
	if len(ps) == 0 {
		delete(g.mu.offsets, topic)
	}
}

// DeleteTopicOffsets drops every group's committed offsets, and every
// producer's pending transactional offsets, of the deleted topics, as
// Kafka does when a topic is deleted.
func (gs *Groups) DeleteTopicOffsets(_ context.Context, topics ...string) error {
	if !gs.enter() {
		return ErrClosed
	}
	defer gs.leave()
	for _, g := range gs.snapshot() {
		g.mu.Lock()
		if g.mu.dead {
			g.mu.Unlock()
			continue
		}
		b := gs.newBatch()
		var drop []string
		var dropTxn []int64
		for _, t := range topics {
			for p := range g.mu.offsets[t] {
				b.deleteOffset(g.name, t, p)
			}
			if _, ok := g.mu.offsets[t]; ok {
				drop = append(drop, t)
			}
			for id, txn := range g.mu.txns {
				for p := range txn.offsets[t] {
					b.deletePending(g.name, id, t, p)
				}
				if _, ok := txn.offsets[t]; ok {
					dropTxn = append(dropTxn, id)
				}
			}
		}
		if err := b.commit(); err != nil {
			g.mu.Unlock()
			return fmt.Errorf("groups: delete offsets of deleted topics in group %s: %w", g.name, err)
		}
		for _, t := range drop {
			delete(g.mu.offsets, t)
		}
		for _, id := range dropTxn {
			if txn := g.mu.txns[id]; txn != nil {
				for _, t := range topics {
					delete(txn.offsets, t)
				}
				if len(txn.offsets) == 0 {
					delete(g.mu.txns, id)
				}
			}
		}
		g.mu.Unlock()
	}
	return nil
}

// expireOffsets is the retention pass: it drops offsets older than
// OffsetRetention, as Kafka's cleanupGroupMetadata (an Empty group's
// offsets count from when it became Empty, a simple group's from each
// commit, a Stable consumer group's only for topics it no longer
// subscribes to), then deletes Empty groups left without offsets. An
// offset whose partition has pending transactional offsets does not
// expire, and a group with pending offsets is kept, as Kafka.
func (gs *Groups) expireOffsets() {
	if !gs.enter() {
		return
	}
	defer gs.leave()
	now := gs.now()
	retention := gs.opts.OffsetRetention
	for _, g := range gs.snapshot() {
		g.mu.Lock()
		if g.mu.dead {
			g.mu.Unlock()
			continue
		}
		g.expireOffsetsLocked(now, retention)
		g.mu.Unlock()
	}
}

func (g *group) expireOffsetsLocked(now time.Time, retention time.Duration) {
	// As Kafka's offsetExpirationCondition: the base an offset's age
	// counts from, nil when no offset of the group may expire.
	var base func(r offsetRecord) int64
	active := g.mu.state != Empty
	switch {
	case g.mu.consumer != nil:
		active = !g.mu.consumer.emptyLocked()
		base = func(r offsetRecord) int64 { return r.commitMs }
	case g.mu.protocolType == "":
		base = func(r offsetRecord) int64 { return r.commitMs }
	case g.mu.state == Empty:
		since := msOf(g.mu.stateSince)
		base = func(offsetRecord) int64 { return since }
	case g.mu.state == Stable && g.mu.protocolType == consumerProtocolType && g.mu.subscribedKnown:
		base = func(r offsetRecord) int64 { return r.commitMs }
	}
	b := g.gs.newBatch()
	type tp struct {
		topic     string
		partition int32
	}
	var expired []tp
	if base != nil {
		for topic, ps := range g.mu.offsets {
			if active && g.isSubscribedLocked(topic) {
				continue
			}
			for p, r := range ps {
				if msOf(now)-base(r) >= retention.Milliseconds() && !g.hasPendingLocked(topic, p) {
					b.deleteOffset(g.name, topic, p)
					expired = append(expired, tp{topic, p})
				}
			}
		}
	}
	remaining := 0
	for _, ps := range g.mu.offsets {
		remaining += len(ps)
	}
	// A share group stays until DeleteGroups: its share-partitions are
	// its state.
	drop := g.mu.share == nil && remaining == len(expired) && g.emptyForDeleteLocked() && len(g.mu.pending) == 0 && len(g.mu.txns) == 0
	if drop {
		b.deleteGroup(g.name)
	}
	if b.empty() {
		return
	}
	if err := b.commit(); err != nil {
		g.gs.log.Error("expire offsets", "group", g.name, "err", err)
		return
	}
	for _, e := range expired {
		g.deleteOffsetLocked(e.topic, e.partition)
	}
	if len(expired) > 0 {
		g.gs.log.Info("expired committed offsets", "group", g.name, "partitions", len(expired))
	}
	if drop {
		g.mu.persisted = false
		g.removeLocked()
		g.gs.log.Info("removed empty group without offsets", "group", g.name)
	}
}

// emptyForDeleteLocked reports whether the group has no members at all, so
// that DeleteGroups or the retention pass may remove it.
func (g *group) emptyForDeleteLocked() bool {
	if c := g.mu.consumer; c != nil {
		return c.emptyLocked()
	}
	if s := g.mu.share; s != nil {
		return s.Empty()
	}
	return g.mu.state == Empty && len(g.mu.members) == 0
}
