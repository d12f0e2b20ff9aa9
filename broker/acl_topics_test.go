package broker

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// TestACLProduceFetch: Produce needs TOPIC WRITE, Fetch TOPIC READ,
// ListOffsets TOPIC DESCRIBE; prefixed and literal patterns, the wildcard
// principal, DENY winning, the super user.
func TestACLProduceFetch(t *testing.T) {
	e := newACLEnv(t)
	e.topic("orders-eu", 1, nil)
	e.topic("secret", 1, nil)
	noIdem := kgo.DisableIdempotentWrite()
	alice, bob := e.client("alice", noIdem), e.client("bob", noIdem)

	// The super user needs no ACL.
	if err := produceOne(t, e.client(aclAdmin), "secret", "s"); err != nil {
		t.Fatalf("admin produce: %v", err)
	}
	wantCode(t, "admin fetch", e.fetchCode(aclAdmin, "secret"), nil)

	// Nothing granted: even Metadata hides the topic.
	wantErr(t, "alice produce, no acl", produceOne(t, alice, "orders-eu", "a"), kerr.TopicAuthorizationFailed)

	// DESCRIBE only: Metadata answers, Produce itself is denied.
	e.grant(kadm.NewACLs().Topics("orders-eu").Allow("User:alice").Operations(kadm.OpDescribe))
	wantErr(t, "alice produce, describe only", produceOne(t, e.client("alice", noIdem), "orders-eu", "a"), kerr.TopicAuthorizationFailed)

	// WRITE on a prefix.
	e.grant(kadm.NewACLs().Topics("orders-").ResourcePatternType(kadm.ACLPatternPrefixed).Allow("User:alice").Operations(kadm.OpWrite))
	if err := produceOne(t, e.client("alice", noIdem), "orders-eu", "a"); err != nil {
		t.Fatalf("alice produce with WRITE on orders-*: %v", err)
	}
	wantErr(t, "alice produce to secret", produceOne(t, alice, "secret", "a"), kerr.TopicAuthorizationFailed)

	// WRITE implies DESCRIBE: ListOffsets answers; Fetch needs READ.
	lo, err := kadm.NewClient(alice).ListEndOffsets(t.Context(), "orders-eu")
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := lo.Lookup("orders-eu", 0); !ok || o.Err != nil || o.Offset != 1 {
		t.Fatalf("alice list offsets: %+v", lo)
	}
	wantCode(t, "alice fetch without READ", e.fetchCode("alice", "orders-eu"), kerr.TopicAuthorizationFailed)
	wantCode(t, "bob fetch", e.fetchCode("bob", "orders-eu"), kerr.TopicAuthorizationFailed)
	// Unknown or not, a topic the principal may not read is denied.
	wantCode(t, "alice fetch unknown", e.fetchCode("alice", "no-such-topic"), kerr.TopicAuthorizationFailed)

	// READ for every user.
	e.grant(kadm.NewACLs().Topics("orders-eu").Allow("User:*").Operations(kadm.OpRead))
	wantCode(t, "alice fetch with READ", e.fetchCode("alice", "orders-eu"), nil)
	wantCode(t, "bob fetch with READ", e.fetchCode("bob", "orders-eu"), nil)
	lo, err = kadm.NewClient(bob).ListEndOffsets(t.Context(), "orders-eu")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := lo.Lookup("orders-eu", 0); o.Err != nil {
		t.Fatalf("bob list offsets of orders-eu: %v", o.Err)
	}

	// DENY wins over the wildcard ALLOW.
	e.grant(kadm.NewACLs().Topics("orders-eu").Deny("User:bob").Operations(kadm.OpRead))
	wantCode(t, "bob fetch denied", e.fetchCode("bob", "orders-eu"), kerr.TopicAuthorizationFailed)
	wantCode(t, "alice fetch still allowed", e.fetchCode("alice", "orders-eu"), nil)

	// A revoked ALLOW applies too.
	e.revoke(kadm.NewACLs().Topics("orders-eu").Allow("User:*").AllowHosts().Operations(kadm.OpRead))
	wantCode(t, "alice fetch revoked", e.fetchCode("alice", "orders-eu"), kerr.TopicAuthorizationFailed)
}

