package groups

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/cockroachdb/pebble"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-io/floe/groups/members"
	"github.com/floe-io/floe/internal/keyspan"
	"github.com/floe-io/floe/internal/testkit"
	"github.com/floe-io/floe/internal/valenc"
)

func testMembers() []*consumerMember {
	t1, t2 := topicID{1, 2, 3}, topicID{0xff, 9}
	return []*consumerMember{
		{id: "dyn", state: memberStable, target: members.Partitions{}, assigned: members.Partitions{}, revoking: members.Partitions{},
			since: map[topicID]map[int32]int32{}},
		{id: "static", instanceID: strPtr("inst"), rackID: strPtr("rack-1"), clientID: "client", clientHost: "/10.0.0.1",
			epoch: 7, prevEpoch: 5, state: memberUnrevoked, rebalance: 30 * time.Second, assignor: "range",
			topics: []string{"a", "b"}, regex: "foo-.*",
			target:   members.Partitions{t1: {0, 1}},
			assigned: members.Partitions{t1: {0}, t2: {3, 4, 1000000}},
			revoking: members.Partitions{t2: {2}},
			since:    map[topicID]map[int32]int32{t1: {0: 7}, t2: {3: 5, 4: 5, 1000000: 6, 2: 1}}},
		{id: "left", instanceID: strPtr("i2"), epoch: staticLeftEpoch, prevEpoch: 3, state: memberUnreleased,
			target: members.Partitions{t1: {2}}, assigned: members.Partitions{}, revoking: members.Partitions{},
			since: map[topicID]map[int32]int32{}},
	}
}

// TestConsumerMemberCodec: members round-trip through their records, and
// corrupt records fail without panicking.
func TestConsumerMemberCodec(t *testing.T) {
	for _, m := range testMembers() {
		t.Run(m.id, func(t *testing.T) {
			v := encodeConsumerMember(m)
			got, err := decodeConsumerMember(m.id, v)
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			if !reflect.DeepEqual(got, m) {
				t.Fatalf("round trip:\n got %+v\nwant %+v", got, m)
			}
			if !bytes.Equal(encodeConsumerMember(got), v) {
				t.Fatal("encoding is not canonical")
			}
			for n := range len(v) {
				if _, err := decodeConsumerMember(m.id, v[:n]); err == nil {
					t.Fatalf("truncated to %d bytes: no error", n)
				}
			}
		})
	}
	valid := encodeConsumerMember(testMembers()[1])
	// A member whose every optional field is absent, up to its topic
	// count, then the rest of the record from varied bytes.
	head := []byte{valueV1, 0, 0, 0, 0, 0, 0, 0, 0, 0}
	for _, tc := range []struct {
		name string
		v    []byte
	}{
		{"empty", nil},
		{"unknown format", append([]byte{2}, valid[1:]...)},
		{"trailing bytes", append(slices.Clone(valid), 0)},
		{"bad presence byte", []byte{valueV1, 2}},
		{"bad state", []byte{valueV1, 0, 0, 0, 0, 0, 0, 9}},
		{"huge topic count", binary.AppendUvarint(slices.Clone(head), 1<<62)},
		{"topic count beyond the bytes", append(binary.AppendUvarint(slices.Clone(head), 5), 0, 0, 0)},
		{"huge partition topic count", append(slices.Clone(head), 0, 0, 0xff, 0xff, 0xff, 0xff, 0x0f)},
		{"huge partition count", append(append(slices.Clone(head), 0, 0, 1), append(make([]byte, 16), 0xff, 0xff, 0xff, 0x7f)...)},
		{"huge since count", append(slices.Clone(head), 0, 0, 0, 0, 0, 0xff, 0xff, 0x03)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if m, err := decodeConsumerMember("m", tc.v); err == nil {
				t.Fatalf("decoded %+v", m)
			}
		})
	}
}

