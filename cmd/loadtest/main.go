// Command loadtest drives a Kafka-compatible cluster (floe or any other)
// with franz-go producers, consumers and floe /kv lookups, and reports
// throughput, latency percentiles and object-store requests per GiB.
//
//	go run ./cmd/loadtest --create-topic --duration 30s
//
// By default one producer and one consumer run, so the report shows
// produce and end-to-end latency; --consumers 0 only produces.
//
// SIGINT ends the load early and still drains and prints the report; a
// second SIGINT exits at once. Exit status: 0 clean run, 1 the run failed,
// 2 bad flags, 3 the run counted errors (listed in the report).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"

	"github.com/floe-io/floe/loadtest"
)

func main() {
	os.Exit(run())
}

func run() int {
	cfg := loadtest.DefaultConfig()
	fs := flag.NewFlagSet("loadtest", flag.ContinueOnError)
	brokers := fs.String("brokers", strings.Join(cfg.Brokers, ","), "seed brokers, comma separated host:port")
	fs.StringVar(&cfg.Topic, "topic", cfg.Topic, "topic to produce to and consume from")
	fs.BoolVar(&cfg.Security.TLS, "tls", false, "connect to the brokers over TLS")
	fs.StringVar(&cfg.Security.TLSCAFile, "tls-ca", "", "CA bundle (PEM) to verify the brokers with (default: the system's roots)")
	fs.StringVar(&cfg.Security.SASLMechanism, "sasl-mechanism", "", "SASL mechanism: PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512 (empty: no SASL)")
	fs.StringVar(&cfg.Security.SASLUser, "sasl-user", "", "SASL user")
	fs.StringVar(&cfg.Security.SASLPassword, "sasl-password", "", "SASL password")
	fs.BoolVar(&cfg.CreateTopic, "create-topic", cfg.CreateTopic, "create the topic with --partitions if it does not exist")
	fs.IntVar(&cfg.Partitions, "partitions", cfg.Partitions, "partitions of a topic made by --create-topic")
	topicConfigs := fs.String("topic-config", "", "configs of a topic made by --create-topic, comma separated k=v (e.g. cleanup.policy=compact,kv.index.enabled=true)")
	fs.IntVar(&cfg.ReplicationFactor, "replication-factor", cfg.ReplicationFactor, "replication factor of a topic made by --create-topic (-1: broker default)")
	fs.DurationVar(&cfg.Duration, "duration", cfg.Duration, "length of the load phase, warmup included (0: no limit; needs --records)")
	fs.Int64Var(&cfg.Records, "records", cfg.Records, "stop after producing this many records (0: no limit); without an explicit --duration the run has no time limit")
	fs.DurationVar(&cfg.Warmup, "warmup", cfg.Warmup, "first part of the run left out of the statistics")
	fs.DurationVar(&cfg.DrainTimeout, "drain-timeout", cfg.DrainTimeout, "bound on the final producer flush and consumer catch-up")
	fs.IntVar(&cfg.Producers, "producers", cfg.Producers, "number of producers, each its own client")
	fs.Float64Var(&cfg.Rate, "rate", cfg.Rate, "total produce rate in records/s (0: flat out)")
	fs.IntVar(&cfg.RecordSize, "record-size", cfg.RecordSize, "record value size in bytes")
	fs.StringVar(&cfg.Payload, "payload", cfg.Payload, "record values: random (incompressible) or text (compressible)")
	fs.IntVar(&cfg.KeySpace, "key-space", cfg.KeySpace, `random keys "k-%06d" in [0, N) when > 0, else null keys`)
	fs.StringVar(&cfg.Acks, "acks", cfg.Acks, "all, 1 or 0")
	fs.StringVar(&cfg.Compression, "compression", cfg.Compression, "none, gzip, snappy, lz4 or zstd")
	fs.BoolVar(&cfg.Idempotent, "idempotent", cfg.Idempotent, "idempotent producer (default false when --acks is not all)")
	fs.DurationVar(&cfg.Linger, "linger", cfg.Linger, "producer linger")
	fs.IntVar(&cfg.MaxInflight, "max-inflight", cfg.MaxInflight, "max produce requests in flight per broker (other than 5 needs --idempotent=false)")
	fs.IntVar(&cfg.MaxBuffered, "max-buffered", cfg.MaxBuffered, "max records a producer buffers before blocking")
	fs.IntVar(&cfg.Consumers, "consumers", cfg.Consumers, "consumers per group (or per set of direct consumers); 0: produce only")
	fs.StringVar(&cfg.Group, "group", cfg.Group, "consumer group name; empty: direct consumers splitting the partitions")
	fs.StringVar(&cfg.ShareGroup, "share-group", cfg.ShareGroup, "share group (KIP-932) name: the consumers share its partitions and accept each poll's records at the next; excludes --group")
	fs.IntVar(&cfg.ShareMaxRecords, "share-max-records", cfg.ShareMaxRecords, "share consumers' ShareFetch MaxRecords (0: franz-go's 500)")
	fs.IntVar(&cfg.ConsumerGroups, "consumer-groups", cfg.ConsumerGroups, `independent groups each reading the whole topic (named "<group>-<i>")`)
	fs.BoolVar(&cfg.FromStart, "from-start", cfg.FromStart, "consume from the start instead of only records of this run")
	fs.StringVar(&cfg.KVURL, "kv-url", cfg.KVURL, "floe HTTP base URL for GET /kv/{topic}/{key} lookups, e.g. http://127.0.0.1:8080")
	fs.Float64Var(&cfg.KVLookupsRate, "kv-lookups-rate", cfg.KVLookupsRate, "total kv lookups/s (0: flat out)")
	fs.IntVar(&cfg.KVConcurrency, "kv-concurrency", cfg.KVConcurrency, "concurrent kv lookups")
	fs.DurationVar(&cfg.KVTimeout, "kv-timeout", cfg.KVTimeout, "timeout of one kv lookup")
	metricsURL := fs.String("metrics-url", "", "floe /metrics URLs, comma separated, scraped before and after for object-store requests per GiB")
	metricsNames := fs.String("metrics-names", strings.Join(cfg.MetricsNames, ","), `object-store request counters (label op="put"|"get"); else any counter named *objectstore*`)
	jsonOut := fs.String("json", "", "also write the report as JSON to this file")
	fs.DurationVar(&cfg.Progress, "progress", cfg.Progress, "progress line interval (0: off)")
	logLevel := fs.String("log-level", "info", "debug, info, warn or error")
	if err := fs.Parse(os.Args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "loadtest: unexpected arguments %q\n", fs.Args())
		return 2
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if set["records"] && !set["duration"] {
		cfg.Duration = 0
	}
	if !set["idempotent"] && cfg.Acks != "all" && cfg.Acks != "-1" {
		cfg.Idempotent = false
	}
	cfg.Brokers = splitList(*brokers)
	cfg.MetricsURLs = splitList(*metricsURL)
	cfg.MetricsNames = splitList(*metricsNames)
	for _, kv := range splitList(*topicConfigs) {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			fmt.Fprintf(os.Stderr, "loadtest: --topic-config: %q is not k=v\n", kv)
			return 2
		}
		if cfg.TopicConfigs == nil {
			cfg.TopicConfigs = make(map[string]string)
		}
		cfg.TopicConfigs[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}

	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		fmt.Fprintf(os.Stderr, "loadtest: --log-level: %v\n", err)
		return 2
	}
	cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	cfg.ProgressTo = os.Stderr

	if err := cfg.Validate(); err != nil {
		var ce *loadtest.ConfigError
		if errors.As(err, &ce) {
			for _, p := range ce.Problems {
				fmt.Fprintf(os.Stderr, "loadtest: %s\n", p)
			}
		} else {
			fmt.Fprintf(os.Stderr, "loadtest: %v\n", err)
		}
		return 2
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	go func() {
		<-ctx.Done()
		stop() // a second SIGINT kills the process
	}()
	rep, err := loadtest.Run(ctx, cfg)
	if err != nil {
		cfg.Logger.Error("load test failed", "err", err)
		return 1
	}
	if err := rep.WriteText(os.Stdout); err != nil {
		cfg.Logger.Error("write report", "err", err)
		return 1
	}
	if *jsonOut != "" {
		if err := rep.WriteJSON(*jsonOut); err != nil {
			cfg.Logger.Error("write json report", "err", err, "path", *jsonOut)
			return 1
		}
	}
	if rep.ErrorsTotal > 0 {
		return 3
	}
	return 0
}

// splitList splits a comma-separated flag, dropping empty items.
func splitList(s string) []string {
	var out []string
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}
