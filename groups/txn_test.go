package groups

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// txnReq is a TxnOffsetCommit v4 of one partition by producer pid at
// epoch, with generation -1 and no member (a consumer outside a group, or
// any commit before v3).
func txnReq(group string, pid int64, epoch int16, topic string, partition int32, offset int64) *kmsg.TxnOffsetCommitRequest {
	req := kmsg.NewPtrTxnOffsetCommitRequest()
	req.Version = 4
	req.TransactionalID = "tx"
	req.Group, req.ProducerID, req.ProducerEpoch = group, pid, epoch
	t := kmsg.NewTxnOffsetCommitRequestTopic()
	t.Topic = topic
	p := kmsg.NewTxnOffsetCommitRequestTopicPartition()
	p.Partition, p.Offset, p.LeaderEpoch, p.Metadata = partition, offset, 5, kmsg.StringPtr("txn-meta")
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	return req
}

// memberTxnReq is txnReq from a member of generation gen.
func memberTxnReq(group, member string, gen int32, pid int64) *kmsg.TxnOffsetCommitRequest {
	req := txnReq(group, pid, 0, "t", 0, 10)
	req.MemberID, req.Generation = member, gen
	return req
}

func (h *harness) txnCommit(req *kmsg.TxnOffsetCommitRequest) int16 {
	h.t.Helper()
	resp := h.gs.TxnOffsetCommit(context.Background(), req)
	if len(resp.Topics) != len(req.Topics) || len(resp.Topics[0].Partitions) != len(req.Topics[0].Partitions) {
		h.t.Fatalf("txn offset commit: %+v", resp)
	}
	code := resp.Topics[0].Partitions[0].ErrorCode
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if p.ErrorCode != code {
				h.t.Fatalf("txn offset commit: partitions answered differently: %+v", resp.Topics)
			}
		}
	}
	return code
}

func (h *harness) complete(group string, pid int64, commit bool) {
	h.t.Helper()
	if err := h.gs.CompleteTxnOffsets(context.Background(), group, pid, commit); err != nil {
		h.t.Fatalf("complete %s producer %d commit=%v: %v", group, pid, commit, err)
	}
}

// stableFetch fetches one partition at version (7+) with RequireStable,
// and returns its error code and offset.
func (h *harness) stableFetch(version int16, group, topic string, partition int32) (int16, int64) {
	h.t.Helper()
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Version, req.RequireStable = version, true
	if version >= 8 {
		g := kmsg.NewOffsetFetchRequestGroup()
		g.Group = group
		g.Topics = []kmsg.OffsetFetchRequestGroupTopic{{Topic: topic, Partitions: []int32{partition}}}
		req.Groups = append(req.Groups, g)
		p := h.gs.OffsetFetch(context.Background(), req).Groups[0].Topics[0].Partitions[0]
		return p.ErrorCode, p.Offset
	}
	req.Group = group
	req.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: topic, Partitions: []int32{partition}}}
	p := h.gs.OffsetFetch(context.Background(), req).Topics[0].Partitions[0]
	return p.ErrorCode, p.Offset
}

// wantOffset checks what a plain OffsetFetch (v8) and a RequireStable one
// (v7 and v8) answer for one partition.
func (h *harness) wantOffset(what, group, topic string, partition int32, committed int64, unstable bool) {
	h.t.Helper()
	if off, _, _ := h.fetch(8, group, topic, partition); off != committed {
		h.t.Fatalf("%s: committed offset %d, want %d", what, off, committed)
	}
	for _, v := range []int16{7, 8} {
		code, off := h.stableFetch(v, group, topic, partition)
		switch {
		case unstable && (code != kerr.UnstableOffsetCommit.Code || off != -1):
			h.t.Fatalf("%s: stable fetch v%d: %s offset %d, want UNSTABLE_OFFSET_COMMIT", what, v, errName(code), off)
		case !unstable && (code != 0 || off != committed):
			h.t.Fatalf("%s: stable fetch v%d: %s offset %d, want %d", what, v, errName(code), off, committed)
		}
	}
}

