package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"strconv"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/coordinator"
	"github.com/floe-io/floe/coordinator/ha"
	"github.com/floe-io/floe/coordinator/rpc"
	"github.com/floe-io/floe/coordinator/service"
	"github.com/floe-io/floe/coordinator/shards"
	"github.com/floe-io/floe/groups"
)

const (
	// defaultHeartbeatInterval is Config.HeartbeatInterval's default; the
	// coordinator forgets a broker after 6s without one.
	defaultHeartbeatInterval = 2 * time.Second
	// embeddedMaxPayload is the embedded NATS server's max_payload: room
	// for large commits in one message (larger ones are split).
	embeddedMaxPayload = 8 << 20
	// registerRetry is how soon a failed heartbeat is tried again.
	registerRetry = 200 * time.Millisecond
	// embeddedLeadTimeout bounds how long the embedded coordinator takes to
	// replay its log and open.
	embeddedLeadTimeout = 5 * time.Minute
	// shardsFollowInterval is how often a cluster broker asks shard 0
	// for the cluster's shard count (cluster_info); a commit refused as
	// another shard's asks at once.
	shardsFollowInterval = 2 * time.Second
)

// startCoordinator gives the node its coordinator client: connected to the
// cluster's NATS at cfg.NATSURL, or to an embedded NATS server on which the
// node serves its own embedded coordinator. Either way the broker and
// ingest reach the coordinator through the same rpc.Client.
func (n *Node) startCoordinator(copts coordinator.Options) error {
	cfg := n.cfg
	if err := rpc.CheckCluster(cfg.Cluster); err != nil {
		return err
	}
	name := fmt.Sprintf("floe-broker-%d", cfg.Broker.NodeID)
	if cfg.NATSURL != "" {
		secure, err := cfg.NATSSecurity.Options()
		if err != nil {
			return err
		}
		nc, err := nats.Connect(cfg.NATSURL, append(append(n.natsOptions(name), secure...),
			// Brokers are stateless: start even while NATS is not up yet.
			nats.RetryOnFailedConnect(true))...)
		if err != nil {
			return fmt.Errorf("connect to nats %s: %w", cfg.NATSURL, err)
		}
		n.nc = nc
		n.client = rpc.NewClient(nc, cfg.Cluster, rpc.ClientOptions{Timeout: cfg.CoordinatorTimeout, Logger: n.log})
		dial := func(shard int) coordapi.Coordinator {
			return rpc.NewClient(nc, rpc.ShardCluster(cfg.Cluster, shard), rpc.ClientOptions{Timeout: cfg.CoordinatorTimeout, Logger: n.log})
		}
		all := []coordapi.Coordinator{n.client}
		for i := 1; i < cfg.CoordinatorShards; i++ {
			all = append(all, dial(i))
		}
		if n.shards, err = shards.New(all); err != nil {
			return err
		}
		// The cluster's shard count, followed: a growth (shard 0's
		// handover) adds shards this broker then routes over.
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		n.stopFollow = func() { cancel(); <-done }
		go func() {
			defer close(done)
			n.shards.Follow(ctx, shardsFollowInterval, n.client.ClusterInfo, dial, n.log)
		}()
		n.log.Info("using the cluster's coordinator", "nats_url", cfg.NATSURL, "cluster", cfg.Cluster, "shards", max(cfg.CoordinatorShards, 1))
		return nil
	}
	if cfg.CoordinatorShards > 1 {
		return fmt.Errorf("--coordinator-shards %d: the embedded coordinator has one shard (shards need a cluster's coordinators, --nats-url)", cfg.CoordinatorShards)
	}

	sopts := &server.Options{
		ServerName: name,
		DontListen: cfg.NATSListen == "",
		NoSigs:     true,
		MaxPayload: embeddedMaxPayload,
		// The coordinator's log (package ha), R1, not synced per
		// message: the lone coordinator syncs its Pebble instead
		// (ha.Options.SyncState), one fsync per commit as before the log,
		// where JetStream's sync_always costs twice that.
		JetStream: true,
		StoreDir:  filepath.Join(cfg.DataDir, "nats"),
	}
	if cfg.NATSListen != "" {
		host, port, err := net.SplitHostPort(cfg.NATSListen)
		if err != nil {
			return fmt.Errorf("nats listen address %q: %w", cfg.NATSListen, err)
		}
		if sopts.Port, err = strconv.Atoi(port); err != nil {
			return fmt.Errorf("nats listen port %q: %w", port, err)
		}
		if sopts.Port == 0 {
			sopts.Port = server.RANDOM_PORT // nats-server reads 0 as its default, 4222
		}
		sopts.Host = host
	}
	ns, err := server.NewServer(sopts)
	if err != nil {
		return fmt.Errorf("embedded nats server: %w", err)
	}
	ns.SetLoggerV2(natsLogger{n.log.With("component", "nats")}, false, false, false)
	n.natsServer = ns
	ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		return fmt.Errorf("embedded nats server not ready after 10s")
	}
	// The coordinator serves on its own connection, so that its requests
	// and the broker's replies are read concurrently.
	if n.srvConn, err = nats.Connect("", append(n.natsOptions(name+"-coordinator"), nats.InProcessServer(ns))...); err != nil {
		return fmt.Errorf("connect to embedded nats: %w", err)
	}
	// The embedded coordinator is the cluster's only one: the leader of
	// an R1 log, through the same code as a cluster's coordinators.
	if n.ha, err = ha.Start(n.srvConn, ha.Options{
		ID:        "embedded",
		Snapshots: n.store, SnapshotPrefix: cfg.S3Prefix,
		SyncState: true,
		Service: service.Options{
			Cluster:     cfg.Cluster,
			Coordinator: copts,
			// Group state sits beside the coordinator's, under the data
			// dir (where it was when groups lived with the broker).
			Groups: embeddedGroups(cfg),
			Logger: n.log,
			Meters: n.metrics,
		},
	}); err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(context.Background(), embeddedLeadTimeout)
	err = n.ha.WaitLeader(wctx)
	cancel()
	if err != nil {
		return fmt.Errorf("embedded coordinator did not start: %w", err)
	}
	if n.nc, err = nats.Connect("", append(n.natsOptions(name), nats.InProcessServer(ns))...); err != nil {
		return fmt.Errorf("connect to embedded nats: %w", err)
	}
	n.client = rpc.NewClient(n.nc, cfg.Cluster, rpc.ClientOptions{Timeout: cfg.CoordinatorTimeout, Logger: n.log})
	if cfg.NATSListen != "" {
		n.log.Info("embedded nats listening", "url", ns.ClientURL(), "cluster", cfg.Cluster)
	}
	return nil
}

