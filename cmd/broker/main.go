// Command broker runs a floe broker. With no flags it is a complete
// single-node cluster: Pebble state and a local-directory object store under
// ./data, an embedded NATS server (no listening port) and coordinator served
// over it, Kafka on 127.0.0.1:9092 and HTTP (/healthz, /metrics, /kv) on
// 127.0.0.1:8080. With --nats-url it is one of a cluster's stateless
// brokers, using the coordinator that cmd/coordinator serves over NATS.
// With --rack, the brokers of one zone share their chunk caches over their
// HTTP listeners (--internal-addr, --zone-cache-sharing).
// As with Apache Kafka's defaults, a topic is created on first use (a
// client's Metadata request that allows it); --auto-create-topics=false
// turns that off. --acls-enabled authorizes every Kafka request with the
// ACLs stored in the coordinator (managed with CreateAcls / kafka-acls.sh
// by a --super-users principal); off, as by default, everything is allowed.
//
// Every flag can also be set by an environment variable: --ingest-linger is
// FLOE_INGEST_LINGER. A flag on the command line wins.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/floe-io/floe/broker"
	"github.com/floe-io/floe/groups"
	"github.com/floe-io/floe/internal/cli"
	"github.com/floe-io/floe/internal/flagenv"
	"github.com/floe-io/floe/node"
	"github.com/floe-io/floe/tiered"
)

func main() {
	os.Exit(cli.Exit(os.Stderr, "broker", run(os.Args[1:])))
}

// flags is what the broker's command line sets: node.Config, and the
// values run turns into it.
type flags struct {
	cfg      node.Config
	logLevel string
	drain    time.Duration

	nodeID, numPartitions, maxRequest *int
	zoneSharing, consolidation        *bool
	kvRemoteRead                      *bool // --kv-remote-read-enabled
	tableREST                         *bool // --table-rest-enabled
	clientAuth, saslMechs, superUsers *string
	reauthMs                          *int64
	shareGroups                       *bool // --share-groups-enabled
	memoryLimit                       int64 // --memory-limit
}