// TestACLHostsAndViews: an ACL of another host does not apply; a
// hierarchical view is authorized as its base topic.
func TestACLHostsAndViews(t *testing.T) {
	e := newACLEnv(t)
	e.grant(kadm.NewACLs().Topics("t").Allow("User:alice").AllowHosts("10.9.9.9").Operations(kadm.OpRead))
	wantCode(t, "other host", e.fetchCode("alice", "t"), kerr.TopicAuthorizationFailed)
	e.grant(kadm.NewACLs().Topics("t").Allow("User:alice").AllowHosts("127.0.0.1").Operations(kadm.OpRead))
	wantCode(t, "this host", e.fetchCode("alice", "t"), kerr.UnknownTopicOrPartition)

	e.topic("h", 1, map[string]*string{"hierarchical.enabled": kmsg.StringPtr("true")})
	e.grant(kadm.NewACLs().Topics("h").Allow("User:bob").Operations(kadm.OpRead))
	md := send[*kmsg.MetadataResponse](t, e.client("bob"), metadataRequest("h/k1", "t"))
	wantCode(t, "bob metadata of view h/k1", md.Topics[0].ErrorCode, nil)
	wantCode(t, "bob metadata of t", md.Topics[1].ErrorCode, kerr.TopicAuthorizationFailed)
	wantCode(t, "bob fetch view", e.fetchCode("bob", "h/k1"), nil)

	// /kv asks the broker the same question.
	for _, c := range []struct {
		principal, host, topic string
		want                   bool
	}{
		{"User:bob", "127.0.0.1", "h", true},
		{"User:bob", "127.0.0.1", "h/key", true},
		{"User:bob", "127.0.0.1", "t", false},
		{"User:alice", "127.0.0.1", "t", true},
		{"User:alice", "10.0.0.1", "t", false},
		{"User:admin", "10.0.0.1", "anything", true},
	} {
		if got := e.b.AuthorizeTopic(c.principal, c.host, kmsg.ACLOperationRead, c.topic); got != c.want {
			t.Errorf("AuthorizeTopic(%s, %s, READ, %s) = %v, want %v", c.principal, c.host, c.topic, got, c.want)
		}
	}
}

func metadataRequest(topics ...string) *kmsg.MetadataRequest {
	req := kmsg.NewPtrMetadataRequest()
	for _, name := range topics {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(name)
		req.Topics = append(req.Topics, rt)
	}
	return req
}

// TestACLMetadata: an all-topics Metadata lists only the topics the
// principal may describe; a named one it may not is
// TOPIC_AUTHORIZATION_FAILED, existing or not; auto-creation needs CREATE.
func TestACLMetadata(t *testing.T) {
	e := newACLEnv(t, func(o *Options) { o.AutoCreateTopics = true })
	for _, name := range []string{"a", "b1", "b2", "c"} {
		e.topic(name, 1, nil)
	}
	e.grant(kadm.NewACLs().Topics("a").Allow("User:alice").Operations(kadm.OpDescribe))
	e.grant(kadm.NewACLs().Topics("b").ResourcePatternType(kadm.ACLPatternPrefixed).Allow("User:alice").Operations(kadm.OpRead))

	names := func(md *kmsg.MetadataResponse) []string {
		var out []string
		for _, tp := range md.Topics {
			if tp.ErrorCode == 0 {
				out = append(out, *tp.Topic)
			}
		}
		slices.Sort(out)
		return out
	}
	all := kmsg.NewPtrMetadataRequest()
	if got := names(send[*kmsg.MetadataResponse](t, e.client("alice"), all)); !slices.Equal(got, []string{"a", "b1", "b2"}) {
		t.Fatalf("alice lists %v", got)
	}
	if got := names(send[*kmsg.MetadataResponse](t, e.client("bob"), all)); len(got) != 0 {
		t.Fatalf("bob lists %v", got)
	}
	if got := names(send[*kmsg.MetadataResponse](t, e.client(aclAdmin), all)); len(got) != 4 {
		t.Fatalf("admin lists %v", got)
	}

	req := metadataRequest("a", "c", "zz", "bnew")
	req.AllowAutoTopicCreation = true
	md := send[*kmsg.MetadataResponse](t, e.client("alice"), req)
	wantCode(t, "a", md.Topics[0].ErrorCode, nil)
	wantCode(t, "c", md.Topics[1].ErrorCode, kerr.TopicAuthorizationFailed)
	wantCode(t, "zz (unknown, no describe)", md.Topics[2].ErrorCode, kerr.TopicAuthorizationFailed)
	wantCode(t, "bnew (describe, no create)", md.Topics[3].ErrorCode, kerr.TopicAuthorizationFailed)
	if md.Topics[1].TopicID != [16]byte{} || len(md.Topics[1].Partitions) != 0 {
		t.Fatalf("a denied topic discloses %+v", md.Topics[1])
	}
	if _, err := e.coord.Topic(t.Context(), "bnew"); err == nil {
		t.Fatal("bnew was auto-created without CREATE")
	}

	e.grant(kadm.NewACLs().Topics("b").ResourcePatternType(kadm.ACLPatternPrefixed).Allow("User:alice").Operations(kadm.OpCreate))
	md = send[*kmsg.MetadataResponse](t, e.client("alice"), req)
	wantCode(t, "bnew (describe and create)", md.Topics[3].ErrorCode, nil)
	if _, err := e.coord.Topic(t.Context(), "bnew"); err != nil {
		t.Fatalf("bnew not auto-created: %v", err)
	}

	// By topic id: a denied id is answered without its name.
	c, err := e.coord.Topic(t.Context(), "c")
	if err != nil {
		t.Fatal(err)
	}
	byID := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.TopicID = c.ID
	byID.Topics = append(byID.Topics, rt)
	md = send[*kmsg.MetadataResponse](t, e.client("alice"), byID)
	wantCode(t, "c by id", md.Topics[0].ErrorCode, kerr.TopicAuthorizationFailed)
	if md.Topics[0].Topic != nil {
		t.Fatalf("a denied topic id discloses the name %q", *md.Topics[0].Topic)
	}
}

