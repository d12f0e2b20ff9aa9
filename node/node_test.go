package node_test

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-io/floe/broker"
	"github.com/floe-io/floe/internal/testkit"
	"github.com/floe-io/floe/internal/testkit/floetest"
	"github.com/floe-io/floe/internal/testkit/miniotest"
	"github.com/floe-io/floe/node"
)

// pinned is a client whose every connection goes to addr.
func pinned(t *testing.T, addr string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	dial := func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.Dialer(dial)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func brokerIDs(ctx context.Context, cl *kgo.Client) ([]int32, error) {
	resp, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
	if err != nil {
		return nil, err
	}
	var ids []int32
	for _, b := range resp.Brokers {
		ids = append(ids, b.NodeID)
	}
	slices.Sort(ids)
	return ids, nil
}

// TestNodeUsesAnotherNodesCoordinator runs a node whose embedded NATS
// server listens, and a second node using its coordinator over NATS (as
// brokers use cmd/coordinator): both are named in Metadata, a record
// produced through one is read through the other, and the second leaves
// the registry when it closes.
func TestNodeUsesAnotherNodesCoordinator(t *testing.T) {
	n1 := floetest.StartNode(t, node.Config{NATSListen: "127.0.0.1:0", Cluster: "nodetest"})
	if n1.Coordinator() == nil || n1.NATSURL() == "" {
		t.Fatalf("embedded node: coordinator %v, nats url %q", n1.Coordinator(), n1.NATSURL())
	}
	// Its own data dir (its groups live there), the first node's objects.
	cfg2 := node.Config{DataDir: t.TempDir(), Store: n1.Store(), NATSURL: n1.NATSURL(), Cluster: "nodetest", Broker: broker.Options{NodeID: 2}}
	cfg2.KafkaAddr, cfg2.HTTPAddr, cfg2.Logger = "127.0.0.1:0", "-", testkit.Logger()
	n2, err := node.Start(context.Background(), cfg2)
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	t.Cleanup(func() {
		if !closed {
			n2.Close(context.Background())
		}
	})
	if n2.Coordinator() != nil || n2.NATSURL() != "" || n2.CoordinatorClient() == nil {
		t.Fatal("a node using a cluster's coordinator has one of its own")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c1, c2 := pinned(t, n1.KafkaAddr()), pinned(t, n2.KafkaAddr(), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	testkit.CheckFor(t, 10*time.Second, 50*time.Millisecond, func() error {
		ids, err := brokerIDs(ctx, c1)
		if err != nil || !slices.Equal(ids, []int32{1, 2}) {
			return fmt.Errorf("node 1 names brokers %v (%v)", ids, err)
		}
		return nil
	})

	if _, err := kadm.NewClient(c2).CreateTopic(ctx, 2, 1, nil, "t"); err != nil {
		t.Fatal(err)
	}
	if err := c2.ProduceSync(ctx, &kgo.Record{Topic: "t", Partition: 1, Value: []byte("through node 2")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	c1.AddConsumePartitions(map[string]map[int32]kgo.Offset{"t": {1: kgo.NewOffset().AtStart()}})
	fs := c1.PollFetches(ctx)
	if err := fs.Err(); err != nil {
		t.Fatal(err)
	}
	if recs := fs.Records(); len(recs) != 1 || string(recs[0].Value) != "through node 2" {
		t.Fatalf("node 1 read %v", recs)
	}

	closed = true
	if err := n2.Close(ctx); err != nil {
		t.Fatal(err)
	}
	testkit.CheckFor(t, 5*time.Second, 50*time.Millisecond, func() error {
		ids, err := brokerIDs(ctx, c1)
		if err != nil || !slices.Equal(ids, []int32{1}) {
			return fmt.Errorf("node 1 names brokers %v (%v)", ids, err)
		}
		return nil
	})
}

// TestS3BucketCheckedAtStart checks that a missing bucket or refused
// credentials stop a node at start with a message naming the flag and
// the fix, and that --s3-create-bucket still makes a missing bucket.
func TestS3BucketCheckedAtStart(t *testing.T) {
	m := miniotest.Start(t)
	for _, tc := range []struct {
		name   string
		set    func(*node.Config)
		errHas []string // none: starts
	}{
		{"missing bucket", func(c *node.Config) { c.S3.Bucket = "no-such-bucket" },
			[]string{"--s3-bucket no-such-bucket does not exist", "--s3-create-bucket"}},
		{"bad secret", func(c *node.Config) { c.S3.SecretKey = "wrong" },
			[]string{"refused this broker's credentials", "AWS_SECRET_ACCESS_KEY"}},
		{"created", func(c *node.Config) { c.S3.Bucket, c.S3CreateBucket = "made-at-start", true }, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := node.Config{DataDir: t.TempDir(), KafkaAddr: "127.0.0.1:0", HTTPAddr: "-", Logger: testkit.Logger(), S3: m.Options()}
			tc.set(&cfg)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			n, err := node.Start(ctx, cfg)
			if err == nil {
				defer n.Close(context.Background())
			}
			if len(tc.errHas) == 0 {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			for _, want := range tc.errHas {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("start: %v; want it to say %q", err, want)
				}
			}
		})
	}
}