// consumerMemberGolden are testMembers' records as written to the 'c'
// family: a change to these bytes is a change of the on-disk format.
var consumerMemberGolden = map[string]string{
	"dyn":    "01000000000000000000000000000000",
	"static": "010104696e737401067261636b2d3106636c69656e74092f31302e302e302e310e0a01e0d4030572616e6765020161016206666f6f2d2e2a010102030000000000000000000000000002000202010203000000000000000000000000000100ff09000000000000000000000000000003060880897a01ff0900000000000000000000000000000104020102030000000000000000000000000001000eff090000000000000000000000000000040402060a080a80897a0c",
	"left":   "01010269320000000306020000000001010203000000000000000000000000000104000000",
}

// TestConsumerMemberGolden: members are written as the golden bytes say.
func TestConsumerMemberGolden(t *testing.T) {
	for _, m := range testMembers() {
		if got, want := hex.EncodeToString(encodeConsumerMember(m)), consumerMemberGolden[m.id]; got != want {
			t.Errorf("%s: record changed:\n got %s\nwant %s", m.id, got, want)
		}
	}
}

func TestConsumerStateCodec(t *testing.T) {
	for _, r := range []consumerStateRecord{
		{},
		{assignmentEpoch: 42, assignor: "range", metaSig: string(bytes.Repeat([]byte{0xab}, 32))},
		{assignmentEpoch: -1, assignor: "uniform"},
	} {
		v := r.encode()
		got, err := decodeConsumerStateRecord(v)
		if err != nil || got != r {
			t.Fatalf("round trip %+v: %+v %v", r, got, err)
		}
		for n := range len(v) {
			if _, err := decodeConsumerStateRecord(v[:n]); err == nil {
				t.Fatalf("truncated to %d bytes: no error", n)
			}
		}
		if _, err := decodeConsumerStateRecord(append(v, 0)); err == nil {
			t.Fatal("trailing bytes: no error")
		}
	}
}

func TestConsumerKeys(t *testing.T) {
	for _, tc := range []struct{ group, member string }{{"g", ""}, {"g", "m"}, {"", "m"}, {"group/with\x00bytes", "member-1"}} {
		k := consumerMemberKey(tc.group, tc.member)
		g, m, err := parseConsumerKey(k)
		if err != nil || g != tc.group || m != tc.member {
			t.Fatalf("%q/%q: parsed %q/%q %v", tc.group, tc.member, g, m, err)
		}
		if !bytes.HasPrefix(k, consumerPrefix(tc.group)) {
			t.Fatalf("%q: not under its group's prefix", k)
		}
	}
	for _, k := range [][]byte{nil, {famConsumer}, {famConsumer, 0, 5, 'a'}, {famGroup, 0, 0}} {
		if _, _, err := parseConsumerKey(k); err == nil {
			t.Fatalf("%x parsed", k)
		}
	}
	// A group whose name extends another's keeps its own keys: the
	// length prefix separates them.
	if bytes.HasPrefix(consumerMemberKey("ab", "x"), consumerPrefix("a")) {
		t.Fatal("group ab's keys fall under group a's prefix")
	}
}

// FuzzConsumerMember: decoding any bytes fails or yields a member whose
// encoding decodes to the same member; it never panics.
func FuzzConsumerMember(f *testing.F) {
	for _, m := range testMembers() {
		f.Add(encodeConsumerMember(m))
	}
	f.Add(consumerStateRecord{assignmentEpoch: 3, assignor: "uniform"}.encode())
	f.Fuzz(func(t *testing.T, b []byte) {
		decodeConsumerStateRecord(b)
		parseConsumerKey(b)
		m, err := decodeConsumerMember("m", b)
		if err != nil {
			return
		}
		v := encodeConsumerMember(m)
		again, err := decodeConsumerMember("m", v)
		if err != nil {
			t.Fatalf("re-encoded member does not decode: %v", err)
		}
		if !bytes.Equal(encodeConsumerMember(again), v) {
			t.Fatal("encoding is not stable")
		}
	})
}