// TestACLTopicAdmin: CreateTopics needs CLUSTER or TOPIC CREATE,
// DeleteTopics TOPIC DELETE, CreatePartitions TOPIC ALTER, DeleteRecords
// TOPIC DELETE, DescribeConfigs DESCRIBE_CONFIGS, the alters ALTER_CONFIGS.
func TestACLTopicAdmin(t *testing.T) {
	e := newACLEnv(t)
	alice := kadm.NewClient(e.client("alice"))
	ctx := t.Context()

	_, err := alice.CreateTopic(ctx, 1, -1, nil, "x") // kadm returns the topic's error
	wantErr(t, "create x", err, kerr.TopicAuthorizationFailed)
	e.grant(kadm.NewACLs().Topics("x").ResourcePatternType(kadm.ACLPatternPrefixed).Allow("User:alice").Operations(kadm.OpCreate))
	if _, err = alice.CreateTopic(ctx, 1, -1, nil, "x1"); err != nil {
		t.Fatalf("create x1 with TOPIC CREATE: %v", err)
	}
	e.grant(kadm.NewACLs().Clusters().Allow("User:bob").Operations(kadm.OpCreate))
	bob := kadm.NewClient(e.client("bob"))
	if _, err = bob.CreateTopic(ctx, 1, -1, nil, "y"); err != nil {
		t.Fatalf("create y with CLUSTER CREATE: %v", err)
	}

	// Configs: alice may not describe or alter x1's yet.
	rc, err := alice.DescribeTopicConfigs(ctx, "x1")
	wantErr(t, "describe configs", orFirst(err, func() error { return rc[0].Err }), kerr.TopicAuthorizationFailed)
	alter := []kadm.AlterConfig{{Name: "retention.ms", Value: kmsg.StringPtr("1000")}}
	ar, err := alice.AlterTopicConfigs(ctx, alter, "x1")
	wantErr(t, "incremental alter configs", orFirst(err, func() error { return ar[0].Err }), kerr.TopicAuthorizationFailed)
	ar, err = alice.AlterTopicConfigsState(ctx, alter, "x1")
	wantErr(t, "alter configs", orFirst(err, func() error { return ar[0].Err }), kerr.TopicAuthorizationFailed)
	e.grant(kadm.NewACLs().Topics("x1").Allow("User:alice").Operations(kadm.OpAlterConfigs))
	ar, err = alice.AlterTopicConfigs(ctx, alter, "x1")
	if err = orFirst(err, func() error { return ar[0].Err }); err != nil {
		t.Fatalf("incremental alter with ALTER_CONFIGS: %v", err)
	}
	rc, err = alice.DescribeTopicConfigs(ctx, "x1")
	if err = orFirst(err, func() error { return rc[0].Err }); err != nil {
		t.Fatalf("describe configs with ALTER_CONFIGS (implies DESCRIBE_CONFIGS): %v", err)
	}
	// Broker configs are the cluster's.
	bc, err := alice.DescribeBrokerConfigs(ctx, 1)
	wantErr(t, "describe broker configs", orFirst(err, func() error { return bc[0].Err }), kerr.ClusterAuthorizationFailed)

	// CreatePartitions needs ALTER, DeleteRecords and DeleteTopics DELETE.
	// DESCRIBE, so that the client finds the partitions and their leaders.
	e.grant(kadm.NewACLs().Topics("x1").Allow("User:alice").Operations(kadm.OpDescribe))
	alice = kadm.NewClient(e.client("alice")) // no metadata cached from before
	cp, err := alice.CreatePartitions(ctx, 2, "x1")
	wantErr(t, "create partitions", orFirst(err, func() error { return cp["x1"].Err }), kerr.TopicAuthorizationFailed)
	dr, err := alice.DeleteRecords(ctx, kadm.Offsets{"x1": {0: {Topic: "x1", Partition: 0, At: 0}}})
	wantErr(t, "delete records", orFirst(err, func() error { p, _ := dr.Lookup("x1", 0); return p.Err }), kerr.TopicAuthorizationFailed)
	dt, err := alice.DeleteTopics(ctx, "x1")
	wantErr(t, "delete topic", orFirst(err, func() error { return dt["x1"].Err }), kerr.TopicAuthorizationFailed)
	e.grant(kadm.NewACLs().Topics("x1").Allow("User:alice").Operations(kadm.OpAlter, kadm.OpDelete))
	alice = kadm.NewClient(e.client("alice"))
	cp, err = alice.CreatePartitions(ctx, 2, "x1")
	if err = orFirst(err, func() error { return cp["x1"].Err }); err != nil {
		t.Fatalf("create partitions with ALTER: %v", err)
	}
	dt, err = alice.DeleteTopics(ctx, "x1")
	if err = orFirst(err, func() error { return dt["x1"].Err }); err != nil {
		t.Fatalf("delete topic with DELETE: %v", err)
	}
}

