package groups

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/internal/testkit"
)

// clock is a settable clock for Options.Now.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// harness is a Groups on a fake clock; advance moves the clock and runs
// the deadlines that passed.
type harness struct {
	t   *testing.T
	gs  *Groups
	clk *clock
	dir string
	// mods are the options newHarness was given; restart keeps them.
	mods []func(*Options)
}

func newHarness(t *testing.T, mods ...func(*Options)) *harness {
	t.Helper()
	h := &harness{t: t, clk: newClock(), dir: t.TempDir(), mods: mods}
	h.open(mods...)
	return h
}

func (h *harness) open(mods ...func(*Options)) {
	h.t.Helper()
	opts := Options{Dir: h.dir, Logger: testkit.Logger(), Now: h.clk.Now, manualExpiry: true}
	for _, m := range mods {
		m(&opts)
	}
	gs, err := Open(opts)
	if err != nil {
		h.t.Fatalf("open: %v", err)
	}
	h.gs = gs
	h.t.Cleanup(func() { gs.Close() })
}

// restart closes and reopens the coordinator on the same directory.
func (h *harness) restart() {
	h.t.Helper()
	if err := h.gs.Close(); err != nil {
		h.t.Fatalf("close: %v", err)
	}
	h.open(h.mods...)
}

func (h *harness) advance(d time.Duration) {
	h.clk.Advance(d)
	h.gs.expire()
}

var client = coordapi.ClientInfo{ID: "test-client", Host: "/127.0.0.1"}

// joinReq is a consumer JoinGroup at version 9 with one "range" protocol
// subscribing to topics.
func joinReq(group, memberID string, topics ...string) *kmsg.JoinGroupRequest {
	req := kmsg.NewPtrJoinGroupRequest()
	req.Version = 9
	req.Group = group
	req.MemberID = memberID
	req.SessionTimeoutMillis = 10000
	req.RebalanceTimeoutMillis = 30000
	req.ProtocolType = "consumer"
	meta := kmsg.NewConsumerMemberMetadata()
	meta.Topics = topics
	p := kmsg.NewJoinGroupRequestProtocol()
	p.Name = "range"
	p.Metadata = meta.AppendTo(nil)
	req.Protocols = append(req.Protocols, p)
	return req
}

// joinResult is a JoinGroup running in the background.
type joinResult struct {
	ch chan *kmsg.JoinGroupResponse
}

func (h *harness) startJoin(req *kmsg.JoinGroupRequest) joinResult {
	r := joinResult{ch: make(chan *kmsg.JoinGroupResponse, 1)}
	go func() {
		resp, err := h.gs.JoinGroup(context.Background(), client, req)
		if err != nil {
			panic(err)
		}
		r.ch <- resp
	}()
	return r
}

func (r joinResult) wait(t *testing.T) *kmsg.JoinGroupResponse {
	t.Helper()
	select {
	case resp := <-r.ch:
		return resp
	case <-time.After(5 * time.Second):
		t.Fatal("JoinGroup not answered")
		return nil
	}
}

func (r joinResult) notYet(t *testing.T) {
	t.Helper()
	select {
	case resp := <-r.ch:
		t.Fatalf("JoinGroup answered early: %+v", resp)
	default:
	}
}

type syncResult struct {
	ch chan *kmsg.SyncGroupResponse
}

func syncReq(group, memberID string, gen int32, assignments map[string]string) *kmsg.SyncGroupRequest {
	req := kmsg.NewPtrSyncGroupRequest()
	req.Version = 5
	req.Group, req.MemberID, req.Generation = group, memberID, gen
	req.ProtocolType, req.Protocol = kmsg.StringPtr("consumer"), kmsg.StringPtr("range")
	for m, a := range assignments {
		ga := kmsg.NewSyncGroupRequestGroupAssignment()
		ga.MemberID, ga.MemberAssignment = m, []byte(a)
		req.GroupAssignment = append(req.GroupAssignment, ga)
	}
	return req
}

func (h *harness) startSync(req *kmsg.SyncGroupRequest) syncResult {
	r := syncResult{ch: make(chan *kmsg.SyncGroupResponse, 1)}
	go func() {
		resp, err := h.gs.SyncGroup(context.Background(), req)
		if err != nil {
			panic(err)
		}
		r.ch <- resp
	}()
	return r
}

func (r syncResult) wait(t *testing.T) *kmsg.SyncGroupResponse {
	t.Helper()
	select {
	case resp := <-r.ch:
		return resp
	case <-time.After(5 * time.Second):
		t.Fatal("SyncGroup not answered")
		return nil
	}
}

func (r syncResult) notYet(t *testing.T) {
	t.Helper()
	select {
	case resp := <-r.ch:
		t.Fatalf("SyncGroup answered early: %+v", resp)
	default:
	}
}

