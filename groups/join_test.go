package groups

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestJoinValidation(t *testing.T) {
	h := newHarness(t)
	for _, tc := range []struct {
		name    string
		mod     func(*kmsg.JoinGroupRequest)
		want    *kerr.Error
		wantNew bool // a member id is handed out
	}{
		{"empty group id", func(r *kmsg.JoinGroupRequest) { r.Group = "" }, kerr.InvalidGroupID, false},
		{"session below group.min.session.timeout.ms", func(r *kmsg.JoinGroupRequest) { r.SessionTimeoutMillis = 5999 }, kerr.InvalidSessionTimeout, false},
		{"session at the minimum", func(r *kmsg.JoinGroupRequest) { r.SessionTimeoutMillis = 6000 }, kerr.MemberIDRequired, true},
		{"java default 45s", func(r *kmsg.JoinGroupRequest) { r.SessionTimeoutMillis = 45000 }, kerr.MemberIDRequired, true},
		{"session at the maximum", func(r *kmsg.JoinGroupRequest) { r.SessionTimeoutMillis = 1800000 }, kerr.MemberIDRequired, true},
		{"session above group.max.session.timeout.ms", func(r *kmsg.JoinGroupRequest) { r.SessionTimeoutMillis = 1800001 }, kerr.InvalidSessionTimeout, false},
		{"unknown member of a missing group", func(r *kmsg.JoinGroupRequest) { r.MemberID = "nobody" }, kerr.UnknownMemberID, false},
		{"no protocol type", func(r *kmsg.JoinGroupRequest) { r.ProtocolType = "" }, kerr.InconsistentGroupProtocol, false},
		{"no protocols", func(r *kmsg.JoinGroupRequest) { r.Protocols = nil }, kerr.InconsistentGroupProtocol, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := joinReq("g-"+tc.name, "", "t")
			tc.mod(req)
			resp := h.startJoin(req).wait(t)
			wantCode(t, "join", resp.ErrorCode, tc.want)
			if (resp.MemberID != "") != tc.wantNew && tc.want != kerr.UnknownMemberID {
				t.Errorf("member id %q", resp.MemberID)
			}
			if tc.want != kerr.MemberIDRequired && tc.want != nil {
				if st := h.state(req.Group); st != Dead {
					t.Errorf("failed join left group %q in state %s", req.Group, st)
				}
			}
		})
	}
}

func TestSingleMemberLifecycle(t *testing.T) {
	h := newHarness(t)
	first := h.startJoin(joinReq("g", "", "t")).wait(t)
	wantCode(t, "first join", first.ErrorCode, kerr.MemberIDRequired)
	if first.MemberID == "" || first.MemberID[:len("test-client-")] != "test-client-" {
		t.Fatalf("member id %q, want test-client-<uuid>", first.MemberID)
	}
	if st := h.state("g"); st != Empty {
		t.Fatalf("state after MEMBER_ID_REQUIRED: %s, want Empty", st)
	}
	resp := h.startJoin(joinReq("g", first.MemberID, "t")).wait(t)
	wantCode(t, "join", resp.ErrorCode, nil)
	if resp.Generation != 1 || resp.LeaderID != first.MemberID || resp.MemberID != first.MemberID {
		t.Fatalf("join: generation %d leader %q member %q", resp.Generation, resp.LeaderID, resp.MemberID)
	}
	if resp.Protocol == nil || *resp.Protocol != "range" || resp.ProtocolType == nil || *resp.ProtocolType != "consumer" {
		t.Fatalf("join: protocol %v type %v", resp.Protocol, resp.ProtocolType)
	}
	if len(resp.Members) != 1 || resp.Members[0].MemberID != first.MemberID || len(resp.Members[0].ProtocolMetadata) == 0 {
		t.Fatalf("leader's members: %+v", resp.Members)
	}
	if st := h.state("g"); st != CompletingRebalance {
		t.Fatalf("state %s, want CompletingRebalance", st)
	}
	wantCode(t, "heartbeat while completing", h.heartbeat("g", first.MemberID, 1, nil), nil)
	sresp := h.startSync(syncReq("g", first.MemberID, 1, map[string]string{first.MemberID: "mine"})).wait(t)
	wantCode(t, "sync", sresp.ErrorCode, nil)
	if string(sresp.MemberAssignment) != "mine" || sresp.Protocol == nil || *sresp.Protocol != "range" {
		t.Fatalf("sync: assignment %q protocol %v", sresp.MemberAssignment, sresp.Protocol)
	}
	wantCode(t, "heartbeat", h.heartbeat("g", first.MemberID, 1, nil), nil)
	wantCode(t, "heartbeat old generation", h.heartbeat("g", first.MemberID, 0, nil), kerr.IllegalGeneration)
	wantCode(t, "heartbeat unknown member", h.heartbeat("g", "nobody", 1, nil), kerr.UnknownMemberID)
	wantCode(t, "heartbeat unknown group", h.heartbeat("nope", first.MemberID, 1, nil), kerr.UnknownMemberID)

	// A follower-like rejoin with the same metadata of the leader
	// rebalances; here it is the only member, so it completes at once.
	again := h.startJoin(joinReq("g", first.MemberID, "t")).wait(t)
	if again.ErrorCode != 0 || again.Generation != 2 {
		t.Fatalf("leader rejoin: code %d generation %d, want a new generation", again.ErrorCode, again.Generation)
	}
}

