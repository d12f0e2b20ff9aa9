package sharegroups

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/groups/members"
	"github.com/floe-io/floe/groups/share"
)

// ShareGroupHeartbeat serves KIP-932's ShareGroupHeartbeat (v1): members
// join with epoch 0 and their own member id, heartbeat with their epoch
// (or the one before, when the answer that moved them on was lost), and
// leave with epoch -1. The coordinator spreads the subscribed topics'
// partitions over the members with the simple assignor; there is no
// revocation, so a member takes its target assignment at its next
// heartbeat. A partition entering the target assignment for the first
// time gets its share-partition, started by share.auto.offset.reset, in
// the heartbeat's write. A group id held by a classic or KIP-848 group is
// GROUP_ID_NOT_FOUND, as Kafka answers.
func (c *Coordinator) ShareGroupHeartbeat(ctx context.Context, cl coordapi.ClientInfo, req *kmsg.ShareGroupHeartbeatRequest) *kmsg.ShareGroupHeartbeatResponse {
	resp := req.ResponseKind().(*kmsg.ShareGroupHeartbeatResponse)
	fail := func(code *kerr.Error, msg string) *kmsg.ShareGroupHeartbeatResponse {
		resp.ErrorCode = code.Code
		if msg != "" {
			resp.ErrorMessage = &msg
		}
		return resp
	}
	if err := validateShareHeartbeat(req); err != nil {
		return fail(err.code, err.msg)
	}
	if !c.host.Enter() {
		return fail(kerr.NotCoordinator, "")
	}
	defer c.host.Leave()
	c.SubscribeCommits() // before any member of a share group can fetch
	// Views ("base/KEY") are not listed: the snapshot resolves the names.
	c.host.NoteSubscribed(req.SubscribedTopicNames)
	snap, terr := c.host.Topics(ctx)
	if terr != nil {
		c.log.Warn("list topics for a share group heartbeat", "group", req.GroupID, "err", terr)
		return fail(kerr.CoordinatorNotAvailable, "")
	}
	g, created := c.lockGroup(req.GroupID, req.MemberEpoch == 0)
	if g == nil {
		return fail(kerr.GroupIDNotFound, fmt.Sprintf("Share group %s not found.", req.GroupID))
	}
	defer g.Unlock()
	if g.s == nil {
		if !g.Unused() {
			return fail(kerr.GroupIDNotFound, fmt.Sprintf("Group %s is not a share group.", req.GroupID))
		}
		if req.MemberEpoch != 0 {
			return fail(kerr.GroupIDNotFound, fmt.Sprintf("Share group %s not found.", req.GroupID))
		}
		g.s = newGroup(0, c.now())
		g.SetShare(g.s)
	}
	resp.HeartbeatIntervalMillis = int32(c.opts.HeartbeatInterval.Milliseconds())
	herr := g.shareHeartbeatLocked(ctx, cl, req, snap, resp)
	// What the response announces is durable before it is sent, as for
	// KIP-848 groups.
	if err := g.persistShareLocked(); err != nil {
		c.log.Error("persist share group", "group", req.GroupID, "err", err)
		resp = req.ResponseKind().(*kmsg.ShareGroupHeartbeatResponse)
		resp.HeartbeatIntervalMillis = int32(c.opts.HeartbeatInterval.Milliseconds())
		return fail(kerr.CoordinatorNotAvailable, "")
	}
	if herr != nil {
		fail(herr.code, herr.msg)
	}
	if created && g.s.Empty() && !g.Persisted() {
		g.s = nil
		g.SetShare(nil)
		g.Remove()
	}
	return resp
}

// validateShareHeartbeat checks a heartbeat as Kafka's
// throwIfShareGroupHeartbeatRequestIsInvalid: v1 members always bring
// their member id.
func validateShareHeartbeat(req *kmsg.ShareGroupHeartbeatRequest) *heartbeatError {
	blank := func(s string) bool { return strings.TrimSpace(s) == "" }
	switch {
	case blank(req.MemberID):
		return invalid("MemberId can't be empty.")
	case blank(req.GroupID):
		return invalid("GroupId can't be empty.")
	case req.RackID != nil && blank(*req.RackID):
		return invalid("RackId can't be empty.")
	case req.MemberEpoch == 0 && len(req.SubscribedTopicNames) == 0:
		return invalid("SubscribedTopicNames must be set in first request.")
	case req.MemberEpoch < -1:
		return invalid("MemberEpoch is invalid.")
	}
	return nil
}