// consumerImage describes everything a KIP-848 group keeps about itself
// and its members but their deadlines, for comparing the group before and
// after a restart.
func (h *harness) consumerImage(group string) string {
	h.t.Helper()
	g, _ := h.gs.lockGroup(group, false)
	if g == nil {
		h.t.Fatalf("group %s not found", group)
	}
	defer g.mu.Unlock()
	c := g.mu.consumer
	var b bytes.Buffer
	fmt.Fprintf(&b, "epoch %d assignment epoch %d assignor %s sig %x state %s\n", c.epoch, c.assignmentEpoch, c.assignor, c.metaSig, c.stateLocked())
	for _, m := range c.sortedMembersLocked() {
		fmt.Fprintf(&b, "%s %x regex compiled %v\n", m.id, encodeConsumerMember(m), m.re != nil)
	}
	fmt.Fprintf(&b, "static %v\nowners %v\n", c.static, c.owners)
	return b.String()
}

// consumerKeys counts group's member keys and state keys on disk.
func (h *harness) consumerKeys(group string) (members, state int) {
	h.t.Helper()
	p := consumerPrefix(group)
	it, err := h.gs.db.NewIter(&pebble.IterOptions{LowerBound: p, UpperBound: keyspan.PrefixEnd(p)})
	if err != nil {
		h.t.Fatal(err)
	}
	defer it.Close()
	for it.First(); it.Valid(); it.Next() {
		if len(it.Key()) == len(p) {
			state++
		} else {
			members++
		}
	}
	return members, state
}

func (h *harness) walBytes() uint64 { return h.gs.db.Metrics().WAL.BytesIn }

func (h *harness) describeConsumerGroup(group string) kmsg.ConsumerGroupDescribeResponseGroup {
	req := kmsg.NewPtrConsumerGroupDescribeRequest()
	req.Version = 1
	req.Groups = []string{group}
	return h.gs.ConsumerGroupDescribe(context.Background(), req).Groups[0]
}

// TestConsumerGroupSurvivesRestart: a KIP-848 group comes back from a
// restart as it was: its members heartbeat at their epochs and keep their
// partitions, commit at their epochs, and describe the same; a steady
// heartbeat writes nothing.
func TestConsumerGroupSurvivesRestart(t *testing.T) {
	h, ft := newConsumerHarness(t)
	ft.set("t", 6)
	members := []string{"a", "b", "c"}
	epochs, owned := h.stableConsumers("g", members...)
	before, image := h.describeConsumerGroup("g"), h.consumerImage("g")
	if n, s := h.consumerKeys("g"); n != 3 || s != 1 {
		t.Fatalf("%d member keys and %d state keys on disk", n, s)
	}

	// A steady heartbeat, full or not, writes nothing.
	wal := h.walBytes()
	for _, m := range members {
		wantHB(t, "steady "+m, h.hb(keepaliveHB("g", m, epochs[m])), nil, epochs[m])
		wantHB(t, "steady full "+m, h.hb(fullHB("g", m, epochs[m], owned[m], "t")), nil, epochs[m])
	}
	if got := h.walBytes(); got != wal {
		t.Fatalf("steady heartbeats wrote %d bytes", got-wal)
	}

	h.restart()
	if got := h.consumerImage("g"); got != image {
		t.Fatalf("group after restart:\n%s\nbefore:\n%s", got, image)
	}
	if after := h.describeConsumerGroup("g"); !reflect.DeepEqual(after, before) {
		t.Fatalf("describe after restart:\n%+v\nbefore:\n%+v", after, before)
	}
	wal = h.walBytes()
	for _, m := range members {
		r := h.hb(fullHB("g", m, epochs[m], owned[m], "t"))
		wantHB(t, "heartbeat "+m+" after restart", r, nil, epochs[m])
		if got := assigned(r); !got.Equal(owned[m]) {
			t.Fatalf("%s assigned %v after restart, had %v", m, got, owned[m])
		}
		wantHB(t, "keepalive "+m+" after restart", h.hb(keepaliveHB("g", m, epochs[m])), nil, epochs[m])
	}
	if got := h.walBytes(); got != wal {
		t.Fatalf("heartbeats after the restart wrote %d bytes", got-wal)
	}
	for _, m := range members {
		for _, l := range owned[m] {
			wantCode(t, "commit of "+m, h.commit(commitReq("g", m, epochs[m], "t", l[0], 7)), nil)
		}
	}
	if st := h.consumerState("g"); st != consumerStable {
		t.Fatalf("state %s after restart", st)
	}
}

