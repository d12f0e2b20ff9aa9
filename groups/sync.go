package groups

import (
	"bytes"
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// SyncGroup serves a classic SyncGroup (v0-v5). In CompletingRebalance a
// follower's SyncGroup waits for the leader's, however long that takes: the
// wait ends with the leader's assignment, or with REBALANCE_IN_PROGRESS when
// a new rebalance starts (a member joins, or the leader never syncs within
// the rebalance timeout and is removed). The error is non-nil only when ctx
// ended first.
func (gs *Groups) SyncGroup(ctx context.Context, req *kmsg.SyncGroupRequest) (*kmsg.SyncGroupResponse, error) {
	resp, wait := gs.sync(req)
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

func syncError(code *kerr.Error) *kmsg.SyncGroupResponse {
	resp := kmsg.NewPtrSyncGroupResponse()
	resp.ErrorCode = code.Code
	return resp
}

func (gs *Groups) sync(req *kmsg.SyncGroupRequest) (*kmsg.SyncGroupResponse, <-chan *kmsg.SyncGroupResponse) {
	if req.Group == "" {
		return syncError(kerr.InvalidGroupID), nil
	}
	if !gs.enter() {
		return syncError(kerr.NotCoordinator), nil
	}
	defer gs.leave()
	g, _ := gs.lockGroup(req.Group, false)
	if g == nil {
		return syncError(kerr.UnknownMemberID), nil
	}
	defer g.mu.Unlock()
	if g.mu.consumer != nil {
		return syncError(kerr.UnknownMemberID), nil // no classic members in a KIP-848 group
	}
	if err := g.validateMemberLocked(req.MemberID, req.InstanceID); err != nil {
		return syncError(err), nil
	}
	if req.Generation != g.mu.generation {
		return syncError(kerr.IllegalGeneration), nil
	}
	if inconsistent(req.ProtocolType, g.mu.protocolType) || inconsistent(req.Protocol, g.mu.protocol) {
		return syncError(kerr.InconsistentGroupProtocol), nil
	}
	m := g.mu.members[req.MemberID]
	switch g.mu.state {
	case PreparingRebalance:
		return syncError(kerr.RebalanceInProgress), nil
	case CompletingRebalance:
		if m.syncWait != nil {
			g.answerSyncLocked(m, syncError(kerr.RebalanceInProgress))
		}
		m.syncWait = make(chan *kmsg.SyncGroupResponse, 1)
		wait := m.syncWait
		delete(g.mu.pendingSync, m.id)
		if m.id == g.mu.leader {
			g.completeSyncLocked(req)
		}
		return nil, wait
	case Stable:
		delete(g.mu.pendingSync, m.id)
		resp := kmsg.NewPtrSyncGroupResponse()
		resp.ProtocolType = nilIfEmpty(g.mu.protocolType)
		resp.Protocol = nilIfEmpty(g.mu.protocol)
		resp.MemberAssignment = m.assignment
		return resp, nil
	default:
		return syncError(kerr.UnknownMemberID), nil
	}
}

// inconsistent reports a protocol type or name in a request that differs
// from the group's (a null one is never inconsistent).
func inconsistent(req *string, group string) bool {
	return req != nil && group != "" && *req != group
}

// completeSyncLocked installs the leader's assignment, answers every member
// waiting in SyncGroup, and makes the group Stable. A member the leader did
// not assign gets an empty assignment.
func (g *group) completeSyncLocked(req *kmsg.SyncGroupRequest) {
	assigned := make(map[string][]byte, len(req.GroupAssignment))
	for _, a := range req.GroupAssignment {
		assigned[a.MemberID] = a.MemberAssignment
	}
	for _, m := range g.mu.members {
		m.assignment = bytes.Clone(assigned[m.id])
		if m.assignment == nil {
			m.assignment = []byte{}
		}
	}
	g.setStateLocked(Stable)
	g.persistLocked() // the members, so that a coordinator restart keeps them
	g.gs.log.Info("rebalance complete", "group", g.name, "generation", g.mu.generation, "members", len(g.mu.members))
	g.propagateAssignmentLocked(nil)
}

// resetAssignmentsLocked clears every assignment and answers the members
// waiting in SyncGroup with code (a rebalance started before the leader's
// SyncGroup).
func (g *group) resetAssignmentsLocked(code *kerr.Error) {
	for _, m := range g.mu.members {
		m.assignment = []byte{}
	}
	g.propagateAssignmentLocked(code)
}

// propagateAssignmentLocked answers every member waiting in SyncGroup with
// its assignment (or code) and restarts its session.
func (g *group) propagateAssignmentLocked(code *kerr.Error) {
	now := g.gs.now()
	for _, m := range g.mu.members {
		if m.syncWait == nil {
			continue
		}
		resp := kmsg.NewPtrSyncGroupResponse()
		if code != nil {
			resp.ErrorCode = code.Code
		} else {
			resp.ProtocolType = nilIfEmpty(g.mu.protocolType)
			resp.Protocol = nilIfEmpty(g.mu.protocol)
		}
		resp.MemberAssignment = m.assignment
		g.answerSyncLocked(m, resp)
		m.deadline = now.Add(m.session)
		g.wakeAtLocked(m.deadline)
	}
}
