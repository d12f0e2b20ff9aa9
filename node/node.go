// Package node wires floe's parts into one running broker: object store,
// coordinator client, ingest, chunk cache, the Kafka listener and the HTTP
// port. Without Config.NATSURL it also embeds a NATS server and the
// coordinator, served over it: the embedded default runs the same code path
// as a cluster.
// cmd/broker parses flags into a Config and runs a Node; tests start Nodes
// in-process the same way.
package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel/trace"

	"github.com/floe-io/floe/broker"
	"github.com/floe-io/floe/cache"
	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/coordinator"
	"github.com/floe-io/floe/coordinator/ha"
	"github.com/floe-io/floe/coordinator/rpc"
	"github.com/floe-io/floe/coordinator/service"
	"github.com/floe-io/floe/coordinator/shards"
	"github.com/floe-io/floe/groups"
	"github.com/floe-io/floe/ingest"
	"github.com/floe-io/floe/kvindex"
	"github.com/floe-io/floe/metrics"
	"github.com/floe-io/floe/objectstore"
	"github.com/floe-io/floe/table/catalog"
	"github.com/floe-io/floe/tiered"
	"github.com/floe-io/floe/tlsconfig"
	"github.com/floe-io/floe/tracing"
	"github.com/floe-io/floe/zone"
)

