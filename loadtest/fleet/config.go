package fleet

import (
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/floe-io/floe/loadtest"
)

// Arrival processes of Config.Arrivals.
const (
	ArrivalsEven    = "even"
	ArrivalsPoisson = "poisson"
)

// Partition choices of Config.PartitionChoice.
const (
	ChoiceUniform = "uniform"
	ChoiceZipf    = "zipf"
)

// Fetch APIs of Config.FetchAPI.
const (
	FetchMulti  = "multi"
	FetchSingle = "single"
	FetchBoth   = "both"
)

// Config sizes a simulated fleet. The zero value is not valid: start from
// DefaultConfig.
type Config struct {
	// Brokers is how many brokers are simulated, each committing its share
	// of the objects one at a time. Default: 8.
	Brokers int
	// Partitions is the total partition count, spread evenly over Topics
	// topics. Default: 1000.
	Partitions int
	// Topics is how many topics hold the partitions. Default: 10.
	Topics int
	// TopicPrefix names the topics: <prefix>0, <prefix>1... Topics that
	// exist are used as they are when their partition counts match.
	// Default: "fleet-".
	TopicPrefix string
	// ObjectsPerSecond is the target commit rate of the whole fleet.
	// Default: 100.
	ObjectsPerSecond float64
	// BatchesPerObject is the fan-out of a roll: each object holds this many
	// batches, on as many distinct partitions. Default: 10.
	BatchesPerObject int
	// ObjectBytes is the size of an object, split over its batches.
	// Default: 8 MiB (--ingest-max-bytes).
	ObjectBytes int64
	// RecordsPerBatch is the mean record count of a batch (uniform in
	// [1, 2×mean-1]). Default: 20.
	RecordsPerBatch int
	// Arrivals is how objects arrive at a broker: "even" (evenly spaced)
	// or "poisson". Default: poisson.
	Arrivals string
	// PartitionChoice is how a roll's partitions are drawn: "uniform", or
	// "zipf" (a few hot partitions, scattered over the topics).
	// Default: uniform.
	PartitionChoice string
	// ZipfS is the zipf exponent (> 1). Default: 1.1.
	ZipfS float64
	// ProducersPerBroker, when > 0, makes every batch idempotent: each
	// broker gets that many producer ids (InitProducerID) and a batch on
	// partition p is producer p mod ProducersPerBroker's, with its next
	// sequence. 0: no producer ids (the coordinator keeps no producer
	// state). Default: 0.
	ProducersPerBroker int
	// Consumers is how many tail consumers run. Default: 8.
	Consumers int
	// ConsumerPartitions is how many partitions each consumer tails (the
	// consumers' sets are disjoint while they fit). Default: 32.
	ConsumerPartitions int
	// FetchInterval is how often a consumer asks where the new batches
	// are. Default: 100ms.
	FetchInterval time.Duration
	// FetchAPI is what consumers ask with: "multi" (one FindBatchesMulti
	// for all their partitions), "single" (a FindBatches per partition) or
	// "both" (even consumers single, odd ones multi). Default: both.
	FetchAPI string
	// FetchMaxBytes bounds a partition's answer (max.partition.fetch.bytes).
	// Default: 1 MiB.
	FetchMaxBytes int32
	// Groups is how many KIP-848 consumer groups of one member each run,
	// group i subscribed to topic i mod Topics. Default: 4.
	Groups int
	// OffsetCommitInterval is how often a group commits the offsets of
	// its assigned partitions (auto.commit.interval.ms). Default: 5s.
	OffsetCommitInterval time.Duration
	// Duration is the length of the load, warmup included. Default: 30s.
	Duration time.Duration
	// Warmup is the first part of the load left out of rates and
	// latencies. Default: 5s.
	Warmup time.Duration
	// CommitTimeout bounds one CommitObject (ingest's CommitTimeout).
	// Default: 10s.
	CommitTimeout time.Duration
	// RequestTimeout bounds every other call. Default: 5s.
	RequestTimeout time.Duration
	// Progress is the interval of the progress line (0: none).
	// Default: 5s.
	Progress time.Duration
	// ProgressTo receives the progress lines; nil logs them to Logger.
	ProgressTo io.Writer
	// Seed seeds the random choices (0: from the clock).
	Seed int64
	// Probe, when set, observes the coordinator for the report.
	Probe *Probe
	// Logger receives the run's logs. Default: discard.
	Logger *slog.Logger
}