// TestConsumerRestartFencesMissingMember: a member that does not come back
// after a restart is fenced a session timeout after Open (its session
// starts afresh), and its partitions go to the others.
func TestConsumerRestartFencesMissingMember(t *testing.T) {
	h, ft := newConsumerHarness(t)
	ft.set("t", 6)
	epochs, owned := h.stableConsumers("g", "a", "b", "c")
	h.advance(30 * time.Second) // 30s of the 45s sessions gone
	h.restart()
	heartbeat := func() {
		for _, m := range []string{"a", "b"} {
			r := h.hb(fullHB("g", m, epochs[m], owned[m], "t"))
			wantCode(t, "heartbeat "+m, r.ErrorCode, nil)
			epochs[m] = r.MemberEpoch
			if r.Assignment != nil {
				owned[m] = assigned(r)
			}
		}
	}
	for range 8 { // 40s after Open: c's fresh session still runs
		h.advance(5 * time.Second)
		heartbeat()
	}
	if d := h.describeConsumerGroup("g"); len(d.Members) != 3 {
		t.Fatalf("c fenced before its fresh session ended: %+v", d.Members)
	}
	for range 4 {
		h.advance(5 * time.Second)
		heartbeat()
	}
	wantHB(t, "c after its session", h.hb(keepaliveHB("g", "c", epochs["c"])), kerr.UnknownMemberID, 0)
	if owned["a"].Count()+owned["b"].Count() != 6 || owned["a"].Intersects(owned["b"]) {
		t.Fatalf("a %v b %v, want all 6 partitions between them", owned["a"], owned["b"])
	}
	if n, _ := h.consumerKeys("g"); n != 2 {
		t.Fatalf("%d member keys on disk, want 2", n)
	}
	image := h.consumerImage("g")
	h.restart()
	if got := h.consumerImage("g"); got != image {
		t.Fatalf("group after the second restart:\n%s\nbefore:\n%s", got, image)
	}
}

