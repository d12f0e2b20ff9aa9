// Package natstest runs a real NATS server inside the test process, on
// 127.0.0.1 and a free port, shut down by t.Cleanup.
package natstest

import (
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

// StartWith is Start with opts (Host, Port and logging are set here).
func StartWith(t testing.TB, opts *server.Options) *server.Server {
	t.Helper()
	opts.Host = "127.0.0.1"
	opts.Port = server.RANDOM_PORT
	opts.NoLog, opts.NoSigs = true, true
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
