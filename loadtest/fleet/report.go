package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/floe-io/floe/coordinator/rpc"
	"github.com/floe-io/floe/loadtest"
)

// Report is the outcome of a run; WriteJSON writes it as JSON (the field
// tags are the schema) and WriteText as a short table.
type Report struct {
	// StartedAt is the start of the load, RFC 3339 with nanoseconds.
	StartedAt  string  `json:"started_at"`
	ElapsedSec float64 `json:"elapsed_s"`
	// Interrupted is true when the run was stopped early.
	Interrupted bool           `json:"interrupted"`
	Setup       Setup          `json:"setup"`
	Commits     CommitReport   `json:"commits"`
	Fetches     FetchReport    `json:"fetches"`
	Groups      GroupReport    `json:"groups"`
	Coordinator *ProcessReport `json:"coordinator,omitempty"`
	Log         *LogReport     `json:"log,omitempty"`
	State       *StateReport   `json:"state,omitempty"`
	// SimulatorCPUSec is the simulator's own CPU time over the load: on
	// one machine it competes with the coordinator for the cores.
	SimulatorCPUSec float64 `json:"simulator_cpu_s,omitempty"`
	// Errors counts errors by kind, "<call>: <kind>".
	Errors      map[string]int64 `json:"errors"`
	ErrorsTotal int64            `json:"errors_total"`
}

// Setup echoes what was run.
type Setup struct {
	Brokers              int     `json:"brokers"`
	Partitions           int     `json:"partitions"`
	Topics               int     `json:"topics"`
	ObjectsPerSecond     float64 `json:"objects_per_s"`
	BatchesPerObject     int     `json:"batches_per_object"`
	ObjectBytes          int64   `json:"object_bytes"`
	RecordsPerBatch      int     `json:"records_per_batch"`
	Arrivals             string  `json:"arrivals"`
	PartitionChoice      string  `json:"partition_choice"`
	ProducersPerBroker   int     `json:"producers_per_broker"`
	Consumers            int     `json:"consumers"`
	ConsumerPartitions   int     `json:"consumer_partitions"`
	FetchIntervalMs      float64 `json:"fetch_interval_ms"`
	FetchAPI             string  `json:"fetch_api"`
	Groups               int     `json:"groups"`
	OffsetCommitInterval float64 `json:"offset_commit_interval_s"`
	DurationSec          float64 `json:"duration_s"`
	WarmupSec            float64 `json:"warmup_s"`
	Seed                 int64   `json:"seed"`
}

