// Command coordinator runs floe's batch coordinator as a service: its state
// in Pebble under --data-dir, its API served over NATS request/reply
// (subjects <cluster>.coord.<op>) to the brokers of --cluster, and commit
// notices published on <cluster>.commits. It is also the cluster's group
// coordinator: consumer groups and committed offsets, in Pebble under
// --groups-dir, served to every broker. Brokers started with
// --nats-url use it. HTTP on --http-addr serves /healthz, /readyz and
// /metrics.
//
// Both states are views of a replicated log in NATS JetStream (package
// coordinator/ha; --replicas 3 on a 3-node cluster): several coordinators
// started against the same cluster elect one leader, which serves, while
// the others stand by applying the log, ready to take over within
// --lease-ttl. /healthz says which role this one has.
//
// Every flag can also be set by an environment variable: --gc-grace is
// FLOE_GC_GRACE. A flag on the command line wins.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/coordinator"
	"github.com/floe-io/floe/coordinator/ha"
	"github.com/floe-io/floe/coordinator/rpc"
	"github.com/floe-io/floe/coordinator/service"
	"github.com/floe-io/floe/groups"
	"github.com/floe-io/floe/internal/cli"
	"github.com/floe-io/floe/internal/flagenv"
	"github.com/floe-io/floe/internal/probe"
	"github.com/floe-io/floe/metrics"
	"github.com/floe-io/floe/objectstore"
)

func main() {
	os.Exit(cli.Exit(os.Stderr, "coordinator", run(os.Args[1:])))
}

// config is the coordinator's flags.
type config struct {
	coord   coordinator.Options
	groups  groups.Options
	s3      objectstore.S3Options
	natsURL string
	// natsSecurity authenticates to a secured NATS cluster.
	natsSecurity rpc.Security
	cluster      string
	httpAddr     string
	// pprof serves /debug/pprof on httpAddr.
	pprof    bool
	logLevel string
	// ha is the coordinator's place among the cluster's coordinators.
	ha ha.Options

	numPartitions *int
	consolidation *bool
}

