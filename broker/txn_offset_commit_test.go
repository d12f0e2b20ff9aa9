package broker

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/groups"
	"github.com/floe-io/floe/internal/testkit"
)

// txnCommitReq is a TxnOffsetCommit of producer 7 for group: t/0 at
// offset 42, t/9 (no such partition) and nope/0 (no such topic).
func txnCommitReq(group string) *kmsg.TxnOffsetCommitRequest {
	req := kmsg.NewPtrTxnOffsetCommitRequest()
	req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch = "tx", group, 7, 0
	req.Topics = []kmsg.TxnOffsetCommitRequestTopic{
		{Topic: "t", Partitions: []kmsg.TxnOffsetCommitRequestTopicPartition{
			{Partition: 0, Offset: 42, LeaderEpoch: 3, Metadata: kmsg.StringPtr("meta")},
			{Partition: 9, Offset: 1, LeaderEpoch: -1},
		}},
		{Topic: "nope", Partitions: []kmsg.TxnOffsetCommitRequestTopicPartition{{Partition: 0, Offset: 1, LeaderEpoch: -1}}},
	}
	return req
}

// txnCodes returns a TxnOffsetCommit response's codes as topic/partition:
// code.
func txnCodes(resp *kmsg.TxnOffsetCommitResponse) map[string]int16 {
	out := map[string]int16{}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			out[fmt.Sprintf("%s/%d", t.Topic, p.Partition)] = p.ErrorCode
		}
	}
	return out
}

func wantTxnCodes(t *testing.T, what string, resp *kmsg.TxnOffsetCommitResponse, want map[string]*kerr.Error) {
	t.Helper()
	got := txnCodes(resp)
	if len(got) != len(want) {
		t.Fatalf("%s: answered %v, want %d partitions", what, got, len(want))
	}
	for tp, w := range want {
		code, ok := got[tp]
		if !ok {
			t.Fatalf("%s: %s not answered (%v)", what, tp, got)
		}
		wantCode(t, what+" "+tp, code, w)
	}
}

// fetchStable fetches group's t/0 through the broker at version (7+).
func fetchStable(t *testing.T, b *Broker, version int16, group string, stable bool) kmsg.OffsetFetchResponseGroupTopicPartition {
	t.Helper()
	req := kmsg.NewPtrOffsetFetchRequest()
	req.RequireStable = stable
	if version >= 8 {
		req.Groups = []kmsg.OffsetFetchRequestGroup{{Group: group, Topics: []kmsg.OffsetFetchRequestGroupTopic{{Topic: "t", Partitions: []int32{0}}}}}
		return serveVersion[*kmsg.OffsetFetchResponse](t, b, req, version).Groups[0].Topics[0].Partitions[0]
	}
	req.Group = group
	req.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: "t", Partitions: []int32{0}}}
	p := serveVersion[*kmsg.OffsetFetchResponse](t, b, req, version).Topics[0].Partitions[0]
	return kmsg.OffsetFetchResponseGroupTopicPartition{Partition: p.Partition, Offset: p.Offset, LeaderEpoch: p.LeaderEpoch, Metadata: p.Metadata, ErrorCode: p.ErrorCode}
}