// brokerCoordinator is the coordinator the broker and ingest call: the
// NATS client, except that an embedded coordinator answers /kv lookups
// (KvGet, a read) and commits (CommitObject) in this process. On the lookup
// path the in-process NATS round trip costs more CPU than the rest of the
// lookup together (two connections' read loops, the server's parser and
// four goroutine hand-offs), and halves /kv's throughput. On the produce
// path, under issue 11's load of 100 produces a second, the broker's
// commit took 0.16 ms longer on average than the coordinator's serving of
// it (floe_ingest_commit_duration_seconds against
// floe_coordinator_rpc_duration_seconds), of a produce of about 1.1 ms.
// Every other call still goes over NATS, as a cluster broker's do.
func (n *Node) brokerCoordinator() coordapi.Coordinator {
	if n.ha == nil {
		return n.partitionsCoordinator()
	}
	return embedded{Client: n.client, local: n.ha}
}

// partitionsCoordinator is the coordinator of calls about partitions: the
// router over the shards, or the client of the only one.
func (n *Node) partitionsCoordinator() coordapi.Coordinator {
	if n.shards != nil {
		return n.shards
	}
	return n.client
}

// embedded is the NATS client with KvGet and CommitObject answered by the
// embedded coordinator.
type embedded struct {
	*rpc.Client
	local *ha.Node
}

// KvGet answers from the embedded coordinator while it leads (over NATS
// otherwise); see coordinator.Coordinator.KvGet.
func (e embedded) KvGet(ctx context.Context, req coordapi.KvGetRequest) (coordapi.KvGetResult, error) {
	if c := e.local.Coordinator(); c != nil {
		res, settled, err := c.KvGetSettled(ctx, req)
		if err == nil && !settled {
			// As a reply over NATS would: not before the log has what
			// the lookup saw, unless that was durable already.
			err = e.local.Barrier()
		}
		return res, err
	}
	return e.Client.KvGet(ctx, req)
}

// natsOptions are the options of the node's NATS connections: reconnect
// forever, and log connection changes.
func (n *Node) natsOptions(name string) []nats.Option {
	return []nats.Option{
		nats.Name(name),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(250 * time.Millisecond),
		nats.DisconnectErrHandler(func(nc *nats.Conn, err error) {
			if !nc.IsClosed() {
				n.log.Warn("nats disconnected", "conn", name, "err", err)
			}
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) {
			n.log.Info("nats reconnected", "conn", name, "url", nc.ConnectedUrlRedacted())
		}),
		nats.ConnectHandler(func(nc *nats.Conn) {
			n.log.Info("nats connected", "conn", name, "url", nc.ConnectedUrlRedacted())
		}),
	}
}

// brokerInfo is this broker's registry entry.
func brokerInfo(nodeID int32, advertised, rack string) (coordapi.BrokerInfo, error) {
	host, port, err := net.SplitHostPort(advertised)
	if err != nil {
		return coordapi.BrokerInfo{}, fmt.Errorf("advertised address %q: %w", advertised, err)
	}
	p, err := strconv.Atoi(port)
	if err != nil {
		return coordapi.BrokerInfo{}, fmt.Errorf("advertised port %q: %w", port, err)
	}
	return coordapi.BrokerInfo{NodeID: nodeID, Host: host, Port: int32(p), Rack: rack}, nil
}