// newFlagSet builds the broker's flags, each with its name and default:
// the command line, FLOE_* environment variables and docs/configuration.md
// (TestConfigurationDoc) all come from it. Tools outside the repository
// use these names and defaults: keep them.
func newFlagSet() (*flag.FlagSet, *flags) {
	fs := flag.NewFlagSet("broker", flag.ContinueOnError)
	f := &flags{}
	fs.StringVar(&f.cfg.DataDir, "data-dir", "./data", "directory for the embedded coordinator's state and, without S3, objects")
	fs.StringVar(&f.cfg.KafkaAddr, "kafka-addr", "127.0.0.1:9092", "Kafka listener address")
	fs.StringVar(&f.cfg.AdvertisedAddr, "advertised-addr", "", "host:port returned in Metadata (default: the Kafka listener)")
	fs.StringVar(&f.cfg.HTTPAddr, "http-addr", "127.0.0.1:8080", "HTTP address for /healthz, /metrics, /kv and, with --rack, the chunks this broker serves its zone's other brokers (\"-\" disables)")
	fs.StringVar(&f.cfg.InternalAddr, "internal-addr", "", "host:port at which the other brokers of this broker's zone (--rack) reach its HTTP listener to read the chunks it owns (GET /internal/chunk); set it when --http-addr listens on all interfaces, and keep that port off public networks (default: the --http-addr listener)")
	fs.StringVar(&f.cfg.S3.Bucket, "s3-bucket", "", "S3 bucket; set to store objects in S3 instead of --data-dir")
	fs.StringVar(&f.cfg.S3.Endpoint, "s3-endpoint", "", "S3 endpoint URL, e.g. http://127.0.0.1:9000 for MinIO (default: AWS)")
	fs.StringVar(&f.cfg.S3.Region, "s3-region", "", "S3 region (default: AWS config chain, else us-east-1)")
	fs.BoolVar(&f.cfg.S3.PathStyle, "s3-path-style", false, "address buckets by path (MinIO)")
	fs.StringVar(&f.cfg.S3Prefix, "s3-prefix", "", "prefix for every object key")
	fs.BoolVar(&f.cfg.S3CreateBucket, "s3-create-bucket", false, "create the bucket at start if it is missing")
	fs.Float64Var(&f.cfg.S3Hedge.Quantile, "s3-hedge-quantile", 0.95, "send a second S3 PUT or GET beside one still unanswered after this quantile of recent latencies of its kind, the first answer wins (negative: no hedging)")
	fs.DurationVar(&f.cfg.S3Hedge.MinDelay, "s3-hedge-min-delay", 100*time.Millisecond, "the shortest wait before a hedged S3 request, whatever the recent latencies")
	fs.Float64Var(&f.cfg.S3Hedge.MaxFraction, "s3-hedge-max-fraction", 0.1, "hedged S3 requests at most this share of all requests (twice the share past the 0.95 quantile, so that stragglers find room)")
	f.nodeID = fs.Int("node-id", 1, "Kafka node id of this broker")
	fs.StringVar(&f.cfg.Broker.Rack, "rack", "", "rack (availability zone) returned in Metadata")
	fs.StringVar(&f.cfg.Broker.ClusterID, "cluster-id", "floe", "cluster id returned in Metadata")
	fs.BoolVar(&f.cfg.Broker.AutoCreateTopics, "auto-create-topics", true, "create unknown topics on Metadata when the client allows it, as Kafka's auto.create.topics.enable (=false turns it off)")
	f.numPartitions = fs.Int("num-partitions", 1, "partitions of auto-created topics and CreateTopics with -1")
	f.maxRequest = fs.Int("max-request-bytes", 100<<20, "largest request frame; larger ones close the connection")
	fs.IntVar(&f.cfg.Broker.FetchConcurrency, "fetch-concurrency", 16, "byte ranges one Fetch reads at once (chunk-cache reads, a GET each on a miss); 1 reads them in turn")
	fs.IntVar(&f.cfg.Ingest.MaxBytes, "ingest-max-bytes", 8<<20, "roll the object buffer at this size")
	fs.DurationVar(&f.cfg.Ingest.Linger, "ingest-linger", 250*time.Millisecond, "longest a batch waits in the object buffer")
	fs.DurationVar(&f.cfg.Ingest.TxnLinger, "ingest-txn-linger", 50*time.Millisecond, "longest a transactional batch waits in the object buffer (its EndTxn waits for it; at most --ingest-linger)")
	fs.Float64Var(&f.cfg.Ingest.MaxPutRate, "ingest-max-put-rate", 0, "objects per second this broker may roll early (before linger) when idle; 0: per store, unlimited on the local directory, 10 on S3")
	fs.Float64Var(&f.cfg.Ingest.MaxPutsPerGiB, "ingest-max-puts-per-gib", 0, "early rolls each GiB produced earns: PUTs follow the traffic under load, where --ingest-max-put-rate fades out (by 8 MiB/s appended); 0: per store, 384 on S3; negative: none")
	fs.IntVar(&f.cfg.Ingest.InlineMax, "ingest-inline-max", 0, "objects of at most this many bytes go to the coordinator in their commit, one device round trip per produce instead of two; 0: per store, 64 KiB on the embedded default's directory without --nats-listen (only there: the coordinator writes to it, and no other broker reads it); negative: never")
	fs.DurationVar(&f.cfg.Ingest.EarlyRollWait, "ingest-early-roll-wait", 0, "longest an early roll waits for producers still sending (it rolls at once when every recent producer waits for its answers, or at --ingest-early-roll-bytes): fewer, larger objects under load; 0: per store, 10ms on the local directory, none on S3 (the PUT budget bounds objects there); negative: none")
	fs.StringVar(&f.cfg.PutBudget, "ingest-put-budget", "", "what a PUT costs on the S3 store: s3 (the default: PUTs within the budget of --ingest-max-put-rate and --ingest-max-puts-per-gib, as AWS bills each) or none (a store that bills nothing per request, such as a MinIO of your own: objects roll as soon as the uploader can take them, several upload at once, and produce latency follows the PUT's)")
	fs.IntVar(&f.cfg.Ingest.UploadAheadBytes, "ingest-upload-ahead-bytes", 0, "an object holding this many bytes rolls beside the uploads still running (up to --ingest-max-uploads) instead of waiting for them; 0: per store, 512 KiB on S3 with --ingest-put-budget=none, never otherwise; negative: never")
	fs.IntVar(&f.cfg.Ingest.EarlyRollBytes, "ingest-early-roll-bytes", 0, "size at which an object waiting for more (--ingest-early-roll-wait) rolls at once; 0: 256 KiB")
	fs.Int64Var(&f.cfg.Ingest.MaxBufferedBytes, "ingest-max-buffered-bytes", 256<<20, "bytes buffered before producers wait")
	fs.IntVar(&f.cfg.Ingest.MaxUploads, "ingest-max-uploads", 0, "objects uploaded at once, committed in order (0: per store, 8 on the local directory, 16 on S3)")
	fs.Int64Var(&f.cfg.Cache.MaxBytes, "cache-bytes", 512<<20, "chunk cache size in bytes")
	fs.Int64Var(&f.cfg.Cache.ChunkBytes, "cache-chunk-bytes", 4<<20, "chunk cache chunk size")
	fs.StringVar(&f.cfg.Cache.Dir, "cache-dir", "", "optional disk tier for the chunk cache")
	fs.IntVar(&f.cfg.Cache.ReadAhead, "cache-read-ahead", 0, "chunks the cache loads ahead of a reader moving forward through an object (0: per store, 1 on the local directory, 4 on S3; negative: none)")
	fs.IntVar(&f.cfg.Cache.ReadAheadConcurrency, "cache-read-ahead-concurrency", 0, "read-ahead loads in flight at once, for all readers (0: per store, 4 on the local directory, 16 on S3)")
	f.zoneSharing = fs.Bool("zone-cache-sharing", true, "with --rack, read each chunk the cache misses from the broker of the zone that owns it (a hash over the zone's live brokers) instead of the object store, and serve the chunks this broker owns to the others, so that a zone reads each chunk from the object store about once (=false: every miss reads the object store)")
	fs.BoolVar(&f.cfg.Coordinator.KVIndexEnabled, "kv-index-enabled", false, "allow topics to enable kv.index.enabled")
	fs.DurationVar(&f.cfg.Coordinator.GCGrace, "gc-grace", 10*time.Minute, "how long the embedded coordinator keeps garbage and orphan objects before deleting them")
	fs.DurationVar(&f.cfg.Coordinator.WALRetention, "wal-retention", 10*time.Minute, "how long batches stay in WAL objects before the embedded coordinator has them consolidated into per-partition segments (the default of local.retention.ms)")
	fs.Int64Var(&f.cfg.Coordinator.WALRetentionBytes, "wal-retention-bytes", -1, "the most WAL bytes a partition keeps before its oldest batches are consolidated, -1 for no limit (the default of local.retention.bytes)")
	fs.DurationVar(&f.cfg.Coordinator.TierInterval, "tier-interval", 10*time.Second, "how often the embedded coordinator plans consolidation jobs and enforces retention.ms and retention.bytes")
	fs.DurationVar(&f.cfg.Coordinator.TierJobLease, "tier-job-lease", 2*time.Minute, "how long a broker has to complete a consolidation job (kept below half of --gc-grace)")
	fs.DurationVar(&f.cfg.Coordinator.MaxObjectAge, "max-object-age", 0, "the oldest WAL object (by its key's UUIDv7 time) the embedded coordinator accepts a commit of, so that the collector never took it as an orphan; 0: half of --gc-grace; negative: no limit")
	f.consolidation = fs.Bool("consolidation-enabled", true, "run the consolidation jobs the coordinator assigns (=false: this broker runs none, and the embedded coordinator plans none)")
	fs.DurationVar(&f.cfg.Tier.PollInterval, "tier-poll-interval", 5*time.Second, "how often an idle broker asks the coordinator for a consolidation job")
	fs.IntVar(&f.cfg.Tier.Concurrency, "tier-job-concurrency", 4, "consolidation jobs a broker runs at once (each streams its segment to the store, within --tier-job-buffer-bytes)")
	fs.Int64Var(&f.cfg.Tier.IOBytesPerSecond, "tier-job-io-bytes-per-second", 96<<20, "bytes per second the tier jobs (consolidation and compaction) read and write together, as Kafka's log.cleaner.io.max.bytes.per.second, so that they spread their work and yield the device and the cores to produce and fetch; raised to twice this broker's ingest rate when that is more, so that consolidation keeps up with any sustained ingest; 0: unpaced")
	fs.Int64Var(&f.cfg.Tier.JobBufferBytes, "tier-job-buffer-bytes", tiered.DefaultJobBufferBytes, "memory the tier jobs' buffers (WAL reads, an 8 MiB upload part each) may hold at once, whatever segment.bytes is, as Kafka's log.cleaner.io.buffer.size: a job waits for its share, and reads ahead only with what is left; at least 8 MiB more than one read (a cache chunk)")
	fs.IntVar(&f.cfg.Tier.DedupeBufferBytes, "compaction-dedupe-buffer-bytes", tiered.DefaultDedupeBufferBytes, "the key map a compaction pass builds on a topic without the key index (Kafka's log.cleaner.dedupe.buffer.size; 24 bytes a key, several passes when full); one pass at a time per broker")
	f.kvRemoteRead = fs.Bool("kv-remote-read-enabled", true, "let /kv read records that live only in segment objects, after --wal-retention (=false: such lookups answer 404, error code 40405). On by default, unlike the key-index RFC's remote-read gate: both of floe's tiers are objects in the same store, read through the same chunk cache")
	fs.Int64Var(&f.cfg.KVBatchCacheBytes, "kv-batch-cache-bytes", 64<<20, "bytes of compressed batches /kv keeps decoded (negative: none)")
	fs.DurationVar(&f.cfg.Coordinator.TableMaintainInterval, "table-maintain-interval", 24*time.Hour, "how often the embedded coordinator may plan a table.enabled topic's table maintenance job: table.retention.ms, snapshot expiry and orphan files (the first after a start at once)")
	fs.DurationVar(&f.cfg.Coordinator.TableInterval, "table-interval", time.Minute, "how often the embedded coordinator may plan a table.enabled topic's table job: how often its Iceberg table gets a snapshot (table lag against snapshot count)")
	fs.StringVar(&f.cfg.TableLocation, "table-location", "", "URI of where the Iceberg tables' files go: s3://bucket/path (with the --s3-* options and credentials) or file:///dir (default: <the object store>/<--s3-prefix>/tables)")
	fs.StringVar(&f.cfg.TableNamespace, "table-namespace", node.DefaultTableNamespace, "the Iceberg namespace of every table.enabled topic's table")
	fs.StringVar(&f.cfg.TableCatalog.URL, "table-catalog-url", "", "base URI of an external Iceberg REST catalog (Polaris, Unity, Nessie, Lakekeeper...) to create the tables in and commit their snapshots to, instead of the coordinator's; /iceberg/v1 then answers 404 pointing readers to that catalog. Every broker needs the same")
	fs.StringVar(&f.cfg.TableCatalog.Warehouse, "table-catalog-warehouse", "", "with --table-catalog-url, the warehouse to ask it for (Polaris' catalog name, Lakekeeper's warehouse; default: the catalog's)")
	fs.StringVar(&f.cfg.TableCatalog.Token, "table-catalog-token", "", "with --table-catalog-url, a bearer token sent with every request (better as FLOE_TABLE_CATALOG_TOKEN than on the command line)")
	fs.StringVar(&f.cfg.TableCatalog.Credential, "table-catalog-credential", "", "with --table-catalog-url, an OAuth2 client credential client_id:secret exchanged for tokens at the catalog's /v1/oauth/tokens (better as FLOE_TABLE_CATALOG_CREDENTIAL); not with --table-catalog-token")
	fs.StringVar(&f.cfg.TableCatalog.Scope, "table-catalog-scope", "", "with --table-catalog-credential, the OAuth2 scope to ask for (default: catalog)")
	fs.StringVar(&f.cfg.TableCatalog.TLS.CAFile, "table-catalog-ca-file", "", "CA bundle (PEM) to verify an https --table-catalog-url with (default: the system's roots)")
	fs.StringVar(&f.cfg.TableCatalog.TLS.CertFile, "table-catalog-cert", "", "client certificate (PEM) for an https --table-catalog-url that verifies clients")
	fs.StringVar(&f.cfg.TableCatalog.TLS.KeyFile, "table-catalog-key", "", "the key of --table-catalog-cert")
	f.tableREST = fs.Bool("table-rest-enabled", true, "serve the tables' read-only Iceberg REST catalog at /iceberg/v1 on the HTTP listener, behind its authentication and the topics' ACLs (DESCRIBE lists a table, READ loads it)")
	fs.StringVar(&f.cfg.NATSURL, "nats-url", "", "NATS server of a cluster whose coordinator runs as cmd/coordinator; empty: embed NATS and the coordinator")
	fs.StringVar(&f.cfg.NATSListen, "nats-listen", "", "host:port for the embedded NATS server to listen on, so other brokers can share its coordinator (default: in-process only)")
	fs.StringVar(&f.cfg.Cluster, "cluster", "floe", "cluster name: the prefix of its NATS subjects")
	fs.DurationVar(&f.cfg.CoordinatorTimeout, "coordinator-timeout", 5*time.Second, "deadline of each request to the coordinator")
	fs.IntVar(&f.cfg.CoordinatorShards, "coordinator-shards", 1, "how many shards the cluster's coordinator has (its coordinators' --shards) when the broker starts: each partition's calls go to its shard, and the broker follows the cluster's growth from there (cluster_info); with --nats-url only")
	fs.StringVar(&f.cfg.TLS.Files.CertFile, "tls-cert", "", "certificate (PEM, with its chain) for TLS on the Kafka and HTTP listeners; re-read when the file changes")
	fs.StringVar(&f.cfg.TLS.Files.KeyFile, "tls-key", "", "the key of --tls-cert (PEM)")
	fs.StringVar(&f.cfg.TLS.Files.ClientCAFile, "tls-client-ca", "", "CA bundle (PEM) client certificates must chain to: mutual TLS, the principal taken from the certificate (see --tls-principal-mapping-rules); /kv then requires credentials")
	f.clientAuth = fs.String("tls-client-auth", "required", "with --tls-client-ca, whether a Kafka client must present a certificate: required, or requested (verified when presented; Kafka's ssl.client.auth)")
	fs.StringVar(&f.cfg.TLS.PrincipalMappingRules, "tls-principal-mapping-rules", "DEFAULT", "how a client certificate's subject becomes a principal, as Kafka's ssl.principal.mapping.rules, e.g. 'RULE:^CN=(.*?),.*$/$1/,DEFAULT'")
	fs.StringVar(&f.cfg.TLS.InternalCAFile, "internal-tls-ca", "", "CA bundle (PEM) to verify the zone peers' HTTPS listeners with when reading their chunks (default: --tls-client-ca, else the system's roots)")
	f.saslMechs = fs.String("sasl-mechanisms", "", "SASL mechanisms the Kafka listener requires, comma-separated, of PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 (empty: no SASL)")
	fs.StringVar(&f.cfg.SASLUsersFile, "sasl-users-file", "", "file of name:password lines stored at start as SCRAM users (for every enabled SCRAM mechanism; PLAIN checks against them)")
	f.reauthMs = fs.Int64("connections-max-reauth-ms", 0, "SASL session lifetime (Kafka's connections.max.reauth.ms, KIP-368): clients re-authenticate within it or have their connection closed; 0 for no limit")
	fs.Float64Var(&f.cfg.KVQuotaRPS, "kv-quota-rps", 0, "/kv lookups per second each principal may make (a token bucket; per client address without security); 0 for no quota")
	fs.IntVar(&f.cfg.KVQuotaBurst, "kv-quota-burst", 0, "burst of --kv-quota-rps (default: the rate)")
	fs.StringVar(&f.cfg.NATSSecurity.CredsFile, "nats-creds", "", "NATS credentials file (JWT and nkey seed) to authenticate to --nats-url with")
	fs.StringVar(&f.cfg.NATSSecurity.NKeyFile, "nats-nkey", "", "NATS nkey seed file to authenticate to --nats-url with")
	fs.StringVar(&f.cfg.NATSSecurity.TLS.CAFile, "nats-tls-ca", "", "CA bundle (PEM) to verify the NATS servers with (default: the system's roots)")
	fs.StringVar(&f.cfg.NATSSecurity.TLS.CertFile, "nats-tls-cert", "", "client certificate (PEM) for NATS servers that verify clients")
	fs.StringVar(&f.cfg.NATSSecurity.TLS.KeyFile, "nats-tls-key", "", "the key of --nats-tls-cert")
	fs.StringVar(&f.cfg.S3.TLS.CAFile, "s3-ca-file", "", "CA bundle (PEM) to verify an https --s3-endpoint with (default: the system's roots)")
	shareGroupFlags(fs, &f.cfg.Groups)
	f.shareGroups = fs.Bool("share-groups-enabled", true, "serve share groups (KIP-932): ShareGroupHeartbeat and ShareGroupDescribe v1, ShareFetch and ShareAcknowledge v1-v2, DescribeShareGroupOffsets v0-v1, Alter/DeleteShareGroupOffsets v0, as Kafka 4.4's share.version feature, on by default since Kafka 4.2 (=false: not advertised in ApiVersions, and a request for them closes the connection)")
	fs.IntVar(&f.cfg.Broker.MaxShareSessions, "group-share-max-share-sessions", 2000, "share sessions this broker keeps at once; a ShareFetch opening one more is SHARE_SESSION_LIMIT_REACHED (group.share.max.share.sessions)")
	fs.BoolVar(&f.cfg.Broker.ACLsEnabled, "acls-enabled", false, "authorize every Kafka request with the ACLs stored in the coordinator (CreateAcls, kafka-acls.sh), as Kafka's authorizer with allow.everyone.if.no.acl.found=false; off: everything is allowed")
	f.superUsers = fs.String("super-users", "", "comma-separated principals allowed everything when --acls-enabled, as Kafka's super.users (e.g. User:admin,User:ops)")
	fs.StringVar(&f.logLevel, "log-level", "info", "debug, info, warn or error")
	fs.DurationVar(&f.drain, "drain-timeout", 30*time.Second, "how long a graceful stop may take")
	fs.Int64Var(&f.memoryLimit, "memory-limit", 0, "soft memory limit of the Go runtime in bytes: it collects sooner as the heap nears it (0: the chunk cache, ingest buffer, tier job buffers and /kv batch cache plus 512 MiB, less the 192 MiB the embedded coordinator's Pebble holds outside the Go heap in a cgo build, unless GOMEMLIMIT is set; negative: none)")
	fs.StringVar(&f.cfg.Tracing.Endpoint, "otlp-endpoint", "", "OTLP/HTTP collector to export traces of produce, fetch and /kv to (http://host:4318, https://..., or host:port for plain http); empty: tracing off, at no cost")
	fs.Float64Var(&f.cfg.Tracing.SampleRatio, "trace-sample-ratio", 1, "share of new traces sampled with --otlp-endpoint; a request with a trace context (a traceparent record or HTTP header) follows its parent's decision")
	return fs, f
}