// shareHeartbeatLocked runs one heartbeat of a share group.
func (g *group) shareHeartbeatLocked(ctx context.Context, cl coordapi.ClientInfo, req *kmsg.ShareGroupHeartbeatRequest, snap Topics, resp *kmsg.ShareGroupHeartbeatResponse) *heartbeatError {
	s := g.s
	now := g.c.now()
	defer func() { g.WakeAt(s.NextDeadline()) }()
	unknown := func() *heartbeatError {
		return &heartbeatError{kerr.UnknownMemberID, fmt.Sprintf("Member %s is not a member of group %s.", req.MemberID, g.name)}
	}

	if req.MemberEpoch == -1 {
		m := s.members[req.MemberID]
		if m == nil {
			return unknown()
		}
		g.c.log.Info("share group member left", "group", g.name, "member_id", m.id)
		g.removeShareMemberLocked(m, now)
		if !s.Empty() {
			s.computeTargetLocked(snap)
			g.startSharePartitionsLocked(ctx)
		}
		resp.MemberID, resp.MemberEpoch = &m.id, -1
		return nil
	}

	m := s.members[req.MemberID]
	isNew := false
	switch {
	case m == nil && req.MemberEpoch != 0:
		return unknown()
	case m == nil:
		if max := g.c.opts.MaxGroupSize; len(s.members) >= max {
			return &heartbeatError{kerr.GroupMaxSizeReached, fmt.Sprintf("The share group has reached its maximum capacity of %d members.", max)}
		}
		m = &member{id: strings.Clone(req.MemberID), target: members.Partitions{}, assigned: members.Partitions{}}
		s.members[m.id] = m
		isNew = true
		g.c.log.Info("share group member joined", "group", g.name, "member_id", m.id)
	case req.MemberEpoch == 0:
		// A known member joining again (after FENCED_MEMBER_EPOCH, with
		// the member id it keeps for its lifetime) is re-admitted in
		// place, as floe does for KIP-848 members.
	case req.MemberEpoch > m.epoch:
		return &heartbeatError{kerr.FencedMemberEpoch, fmt.Sprintf("The share group member has a greater member epoch (%d) than the one known by the group coordinator (%d). The member must abandon all its partitions and rejoin.", req.MemberEpoch, m.epoch)}
	case req.MemberEpoch < m.epoch && req.MemberEpoch != m.prevEpoch:
		return &heartbeatError{kerr.FencedMemberEpoch, fmt.Sprintf("The share group member has a smaller member epoch (%d) than the one known by the group coordinator (%d). The member must abandon all its partitions and rejoin.", req.MemberEpoch, m.epoch)}
	}
	s.markLocked(m.id)
	m.clientID, m.clientHost = strings.Clone(cl.ID), strings.Clone(cl.Host)
	if req.RackID != nil {
		m.rackID = cloneStrPtr(req.RackID)
	}
	changed := false
	if req.SubscribedTopicNames != nil {
		if topics := members.Subscription(req.SubscribedTopicNames); !slices.Equal(topics, m.topics) {
			m.topics = topics
			changed = true
		}
	}
	if isNew || changed || s.metadataChangedLocked(snap) {
		s.epoch++
	}
	if s.epoch > s.assignmentEpoch {
		s.computeTargetLocked(snap)
	}
	g.startSharePartitionsLocked(ctx)
	m.session = now.Add(g.c.opts.SessionTimeout)

	// No revocation: the member takes its target at once.
	before := m.assigned
	if m.epoch != s.assignmentEpoch {
		m.prevEpoch, m.epoch = m.epoch, s.assignmentEpoch
		m.assigned = m.target.Clone()
	}
	resp.MemberID, resp.MemberEpoch = &m.id, m.epoch
	if req.MemberEpoch == 0 || !m.assigned.Equal(before) {
		resp.Assignment = shareHeartbeatAssignment(m.assigned)
	}
	return nil
}

// removeShareMemberLocked drops m, bumps the group epoch and releases the
// records m holds (their rows go with the group's next write).
func (g *group) removeShareMemberLocked(m *member, now time.Time) {
	s := g.s
	delete(s.members, m.id)
	s.markLocked(m.id)
	for k := range s.releases {
		if strings.HasPrefix(k, m.id+"\x00") {
			delete(s.releases, k)
		}
	}
	s.epoch++
	if len(s.members) == 0 {
		s.emptySince = now
	}
	for id, ps := range s.parts {
		for n, p := range ps {
			res := p.ReleaseMember(m.id, share.AnyBroker)
			s.countLocked(tp{id, n}, res.Stats)
			if len(res.Rows) > 0 {
				s.partRows = append(s.partRows, res.Rows...)
			}
			if res.Wake {
				g.c.wait.wake(tp{id, n})
			}
		}
	}
}