// TestConsumerRestartMidRevocation: a member told to give partitions back
// before the restart is still revoking after it, under a fresh rebalance
// timeout; the revocation completes as if nothing happened.
func TestConsumerRestartMidRevocation(t *testing.T) {
	h, ft := newConsumerHarness(t)
	tid := ft.set("t", 4)
	epochs, owned := h.stableConsumers("g", "a")
	old := epochs["a"]
	rb := h.hb(joinHB("g", "b", "t"))
	wantCode(t, "b joins", rb.ErrorCode, nil)
	ra := h.hb(fullHB("g", "a", old, owned["a"], "t"))
	wantHB(t, "a told to revoke", ra, nil, old)
	keep := assigned(ra)
	if keep.Count() != 2 {
		t.Fatalf("a keeps %v", keep)
	}
	image := h.consumerImage("g")
	h.advance(20 * time.Second)
	h.restart()
	if got := h.consumerImage("g"); got != image {
		t.Fatalf("group after restart:\n%s\nbefore:\n%s", got, image)
	}
	g, _ := h.gs.lockGroup("g", false)
	ma := g.mu.consumer.members["a"]
	st, revokeBy := ma.state, ma.revokeBy
	g.mu.Unlock()
	if st != memberUnrevoked || !revokeBy.Equal(h.clk.Now().Add(30*time.Second)) {
		t.Fatalf("a after restart: state %d revoke by %v", st, revokeBy)
	}
	// b still waits for a; a still revokes at its old epoch.
	rb = h.hb(fullHB("g", "b", rb.MemberEpoch, members.Partitions{}, "t"))
	wantCode(t, "b", rb.ErrorCode, nil)
	if assigned(rb).Count() != 0 {
		t.Fatalf("b got %v while a still owns it", assigned(rb))
	}
	ra = h.hb(fullHB("g", "a", old, owned["a"], "t"))
	wantHB(t, "a still revoking", ra, nil, old)
	ra = h.hb(fullHB("g", "a", old, keep, "t"))
	if ra.ErrorCode != 0 || ra.MemberEpoch <= old || !assigned(ra).Equal(keep) {
		t.Fatalf("a after revoking: %s epoch %d assigned %v", errName(ra.ErrorCode), ra.MemberEpoch, assigned(ra))
	}
	rb = h.hb(fullHB("g", "b", rb.MemberEpoch, members.Partitions{}, "t"))
	if got := assigned(rb); got.Count() != 2 || got.Intersects(keep) {
		t.Fatalf("b got %v, a keeps %v", got, keep)
	}
	// KIP-1251: the epochs partitions were assigned at survived.
	var kept int32
	for _, l := range keep {
		kept = l[0]
	}
	wantCode(t, "a commits a kept partition at its old epoch", h.commit(commitReq("g", "a", old, "t", kept, 1)), nil)
	for _, p := range assigned(rb)[tid] {
		wantCode(t, "a commits a given-away partition at its old epoch", h.commit(commitReq("g", "a", old, "t", p, 1)), kerr.StaleMemberEpoch)
	}
	if st := h.consumerState("g"); st != consumerStable {
		t.Fatalf("state %s", st)
	}
}

// TestConsumerRestartRevocationTimeout: the rebalance timeout of a member
// revoking across a restart runs from Open.
func TestConsumerRestartRevocationTimeout(t *testing.T) {
	h, ft := newConsumerHarness(t)
	ft.set("t", 4)
	epochs, owned := h.stableConsumers("g", "a")
	rb := h.hb(joinHB("g", "b", "t"))
	wantHB(t, "a told to revoke", h.hb(fullHB("g", "a", epochs["a"], owned["a"], "t")), nil, epochs["a"])
	h.advance(25 * time.Second)
	h.restart()
	for range 5 { // 25s after Open
		h.advance(5 * time.Second)
		wantCode(t, "a", h.hb(keepaliveHB("g", "a", epochs["a"])).ErrorCode, nil)
		wantCode(t, "b", h.hb(keepaliveHB("g", "b", rb.MemberEpoch)).ErrorCode, nil)
	}
	h.advance(5 * time.Second)
	wantHB(t, "a after its rebalance timeout", h.hb(keepaliveHB("g", "a", epochs["a"])), kerr.UnknownMemberID, 0)
	r := h.hb(fullHB("g", "b", rb.MemberEpoch, members.Partitions{}, "t"))
	if assigned(r).Count() != 4 {
		t.Fatalf("b got %v, want all 4", assigned(r))
	}
}

