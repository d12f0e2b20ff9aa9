package sharegroups

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/groups/share"
)

// The share-group offsets admin APIs (KIP-932; docs/design/share-groups.md,
// "Admin and metrics"), as Kafka 4.4's GroupCoordinatorService and
// GroupMetadataManager serve them:
//
//	DescribeShareGroupOffsets  SPSO, leader epoch and lag (KIP-1226) of each
//	                           share-partition; -1s for one without state
//	AlterShareGroupOffsets     an Empty group's SPSO moved, its ranges
//	                           forgotten (state epoch + 1); creates the group
//	DeleteShareGroupOffsets    an Empty group's share-partitions of a topic
//	                           dropped: the next assignment starts them anew
//
// Topics are named, as in the requests; the ACLs are the broker's.

// shareLeaderEpoch is the leader epoch DescribeShareGroupOffsets answers
// for a share-partition with state: a diskless partition's leader never
// changes (broker/03_metadata.go).
const shareLeaderEpoch = 0

// noShareState fills p as Kafka answers a partition without share state.
func noShareState(p *kmsg.DescribeShareGroupOffsetsResponseGroupTopicPartition) {
	p.StartOffset, p.LeaderEpoch, p.Lag = -1, -1, -1
}

// sharePartSummary is what a describe reads of one share-partition under
// the group's mutex; the lag is computed after, without the lock.
type sharePartSummary struct {
	id        coordapi.TopicID
	partition int32
	start     int64
	completed int64
	ok        bool
}

// DescribeShareGroupOffsets serves DescribeShareGroupOffsets (v0-v1). A
// group's null Topics asks for every share-partition it has state for.
// An unknown group has no share state: its partitions answer -1 (Kafka's
// persister has nothing for them). An empty group id is INVALID_GROUP_ID.
func (c *Coordinator) DescribeShareGroupOffsets(ctx context.Context, req *kmsg.DescribeShareGroupOffsetsRequest) *kmsg.DescribeShareGroupOffsetsResponse {
	resp := req.ResponseKind().(*kmsg.DescribeShareGroupOffsetsResponse)
	for _, rg := range req.Groups {
		for _, rt := range rg.Topics {
			c.host.NoteSubscribed([]string{rt.Topic}) // a view, named before any member's heartbeat
		}
	}
	snap, terr := c.host.Topics(ctx)
	for _, rg := range req.Groups {
		resp.Groups = append(resp.Groups, c.describeShareOffsets(ctx, rg, snap, terr))
	}
	return resp
}

