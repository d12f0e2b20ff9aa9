package groups

import (
	"context"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-io/floe/groups/sharegroups"
)

// groupAuthorizedOperations is the bit field of the ACL operations on a
// group (READ, DELETE, DESCRIBE): floe has no ACLs, so all are allowed.
const groupAuthorizedOperations int32 = 1<<3 | 1<<6 | 1<<8

// Group types as ListGroups names them (KIP-848).
const (
	typeClassic  = "classic"
	typeConsumer = "consumer"
)

// DescribeGroups serves DescribeGroups (v0-v6). Member metadata and
// assignments are shown only while a classic group is Stable. A group that
// does not exist, or is a share group, is Dead, with GROUP_ID_NOT_FOUND
// from v6.
func (gs *Groups) DescribeGroups(ctx context.Context, req *kmsg.DescribeGroupsRequest) *kmsg.DescribeGroupsResponse {
	resp := req.ResponseKind().(*kmsg.DescribeGroupsResponse)
	snap, _ := gs.topics(ctx) // names the topics of KIP-848 assignments
	for _, name := range req.Groups {
		sg := gs.describe(req.Version, name, snap)
		if req.IncludeAuthorizedOperations && sg.ErrorCode == 0 {
			sg.AuthorizedOperations = groupAuthorizedOperations
		}
		resp.Groups = append(resp.Groups, sg)
	}
	return resp
}

func (gs *Groups) describe(version int16, name string, snap *topicSnapshot) kmsg.DescribeGroupsResponseGroup {
	sg := kmsg.NewDescribeGroupsResponseGroup()
	sg.Group = name
	if !gs.enter() {
		sg.ErrorCode = kerr.NotCoordinator.Code
		return sg
	}
	defer gs.leave()
	g, _ := gs.lockGroup(name, false)
	if g == nil {
		sg.State = Dead.String()
		if version >= 6 {
			sg.ErrorCode = kerr.GroupIDNotFound.Code
			sg.ErrorMessage = strPtr("Group " + name + " not found.")
		}
		return sg
	}
	defer g.mu.Unlock()
	if g.mu.share != nil {
		// Kafka describes classic (and KIP-848) groups only.
		sg.State = Dead.String()
		if version >= 6 {
			sg.ErrorCode = kerr.GroupIDNotFound.Code
			sg.ErrorMessage = strPtr("Group " + name + " is not a classic group.")
		}
		return sg
	}
	if c := g.mu.consumer; c != nil {
		// A KIP-848 group, as Kafka shows it to classic tools: the
		// subscriptions and assignments in the consumer protocol's
		// encoding, the assignor as the protocol.
		sg.State = c.stateLocked()
		sg.ProtocolType = consumerProtocolType
		sg.Protocol = c.assignor
		for _, m := range c.sortedMembersLocked() {
			dm := kmsg.NewDescribeGroupsResponseGroupMember()
			dm.MemberID, dm.InstanceID, dm.ClientID, dm.ClientHost = m.id, m.instanceID, m.clientID, m.clientHost
			meta := kmsg.NewConsumerMemberMetadata()
			meta.Topics = slices.Clone(m.topics)
			dm.ProtocolMetadata = meta.AppendTo(nil)
			assignment := kmsg.NewConsumerMemberAssignment()
			for _, id := range m.assigned.SortedIDs() {
				t := kmsg.NewConsumerMemberAssignmentTopic()
				if snap != nil {
					t.Topic = snap.byID[id]
				}
				t.Partitions = slices.Clone(m.assigned[id])
				assignment.Topics = append(assignment.Topics, t)
			}
			dm.MemberAssignment = assignment.AppendTo(nil)
			sg.Members = append(sg.Members, dm)
		}
		return sg
	}
	sg.State = g.mu.state.String()
	sg.ProtocolType = g.mu.protocolType
	stable := g.mu.state == Stable
	if stable {
		sg.Protocol = g.mu.protocol
	}
	for _, m := range g.sortedMembersLocked() {
		dm := kmsg.NewDescribeGroupsResponseGroupMember()
		dm.MemberID, dm.InstanceID, dm.ClientID, dm.ClientHost = m.id, m.instanceID, m.clientID, m.clientHost
		if stable {
			dm.ProtocolMetadata, dm.MemberAssignment = m.metadata(g.mu.protocol), m.assignment
		} else {
			dm.ProtocolMetadata, dm.MemberAssignment = []byte{}, []byte{}
		}
		sg.Members = append(sg.Members, dm)
	}
	return sg
}