// TestConsumerStaticLeftSurvivesRestart: a static member that left with
// epoch -2 keeps its partitions reserved across a restart; its successor
// takes them over without a new group epoch.
func TestConsumerStaticLeftSurvivesRestart(t *testing.T) {
	h, ft := newConsumerHarness(t)
	ft.set("t", 4)
	join := func(member, instance string) *kmsg.ConsumerGroupHeartbeatResponse {
		return h.joinStatic("g", member, instance, "t")
	}
	ra, rb := join("a1", "ia"), join("b1", "ib")
	epochs := map[string]int32{"a1": ra.MemberEpoch, "b1": rb.MemberEpoch}
	owned := map[string]members.Partitions{"a1": assigned(ra), "b1": assigned(rb)}
	for range 3 {
		for _, m := range []string{"a1", "b1"} {
			req := fullHB("g", m, epochs[m], owned[m], "t")
			req.InstanceID = kmsg.StringPtr(map[string]string{"a1": "ia", "b1": "ib"}[m])
			r := h.hb(req)
			wantCode(t, "heartbeat "+m, r.ErrorCode, nil)
			epochs[m] = r.MemberEpoch
			if r.Assignment != nil {
				owned[m] = assigned(r)
			}
		}
	}
	if owned["b1"].Count() != 2 {
		t.Fatalf("b1 owns %v", owned["b1"])
	}
	leave := keepaliveHB("g", "b1", staticLeftEpoch)
	leave.InstanceID = kmsg.StringPtr("ib")
	wantCode(t, "static leave", h.hb(leave).ErrorCode, nil)
	groupEpoch := h.groupEpoch("g")
	h.restart()
	// a1 heartbeats: the reserved partitions do not move to it.
	req := fullHB("g", "a1", epochs["a1"], owned["a1"], "t")
	req.InstanceID = kmsg.StringPtr("ia")
	r := h.hb(req)
	wantHB(t, "a1 after restart", r, nil, epochs["a1"])
	if !assigned(r).Equal(owned["a1"]) {
		t.Fatalf("a1 got %v, had %v", assigned(r), owned["a1"])
	}
	wantCode(t, "the left member heartbeating", h.hb(keepaliveHB("g", "b1", epochs["b1"])).ErrorCode, kerr.FencedMemberEpoch)
	rb2 := join("b2", "ib")
	wantHB(t, "b2 replaces b1 after restart", rb2, nil, epochs["b1"])
	if !assigned(rb2).Equal(owned["b1"]) {
		t.Fatalf("b2 got %v, b1 had %v", assigned(rb2), owned["b1"])
	}
	if e := h.groupEpoch("g"); e != groupEpoch {
		t.Fatalf("group epoch moved %d -> %d", groupEpoch, e)
	}
	if n, _ := h.consumerKeys("g"); n != 2 {
		t.Fatalf("%d member keys on disk, want 2 (a1, b2)", n)
	}
}

// TestConsumerRestartNoticesTopicChanges: topic metadata that changed while
// the coordinator was down bumps the epoch at the first heartbeat; metadata
// that did not leaves it.
func TestConsumerRestartNoticesTopicChanges(t *testing.T) {
	h, ft := newConsumerHarness(t)
	ft.set("t", 4)
	epochs, _ := h.stableConsumers("g", "a", "b")
	e := h.groupEpoch("g")
	ft.set("t", 6)
	h.restart()
	h.hb(keepaliveHB("g", "a", epochs["a"]))
	if got := h.groupEpoch("g"); got != e+1 {
		t.Fatalf("group epoch %d after the topic grew during the restart, want %d", got, e+1)
	}
}

