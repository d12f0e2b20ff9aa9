package groups

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/groups/members"
)

// ConsumerGroupHeartbeat serves KIP-848's ConsumerGroupHeartbeat (v0-v1):
// members join (epoch 0), heartbeat with their epoch and what they own,
// and leave (epoch -1, or -2 for a static member that comes back); the
// coordinator computes the assignment (uniform or range) and hands it out
// revocations first. v1 members bring their own member id and may
// subscribe by regex (RE2 syntax, matched against whole topic names).
func (gs *Groups) ConsumerGroupHeartbeat(ctx context.Context, c coordapi.ClientInfo, req *kmsg.ConsumerGroupHeartbeatRequest) *kmsg.ConsumerGroupHeartbeatResponse {
	resp := req.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
	resp.HeartbeatIntervalMillis = int32(gs.opts.ConsumerHeartbeatInterval.Milliseconds())
	fail := func(code *kerr.Error, msg string) *kmsg.ConsumerGroupHeartbeatResponse {
		resp.ErrorCode = code.Code
		if msg != "" {
			resp.ErrorMessage = &msg
		}
		return resp
	}
	re, err := validateConsumerHeartbeat(req)
	if err != nil {
		return fail(err.code, err.msg)
	}
	if !gs.enter() {
		return fail(kerr.NotCoordinator, "")
	}
	defer gs.leave()
	gs.noteSubscribed(req.SubscribedTopicNames)
	snap, terr := gs.topics(ctx)
	if terr != nil {
		gs.log.Warn("list topics for a consumer group heartbeat", "group", req.Group, "err", terr)
		return fail(kerr.CoordinatorNotAvailable, "")
	}
	g, created := gs.lockGroup(req.Group, req.MemberEpoch == 0)
	if g == nil {
		return fail(kerr.GroupIDNotFound, fmt.Sprintf("Group %s not found.", req.Group))
	}
	defer g.mu.Unlock()
	if g.mu.share != nil {
		return fail(kerr.GroupIDNotFound, fmt.Sprintf("Group %s is not a consumer group.", req.Group))
	}
	if g.mu.consumer == nil {
		if len(g.mu.members) > 0 || len(g.mu.pending) > 0 {
			return fail(kerr.GroupIDNotFound, fmt.Sprintf("Group %s is not a consumer group.", req.Group))
		}
		// An empty classic group (or a new one) becomes a consumer
		// group; its committed offsets stay.
		g.mu.consumer = newConsumerGroup(0, gs.now())
		g.mu.state = Empty
	}
	herr := g.consumerHeartbeatLocked(c, req, re, snap, resp)
	// What the response announces (an epoch, an assignment) is durable
	// before it is sent; on a failed write the member hears nothing new
	// and retries (the state written last time stays consistent).
	if err := g.persistConsumerLocked(); err != nil {
		gs.log.Error("persist consumer group", "group", req.Group, "err", err)
		resp = req.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
		resp.HeartbeatIntervalMillis = int32(gs.opts.ConsumerHeartbeatInterval.Milliseconds())
		return fail(kerr.CoordinatorNotAvailable, "")
	}
	if herr != nil {
		fail(herr.code, herr.msg)
	}
	if created && g.mu.consumer.emptyLocked() && len(g.mu.offsets) == 0 && !g.mu.persisted {
		g.removeLocked()
	}
	return resp
}

// heartbeatError is a Kafka error with the message Kafka puts with it.
type heartbeatError struct {
	code *kerr.Error
	msg  string
}

func invalid(format string, args ...any) *heartbeatError {
	return &heartbeatError{kerr.InvalidRequest, fmt.Sprintf(format, args...)}
}

