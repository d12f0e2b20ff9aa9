package groups

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func staticJoin(group, memberID, instance string, topics ...string) *kmsg.JoinGroupRequest {
	req := joinReq(group, memberID, topics...)
	req.InstanceID = kmsg.StringPtr(instance)
	return req
}

// staticGroup makes a Stable group of two static members i1 (leader) and
// i2, and returns their member ids and the generation.
func (h *harness) staticGroup(group string) (string, string, int32) {
	h.t.Helper()
	r1 := h.startJoin(staticJoin(group, "", "i1", "t")).wait(h.t)
	if r1.ErrorCode != 0 || !strings.HasPrefix(r1.MemberID, "i1-") {
		h.t.Fatalf("static join: code %s member %q (static members need no MEMBER_ID_REQUIRED)", errName(r1.ErrorCode), r1.MemberID)
	}
	j2 := h.startJoin(staticJoin(group, "", "i2", "t"))
	h.waitParked(group, 1, 0)
	r1 = h.startJoin(staticJoin(group, r1.MemberID, "i1", "t")).wait(h.t)
	r2 := j2.wait(h.t)
	if r1.LeaderID != r1.MemberID || r2.Generation != r1.Generation {
		h.t.Fatalf("leader %q generations %d %d", r1.LeaderID, r1.Generation, r2.Generation)
	}
	s2 := h.startSync(syncReq(group, r2.MemberID, r2.Generation, nil))
	s1 := h.startSync(syncReq(group, r1.MemberID, r1.Generation, map[string]string{r1.MemberID: "A1", r2.MemberID: "A2"}))
	if s1.wait(h.t).ErrorCode != 0 || s2.wait(h.t).ErrorCode != 0 {
		h.t.Fatal("sync failed")
	}
	return r1.MemberID, r2.MemberID, r1.Generation
}

func TestStaticMemberRestartKeepsAssignment(t *testing.T) {
	h := newHarness(t)
	m1, m2, gen := h.staticGroup("g")
	// i2 restarts: it joins with no member id. No rebalance: same
	// generation, its old assignment, the old member id fenced.
	r := h.startJoin(staticJoin("g", "", "i2", "t")).wait(t)
	wantCode(t, "rejoin", r.ErrorCode, nil)
	if r.MemberID == m2 || !strings.HasPrefix(r.MemberID, "i2-") || r.Generation != gen || r.LeaderID != m1 || r.SkipAssignment {
		t.Fatalf("rejoin: member %q generation %d leader %q skip %v", r.MemberID, r.Generation, r.LeaderID, r.SkipAssignment)
	}
	if st := h.state("g"); st != Stable {
		t.Fatalf("state %s, want Stable", st)
	}
	s := h.startSync(syncReq("g", r.MemberID, r.Generation, nil)).wait(t)
	if s.ErrorCode != 0 || string(s.MemberAssignment) != "A2" {
		t.Fatalf("sync: %s assignment %q", errName(s.ErrorCode), s.MemberAssignment)
	}
	wantCode(t, "old member id", h.heartbeat("g", m2, gen, kmsg.StringPtr("i2")), kerr.FencedInstanceID)
	wantCode(t, "new member id", h.heartbeat("g", r.MemberID, gen, kmsg.StringPtr("i2")), nil)
	wantCode(t, "leader", h.heartbeat("g", m1, gen, kmsg.StringPtr("i1")), nil)
	wantCode(t, "unknown instance", h.heartbeat("g", m1, gen, kmsg.StringPtr("i9")), kerr.UnknownMemberID)

	// The fenced member's commit is refused too.
	c := commitReq("g", m2, gen, "t", 0, 10)
	c.InstanceID = kmsg.StringPtr("i2")
	wantCode(t, "fenced commit", h.gs.OffsetCommit(context.Background(), c).Topics[0].Partitions[0].ErrorCode, kerr.FencedInstanceID)
}

func TestStaticLeaderRestartSkipsAssignment(t *testing.T) {
	h := newHarness(t)
	m1, _, gen := h.staticGroup("g")
	r := h.startJoin(staticJoin("g", "", "i1", "t")).wait(t)
	if r.ErrorCode != 0 || r.Generation != gen || r.LeaderID != r.MemberID || r.MemberID == m1 || !r.SkipAssignment || len(r.Members) != 2 {
		t.Fatalf("leader rejoin: code %s generation %d leader %q member %q skip %v members %d",
			errName(r.ErrorCode), r.Generation, r.LeaderID, r.MemberID, r.SkipAssignment, len(r.Members))
	}
	s := h.startSync(syncReq("g", r.MemberID, r.Generation, nil)).wait(t)
	if string(s.MemberAssignment) != "A1" {
		t.Fatalf("sync: assignment %q", s.MemberAssignment)
	}
}