// Expire removes the members of share group e (its mutex held) whose
// session expired, from the Host's deadline loop. Their targets go to the
// others at once when the group has a topic snapshot (else at the next
// heartbeat).
func (c *Coordinator) Expire(e Entry, now time.Time) {
	g := c.open(e)
	s := g.s
	removed := false
	for _, m := range s.sortedMembersLocked() {
		if m.session.IsZero() || now.Before(m.session) {
			continue
		}
		g.c.log.Info("share group member session expired, removing it", "group", g.name, "member_id", m.id, "member_epoch", m.epoch)
		g.removeShareMemberLocked(m, now)
		removed = true
	}
	if !removed {
		return
	}
	if !s.Empty() && s.sigSnap != nil {
		s.computeTargetLocked(s.sigSnap)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		g.startSharePartitionsLocked(ctx)
		cancel()
	}
	if err := g.persistShareLocked(); err != nil {
		g.c.log.Error("persist share group", "group", g.name, "err", err)
	}
}

// ApplyConfig gives a share group's share-partitions the group's current
// configuration, after a group config change (within a call, Host.Enter).
func (c *Coordinator) ApplyConfig(group string) {
	cfg := c.host.Config(group).Partition
	g, _ := c.lockGroup(group, false)
	if g == nil {
		return
	}
	defer g.Unlock()
	if s := g.s; s != nil {
		for _, ps := range s.parts {
			for _, p := range ps {
				p.SetConfig(cfg)
			}
		}
	}
}

// startSharePartitionsLocked starts the share-partition of every partition
// in the target assignment that has none yet, at the offset
// share.auto.offset.reset names, and queues its rows for the group's next
// write. A partition whose offsets cannot be read now is tried again at
// the next heartbeat; meanwhile ShareAcquire answers its error
// (s.startErr, rebuilt here, so that a partition no longer assigned
// drops out).
func (g *group) startSharePartitionsLocked(ctx context.Context) {
	s := g.s
	s.startErr = nil
	var reset *OffsetReset
	var cfg share.Config
	nowMs := msOf(g.c.now())
	for _, m := range s.members {
		for id, ps := range m.target {
			for _, p := range ps {
				if s.parts[id][p] != nil {
					continue
				}
				if reset == nil {
					gc := g.c.host.Config(g.name)
					reset, cfg = &gc.Reset, gc.Partition
				}
				offset, err := g.c.shareStartOffset(ctx, coordapi.TopicID(id), p, *reset)
				if err != nil {
					g.c.log.Warn("start share-partition", "group", g.name, "topic_id", coordapi.TopicID(id), "partition", p, "err", err)
					if s.startErr == nil {
						s.startErr = make(map[tp]error)
					}
					s.startErr[tp{id, p}] = err // ShareAcquire answers it
					continue
				}
				part, res := share.New(share.ID{Group: g.name, Topic: coordapi.TopicID(id), Partition: p}, cfg, offset, nowMs)
				if s.parts[id] == nil {
					s.parts[id] = make(map[int32]*share.Partition)
				}
				s.parts[id][p] = part
				s.partRows = append(s.partRows, res.Rows...)
				g.c.log.Debug("started share-partition", "group", g.name, "topic_id", coordapi.TopicID(id), "partition", p, "offset", offset)
			}
		}
	}
}

// shareStartOffset resolves share.auto.offset.reset for one partition:
// its high watermark (latest), log start (earliest), or the first offset
// at or after now - d (by_duration; the high watermark when there is
// none). A view's offsets are its base partition's. Without
// Options.Partitions every partition starts at 0.
func (c *Coordinator) shareStartOffset(ctx context.Context, view coordapi.TopicID, p int32, r OffsetReset) (int64, error) {
	pr := c.opts.Partitions
	if pr == nil {
		return 0, nil
	}
	data, _, err := c.shareDataOf(ctx, topicID(view))
	if err != nil {
		return 0, err
	}
	id := coordapi.TopicID(data)
	if r.ByDuration {
		off, _, err := pr.ListOffset(ctx, id, p, c.now().Add(-r.By).UnixMilli())
		if err != nil {
			return 0, err
		}
		if off >= 0 {
			return off, nil
		}
	}
	st, err := pr.PartitionState(ctx, id, p)
	if err != nil {
		return 0, err
	}
	if r.Earliest {
		return st.LogStartOffset, nil
	}
	return st.HighWatermark, nil
}