// validateConsumerHeartbeat checks a heartbeat as Kafka's
// throwIfConsumerGroupHeartbeatRequestIsInvalid, and compiles its regex.
func validateConsumerHeartbeat(req *kmsg.ConsumerGroupHeartbeatRequest) (*regexp.Regexp, *heartbeatError) {
	switch {
	case req.Group == "":
		return nil, invalid("GroupId can't be empty.")
	case req.InstanceID != nil && *req.InstanceID == "":
		return nil, invalid("InstanceId can't be empty.")
	case req.RackID != nil && *req.RackID == "":
		return nil, invalid("RackId can't be empty.")
	case req.MemberID == "" && (req.Version >= 1 || req.MemberEpoch != 0):
		return nil, invalid("MemberId can't be empty.")
	}
	switch {
	case req.MemberEpoch == 0:
		switch {
		case req.RebalanceTimeoutMillis == -1:
			return nil, invalid("RebalanceTimeoutMs must be provided in first request.")
		case req.Topics == nil || len(req.Topics) > 0:
			return nil, invalid("TopicPartitions must be empty when (re-)joining.")
		case req.SubscribedTopicNames == nil && req.SubscribedTopicRegex == nil:
			return nil, invalid("Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining.")
		}
	case req.MemberEpoch == staticLeftEpoch:
		if req.InstanceID == nil {
			return nil, invalid("InstanceId can't be null.")
		}
	case req.MemberEpoch < staticLeftEpoch:
		return nil, invalid("MemberEpoch is invalid.")
	}
	if req.ServerAssignor != nil && !validAssignor(*req.ServerAssignor) {
		return nil, &heartbeatError{kerr.UnsupportedAssignor, fmt.Sprintf("ServerAssignor %s is not supported. Supported assignors: %s, %s.", *req.ServerAssignor, assignorUniform, assignorRange)}
	}
	if req.SubscribedTopicRegex == nil || *req.SubscribedTopicRegex == "" {
		return nil, nil
	}
	re, err := compileSubscription(*req.SubscribedTopicRegex)
	if err != nil {
		return nil, &heartbeatError{kerr.InvalidRegularExpression, fmt.Sprintf("SubscribedTopicRegex `%s` is not a valid regular expression: %v.", *req.SubscribedTopicRegex, err)}
	}
	return re, nil
}

// consumerHeartbeatLocked runs one heartbeat of a KIP-848 group.
func (g *group) consumerHeartbeatLocked(cl coordapi.ClientInfo, req *kmsg.ConsumerGroupHeartbeatRequest, re *regexp.Regexp, snap *topicSnapshot, resp *kmsg.ConsumerGroupHeartbeatResponse) *heartbeatError {
	c := g.mu.consumer
	now := g.gs.now()
	defer func() {
		if c.epoch > c.assignmentEpoch {
			c.computeTargetLocked(snap)
		}
		g.wakeAtLocked(c.nextDeadlineLocked())
	}()

	switch req.MemberEpoch {
	case -1:
		m, err := c.leavingMemberLocked(req)
		if err != nil {
			return err
		}
		g.gs.log.Info("consumer group member left", "group", g.name, "member_id", m.id)
		c.removeMemberLocked(m, now)
		c.epoch++
		resp.MemberID, resp.MemberEpoch = &m.id, -1
		return nil
	case staticLeftEpoch:
		m, err := c.leavingMemberLocked(req)
		if err != nil {
			return err
		}
		// The static member is away (a restart): its assigned
		// partitions stay reserved until it is back or its session
		// expires; what it was revoking is free now.
		g.gs.log.Info("static consumer group member left temporarily", "group", g.name, "member_id", m.id, "instance_id", *m.instanceID)
		m.prevEpoch, m.epoch = m.epoch, staticLeftEpoch
		m.state = memberStable
		m.revokeBy = time.Time{}
		c.setAssignmentLocked(m, m.assigned, members.Partitions{}, m.epoch)
		resp.MemberID, resp.MemberEpoch = &m.id, staticLeftEpoch
		return nil
	}

	var (
		m       *consumerMember
		isNew   bool
		changed bool
		err     *heartbeatError
	)
	if req.MemberEpoch == 0 {
		id := req.MemberID
		if id == "" {
			id = kafkaUUID() // v0: the coordinator names the member
		}
		m, isNew, err = g.consumerJoinLocked(id, req)
	} else {
		m, err = c.heartbeatingMemberLocked(req)
	}
	if err != nil {
		return err
	}
	c.markLocked(m.id) // its record is compared with the last write

	m.clientID, m.clientHost = strings.Clone(cl.ID), strings.Clone(cl.Host)
	if req.RackID != nil {
		m.rackID = cloneStrPtr(req.RackID)
	}
	if req.RebalanceTimeoutMillis >= 0 {
		m.rebalance = time.Duration(req.RebalanceTimeoutMillis) * time.Millisecond
	}
	if req.ServerAssignor != nil && *req.ServerAssignor != m.assignor {
		m.assignor = strings.Clone(*req.ServerAssignor)
		changed = true
	}
	if req.SubscribedTopicNames != nil {
		if topics := members.Subscription(req.SubscribedTopicNames); !slices.Equal(topics, m.topics) {
			m.topics = topics
			changed = true
		}
	}
	if req.SubscribedTopicRegex != nil && *req.SubscribedTopicRegex != m.regex {
		m.regex, m.re = strings.Clone(*req.SubscribedTopicRegex), re
		changed = true
	}
	if isNew || changed || c.metadataChangedLocked(snap) {
		c.epoch++
	}
	if c.epoch > c.assignmentEpoch {
		c.computeTargetLocked(snap)
	}
	m.session = now.Add(g.gs.opts.ConsumerSessionTimeout)

	before := m.assigned
	var owned members.Partitions
	if req.Topics != nil {
		owned = ownedPartitions(req.Topics)
	}
	c.reconcileLocked(m, owned, now)

	resp.MemberID, resp.MemberEpoch = &m.id, m.epoch
	full := req.RebalanceTimeoutMillis != -1 && (req.SubscribedTopicNames != nil || req.SubscribedTopicRegex != nil) && req.Topics != nil
	if req.MemberEpoch == 0 || full || !m.assigned.Equal(before) {
		resp.Assignment = heartbeatAssignment(m.assigned)
	}
	return nil
}