func TestTxnOffsetsCommitAndAbort(t *testing.T) {
	for _, tc := range []struct {
		name    string
		commit  bool
		restart bool // between the TxnOffsetCommit and the end of the transaction
		want    int64
	}{
		{"commit", true, false, 42},
		{"abort", false, false, 7},
		{"commit after restart", true, true, 42},
		{"abort after restart", false, true, 7},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			wantCode(t, "commit", h.commit(commitReq("g", "", -1, "t", 0, 7)), nil)
			wantCode(t, "txn commit", h.txnCommit(txnReq("g", 1000, 3, "t", 0, 42)), nil)
			h.wantOffset("pending", "g", "t", 0, 7, true)
			if tc.restart {
				h.restart()
				h.wantOffset("pending after restart", "g", "t", 0, 7, true)
			}
			h.complete("g", 1000, tc.commit)
			h.wantOffset("ended", "g", "t", 0, tc.want, false)
			// A second call (a retry) finds nothing and changes nothing.
			h.complete("g", 1000, !tc.commit)
			h.wantOffset("completed twice", "g", "t", 0, tc.want, false)
			h.restart()
			h.wantOffset("ended, after restart", "g", "t", 0, tc.want, false)
			if tc.commit {
				off, epoch, meta := h.fetch(8, "g", "t", 0)
				if off != 42 || epoch != 5 || meta != "txn-meta" {
					t.Fatalf("committed %d epoch %d metadata %q, want the TxnOffsetCommit's 42, 5, txn-meta", off, epoch, meta)
				}
			}
		})
	}
}

func TestTxnOffsetsNewGroup(t *testing.T) {
	h := newHarness(t)
	wantCode(t, "txn commit to a missing group", h.txnCommit(txnReq("new", 1, 0, "t", 0, 3)), nil)
	if st := h.state("new"); st != Empty {
		t.Fatalf("state %s, want Empty (a simple group)", st)
	}
	// Kept with nothing but pending offsets, across a restart too.
	h.restart()
	h.wantOffset("pending after restart", "new", "t", 0, -1, true)
	h.complete("new", 1, false)
	if st := h.state("new"); st != Dead {
		t.Fatalf("state %s after the abort, want the empty simple group gone", st)
	}
	wantCode(t, "txn commit", h.txnCommit(txnReq("new", 1, 0, "t", 0, 4)), nil)
	h.complete("new", 1, true)
	h.restart()
	h.wantOffset("committed", "new", "t", 0, 4, false)
	// CompleteTxnOffsets of a group that never existed succeeds.
	h.complete("never", 1, true)
}

func TestTxnOffsetsReplacedAndTwoProducers(t *testing.T) {
	h := newHarness(t)
	// Producer 1: two commits of partition 0, the second replaces the
	// first; partition 1 once.
	wantCode(t, "p1 first", h.txnCommit(txnReq("g", 1, 0, "t", 0, 10)), nil)
	wantCode(t, "p1 again", h.txnCommit(txnReq("g", 1, 0, "t", 0, 11)), nil)
	wantCode(t, "p1 partition 1", h.txnCommit(txnReq("g", 1, 0, "t", 1, 20)), nil)
	// Producer 2: partitions 1 and 2.
	wantCode(t, "p2 partition 1", h.txnCommit(txnReq("g", 2, 0, "t", 1, 21)), nil)
	wantCode(t, "p2 partition 2", h.txnCommit(txnReq("g", 2, 0, "t", 2, 30)), nil)
	h.restart()

	h.complete("g", 1, true)
	h.wantOffset("p1's replaced offset", "g", "t", 0, 11, false)
	// Partition 1 is committed by p1 but p2 still has a pending offset.
	h.wantOffset("p1 committed, p2 pending", "g", "t", 1, 20, true)
	h.wantOffset("p2 pending", "g", "t", 2, -1, true)

	h.complete("g", 2, false)
	h.wantOffset("p2 aborted", "g", "t", 1, 20, false)
	h.wantOffset("p2 aborted, nothing committed", "g", "t", 2, -1, false)

	// Every offset, with RequireStable: only committed partitions are
	// listed, pending ones as UNSTABLE_OFFSET_COMMIT.
	wantCode(t, "p2 again", h.txnCommit(txnReq("g", 2, 1, "t", 1, 22)), nil)
	all := kmsg.NewPtrOffsetFetchRequest()
	all.Version, all.RequireStable = 8, true
	all.Groups = []kmsg.OffsetFetchRequestGroup{{Group: "g"}}
	got := map[int32]int16{}
	for _, p := range h.gs.OffsetFetch(context.Background(), all).Groups[0].Topics[0].Partitions {
		got[p.Partition] = p.ErrorCode
	}
	if len(got) != 2 || got[0] != 0 || got[1] != kerr.UnstableOffsetCommit.Code {
		t.Fatalf("all offsets, stable: %v", got)
	}
}