func TestStaticMemberNewProtocolRebalances(t *testing.T) {
	h := newHarness(t)
	_, _, gen := h.staticGroup("g")
	req := staticJoin("g", "", "i2", "t")
	req.Protocols[0].Name = "roundrobin"
	// roundrobin is not supported by i1.
	wantCode(t, "join with an unsupported protocol", h.startJoin(req).wait(t).ErrorCode, kerr.InconsistentGroupProtocol)
	// New preferences that keep range selected: no rebalance.
	req.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "sticky"}, req.Protocols[0], {Name: "range", Metadata: req.Protocols[0].Metadata}}
	if r := h.startJoin(req).wait(t); r.ErrorCode != 0 || r.Generation != gen {
		t.Fatalf("rejoin keeping the selected protocol: %s generation %d", errName(r.ErrorCode), r.Generation)
	}

	// A lone static member that restarts preferring another protocol
	// changes the selection: a rebalance.
	one := staticJoin("solo", "", "s1", "t")
	one.Protocols = append(one.Protocols, kmsg.JoinGroupRequestProtocol{Name: "roundrobin"})
	r := h.startJoin(one).wait(t)
	h.startSync(syncReq("solo", r.MemberID, r.Generation, nil)).wait(t)
	one.Protocols[0], one.Protocols[1] = one.Protocols[1], one.Protocols[0]
	r2 := h.startJoin(one).wait(t)
	if r2.ErrorCode != 0 || r2.Generation != r.Generation+1 || *r2.Protocol != "roundrobin" {
		t.Fatalf("rejoin changing the protocol: %s generation %d protocol %s", errName(r2.ErrorCode), r2.Generation, *r2.Protocol)
	}
}

func TestStaticMemberRejoinDuringRebalance(t *testing.T) {
	h := newHarness(t)
	m1, m2, gen := h.staticGroup("g")
	j1 := h.startJoin(staticJoin("g", m1, "i1", "t")) // the leader rebalances
	h.waitParked("g", 1, 0)
	// i2 restarts in the middle: its old id is replaced, the rebalance
	// goes on with the new one.
	j2 := h.startJoin(staticJoin("g", "", "i2", "t"))
	r1, r2 := j1.wait(t), j2.wait(t)
	if r1.ErrorCode != 0 || r2.ErrorCode != 0 || r1.Generation != gen+1 || r2.MemberID == m2 || len(r1.Members) != 2 {
		t.Fatalf("codes %s %s generation %d member %q members %d", errName(r1.ErrorCode), errName(r2.ErrorCode), r1.Generation, r2.MemberID, len(r1.Members))
	}
}

func TestStaticMemberOldJoinFenced(t *testing.T) {
	h := newHarness(t)
	m1, m2, _ := h.staticGroup("g")
	j1 := h.startJoin(staticJoin("g", m1, "i1", "t"))
	h.waitParked("g", 1, 0)
	j2 := h.startJoin(staticJoin("g", m2, "i2", "t"))
	r1, r2 := j1.wait(t), j2.wait(t)
	s2 := h.startSync(syncReq("g", m2, r2.Generation, nil))
	h.waitParked("g", 0, 1)
	// A second process with instance i2 starts: the waiting one is fenced.
	j2b := h.startJoin(staticJoin("g", "", "i2", "t"))
	wantCode(t, "fenced sync", s2.wait(t).ErrorCode, kerr.FencedInstanceID)
	h.startJoin(staticJoin("g", m1, "i1", "t"))
	if r := j2b.wait(t); r.ErrorCode != 0 || r.Generation != r1.Generation+1 {
		t.Fatalf("new i2: %s generation %d", errName(r.ErrorCode), r.Generation)
	}
	r := h.startJoin(staticJoin("g", m2, "i2", "t")).wait(t)
	wantCode(t, "old i2 joins", r.ErrorCode, kerr.FencedInstanceID)
}

func TestStaticMemberSurvivesRebalanceTimeout(t *testing.T) {
	h := newHarness(t)
	m1, m2, gen := h.staticGroup("g")
	j1 := h.startJoin(staticJoin("g", m1, "i1", "t"))
	h.waitParked("g", 1, 0)
	// i2 is down (no heartbeats): after the rebalance timeout the group
	// completes with i2 still a member; its session removes it later.
	h.advance(9 * time.Second)
	h.advance(9 * time.Second)
	r1 := j1.wait(t)
	if r1.Generation != gen+1 || len(r1.Members) != 1 {
		// i2's 10s session expired before the rebalance timeout.
		t.Fatalf("generation %d members %d", r1.Generation, len(r1.Members))
	}
	wantCode(t, "expired static member", h.heartbeat("g", m2, gen, kmsg.StringPtr("i2")), kerr.UnknownMemberID)
}

func TestLeaveByInstanceID(t *testing.T) {
	h := newHarness(t)
	h.staticGroup("g")
	req := kmsg.NewPtrLeaveGroupRequest()
	req.Version, req.Group = 4, "g"
	for _, inst := range []string{"i2", "i9"} {
		m := kmsg.NewLeaveGroupRequestMember()
		m.InstanceID = kmsg.StringPtr(inst)
		req.Members = append(req.Members, m)
	}
	resp := h.gs.LeaveGroup(context.Background(), req)
	wantCode(t, "leave i2", resp.Members[0].ErrorCode, nil)
	wantCode(t, "leave i9", resp.Members[1].ErrorCode, kerr.UnknownMemberID)
	if st := h.state("g"); st != PreparingRebalance {
		t.Fatalf("state %s", st)
	}
}