// Config is everything a Node needs. The zero value of a field means its
// default; cmd/broker's flags fill it in.
type Config struct {
	// DataDir holds the coordinator's Pebble state and, without S3, the
	// local-directory object store (--data-dir). Default: ./data.
	DataDir string
	// KafkaAddr is the Kafka listener (--kafka-addr). Default:
	// 127.0.0.1:9092.
	KafkaAddr string
	// AdvertisedAddr is what Metadata returns (--advertised-addr).
	// Default: the Kafka listener's address.
	AdvertisedAddr string
	// HTTPAddr serves /healthz, /metrics, /kv and, with zone cache
	// sharing, the chunks this broker owns to its zone's other brokers
	// (--http-addr). Default: 127.0.0.1:8080. "-" disables it.
	HTTPAddr string
	// InternalAddr is the host:port at which the other brokers of this
	// broker's zone reach its HTTP listener to read the chunks it owns
	// (--internal-addr), registered with the coordinator. Set it when
	// HTTPAddr listens on all interfaces. The listener serves object bytes
	// unauthenticated: keep it off public networks.
	// Default: the HTTP listener's address.
	InternalAddr string
	// ZoneCacheSharingDisabled turns per-zone chunk sharing off
	// (--zone-cache-sharing=false): every chunk the cache misses is read
	// from the object store. Sharing needs a rack (Broker.Rack) to name
	// the zone; without the HTTP listener the broker still asks its peers
	// but serves none. Default: false (shared).
	ZoneCacheSharingDisabled bool
	// S3 switches the object store to S3 when S3.Bucket is set.
	S3 objectstore.S3Options
	// S3Prefix is prepended to every object key (--s3-prefix).
	S3Prefix string
	// S3CreateBucket creates the bucket at start when it is missing
	// (--s3-create-bucket), for dev clusters.
	S3CreateBucket bool
	// S3Hedge hedges the S3 store's slow PUTs and GETs (objectstore.Hedged;
	// --s3-hedge-quantile, --s3-hedge-min-delay, --s3-hedge-max-fraction):
	// a straggler of seconds does not become every producer's p99. Only on
	// S3 (S3.Bucket set). Default: on, at the 0.95 quantile.
	S3Hedge objectstore.HedgeOptions
	// KVRemoteReadDisabled makes /kv answer 404 (error code 40405) for
	// records that live only in segment objects instead of reading them
	// (--kv-remote-read-enabled=false). Default: false, /kv reads both
	// tiers (kvindex.HandlerOptions.RemoteReadDisabled says why).
	KVRemoteReadDisabled bool
	// KVBatchCacheBytes bounds the compressed batches /kv keeps decoded
	// (--kv-batch-cache-bytes); negative keeps none. Default (0):
	// kvindex.DefaultBatchCacheBytes, 64 MiB.
	KVBatchCacheBytes int64
	// TLS puts TLS on the Kafka and HTTP listeners (security.go).
	// Default: off.
	TLS TLSConfig
	// SASLUsersFile holds name:password lines loaded into the coordinator's
	// SCRAM users at start (--sasl-users-file), so that the first admin
	// exists before any admin API can be called. Default: none.
	SASLUsersFile string
	// KVQuotaRPS is each principal's /kv lookup rate (--kv-quota-rps),
	// with bursts of KVQuotaBurst (--kv-quota-burst; default: the rate);
	// past it /kv answers 429 with Retry-After. Without security, the
	// quota is per client address. Default: 0, no quota.
	KVQuotaRPS   float64
	KVQuotaBurst int
	// TableNamespace is the Iceberg namespace of every topic's table
	// (--table-namespace). Default: "floe".
	TableNamespace string
	// TableLocation is the URI of where the tables' files go
	// (--table-location): s3://bucket/path (through S3's options and
	// credentials: another bucket, or a prefix of the same) or
	// file:///dir. Default: <the store>/<S3Prefix>/tables.
	TableLocation string
	// TableRESTDisabled stops serving the read-only Iceberg REST catalog
	// at /iceberg/v1 on the HTTP listener (--table-rest-enabled=false).
	// Default: false, served (iceberg.go).
	TableRESTDisabled bool
	// TableCatalog, when its URL is set, has the table jobs create and
	// commit the tables in an external Iceberg REST catalog instead of the
	// coordinator's (tablecatalog.go); /iceberg/v1 then only says so.
	// Default: the coordinator's catalog.
	TableCatalog TableCatalogConfig
	// Store, when set, is used instead of the configured object store
	// (tests inject fault wrappers here).
	Store objectstore.Store

	// NATSURL is the NATS server of a cluster whose coordinator runs as
	// cmd/coordinator (--nats-url): the node then keeps no coordinator
	// state. When empty the node embeds a NATS server and the coordinator
	// and reaches it the same way, over NATS, but for /kv lookups, which
	// the embedded coordinator answers in process. Default: "".
	NATSURL string
	// NATSSecurity authenticates to a secured NATS cluster at NATSURL
	// (--nats-creds, --nats-nkey, --nats-tls-*). Default: none.
	NATSSecurity rpc.Security
	// NATSListen makes the embedded NATS server listen on host:port
	// (--nats-listen), so that other brokers can share its coordinator.
	// Default: "" (in-process connections only).
	NATSListen string
	// Cluster prefixes the cluster's NATS subjects (--cluster). Default:
	// floe.
	Cluster string
	// CoordinatorTimeout bounds every coordinator request
	// (--coordinator-timeout). Default: 5s.
	CoordinatorTimeout time.Duration
	// CoordinatorShards is how many shards the cluster's coordinator has
	// (--coordinator-shards, its coordinators' --shards) when the broker
	// starts: the broker sends each partition's calls to its shard
	// (coordinator/shards), and follows the cluster's growth from there
	// (cluster_info). Only with NATSURL. Default: 1.
	CoordinatorShards int
	// HeartbeatInterval is how often the broker renews its registration
	// with the coordinator. Default: 2s.
	HeartbeatInterval time.Duration

	// Tier configures the consolidation jobs this broker runs (the
	// coordinator assigns them). Its BrokerID, Prefix, Logger and Meter
	// default to the node's.
	Tier tiered.ConsolidatorOptions
	// TierJobsDisabled keeps this broker from running consolidation jobs
	// (--consolidation-enabled=false also sets
	// Coordinator.ConsolidationDisabled for the embedded coordinator).
	TierJobsDisabled bool

	// Broker configures the Kafka front: among others ACLsEnabled
	// (--acls-enabled) and SuperUsers (--super-users), with which every
	// request is authorized against the coordinator's ACLs; /kv can ask the
	// broker the same with (*broker.Broker).AuthorizeTopic.
	Broker broker.Options
	// PutBudget says what a PUT costs on the S3 store
	// (--ingest-put-budget): PutBudgetS3, the default, keeps PUTs within
	// the budget of Ingest.MaxPutRate and MaxPutsPerGiB, as AWS bills
	// each; PutBudgetNone, for a store that bills nothing per request (a
	// MinIO of one's own), rolls objects as the local directory does and
	// uploads them several at once. Only on S3.
	PutBudget string
	// Ingest configures the produce path. A zero MaxPutRate picks the
	// store's: ingest.PutRateLocal on the local directory (a PUT costs
	// nothing), ingest.PutRateS3 on S3. A zero MaxPutsPerGiB picks
	// ingest.PutsPerGiBS3 on S3 (none elsewhere); a negative one is none.
	// A zero UploadAheadBytes picks ingest.UploadAheadFree on S3 with
	// PutBudget "none" (never elsewhere); a negative one is never.
	// A zero EarlyRollWait picks ingest.EarlyRollWaitLocal on the local
	// directory (none on S3, where the PUT budget bounds objects); a
	// negative one is none.
	Ingest      ingest.Options
	Cache       cache.Options
	Coordinator coordinator.Options
	// Groups configures the embedded group coordinator (the share group
	// settings, --group-share-*); its Dir is <DataDir>/groups. Unused
	// with NATSURL: the cluster's coordinator has its own.
	Groups groups.Options
	// Tracing exports traces of produce, fetch and /kv by OTLP
	// (--otlp-endpoint, --trace-sample-ratio; package tracing). Default:
	// off, and free.
	Tracing tracing.Options

	Logger *slog.Logger
}