// TestTxnCommitKeepsNewerOffset: an offset committed after the
// TxnOffsetCommit (by OffsetCommit or by another transaction) is newer
// than the transaction's, which its commit does not write, as Kafka.
func TestTxnCommitKeepsNewerOffset(t *testing.T) {
	h := newHarness(t)
	wantCode(t, "p1", h.txnCommit(txnReq("g", 1, 0, "t", 0, 10)), nil)
	wantCode(t, "p2", h.txnCommit(txnReq("g", 2, 0, "t", 1, 20)), nil)
	wantCode(t, "p3", h.txnCommit(txnReq("g", 3, 0, "t", 1, 30)), nil)
	wantCode(t, "plain commit after p1", h.commit(commitReq("g", "", -1, "t", 0, 5)), nil)
	h.restart() // the order survives
	h.complete("g", 1, true)
	h.wantOffset("p1 older than the plain commit", "g", "t", 0, 5, false)
	h.complete("g", 3, true)
	h.complete("g", 2, true)
	h.wantOffset("p2 older than p3", "g", "t", 1, 30, false)
	// A TxnOffsetCommit after a plain commit wins.
	wantCode(t, "p1 again", h.txnCommit(txnReq("g", 1, 0, "t", 0, 12)), nil)
	h.complete("g", 1, true)
	h.wantOffset("p1 newer", "g", "t", 0, 12, false)
}