// TestTxnOffsetCommit serves TxnOffsetCommit at every served version
// against a real group coordinator: unknown topics and partitions are
// answered by the broker, the rest become pending offsets that a
// RequireStable OffsetFetch sees as UNSTABLE_OFFSET_COMMIT and a plain one
// not at all, until the transaction commits.
func TestTxnOffsetCommit(t *testing.T) {
	if got := servedVersions(t, kmsg.TxnOffsetCommit); len(got) != 5 || got[0] != 0 || got[4] != 4 {
		t.Fatalf("served versions %v, want 0-4", got)
	}
	c := newTestCoordinator(t)
	createTopic(t, c, "t", 4, nil)
	gs := newTestGroups(t, c)
	b := newTestBroker(t, Deps{Coordinator: c, Groups: groups.Direct(gs)})
	for _, v := range servedVersions(t, kmsg.TxnOffsetCommit) {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			group := fmt.Sprintf("g-v%d", v)
			resp := serveVersion[*kmsg.TxnOffsetCommitResponse](t, b, txnCommitReq(group), v)
			wantTxnCodes(t, "txn commit", resp, map[string]*kerr.Error{
				"t/0": nil, "t/9": kerr.UnknownTopicOrPartition, "nope/0": kerr.UnknownTopicOrPartition,
			})
			for _, fv := range []int16{7, 8} {
				if p := fetchStable(t, b, fv, group, true); p.ErrorCode != kerr.UnstableOffsetCommit.Code || p.Offset != -1 {
					t.Fatalf("stable fetch v%d of a pending offset: %+v", fv, p)
				}
			}
			if p := fetchStable(t, b, 8, group, false); p.ErrorCode != 0 || p.Offset != -1 {
				t.Fatalf("fetch of a pending offset: %+v", p)
			}
			if err := gs.CompleteTxnOffsets(t.Context(), group, 7, true); err != nil {
				t.Fatal(err)
			}
			wantEpoch := int32(3)
			if v < 2 {
				wantEpoch = -1 // no leader epoch before v2
			}
			if p := fetchStable(t, b, 8, group, true); p.ErrorCode != 0 || p.Offset != 42 || p.LeaderEpoch != wantEpoch || showStr(p.Metadata) != "meta" {
				t.Fatalf("stable fetch after the commit: %+v", p)
			}
		})
	}

	// v3+ carries a generation: the group coordinator fences it; the
	// partitions the broker answered keep their codes.
	for _, v := range []int16{3, 4} {
		req := txnCommitReq("missing")
		req.Generation, req.MemberID = 2, "m"
		resp := serveVersion[*kmsg.TxnOffsetCommitResponse](t, b, req, v)
		wantTxnCodes(t, fmt.Sprintf("v%d generation commit to a missing group", v), resp, map[string]*kerr.Error{
			"t/0": kerr.IllegalGeneration, "t/9": kerr.UnknownTopicOrPartition, "nope/0": kerr.UnknownTopicOrPartition,
		})
	}
}

// failingGroups is a group coordinator that never answers a
// TxnOffsetCommit.
type failingGroups struct{ coordapi.GroupCoordinator }

func (failingGroups) TxnOffsetCommit(context.Context, *kmsg.TxnOffsetCommitRequest) (*kmsg.TxnOffsetCommitResponse, error) {
	return nil, errors.New("no coordinator")
}

// TestTxnOffsetCommitNoCoordinator: without a group coordinator, or with
// one that does not answer, the partitions the broker passes on are
// COORDINATOR_NOT_AVAILABLE.
func TestTxnOffsetCommitNoCoordinator(t *testing.T) {
	c := newTestCoordinator(t)
	createTopic(t, c, "t", 4, nil)
	for name, gc := range map[string]coordapi.GroupCoordinator{
		"none":          nil,
		"not answering": failingGroups{groups.Direct(newTestGroups(t, c))},
	} {
		t.Run(name, func(t *testing.T) {
			b := newTestBroker(t, Deps{Coordinator: c, Groups: gc})
			resp := serveVersion[*kmsg.TxnOffsetCommitResponse](t, b, txnCommitReq("g"), 4)
			wantTxnCodes(t, "txn commit", resp, map[string]*kerr.Error{
				"t/0": kerr.CoordinatorNotAvailable, "t/9": kerr.UnknownTopicOrPartition, "nope/0": kerr.UnknownTopicOrPartition,
			})
		})
	}
}