// parseFlags parses the command line (after the FLOE_* environment) into
// the node's configuration.
func parseFlags(args []string) (*flags, error) {
	fs, f := newFlagSet()
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
	cfg := &f.cfg
	if err := checkAdvertised(cfg.KafkaAddr, cfg.AdvertisedAddr); err != nil {
		return nil, err
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(f.logLevel)); err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	users, err := broker.ParseSuperUsers(*f.superUsers)
	if err != nil {
		return nil, fmt.Errorf("--super-users: %w", err)
	}
	cfg.Broker.SuperUsers = users
	cfg.Broker.ShareGroupsDisabled = !*f.shareGroups
	if g := cfg.Groups; cfg.NATSURL == "" {
		// The options the embedded group coordinator opens with (node's
		// embeddedGroups), checked now: a bad --group-* flag is named at
		// once, not after the embedded coordinator's start times out.
		g.Dir = filepath.Join(cfg.DataDir, "groups")
		if err := g.Validate(); err != nil {
			return nil, err
		}
	}
	if len(cfg.Broker.SuperUsers) > 0 && !cfg.Broker.ACLsEnabled {
		cfg.Logger.Warn("--super-users has no effect without --acls-enabled")
	}
	cfg.Broker.NodeID = int32(*f.nodeID)
	cfg.Broker.MaxRequestBytes = int32(*f.maxRequest)
	cfg.Broker.DefaultPartitions = int32(*f.numPartitions)
	cfg.Broker.KVIndexEnabled = cfg.Coordinator.KVIndexEnabled
	cfg.Coordinator.DefaultPartitions = int32(*f.numPartitions)
	cfg.TierJobsDisabled = !*f.consolidation
	cfg.ZoneCacheSharingDisabled = !*f.zoneSharing
	cfg.KVRemoteReadDisabled = !*f.kvRemoteRead
	cfg.TableRESTDisabled = !*f.tableREST
	cfg.Coordinator.ConsolidationDisabled = !*f.consolidation
	switch *f.clientAuth {
	case "required":
	case "requested":
		cfg.TLS.Files.ClientAuthOptional = true
	default:
		return nil, fmt.Errorf("--tls-client-auth: %q is neither required nor requested", *f.clientAuth)
	}
	for _, m := range strings.Split(*f.saslMechs, ",") {
		if m = strings.TrimSpace(m); m != "" {
			cfg.Broker.SASLMechanisms = append(cfg.Broker.SASLMechanisms, strings.ToUpper(m))
		}
	}
	cfg.Broker.ReauthInterval = time.Duration(*f.reauthMs) * time.Millisecond
	if err := cfg.Tracing.Validate(); err != nil {
		return nil, err
	}
	if cfg.NATSURL == "" {
		// The embedded coordinator's options come from flags: refuse bad
		// ones now, by their flags, rather than when it opens.
		copts := cfg.Coordinator
		copts.Dir = cfg.DataDir
		if err := copts.Validate(); err != nil {
			return nil, err
		}
	}
	return f, nil
}