// Node is one running broker, with its embedded NATS server and
// coordinator unless it uses a cluster's.
type Node struct {
	cfg   Config
	log   *slog.Logger
	store objectstore.Store
	// tables is where the tables' files go (tablelocation.go).
	tables tableLocation
	// coord is the embedded coordinator (nil with Config.NATSURL); the
	// broker and ingest use it only through client.
	client *rpc.Client
	// shards routes the calls about partitions over the coordinator's
	// shards, client being shard 0 (nil: one shard, client alone).
	shards     *shards.Router
	nc         *nats.Conn // client's connection
	natsServer *server.Server
	srvConn    *nats.Conn // the embedded coordinator's connection
	ha         *ha.Node   // the embedded coordinator
	heartbeat  struct {
		info   coordapi.BrokerInfo
		cancel context.CancelFunc
		done   chan struct{}
	}
	cache *cache.Cache
	// zone is the per-zone chunk sharing around the cache: members is
	// nil when this broker shares nothing; getter sits between the cache
	// and the (instrumented) store either way.
	zone struct {
		members *zone.Membership
		getter  *zone.Getter
		stop    func() // stops members' refresh
	}
	kvCache *kvindex.BatchCache // /kv's decoded batches
	ingest  *ingest.Ingester
	broker  *broker.Broker
	kafkaLn net.Listener
	httpLn  net.Listener
	// tls is the listeners' TLS (security.go); server nil without it.
	tls struct {
		server *tlsconfig.Server
		rules  tlsconfig.Rules
	}
	http    *http.Server
	served  chan error
	metrics *metrics.Provider
	// tracing is the tracer provider, nil with tracing off; tracer its
	// tracer, nil then too.
	tracing *tracing.Provider
	tracer  trace.Tracer
	// stopTier stops the consolidation job runner, if started.
	stopTier func()
	// stopFollow stops the router's follow of the cluster's shard count,
	// if started (a cluster broker).
	stopFollow func()
	closed     bool
}