func setupOf(c Config) Setup {
	return Setup{
		Brokers: c.Brokers, Partitions: c.Partitions, Topics: c.Topics, ObjectsPerSecond: c.ObjectsPerSecond,
		BatchesPerObject: c.BatchesPerObject, ObjectBytes: c.ObjectBytes, RecordsPerBatch: c.RecordsPerBatch,
		Arrivals: c.Arrivals, PartitionChoice: c.PartitionChoice, ProducersPerBroker: c.ProducersPerBroker,
		Consumers: c.Consumers, ConsumerPartitions: c.ConsumerPartitions, FetchIntervalMs: ms(c.FetchInterval),
		FetchAPI: c.FetchAPI, Groups: c.Groups, OffsetCommitInterval: c.OffsetCommitInterval.Seconds(),
		DurationSec: c.Duration.Seconds(), WarmupSec: c.Warmup.Seconds(), Seed: c.Seed,
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// CommitReport covers the brokers' commits.
type CommitReport struct {
	// Objects, Batches and Records were committed over the whole load,
	// warmup included (Batches and Records: those the coordinator
	// accepted). Bytes is the objects' summed sizes.
	Objects int64 `json:"objects"`
	Batches int64 `json:"batches"`
	Records int64 `json:"records"`
	Bytes   int64 `json:"bytes"`
	// HighWatermarksBefore is the sum of the partitions' high watermarks
	// before the load: after it, the coordinator's sum is this plus
	// Records.
	HighWatermarksBefore int64 `json:"high_watermarks_before"`
	// WindowSec is the measured window, warmup end to load end.
	WindowSec float64 `json:"window_s"`
	// OfferedPerSec is the objects that arrived in the window per second
	// (the target rate, as drawn); CommitsPerSec those committed in it,
	// CoordsPerSec their batches: the sustained rates.
	OfferedPerSec float64 `json:"offered_per_s"`
	CommitsPerSec float64 `json:"commits_per_s"`
	CoordsPerSec  float64 `json:"coords_per_s"`
	// Backlog is the objects that arrived before the end and were never
	// sent: the brokers had fallen that far behind.
	Backlog int64 `json:"backlog"`
	// Latency is from an object's arrival to its commit's answer, as a
	// broker's producers see it (waiting for the commits before it
	// included); RPC is CommitObject's own round trip.
	Latency loadtest.LatencyStats `json:"latency"`
	RPC     loadtest.LatencyStats `json:"rpc"`
}

// FetchReport covers the tail consumers.
type FetchReport struct {
	FindBatches             int64                 `json:"find_batches"`
	FindBatchesCoords       int64                 `json:"find_batches_coords"`
	FindBatchesLatency      loadtest.LatencyStats `json:"find_batches_latency"`
	FindBatchesMulti        int64                 `json:"find_batches_multi"`
	MultiPartitions         int64                 `json:"find_batches_multi_partitions"`
	MultiCoords             int64                 `json:"find_batches_multi_coords"`
	FindBatchesMultiLatency loadtest.LatencyStats `json:"find_batches_multi_latency"`
}

// GroupReport covers the consumer groups.
type GroupReport struct {
	Heartbeats          int64                 `json:"heartbeats"`
	HeartbeatLatency    loadtest.LatencyStats `json:"heartbeat_latency"`
	OffsetCommits       int64                 `json:"offset_commits"`
	CommittedPartitions int64                 `json:"committed_partitions"`
	OffsetCommitLatency loadtest.LatencyStats `json:"offset_commit_latency"`
}

// ProcessReport is the coordinator process's resources.
type ProcessReport struct {
	PID int `json:"pid"`
	// CPUSec is the CPU time it spent during the load, Cores that over
	// the load's wall time.
	CPUSec float64 `json:"cpu_s"`
	Cores  float64 `json:"cores"`
	// RSS before the topics were created, after, at the end, and its peak
	// (VmHWM, its whole life).
	RSSBeforeTopics int64 `json:"rss_before_topics"`
	RSSBeforeLoad   int64 `json:"rss_before_load"`
	RSSEnd          int64 `json:"rss_end"`
	RSSPeak         int64 `json:"rss_peak"`
	// RSSPerPartition is what creating the topics added, per partition;
	// RSSPerObject what the load added, per committed object (both
	// include whatever the Go runtime has not given back).
	RSSPerPartition float64 `json:"rss_per_partition"`
	RSSPerObject    float64 `json:"rss_per_object"`
}

// LogReport is what the load added to the coordinator's log stream.
type LogReport struct {
	Stream            string  `json:"stream"`
	Bytes             uint64  `json:"bytes"`
	Messages          uint64  `json:"messages"`
	BytesPerCommit    float64 `json:"bytes_per_commit"`
	MessagesPerCommit float64 `json:"messages_per_commit"`
}

// StateReport is the coordinator's state after the load.
type StateReport struct {
	PebbleBytes   float64 `json:"pebble_bytes"`
	MetadataBytes float64 `json:"metadata_bytes"`
	// Per partition and per batch coordinate the coordinator holds (the
	// batches this run committed plus those before it, if any).
	PebbleBytesPerPartition   float64 `json:"pebble_bytes_per_partition"`
	MetadataBytesPerPartition float64 `json:"metadata_bytes_per_partition"`
	MetadataBytesPerBatch     float64 `json:"metadata_bytes_per_batch"`
}

// fill sets the report's counts and latencies.
func (r *runner) fill(rep *Report) {
	window := r.end.Sub(r.warmEnd).Seconds()
	var before int64
	for _, h := range r.start {
		before += h
	}
	rep.Commits = CommitReport{
		Objects: r.c.commits.Load(), Batches: r.c.batches.Load(), Records: r.c.records.Load(), Bytes: r.c.bytes.Load(),
		HighWatermarksBefore: before,
		WindowSec:            window,
		OfferedPerSec:        perSec(r.c.offeredMeasured.Load(), window),
		CommitsPerSec:        perSec(r.c.measured.Load(), window),
		CoordsPerSec:         perSec(r.c.measuredBatches.Load(), window),
		Backlog:              r.c.backlog.Load(),
		Latency:              loadtest.MergedStats(r.commitLat[:]...),
		RPC:                  loadtest.MergedStats(r.commitRPC[:]...),
	}
	rep.Fetches = FetchReport{
		FindBatches: r.f.calls.Load(), FindBatchesCoords: r.f.coords.Load(), FindBatchesLatency: r.findLat.Stats(),
		FindBatchesMulti: r.f.multiCalls.Load(), MultiPartitions: r.f.multiPartitions.Load(), MultiCoords: r.f.multiCoords.Load(),
		FindBatchesMultiLatency: r.multiLat.Stats(),
	}
	rep.Groups = GroupReport{
		Heartbeats: r.g.heartbeats.Load(), HeartbeatLatency: r.hbLat.Stats(),
		OffsetCommits: r.g.offsetCommits.Load(), CommittedPartitions: r.g.committedPartitions.Load(),
		OffsetCommitLatency: r.ocLat.Stats(),
	}
}

// probeAfter adds what the probe observes after the load.
func (r *runner) probeAfter(ctx context.Context, rep *Report, p *Probe, beforeTopics, beforeLoad ProcessStats, logBefore LogStats, elapsed time.Duration) {
	if p.PID > 0 {
		if st, err := p.coordinator(); err != nil {
			r.log.Warn("no coordinator process stats", "err", err)
		} else {
			cpu := st.CPU - beforeLoad.CPU
			rep.Coordinator = &ProcessReport{
				PID: p.PID, CPUSec: cpu.Seconds(), Cores: cpu.Seconds() / elapsed.Seconds(),
				RSSBeforeTopics: beforeTopics.RSS, RSSBeforeLoad: beforeLoad.RSS, RSSEnd: st.RSS, RSSPeak: st.PeakRSS,
				RSSPerPartition: float64(beforeLoad.RSS-beforeTopics.RSS) / float64(r.cfg.Partitions),
				RSSPerObject:    float64(st.RSS-beforeLoad.RSS) / float64(max(1, rep.Commits.Objects)),
			}
		}
	}
	if p.Log != nil && logBefore.Stream != "" {
		if st, err := p.Log(ctx); err != nil {
			r.log.Warn("no log stats", "err", err)
		} else if st.Bytes >= logBefore.Bytes && st.Messages >= logBefore.Messages {
			// A snapshot's purge would shrink the stream: then there is no
			// figure.
			n := float64(max(1, rep.Commits.Objects))
			lr := &LogReport{Stream: st.Stream, Bytes: st.Bytes - logBefore.Bytes, Messages: st.Messages - logBefore.Messages}
			lr.BytesPerCommit, lr.MessagesPerCommit = float64(lr.Bytes)/n, float64(lr.Messages)/n
			rep.Log = lr
		}
	}
	if p.MetricsURL != "" {
		sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		if st, err := scrapeState(sctx, p.MetricsURL); err != nil {
			r.log.Warn("no coordinator state stats", "err", err)
		} else {
			parts := float64(r.cfg.Partitions)
			rep.State = &StateReport{
				PebbleBytes: st.PebbleBytes, MetadataBytes: st.MetadataBytes,
				PebbleBytesPerPartition: st.PebbleBytes / parts, MetadataBytesPerPartition: st.MetadataBytes / parts,
				MetadataBytesPerBatch: st.MetadataBytes / float64(max(1, rep.Commits.Batches)),
			}
		}
	}
}

func perSec(n int64, sec float64) float64 {
	if sec <= 0 {
		return 0
	}
	return float64(n) / sec
}

// WriteJSON writes the report to path, indented.
func (r *Report) WriteJSON(path string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return nil
}

// WriteText prints the report's headline figures.
func (r *Report) WriteText(w io.Writer) error {
	var b strings.Builder
	s, c := r.Setup, r.Commits
	fmt.Fprintf(&b, "floe fleetsim  brokers=%d partitions=%d topics=%d objects/s=%g batches/object=%d consumers=%d groups=%d elapsed=%.1fs",
		s.Brokers, s.Partitions, s.Topics, s.ObjectsPerSecond, s.BatchesPerObject, s.Consumers, s.Groups, r.ElapsedSec)
	if r.Interrupted {
		b.WriteString(" (interrupted)")
	}
	b.WriteString("\n")
	fmt.Fprintf(&b, "commits      %.0f/s of %.0f/s offered, %.0f coords/s, backlog %d objects (%d objects, %d batches in all)\n",
		c.CommitsPerSec, c.OfferedPerSec, c.CoordsPerSec, c.Backlog, c.Objects, c.Batches)
	lat := func(name string, l loadtest.LatencyStats) {
		fmt.Fprintf(&b, "%-12s n=%d p50 %.2f ms  p99 %.2f ms  p99.9 %.2f ms  max %.2f ms\n", name, l.Count, l.P50Ms, l.P99Ms, l.P999Ms, l.MaxMs)
	}
	lat("commit", c.Latency)
	lat("commit rpc", c.RPC)
	lat("find", r.Fetches.FindBatchesLatency)
	lat("find multi", r.Fetches.FindBatchesMultiLatency)
	lat("heartbeat", r.Groups.HeartbeatLatency)
	lat("offset commit", r.Groups.OffsetCommitLatency)
	if p := r.Coordinator; p != nil {
		fmt.Fprintf(&b, "coordinator  %.1f CPU s (%.2f cores), RSS %.0f MiB before topics, %.0f before load, %.0f at end (peak %.0f): %.0f B/partition, %.0f B/object\n",
			p.CPUSec, p.Cores, mib(p.RSSBeforeTopics), mib(p.RSSBeforeLoad), mib(p.RSSEnd), mib(p.RSSPeak), p.RSSPerPartition, p.RSSPerObject)
		if c.Objects > 0 && c.Batches > 0 {
			// Over every commit of the load, as the CPU seconds are.
			fmt.Fprintf(&b, "coordinator  %.0f CPU µs a commit, %.1f a coordinate (all %d commits)\n",
				p.CPUSec*1e6/float64(c.Objects), p.CPUSec*1e6/float64(c.Batches), c.Objects)
		}
	}
	if l := r.Log; l != nil {
		fmt.Fprintf(&b, "log          %s: %.0f bytes and %.2f messages per commit\n", l.Stream, l.BytesPerCommit, l.MessagesPerCommit)
	}
	if st := r.State; st != nil {
		fmt.Fprintf(&b, "state        pebble %.1f MiB (%.0f B/partition), metadata %.1f MiB (%.0f B/partition, %.1f B/batch)\n",
			st.PebbleBytes/(1<<20), st.PebbleBytesPerPartition, st.MetadataBytes/(1<<20), st.MetadataBytesPerPartition, st.MetadataBytesPerBatch)
	}
	if r.SimulatorCPUSec > 0 {
		fmt.Fprintf(&b, "simulator    %.1f CPU s\n", r.SimulatorCPUSec)
	}
	if r.ErrorsTotal == 0 {
		b.WriteString("errors       none\n")
	} else {
		kinds := make([]string, 0, len(r.Errors))
		for k := range r.Errors {
			kinds = append(kinds, k)
		}
		slices.Sort(kinds)
		fmt.Fprintf(&b, "errors       %d\n", r.ErrorsTotal)
		for _, k := range kinds {
			fmt.Fprintf(&b, "  %s: %d\n", k, r.Errors[k])
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func mib(n int64) float64 { return float64(n) / (1 << 20) }

// addError counts err under "<call>: <kind>": the rpc's classes, else
// loadtest.ErrorKind's.
func addError(e *loadtest.ErrorCounts, call string, err error) {
	switch {
	case errors.Is(err, rpc.ErrUnavailable):
		e.AddKind(call + ": coordinator unavailable")
	case errors.Is(err, rpc.ErrInternal):
		e.AddKind(call + ": coordinator internal error")
	default:
		e.Add(call, err)
	}
}
