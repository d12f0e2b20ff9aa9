package groups

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestDescribeGroups(t *testing.T) {
	h := newHarness(t)
	ids, _ := h.stableGroup("g", 2)
	h.commit(commitReq("simple", "", -1, "t", 0, 1))
	req := kmsg.NewPtrDescribeGroupsRequest()
	req.Version = 5
	req.Groups = []string{"g", "simple", "nope"}
	req.IncludeAuthorizedOperations = true
	resp := h.gs.DescribeGroups(context.Background(), req)
	g := resp.Groups[0]
	if g.ErrorCode != 0 || g.State != "Stable" || g.ProtocolType != "consumer" || g.Protocol != "range" || len(g.Members) != 2 {
		t.Fatalf("stable group: %+v", g)
	}
	for _, m := range g.Members {
		if m.ClientID != "test-client" || m.ClientHost != "/127.0.0.1" || string(m.MemberAssignment) != "assignment-of-"+m.MemberID || len(m.ProtocolMetadata) == 0 {
			t.Fatalf("member: %+v", m)
		}
	}
	if g.AuthorizedOperations&(1<<8) == 0 {
		t.Errorf("authorized operations %d", g.AuthorizedOperations)
	}
	if s := resp.Groups[1]; s.State != "Empty" || s.ProtocolType != "" || len(s.Members) != 0 {
		t.Fatalf("simple group: %+v", s)
	}
	if n := resp.Groups[2]; n.State != "Dead" || n.ErrorCode != 0 {
		t.Fatalf("missing group v5: %+v", n)
	}
	req.Version = 6
	if n := h.gs.DescribeGroups(context.Background(), req).Groups[2]; n.State != "Dead" || n.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("missing group v6: %+v", n)
	}

	// While rebalancing: no protocol, metadata or assignments.
	h.startJoin(joinReq("g", ids[0], "t"))
	h.waitParked("g", 1, 0)
	g = h.gs.DescribeGroups(context.Background(), req).Groups[0]
	if g.State != "PreparingRebalance" || g.Protocol != "" || len(g.Members) != 2 || len(g.Members[0].MemberAssignment) != 0 {
		t.Fatalf("rebalancing group: %+v", g)
	}
}

func TestListGroups(t *testing.T) {
	h := newHarness(t)
	h.stableGroup("stable", 1)
	h.commit(commitReq("simple", "", -1, "t", 0, 1))
	list := func(version int16, states, types []string) []string {
		req := kmsg.NewPtrListGroupsRequest()
		req.Version, req.StatesFilter, req.TypesFilter = version, states, types
		var out []string
		for _, g := range h.gs.ListGroups(context.Background(), req).Groups {
			out = append(out, g.Group+"/"+g.GroupState+"/"+g.GroupType+"/"+g.ProtocolType)
		}
		return out
	}
	for _, tc := range []struct {
		name          string
		states, types []string
		want          string
	}{
		{"all", nil, nil, "[simple/Empty/classic/ stable/Stable/classic/consumer]"},
		{"stable", []string{"Stable"}, nil, "[stable/Stable/classic/consumer]"},
		{"case-insensitive", []string{"empty"}, nil, "[simple/Empty/classic/]"},
		{"classic", nil, []string{"Classic"}, "[simple/Empty/classic/ stable/Stable/classic/consumer]"},
		{"consumer type", nil, []string{"consumer"}, "[]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := list(5, tc.states, tc.types)
			if s := fmtList(got); s != tc.want {
				t.Fatalf("got %s, want %s", s, tc.want)
			}
		})
	}
}

func fmtList(l []string) string {
	s := "["
	for i, x := range l {
		if i > 0 {
			s += " "
		}
		s += x
	}
	return s + "]"
}

func TestDeleteGroups(t *testing.T) {
	h := newHarness(t)
	h.stableGroup("busy", 1)
	h.commit(commitReq("idle", "", -1, "t", 0, 1))
	req := kmsg.NewPtrDeleteGroupsRequest()
	req.Version = 2
	req.Groups = []string{"busy", "idle", "nope", "idle"}
	resp := h.gs.DeleteGroups(context.Background(), req)
	wantCode(t, "busy", resp.Groups[0].ErrorCode, kerr.NonEmptyGroup)
	wantCode(t, "idle", resp.Groups[1].ErrorCode, nil)
	wantCode(t, "nope", resp.Groups[2].ErrorCode, kerr.GroupIDNotFound)
	wantCode(t, "idle again", resp.Groups[3].ErrorCode, kerr.GroupIDNotFound)
	h.restart()
	if off, _, _ := h.fetch(8, "idle", "t", 0); off != -1 {
		t.Fatalf("deleted group's offset: %d", off)
	}
	list := h.gs.ListGroups(context.Background(), kmsg.NewPtrListGroupsRequest())
	for _, g := range list.Groups {
		if g.Group == "idle" {
			t.Fatal("deleted group listed after restart")
		}
	}
}