// newFlagSet builds the coordinator's flags, each with its name and
// default: the command line, FLOE_* environment variables and
// docs/configuration.md (TestConfigurationDoc) all come from it. Tools
// outside the repository use these names and defaults: keep them.
func newFlagSet() (*flag.FlagSet, *config) {
	fs := flag.NewFlagSet("coordinator", flag.ContinueOnError)
	cfg := &config{}
	cfg.numPartitions = fs.Int("num-partitions", 1, "partitions of topics created with -1 (num.partitions)")
	fs.StringVar(&cfg.coord.Dir, "data-dir", "./data-coordinator", "directory of the coordinator's Pebble state")
	fs.StringVar(&cfg.natsURL, "nats-url", "nats://127.0.0.1:4222", "NATS server(s) to serve on, comma-separated")
	fs.StringVar(&cfg.cluster, "cluster", "floe", "cluster name: the prefix of its NATS subjects")
	fs.StringVar(&cfg.httpAddr, "http-addr", "127.0.0.1:8090", "HTTP address for /healthz, /readyz and /metrics (\"-\" disables)")
	fs.BoolVar(&cfg.pprof, "pprof", false, "serve /debug/pprof (profiles, traces) on --http-addr, to profile the leader under load (scripts/fleet-sim.sh)")
	fs.BoolVar(&cfg.coord.KVIndexEnabled, "kv-index-enabled", false, "allow topics to enable kv.index.enabled")
	cfg.consolidation = fs.Bool("consolidation-enabled", true, "plan consolidation jobs for the brokers to run (=false: data stays in WAL objects; retention still runs)")
	fs.DurationVar(&cfg.coord.GCGrace, "gc-grace", 10*time.Minute, "how long garbage and orphan objects are kept before they are deleted")
	fs.DurationVar(&cfg.coord.WALRetention, "wal-retention", 10*time.Minute, "how long batches stay in WAL objects before the coordinator has them consolidated into per-partition segments (the default of local.retention.ms)")
	fs.Int64Var(&cfg.coord.WALRetentionBytes, "wal-retention-bytes", -1, "the most WAL bytes a partition keeps before its oldest batches are consolidated, -1 for no limit (the default of local.retention.bytes)")
	fs.DurationVar(&cfg.coord.TierInterval, "tier-interval", 10*time.Second, "how often the coordinator plans consolidation jobs and enforces retention.ms and retention.bytes")
	fs.DurationVar(&cfg.coord.TierJobLease, "tier-job-lease", 2*time.Minute, "how long a broker has to complete a consolidation job (kept below half of --gc-grace)")
	fs.DurationVar(&cfg.coord.MaxObjectAge, "max-object-age", 0, "the oldest WAL object (by its key's UUIDv7 time) the coordinator accepts a commit of, so that the collector never took it as an orphan; 0: half of --gc-grace; negative: no limit")
	fs.DurationVar(&cfg.coord.TableMaintainInterval, "table-maintain-interval", 24*time.Hour, "how often a table.enabled topic's table maintenance job may be planned: table.retention.ms, snapshot expiry and orphan files (the first after a start at once)")
	fs.DurationVar(&cfg.coord.TableInterval, "table-interval", time.Minute, "how often a table.enabled topic's table job may be planned: how often its Iceberg table gets a snapshot (table lag against snapshot count)")
	fs.DurationVar(&cfg.coord.BrokerTTL, "broker-ttl", 6*time.Second, "how long a broker stays listed without a heartbeat")
	fs.StringVar(&cfg.s3.Bucket, "s3-bucket", "", "S3 bucket of the brokers' objects, read to build key indexes")
	fs.StringVar(&cfg.s3.Endpoint, "s3-endpoint", "", "S3 endpoint URL, e.g. http://127.0.0.1:9000 for MinIO (default: AWS)")
	fs.StringVar(&cfg.s3.Region, "s3-region", "", "S3 region (default: AWS config chain, else us-east-1)")
	fs.BoolVar(&cfg.s3.PathStyle, "s3-path-style", false, "address buckets by path (MinIO)")
	fs.StringVar(&cfg.coord.GCPrefix, "s3-prefix", "", "the brokers' --s3-prefix: where the garbage collector looks for WAL and segment objects")
	fs.StringVar(&cfg.groups.Dir, "groups-dir", "", "directory of the consumer groups' Pebble state (default: <data-dir>/groups)")
	fs.DurationVar(&cfg.groups.InitialRebalanceDelay, "group-initial-rebalance-delay", 0, "how long the first rebalance of an empty group waits for more members (group.initial.rebalance.delay.ms)")
	fs.DurationVar(&cfg.groups.MinSessionTimeout, "group-min-session-timeout", 6*time.Second, "shortest session timeout a member may ask for (group.min.session.timeout.ms)")
	fs.DurationVar(&cfg.groups.MaxSessionTimeout, "group-max-session-timeout", 30*time.Minute, "longest session timeout a member may ask for (group.max.session.timeout.ms)")
	shareGroupFlags(fs, &cfg.groups)
	fs.DurationVar(&cfg.groups.OffsetRetention, "offsets-retention", 7*24*time.Hour, "how long an empty group's committed offsets are kept (offsets.retention.minutes)")
	fs.DurationVar(&cfg.coord.ProducerIDExpiration, "producer-id-expiration", coordinator.DefaultProducerIDExpiration, "how long a producer's idempotence state in a partition is kept after its last batch there (producer.id.expiration.ms; negative: forever)")
	fs.DurationVar(&cfg.coord.TransactionalIDExpiration, "transactional-id-expiration", coordinator.DefaultTransactionalIDExpiration, "how long a transactional id with no transaction open is kept after its last change (transactional.id.expiration.ms; negative: forever)")
	fs.StringVar(&cfg.natsSecurity.CredsFile, "nats-creds", "", "NATS credentials file (JWT and nkey seed) to authenticate with")
	fs.StringVar(&cfg.natsSecurity.NKeyFile, "nats-nkey", "", "NATS nkey seed file to authenticate with")
	fs.StringVar(&cfg.natsSecurity.TLS.CAFile, "nats-tls-ca", "", "CA bundle (PEM) to verify the NATS servers with (default: the system's roots)")
	fs.StringVar(&cfg.natsSecurity.TLS.CertFile, "nats-tls-cert", "", "client certificate (PEM) for NATS servers that verify clients")
	fs.StringVar(&cfg.natsSecurity.TLS.KeyFile, "nats-tls-key", "", "the key of --nats-tls-cert")
	fs.StringVar(&cfg.s3.TLS.CAFile, "s3-ca-file", "", "CA bundle (PEM) to verify an https --s3-endpoint with (default: the system's roots)")
	fs.StringVar(&cfg.logLevel, "log-level", "info", "debug, info, warn or error")
	fs.IntVar(&cfg.ha.Replicas, "replicas", 1, "replicas of the coordinator log and lease in JetStream: 3 on a 3-node NATS cluster")
	fs.DurationVar(&cfg.ha.LeaseTTL, "lease-ttl", ha.DefaultLeaseTTL, "how long a leader that stopped renewing its lease keeps it: the longest a failover waits")
	fs.StringVar(&cfg.ha.ID, "coordinator-id", "", "this coordinator's id among the cluster's coordinators, the same across restarts (default: <hostname>:<absolute data dir>)")
	fs.DurationVar(&cfg.ha.SnapshotInterval, "snapshot-interval", ha.DefaultSnapshotInterval, "how often the leader snapshots its state into the object store and trims the log below the oldest snapshot kept (needs --s3-bucket)")
	fs.IntVar(&cfg.ha.SnapshotsKept, "snapshots-kept", ha.DefaultSnapshotsKept, "how many snapshots are kept")
	fs.IntVar(&cfg.coord.Shards, "shards", 1, "how many coordinator shards the cluster's partitions are spread over (docs/design/coordinator-shards.md): a state serves by the count it was first started with, or the count a growth committed since; shard 0 started with a larger count grows the cluster to it, moving partitions to the new shards (start those first)")
	fs.IntVar(&cfg.coord.Shard, "shard", 0, "which shard, 0 to --shards - 1, this coordinator serves (and stands by for): shard 0 keeps topics, producer ids, transactions, groups, users and ACLs and collects garbage for all, the others follow its topics")
	fs.IntVar(&cfg.ha.InflightMessages, "log-inflight-messages", ha.DefaultInflightMessages, "how many log messages the leader has awaiting JetStream's acknowledgement before it merges the next commits into one message (-1: one message a commit; 0: the default)")
	return fs, cfg
}