// checkAdvertised refuses to advertise a meta-address (0.0.0.0, ::, or no
// host): clients would connect to themselves. Kafka refuses it too
// ("advertised.listeners cannot use the nonroutable meta-address").
func checkAdvertised(kafkaAddr, advertised string) error {
	flagName, addr := "--advertised-addr", advertised
	if addr == "" {
		flagName, addr = "--kafka-addr", kafkaAddr
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%s %q: %w", flagName, addr, err)
	}
	if ip := net.ParseIP(host); host != "" && (ip == nil || !ip.IsUnspecified()) {
		return nil
	}
	if advertised == "" {
		return fmt.Errorf("--kafka-addr %s listens on every interface, and Metadata cannot advertise the nonroutable meta-address %q to clients: set --advertised-addr to the host:port clients reach this broker at (e.g. --advertised-addr $(hostname):9092)", kafkaAddr, host)
	}
	return fmt.Errorf("--advertised-addr %s: Metadata cannot advertise the nonroutable meta-address %q to clients: use a host name or routable IP address", advertised, host)
}

func run(args []string) error {
	f, err := parseFlags(args)
	if err != nil {
		return err
	}
	cfg, drain := f.cfg, f.drain
	setMemoryLimit(memoryLimit(f, os.Getenv("GOMEMLIMIT")), cfg.Logger)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	n, err := node.Start(ctx, cfg)
	if err != nil {
		return err
	}
	var serveErr error
	select {
	case <-ctx.Done():
		cfg.Logger.Info("stopping: draining buffered produce requests")
	case serveErr = <-n.Err():
		cfg.Logger.Error("listener failed", "err", serveErr)
	}
	stop()
	dctx, cancel := context.WithTimeout(context.Background(), drain)
	defer cancel()
	if err := n.Close(dctx); err != nil {
		return errors.Join(serveErr, fmt.Errorf("drain: %w", err))
	}
	cfg.Logger.Info("stopped")
	return serveErr
}

