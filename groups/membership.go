package groups

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Heartbeat serves a classic Heartbeat (v0-v4): it keeps the member's
// session alive and tells it REBALANCE_IN_PROGRESS while the group prepares
// a rebalance.
func (gs *Groups) Heartbeat(_ context.Context, req *kmsg.HeartbeatRequest) *kmsg.HeartbeatResponse {
	resp := req.ResponseKind().(*kmsg.HeartbeatResponse)
	resp.ErrorCode = gs.heartbeat(req)
	return resp
}

func (gs *Groups) heartbeat(req *kmsg.HeartbeatRequest) int16 {
	if req.Group == "" {
		return kerr.InvalidGroupID.Code
	}
	if !gs.enter() {
		return kerr.NotCoordinator.Code
	}
	defer gs.leave()
	g, _ := gs.lockGroup(req.Group, false)
	if g == nil {
		return kerr.UnknownMemberID.Code
	}
	defer g.mu.Unlock()
	if g.mu.consumer != nil {
		return kerr.UnknownMemberID.Code // no classic members in a KIP-848 group
	}
	if err := g.validateMemberLocked(req.MemberID, req.InstanceID); err != nil {
		return err.Code
	}
	if req.Generation != g.mu.generation {
		return kerr.IllegalGeneration.Code
	}
	m := g.mu.members[req.MemberID]
	switch g.mu.state {
	case PreparingRebalance:
		g.touchLocked(m)
		return kerr.RebalanceInProgress.Code
	case CompletingRebalance, Stable:
		g.touchLocked(m)
		return 0
	default:
		return kerr.UnknownMemberID.Code
	}
}

// touchLocked restarts m's session.
func (g *group) touchLocked(m *member) {
	m.deadline = g.gs.now().Add(m.session)
	g.wakeAtLocked(m.deadline)
}

// LeaveGroup serves a classic LeaveGroup (v0-v5; v3+ leaves a batch of
// members, static ones possibly by instance id alone).
func (gs *Groups) LeaveGroup(_ context.Context, req *kmsg.LeaveGroupRequest) *kmsg.LeaveGroupResponse {
	resp := req.ResponseKind().(*kmsg.LeaveGroupResponse)
	members := req.Members
	if req.Version < 3 {
		members = []kmsg.LeaveGroupRequestMember{{MemberID: req.MemberID}}
	}
	code, results := gs.leaveGroup(req.Group, members)
	resp.ErrorCode = code
	if req.Version < 3 {
		if code == 0 && len(results) > 0 {
			resp.ErrorCode = results[0].ErrorCode
		}
		return resp
	}
	resp.Members = results
	return resp
}

func (gs *Groups) leaveGroup(name string, members []kmsg.LeaveGroupRequestMember) (int16, []kmsg.LeaveGroupResponseMember) {
	if name == "" {
		return kerr.InvalidGroupID.Code, nil
	}
	if !gs.enter() {
		return kerr.NotCoordinator.Code, nil
	}
	defer gs.leave()
	results := make([]kmsg.LeaveGroupResponseMember, len(members))
	for i, rm := range members {
		results[i] = kmsg.NewLeaveGroupResponseMember()
		results[i].MemberID = rm.MemberID
		results[i].InstanceID = rm.InstanceID
	}
	g, _ := gs.lockGroup(name, false)
	if g == nil {
		for i := range results {
			results[i].ErrorCode = kerr.UnknownMemberID.Code
		}
		return 0, results
	}
	defer g.mu.Unlock()
	if g.mu.consumer != nil {
		for i := range results {
			results[i].ErrorCode = kerr.UnknownMemberID.Code
		}
		return 0, results
	}
	left := false
	for i, rm := range members {
		r := &results[i]
		switch {
		case rm.MemberID == "":
			// An admin removes a static member by instance id.
			id, ok := "", false
			if rm.InstanceID != nil {
				id, ok = g.mu.static[*rm.InstanceID]
			}
			if !ok {
				r.ErrorCode = kerr.UnknownMemberID.Code
				continue
			}
			g.leaveMemberLocked(g.mu.members[id], rm.Reason)
			left = true
		case g.isPendingLocked(rm.MemberID):
			delete(g.mu.pending, rm.MemberID)
			left = true
		default:
			if err := g.validateMemberLocked(rm.MemberID, rm.InstanceID); err != nil {
				r.ErrorCode = err.Code
				continue
			}
			g.leaveMemberLocked(g.mu.members[rm.MemberID], rm.Reason)
			left = true
		}
	}
	if left {
		switch g.mu.state {
		case Stable, CompletingRebalance:
			g.maybePrepareRebalanceOrCompleteJoinLocked()
		case PreparingRebalance:
			g.maybeCompleteJoinLocked()
		}
	}
	return 0, results
}

func (g *group) isPendingLocked(memberID string) bool {
	_, ok := g.mu.pending[memberID]
	return ok
}

func (g *group) leaveMemberLocked(m *member, reason *string) {
	why := "not provided"
	if reason != nil {
		why = *reason
	}
	g.gs.log.Info("member left the group", "group", g.name, "member_id", m.id, "reason", why)
	g.removeMemberLocked(m)
}

// expireLocked runs the classic group's deadlines that passed by now:
// pending member ids and sessions expire, a join phase ends at its
// rebalance timeout, members that got a JoinGroup response but never sent
// SyncGroup are removed.
func (g *group) expireLocked(now time.Time) {
	expiredPending := false
	for id, at := range g.mu.pending {
		if !now.Before(at) {
			delete(g.mu.pending, id)
			expiredPending = true
		}
	}
	if expiredPending && g.mu.state == PreparingRebalance && g.allJoinedLocked() {
		g.completeJoinLocked()
	}

	for _, m := range g.sortedMembersLocked() {
		if m.deadline.IsZero() || now.Before(m.deadline) || g.mu.members[m.id] != m {
			continue
		}
		if !m.isNew && (m.joinWait != nil || m.syncWait != nil) {
			// Waiting in a rebalance counts as alive; its
			// session restarts with the answer.
			m.deadline = time.Time{}
			continue
		}
		g.gs.log.Info("member session expired, removing it", "group", g.name, "member_id", m.id, "generation", g.mu.generation, "new", m.isNew)
		g.removeMemberAndUpdateLocked(m)
	}

	if !g.mu.joinDeadline.IsZero() && !now.Before(g.mu.joinDeadline) {
		g.joinDeadlineLocked()
	}

	if !g.mu.syncDeadline.IsZero() && !now.Before(g.mu.syncDeadline) {
		g.mu.syncDeadline = time.Time{}
		if (g.mu.state == CompletingRebalance || g.mu.state == Stable) && len(g.mu.pendingSync) > 0 {
			for id := range g.mu.pendingSync {
				if m := g.mu.members[id]; m != nil {
					g.gs.log.Info("member did not send SyncGroup in time, removing it", "group", g.name, "member_id", id, "generation", g.mu.generation)
					g.removeMemberLocked(m)
				}
			}
			g.mu.pendingSync = nil
			g.maybePrepareRebalanceOrCompleteJoinLocked()
		}
	}
}