func TestJoinV3NeedsNoMemberID(t *testing.T) {
	h := newHarness(t)
	req := joinReq("g", "", "t")
	req.Version = 3
	resp := h.startJoin(req).wait(t)
	wantCode(t, "join v3", resp.ErrorCode, nil)
	if resp.MemberID == "" || resp.Generation != 1 {
		t.Fatalf("join v3: member %q generation %d", resp.MemberID, resp.Generation)
	}
}

func TestJoinV0UsesSessionAsRebalanceTimeout(t *testing.T) {
	h := newHarness(t)
	req := joinReq("g", "", "t")
	req.Version = 0
	req.RebalanceTimeoutMillis = -1
	resp := h.startJoin(req).wait(t)
	wantCode(t, "join v0", resp.ErrorCode, nil)
	g, _ := h.gs.lockGroup("g", false)
	defer g.mu.Unlock()
	if m := g.mu.members[resp.MemberID]; m.rebalance != 10*time.Second {
		t.Fatalf("rebalance timeout %s, want the session timeout", m.rebalance)
	}
}

func TestRebalanceWithNewMember(t *testing.T) {
	h := newHarness(t)
	ids, gen := h.stableGroup("g", 1)
	a := ids[0]

	b := h.joinNew(joinReq("g", "", "t"))
	h.waitParked("g", 1, 0)
	b.notYet(t)
	if st := h.state("g"); st != PreparingRebalance {
		t.Fatalf("state %s, want PreparingRebalance", st)
	}
	wantCode(t, "heartbeat during rebalance", h.heartbeat("g", a, gen, nil), kerr.RebalanceInProgress)
	syncDuring := h.startSync(syncReq("g", a, gen, nil)).wait(t)
	wantCode(t, "sync during rebalance", syncDuring.ErrorCode, kerr.RebalanceInProgress)

	ra := h.startJoin(joinReq("g", a, "t")).wait(t)
	rb := b.wait(t)
	if ra.Generation != gen+1 || rb.Generation != gen+1 {
		t.Fatalf("generations %d %d, want %d", ra.Generation, rb.Generation, gen+1)
	}
	if ra.LeaderID != a || len(ra.Members) != 2 || len(rb.Members) != 0 {
		t.Fatalf("leader %q, leader sees %d members, follower %d", ra.LeaderID, len(ra.Members), len(rb.Members))
	}
	// The follower's SyncGroup waits for the leader's, past any timeout
	// short of the rebalance timeout.
	sb := h.startSync(syncReq("g", rb.MemberID, rb.Generation, nil))
	h.waitParked("g", 0, 1)
	for range 5 {
		h.advance(5 * time.Second)
		wantCode(t, "leader heartbeat while the follower waits", h.heartbeat("g", a, ra.Generation, nil), nil)
	}
	sb.notYet(t)
	sa := h.startSync(syncReq("g", a, ra.Generation, map[string]string{a: "A", rb.MemberID: "B"})).wait(t)
	if string(sa.MemberAssignment) != "A" {
		t.Fatalf("leader assignment %q", sa.MemberAssignment)
	}
	if got := sb.wait(t); got.ErrorCode != 0 || string(got.MemberAssignment) != "B" {
		t.Fatalf("follower sync: code %d assignment %q", got.ErrorCode, got.MemberAssignment)
	}
}