// TestACLMetadataAuthorizedOperations: Metadata v8+ answers the
// operations the principal may perform, on each topic and the cluster.
func TestACLMetadataAuthorizedOperations(t *testing.T) {
	e := newACLEnv(t)
	e.topic("t", 1, nil)
	e.grant(kadm.NewACLs().Topics("t").Allow("User:alice").Operations(kadm.OpWrite))
	req := metadataRequest("t")
	req.IncludeTopicAuthorizedOperations, req.IncludeClusterAuthorizedOperations = true, true
	md := send[*kmsg.MetadataResponse](t, e.client("alice", kgo.MaxVersions(kversion.V2_7_0())), req) // v9: cluster operations too
	if want := int32(1<<kmsg.ACLOperationWrite | 1<<kmsg.ACLOperationDescribe); md.Topics[0].AuthorizedOperations != want {
		t.Fatalf("alice's operations on t: %b, want %b", md.Topics[0].AuthorizedOperations, want)
	}
	if md.AuthorizedOperations != 0 {
		t.Fatalf("alice's cluster operations: %b", md.AuthorizedOperations)
	}
}

// TestACLDeleteTopicByID: a topic deleted by id needs DELETE; a denied
// one is named only to a principal that may describe it, as Kafka.
func TestACLDeleteTopicByID(t *testing.T) {
	e := newACLEnv(t)
	e.topic("t", 1, nil)
	tp, err := e.coord.Topic(t.Context(), "t")
	if err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrDeleteTopicsRequest()
	rt := kmsg.NewDeleteTopicsRequestTopic()
	rt.TopicID = tp.ID
	req.Topics = append(req.Topics, rt)
	req.Version = 6
	st := send[*kmsg.DeleteTopicsResponse](t, e.client("alice"), req).Topics[0]
	wantCode(t, "alice deletes t by id", st.ErrorCode, kerr.TopicAuthorizationFailed)
	if st.Topic != nil {
		t.Fatalf("a topic alice may not describe is named %q", *st.Topic)
	}
	e.grant(kadm.NewACLs().Topics("t").Allow("User:alice").Operations(kadm.OpDescribe))
	st = send[*kmsg.DeleteTopicsResponse](t, e.client("alice"), req).Topics[0]
	wantCode(t, "alice deletes t by id, describe only", st.ErrorCode, kerr.TopicAuthorizationFailed)
	if st.Topic == nil || *st.Topic != "t" {
		t.Fatalf("a topic alice may describe is named %v", st.Topic)
	}
	e.grant(kadm.NewACLs().Topics("t").Allow("User:alice").Operations(kadm.OpDelete))
	wantCode(t, "alice deletes t by id, DELETE", send[*kmsg.DeleteTopicsResponse](t, e.client("alice"), req).Topics[0].ErrorCode, nil)
}