// DefaultConfig returns the defaults documented on Config.
func DefaultConfig() Config {
	return Config{
		Brokers:              8,
		Partitions:           1000,
		Topics:               10,
		TopicPrefix:          "fleet-",
		ObjectsPerSecond:     100,
		BatchesPerObject:     10,
		ObjectBytes:          8 << 20,
		RecordsPerBatch:      20,
		Arrivals:             ArrivalsPoisson,
		PartitionChoice:      ChoiceUniform,
		ZipfS:                1.1,
		Consumers:            8,
		ConsumerPartitions:   32,
		FetchInterval:        100 * time.Millisecond,
		FetchAPI:             FetchBoth,
		FetchMaxBytes:        1 << 20,
		Groups:               4,
		OffsetCommitInterval: 5 * time.Second,
		Duration:             30 * time.Second,
		Warmup:               5 * time.Second,
		CommitTimeout:        10 * time.Second,
		RequestTimeout:       5 * time.Second,
		Progress:             5 * time.Second,
	}
}

// Validate reports every bad field and combination at once, as a
// *loadtest.ConfigError, or nil.
func (c *Config) Validate() error {
	var p []string
	bad := func(format string, args ...any) { p = append(p, fmt.Sprintf(format, args...)) }
	if c.Brokers < 1 {
		bad("--brokers %d: at least 1", c.Brokers)
	}
	if c.Topics < 1 {
		bad("--topics %d: at least 1", c.Topics)
	}
	if c.Partitions < c.Topics {
		bad("--partitions %d: at least one per topic (--topics %d)", c.Partitions, c.Topics)
	}
	if c.TopicPrefix == "" {
		bad("--topic-prefix: empty")
	}
	if c.ObjectsPerSecond <= 0 {
		bad("--objects-per-second %g: must be > 0", c.ObjectsPerSecond)
	}
	if c.BatchesPerObject < 1 || c.BatchesPerObject > c.Partitions {
		bad("--batches-per-object %d: between 1 and --partitions (%d): a roll's batches are on distinct partitions", c.BatchesPerObject, c.Partitions)
	}
	if c.ObjectBytes < int64(c.BatchesPerObject) {
		bad("--object-bytes %d: at least a byte per batch", c.ObjectBytes)
	}
	if c.RecordsPerBatch < 1 {
		bad("--records-per-batch %d: at least 1", c.RecordsPerBatch)
	}
	if c.Arrivals != ArrivalsEven && c.Arrivals != ArrivalsPoisson {
		bad("--arrivals %q: even or poisson", c.Arrivals)
	}
	if c.PartitionChoice != ChoiceUniform && c.PartitionChoice != ChoiceZipf {
		bad("--partition-choice %q: uniform or zipf", c.PartitionChoice)
	}
	if c.PartitionChoice == ChoiceZipf && c.ZipfS <= 1 {
		bad("--zipf-s %g: must be > 1", c.ZipfS)
	}
	if c.ProducersPerBroker < 0 {
		bad("--producers-per-broker %d: 0 or more", c.ProducersPerBroker)
	}
	if c.Consumers < 0 || c.Groups < 0 {
		bad("--consumers %d, --groups %d: 0 or more", c.Consumers, c.Groups)
	}
	if c.Consumers > 0 {
		if c.ConsumerPartitions < 1 || c.ConsumerPartitions > c.Partitions {
			bad("--consumer-partitions %d: between 1 and --partitions (%d)", c.ConsumerPartitions, c.Partitions)
		}
		if c.FetchInterval <= 0 {
			bad("--fetch-interval %v: must be > 0", c.FetchInterval)
		}
		if c.FetchAPI != FetchMulti && c.FetchAPI != FetchSingle && c.FetchAPI != FetchBoth {
			bad("--fetch-api %q: multi, single or both", c.FetchAPI)
		}
		if c.FetchMaxBytes < 1 {
			bad("--fetch-max-bytes %d: must be > 0", c.FetchMaxBytes)
		}
	}
	if c.Groups > 0 && c.OffsetCommitInterval <= 0 {
		bad("--offset-commit-interval %v: must be > 0", c.OffsetCommitInterval)
	}
	if c.Duration <= 0 {
		bad("--duration %v: must be > 0", c.Duration)
	}
	if c.Warmup < 0 || c.Warmup >= c.Duration {
		bad("--warmup %v: at least 0 and shorter than --duration (%v)", c.Warmup, c.Duration)
	}
	if c.CommitTimeout <= 0 || c.RequestTimeout <= 0 {
		bad("--commit-timeout %v, --request-timeout %v: must be > 0", c.CommitTimeout, c.RequestTimeout)
	}
	if len(p) == 0 {
		return nil
	}
	return &loadtest.ConfigError{Problems: p}
}
