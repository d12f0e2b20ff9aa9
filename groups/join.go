package groups

import (
	"context"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-io/floe/coordapi"
)

// JoinGroup serves a classic JoinGroup (v0-v9). It blocks while the
// rebalance holds the join: until every known member rejoined or the
// rebalance timeout passed. The error is non-nil only when ctx ended first.
func (gs *Groups) JoinGroup(ctx context.Context, c coordapi.ClientInfo, req *kmsg.JoinGroupRequest) (*kmsg.JoinGroupResponse, error) {
	resp, wait := gs.join(c, req)
	if wait != nil {
		select {
		case resp = <-wait:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	resp.Version = req.Version
	return resp, nil
}

func (gs *Groups) join(c coordapi.ClientInfo, req *kmsg.JoinGroupRequest) (*kmsg.JoinGroupResponse, <-chan *kmsg.JoinGroupResponse) {
	if req.Group == "" {
		return errorJoinResponse(req.MemberID, kerr.InvalidGroupID), nil
	}
	session := time.Duration(req.SessionTimeoutMillis) * time.Millisecond
	if session < gs.opts.MinSessionTimeout || session > gs.opts.MaxSessionTimeout {
		return errorJoinResponse(req.MemberID, kerr.InvalidSessionTimeout), nil
	}
	if !gs.enter() {
		return errorJoinResponse(req.MemberID, kerr.NotCoordinator), nil
	}
	defer gs.leave()
	g, created := gs.lockGroup(req.Group, req.MemberID == "")
	if g == nil {
		return errorJoinResponse(req.MemberID, kerr.UnknownMemberID), nil
	}
	defer g.mu.Unlock()
	if g.mu.share != nil {
		// Kafka's classicGroupJoin: a group of another type (a share
		// group, empty or not) takes no classic member.
		return errorJoinResponse(req.MemberID, kerr.InconsistentGroupProtocol), nil
	}
	if c := g.mu.consumer; c != nil {
		if !c.emptyLocked() {
			// A KIP-848 group takes no classic members (Kafka's
			// online migration is not supported).
			return errorJoinResponse(req.MemberID, kerr.InconsistentGroupProtocol), nil
		}
		// An empty consumer group becomes a classic group; its
		// committed offsets stay, its KIP-848 state goes (the group
		// record is rewritten as the classic group persists).
		b := gs.newBatch()
		b.deleteConsumer(g.name)
		if err := b.commit(); err != nil {
			gs.log.Error("drop consumer group state", "group", g.name, "err", err)
			return errorJoinResponse(req.MemberID, kerr.CoordinatorNotAvailable), nil
		}
		g.mu.consumer = nil
		g.mu.state = Empty
	}
	resp, wait := g.joinLocked(c, req)
	if created && g.unusedLocked() {
		g.removeLocked()
	}
	return resp, wait
}

// errorJoinResponse answers a JoinGroup with code.
func errorJoinResponse(memberID string, code *kerr.Error) *kmsg.JoinGroupResponse {
	resp := kmsg.NewPtrJoinGroupResponse()
	resp.MemberID = memberID
	resp.ErrorCode = code.Code
	return resp
}

// joinLocked follows Kafka's GroupMetadataManager.classicGroupJoin. It
// returns either a response now or a channel the response arrives on.
func (g *group) joinLocked(c coordapi.ClientInfo, req *kmsg.JoinGroupRequest) (*kmsg.JoinGroupResponse, <-chan *kmsg.JoinGroupResponse) {
	if !g.acceptJoiningLocked(req.MemberID) {
		if m := g.mu.members[req.MemberID]; m != nil {
			g.removeMemberLocked(m)
			g.maybeCompleteJoinLocked()
		}
		return errorJoinResponse("", kerr.GroupMaxSizeReached), nil
	}
	if req.MemberID == "" {
		if !g.supportsProtocolsLocked(req.ProtocolType, req.Protocols) {
			return errorJoinResponse("", kerr.InconsistentGroupProtocol), nil
		}
		id := newMemberID(c.ID, req.InstanceID)
		if req.InstanceID != nil {
			if old, ok := g.mu.static[*req.InstanceID]; ok {
				return g.replaceStaticLocked(old, id, c, req)
			}
			return nil, g.addMemberLocked(g.newMember(id, c, req))
		}
		if req.Version >= 4 {
			// KIP-394: a dynamic member first learns its id, and
			// only joins with it, so that a client that keeps
			// timing out cannot fill the group with ids.
			at := g.gs.now().Add(sessionOf(req))
			g.mu.pending[id] = at
			g.wakeAtLocked(at)
			return errorJoinResponse(id, kerr.MemberIDRequired), nil
		}
		return nil, g.addMemberLocked(g.newMember(id, c, req))
	}

	if !g.supportsProtocolsLocked(req.ProtocolType, req.Protocols) {
		return errorJoinResponse(req.MemberID, kerr.InconsistentGroupProtocol), nil
	}
	if _, ok := g.mu.pending[req.MemberID]; ok {
		return nil, g.addMemberLocked(g.newMember(req.MemberID, c, req))
	}
	if err := g.validateMemberLocked(req.MemberID, req.InstanceID); err != nil {
		return errorJoinResponse(req.MemberID, err), nil
	}
	m := g.mu.members[req.MemberID]
	switch g.mu.state {
	case PreparingRebalance:
		return nil, g.updateMemberLocked(m, req)
	case CompletingRebalance:
		if m.matches(req.Protocols) {
			// The member lost its JoinGroup response: send the
			// current generation again.
			return g.joinResponseLocked(m.id, m.id == g.mu.leader), nil
		}
		return nil, g.updateMemberLocked(m, req)
	case Stable:
		if m.id == g.mu.leader || !m.matches(req.Protocols) {
			// The leader rejoins to trigger a rebalance (its topics
			// changed); anyone with new metadata does too.
			return nil, g.updateMemberLocked(m, req)
		}
		return g.joinResponseLocked(m.id, false), nil
	default:
		return errorJoinResponse(req.MemberID, kerr.UnknownMemberID), nil
	}
}

// acceptJoiningLocked applies group.max.size as Kafka does.
func (g *group) acceptJoiningLocked(memberID string) bool {
	max := g.gs.opts.MaxGroupSize
	if max == 0 {
		return true
	}
	m := g.mu.members[memberID]
	switch g.mu.state {
	case PreparingRebalance:
		return (m != nil && m.joinWait != nil) || g.mu.awaitingJoin < max
	case CompletingRebalance, Stable:
		return m != nil || len(g.mu.members) < max
	default:
		return true
	}
}

func sessionOf(req *kmsg.JoinGroupRequest) time.Duration {
	return time.Duration(req.SessionTimeoutMillis) * time.Millisecond
}

// rebalanceOf is the request's rebalance timeout; v0 has none and uses the
// session timeout.
func rebalanceOf(req *kmsg.JoinGroupRequest) time.Duration {
	if req.Version == 0 || req.RebalanceTimeoutMillis < 0 {
		return sessionOf(req)
	}
	return time.Duration(req.RebalanceTimeoutMillis) * time.Millisecond
}

func (g *group) newMember(id string, c coordapi.ClientInfo, req *kmsg.JoinGroupRequest) *member {
	return &member{
		id:           id,
		instanceID:   cloneStrPtr(req.InstanceID),
		clientID:     strings.Clone(c.ID),
		clientHost:   strings.Clone(c.Host),
		protocolType: strings.Clone(req.ProtocolType),
		protocols:    cloneProtocols(req.Protocols),
		session:      sessionOf(req),
		rebalance:    rebalanceOf(req),
	}
}

// addMemberLocked adds a new member waiting in JoinGroup and rebalances.
func (g *group) addMemberLocked(m *member) <-chan *kmsg.JoinGroupResponse {
	if g.mu.state == PreparingRebalance && g.mu.initialDelay {
		g.mu.newMemberAdded = true
	}
	if m.instanceID != nil {
		g.mu.static[*m.instanceID] = m.id
	}
	if len(g.mu.members) == 0 {
		g.mu.protocolType = m.protocolType
	}
	g.mu.members[m.id] = m
	for _, p := range m.protocols {
		g.mu.protocols[p.Name]++
	}
	if g.mu.leader == "" {
		g.mu.leader = m.id
	}
	delete(g.mu.pending, m.id)
	m.joinWait = make(chan *kmsg.JoinGroupResponse, 1)
	g.mu.awaitingJoin++
	// A new member cannot heartbeat yet; it is dropped if its join is
	// held longer than this (a client that gave up and retried).
	m.isNew = true
	m.deadline = g.gs.now().Add(g.gs.opts.NewMemberJoinTimeout)
	g.wakeAtLocked(m.deadline)
	wait := m.joinWait
	g.maybePrepareRebalanceOrCompleteJoinLocked()
	return wait
}

// updateMemberLocked takes a known member's new JoinGroup and rebalances.
func (g *group) updateMemberLocked(m *member, req *kmsg.JoinGroupRequest) <-chan *kmsg.JoinGroupResponse {
	g.setProtocolsLocked(m, req)
	if m.joinWait != nil {
		// A second join of the same member: the first one's
		// connection is most likely gone; tell it to rejoin.
		g.answerJoinLocked(m, errorJoinResponse(m.id, kerr.RebalanceInProgress))
	}
	m.joinWait = make(chan *kmsg.JoinGroupResponse, 1)
	g.mu.awaitingJoin++
	wait := m.joinWait
	g.maybePrepareRebalanceOrCompleteJoinLocked()
	return wait
}

// setProtocolsLocked replaces m's protocols and timeouts with req's.
func (g *group) setProtocolsLocked(m *member, req *kmsg.JoinGroupRequest) {
	for _, p := range m.protocols {
		g.mu.protocols[p.Name]--
	}
	m.protocols = cloneProtocols(req.Protocols)
	for _, p := range m.protocols {
		g.mu.protocols[p.Name]++
	}
	m.session = sessionOf(req)
	m.rebalance = rebalanceOf(req)
}

// replaceStaticLocked handles a static member that joins again with an
// unknown member id (it restarted): the old member id is fenced and
// replaced. In a Stable group whose selected protocol stays the same, the
// new member gets the old one's assignment without a rebalance (KIP-345);
// a restarted leader is told to skip the assignment (KIP-814).
func (g *group) replaceStaticLocked(oldID, newID string, c coordapi.ClientInfo, req *kmsg.JoinGroupRequest) (*kmsg.JoinGroupResponse, <-chan *kmsg.JoinGroupResponse) {
	old := g.mu.members[oldID]
	fenced := errorJoinResponse(oldID, kerr.FencedInstanceID)
	g.answerJoinLocked(old, fenced)
	g.answerSyncLocked(old, &kmsg.SyncGroupResponse{ErrorCode: kerr.FencedInstanceID.Code})

	m := &member{
		id:           newID,
		instanceID:   old.instanceID,
		clientID:     strings.Clone(c.ID),
		clientHost:   strings.Clone(c.Host),
		protocolType: old.protocolType,
		protocols:    old.protocols,
		session:      old.session,
		rebalance:    old.rebalance,
		assignment:   old.assignment,
	}
	delete(g.mu.members, oldID)
	delete(g.mu.pendingSync, oldID)
	g.mu.members[newID] = m
	g.mu.static[*m.instanceID] = newID
	if g.mu.leader == oldID {
		g.mu.leader = newID
	}
	m.deadline = g.gs.now().Add(m.session)
	g.wakeAtLocked(m.deadline)

	g.setProtocolsLocked(m, req)
	m.joinWait = make(chan *kmsg.JoinGroupResponse, 1)
	g.mu.awaitingJoin++
	wait := m.joinWait
	switch g.mu.state {
	case Stable:
		if g.mu.protocol == g.selectProtocolLocked() {
			g.gs.log.Info("static member rejoined without a rebalance", "group", g.name, "instance_id", *m.instanceID, "member_id", newID, "old_member_id", oldID)
			resp := g.joinResponseLocked(newID, newID == g.mu.leader)
			resp.SkipAssignment = newID == g.mu.leader
			g.persistLocked() // the new member id replaces the old one
			g.answerJoinLocked(m, resp)
			return nil, wait
		}
		g.prepareRebalanceLocked()
	case CompletingRebalance:
		// The leader may already be assigning to the old member id.
		g.prepareRebalanceLocked()
	default:
		g.maybeCompleteJoinLocked()
	}
	return nil, wait
}

// joinResponseLocked is the JoinGroup answer of the current generation for
// memberID; the leader gets every member's metadata.
func (g *group) joinResponseLocked(memberID string, withMembers bool) *kmsg.JoinGroupResponse {
	resp := kmsg.NewPtrJoinGroupResponse()
	resp.Generation = g.mu.generation
	resp.ProtocolType = nilIfEmpty(g.mu.protocolType)
	resp.Protocol = nilIfEmpty(g.mu.protocol)
	resp.LeaderID = g.mu.leader
	resp.MemberID = memberID
	if withMembers {
		for _, m := range g.sortedMembersLocked() {
			rm := kmsg.NewJoinGroupResponseMember()
			rm.MemberID = m.id
			rm.InstanceID = m.instanceID
			rm.ProtocolMetadata = m.metadata(g.mu.protocol)
			resp.Members = append(resp.Members, rm)
		}
	}
	return resp
}

// answerJoinLocked answers m's held JoinGroup, if any.
func (g *group) answerJoinLocked(m *member, resp *kmsg.JoinGroupResponse) {
	if m.joinWait == nil {
		return
	}
	m.joinWait <- resp
	m.joinWait = nil
	g.mu.awaitingJoin--
}

// answerSyncLocked answers m's held SyncGroup, if any.
func (g *group) answerSyncLocked(m *member, resp *kmsg.SyncGroupResponse) {
	if m.syncWait == nil {
		return
	}
	m.syncWait <- resp
	m.syncWait = nil
}

// maybePrepareRebalanceOrCompleteJoinLocked starts a rebalance, or, when
// one is preparing, completes its join phase if everyone is in.
func (g *group) maybePrepareRebalanceOrCompleteJoinLocked() {
	switch g.mu.state {
	case Stable, CompletingRebalance, Empty:
		g.prepareRebalanceLocked()
	default:
		g.maybeCompleteJoinLocked()
	}
}

// maybeCompleteJoinLocked completes the join phase when every member is in
// (and the initial delay of a new group is not running).
func (g *group) maybeCompleteJoinLocked() {
	if g.mu.state == PreparingRebalance && g.allJoinedLocked() && !g.mu.initialDelay {
		g.completeJoinLocked()
	}
}

// prepareRebalanceLocked moves the group to PreparingRebalance: members
// waiting in SyncGroup are told REBALANCE_IN_PROGRESS and rejoin.
func (g *group) prepareRebalanceLocked() {
	if g.mu.state == CompletingRebalance {
		g.resetAssignmentsLocked(kerr.RebalanceInProgress)
	}
	g.mu.syncDeadline = time.Time{}
	g.mu.pendingSync = nil
	initial := g.mu.state == Empty
	g.setStateLocked(PreparingRebalance)
	g.gs.log.Debug("preparing rebalance", "group", g.name, "generation", g.mu.generation, "members", len(g.mu.members))
	if initial && g.gs.opts.InitialRebalanceDelay > 0 {
		d := g.gs.opts.InitialRebalanceDelay
		g.mu.initialDelay = true
		g.mu.newMemberAdded = false
		g.mu.initialCur = d
		g.mu.initialRemaining = max(g.rebalanceTimeoutLocked()-d, 0)
		g.mu.joinDeadline = g.gs.now().Add(d)
		g.wakeAtLocked(g.mu.joinDeadline)
		return
	}
	if g.allJoinedLocked() {
		g.completeJoinLocked()
		return
	}
	g.mu.joinDeadline = g.gs.now().Add(g.rebalanceTimeoutLocked())
	g.wakeAtLocked(g.mu.joinDeadline)
}

// joinDeadlineLocked runs when the join phase's timer fires.
func (g *group) joinDeadlineLocked() {
	g.mu.joinDeadline = time.Time{}
	if g.mu.state != PreparingRebalance {
		return
	}
	if g.mu.initialDelay && g.mu.newMemberAdded && g.mu.initialRemaining > 0 {
		// Members keep arriving: wait some more, within the
		// rebalance timeout.
		g.mu.newMemberAdded = false
		d := min(g.gs.opts.InitialRebalanceDelay, g.mu.initialRemaining)
		g.mu.initialRemaining = max(g.mu.initialRemaining-g.mu.initialCur, 0)
		g.mu.initialCur = d
		g.mu.joinDeadline = g.gs.now().Add(d)
		g.wakeAtLocked(g.mu.joinDeadline)
		return
	}
	g.completeJoinLocked()
}

// completeJoinLocked ends the join phase: dynamic members that did not
// rejoin are dropped, the next generation starts, every waiting member gets
// its JoinGroup response (the leader with the members' metadata), and the
// group waits for the leader's SyncGroup.
func (g *group) completeJoinLocked() {
	g.mu.joinDeadline = time.Time{}
	g.mu.initialDelay = false
	for _, m := range g.sortedMembersLocked() {
		if m.joinWait == nil && m.instanceID == nil {
			g.gs.log.Info("member did not rejoin in time, removing it", "group", g.name, "member_id", m.id)
			g.removeMemberLocked(m)
		}
	}
	if len(g.mu.members) > 0 && !g.electJoinedLeaderLocked() {
		// Only static members that have not rejoined remain: wait
		// for them (or for their sessions to expire).
		g.mu.joinDeadline = g.gs.now().Add(g.rebalanceTimeoutLocked())
		g.wakeAtLocked(g.mu.joinDeadline)
		return
	}
	g.mu.generation++
	if g.mu.generation < 0 {
		g.mu.generation = 1
	}
	g.mu.pendingSync = nil
	if len(g.mu.members) == 0 {
		g.mu.protocol = ""
		g.setStateLocked(Empty)
		g.computeSubscribedLocked()
		g.persistLocked()
		g.gs.log.Info("group is empty", "group", g.name, "generation", g.mu.generation)
		return
	}
	g.mu.protocol = g.selectProtocolLocked()
	g.setStateLocked(CompletingRebalance)
	g.computeSubscribedLocked()
	g.persistLocked()
	g.gs.log.Info("rebalance: join phase complete", "group", g.name, "generation", g.mu.generation,
		"members", len(g.mu.members), "leader", g.mu.leader, "protocol", g.mu.protocol)
	now := g.gs.now()
	g.mu.pendingSync = make(map[string]struct{}, len(g.mu.members))
	for _, m := range g.sortedMembersLocked() {
		g.answerJoinLocked(m, g.joinResponseLocked(m.id, m.id == g.mu.leader))
		m.isNew = false
		m.deadline = now.Add(m.session)
		g.wakeAtLocked(m.deadline)
		g.mu.pendingSync[m.id] = struct{}{}
	}
	g.mu.syncDeadline = now.Add(g.rebalanceTimeoutLocked())
	g.wakeAtLocked(g.mu.syncDeadline)
}

// electJoinedLeaderLocked keeps the leader if it rejoined, else makes a
// rejoined member the leader; false when nobody rejoined.
func (g *group) electJoinedLeaderLocked() bool {
	if l := g.mu.members[g.mu.leader]; l != nil && l.joinWait != nil {
		return true
	}
	for _, m := range g.sortedMembersLocked() {
		if m.joinWait != nil {
			g.mu.leader = m.id
			return true
		}
	}
	return false
}

// removeMemberLocked drops m from the group without rebalancing; a held
// JoinGroup or SyncGroup of m is answered UNKNOWN_MEMBER_ID.
func (g *group) removeMemberLocked(m *member) {
	g.answerJoinLocked(m, errorJoinResponse("", kerr.UnknownMemberID))
	g.answerSyncLocked(m, &kmsg.SyncGroupResponse{ErrorCode: kerr.UnknownMemberID.Code})
	for _, p := range m.protocols {
		if g.mu.protocols[p.Name]--; g.mu.protocols[p.Name] <= 0 {
			delete(g.mu.protocols, p.Name)
		}
	}
	delete(g.mu.members, m.id)
	if m.instanceID != nil && g.mu.static[*m.instanceID] == m.id {
		delete(g.mu.static, *m.instanceID)
	}
	delete(g.mu.pendingSync, m.id)
	if g.mu.leader == m.id {
		g.mu.leader = ""
		if ms := g.sortedMembersLocked(); len(ms) > 0 {
			g.mu.leader = ms[0].id
		}
	}
}

// removeMemberAndUpdateLocked drops m (its session expired) and moves the
// group on, as Kafka's removeMemberAndUpdateClassicGroup.
func (g *group) removeMemberAndUpdateLocked(m *member) {
	g.removeMemberLocked(m)
	switch g.mu.state {
	case Stable, CompletingRebalance:
		g.maybePrepareRebalanceOrCompleteJoinLocked()
	case PreparingRebalance:
		if g.allJoinedLocked() {
			g.completeJoinLocked()
		}
	}
}