func TestTxnOffsetCommitFencing(t *testing.T) {
	h, ft := newConsumerHarness(t)
	id := ft.set("t", 2)
	ids, gen := h.stableGroup("g", 2)
	s1, _, sgen := h.staticGroup("static")
	// A classic group in CompletingRebalance: the members have the
	// generation's JoinGroup responses, no assignment yet.
	rids, rgen := h.stableGroup("rebalancing", 1)
	h.startJoin(joinReq("rebalancing", rids[0], "t")).wait(t)
	rgen++
	if st := h.state("rebalancing"); st != CompletingRebalance {
		t.Fatalf("group rebalancing: %s", st)
	}

	v := func(version int16, req *kmsg.TxnOffsetCommitRequest) *kmsg.TxnOffsetCommitRequest {
		req.Version = version
		return req
	}
	byID := func(req *kmsg.TxnOffsetCommitRequest) *kmsg.TxnOffsetCommitRequest {
		req.Version = 6
		req.Topics[0].Topic, req.Topics[0].TopicID = "", id
		return req
	}
	for _, tc := range []struct {
		name string
		req  *kmsg.TxnOffsetCommitRequest
		want *kerr.Error
	}{
		{"member of the generation", memberTxnReq("g", ids[0], gen, 1), nil},
		{"old generation", memberTxnReq("g", ids[0], gen-1, 1), kerr.IllegalGeneration},
		{"future generation", memberTxnReq("g", ids[0], gen+1, 1), kerr.IllegalGeneration},
		{"unknown member", memberTxnReq("g", "nobody", gen, 1), kerr.UnknownMemberID},
		{"member without a generation", memberTxnReq("g", ids[1], -1, 1), kerr.IllegalGeneration},
		{"no member: v3 with members", memberTxnReq("g", "", -1, 1), nil},
		{"no member: v2 with members", v(2, memberTxnReq("g", "ignored below v3", gen+5, 1)), nil},
		{"no member: v0", v(0, txnReq("g", 1, 0, "t", 1, 3)), nil},
		{"static member", func() *kmsg.TxnOffsetCommitRequest {
			r := memberTxnReq("static", s1, sgen, 1)
			r.InstanceID = kmsg.StringPtr("i1")
			return r
		}(), nil},
		{"static member fenced", func() *kmsg.TxnOffsetCommitRequest {
			r := memberTxnReq("static", "i1-old", sgen, 1)
			r.InstanceID = kmsg.StringPtr("i1")
			return r
		}(), kerr.FencedInstanceID},
		{"unknown instance", func() *kmsg.TxnOffsetCommitRequest {
			r := memberTxnReq("static", s1, sgen, 1)
			r.InstanceID = kmsg.StringPtr("i9")
			return r
		}(), kerr.UnknownMemberID},
		{"completing rebalance", memberTxnReq("rebalancing", rids[0], rgen, 1), nil},
		{"generation commit to a missing group", memberTxnReq("missing", "m", 1, 1), kerr.IllegalGeneration},
		{"generation commit to a missing group v6", byID(memberTxnReq("missing", "m", 1, 1)), kerr.GroupIDNotFound},
		{"v6 by topic id", byID(memberTxnReq("g", ids[0], gen, 1)), nil},
		{"simple commit creates a group", txnReq("simple", 1, 0, "t", 0, 1), nil},
		{"empty group id", txnReq("", 1, 0, "t", 0, 1), kerr.InvalidGroupID},
		{"metadata too large", func() *kmsg.TxnOffsetCommitRequest {
			r := txnReq("simple", 1, 0, "t", 0, 1)
			r.Topics[0].Partitions[0].Metadata = kmsg.StringPtr(strings.Repeat("x", 4097))
			return r
		}(), kerr.OffsetMetadataTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantCode(t, "txn commit", h.txnCommit(tc.req), tc.want)
		})
	}
	if st := h.state("missing"); st != Dead {
		t.Errorf("a refused commit created group missing (%s)", st)
	}

	// v6: an unknown topic id is UNKNOWN_TOPIC_ID, the rest is written.
	req := byID(memberTxnReq("g", ids[0], gen, 7))
	other := kmsg.NewTxnOffsetCommitRequestTopic()
	other.TopicID = [16]byte{9}
	other.Partitions = []kmsg.TxnOffsetCommitRequestTopicPartition{{Partition: 0, Offset: 1, LeaderEpoch: -1}}
	req.Topics = append(req.Topics, other)
	resp := h.gs.TxnOffsetCommit(context.Background(), req)
	if c0, c1 := resp.Topics[0].Partitions[0].ErrorCode, resp.Topics[1].Partitions[0].ErrorCode; c0 != 0 || c1 != kerr.UnknownTopicID.Code ||
		resp.Topics[0].TopicID != id {
		t.Fatalf("v6 with an unknown topic id: %s, %s (%+v)", errName(c0), errName(c1), resp.Topics)
	}
	h.wantOffset("v6 pending", "g", "t", 0, -1, true)

	// The producer epoch may not go back.
	wantCode(t, "epoch 5", h.txnCommit(txnReq("epochs", 9, 5, "t", 0, 1)), nil)
	wantCode(t, "epoch 4", h.txnCommit(txnReq("epochs", 9, 4, "t", 1, 1)), kerr.InvalidProducerEpoch)
	wantCode(t, "epoch 6", h.txnCommit(txnReq("epochs", 9, 6, "t", 1, 1)), nil)
	h.restart()
	wantCode(t, "epoch 5 after restart", h.txnCommit(txnReq("epochs", 9, 5, "t", 1, 1)), kerr.InvalidProducerEpoch)
}

