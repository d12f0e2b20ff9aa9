// Package loadtest is floe's load generator. It drives any Kafka-compatible
// cluster through franz-go, so floe and other brokers are measured the same
// way, and it reports:
//
//   - produce throughput and per-record produce latency (Produce call to
//     promise callback),
//   - consume throughput and end-to-end latency (the producer stamps the send
//     time in the "lt-ts" record header, consumers subtract it on receipt),
//   - latency of GET /kv/{topic}/{key} lookups against a floe broker,
//   - object-store PUTs and GETs per GiB, from a floe broker's /metrics.
//
// A run has three phases:
//
//	setup    topic created or checked, start offsets listed, metrics scraped
//	load     producers, consumers and kv lookups run for --duration or until
//	         --records were produced; the first --warmup is left out of stats
//	drain    producers flush, consumers read up to the final high watermarks
//	         (bounded by --drain-timeout), metrics scraped again
//
// Latencies go into HDR histograms with microsecond resolution up to 60s.
package loadtest

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"strings"
	"time"
)

// ErrInvalidConfig is matched (with errors.Is) by every error Validate returns.
var ErrInvalidConfig = errors.New("loadtest: invalid config")

// Config is one load test. Start from DefaultConfig: the zero value is not a
// usable configuration.
type Config struct {
	// Brokers are the seed brokers, host:port. Default: 127.0.0.1:9092.
	Brokers []string
	// Security connects over TLS and SASL. Default: plaintext.
	Security Security
	// Topic is produced to and consumed from. Default: "loadtest".
	Topic string
	// CreateTopic creates Topic with Partitions partitions if it does not
	// exist. Default: false (a missing topic is an error).
	CreateTopic bool
	// Partitions is the partition count used by CreateTopic. Default: 8.
	Partitions int
	// TopicConfigs are the topic configs set by CreateTopic, e.g.
	// cleanup.policy=compact and kv.index.enabled=true for /kv lookups on
	// floe. Default: none.
	TopicConfigs map[string]string
	// ReplicationFactor is used by CreateTopic; -1 asks for the broker's
	// default. Default: -1.
	ReplicationFactor int

	// Duration bounds the load phase, warmup included; 0 means no time
	// limit (Records must then be set). Default: 30s.
	Duration time.Duration
	// Records stops producing after this many records in total (warmup
	// included); 0 means no count limit. Default: 0.
	Records int64
	// Warmup is the first part of the load phase that is left out of
	// throughput and latency statistics. Default: 0.
	Warmup time.Duration
	// DrainTimeout bounds the drain phase: the producers' final flush and
	// the consumers catching up to the final high watermarks. Default: 10s.
	DrainTimeout time.Duration

	// Producers is the number of producers, each with its own client.
	// Default: 1.
	Producers int
	// Rate is the total produce rate in records/s over all producers;
	// 0 produces flat out (bounded by MaxBuffered). Default: 0.
	Rate float64
	// RecordSize is the size of each record value in bytes. Default: 1024.
	RecordSize int
	// Payload picks record values: "random" (incompressible) or "text"
	// (compressible words). Default: "random".
	Payload string
	// KeySpace, when > 0, gives each record a key "k-%06d" picked uniformly
	// from [0, KeySpace); when 0 records have null keys. Default: 0.
	KeySpace int
	// Acks is "all" (or "-1"), "1" or "0". Default: "all".
	Acks string
	// Compression is "none", "gzip", "snappy", "lz4" or "zstd".
	// Default: "none".
	Compression string
	// Idempotent enables the idempotent producer; it requires Acks "all".
	// Default: true.
	Idempotent bool
	// Linger is the producer linger. Default: 0.
	Linger time.Duration
	// MaxInflight is the maximum number of produce requests in flight per
	// broker. Idempotent producers always use 5, so another value needs
	// Idempotent false. Default: 5.
	MaxInflight int
	// MaxBuffered is the maximum number of records a producer buffers
	// before Produce blocks: it bounds flat-out runs. Default: 10000.
	MaxBuffered int

	// Consumers is the number of consumers per reader set, each with its
	// own client; 0 runs producers only. Default: 1, so that a run reports
	// end-to-end latency.
	Consumers int
	// Group, when set, makes each reader set a consumer group; otherwise
	// each reader set is Consumers direct consumers that split the
	// partitions between them. Default: "" (direct consumers).
	Group string
	// ShareGroup, when set, makes each reader set a share group (KIP-932)
	// of Consumers franz-go share consumers (kgo.ShareGroup) that
	// acknowledge implicitly: each poll accepts the records of the one
	// before. The group's partitions start at the pre-run ends
	// (AlterShareGroupOffsets, which needs the group empty), or with
	// FromStart at the log start (share.auto.offset.reset=earliest). A
	// share set has caught up once it received as many records of each
	// partition as were produced past its start. It excludes Group.
	// Default: "" (no share group).
	ShareGroup string
	// ShareMaxRecords is the share consumers' ShareFetch MaxRecords
	// (kgo.ShareMaxRecords); 0 keeps franz-go's 500. Default: 0.
	ShareMaxRecords int
	// ConsumerGroups is the number of independent reader sets that each
	// read the whole topic (for cache tests). With Group (or ShareGroup)
	// set they are groups named "<group>-<i>" (just Group when there is
	// one). Default: 1.
	ConsumerGroups int
	// FromStart consumes from the start of the partitions (or a group's
	// committed offsets); otherwise consumers read only records produced
	// after the run started. Default: false.
	FromStart bool

	// KVURL is the base URL of a floe broker's HTTP port; when set, workers
	// GET /kv/{topic}/{key} for random keys from KeySpace. Default: ""
	// (no lookups).
	KVURL string
	// KVLookupsRate is the total lookup rate per second; 0 is flat out.
	// Default: 0.
	KVLookupsRate float64
	// KVConcurrency is the number of concurrent lookup workers. Default: 4.
	KVConcurrency int
	// KVTimeout bounds each lookup. Default: 5s.
	KVTimeout time.Duration

	// MetricsURLs are Prometheus endpoints of floe brokers (their /metrics);
	// they are scraped before and after the run to report object-store
	// requests per GiB. Default: none.
	MetricsURLs []string
	// MetricsNames are the exact counter names of object-store requests,
	// labelled op="put"|"get". When none of them is exposed, any counter
	// whose name contains "objectstore" is used instead. Default:
	// floe_objectstore_requests_total.
	MetricsNames []string

	// Progress is the interval of the live progress line; 0 disables it.
	// Default: 1s.
	Progress time.Duration
	// Logger receives diagnostics and, when ProgressTo is nil, the progress
	// lines. Default: slog.Default().
	Logger *slog.Logger
	// ProgressTo, when set, receives the progress lines as plain text
	// instead of Logger. Default: nil.
	ProgressTo io.Writer
}