// TestTxnOffsetCommitRecreatedTopic: the broker stores pending offsets with
// their topic's id, which their commit keeps, so a topic deleted and
// created again starts without the offset even though DeleteTopics did not
// clear it.
func TestTxnOffsetCommitRecreatedTopic(t *testing.T) {
	c := newTestCoordinator(t)
	createTopic(t, c, "t", 4, nil)
	gs := newTestGroups(t, c)
	b := newTestBroker(t, Deps{Coordinator: c, Groups: groups.Direct(gs)})
	serveVersion[*kmsg.TxnOffsetCommitResponse](t, b, txnCommitReq("g"), 4)
	if err := gs.CompleteTxnOffsets(t.Context(), "g", 7, true); err != nil {
		t.Fatal(err)
	}
	if p := fetchStable(t, b, 8, "g", true); p.Offset != 42 {
		t.Fatalf("committed offset %+v", p)
	}
	if _, err := c.DeleteTopic(t.Context(), "t"); err != nil {
		t.Fatal(err)
	}
	createTopic(t, c, "t", 4, nil)
	testkit.CheckFor(t, 5*time.Second, 10*time.Millisecond, func() error {
		if p := fetchStable(t, b, 8, "g", true); p.Offset != -1 {
			return fmt.Errorf("the recreated topic has the old topic's offset %d", p.Offset)
		}
		return nil
	})
}

// TestACLTxnOffsetCommit: TxnOffsetCommit needs TRANSACTIONAL_ID WRITE,
// then GROUP READ (each refusal answers every partition), then TOPIC READ
// per topic, as Kafka's KafkaApis checks them.
func TestACLTxnOffsetCommit(t *testing.T) {
	e := newACLEnv(t)
	e.topic("t", 1, nil)
	e.topic("other", 1, nil)
	alice := e.client("alice")
	req := func() *kmsg.TxnOffsetCommitRequest {
		r := kmsg.NewPtrTxnOffsetCommitRequest()
		r.TransactionalID, r.Group, r.ProducerID, r.ProducerEpoch = "tx", "g", 7, 0
		r.Topics = []kmsg.TxnOffsetCommitRequestTopic{
			{Topic: "t", Partitions: []kmsg.TxnOffsetCommitRequestTopicPartition{{Partition: 0, Offset: 5, LeaderEpoch: -1}}},
			{Topic: "other", Partitions: []kmsg.TxnOffsetCommitRequestTopicPartition{{Partition: 0, Offset: 5, LeaderEpoch: -1}}},
		}
		return r
	}
	commit := func() *kmsg.TxnOffsetCommitResponse {
		return send[*kmsg.TxnOffsetCommitResponse](t, alice, req())
	}
	// The group READ alone is not enough: the transactional id comes first.
	e.grant(kadm.NewACLs().Groups("g").Allow("User:alice").Operations(kadm.OpRead))
	wantTxnCodes(t, "no TRANSACTIONAL_ID WRITE", commit(), map[string]*kerr.Error{
		"t/0": kerr.TransactionalIDAuthorizationFailed, "other/0": kerr.TransactionalIDAuthorizationFailed,
	})
	e.grant(kadm.NewACLs().TransactionalIDs("tx").Allow("User:alice").Operations(kadm.OpWrite))
	e.revoke(kadm.NewACLs().Groups("g").Allow("User:alice").AllowHosts().Operations(kadm.OpRead))
	wantTxnCodes(t, "no GROUP READ", commit(), map[string]*kerr.Error{
		"t/0": kerr.GroupAuthorizationFailed, "other/0": kerr.GroupAuthorizationFailed,
	})
	e.grant(kadm.NewACLs().Groups("g").Allow("User:alice").Operations(kadm.OpRead))
	e.grant(kadm.NewACLs().Topics("t").Allow("User:alice").Operations(kadm.OpRead))
	wantTxnCodes(t, "TOPIC READ on t only", commit(), map[string]*kerr.Error{
		"t/0": nil, "other/0": kerr.TopicAuthorizationFailed,
	})
	if err := e.g.CompleteTxnOffsets(t.Context(), "g", 7, true); err != nil {
		t.Fatal(err)
	}
	fetch := kmsg.NewPtrOffsetFetchRequest()
	fetch.Groups = []kmsg.OffsetFetchRequestGroup{{Group: "g", Topics: []kmsg.OffsetFetchRequestGroupTopic{{Topic: "t", Partitions: []int32{0}}}}}
	if p := send[*kmsg.OffsetFetchResponse](t, alice, fetch).Groups[0].Topics[0].Partitions[0]; p.Offset != 5 {
		t.Fatalf("committed offset %+v", p)
	}
}