func TestTxnOffsetCommitConsumerGroup(t *testing.T) {
	h, ft := newConsumerHarness(t)
	ft.set("t", 2)
	epochs, _ := h.stableConsumers("cg", "m1")
	e := epochs["m1"]
	for _, tc := range []struct {
		name string
		req  *kmsg.TxnOffsetCommitRequest
		want *kerr.Error
	}{
		{"member at its epoch", memberTxnReq("cg", "m1", e, 1), nil},
		{"future epoch", memberTxnReq("cg", "m1", e+1, 1), kerr.IllegalGeneration},
		{"unknown member", memberTxnReq("cg", "nobody", e, 1), kerr.UnknownMemberID},
		{"no member, group with members", memberTxnReq("cg", "", -1, 1), kerr.UnknownMemberID},
		{"v2 (no member fields)", func() *kmsg.TxnOffsetCommitRequest {
			r := memberTxnReq("cg", "m1", e, 1)
			r.Version = 2
			return r
		}(), kerr.UnknownMemberID},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantCode(t, "txn commit", h.txnCommit(tc.req), tc.want)
		})
	}
	h.complete("cg", 1, true)
	h.wantOffset("committed", "cg", "t", 0, 10, false)
}

func TestTxnOffsetsDropped(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t, func(o *Options) { o.OffsetRetention = time.Hour })

	// DeleteGroups drops them: a group of the same name starts without.
	wantCode(t, "txn commit", h.txnCommit(txnReq("del", 1, 0, "t", 0, 5)), nil)
	dg := kmsg.NewPtrDeleteGroupsRequest()
	dg.Version, dg.Groups = 2, []string{"del"}
	wantCode(t, "delete group", h.gs.DeleteGroups(ctx, dg).Groups[0].ErrorCode, nil)
	h.restart()
	wantCode(t, "simple commit", h.commit(commitReq("del", "", -1, "t", 1, 1)), nil)
	h.complete("del", 1, true)
	h.wantOffset("deleted group's pending offset", "del", "t", 0, -1, false)

	// OffsetDelete drops every producer's pending offsets of the
	// partition, and only of it.
	wantCode(t, "p1", h.txnCommit(txnReq("od", 1, 0, "t", 0, 5)), nil)
	wantCode(t, "p2", h.txnCommit(txnReq("od", 2, 0, "t", 0, 6)), nil)
	wantCode(t, "p2 partition 1", h.txnCommit(txnReq("od", 2, 0, "t", 1, 7)), nil)
	od := kmsg.NewPtrOffsetDeleteRequest()
	od.Group = "od"
	od.Topics = []kmsg.OffsetDeleteRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}}}
	if resp := h.gs.OffsetDelete(ctx, od); resp.ErrorCode != 0 || resp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("offset delete: %+v", resp)
	}
	h.restart()
	h.wantOffset("offset deleted", "od", "t", 0, -1, false)
	h.wantOffset("other partition", "od", "t", 1, -1, true)
	h.complete("od", 1, true)
	h.complete("od", 2, true)
	h.wantOffset("offset deleted, committed", "od", "t", 0, -1, false)
	h.wantOffset("other partition committed", "od", "t", 1, 7, false)

	// Topic deletion drops them.
	wantCode(t, "txn commit", h.txnCommit(txnReq("td", 1, 0, "gone", 0, 5)), nil)
	wantCode(t, "txn commit", h.txnCommit(txnReq("td", 1, 0, "kept", 0, 6)), nil)
	if err := h.gs.DeleteTopicOffsets(ctx, "gone"); err != nil {
		t.Fatal(err)
	}
	h.restart()
	h.wantOffset("deleted topic", "td", "gone", 0, -1, false)
	h.complete("td", 1, true)
	h.wantOffset("deleted topic, committed", "td", "gone", 0, -1, false)
	h.wantOffset("other topic", "td", "kept", 0, 6, false)
}

func TestTxnOffsetsKeepGroupFromExpiry(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.OffsetRetention = time.Hour })
	wantCode(t, "pending only", h.txnCommit(txnReq("pending", 1, 0, "t", 0, 5)), nil)
	wantCode(t, "committed", h.commit(commitReq("both", "", -1, "t", 0, 1)), nil)
	wantCode(t, "committed", h.commit(commitReq("both", "", -1, "t", 1, 1)), nil)
	wantCode(t, "pending on partition 0", h.txnCommit(txnReq("both", 1, 0, "t", 0, 5)), nil)
	h.clk.Advance(2 * time.Hour)
	h.gs.expireOffsets()
	if st := h.state("pending"); st != Empty {
		t.Fatalf("group with pending offsets only: %s, want kept", st)
	}
	// Partition 1 expired; partition 0's offset is kept while pending.
	h.wantOffset("pending partition", "both", "t", 0, 1, true)
	h.wantOffset("expired partition", "both", "t", 1, -1, false)
	h.complete("pending", 1, false)
	h.complete("both", 1, false)
	h.clk.Advance(2 * time.Hour)
	h.gs.expireOffsets()
	for _, g := range []string{"pending", "both"} {
		if st := h.state(g); st != Dead {
			t.Fatalf("group %s after its transaction and the retention: %s, want expired", g, st)
		}
	}
}

