package broker

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/floe-io/floe/internal/testkit"
)

// TestACLConsumerGroup: a consumer group needs GROUP READ and the topic's
// READ; the group APIs answer GROUP_AUTHORIZATION_FAILED without it;
// ListGroups, DescribeGroups and OffsetFetch show only what the principal
// may describe.
func TestACLConsumerGroup(t *testing.T) {
	e := newACLEnv(t)
	ctx := t.Context()
	e.topic("t", 2, nil)
	e.topic("other", 1, nil)
	admin := e.client(aclAdmin)
	for i := range 4 {
		if err := produceOne(t, admin, "t", fmt.Sprint(i)); err != nil {
			t.Fatal(err)
		}
	}
	e.grant(kadm.NewACLs().Topics("t").Allow("User:alice").Operations(kadm.OpRead))

	// No GROUP ACL: FindCoordinator, JoinGroup and the rest are refused.
	alice := e.client("alice")
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorKey, fc.CoordinatorKeys = "app-1", []string{"app-1"}
	fcr := send[*kmsg.FindCoordinatorResponse](t, alice, fc)
	if len(fcr.Coordinators) == 1 {
		wantCode(t, "find coordinator", fcr.Coordinators[0].ErrorCode, kerr.GroupAuthorizationFailed)
	} else {
		wantCode(t, "find coordinator", fcr.ErrorCode, kerr.GroupAuthorizationFailed)
	}
	join := kmsg.NewPtrJoinGroupRequest()
	join.Group, join.ProtocolType, join.SessionTimeoutMillis, join.RebalanceTimeoutMillis = "app-1", "consumer", 10000, 10000
	join.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{0}}}
	wantCode(t, "join", send[*kmsg.JoinGroupResponse](t, alice, join).ErrorCode, kerr.GroupAuthorizationFailed)
	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Group = "app-1"
	wantCode(t, "heartbeat", send[*kmsg.HeartbeatResponse](t, alice, hb).ErrorCode, kerr.GroupAuthorizationFailed)
	sync := kmsg.NewPtrSyncGroupRequest()
	sync.Group, sync.MemberID = "app-1", "m"
	wantCode(t, "sync", send[*kmsg.SyncGroupResponse](t, alice, sync).ErrorCode, kerr.GroupAuthorizationFailed)
	leave := kmsg.NewPtrLeaveGroupRequest()
	leave.Group, leave.MemberID = "app-1", "m"
	leave.Members = []kmsg.LeaveGroupRequestMember{{MemberID: "m"}}
	wantCode(t, "leave", send[*kmsg.LeaveGroupResponse](t, alice, leave).ErrorCode, kerr.GroupAuthorizationFailed)
	cgd := kmsg.NewPtrConsumerGroupDescribeRequest()
	cgd.Groups = []string{"app-1"}
	wantCode(t, "consumer group describe", send[*kmsg.ConsumerGroupDescribeResponse](t, alice, cgd).Groups[0].ErrorCode, kerr.GroupAuthorizationFailed)
	cgh := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	cgh.Group, cgh.MemberEpoch, cgh.RebalanceTimeoutMillis, cgh.SubscribedTopicNames = "app-1", 0, 10000, []string{"t"}
	wantCode(t, "consumer group heartbeat", send[*kmsg.ConsumerGroupHeartbeatResponse](t, alice, cgh).ErrorCode, kerr.GroupAuthorizationFailed)

	// GROUP READ on a prefix: a classic consumer group consumes and commits.
	e.grant(kadm.NewACLs().Groups("app-").ResourcePatternType(kadm.ACLPatternPrefixed).Allow("User:alice").Operations(kadm.OpRead))
	consumer := e.client("alice", kgo.ConsumerGroup("app-1"), kgo.ConsumeTopics("t"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit())
	got := 0
	pctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	for got < 4 {
		fs := consumer.PollFetches(pctx)
		if err := pctx.Err(); err != nil {
			t.Fatalf("consumed %d of 4 records: %v (%v)", got, err, fs.Errors())
		}
		for _, fe := range fs.Errors() {
			t.Fatalf("consume: %v", fe.Err)
		}
		got += fs.NumRecords()
	}
	if err := consumer.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatalf("commit: %v", err)
	}

	// A KIP-848 member may not subscribe to a topic it cannot describe.
	cgh.Group, cgh.SubscribedTopicNames = "app-2", []string{"t", "other"}
	wantCode(t, "consumer group heartbeat, other", send[*kmsg.ConsumerGroupHeartbeatResponse](t, alice, cgh).ErrorCode, kerr.TopicAuthorizationFailed)
	cgh.MemberID, cgh.SubscribedTopicNames, cgh.Topics = "member-of-app-2", []string{"t"}, []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	wantCode(t, "consumer group heartbeat, t", send[*kmsg.ConsumerGroupHeartbeatResponse](t, alice, cgh).ErrorCode, nil)

	// OffsetFetch: t is answered, other is TOPIC_AUTHORIZATION_FAILED.
	of := kmsg.NewPtrOffsetFetchRequest()
	ofg := kmsg.NewOffsetFetchRequestGroup()
	ofg.Group = "app-1"
	ofg.Topics = []kmsg.OffsetFetchRequestGroupTopic{{Topic: "t", Partitions: []int32{0, 1}}, {Topic: "other", Partitions: []int32{0}}}
	of.Groups = append(of.Groups, ofg)
	ofr := send[*kmsg.OffsetFetchResponse](t, alice, of)
	if len(ofr.Groups) != 1 || len(ofr.Groups[0].Topics) != 2 {
		t.Fatalf("offset fetch: %+v", ofr)
	}
	var committed int64
	for _, tp := range ofr.Groups[0].Topics {
		for _, p := range tp.Partitions {
			switch tp.Topic {
			case "t":
				wantCode(t, "offset fetch t", p.ErrorCode, nil)
				committed += max(p.Offset, 0)
			case "other":
				wantCode(t, "offset fetch other", p.ErrorCode, kerr.TopicAuthorizationFailed)
			}
		}
	}
	if committed != 4 {
		t.Fatalf("alice committed offsets summing to %d, want 4", committed)
	}
	// All topics (null): only t.
	ofg.Topics = nil
	of.Groups[0] = ofg
	ofr = send[*kmsg.OffsetFetchResponse](t, alice, of)
	for _, tp := range ofr.Groups[0].Topics {
		if tp.Topic != "t" {
			t.Fatalf("all-topics offset fetch shows %s", tp.Topic)
		}
	}

	// OffsetCommit to a topic without READ.
	oc := kmsg.NewPtrOffsetCommitRequest()
	oc.Group, oc.Generation = "app-3", -1
	oc.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "other", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 1}}}}
	ocr := send[*kmsg.OffsetCommitResponse](t, alice, oc)
	wantCode(t, "offset commit other", ocr.Topics[0].Partitions[0].ErrorCode, kerr.TopicAuthorizationFailed)
	oc.Group = "nope"
	ocr = send[*kmsg.OffsetCommitResponse](t, alice, oc)
	wantCode(t, "offset commit to group nope", ocr.Topics[0].Partitions[0].ErrorCode, kerr.GroupAuthorizationFailed)

	// ListGroups: alice sees app-1 (READ implies DESCRIBE), bob nothing,
	// the super user everything.
	list := func(name string) []string {
		groups, err := kadm.NewClient(e.client(name)).ListGroups(ctx)
		if err != nil {
			t.Fatalf("%s lists groups: %v", name, err)
		}
		return groups.Groups()
	}
	if g := list("alice"); !slices.Equal(g, []string{"app-1", "app-2"}) {
		t.Fatalf("alice lists %v", g)
	}
	if g := list("bob"); len(g) != 0 {
		t.Fatalf("bob lists %v", g)
	}
	if g := list(aclAdmin); len(g) != 2 {
		t.Fatalf("admin lists %v", g)
	}

	// DescribeGroups and DeleteGroups, per group.
	dg := kmsg.NewPtrDescribeGroupsRequest()
	dg.Groups = []string{"app-1", "zzz"}
	dg.IncludeAuthorizedOperations = true
	dgr := send[*kmsg.DescribeGroupsResponse](t, alice, dg)
	if len(dgr.Groups) != 2 || dgr.Groups[0].Group != "app-1" || dgr.Groups[1].Group != "zzz" {
		t.Fatalf("describe groups: %+v", dgr.Groups)
	}
	wantCode(t, "describe app-1", dgr.Groups[0].ErrorCode, nil)
	wantCode(t, "describe zzz", dgr.Groups[1].ErrorCode, kerr.GroupAuthorizationFailed)
	if ops := dgr.Groups[0].AuthorizedOperations; ops != 1<<kmsg.ACLOperationRead|1<<kmsg.ACLOperationDescribe {
		t.Fatalf("alice's authorized operations on app-1: %b", ops)
	}
	wantCode(t, "bob describes app-1", send[*kmsg.DescribeGroupsResponse](t, e.client("bob"), dg).Groups[0].ErrorCode, kerr.GroupAuthorizationFailed)
	// ConsumerGroupDescribe: app-1 is a classic group (not found as a
	// consumer group) for alice, who may describe it; zzz is denied.
	cgd.Groups = []string{"app-1", "zzz"}
	cgdr := send[*kmsg.ConsumerGroupDescribeResponse](t, alice, cgd)
	wantCode(t, "consumer group describe app-1", cgdr.Groups[0].ErrorCode, kerr.GroupIDNotFound)
	wantCode(t, "consumer group describe zzz", cgdr.Groups[1].ErrorCode, kerr.GroupAuthorizationFailed)
	// app-2's member subscribes to t: bob, who may describe the group but
	// not t, is told TOPIC_AUTHORIZATION_FAILED.
	cgd.Groups = []string{"app-2"}
	wantCode(t, "alice describes app-2", send[*kmsg.ConsumerGroupDescribeResponse](t, alice, cgd).Groups[0].ErrorCode, nil)
	e.grant(kadm.NewACLs().Groups("app-2").Allow("User:bob").Operations(kadm.OpDescribe))
	bobDesc := send[*kmsg.ConsumerGroupDescribeResponse](t, e.client("bob"), cgd).Groups[0]
	wantCode(t, "bob describes app-2", bobDesc.ErrorCode, kerr.TopicAuthorizationFailed)
	if len(bobDesc.Members) != 0 {
		t.Fatalf("bob sees app-2's members %+v", bobDesc.Members)
	}

	consumer.Close() // leave, so that the group can be deleted
	del := kmsg.NewPtrDeleteGroupsRequest()
	del.Groups = []string{"app-1"}
	wantCode(t, "alice deletes app-1", send[*kmsg.DeleteGroupsResponse](t, alice, del).Groups[0].ErrorCode, kerr.GroupAuthorizationFailed)
	od := kmsg.NewPtrOffsetDeleteRequest()
	od.Group = "app-1"
	od.Topics = []kmsg.OffsetDeleteRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}}}
	wantCode(t, "alice deletes offsets", send[*kmsg.OffsetDeleteResponse](t, alice, od).ErrorCode, kerr.GroupAuthorizationFailed)
	e.grant(kadm.NewACLs().Groups("app-1").Allow("User:alice").Operations(kadm.OpDelete))
	testkit.CheckFor(t, 10*time.Second, 10*time.Millisecond, func() error {
		if code := send[*kmsg.DeleteGroupsResponse](t, alice, del).Groups[0].ErrorCode; code != 0 {
			return kerr.ErrorForCode(code) // NON_EMPTY_GROUP until the leave is through
		}
		return nil
	})
}