func parseFlags(args []string) (*config, error) {
	fs, cfg := newFlagSet()
	if err := flagenv.Set(fs); err != nil {
		return nil, err
	}
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if err := cli.NoArgs(fs, args); err != nil {
		return nil, err
	}
	if err := cli.S3NeedsBucket(fs); err != nil {
		return nil, err
	}
	cfg.coord.DefaultPartitions = int32(*cfg.numPartitions)
	if cfg.ha.ID == "" {
		host, _ := os.Hostname()
		abs, _ := filepath.Abs(cfg.coord.Dir)
		cfg.ha.ID = host + ":" + abs
	}
	cfg.coord.ConsolidationDisabled = !*cfg.consolidation
	var errs []error
	if err := rpc.CheckCluster(cfg.cluster); err != nil {
		errs = append(errs, fmt.Errorf("--cluster: %w", err))
	}
	if cfg.natsURL == "" {
		errs = append(errs, errors.New("--nats-url is required"))
	}
	if cfg.ha.Replicas < 1 || cfg.ha.Replicas > 5 {
		errs = append(errs, fmt.Errorf("--replicas %d: JetStream replicates 1 to 5 times", cfg.ha.Replicas))
	}
	if cfg.ha.LeaseTTL < 500*time.Millisecond {
		errs = append(errs, fmt.Errorf("--lease-ttl %v: at least 500ms", cfg.ha.LeaseTTL))
	}
	if err := cfg.coord.Validate(); err != nil {
		errs = append(errs, err)
	}
	if cfg.groups.Dir == "" {
		cfg.groups.Dir = filepath.Join(cfg.coord.Dir, "groups")
	}
	if err := cfg.groups.Validate(); err != nil {
		errs = append(errs, err)
	}
	return cfg, errors.Join(errs...)
}