func TestLeaderNeverSyncs(t *testing.T) {
	h := newHarness(t)
	ids, gen := h.stableGroup("g", 2)
	leader, follower := ids[0], ids[1]
	// Force a rebalance: the leader rejoins.
	jl := h.startJoin(joinReq("g", leader, "t"))
	h.waitParked("g", 1, 0)
	jf := h.startJoin(joinReq("g", follower, "t"))
	rl, rf := jl.wait(t), jf.wait(t)
	if rl.Generation != gen+1 || rf.Generation != gen+1 {
		t.Fatalf("generations %d %d", rl.Generation, rf.Generation)
	}
	sf := h.startSync(syncReq("g", follower, rf.Generation, nil))
	h.waitParked("g", 0, 1)
	for range 5 {
		h.advance(5 * time.Second)
		wantCode(t, "leader heartbeat", h.heartbeat("g", leader, rl.Generation, nil), nil)
	}
	h.advance(4 * time.Second)
	sf.notYet(t)
	// The leader heartbeats, but at the rebalance timeout the leader,
	// which never sent SyncGroup, is removed.
	h.advance(2 * time.Second)
	got := sf.wait(t)
	wantCode(t, "follower sync", got.ErrorCode, kerr.RebalanceInProgress)
	wantCode(t, "leader heartbeat", h.heartbeat("g", leader, rl.Generation, nil), kerr.UnknownMemberID)
	// The follower rejoins alone and leads.
	r := h.startJoin(joinReq("g", follower, "t")).wait(t)
	if r.ErrorCode != 0 || r.LeaderID != follower || r.Generation != gen+2 {
		t.Fatalf("rejoin: code %d leader %q generation %d", r.ErrorCode, r.LeaderID, r.Generation)
	}
}

func TestRebalanceTimeoutDropsMembersThatDidNotRejoin(t *testing.T) {
	h := newHarness(t)
	ids, gen := h.stableGroup("g", 2)
	a, b := ids[0], ids[1]
	c := h.joinNew(joinReq("g", "", "t"))
	h.waitParked("g", 1, 0)
	ja := h.startJoin(joinReq("g", a, "t"))
	h.waitParked("g", 2, 0)
	// b keeps heartbeating (it is told to rejoin) but never does.
	h.advance(9 * time.Second)
	wantCode(t, "b heartbeat", h.heartbeat("g", b, gen, nil), kerr.RebalanceInProgress)
	h.advance(9 * time.Second)
	wantCode(t, "b heartbeat", h.heartbeat("g", b, gen, nil), kerr.RebalanceInProgress)
	ja.notYet(t)
	h.advance(13 * time.Second) // past the 30s rebalance timeout
	ra, rc := ja.wait(t), c.wait(t)
	if ra.ErrorCode != 0 || rc.ErrorCode != 0 || ra.Generation != gen+1 || len(ra.Members) != 2 {
		t.Fatalf("joins: codes %d %d generation %d members %d", ra.ErrorCode, rc.ErrorCode, ra.Generation, len(ra.Members))
	}
	wantCode(t, "b heartbeat after removal", h.heartbeat("g", b, gen, nil), kerr.UnknownMemberID)
	rb := h.startJoin(joinReq("g", b, "t")).wait(t)
	wantCode(t, "b rejoin with old id", rb.ErrorCode, kerr.UnknownMemberID)
}

func TestSessionExpiry(t *testing.T) {
	h := newHarness(t)
	ids, gen := h.stableGroup("g", 2)
	a, b := ids[0], ids[1]
	for range 2 {
		h.advance(4 * time.Second)
		wantCode(t, "a heartbeat", h.heartbeat("g", a, gen, nil), nil)
	}
	// b's 10s session expires: the group rebalances without it.
	h.advance(4 * time.Second)
	wantCode(t, "a heartbeat", h.heartbeat("g", a, gen, nil), kerr.RebalanceInProgress)
	wantCode(t, "b heartbeat", h.heartbeat("g", b, gen, nil), kerr.UnknownMemberID)
	r := h.startJoin(joinReq("g", a, "t")).wait(t)
	if r.ErrorCode != 0 || r.Generation != gen+1 || len(r.Members) != 1 {
		t.Fatalf("rejoin: code %d generation %d members %d", r.ErrorCode, r.Generation, len(r.Members))
	}
}