// TestConsumerStateDeleted: member keys go when members leave, and the
// group's keys with the group or when it turns classic.
func TestConsumerStateDeleted(t *testing.T) {
	h, ft := newConsumerHarness(t)
	ft.set("t", 2)
	epochs, _ := h.stableConsumers("g", "a", "b")
	wantCode(t, "a leaves", h.hb(keepaliveHB("g", "a", -1)).ErrorCode, nil)
	if n, s := h.consumerKeys("g"); n != 1 || s != 1 {
		t.Fatalf("%d member keys and %d state keys after a left", n, s)
	}
	wantCode(t, "b leaves", h.hb(keepaliveHB("g", "b", -1)).ErrorCode, nil)
	wantCode(t, "commit", h.commit(commitReq("g", "", -1, "t", 0, 1)), nil)
	h.restart()
	if st := h.consumerState("g"); st != consumerEmpty {
		t.Fatalf("state %s after restart", st)
	}
	wantHB(t, "b after leaving", h.hb(keepaliveHB("g", "b", epochs["b"])), kerr.UnknownMemberID, 0)
	dg := kmsg.NewPtrDeleteGroupsRequest()
	dg.Groups = []string{"g"}
	wantCode(t, "delete", h.gs.DeleteGroups(context.Background(), dg).Groups[0].ErrorCode, nil)
	if n, s := h.consumerKeys("g"); n != 0 || s != 0 {
		t.Fatalf("%d member keys and %d state keys after DeleteGroups", n, s)
	}

	// A consumer group that turns classic drops its KIP-848 state.
	h.stableConsumers("g2", "a")
	wantCode(t, "a leaves g2", h.hb(keepaliveHB("g2", "a", -1)).ErrorCode, nil)
	r := h.joinNew(joinReq("g2", "", "t")).wait(t)
	wantCode(t, "classic join", r.ErrorCode, nil)
	if n, s := h.consumerKeys("g2"); n != 0 || s != 0 {
		t.Fatalf("%d member keys and %d state keys after turning classic", n, s)
	}
}

// TestStrayConsumerKeysDropped: consumer-family keys of a group that is not
// a KIP-848 group are dropped at Open.
func TestStrayConsumerKeysDropped(t *testing.T) {
	h, ft := newConsumerHarness(t)
	ft.set("t", 2)
	h.stableGroup("classic", 1)
	m := testMembers()[0]
	b := h.gs.newBatch()
	b.b.Set(consumerMemberKey("classic", m.id), encodeConsumerMember(m), nil)
	b.b.Set(consumerMemberKey("nogroup", m.id), encodeConsumerMember(m), nil)
	b.b.Set(consumerPrefix("nogroup"), consumerStateRecord{}.encode(), nil)
	if err := b.commit(); err != nil {
		t.Fatal(err)
	}
	h.restart()
	for _, g := range []string{"classic", "nogroup"} {
		if n, s := h.consumerKeys(g); n != 0 || s != 0 {
			t.Fatalf("%s: %d member keys and %d state keys left", g, n, s)
		}
	}
	if st := h.state("classic"); st != Stable {
		t.Fatalf("classic group %s", st)
	}
}

// TestCorruptConsumerMemberFailsOpen: a member record that does not decode
// stops Open rather than losing the member silently.
func TestCorruptConsumerMemberFailsOpen(t *testing.T) {
	h, ft := newConsumerHarness(t)
	ft.set("t", 2)
	h.stableConsumers("g", "a")
	b := h.gs.newBatch()
	b.b.Set(consumerMemberKey("g", "a"), []byte{valenc.Version1, 0xff}, nil)
	if err := b.commit(); err != nil {
		t.Fatal(err)
	}
	if err := h.gs.Close(); err != nil {
		t.Fatal(err)
	}
	opts := Options{Dir: h.dir, Logger: testkit.Logger(), Now: h.clk.Now, manualExpiry: true, Topics: ft}
	if gs, err := Open(opts); err == nil {
		gs.Close()
		t.Fatal("Open succeeded")
	}
}

