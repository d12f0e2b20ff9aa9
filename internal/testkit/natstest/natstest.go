// Package natstest runs a real NATS server inside the test process, on
// 127.0.0.1 and a free port, shut down by t.Cleanup.
package natstest

import (
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// MaxPayload is the test servers' max_payload, as embedded servers use.
const MaxPayload = 8 << 20

// Start runs a NATS server listening on 127.0.0.1 on a free port and waits
// until it accepts connections. Its URL is s.ClientURL().
func Start(t testing.TB) *server.Server {
	t.Helper()
	return StartWith(t, &server.Options{})
}

// StartWith is Start with opts (Host, Port and logging are set here, and
// JetStream, which the coordinator keeps its log in, is enabled with its
// store in a temporary directory).
func StartWith(t testing.TB, opts *server.Options) *server.Server {
	t.Helper()
	opts.Host = "127.0.0.1"
	opts.Port = server.RANDOM_PORT
	opts.NoLog, opts.NoSigs = true, true
	opts.JetStream = true
	if opts.StoreDir == "" {
		opts.StoreDir = t.TempDir()
	}
	if opts.MaxPayload == 0 {
		opts.MaxPayload = MaxPayload
	}
	s, err := server.NewServer(opts)
	if err != nil {
		t.Fatalf("nats server: %v", err)
	}
	s.Start()
	t.Cleanup(func() {
		s.Shutdown()
		s.WaitForShutdown()
	})
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats server not ready after 10s")
	}
	return s
}

// Connect connects to s (over TCP) and closes the connection at cleanup.
func Connect(t testing.TB, s *server.Server, opts ...nats.Option) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(s.ClientURL(), opts...)
	if err != nil {
		t.Fatalf("connect to nats %s: %v", s.ClientURL(), err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// StartCluster runs n JetStream servers clustered with each other on
// 127.0.0.1 and free ports (n = 3 for a cluster that survives one server's
// loss), shut down by t.Cleanup, and waits until each accepts connections.
// URLs joins their client URLs for a connection that fails over.
//
// The ports are picked free before the servers bind them (every server's
// routes name every other's), so another socket can take one in between;
// a server whose port was taken never becomes ready, and the cluster is
// started again on new ports, up to three times.
func StartCluster(t testing.TB, n int) []*server.Server {
	t.Helper()
	for attempt := 1; ; attempt++ {
		srvs, err := startCluster(t, n)
		if err == nil {
			for _, s := range srvs {
				t.Cleanup(func() { s.Shutdown(); s.WaitForShutdown() })
			}
			return srvs
		}
		if attempt == 3 {
			t.Fatal(err)
		}
		t.Logf("natstest: %v; starting the cluster again on new ports", err)
	}
}

// startCluster is one attempt of StartCluster; it shuts its servers down
// when it fails.
func startCluster(t testing.TB, n int) ([]*server.Server, error) {
	t.Helper()
	ports, cports := make([]int, n), make([]int, n)
	for i := range ports {
		ports[i], cports[i] = freePort(t), freePort(t)
	}
	srvs := make([]*server.Server, 0, n)
	stop := func() {
		for _, s := range srvs {
			s.Shutdown()
			s.WaitForShutdown()
		}
	}
	for i := range n {
		var routes []string
		for j := range cports {
			if j != i {
				routes = append(routes, fmt.Sprintf("nats://127.0.0.1:%d", cports[j]))
			}
		}
		o := &server.Options{Host: "127.0.0.1", Port: ports[i], JetStream: true, StoreDir: t.TempDir(),
			ServerName: fmt.Sprintf("n%d", i), NoSigs: true, NoLog: true, MaxPayload: MaxPayload,
			Cluster: server.ClusterOpts{Name: "natstest", Host: "127.0.0.1", Port: cports[i]},
			Routes:  server.RoutesFromStr(strings.Join(routes, ","))}
		s, err := server.NewServer(o)
		if err != nil {
			stop()
			return nil, fmt.Errorf("nats server: %w", err)
		}
		go s.Start()
		srvs = append(srvs, s)
	}
	for i, s := range srvs {
		if !s.ReadyForConnections(10 * time.Second) {
			stop()
			return nil, fmt.Errorf("nats server %d (ports %d, %d) not ready after 10s", i, ports[i], cports[i])
		}
	}
	return srvs, nil
}

// URLs returns the client URLs of srvs, comma-separated.
func URLs(srvs []*server.Server) string {
	u := make([]string, len(srvs))
	for i, s := range srvs {
		u[i] = s.ClientURL()
	}
	return strings.Join(u, ",")
}

// freePort returns a TCP port free on 127.0.0.1.
func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// StreamLeader returns the server of srvs that leads JetStream stream (of
// the default account), nil while none does (an election is under way).
func StreamLeader(srvs []*server.Server, stream string) *server.Server {
	for _, s := range srvs {
		if s.Running() && s.JetStreamIsStreamLeader(server.DEFAULT_GLOBAL_ACCOUNT, stream) {
			return s
		}
	}
	return nil
}