func TestLastMemberExpiresGroupEmpty(t *testing.T) {
	h := newHarness(t)
	ids, gen := h.stableGroup("g", 1)
	h.advance(11 * time.Second)
	if st := h.state("g"); st != Empty {
		t.Fatalf("state %s, want Empty", st)
	}
	wantCode(t, "heartbeat", h.heartbeat("g", ids[0], gen, nil), kerr.UnknownMemberID)
	g, _ := h.gs.lockGroup("g", false)
	if g.mu.generation != gen+1 || g.mu.protocolType != "consumer" {
		t.Errorf("generation %d protocol type %q", g.mu.generation, g.mu.protocolType)
	}
	g.mu.Unlock()
}

func TestHeldJoinSurvivesSessionTimeout(t *testing.T) {
	h := newHarness(t)
	ids, gen := h.stableGroup("g", 2)
	a, b := ids[0], ids[1]
	ja := h.startJoin(joinReq("g", a, "t")) // a (leader) starts a rebalance
	h.waitParked("g", 1, 0)
	// a waits in JoinGroup far longer than its session: that is alive.
	for range 4 {
		h.advance(6 * time.Second)
		wantCode(t, "b heartbeat", h.heartbeat("g", b, gen, nil), kerr.RebalanceInProgress)
	}
	jb := h.startJoin(joinReq("g", b, "t"))
	ra, rb := ja.wait(t), jb.wait(t)
	if ra.ErrorCode != 0 || rb.ErrorCode != 0 || len(ra.Members) != 2 {
		t.Fatalf("codes %d %d, members %d", ra.ErrorCode, rb.ErrorCode, len(ra.Members))
	}
}

func TestOverlappingRebalances(t *testing.T) {
	h := newHarness(t)
	ids, gen := h.stableGroup("g", 2)
	a, b := ids[0], ids[1]
	ja := h.startJoin(joinReq("g", a, "t"))
	h.waitParked("g", 1, 0)
	jb := h.startJoin(joinReq("g", b, "t"))
	ra, rb := ja.wait(t), jb.wait(t)
	// b waits in SyncGroup; before the leader syncs, c joins.
	sb := h.startSync(syncReq("g", b, rb.Generation, nil))
	h.waitParked("g", 0, 1)
	c := h.joinNew(joinReq("g", "", "t"))
	wantCode(t, "b's held sync", sb.wait(t).ErrorCode, kerr.RebalanceInProgress)
	wantCode(t, "leader's late sync", h.startSync(syncReq("g", a, ra.Generation, nil)).wait(t).ErrorCode, kerr.RebalanceInProgress)
	// Everyone rejoins: no member was lost on the way.
	ja = h.startJoin(joinReq("g", a, "t"))
	jb = h.startJoin(joinReq("g", b, "t"))
	ra, rb, rc := ja.wait(t), jb.wait(t), c.wait(t)
	for _, r := range []*kmsg.JoinGroupResponse{ra, rb, rc} {
		if r.ErrorCode != 0 || r.Generation != gen+2 {
			t.Fatalf("join: code %s generation %d, want generation %d", errName(r.ErrorCode), r.Generation, gen+2)
		}
	}
	if len(ra.Members)+len(rb.Members)+len(rc.Members) != 3 {
		t.Fatalf("leader should see 3 members")
	}
}