// ListGroups serves ListGroups (v0-v5): every group, filtered by state
// (v4+) and by type (v5+: classic, consumer, share), both
// case-insensitive.
func (gs *Groups) ListGroups(_ context.Context, req *kmsg.ListGroupsRequest) *kmsg.ListGroupsResponse {
	resp := req.ResponseKind().(*kmsg.ListGroupsResponse)
	if !gs.enter() {
		resp.ErrorCode = kerr.NotCoordinator.Code
		return resp
	}
	defer gs.leave()
	match := func(filter []string, v string) bool {
		return len(filter) == 0 || slices.ContainsFunc(filter, func(f string) bool { return strings.EqualFold(f, v) })
	}
	for _, g := range gs.snapshot() {
		g.mu.Lock()
		if g.mu.dead {
			g.mu.Unlock()
			continue
		}
		lg := kmsg.NewListGroupsResponseGroup()
		lg.Group = g.name
		if c := g.mu.consumer; c != nil {
			lg.ProtocolType, lg.GroupState, lg.GroupType = consumerProtocolType, c.stateLocked(), typeConsumer
		} else if s := g.mu.share; s != nil {
			lg.ProtocolType, lg.GroupState, lg.GroupType = sharegroups.ProtocolType, s.State(), sharegroups.GroupType
		} else {
			lg.ProtocolType, lg.GroupState, lg.GroupType = g.mu.protocolType, g.mu.state.String(), typeClassic
		}
		g.mu.Unlock()
		if match(req.StatesFilter, lg.GroupState) && match(req.TypesFilter, lg.GroupType) {
			resp.Groups = append(resp.Groups, lg)
		}
	}
	slices.SortFunc(resp.Groups, func(a, b kmsg.ListGroupsResponseGroup) int { return strings.Compare(a.Group, b.Group) })
	return resp
}

// DeleteGroups serves DeleteGroups (v0-v2): an Empty group is deleted with
// its committed offsets and pending transactional offsets, and a share
// group with its share-partitions; a group with members is
// NON_EMPTY_GROUP, an unknown one GROUP_ID_NOT_FOUND. Group configs stay.
func (gs *Groups) DeleteGroups(_ context.Context, req *kmsg.DeleteGroupsRequest) *kmsg.DeleteGroupsResponse {
	resp := req.ResponseKind().(*kmsg.DeleteGroupsResponse)
	for _, name := range req.Groups {
		dg := kmsg.NewDeleteGroupsResponseGroup()
		dg.Group = name
		dg.ErrorCode = gs.deleteGroup(name)
		resp.Groups = append(resp.Groups, dg)
	}
	return resp
}

func (gs *Groups) deleteGroup(name string) int16 {
	if !gs.enter() {
		return kerr.NotCoordinator.Code
	}
	defer gs.leave()
	g, _ := gs.lockGroup(name, false)
	if g == nil {
		return kerr.GroupIDNotFound.Code
	}
	defer g.mu.Unlock()
	if !g.emptyForDeleteLocked() {
		return kerr.NonEmptyGroup.Code
	}
	b := gs.newBatch()
	b.deleteGroup(name)
	if err := b.commit(); err != nil {
		gs.log.Error("delete group", "group", name, "err", err)
		return kerr.CoordinatorNotAvailable.Code
	}
	g.mu.offsets = make(map[string]map[int32]offsetRecord)
	g.mu.txns = make(map[int64]*txnOffsets)
	g.mu.share = nil
	g.mu.persisted = false
	g.removeLocked()
	gs.log.Info("deleted group", "group", name)
	return 0
}