// Start opens the state, binds the listeners and starts serving.
func Start(ctx context.Context, cfg Config) (_ *Node, err error) {
	if cfg.DataDir == "" {
		cfg.DataDir = "./data"
	}
	if cfg.KafkaAddr == "" {
		cfg.KafkaAddr = "127.0.0.1:9092"
	}
	if cfg.HTTPAddr == "" {
		cfg.HTTPAddr = "127.0.0.1:8080"
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Cluster == "" {
		cfg.Cluster = "floe"
	}
	if cfg.Broker.NodeID == 0 {
		cfg.Broker.NodeID = 1
	}
	if err := cfg.TableCatalog.Validate(); err != nil {
		return nil, err
	}
	n := &Node{cfg: cfg, log: cfg.Logger, served: make(chan error, 2)}
	defer func() {
		if err != nil {
			n.closeParts()
		}
	}()
	if err := validateSASL(cfg.Broker.SASLMechanisms); err != nil {
		return nil, err
	}
	if err := n.setupTLS(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
		return nil, fmt.Errorf("create data dir: %w", err)
	}
	if n.metrics, err = metrics.New(); err != nil {
		return nil, err
	}
	if err := n.startTracing(ctx); err != nil {
		return nil, err
	}

	ownDir := false // the node opened a directory store of its own
	// onS3: the node opened an S3 store of its own, whose requests cost
	// money and tens of milliseconds: uploads, read-ahead, hedging and the
	// PUT budget take their S3 defaults.
	onS3 := cfg.Store == nil && cfg.S3.Bucket != ""
	switch {
	case cfg.Store != nil:
		n.store = cfg.Store
	case cfg.S3.Bucket != "":
		s3, err := objectstore.NewS3(ctx, cfg.S3)
		if err != nil {
			return nil, fmt.Errorf("open s3 store: %w", err)
		}
		if cfg.S3CreateBucket {
			if err := s3.EnsureBucket(ctx); err != nil {
				return nil, err
			}
		}
		if err := checkBucket(ctx, s3, cfg.S3, cfg.S3Prefix); err != nil {
			return nil, err
		}
		n.store = s3
	default:
		dir, err := objectstore.NewDir(filepath.Join(cfg.DataDir, "objects"))
		if err != nil {
			return nil, fmt.Errorf("open object dir: %w", err)
		}
		n.store, ownDir = dir, true
	}

	instrumented := objectstore.Instrument(n.store, n.metrics.Meter("floe/objectstore"))
	n.store = instrumented
	if onS3 && cfg.S3Hedge.Quantile >= 0 {
		// Hedged above Instrumented: every request sent is counted.
		hopts := cfg.S3Hedge
		hopts.Meter = n.metrics.Meter("floe/objectstore")
		n.store = objectstore.NewHedged(instrumented, hopts)
	}
	if n.tables, err = n.openTableLocation(ctx); err != nil {
		return nil, err
	}
	// The embedded coordinator writes to the node's own directory store:
	// small objects can ride in their commits (package coordinator/inline). Not
	// when other brokers may share it (--nats-listen): they would read the
	// directory before the objects staged in this process are written.
	inline := ownDir && cfg.NATSURL == "" && cfg.NATSListen == ""

	copts := cfg.Coordinator
	if copts.Dir == "" {
		copts.Dir = filepath.Join(cfg.DataDir, "coordinator")
	}
	if copts.Logger == nil {
		copts.Logger = cfg.Logger
	}
	if copts.Objects == nil {
		copts.Objects = n.store
	}
	if copts.Markers == nil {
		copts.Markers = n.store
	}
	if copts.GCStore == nil {
		copts.GCStore, copts.GCPrefix = n.store, cfg.S3Prefix
	}
	if copts.Inline == nil && inline {
		copts.Inline = instrumented
	}
	if err := n.startCoordinator(copts); err != nil {
		return nil, err
	}

	// The HTTP listener is bound before the cache: peers of the zone
	// read chunks from it at the address the broker registers.
	if cfg.HTTPAddr != "-" {
		if n.httpLn, err = net.Listen("tcp", cfg.HTTPAddr); err != nil {
			return nil, fmt.Errorf("listen http: %w", err)
		}
		n.httpLn = n.secureListener(n.httpLn, true)
	}
	cacheOpts := cfg.Cache
	if cacheOpts.Logger == nil {
		cacheOpts.Logger = cfg.Logger
	}
	if onS3 {
		// A GET on S3 waits tens of milliseconds for its first byte: a
		// reader catching up needs several chunks in flight to stream.
		if cacheOpts.ReadAhead == 0 {
			cacheOpts.ReadAhead = cache.ReadAheadS3
		}
		if cacheOpts.ReadAheadConcurrency == 0 {
			cacheOpts.ReadAheadConcurrency = cache.ReadAheadConcurrencyS3
		}
	}
	if err := n.startZone(cacheOpts.ChunkBytes); err != nil {
		return nil, err
	}
	var source cache.Getter = n.zone.getter
	if n.tracer != nil {
		source = tracedGetter{source, n.tracer}
	}
	if n.cache, err = cache.New(source, cacheOpts); err != nil {
		return nil, fmt.Errorf("open cache: %w", err)
	}

	iopts, err := ingestOptions(cfg, onS3, inline)
	if err != nil {
		return nil, err
	}
	iopts.Meter = n.metrics.Meter("floe/ingest")
	if n.ingest, err = ingest.New(iopts, n.store, n.brokerCoordinator(), n.cache); err != nil {
		return nil, fmt.Errorf("start ingest: %w", err)
	}
	n.ingest.SetTracer(n.tracer)

	if cfg.SASLUsersFile != "" {
		if len(cfg.Broker.SASLMechanisms) == 0 {
			return nil, errors.New("--sasl-users-file needs --sasl-mechanisms")
		}
		if err := n.loadUsersFile(ctx, cfg.SASLUsersFile); err != nil {
			return nil, err
		}
	}
	if n.kafkaLn, err = net.Listen("tcp", cfg.KafkaAddr); err != nil {
		return nil, fmt.Errorf("listen kafka: %w", err)
	}
	n.kafkaLn = n.secureListener(n.kafkaLn, false)
	bopts := cfg.Broker
	if bopts.AdvertisedAddr == "" {
		bopts.AdvertisedAddr = cfg.AdvertisedAddr
	}
	if bopts.AdvertisedAddr == "" {
		bopts.AdvertisedAddr = n.kafkaLn.Addr().String()
	}
	if bopts.DefaultPartitions == 0 {
		bopts.DefaultPartitions = copts.DefaultPartitions
	}
	if bopts.Logger == nil {
		bopts.Logger = cfg.Logger
	}
	bopts.Meter = n.metrics.Meter("floe/broker")
	bopts.Tracer = n.tracer
	if n.tls.server != nil && bopts.ClientCertPrincipal == nil {
		bopts.ClientCertPrincipal = n.tls.rules.Principal
	}
	kvBytes := cfg.KVBatchCacheBytes
	if kvBytes == 0 {
		kvBytes = kvindex.DefaultBatchCacheBytes
	}
	n.kvCache = kvindex.NewBatchCache(kvBytes)
	if err := n.registerObservers(n.metrics.Meter("floe/node")); err != nil {
		return nil, fmt.Errorf("register metrics: %w", err)
	}
	n.broker = broker.New(bopts, broker.Deps{
		Coordinator: n.brokerCoordinator(),
		// Consumer groups live with the coordinator, embedded or the
		// cluster's: every broker serves every group.
		Groups:   n.client.Groups(),
		Appender: n.ingest,
		Reader:   n.cache,
	})
	go func() { n.served <- n.broker.Serve(n.kafkaLn) }()
	info, err := brokerInfo(bopts.NodeID, bopts.AdvertisedAddr, bopts.Rack)
	if err != nil {
		return nil, err
	}
	info.InternalAddr = n.internalAddr()
	n.startHeartbeat(info)
	if !cfg.TierJobsDisabled {
		if err := n.startTier(bopts.NodeID, ownDir); err != nil {
			return nil, err
		}
	}

	if n.httpLn != nil {
		n.http = &http.Server{Handler: n.httpHandler(), ReadHeaderTimeout: 10 * time.Second}
		go func() {
			if err := n.http.Serve(n.httpLn); err != nil && !errors.Is(err, http.ErrServerClosed) {
				n.served <- fmt.Errorf("serve http: %w", err)
			}
		}()
	}
	n.log.Info("floe broker started", "kafka", n.kafkaLn.Addr().String(), "advertised", bopts.AdvertisedAddr, "http", n.HTTPAddr(),
		"rack", bopts.Rack, "zone_cache_sharing", n.zone.members != nil, "internal", info.InternalAddr, "data_dir", cfg.DataDir)
	return n, nil
}

func (n *Node) httpHandler() http.Handler {
	mux := http.NewServeMux()
	// /healthz: live, the process serves HTTP (scripts wait on it at
	// start). /readyz: ready, the coordinator and the object store answer
	// and the broker is registered (probes.go).
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprintln(w, "ok")
	})
	mux.Handle("GET /readyz", n.readiness())
	mux.Handle("GET /metrics", n.metrics.Handler())
	if n.zone.members != nil {
		mux.Handle("GET "+zone.ChunkPath, zone.NewHandler(n.cache.GetChunk, zone.HandlerOptions{
			ChunkBytes: n.cache.ChunkBytes(),
			// Only the objects floe writes: WAL and segment objects.
			Prefixes: []string{coordapi.WALPrefix(n.cfg.S3Prefix), coordapi.TieredPrefix(n.cfg.S3Prefix)},
			Meter:    n.metrics.Meter("floe/zone"),
			Logger:   n.log,
		}))
	}
	kvService := n.broker.KVService()
	if n.tracer != nil {
		kvService = tracedKV{kvService, n.tracer}
	}
	kv := kvindex.NewHandler(kvService, kvindex.HandlerOptions{
		RemoteReadDisabled: n.cfg.KVRemoteReadDisabled,
		Logger:             n.log,
		Observer:           n.kvObserver(),
		BatchCache:         n.kvCache,
		Gate:               n.newKVGate(n.metrics.Meter("floe/kv"), n.kvAuthorizer()),
	})
	if n.tracer != nil {
		kv = tracedHTTP(kv, n.tracer, "GET /kv")
	}
	mux.Handle("/kv/", kv)
	switch {
	case n.cfg.TableRESTDisabled:
	case n.cfg.TableCatalog.External():
		mux.Handle(catalog.RESTPrefix+"/", externalCatalogNotice())
	default:
		mux.Handle(catalog.RESTPrefix+"/", n.icebergHandler(n.metrics.Meter("floe/iceberg")))
	}
	n.registerPprof(mux)
	return mux
}