// consumerJoinLocked finds or creates the member joining with epoch 0. A
// static member coming back under a new member id takes over its old
// assignment, if the old one left (epoch -2); while the old one is active
// the instance id is UNRELEASED_INSTANCE_ID. A known member joining again
// (after FENCED_MEMBER_EPOCH) is re-admitted in place.
func (g *group) consumerJoinLocked(id string, req *kmsg.ConsumerGroupHeartbeatRequest) (*consumerMember, bool, *heartbeatError) {
	c := g.mu.consumer
	var predecessor *consumerMember
	if inst := req.InstanceID; inst != nil {
		if oldID, ok := c.static[*inst]; ok && oldID != id {
			if old := c.members[oldID]; old != nil {
				if old.epoch != staticLeftEpoch {
					return nil, false, &heartbeatError{kerr.UnreleasedInstanceID, fmt.Sprintf("Static member %s with instance id %s cannot join the group because the instance id is owned by member %s.", id, *inst, oldID)}
				}
				predecessor = old
			}
		}
	}
	if m := c.members[id]; m != nil {
		if m.epoch == staticLeftEpoch {
			m.epoch, m.state = 0, memberStable
		}
		return m, false, nil
	}
	if max := g.gs.opts.MaxGroupSize; max > 0 && predecessor == nil && len(c.members) >= max {
		return nil, false, &heartbeatError{kerr.GroupMaxSizeReached, fmt.Sprintf("The consumer group has reached its maximum capacity of %d members.", max)}
	}
	m := &consumerMember{id: strings.Clone(id), instanceID: cloneStrPtr(req.InstanceID), state: memberStable,
		target: members.Partitions{}, assigned: members.Partitions{}, revoking: members.Partitions{}}
	if predecessor != nil {
		g.gs.log.Info("static consumer group member replaced", "group", g.name, "instance_id", *req.InstanceID, "member_id", id, "old_member_id", predecessor.id)
		c.removeMemberLocked(predecessor, g.gs.now())
		m.topics, m.regex, m.re, m.assignor = predecessor.topics, predecessor.regex, predecessor.re, predecessor.assignor
		m.target = predecessor.target.Clone()
		c.setAssignmentLocked(m, predecessor.assigned.Clone(), members.Partitions{}, c.assignmentEpoch)
	} else {
		g.gs.log.Info("consumer group member joined", "group", g.name, "member_id", id)
	}
	c.members[m.id] = m
	if m.instanceID != nil {
		c.static[*m.instanceID] = m.id
	}
	return m, predecessor == nil, nil
}

// heartbeatingMemberLocked finds the member of a regular heartbeat and
// fences a wrong epoch: a member may be one epoch behind only when the
// response that moved it on was lost and it owns no more than it is
// assigned.
func (c *consumerGroup) heartbeatingMemberLocked(req *kmsg.ConsumerGroupHeartbeatRequest) (*consumerMember, *heartbeatError) {
	if inst := req.InstanceID; inst != nil {
		owner, ok := c.static[*inst]
		switch {
		case !ok:
			return nil, &heartbeatError{kerr.UnknownMemberID, fmt.Sprintf("Instance id %s is unknown.", *inst)}
		case owner != req.MemberID:
			return nil, &heartbeatError{kerr.FencedInstanceID, fmt.Sprintf("Static member %s with instance id %s was fenced by member %s.", req.MemberID, *inst, owner)}
		}
	}
	m := c.members[req.MemberID]
	if m == nil {
		return nil, &heartbeatError{kerr.UnknownMemberID, fmt.Sprintf("Member %s is not a member of the group.", req.MemberID)}
	}
	fenced := func() *heartbeatError {
		return &heartbeatError{kerr.FencedMemberEpoch, fmt.Sprintf("The consumer group member has a member epoch (%d) other than the one known by the group coordinator (%d). The member must abandon all its partitions and rejoin.", req.MemberEpoch, m.epoch)}
	}
	switch {
	case req.MemberEpoch > m.epoch:
		return nil, fenced()
	case req.MemberEpoch < m.epoch:
		if req.MemberEpoch != m.prevEpoch || req.Topics == nil || !ownedPartitions(req.Topics).SubsetOf(m.assigned) {
			return nil, fenced()
		}
	}
	return m, nil
}