func TestTxnVerifier(t *testing.T) {
	var asked []string
	h := newHarness(t, func(o *Options) {
		o.VerifyTxn = func(_ context.Context, req *kmsg.TxnOffsetCommitRequest) int16 {
			asked = append(asked, req.TransactionalID)
			if req.TransactionalID == "not-in-txn" {
				return kerr.InvalidTxnState.Code
			}
			return 0
		}
	})
	req := txnReq("g", 1, 0, "t", 0, 5)
	req.TransactionalID = "not-in-txn"
	wantCode(t, "refused", h.txnCommit(req), kerr.InvalidTxnState)
	if st := h.state("g"); st != Dead {
		t.Fatalf("a refused commit left group g (%s)", st)
	}
	wantCode(t, "accepted", h.txnCommit(txnReq("g", 1, 0, "t", 0, 6)), nil)
	// Verified before the group is looked up, as Kafka.
	missing := memberTxnReq("missing", "m", 3, 1)
	missing.TransactionalID = "not-in-txn"
	wantCode(t, "refused, missing group", h.txnCommit(missing), kerr.InvalidTxnState)
	if len(asked) != 3 {
		t.Fatalf("verifier asked %v", asked)
	}
	h.complete("g", 1, true)
	h.wantOffset("committed", "g", "t", 0, 6, false)
}

func TestCompleteTxnOffsetsClosed(t *testing.T) {
	h := newHarness(t)
	h.gs.Close()
	if err := h.gs.CompleteTxnOffsets(context.Background(), "g", 1, true); !errors.Is(err, ErrClosed) {
		t.Fatalf("complete on a closed coordinator: %v", err)
	}
	resp := h.gs.TxnOffsetCommit(context.Background(), txnReq("g", 1, 0, "t", 0, 1))
	wantCode(t, "txn commit on a closed coordinator", resp.Topics[0].Partitions[0].ErrorCode, kerr.NotCoordinator)
}

func TestOffsetRecordFormats(t *testing.T) {
	r := offsetRecord{offset: 42, leaderEpoch: 3, commitMs: 1234, metadata: "m", topicID: topicID{1, 2}, seq: 77}
	got, err := decodeOffsetRecord(r.encode())
	if err != nil || got != r {
		t.Fatalf("format 2 round trip: %+v, %v", got, err)
	}
	// Format 1, written before seq: read with seq 0.
	v1 := r.appendFields([]byte{valueV1})
	want := r
	want.seq = 0
	if got, err := decodeOffsetRecord(v1); err != nil || got != want {
		t.Fatalf("format 1: %+v, %v", got, err)
	}
	p := pendingRecord{offsetRecord: r, producerEpoch: 9}
	if got, err := decodePendingRecord(p.encode()); err != nil || got != p {
		t.Fatalf("pending round trip: %+v, %v", got, err)
	}
	for _, bad := range [][]byte{nil, {3}, append(r.encode(), 0), p.encode()[:5]} {
		if _, err := decodeOffsetRecord(bad); err == nil {
			t.Errorf("decoded bad offset value %x", bad)
		}
	}
	k := pendingKey("grp", -5, "topic", 7)
	if g, pid, tp, part, err := parsePendingKey(k); err != nil || g != "grp" || pid != -5 || tp != "topic" || part != 7 {
		t.Fatalf("pending key: %q %d %q %d %v", g, pid, tp, part, err)
	}
	if _, _, _, _, err := parsePendingKey(k[:len(k)-1]); err == nil {
		t.Fatal("parsed a short pending key")
	}
}