func TestLeaveGroup(t *testing.T) {
	h := newHarness(t)
	ids, gen := h.stableGroup("g", 3)

	// v0: one member, its error top-level.
	req := kmsg.NewPtrLeaveGroupRequest()
	req.Version, req.Group, req.MemberID = 0, "g", "nobody"
	wantCode(t, "leave v0 unknown", h.gs.LeaveGroup(context.Background(), req).ErrorCode, kerr.UnknownMemberID)
	req.MemberID = ids[2]
	wantCode(t, "leave v0", h.gs.LeaveGroup(context.Background(), req).ErrorCode, nil)
	if st := h.state("g"); st != PreparingRebalance {
		t.Fatalf("state after leave %s", st)
	}
	wantCode(t, "remaining member heartbeat", h.heartbeat("g", ids[0], gen, nil), kerr.RebalanceInProgress)

	// v3: a batch, with per-member errors.
	req = kmsg.NewPtrLeaveGroupRequest()
	req.Version, req.Group = 5, "g"
	for _, id := range []string{ids[0], "nobody", ids[1]} {
		m := kmsg.NewLeaveGroupRequestMember()
		m.MemberID = id
		req.Members = append(req.Members, m)
	}
	resp := h.gs.LeaveGroup(context.Background(), req)
	wantCode(t, "leave v5", resp.ErrorCode, nil)
	if len(resp.Members) != 3 {
		t.Fatalf("%d member results", len(resp.Members))
	}
	wantCode(t, "leave member 0", resp.Members[0].ErrorCode, nil)
	wantCode(t, "leave unknown member", resp.Members[1].ErrorCode, kerr.UnknownMemberID)
	wantCode(t, "leave member 2", resp.Members[2].ErrorCode, nil)
	if st := h.state("g"); st != Empty {
		t.Fatalf("state after everyone left %s, want Empty", st)
	}

	// Unknown group: per-member UNKNOWN_MEMBER_ID.
	req.Group = "nope"
	resp = h.gs.LeaveGroup(context.Background(), req)
	wantCode(t, "unknown group", resp.ErrorCode, nil)
	wantCode(t, "unknown group member", resp.Members[0].ErrorCode, kerr.UnknownMemberID)
}

func TestLeaveWhileJoining(t *testing.T) {
	h := newHarness(t)
	ids, _ := h.stableGroup("g", 2)
	a, b := ids[0], ids[1]
	ja := h.startJoin(joinReq("g", a, "t"))
	h.waitParked("g", 1, 0)
	// b leaves instead of rejoining: a's join completes at once.
	req := kmsg.NewPtrLeaveGroupRequest()
	req.Version, req.Group = 3, "g"
	m := kmsg.NewLeaveGroupRequestMember()
	m.MemberID = b
	req.Members = append(req.Members, m)
	h.gs.LeaveGroup(context.Background(), req)
	if r := ja.wait(t); r.ErrorCode != 0 || len(r.Members) != 1 {
		t.Fatalf("join: code %d members %d", r.ErrorCode, len(r.Members))
	}
}

func TestPendingMemberExpires(t *testing.T) {
	h := newHarness(t)
	first := h.startJoin(joinReq("g", "", "t")).wait(t)
	wantCode(t, "first join", first.ErrorCode, kerr.MemberIDRequired)
	h.advance(11 * time.Second)
	r := h.startJoin(joinReq("g", first.MemberID, "t")).wait(t)
	wantCode(t, "join with expired pending id", r.ErrorCode, kerr.UnknownMemberID)
}

func TestPendingMemberHoldsRebalance(t *testing.T) {
	h := newHarness(t)
	ids, _ := h.stableGroup("g", 1)
	// b learned its id; the group waits for it when a rebalances.
	pend := h.startJoin(joinReq("g", "", "t")).wait(t)
	ja := h.startJoin(joinReq("g", ids[0], "t"))
	h.waitParked("g", 1, 0)
	ja.notYet(t)
	jb := h.startJoin(joinReq("g", pend.MemberID, "t"))
	if ra, rb := ja.wait(t), jb.wait(t); ra.ErrorCode != 0 || rb.ErrorCode != 0 || len(ra.Members) != 2 {
		t.Fatalf("codes %d %d members %d", ra.ErrorCode, rb.ErrorCode, len(ra.Members))
	}
}

func TestInconsistentProtocols(t *testing.T) {
	h := newHarness(t)
	h.stableGroup("g", 1)
	req := joinReq("g", "", "t")
	req.ProtocolType = "connect"
	wantCode(t, "other protocol type", h.startJoin(req).wait(t).ErrorCode, kerr.InconsistentGroupProtocol)
	req = joinReq("g", "", "t")
	req.Protocols[0].Name = "roundrobin"
	wantCode(t, "no common protocol", h.startJoin(req).wait(t).ErrorCode, kerr.InconsistentGroupProtocol)
}