// DefaultConfig returns the defaults documented on Config.
func DefaultConfig() Config {
	return Config{
		Brokers:           []string{"127.0.0.1:9092"},
		Topic:             "loadtest",
		Partitions:        8,
		ReplicationFactor: -1,
		Duration:          30 * time.Second,
		DrainTimeout:      10 * time.Second,
		Producers:         1,
		RecordSize:        1024,
		Payload:           "random",
		Acks:              "all",
		Compression:       "none",
		Idempotent:        true,
		MaxInflight:       5,
		MaxBuffered:       10000,
		Consumers:         1,
		ConsumerGroups:    1,
		KVConcurrency:     4,
		KVTimeout:         5 * time.Second,
		MetricsNames:      []string{"floe_objectstore_requests_total"},
		Progress:          time.Second,
	}
}

// maxRecordSize bounds RecordSize: far above any broker's default message
// size limit, low enough that a typo cannot exhaust memory.
const maxRecordSize = 64 << 20

// ConfigError lists every problem Validate found.
type ConfigError struct {
	// Problems are human-readable, one per bad field or combination.
	Problems []string
}

// Error implements error.
func (e *ConfigError) Error() string {
	return ErrInvalidConfig.Error() + ": " + strings.Join(e.Problems, "; ")
}

// Is makes errors.Is(err, ErrInvalidConfig) true.
func (e *ConfigError) Is(target error) bool { return target == ErrInvalidConfig }