func run(args []string) error {
	cfg, err := parseFlags(args)
	if err != nil {
		return err
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(cfg.logLevel)); err != nil {
		return fmt.Errorf("--log-level: %w", err)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	mp, err := metrics.New()
	if err != nil {
		return err
	}
	defer mp.Shutdown(context.Background())
	var store objectstore.Store // nil without --s3-bucket
	if cfg.s3.Bucket != "" {
		s3, err := objectstore.NewS3(ctx, cfg.s3)
		if err != nil {
			return fmt.Errorf("open s3 store: %w", err)
		}
		instrumented := objectstore.Instrument(s3, mp.Meter("floe/objectstore"))
		store = instrumented
		cfg.coord.Objects, cfg.coord.GCStore, cfg.coord.Markers = instrumented, instrumented, instrumented
		cfg.ha.Snapshots, cfg.ha.SnapshotPrefix = instrumented, cfg.coord.GCPrefix
	} else if cfg.ha.SnapshotInterval > 0 {
		log.Warn("no --s3-bucket: the coordinator takes no snapshots, so its log is never trimmed")
	}
	nc, err := connect(ctx, cfg.natsURL, cfg.natsSecurity, log)
	if err != nil {
		return err
	}
	defer nc.Close()
	cluster := rpc.ShardCluster(cfg.cluster, cfg.coord.Shard)
	var shardPeers []coordapi.Coordinator // shard 0's view of the others
	if cfg.coord.Shard > 0 {
		// Shard 0's topics, followed (coordinator.Options.TopicOwner), and
		// its transactions' views (TxnOwner).
		owner := rpc.NewClient(nc, cfg.cluster, rpc.ClientOptions{Logger: log})
		cfg.coord.TopicOwner, cfg.coord.TxnOwner = owner, owner
	}
	if cfg.coord.Shards > 1 {
		// Each shard knows only its own partitions' objects: shard 0
		// collects for all, asking the others before it deletes
		// (coordinator.Options.ObjectPeers); the others collect nothing.
		if cfg.coord.Shard == 0 {
			for i := 1; i < cfg.coord.Shards; i++ {
				peer := rpc.NewClient(nc, rpc.ShardCluster(cfg.cluster, i), rpc.ClientOptions{Logger: log})
				cfg.coord.ObjectPeers = append(cfg.coord.ObjectPeers, peer)
				cfg.coord.ShardPeers = append(cfg.coord.ShardPeers, peer) // transaction markers
				cfg.coord.GrowPeers = append(cfg.coord.GrowPeers, peer)   // a growth's handover (a --shards above the state's)
				shardPeers = append(shardPeers, peer)
			}
		} else {
			cfg.coord.GCStore = nil
		}
	}
	cfg.ha.Cluster, cfg.ha.Addr, cfg.ha.Shard = cluster, cfg.httpAddr, cfg.coord.Shard
	cfg.ha.Service = service.Options{
		Cluster: cluster, Coordinator: cfg.coord, Groups: cfg.groups, Logger: log, Meters: mp, ShardPeers: shardPeers,
	}
	node, err := ha.Start(nc, cfg.ha)
	if err != nil {
		return err
	}
	defer func() {
		if err := node.Close(); err != nil {
			log.Error("close coordinator", "err", err)
		}
	}()

	ready := readiness(nc, node, cluster, store, cfg.coord.GCPrefix, log)

	httpErr := make(chan error, 1)
	if cfg.httpAddr != "-" {
		ln, err := net.Listen("tcp", cfg.httpAddr)
		if err != nil {
			return fmt.Errorf("listen http: %w", err)
		}
		handler := httpHandler(nc, node, mp, ready)
		if cfg.pprof {
			handler = withPprof(handler)
		}
		hs := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
		go func() {
			if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				httpErr <- fmt.Errorf("serve http: %w", err)
			}
		}()
		defer func() {
			sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			_ = hs.Shutdown(sctx)
		}()
		log.Info("http listening", "addr", ln.Addr().String())
	}
	log.Info("floe coordinator started", "data_dir", cfg.coord.Dir, "nats_url", nc.ConnectedUrlRedacted(),
		"cluster", cfg.cluster, "shard", cfg.coord.Shard, "shards", cfg.coord.Shards, "gc_grace", cfg.coord.GCGrace, "id", cfg.ha.ID, "replicas", cfg.ha.Replicas, "lease_ttl", cfg.ha.LeaseTTL)
	select {
	case <-ctx.Done():
		log.Info("stopping")
		return nil
	case err := <-httpErr:
		return err
	}
}

