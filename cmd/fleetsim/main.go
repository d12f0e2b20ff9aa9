// Command fleetsim plays a fleet of brokers against a running batch
// coordinator over NATS, with no data, and reports where the leader
// saturates: commits/s and batch coordinates/s sustained, commit and
// FindBatches latency, the coordinator's CPU and RSS, its log's bytes per
// commit and its state's size per partition (package loadtest/fleet).
//
//	go run ./cmd/fleetsim --nats-url nats://127.0.0.1:4222 --brokers 64 \
//	  --partitions 10000 --objects-per-second 2000 --batches-per-object 50 \
//	  --coordinator-pid 1234 --coordinator-metrics-url http://127.0.0.1:8090/metrics
//
// scripts/fleet-sim.sh starts a 3-node NATS cluster and a coordinator and
// runs it. SIGINT ends the load early and still prints the report. Exit
// status: 0 clean run, 1 the run failed, 2 bad flags, 3 the run counted
// errors (listed in the report).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/coordinator/rpc"
	"github.com/floe-io/floe/coordinator/shards"
	"github.com/floe-io/floe/loadtest"
	"github.com/floe-io/floe/loadtest/fleet"
)

func main() {
	os.Exit(run())
}

func run() int {
	cfg := fleet.DefaultConfig()
	fs := flag.NewFlagSet("fleetsim", flag.ContinueOnError)
	natsURL := fs.String("nats-url", "nats://127.0.0.1:4222", "NATS server(s) of the coordinator, comma-separated")
	cluster := fs.String("cluster", "floe", "cluster name: the prefix of the coordinator's NATS subjects")
	conns := fs.Int("nats-conns", 0, "NATS connections the brokers and consumers share round robin (0: one per broker, at most 64)")
	fs.IntVar(&cfg.Brokers, "brokers", cfg.Brokers, "simulated brokers, each committing its share of the objects one at a time")
	fs.IntVar(&cfg.Partitions, "partitions", cfg.Partitions, "partitions in all, spread evenly over --topics")
	fs.IntVar(&cfg.Topics, "topics", cfg.Topics, "topics the partitions are spread over")
	fs.StringVar(&cfg.TopicPrefix, "topic-prefix", cfg.TopicPrefix, "topic names: <prefix>0, <prefix>1... (used as they are if they exist)")
	fs.Float64Var(&cfg.ObjectsPerSecond, "objects-per-second", cfg.ObjectsPerSecond, "target commits/s of the whole fleet (open loop)")
	fs.IntVar(&cfg.BatchesPerObject, "batches-per-object", cfg.BatchesPerObject, "batches in an object, each on a distinct partition (the roll's fan-out)")
	fs.Int64Var(&cfg.ObjectBytes, "object-bytes", cfg.ObjectBytes, "size of an object, split over its batches")
	fs.IntVar(&cfg.RecordsPerBatch, "records-per-batch", cfg.RecordsPerBatch, "mean records in a batch")
	fs.StringVar(&cfg.Arrivals, "arrivals", cfg.Arrivals, "how objects arrive at a broker: even or poisson")
	fs.StringVar(&cfg.PartitionChoice, "partition-choice", cfg.PartitionChoice, "how a roll's partitions are drawn: uniform or zipf")
	fs.Float64Var(&cfg.ZipfS, "zipf-s", cfg.ZipfS, "zipf exponent (> 1) of --partition-choice zipf")
	fs.IntVar(&cfg.ProducersPerBroker, "producers-per-broker", cfg.ProducersPerBroker, "idempotent producers per broker (0: batches without producer ids)")
	fs.IntVar(&cfg.Consumers, "consumers", cfg.Consumers, "tail consumers")
	fs.IntVar(&cfg.ConsumerPartitions, "consumer-partitions", cfg.ConsumerPartitions, "partitions each consumer tails")
	fs.DurationVar(&cfg.FetchInterval, "fetch-interval", cfg.FetchInterval, "how often a consumer asks for its partitions' new batches")
	fs.StringVar(&cfg.FetchAPI, "fetch-api", cfg.FetchAPI, "multi (FindBatchesMulti), single (FindBatches per partition) or both (half the consumers each)")
	fs.IntVar(&cfg.Groups, "groups", cfg.Groups, "KIP-848 consumer groups of one member, heartbeating and committing offsets")
	fs.DurationVar(&cfg.OffsetCommitInterval, "offset-commit-interval", cfg.OffsetCommitInterval, "how often a group commits its offsets (auto.commit.interval.ms)")
	fs.DurationVar(&cfg.Duration, "duration", cfg.Duration, "length of the load, warmup included")
	fs.DurationVar(&cfg.Warmup, "warmup", cfg.Warmup, "first part of the load left out of rates and latencies")
	fs.DurationVar(&cfg.CommitTimeout, "commit-timeout", cfg.CommitTimeout, "bound on one commit")
	fs.DurationVar(&cfg.Progress, "progress", cfg.Progress, "progress line interval (0: off)")
	fs.Int64Var(&cfg.Seed, "seed", 0, "seed of the random choices (0: from the clock)")
	pid := fs.Int("coordinator-pid", 0, "the leading coordinator's pid, for its CPU and RSS from /proc")
	shardCount := fs.Int("shards", 1, "the coordinator's shards (its --shards): commits and finds go to each partition's shard (coordinator/shards)")
	shardPIDs := fs.String("shard-pids", "", "the pids of the leaders of shards 1 and up, comma-separated: their CPU and RSS are added to --coordinator-pid's")
	metricsURL := fs.String("coordinator-metrics-url", "", "the leading coordinator's /metrics, read once at the end for its state's size")
	report := fs.String("report", "", "also write the report as JSON to this file")
	logLevel := fs.String("log-level", "info", "debug, info, warn or error")
	if err := fs.Parse(os.Args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "fleetsim: unexpected arguments %q\n", fs.Args())
		return 2
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		fmt.Fprintf(os.Stderr, "fleetsim: --log-level: %v\n", err)
		return 2
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	cfg.Logger, cfg.ProgressTo = log, os.Stderr
	if err := cfg.Validate(); err != nil {
		var ce *loadtest.ConfigError
		if errors.As(err, &ce) {
			for _, p := range ce.Problems {
				fmt.Fprintf(os.Stderr, "fleetsim: %s\n", p)
			}
		} else {
			fmt.Fprintf(os.Stderr, "fleetsim: %v\n", err)
		}
		return 2
	}
	if err := rpc.CheckCluster(*cluster); err != nil {
		fmt.Fprintf(os.Stderr, "fleetsim: --cluster: %v\n", err)
		return 2
	}
	n := *conns
	if n <= 0 {
		n = min(cfg.Brokers, 64)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	go func() {
		<-ctx.Done()
		stop() // a second SIGINT kills the process
	}()
	var coords []fleet.Coordinator
	var first *rpc.Client
	var firstConn *nats.Conn
	for i := range n {
		nc, err := nats.Connect(*natsURL, nats.Name(fmt.Sprintf("fleetsim-%d", i)), nats.MaxReconnects(-1), nats.ReconnectWait(250*time.Millisecond))
		if err != nil {
			log.Error("connect to nats", "url", *natsURL, "err", err)
			return 1
		}
		defer nc.Close()
		c := rpc.NewClient(nc, *cluster, rpc.ClientOptions{Timeout: cfg.RequestTimeout, Logger: log})
		if first == nil {
			first, firstConn = c, nc
		}
		if *shardCount <= 1 {
			coords = append(coords, c)
			continue
		}
		all := []coordapi.Coordinator{c}
		for s := 1; s < *shardCount; s++ {
			all = append(all, rpc.NewClient(nc, rpc.ShardCluster(*cluster, s), rpc.ClientOptions{Timeout: cfg.RequestTimeout, Logger: log}))
		}
		r, err := shards.New(all)
		if err != nil {
			log.Error("shards", "err", err)
			return 2
		}
		coords = append(coords, r)
	}
	probe := &fleet.Probe{PID: *pid, MetricsURL: *metricsURL}
	for _, f := range strings.FieldsFunc(*shardPIDs, func(r rune) bool { return r == ',' }) {
		p, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			fmt.Fprintf(os.Stderr, "fleetsim: --shard-pids: %v\n", err)
			return 2
		}
		probe.ShardPIDs = append(probe.ShardPIDs, p)
	}
	clusters := []string{*cluster}
	for s := 1; s < *shardCount; s++ {
		clusters = append(clusters, rpc.ShardCluster(*cluster, s))
	}
	if l, err := fleet.JetStreamLog(firstConn, clusters...); err != nil {
		log.Warn("no log stats", "err", err)
	} else {
		probe.Log = l
	}
	cfg.Probe = probe

	rep, err := fleet.Run(ctx, cfg, coords, first.Groups())
	if err != nil {
		log.Error("fleet simulation failed", "err", err)
		return 1
	}
	if err := rep.WriteText(os.Stdout); err != nil {
		log.Error("write report", "err", err)
		return 1
	}
	if *report != "" {
		if err := rep.WriteJSON(*report); err != nil {
			log.Error("write json report", "err", err, "path", *report)
			return 1
		}
	}
	if rep.ErrorsTotal > 0 {
		return 3
	}
	return 0
}