// TestACLInitProducerID: an idempotent producer needs CLUSTER
// IDEMPOTENT_WRITE or WRITE on some topic (KIP-679); a transactional id
// TRANSACTIONAL_ID WRITE.
func TestACLInitProducerID(t *testing.T) {
	e := newACLEnv(t)
	e.topic("t", 1, nil)
	init := func(name string, txn *string) int16 {
		req := kmsg.NewPtrInitProducerIDRequest()
		req.TransactionalID, req.TransactionTimeoutMillis = txn, 60000
		req.ProducerID, req.ProducerEpoch = -1, -1
		return send[*kmsg.InitProducerIDResponse](t, e.client(name), req).ErrorCode
	}
	wantCode(t, "alice, no acl", init("alice", nil), kerr.ClusterAuthorizationFailed)
	wantCode(t, "admin", init(aclAdmin, nil), nil)
	e.grant(kadm.NewACLs().Topics("t").Allow("User:alice").Operations(kadm.OpWrite))
	wantCode(t, "alice, WRITE on t", init("alice", nil), nil)
	e.grant(kadm.NewACLs().Clusters().Allow("User:bob").Operations(kadm.OpIdempotentWrite))
	wantCode(t, "bob, IDEMPOTENT_WRITE", init("bob", nil), nil)
	// DENY on every topic dominates.
	e.grant(kadm.NewACLs().Topics("*").Deny("User:alice").Operations(kadm.OpWrite))
	wantCode(t, "alice, WRITE denied everywhere", init("alice", nil), kerr.ClusterAuthorizationFailed)

	wantCode(t, "transactional, no acl", init("bob", kmsg.StringPtr("tx")), kerr.TransactionalIDAuthorizationFailed)

	// An idempotent kgo producer (the default) produces with WRITE.
	e.grant(kadm.NewACLs().Topics("t").Allow("User:carol").Operations(kadm.OpWrite))
	if err := produceOne(t, e.client("carol"), "t", "v"); err != nil {
		t.Fatalf("carol's idempotent produce: %v", err)
	}
}

