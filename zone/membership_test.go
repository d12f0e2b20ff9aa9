package zone

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/internal/testkit"
)

// cluster is three brokers of zone "a", one of zone "b", and one of zone
// "a" that serves no chunks (no internal address).
var cluster = []coordapi.BrokerInfo{
	{NodeID: 1, Host: "h1", Port: 1, Rack: "a", InternalAddr: "h1:8080"},
	{NodeID: 2, Host: "h2", Port: 1, Rack: "a", InternalAddr: "h2:8080"},
	{NodeID: 3, Host: "h3", Port: 1, Rack: "a", InternalAddr: "h3:8080"},
	{NodeID: 4, Host: "h4", Port: 1, Rack: "b", InternalAddr: "h4:8080"},
	{NodeID: 5, Host: "h5", Port: 1, Rack: "a"},
}

// view returns broker self's membership of brokers, refreshed.
func view(t *testing.T, self coordapi.BrokerInfo, brokers []coordapi.BrokerInfo) *Membership {
	t.Helper()
	l := &lister{}
	l.set(brokers, nil)
	m := NewMembership(self, l, MembershipOptions{})
	if err := m.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	return m
}

// chunks are the chunks the ownership tests place: 300 objects of 10.
func chunks(yield func(string, int64) bool) {
	for o := range 300 {
		for idx := range int64(10) {
			if !yield(fmt.Sprintf("wal/0190%04d", o), idx) {
				return
			}
		}
	}
}

func TestOwnerSpreadsChunks(t *testing.T) {
	views := []*Membership{view(t, cluster[0], cluster), view(t, cluster[1], cluster), view(t, cluster[2], cluster)}
	if got := ids(views[0].Members()); !slices.Equal(got, []int32{1, 2, 3}) {
		t.Fatalf("zone a's members: %v, want [1 2 3]", got)
	}
	per := map[int32]int{}
	var n int
	for key, idx := range chunks {
		owner, self := views[0].Owner(key, idx)
		per[owner.NodeID]++
		n++
		if self != (owner.NodeID == 1) {
			t.Fatalf("Owner(%s, %d) = %d, self %v", key, idx, owner.NodeID, self)
		}
		for _, v := range views[1:] {
			if o, _ := v.Owner(key, idx); o.NodeID != owner.NodeID {
				t.Fatalf("Owner(%s, %d): broker 1 says %d, broker %d says %d", key, idx, owner.NodeID, v.Self().NodeID, o.NodeID)
			}
		}
	}
	for _, id := range []int32{1, 2, 3} {
		// A third each, within 20% (the deviation is about 2.5%).
		if got := per[id]; got < n/3*8/10 || got > n/3*12/10 {
			t.Errorf("broker %d owns %d of %d chunks", id, got, n)
		}
	}
	if len(per) != 3 {
		t.Errorf("owners %v: only zone a's brokers with an internal address own chunks", per)
	}
}

// TestOwnerStable: when a broker leaves or joins, only the chunks it held
// or gains change owner.
func TestOwnerStable(t *testing.T) {
	without := func(id int32) []coordapi.BrokerInfo {
		return slices.DeleteFunc(slices.Clone(cluster), func(b coordapi.BrokerInfo) bool { return b.NodeID == id })
	}
	tests := []struct {
		name  string
		after []coordapi.BrokerInfo
		// mayMove reports whether a chunk may go from before to after.
		mayMove func(before, after int32) bool
	}{
		{"another zone's broker leaves", without(4), func(_, _ int32) bool { return false }},
		{"a broker without internal address leaves", without(5), func(_, _ int32) bool { return false }},
		{"a broker of the zone leaves", without(3), func(before, _ int32) bool { return before == 3 }},
		{"a broker joins the zone", append(slices.Clone(cluster), coordapi.BrokerInfo{NodeID: 6, Host: "h6", Port: 1, Rack: "a", InternalAddr: "h6:8080"}),
			func(_, after int32) bool { return after == 6 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before, after := view(t, cluster[0], cluster), view(t, cluster[0], tt.after)
			var moved int
			for key, idx := range chunks {
				b, _ := before.Owner(key, idx)
				a, _ := after.Owner(key, idx)
				if a.NodeID == b.NodeID {
					continue
				}
				moved++
				if !tt.mayMove(b.NodeID, a.NodeID) {
					t.Fatalf("chunk (%s, %d) moved from %d to %d", key, idx, b.NodeID, a.NodeID)
				}
			}
			t.Logf("%d chunks moved", moved)
		})
	}
}

func TestMembershipWithoutRack(t *testing.T) {
	self := coordapi.BrokerInfo{NodeID: 1, Host: "h1", Port: 1, InternalAddr: "h1:8080"}
	others := []coordapi.BrokerInfo{self, {NodeID: 2, Host: "h2", Port: 1, InternalAddr: "h2:8080"}}
	m := view(t, self, others)
	if m.Sharing() {
		t.Fatal("a broker without a rack shares chunks")
	}
	for key, idx := range chunks {
		if o, isSelf := m.Owner(key, idx); !isSelf || o.NodeID != 1 {
			t.Fatalf("Owner(%s, %d) = %d: without a rack every chunk is the broker's own", key, idx, o.NodeID)
		}
	}
}

func TestMembershipKeepsLastList(t *testing.T) {
	l := &lister{}
	l.set(cluster, nil)
	m := NewMembership(cluster[0], l, MembershipOptions{})
	if got := ids(m.Members()); !slices.Equal(got, []int32{1}) {
		t.Fatalf("before a refresh: %v, want itself alone", got)
	}
	if err := m.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	l.set(nil, errors.New("coordinator down"))
	if err := m.Refresh(context.Background()); err == nil {
		t.Fatal("a failed listing refreshed")
	}
	if got := ids(m.Members()); !slices.Equal(got, []int32{1, 2, 3}) {
		t.Fatalf("after a failed refresh: %v, want the last list", got)
	}
	// Itself is a member even when the registry does not name it yet.
	l.set(cluster[1:3], nil)
	if err := m.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := ids(m.Members()); !slices.Equal(got, []int32{1, 2, 3}) {
		t.Fatalf("registry without self: %v", got)
	}
}

func TestMembershipRun(t *testing.T) {
	l := &lister{}
	l.set(cluster[:2], nil)
	m := NewMembership(cluster[0], l, MembershipOptions{RefreshInterval: 10 * time.Millisecond, Logger: testkit.Logger()})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		m.Run(ctx)
	}()
	defer func() { cancel(); <-done }()
	wait := func(want ...int32) {
		t.Helper()
		testkit.CheckFor(t, 5*time.Second, 5*time.Millisecond, func() error {
			if got := ids(m.Members()); !slices.Equal(got, want) {
				return fmt.Errorf("members %v, want %v", got, want)
			}
			return nil
		})
	}
	wait(1, 2)
	l.set(cluster, nil)
	wait(1, 2, 3)
	l.set(cluster[:1], nil)
	wait(1)
}

func ids(bs []coordapi.BrokerInfo) []int32 {
	var out []int32
	for _, b := range bs {
		out = append(out, b.NodeID)
	}
	return out
}