func (c *Coordinator) describeShareOffsets(ctx context.Context, rg kmsg.DescribeShareGroupOffsetsRequestGroup, snap Topics, terr error) kmsg.DescribeShareGroupOffsetsResponseGroup {
	dg := kmsg.NewDescribeShareGroupOffsetsResponseGroup()
	dg.GroupID = rg.GroupID
	fail := func(code *kerr.Error, msg string) kmsg.DescribeShareGroupOffsetsResponseGroup {
		dg.ErrorCode, dg.ErrorMessage, dg.Topics = code.Code, nilIfEmpty(msg), nil
		return dg
	}
	if rg.GroupID == "" {
		return fail(kerr.InvalidGroupID, "The group id must not be empty.")
	}
	if terr != nil {
		c.log.Warn("list topics for DescribeShareGroupOffsets", "group", rg.GroupID, "err", terr)
		return fail(kerr.CoordinatorNotAvailable, "")
	}
	if !c.host.Enter() {
		return fail(kerr.NotCoordinator, "")
	}
	defer c.host.Leave()

	// What was asked: by topic, the partitions (nil Topics: every
	// share-partition with state, filled in under the lock).
	type asked struct {
		name  string
		id    coordapi.TopicID
		known bool
		parts []int32
	}
	var topics []asked
	for _, rt := range rg.Topics {
		meta, known := snap.Topic(rt.Topic)
		topics = append(topics, asked{name: rt.Topic, id: meta.ID, known: known, parts: rt.Partitions})
	}
	var sums []sharePartSummary
	if g, _ := c.lockGroup(rg.GroupID, false); g != nil {
		s := g.s
		if rg.Topics == nil && s != nil {
			for id, ps := range s.parts {
				name, ok := snap.TopicName(coordapi.TopicID(id))
				if !ok {
					name, ok = c.shareViewName(ctx, id)
				}
				if !ok {
					continue // a deleted topic: its state is unreachable
				}
				a := asked{name: name, id: coordapi.TopicID(id), known: true}
				for p := range ps {
					a.parts = append(a.parts, p)
				}
				slices.Sort(a.parts)
				topics = append(topics, a)
			}
			slices.SortFunc(topics, func(a, b asked) int { return cmp.Compare(a.name, b.name) })
		}
		for _, a := range topics {
			for _, p := range a.parts {
				sum := sharePartSummary{id: a.id, partition: p}
				if part := g.sharePartitionLocked(a.id, p); a.known && part != nil {
					sum.start, sum.completed, sum.ok = part.Start(), part.Completed(), true
				}
				sums = append(sums, sum)
			}
		}
		g.Unlock()
	} else {
		for _, a := range topics {
			for _, p := range a.parts {
				sums = append(sums, sharePartSummary{id: a.id, partition: p})
			}
		}
	}

	readCommitted := c.host.Config(rg.GroupID).ReadCommitted
	dg.Topics = []kmsg.DescribeShareGroupOffsetsResponseGroupTopic{}
	i := 0
	for _, a := range topics {
		rt := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopic()
		rt.Topic = a.name
		if a.known {
			rt.TopicID = a.id
		}
		rt.Partitions = []kmsg.DescribeShareGroupOffsetsResponseGroupTopicPartition{}
		for range a.parts {
			sum := sums[i]
			i++
			rp := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopicPartition()
			rp.Partition = sum.partition
			switch {
			case !a.known:
				noShareState(&rp)
				rp.ErrorCode, rp.ErrorMessage = kerr.UnknownTopicOrPartition.Code, strPtr(fmt.Sprintf("The topic %s does not exist.", a.name))
			case !sum.ok:
				noShareState(&rp)
			default:
				rp.StartOffset, rp.LeaderEpoch = sum.start, shareLeaderEpoch
				rp.Lag = c.shareLag(ctx, sum, readCommitted)
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		dg.Topics = append(dg.Topics, rt)
	}
	return dg
}

// shareLag is KIP-1226's lag of a share-partition: bound - SPSO -
// completed, the bound being the high watermark, or the last stable offset
// under read_committed; -1 when the partition's offsets cannot be read.
func (c *Coordinator) shareLag(ctx context.Context, sum sharePartSummary, readCommitted bool) int64 {
	pr := c.opts.Partitions
	if pr == nil {
		return -1
	}
	data, _, err := c.shareDataOf(ctx, topicID(sum.id))
	if err != nil {
		c.log.Warn("resolve a view for share lag", "topic_id", sum.id, "err", err)
		return -1
	}
	st, err := pr.PartitionState(ctx, coordapi.TopicID(data), sum.partition) // a view's are its base's
	if err != nil {
		c.log.Warn("read partition offsets for share lag", "topic_id", sum.id, "partition", sum.partition, "err", err)
		return -1
	}
	bound := st.HighWatermark
	if readCommitted {
		bound = st.LastStableOffset
	}
	return max(0, bound-sum.start-sum.completed)
}

// lockShareForAdmin locks group name for Alter or DeleteShareGroupOffsets
// and checks it is an Empty share group, creating it when create is set
// and it does not exist (Kafka's getOrMaybeCreateShareGroup); an unused
// group of another type becomes a share group, as a heartbeat makes it.
// converted reports that g became a share group here. On failure the
// group is not locked.
func (c *Coordinator) lockShareForAdmin(name string, create bool) (g *group, created, converted bool, code *kerr.Error, msg string) {
	if name == "" {
		return nil, false, false, kerr.InvalidGroupID, "The group id must not be empty."
	}
	g, created = c.lockGroup(name, create)
	if g == nil {
		return nil, false, false, kerr.GroupIDNotFound, fmt.Sprintf("Share group %s not found.", name)
	}
	if g.s == nil {
		if !g.Unused() {
			g.Unlock()
			return nil, false, false, kerr.GroupIDNotFound, fmt.Sprintf("Group %s is not a share group.", name)
		}
		if !create {
			g.Unlock()
			return nil, false, false, kerr.GroupIDNotFound, fmt.Sprintf("Share group %s not found.", name)
		}
		g.s = newGroup(0, c.now())
		g.SetShare(g.s)
		converted = true
	}
	if !g.s.Empty() {
		g.Unlock()
		return nil, false, false, kerr.NonEmptyGroup, fmt.Sprintf("Share group %s is not empty.", name)
	}
	return g, created, converted, nil, ""
}

// beginShareAdmin starts Alter or DeleteShareGroupOffsets (api): it reads
// the topics, enters the coordinator and locks the group
// (lockShareForAdmin); done unlocks and leaves. A nil group comes with the
// code to answer the whole request with.
func (c *Coordinator) beginShareAdmin(ctx context.Context, api, name string, create bool) (
	snap Topics, g *group, created, converted bool, done func(), code *kerr.Error, msg string) {
	snap, err := c.host.Topics(ctx)
	if err != nil {
		c.log.Warn("list topics for "+api, "group", name, "err", err)
		return nil, nil, false, false, nil, kerr.CoordinatorNotAvailable, ""
	}
	if !c.host.Enter() {
		return nil, nil, false, false, nil, kerr.NotCoordinator, ""
	}
	g, created, converted, code, msg = c.lockShareForAdmin(name, create)
	if g == nil {
		c.host.Leave()
		return nil, nil, false, false, nil, code, msg
	}
	return snap, g, created, converted, func() { g.Unlock(); c.host.Leave() }, nil, ""
}

// AlterShareGroupOffsets serves AlterShareGroupOffsets (v0): each named
// partition of an Empty share group starts over at its StartOffset, its
// ranges forgotten and its state epoch bumped, or is started there if it
// had no state. The group is created when it does not exist. A group with
// members is NON_EMPTY_GROUP; an unknown topic or partition is
// UNKNOWN_TOPIC_OR_PARTITION, a negative offset INVALID_REQUEST.
func (c *Coordinator) AlterShareGroupOffsets(ctx context.Context, req *kmsg.AlterShareGroupOffsetsRequest) *kmsg.AlterShareGroupOffsetsResponse {
	resp := req.ResponseKind().(*kmsg.AlterShareGroupOffsetsResponse)
	for _, rt := range req.Topics {
		c.host.NoteSubscribed([]string{rt.Topic}) // a view, named before any member's heartbeat
	}
	// Each partition's answer, set to the group's failure if there is one.
	answer := func(code int16, msg *string) {
		resp.Topics = resp.Topics[:0]
		for _, rt := range req.Topics {
			t := kmsg.NewAlterShareGroupOffsetsResponseTopic()
			t.Topic = rt.Topic
			for _, rp := range rt.Partitions {
				p := kmsg.NewAlterShareGroupOffsetsResponseTopicPartition()
				p.Partition, p.ErrorCode, p.ErrorMessage = rp.Partition, code, msg
				t.Partitions = append(t.Partitions, p)
			}
			resp.Topics = append(resp.Topics, t)
		}
	}
	fail := func(code *kerr.Error, msg string) *kmsg.AlterShareGroupOffsetsResponse {
		resp.ErrorCode, resp.ErrorMessage = code.Code, nilIfEmpty(msg)
		answer(code.Code, nilIfEmpty(msg))
		return resp
	}
	snap, g, created, converted, done, code, msg := c.beginShareAdmin(ctx, "AlterShareGroupOffsets", req.GroupID, true)
	if g == nil {
		return fail(code, msg)
	}
	defer done()
	answer(0, nil)
	s := g.s
	cfg := c.host.Config(g.name).Partition
	nowMs := msOf(c.now())
	var woken []tp
	for i, rt := range req.Topics {
		meta, known := snap.Topic(rt.Topic)
		if known {
			resp.Topics[i].TopicID = meta.ID
		}
		for j, rp := range rt.Partitions {
			out := &resp.Topics[i].Partitions[j]
			switch {
			case !known || rp.Partition < 0 || rp.Partition >= meta.Partitions:
				out.ErrorCode = kerr.UnknownTopicOrPartition.Code
				out.ErrorMessage = strPtr(fmt.Sprintf("The topic-partition %s-%d does not exist.", rt.Topic, rp.Partition))
				continue
			case rp.StartOffset < 0:
				out.ErrorCode = kerr.InvalidRequest.Code
				out.ErrorMessage = strPtr(fmt.Sprintf("The start offset %d is negative.", rp.StartOffset))
				continue
			}
			t := tp{meta.ID, rp.Partition}
			if part := s.parts[t.id][t.p]; part != nil {
				res := part.Reset(rp.StartOffset)
				s.partRows = append(s.partRows, res.Rows...)
			} else {
				part, res := share.New(share.ID{Group: g.name, Topic: coordapi.TopicID(t.id), Partition: t.p}, cfg, rp.StartOffset, nowMs)
				if s.parts[t.id] == nil {
					s.parts[t.id] = make(map[int32]*share.Partition)
				}
				s.parts[t.id][t.p] = part
				s.partRows = append(s.partRows, res.Rows...)
			}
			delete(s.lockAt, t)
			woken = append(woken, t)
		}
	}
	if len(woken) == 0 {
		// Nothing to write: a group made a share group here is not kept.
		if converted {
			g.s = nil
			g.SetShare(nil)
		}
		if created {
			g.Remove()
		}
		return resp
	}
	if err := g.persistShareLocked(); err != nil {
		c.log.Error("persist altered share group offsets", "group", g.name, "err", err)
		// The rows stay queued for the group's next write.
		return fail(kerr.CoordinatorNotAvailable, "")
	}
	c.wait.wake(woken...)
	c.log.Info("altered share group offsets", "group", g.name, "partitions", len(woken))
	return resp
}

// DeleteShareGroupOffsets serves DeleteShareGroupOffsets (v0): an Empty
// share group's state of each named topic is dropped, so that the next
// assignment starts its partitions by share.auto.offset.reset. An unknown
// group is GROUP_ID_NOT_FOUND, one with members NON_EMPTY_GROUP; a topic
// that does not exist, or of which the group has no state, is
// UNKNOWN_TOPIC_OR_PARTITION, as in Kafka.
func (c *Coordinator) DeleteShareGroupOffsets(ctx context.Context, req *kmsg.DeleteShareGroupOffsetsRequest) *kmsg.DeleteShareGroupOffsetsResponse {
	resp := req.ResponseKind().(*kmsg.DeleteShareGroupOffsetsResponse)
	for _, rt := range req.Topics {
		c.host.NoteSubscribed([]string{rt.Topic}) // a view, named before any member's heartbeat
	}
	answer := func(code int16, msg *string) {
		resp.Topics = resp.Topics[:0]
		for _, rt := range req.Topics {
			t := kmsg.NewDeleteShareGroupOffsetsResponseTopic()
			t.Topic, t.ErrorCode, t.ErrorMessage = rt.Topic, code, msg
			resp.Topics = append(resp.Topics, t)
		}
	}
	fail := func(code *kerr.Error, msg string) *kmsg.DeleteShareGroupOffsetsResponse {
		resp.ErrorCode, resp.ErrorMessage = code.Code, nilIfEmpty(msg)
		answer(code.Code, nilIfEmpty(msg))
		return resp
	}
	snap, g, _, _, done, code, msg := c.beginShareAdmin(ctx, "DeleteShareGroupOffsets", req.GroupID, false)
	if g == nil {
		return fail(code, msg)
	}
	defer done()
	answer(0, nil)
	s := g.s
	deleted := 0
	for i, rt := range req.Topics {
		out := &resp.Topics[i]
		meta, known := snap.Topic(rt.Topic)
		if !known {
			out.ErrorCode = kerr.UnknownTopicOrPartition.Code
			out.ErrorMessage = strPtr(fmt.Sprintf("The topic %s does not exist.", rt.Topic))
			continue
		}
		out.TopicID = meta.ID
		if len(s.parts[meta.ID]) == 0 {
			out.ErrorCode = kerr.UnknownTopicOrPartition.Code
			out.ErrorMessage = strPtr("There is no offset information to delete.")
			continue
		}
		for p := range s.parts[meta.ID] {
			delete(s.lockAt, tp{meta.ID, p})
		}
		delete(s.parts, meta.ID)
		lo, hi := share.TopicSpan(g.name, meta.ID)
		s.partRows = append(s.partRows, share.Mutation{Op: share.OpDeleteRange, Key: lo, End: hi})
		deleted++
	}
	if deleted == 0 {
		return resp
	}
	if err := g.persistShareLocked(); err != nil {
		c.log.Error("persist deleted share group offsets", "group", g.name, "err", err)
		return fail(kerr.CoordinatorNotAvailable, "")
	}
	c.log.Info("deleted share group offsets", "group", g.name, "topics", deleted)
	return resp
}