// shareGroupFlags adds the share group settings of the embedded coordinator, with
// Kafka 4.4's names (group.share.*) and defaults.
func shareGroupFlags(fs *flag.FlagSet, o *groups.Options) {
	fs.DurationVar(&o.ShareSessionTimeout, "group-share-session-timeout", 45*time.Second, "the embedded coordinator removes a share group member that sends no heartbeat for this long (group.share.session.timeout.ms)")
	fs.DurationVar(&o.ShareHeartbeatInterval, "group-share-heartbeat-interval", 5*time.Second, "the embedded coordinator tells share group members to heartbeat this often (group.share.heartbeat.interval.ms); below --group-share-session-timeout")
	fs.IntVar(&o.ShareMaxGroupSize, "group-share-max-size", 200, "the embedded coordinator takes at most this many members in a share group, 1 to 1000 (group.share.max.size)")
	fs.DurationVar(&o.ShareRecordLockDuration, "group-share-record-lock-duration", 30*time.Second, "the embedded coordinator lets a share group member hold the records it acquired this long, 15s to 60s; the group config share.record.lock.duration.ms overrides it (group.share.record.lock.duration.ms)")
	fs.IntVar(&o.ShareDeliveryCountLimit, "group-share-delivery-count-limit", 5, "the embedded coordinator delivers a record at most this many times before archiving it, 2 to 10 (group.share.delivery.count.limit)")
	fs.IntVar(&o.SharePartitionMaxRecordLocks, "group-share-partition-max-record-locks", 2000, "the embedded coordinator keeps at most this many records in flight per share-partition, 100 to 10000 (group.share.partition.max.record.locks)")
}