// startHeartbeat registers the broker with the coordinator now and every
// interval until stopHeartbeat, so that every broker's Metadata names it.
func (n *Node) startHeartbeat(info coordapi.BrokerInfo) {
	interval := n.cfg.HeartbeatInterval
	if interval <= 0 {
		interval = defaultHeartbeatInterval
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	n.heartbeat.info, n.heartbeat.cancel, n.heartbeat.done = info, cancel, done
	go func() {
		defer close(done)
		t := time.NewTicker(interval)
		defer t.Stop()
		registered, failing := false, false
		for {
			rctx, rcancel := context.WithTimeout(ctx, interval)
			err := n.client.RegisterBroker(rctx, info)
			rcancel()
			switch {
			case ctx.Err() != nil:
				return
			case err == nil && !registered:
				n.log.Info("registered with the coordinator", "node_id", info.NodeID, "addr", info.Addr())
				registered, failing = true, false
			case err != nil && !failing:
				n.log.Warn("cannot register with the coordinator; retrying", "node_id", info.NodeID, "err", err)
				registered, failing = false, true
			}
			// Until registered, try again soon: a coordinator taking over
			// (or starting) answers within moments, and the other brokers'
			// Metadata names this one only once it is registered.
			retry := t.C
			if err != nil {
				retry = time.After(min(interval, registerRetry))
			}
			select {
			case <-ctx.Done():
				return
			case <-retry:
			}
		}
	}()
}

// stopHeartbeat stops the heartbeat and deregisters the broker, so that
// Metadata stops naming it at once.
func (n *Node) stopHeartbeat(ctx context.Context) {
	if n.heartbeat.cancel == nil {
		return
	}
	n.heartbeat.cancel()
	<-n.heartbeat.done
	n.heartbeat.cancel = nil
	dctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	if err := n.client.DeregisterBroker(dctx, n.heartbeat.info); err != nil {
		n.log.Warn("deregister from the coordinator", "err", err)
	}
}

// closeCoordinator stops what startCoordinator started, in reverse.
func (n *Node) closeCoordinator() error {
	var err error
	if n.ha != nil {
		err = n.ha.Close()
		n.ha = nil
	}
	if n.nc != nil {
		n.nc.Close()
		n.nc = nil
	}
	if n.srvConn != nil {
		n.srvConn.Close()
		n.srvConn = nil
	}
	if n.natsServer != nil {
		n.natsServer.Shutdown()
		n.natsServer.WaitForShutdown()
		n.natsServer = nil
	}
	return err
}

// NATSURL returns the URL other processes reach the embedded NATS server
// at (with Config.NATSListen), or "" when there is none.
func (n *Node) NATSURL() string {
	if n.natsServer == nil || n.cfg.NATSListen == "" {
		return ""
	}
	return n.natsServer.ClientURL()
}

// CoordinatorClient returns the client the broker and ingest reach the
// coordinator with.
func (n *Node) CoordinatorClient() *rpc.Client { return n.client }

// natsLogger sends the embedded NATS server's logs to slog; its notices
// (startup chatter) at debug level.
type natsLogger struct{ log *slog.Logger }

func (l natsLogger) Noticef(format string, v ...any) { l.log.Debug(fmt.Sprintf(format, v...)) }
func (l natsLogger) Warnf(format string, v ...any)   { l.log.Warn(fmt.Sprintf(format, v...)) }
func (l natsLogger) Fatalf(format string, v ...any)  { l.log.Error(fmt.Sprintf(format, v...)) }
func (l natsLogger) Errorf(format string, v ...any)  { l.log.Error(fmt.Sprintf(format, v...)) }
func (l natsLogger) Debugf(format string, v ...any)  { l.log.Debug(fmt.Sprintf(format, v...)) }
func (l natsLogger) Tracef(format string, v ...any)  {}

// CommitObject commits with the embedded coordinator while it leads (over
// NATS otherwise); see coordinator.Coordinator.CommitObject.
func (e embedded) CommitObject(ctx context.Context, req *coordapi.CommitRequest) (*coordapi.CommitResponse, error) {
	if c := e.local.Coordinator(); c != nil {
		resp, err := c.CommitObject(ctx, req)
		if errors.Is(err, coordapi.ErrClosed) {
			// Closed (stepping down, stopping) before it wrote anything:
			// whoever leads next answers, over NATS (an inline commit
			// fails there, retriably: its producer tries again).
			return e.Client.CommitObject(ctx, req)
		}
		// No barrier, which a reply over NATS waits for: the commit
		// waited for its own log entry, published after every change it
		// read, and the log acknowledges in order.
		return resp, err
	}
	return e.Client.CommitObject(ctx, req)
}

// embeddedGroups is the embedded group coordinator's options: cfg.Groups,
// in <DataDir>/groups.
func embeddedGroups(cfg Config) groups.Options {
	g := cfg.Groups
	g.Dir = filepath.Join(cfg.DataDir, "groups")
	return g
}