// Validate reports every bad field and bad combination at once, as a
// *ConfigError, or nil.
func (c *Config) Validate() error {
	var p []string
	bad := func(format string, args ...any) { p = append(p, fmt.Sprintf(format, args...)) }

	p = append(p, c.Security.validate()...)
	if len(c.Brokers) == 0 {
		bad("--brokers: at least one broker is needed")
	}
	for _, b := range c.Brokers {
		if _, port, err := net.SplitHostPort(b); err != nil || port == "" {
			bad("--brokers: %q is not host:port", b)
		}
	}
	if err := validTopic(c.Topic); err != nil {
		bad("--topic: %v", err)
	}
	if c.CreateTopic && c.Partitions < 1 {
		bad("--partitions: %d, must be >= 1", c.Partitions)
	}
	for k := range c.TopicConfigs {
		if k == "" {
			bad("--topic-config: empty config name")
		}
	}
	if len(c.TopicConfigs) > 0 && !c.CreateTopic {
		bad("--topic-config: needs --create-topic")
	}
	if c.ReplicationFactor == 0 || c.ReplicationFactor < -1 || c.ReplicationFactor > 32767 {
		bad("--replication-factor: %d, must be -1 (broker default) or >= 1", c.ReplicationFactor)
	}

	if c.Duration < 0 {
		bad("--duration: %v is negative", c.Duration)
	}
	if c.Records < 0 {
		bad("--records: %d is negative", c.Records)
	}
	if c.Duration == 0 && c.Records == 0 {
		bad("--duration and --records: one of them must bound the run")
	}
	if c.Warmup < 0 {
		bad("--warmup: %v is negative", c.Warmup)
	}
	if c.Duration > 0 && c.Warmup >= c.Duration {
		bad("--warmup: %v leaves nothing of --duration %v to measure", c.Warmup, c.Duration)
	}
	if c.DrainTimeout <= 0 {
		bad("--drain-timeout: %v, must be > 0", c.DrainTimeout)
	}

	if c.Producers < 0 {
		bad("--producers: %d is negative", c.Producers)
	}
	if c.Records > 0 && c.Producers == 0 {
		bad("--records: needs --producers >= 1")
	}
	if c.Producers == 0 && c.Consumers == 0 && c.KVURL == "" {
		bad("nothing to do: --producers, --consumers and --kv-url are all off")
	}
	if c.Rate < 0 {
		bad("--rate: %v is negative", c.Rate)
	}
	if c.RecordSize < 0 || c.RecordSize > maxRecordSize {
		bad("--record-size: %d, must be in [0, %d]", c.RecordSize, maxRecordSize)
	}
	if c.Payload != "random" && c.Payload != "text" {
		bad("--payload: %q, must be random or text", c.Payload)
	}
	if c.KeySpace < 0 {
		bad("--key-space: %d is negative", c.KeySpace)
	}
	if _, err := parseAcks(c.Acks); err != nil {
		bad("--acks: %v", err)
	}
	if _, err := parseCompression(c.Compression); err != nil {
		bad("--compression: %v", err)
	}
	if c.Idempotent && (c.Acks != "all" && c.Acks != "-1") {
		bad("--idempotent: needs --acks=all (got %q); pass --idempotent=false", c.Acks)
	}
	if c.Linger < 0 {
		bad("--linger: %v is negative", c.Linger)
	}
	if c.MaxInflight < 1 {
		bad("--max-inflight: %d, must be >= 1", c.MaxInflight)
	} else if c.Idempotent && c.MaxInflight != 5 {
		bad("--max-inflight: idempotent producers always keep 5 requests in flight; %d needs --idempotent=false", c.MaxInflight)
	}
	if c.MaxBuffered < 1 {
		bad("--max-buffered: %d, must be >= 1", c.MaxBuffered)
	}

	if c.Consumers < 0 {
		bad("--consumers: %d is negative", c.Consumers)
	}
	if c.ConsumerGroups < 1 {
		bad("--consumer-groups: %d, must be >= 1", c.ConsumerGroups)
	}
	if c.ConsumerGroups > 1 && c.Consumers == 0 {
		bad("--consumer-groups: %d needs --consumers >= 1", c.ConsumerGroups)
	}
	if c.Group != "" && c.Consumers == 0 {
		bad("--group: %q needs --consumers >= 1", c.Group)
	}
	if c.ShareGroup != "" && c.Consumers == 0 {
		bad("--share-group: %q needs --consumers >= 1", c.ShareGroup)
	}
	if c.ShareGroup != "" && c.Group != "" {
		bad("--share-group: %q and --group %q exclude each other", c.ShareGroup, c.Group)
	}
	if c.ShareMaxRecords < 0 {
		bad("--share-max-records: %d is negative", c.ShareMaxRecords)
	}

	if c.KVURL != "" {
		if u, err := url.Parse(c.KVURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			bad("--kv-url: %q is not an http(s) URL", c.KVURL)
		}
		if c.KeySpace == 0 {
			bad("--kv-url: lookups need --key-space > 0")
		}
		if c.KVConcurrency < 1 {
			bad("--kv-concurrency: %d, must be >= 1", c.KVConcurrency)
		}
		if c.KVTimeout <= 0 {
			bad("--kv-timeout: %v, must be > 0", c.KVTimeout)
		}
	}
	if c.KVLookupsRate < 0 {
		bad("--kv-lookups-rate: %v is negative", c.KVLookupsRate)
	} else if c.KVLookupsRate > 0 && c.KVURL == "" {
		bad("--kv-lookups-rate: needs --kv-url")
	}
	for _, m := range c.MetricsURLs {
		if u, err := url.Parse(m); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			bad("--metrics-url: %q is not an http(s) URL", m)
		}
	}
	if c.Progress < 0 {
		bad("--progress: %v is negative", c.Progress)
	}

	if len(p) == 0 {
		return nil
	}
	return &ConfigError{Problems: p}
}

// validTopic applies Kafka's topic name rules.
func validTopic(t string) error {
	switch {
	case t == "":
		return errors.New("empty")
	case t == "." || t == "..":
		return fmt.Errorf("%q is not allowed", t)
	case len(t) > 249:
		return fmt.Errorf("%d characters, at most 249", len(t))
	}
	for _, r := range t {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return fmt.Errorf("%q has %q; only [a-zA-Z0-9._-] are allowed", t, r)
		}
	}
	return nil
}

// groupName names reader set i.
func (c *Config) groupName(i int) string {
	name := c.Group
	if c.ShareGroup != "" {
		name = c.ShareGroup
	}
	if name == "" {
		return ""
	}
	if c.ConsumerGroups == 1 {
		return name
	}
	return fmt.Sprintf("%s-%d", name, i)
}
