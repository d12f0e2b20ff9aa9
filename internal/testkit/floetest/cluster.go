package floetest

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/floe-io/floe/internal/testkit"
	"github.com/floe-io/floe/internal/testkit/miniotest"
	"github.com/floe-io/floe/internal/testkit/natstest"
)

// ClusterName is the cluster name (NATS subject prefix) of the clusters
// RunCluster starts.
const ClusterName = "e2e"

// ClusterOptions configure RunClusterWith.
type ClusterOptions struct {
	// CoordinatorArgs are extra flags of the coordinator process (e.g.
	// --gc-grace), kept when it is restarted.
	CoordinatorArgs []string
	// BrokerArgs are extra flags of every broker process.
	BrokerArgs []string
}

// Cluster is a multi-process floe cluster on 127.0.0.1: a real MinIO for
// objects, a NATS server in the test process, one coordinator process and
// broker processes using them. Everything is stopped at cleanup.
type Cluster struct {
	t testing.TB
	// NATS is the cluster's NATS server.
	NATS *server.Server
	// MinIO holds the cluster's objects.
	MinIO *miniotest.Server
	// Env is the environment of the cluster's processes (MinIO's
	// credentials).
	Env []string
	// CoordDir is the coordinator's data dir, kept across restarts.
	CoordDir string
	// Coord is the running coordinator process (the last one started).
	Coord *Process
	// Brokers are the broker processes started, in order.
	Brokers []*Process

	opts ClusterOptions
}

// RunCluster starts MinIO, NATS, a coordinator and n brokers (node ids
// 1..n), each broker on its own data dir.
func RunCluster(t testing.TB, n int) *Cluster { return RunClusterWith(t, n, ClusterOptions{}) }

// RunClusterWith is RunCluster with opts.
func RunClusterWith(t testing.TB, n int, opts ClusterOptions) *Cluster {
	t.Helper()
	c := &Cluster{t: t, NATS: natstest.Start(t), MinIO: miniotest.Start(t), CoordDir: t.TempDir(), opts: opts}
	c.Env = []string{"AWS_ACCESS_KEY_ID=" + c.MinIO.AccessKey, "AWS_SECRET_ACCESS_KEY=" + c.MinIO.SecretKey}
	c.StartCoordinator()
	for id := 1; id <= n; id++ {
		c.AddBroker(id)
	}
	return c
}

// StartCoordinator starts (or restarts, on the same data dir) the
// coordinator process.
func (c *Cluster) StartCoordinator() *Process {
	c.t.Helper()
	return c.StartCoordinatorWith()
}

// StartCoordinatorWith is StartCoordinator with extra flags args, after
// (and so overriding) ClusterOptions.CoordinatorArgs, for this start only.
func (c *Cluster) StartCoordinatorWith(extra ...string) *Process {
	c.t.Helper()
	args := []string{"--nats-url", c.NATS.ClientURL(), "--cluster", ClusterName,
		"--data-dir", c.CoordDir, "--broker-ttl", "3s", "--s3-bucket", c.MinIO.Bucket,
		"--s3-endpoint", c.MinIO.Endpoint, "--s3-region", c.MinIO.Region, "--s3-path-style"}
	args = append(append(args, c.opts.CoordinatorArgs...), extra...)
	c.Coord = StartCoordinator(c.t, c.Env, args...)
	// /healthz answers 200 from the standby role on: the cluster's only
	// coordinator serves once it leads (it has applied its log).
	testkit.CheckFor(c.t, 30*time.Second, 10*time.Millisecond, func() error {
		h, err := (&HACoordinator{ID: "coordinator", Proc: c.Coord}).Health()
		if err != nil {
			return err
		}
		if h.Role != "leader" {
			return fmt.Errorf("coordinator /healthz: %s, waiting for it to lead", h)
		}
		return nil
	})
	return c.Coord
}

// AddBroker starts broker id on a fresh data dir (an empty chunk cache),
// with extra flags args.
func (c *Cluster) AddBroker(id int, args ...string) *Process {
	c.t.Helper()
	return c.AddBrokerVia(id, c.MinIO.Endpoint, args...)
}

// AddBrokerVia is AddBroker with s3Endpoint in place of MinIO's (a proxy
// in front of it).
func (c *Cluster) AddBrokerVia(id int, s3Endpoint string, args ...string) *Process {
	c.t.Helper()
	return c.addBroker(Binary(c.t, "broker"), id, s3Endpoint, args)
}

// AddBrokerBinary is AddBrokerVia running bin, a broker binary built
// elsewhere (another commit's, to compare with), in place of this
// module's. An empty s3Endpoint means MinIO's.
func (c *Cluster) AddBrokerBinary(bin string, id int, s3Endpoint string, args ...string) *Process {
	c.t.Helper()
	if s3Endpoint == "" {
		s3Endpoint = c.MinIO.Endpoint
	}
	return c.addBroker(bin, id, s3Endpoint, args)
}

func (c *Cluster) addBroker(bin string, id int, s3Endpoint string, args []string) *Process {
	c.t.Helper()
	all := []string{"--node-id", strconv.Itoa(id), "--nats-url", c.NATS.ClientURL(), "--cluster", ClusterName,
		"--data-dir", c.t.TempDir(), "--s3-bucket", c.MinIO.Bucket, "--s3-endpoint", s3Endpoint,
		"--s3-region", c.MinIO.Region, "--s3-path-style", "--coordinator-timeout", "3s"}
	all = append(append(all, c.opts.BrokerArgs...), args...)
	b := StartBrokerBinary(c.t, bin, c.Env, all...)
	c.Brokers = append(c.Brokers, b)
	return b
}

// KafkaAddrs returns the Kafka addresses of the brokers started.
func (c *Cluster) KafkaAddrs() []string {
	out := make([]string, len(c.Brokers))
	for i, b := range c.Brokers {
		out[i] = b.KafkaAddr
	}
	return out
}