// waitParked waits until the group holds joins JoinGroups and syncs
// SyncGroups, so that a test knows its requests reached the coordinator.
func (h *harness) waitParked(group string, joins, syncs int) {
	h.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		j, s := h.parked(group)
		if j == joins && s == syncs {
			return
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("group %s: %d joins and %d syncs held, want %d and %d", group, j, s, joins, syncs)
		}
		time.Sleep(time.Millisecond)
	}
}

func (h *harness) parked(group string) (joins, syncs int) {
	g, _ := h.gs.lockGroup(group, false)
	if g == nil {
		return 0, 0
	}
	defer g.mu.Unlock()
	for _, m := range g.mu.members {
		if m.joinWait != nil {
			joins++
		}
		if m.syncWait != nil {
			syncs++
		}
	}
	return joins, syncs
}

func (h *harness) state(group string) State {
	g, _ := h.gs.lockGroup(group, false)
	if g == nil {
		return Dead
	}
	defer g.mu.Unlock()
	return g.mu.state
}

// joinNew joins a new member through the MEMBER_ID_REQUIRED dance and
// returns the held second join.
func (h *harness) joinNew(req *kmsg.JoinGroupRequest) joinResult {
	h.t.Helper()
	first := h.startJoin(req).wait(h.t)
	if first.ErrorCode != kerr.MemberIDRequired.Code || first.MemberID == "" {
		h.t.Fatalf("first join: code %d member %q, want MEMBER_ID_REQUIRED with an id", first.ErrorCode, first.MemberID)
	}
	again := *req
	again.MemberID = first.MemberID
	return h.startJoin(&again)
}

// stableGroup makes a Stable group of n dynamic members and returns their
// member ids, leader first, and the generation.
func (h *harness) stableGroup(group string, n int) ([]string, int32) {
	h.t.Helper()
	var joins []joinResult
	for i := range n {
		joins = append(joins, h.joinNew(joinReq(group, "", "t")))
		if i == 0 {
			// The first member alone completes a rebalance at
			// once; the rest join the next one together.
			resp := joins[0].wait(h.t)
			joins[0] = joinResult{ch: make(chan *kmsg.JoinGroupResponse, 1)}
			joins[0].ch <- resp
		}
	}
	if n > 1 {
		first := <-joins[0].ch
		h.waitParked(group, n-1, 0)
		joins[0] = h.startJoin(joinReq(group, first.MemberID, "t"))
	}
	var resps []*kmsg.JoinGroupResponse
	for _, j := range joins {
		resps = append(resps, j.wait(h.t))
	}
	leader := resps[0].LeaderID
	gen := resps[0].Generation
	ids := []string{leader}
	assign := map[string]string{}
	for _, r := range resps {
		if r.ErrorCode != 0 {
			h.t.Fatalf("join: error %d", r.ErrorCode)
		}
		if r.Generation != gen || r.LeaderID != leader {
			h.t.Fatalf("join: generation %d leader %s, want %d %s", r.Generation, r.LeaderID, gen, leader)
		}
		if r.MemberID != leader {
			ids = append(ids, r.MemberID)
		}
		assign[r.MemberID] = "assignment-of-" + r.MemberID
	}
	var syncs []syncResult
	for _, id := range ids[1:] {
		syncs = append(syncs, h.startSync(syncReq(group, id, gen, nil)))
	}
	h.waitParked(group, 0, n-1)
	syncs = append(syncs, h.startSync(syncReq(group, leader, gen, assign)))
	for _, s := range syncs {
		if r := s.wait(h.t); r.ErrorCode != 0 {
			h.t.Fatalf("sync: error %d", r.ErrorCode)
		}
	}
	if st := h.state(group); st != Stable {
		h.t.Fatalf("state %s, want Stable", st)
	}
	return ids, gen
}

func (h *harness) heartbeat(group, memberID string, gen int32, instanceID *string) int16 {
	req := kmsg.NewPtrHeartbeatRequest()
	req.Version = 4
	req.Group, req.MemberID, req.Generation, req.InstanceID = group, memberID, gen, instanceID
	return h.gs.Heartbeat(context.Background(), req).ErrorCode
}

func errName(code int16) string {
	if code == 0 {
		return "NONE"
	}
	if e := kerr.ErrorForCode(code); e != nil {
		return e.Error()
	}
	return fmt.Sprint(code)
}

func wantCode(t *testing.T, what string, got int16, want *kerr.Error) {
	t.Helper()
	var w int16
	if want != nil {
		w = want.Code
	}
	if got != w {
		t.Fatalf("%s: %s, want %s", what, errName(got), errName(w))
	}
}