// TestACLAddPartitionsToTxnBrokerVersion: AddPartitionsToTxn v4+ is the
// brokers' version and needs CLUSTER_ACTION, as in Kafka; a client's v3
// needs only its transactional id and topic ACLs.
func TestACLAddPartitionsToTxnBrokerVersion(t *testing.T) {
	e := newACLEnv(t)
	e.topic("t", 1, nil)
	e.grant(kadm.NewACLs().TransactionalIDs("tx").Allow("User:alice").Operations(kadm.OpWrite, kadm.OpDescribe))
	e.grant(kadm.NewACLs().Topics("t").Allow("User:alice").Operations(kadm.OpWrite))
	initReq := kmsg.NewPtrInitProducerIDRequest()
	initReq.TransactionalID, initReq.TransactionTimeoutMillis = kmsg.StringPtr("tx"), 60000
	initReq.ProducerID, initReq.ProducerEpoch = -1, -1
	p := send[*kmsg.InitProducerIDResponse](t, e.client("alice"), initReq)
	wantCode(t, "init", p.ErrorCode, nil)

	add := func(cl *kgo.Client) *kmsg.AddPartitionsToTxnResponse {
		req := kmsg.NewPtrAddPartitionsToTxnRequest()
		req.TransactionalID, req.ProducerID, req.ProducerEpoch = "tx", p.ProducerID, p.ProducerEpoch
		req.Topics = []kmsg.AddPartitionsToTxnRequestTopic{{Topic: "t", Partitions: []int32{0}}}
		tx := kmsg.NewAddPartitionsToTxnRequestTransaction()
		tx.TransactionalID, tx.ProducerID, tx.ProducerEpoch = "tx", p.ProducerID, p.ProducerEpoch
		tx.Topics = []kmsg.AddPartitionsToTxnRequestTransactionTopic{{Topic: "t", Partitions: []int32{0}}}
		req.Transactions = []kmsg.AddPartitionsToTxnRequestTransaction{tx}
		return send[*kmsg.AddPartitionsToTxnResponse](t, cl, req)
	}
	resp := add(e.client("alice"))
	if resp.Version < 4 {
		t.Fatalf("the client sent v%d, want v4+", resp.Version)
	}
	wantCode(t, "alice at v4+", resp.ErrorCode, kerr.ClusterAuthorizationFailed)
	if len(resp.Transactions) != 0 {
		t.Errorf("a refused v4+ request answered transactions: %+v", resp.Transactions)
	}
	resp = add(e.client(aclAdmin))
	wantCode(t, "the super user at v4+", resp.ErrorCode, nil)
	if len(resp.Transactions) != 1 || resp.Transactions[0].Topics[0].Partitions[0].ErrorCode != 0 {
		t.Errorf("the super user at v4+: %+v", resp.Transactions)
	}
	resp = add(e.client("alice", kgo.MaxVersions(kversion.V3_5_0())))
	if resp.Version != 3 {
		t.Fatalf("the capped client sent v%d, want v3", resp.Version)
	}
	if len(resp.Topics) != 1 || resp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Errorf("alice at v3: %+v", resp.Topics)
	}
}