// connect connects to NATS, waiting for it (with ctx) when it is not up
// yet, and keeps reconnecting for as long as the process runs.
func connect(ctx context.Context, url string, sec rpc.Security, log *slog.Logger) (*nats.Conn, error) {
	secure, err := sec.Options()
	if err != nil {
		return nil, err
	}
	nc, err := nats.Connect(url, append([]nats.Option{
		nats.Name("floe-coordinator"),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(250 * time.Millisecond),
		nats.RetryOnFailedConnect(true),
		nats.DisconnectErrHandler(func(nc *nats.Conn, err error) {
			if !nc.IsClosed() {
				log.Warn("nats disconnected", "err", err)
			}
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) {
			log.Info("nats reconnected", "url", nc.ConnectedUrlRedacted())
		}),
	}, secure...)...)
	if err != nil {
		return nil, fmt.Errorf("connect to nats %s: %w", url, err)
	}
	warned := time.Now()
	for !nc.IsConnected() {
		if time.Since(warned) > 5*time.Second {
			log.Warn("waiting for nats", "url", url)
			warned = time.Now()
		}
		select {
		case <-ctx.Done():
			nc.Close()
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return nc, nil
}

// httpHandler serves /healthz, /readyz and /metrics. /healthz says whether
// this coordinator leads or stands by (200 either way), and answers 503
// while NATS is disconnected or the coordinator has no role yet. /readyz is
// ready (see readiness).
func httpHandler(nc *nats.Conn, node *ha.Node, mp *metrics.Provider, ready http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /readyz", ready)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		if !nc.IsConnected() {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintln(w, "nats", nc.Status())
			return
		}
		st := node.Status()
		switch st.Role {
		case ha.RoleLeader:
			fmt.Fprintf(w, "leader term=%d applied=%d\n", st.Term, st.Applied)
		case ha.RoleStandby:
			fmt.Fprintf(w, "standby leader=%s term=%d applied=%d lag=%d\n", st.Leader, st.Term, st.Applied, st.Lag)
		default:
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintln(w, st.Role)
		}
	})
	mux.Handle("GET /metrics", mp.Handler())
	return mux
}

// withPprof serves /debug/pprof beside h. It is off by default: a
// profile shows the coordinator's internals and a CPU profile costs the
// leader while it runs, and the coordinator's HTTP port authenticates
// no one.
func withPprof(h http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	mux.Handle("/", h)
	return mux
}

// readiness is the coordinator's /readyz (package probe): connected to NATS;
// leading or standing by (not starting); the cluster's coordinator, this
// one or another, answers a ListBrokers over NATS, as a broker's requests
// are answered (so that a rolling restart of the coordinators waits, pod
// after pod, until one leads again); and, with --s3-bucket, the object
// store answers a HEAD.
func readiness(nc *nats.Conn, node *ha.Node, cluster string, store objectstore.Store, prefix string, log *slog.Logger) *probe.Readiness {
	client := rpc.NewClient(nc, cluster, rpc.ClientOptions{Timeout: probe.DefaultTimeout, Logger: log})
	checks := []probe.Check{
		{Name: "nats", Run: func(context.Context) error {
			if !nc.IsConnected() {
				return fmt.Errorf("nats %s", nc.Status())
			}
			return nil
		}},
		{Name: "role", Run: func(context.Context) error {
			switch st := node.Status(); st.Role {
			case ha.RoleLeader, ha.RoleStandby:
				return nil
			default:
				if st.Error != "" {
					return fmt.Errorf("%s: %s", st.Role, st.Error)
				}
				return errors.New(string(st.Role))
			}
		}},
		{Name: "coordinator", Run: func(ctx context.Context) error {
			_, err := client.ListBrokers(ctx)
			return err
		}},
	}
	if store != nil {
		checks = append(checks, probe.ObjectStore(store, prefix))
	}
	return probe.New(checks, probe.Options{})
}

// shareGroupFlags adds the share group settings of the group coordinator, with
// Kafka 4.4's names (group.share.*) and defaults.
func shareGroupFlags(fs *flag.FlagSet, o *groups.Options) {
	fs.DurationVar(&o.ShareSessionTimeout, "group-share-session-timeout", 45*time.Second, "removes a share group member that sends no heartbeat for this long (group.share.session.timeout.ms)")
	fs.DurationVar(&o.ShareHeartbeatInterval, "group-share-heartbeat-interval", 5*time.Second, "tells share group members to heartbeat this often (group.share.heartbeat.interval.ms); below --group-share-session-timeout")
	fs.IntVar(&o.ShareMaxGroupSize, "group-share-max-size", 200, "takes at most this many members in a share group, 1 to 1000 (group.share.max.size)")
	fs.DurationVar(&o.ShareRecordLockDuration, "group-share-record-lock-duration", 30*time.Second, "lets a share group member hold the records it acquired this long, 15s to 60s; the group config share.record.lock.duration.ms overrides it (group.share.record.lock.duration.ms)")
	fs.IntVar(&o.ShareDeliveryCountLimit, "group-share-delivery-count-limit", 5, "delivers a record at most this many times before archiving it, 2 to 10 (group.share.delivery.count.limit)")
	fs.IntVar(&o.SharePartitionMaxRecordLocks, "group-share-partition-max-record-locks", 2000, "keeps at most this many records in flight per share-partition, 100 to 10000 (group.share.partition.max.record.locks)")
}