// shareHeartbeatAssignment is ps as a ShareGroupHeartbeat response carries
// it.
func shareHeartbeatAssignment(ps members.Partitions) *kmsg.ShareGroupHeartbeatResponseAssignment {
	a := kmsg.NewShareGroupHeartbeatResponseAssignment()
	a.TopicPartitions = []kmsg.ShareGroupHeartbeatResponseAssignmentTopicPartition{}
	for _, id := range ps.SortedIDs() {
		t := kmsg.NewShareGroupHeartbeatResponseAssignmentTopicPartition()
		t.TopicID, t.Partitions = id, slices.Clone(ps[id])
		a.TopicPartitions = append(a.TopicPartitions, t)
	}
	return &a
}

// ShareGroupDescribe serves KIP-932's ShareGroupDescribe (v1): each share
// group's state (Empty or Stable), epochs, assignor ("simple") and
// members with their assignments. An unknown group, or one that is not a
// share group, is GROUP_ID_NOT_FOUND.
func (c *Coordinator) ShareGroupDescribe(ctx context.Context, req *kmsg.ShareGroupDescribeRequest) *kmsg.ShareGroupDescribeResponse {
	resp := req.ResponseKind().(*kmsg.ShareGroupDescribeResponse)
	snap, _ := c.host.Topics(ctx) // without names the assignments still carry ids
	for _, name := range req.GroupIDs {
		dg := c.describeShare(name, snap)
		if req.IncludeAuthorizedOperations && dg.ErrorCode == 0 {
			dg.AuthorizedOperations = groupAuthorizedOperations
		}
		resp.Groups = append(resp.Groups, dg)
	}
	return resp
}

// topicNames names topic ids as snap knows them: "" for one it does not
// know, and for every one when snap is nil (ShareGroupDescribe then shows
// the ids alone).
func topicNames(snap Topics) func(topicID) string {
	return func(id topicID) string {
		if snap == nil {
			return ""
		}
		name, _ := snap.TopicName(coordapi.TopicID(id))
		return name
	}
}

func (c *Coordinator) describeShare(name string, snap Topics) kmsg.ShareGroupDescribeResponseGroup {
	dg := kmsg.NewShareGroupDescribeResponseGroup()
	dg.GroupID = name
	if !c.host.Enter() {
		dg.ErrorCode = kerr.NotCoordinator.Code
		return dg
	}
	defer c.host.Leave()
	g, _ := c.lockGroup(name, false)
	if g == nil {
		dg.ErrorCode, dg.ErrorMessage = kerr.GroupIDNotFound.Code, strPtr(fmt.Sprintf("Group %s not found.", name))
		return dg
	}
	defer g.Unlock()
	s := g.s
	if s == nil {
		dg.ErrorCode, dg.ErrorMessage = kerr.GroupIDNotFound.Code, strPtr(fmt.Sprintf("Group %s is not a share group.", name))
		if g.Unused() {
			dg.ErrorMessage = strPtr(fmt.Sprintf("Group %s not found.", name))
		}
		return dg
	}
	dg.GroupState, dg.GroupEpoch, dg.AssignmentEpoch, dg.Assignor = s.State(), s.epoch, s.assignmentEpoch, assignorSimple
	for _, m := range s.sortedMembersLocked() {
		dm := kmsg.NewShareGroupDescribeResponseGroupMember()
		dm.MemberID, dm.RackID, dm.MemberEpoch = m.id, m.rackID, m.epoch
		dm.ClientID, dm.ClientHost = m.clientID, m.clientHost
		dm.SubscribedTopicNames = cloneNonNil(m.topics)
		dm.Assignment.TopicPartitions = []kmsg.ShareGroupDescribeResponseGroupMemberAssignmentTopicPartition{}
		for _, tp := range m.assigned.DescribeAssignment(topicNames(snap)).TopicPartitions {
			t := kmsg.NewShareGroupDescribeResponseGroupMemberAssignmentTopicPartition()
			t.TopicID, t.Topic, t.Partitions = tp.TopicID, tp.Topic, tp.Partitions
			dm.Assignment.TopicPartitions = append(dm.Assignment.TopicPartitions, t)
		}
		dg.Members = append(dg.Members, dm)
	}
	return dg
}