func TestProtocolSelection(t *testing.T) {
	h := newHarness(t)
	proto := func(names ...string) []kmsg.JoinGroupRequestProtocol {
		var ps []kmsg.JoinGroupRequestProtocol
		for _, n := range names {
			ps = append(ps, kmsg.JoinGroupRequestProtocol{Name: n, Metadata: []byte(n)})
		}
		return ps
	}
	a := joinReq("g", "", "t")
	a.Version = 3
	a.Protocols = proto("cooperative-sticky", "range")
	ra := h.startJoin(a).wait(t)
	if *ra.Protocol != "cooperative-sticky" {
		t.Fatalf("single member: protocol %s", *ra.Protocol)
	}
	h.startSync(syncReq("g", ra.MemberID, ra.Generation, nil)) // protocol checked below
	b := joinReq("g", "", "t")
	b.Version = 3
	b.Protocols = proto("range", "roundrobin")
	jb := h.startJoin(b)
	h.waitParked("g", 1, 0)
	a.MemberID = ra.MemberID
	ra = h.startJoin(a).wait(t)
	rb := jb.wait(t)
	if *ra.Protocol != "range" || *rb.Protocol != "range" {
		t.Fatalf("protocols %s %s, want the common range", *ra.Protocol, *rb.Protocol)
	}
	if string(ra.Members[0].ProtocolMetadata) != "range" {
		t.Fatalf("leader sees metadata %q, want the range protocol's", ra.Members[0].ProtocolMetadata)
	}
	s := syncReq("g", ra.MemberID, ra.Generation, nil)
	s.Protocol = kmsg.StringPtr("cooperative-sticky")
	wantCode(t, "sync with another protocol", h.startSync(s).wait(t).ErrorCode, kerr.InconsistentGroupProtocol)
	s.Protocol, s.ProtocolType = nil, kmsg.StringPtr("connect")
	wantCode(t, "sync with another protocol type", h.startSync(s).wait(t).ErrorCode, kerr.InconsistentGroupProtocol)
}

func TestInitialRebalanceDelay(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.InitialRebalanceDelay = 3 * time.Second })
	a := h.joinNew(joinReq("g", "", "t"))
	h.waitParked("g", 1, 0)
	h.advance(2 * time.Second)
	b := h.joinNew(joinReq("g", "", "t"))
	h.waitParked("g", 2, 0)
	h.advance(2 * time.Second) // first delay over, but b arrived: extended
	a.notYet(t)
	h.advance(3 * time.Second)
	ra, rb := a.wait(t), b.wait(t)
	if ra.Generation != 1 || rb.Generation != 1 {
		t.Fatalf("generations %d %d, want both in the first", ra.Generation, rb.Generation)
	}
}

func TestMaxGroupSize(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.MaxGroupSize = 1 })
	h.stableGroup("g", 1)
	r := h.startJoin(joinReq("g", "", "t")).wait(t)
	wantCode(t, "join beyond group.max.size", r.ErrorCode, kerr.GroupMaxSizeReached)
}

func TestCloseAnswersHeldRequests(t *testing.T) {
	h := newHarness(t)
	ids, _ := h.stableGroup("g", 2)
	j := h.startJoin(joinReq("g", ids[0], "t"))
	h.waitParked("g", 1, 0)
	if err := h.gs.Close(); err != nil {
		t.Fatal(err)
	}
	wantCode(t, "held join", j.wait(t).ErrorCode, kerr.NotCoordinator)
	wantCode(t, "heartbeat after close", h.heartbeat("g", ids[1], 1, nil), kerr.NotCoordinator)
}

func TestJoinContextCanceled(t *testing.T) {
	h := newHarness(t)
	ids, _ := h.stableGroup("g", 2)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := h.gs.JoinGroup(ctx, client, joinReq("g", ids[0], "t"))
		done <- err
	}()
	h.waitParked("g", 1, 0)
	cancel()
	if err := <-done; err == nil {
		t.Fatal("want the context's error")
	}
	// The member still counts as joining; the other completes it.
	if r := h.startJoin(joinReq("g", ids[1], "t")).wait(t); r.ErrorCode != 0 {
		t.Fatalf("join: %s", errName(r.ErrorCode))
	}
}
