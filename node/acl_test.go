package node_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-io/floe/broker"
	"github.com/floe-io/floe/internal/testkit"
	"github.com/floe-io/floe/internal/testkit/floetest"
	"github.com/floe-io/floe/node"
)

// TestNodeACLsOverNATS runs two nodes with ACLs on, the second using the
// first's coordinator over NATS: ACLs created through the first (whose
// super user is the anonymous principal) are stored in the coordinator and
// apply on the second, through the rpc client's ACL ops and notices.
func TestNodeACLsOverNATS(t *testing.T) {
	super := broker.Options{ACLsEnabled: true, SuperUsers: []string{broker.AnonymousPrincipal}}
	n1 := floetest.StartNode(t, node.Config{NATSListen: "127.0.0.1:0", Cluster: "acltest", Broker: super})
	cfg2 := node.Config{DataDir: t.TempDir(), Store: n1.Store(), NATSURL: n1.NATSURL(), Cluster: "acltest",
		Broker: broker.Options{NodeID: 2, ACLsEnabled: true}}
	cfg2.KafkaAddr, cfg2.HTTPAddr, cfg2.Logger = "127.0.0.1:0", "-", testkit.Logger()
	n2 := floetest.StartNode(t, cfg2)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	admin := kadm.NewClient(pinned(t, n1.KafkaAddr()))
	if _, err := admin.CreateTopic(ctx, 1, -1, nil, "t"); err != nil {
		t.Fatal(err)
	}
	c2 := pinned(t, n2.KafkaAddr())
	metadataCode := func() int16 {
		req := kmsg.NewPtrMetadataRequest()
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr("t")
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, c2)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Topics[0].ErrorCode
	}
	if code := metadataCode(); code != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("node 2 before any acl: %v", kerr.ErrorForCode(code))
	}
	res, err := admin.CreateACLs(ctx, kadm.NewACLs().Topics("t").Allow(broker.AnonymousPrincipal).Operations(kadm.OpDescribe))
	if err != nil || res[0].Err != nil {
		t.Fatalf("create acl: %v %+v", err, res)
	}
	testkit.CheckFor(t, 10*time.Second, 20*time.Millisecond, func() error {
		return kerr.ErrorForCode(metadataCode())
	})
	described, err := kadm.NewClient(c2).DescribeACLs(ctx, kadm.NewACLs().AnyResource().ResourcePatternType(kadm.ACLPatternAny).
		Allow().AllowHosts().Deny().DenyHosts().Operations())
	if err != nil {
		t.Fatal(err)
	}
	if len(described) != 1 || described[0].Err == nil {
		t.Fatalf("node 2's anonymous principal described acls without CLUSTER DESCRIBE: %+v", described)
	}
	if !n2.Broker().AuthorizeTopic(broker.AnonymousPrincipal, "127.0.0.1", kmsg.ACLOperationDescribe, "t") ||
		n2.Broker().AuthorizeTopic(broker.AnonymousPrincipal, "127.0.0.1", kmsg.ACLOperationRead, "t") {
		t.Fatal("AuthorizeTopic on node 2")
	}
}