// leavingMemberLocked finds the member leaving with epoch -1 or -2.
func (c *consumerGroup) leavingMemberLocked(req *kmsg.ConsumerGroupHeartbeatRequest) (*consumerMember, *heartbeatError) {
	if inst := req.InstanceID; inst != nil {
		owner, ok := c.static[*inst]
		switch {
		case !ok:
			return nil, &heartbeatError{kerr.UnknownMemberID, fmt.Sprintf("Instance id %s is unknown.", *inst)}
		case owner != req.MemberID:
			return nil, &heartbeatError{kerr.FencedInstanceID, fmt.Sprintf("Static member %s with instance id %s was fenced by member %s.", req.MemberID, *inst, owner)}
		}
	}
	m := c.members[req.MemberID]
	if m == nil {
		return nil, &heartbeatError{kerr.UnknownMemberID, fmt.Sprintf("Member %s is not a member of the group.", req.MemberID)}
	}
	return m, nil
}

// kafkaUUID is a random id in Kafka's Uuid.toString form (22 characters
// of unpadded URL-safe base64).
func kafkaUUID() string {
	var u [16]byte
	rand.Read(u[:])
	return base64.RawURLEncoding.EncodeToString(u[:])
}

// ConsumerGroupDescribe serves KIP-848's ConsumerGroupDescribe (v0-v1). A
// classic or unknown group is GROUP_ID_NOT_FOUND.
func (gs *Groups) ConsumerGroupDescribe(ctx context.Context, req *kmsg.ConsumerGroupDescribeRequest) *kmsg.ConsumerGroupDescribeResponse {
	resp := req.ResponseKind().(*kmsg.ConsumerGroupDescribeResponse)
	snap, _ := gs.topics(ctx) // without names the assignments still carry ids
	for _, name := range req.Groups {
		dg := gs.describeConsumer(name, snap)
		if req.IncludeAuthorizedOperations && dg.ErrorCode == 0 {
			dg.AuthorizedOperations = groupAuthorizedOperations
		}
		resp.Groups = append(resp.Groups, dg)
	}
	return resp
}

func (gs *Groups) describeConsumer(name string, snap *topicSnapshot) kmsg.ConsumerGroupDescribeResponseGroup {
	dg := kmsg.NewConsumerGroupDescribeResponseGroup()
	dg.Group = name
	g, release, code, msg := gs.lockForDescribe(name)
	if g == nil {
		dg.ErrorCode, dg.ErrorMessage = code, msg
		return dg
	}
	defer release()
	c := g.mu.consumer
	if c == nil {
		dg.ErrorCode, dg.ErrorMessage = kerr.GroupIDNotFound.Code, strPtr(fmt.Sprintf("Group %s is not a consumer group.", name))
		return dg
	}
	dg.State, dg.Epoch, dg.AssignmentEpoch, dg.AssignorName = c.stateLocked(), c.epoch, c.assignmentEpoch, c.assignor
	for _, m := range c.sortedMembersLocked() {
		dm := kmsg.NewConsumerGroupDescribeResponseGroupMember()
		dm.MemberID, dm.InstanceID, dm.RackID, dm.MemberEpoch = m.id, m.instanceID, m.rackID, m.epoch
		dm.ClientID, dm.ClientHost = m.clientID, m.clientHost
		dm.SubscribedTopics = cloneNonNil(m.topics)
		if m.regex != "" {
			dm.SubscribedTopicRegex = strPtr(m.regex)
		}
		dm.Assignment = m.assigned.DescribeAssignment(snap.topicName)
		dm.TargetAssignment = m.target.DescribeAssignment(snap.topicName)
		dm.MemberType = 1 // consumer: joined with ConsumerGroupHeartbeat
		dg.Members = append(dg.Members, dm)
	}
	return dg
}