// checkConsumerDurable fails unless what is on disk for group is what the
// group holds in memory: its epoch, state and every member's record.
func (h *harness) checkConsumerDurable(group, what string) {
	h.t.Helper()
	l, err := loadAll(h.gs.db)
	if err != nil {
		h.t.Fatalf("%s: load: %v", what, err)
	}
	g, _ := h.gs.lockGroup(group, false)
	if g == nil {
		h.t.Fatalf("%s: group %s not found", what, group)
	}
	defer g.mu.Unlock()
	c := g.mu.consumer
	gr, lc := l.groups[group], l.consumers[group]
	if !gr.consumer || gr.generation != c.epoch || lc == nil || lc.state == nil || *lc.state != c.stateRecordLocked() {
		h.t.Fatalf("%s: on disk %+v %+v, in memory epoch %d state %+v", what, gr, lc, c.epoch, c.stateRecordLocked())
	}
	onDisk := map[string][]byte{}
	for _, m := range lc.members {
		onDisk[m.id] = m.written
	}
	if len(onDisk) != len(c.members) {
		h.t.Fatalf("%s: %d members on disk, %d in memory", what, len(onDisk), len(c.members))
	}
	for id, m := range c.members {
		if v := encodeConsumerMember(m); !bytes.Equal(onDisk[id], v) {
			h.t.Fatalf("%s: member %s on disk %x, in memory %x", what, id, onDisk[id], v)
		}
	}
}

// TestConsumerStateAlwaysDurable runs a long pseudo-random life of a group
// (joins, heartbeats, revocations, leaves, static restarts, expiries, topic
// changes) and checks after every step that the disk holds what memory
// does, and at the end that a restart changes nothing.
func TestConsumerStateAlwaysDurable(t *testing.T) {
	h, ft := newConsumerHarness(t)
	ft.set("t", 5)
	ft.set("u", 3)
	rnd := rand.New(rand.NewPCG(1, 2))
	type client struct {
		id, instance string
		epoch        int32 // -1: not joined
		owned        members.Partitions
		away         bool // left with epoch -2
	}
	var clients []*client
	for i := range 5 {
		cl := &client{id: fmt.Sprintf("m%d", i), epoch: -1}
		if i%2 == 0 {
			cl.instance = fmt.Sprintf("i%d", i)
		}
		clients = append(clients, cl)
	}
	n := 0
	apply := func(cl *client, r *kmsg.ConsumerGroupHeartbeatResponse) {
		switch {
		case r.ErrorCode != 0:
			cl.epoch, cl.owned = -1, nil
		case r.MemberEpoch < 0:
			cl.epoch, cl.owned = -1, nil
		default:
			cl.epoch = r.MemberEpoch
			if r.Assignment != nil {
				cl.owned = assigned(r)
			}
		}
	}
	for step := range 400 {
		cl := clients[rnd.IntN(len(clients))]
		var req *kmsg.ConsumerGroupHeartbeatRequest
		topics := []string{"t", "u"}[:1+rnd.IntN(2)]
		switch op := rnd.IntN(20); {
		case op == 0:
			h.advance(time.Duration(5+rnd.IntN(30)) * time.Second)
		case op == 1:
			ft.set([]string{"t", "u"}[rnd.IntN(2)], int32(2+rnd.IntN(6)))
			h.topicsChanged()
		case cl.epoch < 0:
			req = joinHB("g", cl.id, topics...)
			if cl.away && rnd.IntN(2) == 0 {
				// A static member back under a new id.
				n++
				cl.id = fmt.Sprintf("%s-%d", cl.id[:2], n)
			}
			cl.away = false
		case op == 2:
			req = keepaliveHB("g", cl.id, -1)
			if cl.instance != "" {
				req.MemberEpoch = staticLeftEpoch
				cl.away = true
			}
		case op < 6:
			req = keepaliveHB("g", cl.id, cl.epoch)
		default:
			req = fullHB("g", cl.id, cl.epoch, cl.owned, topics...)
		}
		if req != nil {
			if cl.instance != "" {
				req.InstanceID = kmsg.StringPtr(cl.instance)
			}
			apply(cl, h.hb(req))
		}
		if h.consumerState("g") != "Dead" {
			h.checkConsumerDurable("g", fmt.Sprintf("step %d", step))
		}
	}
	image := h.consumerImage("g")
	h.restart()
	if got := h.consumerImage("g"); got != image {
		t.Fatalf("group after restart:\n%s\nbefore:\n%s", got, image)
	}
}