// KafkaAddr is the bound Kafka listener address.
func (n *Node) KafkaAddr() string { return n.kafkaLn.Addr().String() }

// HTTPAddr is the bound HTTP address, or "" when disabled.
func (n *Node) HTTPAddr() string {
	if n.httpLn == nil {
		return ""
	}
	return n.httpLn.Addr().String()
}

// Coordinator returns the embedded coordinator (for tests and tools), nil
// when the node uses a cluster's (Config.NATSURL).
func (n *Node) Coordinator() *coordinator.Coordinator {
	if n.ha == nil {
		return nil
	}
	return n.ha.Coordinator()
}

// Store returns the object store in use.
func (n *Node) Store() objectstore.Store { return n.store }

// Cache returns the chunk cache.
func (n *Node) Cache() *cache.Cache { return n.cache }

// Err reports a listener that stopped serving on its own.
func (n *Node) Err() <-chan error { return n.served }

// Close drains gracefully: stop accepting connections, flush and commit what
// is buffered (producers waiting on it get their answers), close the
// connections, then close the state.
func (n *Node) Close(ctx context.Context) error {
	if n.closed {
		return nil
	}
	n.closed = true
	var errs []error
	if n.broker != nil {
		n.broker.Drain()
	}
	if svc := n.embeddedService(); svc != nil {
		// Answers JoinGroups parked in a rebalance, so their connections
		// drain now rather than at the drain timeout.
		errs = append(errs, svc.CloseGroups())
	}
	if n.ingest != nil {
		if err := n.ingest.Close(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	if n.http != nil {
		sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		n.http.Shutdown(sctx)
		cancel()
	}
	if n.stopTier != nil {
		n.stopTier() // a running job is abandoned
		n.stopTier = nil
	}
	if n.broker != nil {
		if err := n.broker.Close(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	n.stopHeartbeat(ctx)
	if n.stopFollow != nil {
		n.stopFollow()
		n.stopFollow = nil
	}
	errs = append(errs, n.closeParts())
	return errors.Join(errs...)
}

// startTier runs the consolidation jobs the coordinator assigns this
// broker: WAL bytes read through the chunk cache, or straight from the
// node's own directory store (ownDir), segments written to the store.
//
// On the local directory a job reads just its partition's ranges: a read
// there is a pread, often from the page cache, and costs nothing per
// request, where through the chunk cache each range loads a whole chunk
// (or WAL object) of every partition's batches. A WAL object holds every
// partition's, so the jobs of a 16-partition topic whose span outgrows the
// cache loaded each object up to 16 times, churning the cache (its
// buffers, the GC, the consumers' hits) for a sixteenth of each load. On
// S3, where every GET costs, jobs share chunk loads through the cache.
func (n *Node) startTier(nodeID int32, ownDir bool) error {
	topts := n.cfg.Tier
	if topts.BrokerID == 0 {
		topts.BrokerID = nodeID
	}
	if topts.Prefix == "" {
		topts.Prefix = n.cfg.S3Prefix
	}
	if topts.Logger == nil {
		topts.Logger = n.log
	}
	if topts.MaxReadBytes == 0 {
		// One cache chunk a read: the cache hands a read within one chunk
		// out as it holds it, where a read across chunks is a copy.
		topts.MaxReadBytes = n.cfg.Cache.ChunkBytes
		if topts.MaxReadBytes == 0 {
			topts.MaxReadBytes = cache.DefaultChunkBytes
		}
	}
	topts.Meter = n.metrics.Meter("floe/tiered")
	if topts.Ingested == nil && n.ingest != nil {
		topts.Ingested = n.ingest.Committed // the jobs' pace keeps up with this broker's ingest
	}
	if topts.KeyIndex == nil {
		topts.KeyIndex = n.partitionsCoordinator() // compaction jobs of indexed topics ask it
	}
	if topts.Tables == nil {
		runner, err := n.tableRunner() // tables.go: nil without the table writer
		if err != nil {
			return err
		}
		topts.Tables = runner
	}
	var wal tiered.WALReader = n.cache
	if ownDir {
		wal = storeRanges{n.store}
	}
	cons, err := tiered.NewConsolidator(n.partitionsCoordinator(), wal, n.store, topts)
	if err != nil {
		return fmt.Errorf("start consolidation: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		cons.Run(ctx)
	}()
	n.stopTier = func() { cancel(); <-done }
	return nil
}

// storeRanges reads the tier jobs' ranges straight from a store, as
// tiered.WALReader.
type storeRanges struct{ s objectstore.Store }

func (r storeRanges) GetRange(ctx context.Context, key string, _, offset, length int64) ([]byte, error) {
	return r.s.GetRange(ctx, key, offset, length)
}

// ReadRangeAt reads into dst (tiered.WALReaderAt): with the store's own
// ReadRangeAt (the local directory's), sparing a buffer per range.
func (r storeRanges) ReadRangeAt(ctx context.Context, key string, _, offset int64, dst []byte) (int, error) {
	return objectstore.ReadRangeAt(ctx, r.s, key, offset, dst)
}

func (n *Node) closeParts() error {
	var errs []error
	if n.stopTier != nil {
		n.stopTier()
		n.stopTier = nil
	}
	if n.kafkaLn != nil {
		n.kafkaLn.Close()
	}
	if n.httpLn != nil {
		n.httpLn.Close()
	}
	if n.cache != nil {
		errs = append(errs, n.cache.Close())
	}
	n.stopZone()
	n.stopHeartbeat(context.Background())
	errs = append(errs, n.closeCoordinator())
	if n.metrics != nil {
		errs = append(errs, n.metrics.Shutdown(context.Background()))
		n.metrics = nil
	}
	if n.tracing != nil {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		errs = append(errs, n.tracing.Shutdown(sctx)) // exports what is left
		cancel()
		n.tracing, n.tracer = nil, nil
	}
	return errors.Join(errs...)
}

// Broker returns the node's Kafka front (for tests that observe it).
func (n *Node) Broker() *broker.Broker { return n.broker }

// embeddedService returns the embedded coordinator service, nil when the
// node uses a cluster's or it is not serving.
func (n *Node) embeddedService() *service.Service {
	if n.ha == nil {
		return nil
	}
	return n.ha.Service()
}
