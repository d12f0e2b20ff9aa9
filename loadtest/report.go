package loadtest

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
)

// Report is the outcome of a run; WriteText prints it as a table and
// WriteJSON as JSON (the field tags are the JSON schema).
type Report struct {
	// StartedAt is the start of the load phase, RFC 3339 with nanoseconds.
	StartedAt string `json:"started_at"`
	// ElapsedSec is the wall time of the load and drain phases.
	ElapsedSec float64 `json:"elapsed_s"`
	// Interrupted is true when the run was stopped early (SIGINT).
	Interrupted bool          `json:"interrupted"`
	Setup       ReportSetup   `json:"setup"`
	Produce     ProduceReport `json:"produce"`
	Consume     ConsumeReport `json:"consume"`
	// KV is set when lookups ran.
	KV *KVReport `json:"kv,omitempty"`
	// Errors counts errors by kind, "<source>: <kind>".
	Errors      map[string]int64 `json:"errors"`
	ErrorsTotal int64            `json:"errors_total"`
	// ObjectStore is set when metrics were scraped.
	ObjectStore *ObjectStoreReport `json:"object_store,omitempty"`
}

// ReportSetup echoes what was run.
type ReportSetup struct {
	Brokers     []string `json:"brokers"`
	Topic       string   `json:"topic"`
	Partitions  int      `json:"partitions"`
	Producers   int      `json:"producers"`
	Consumers   int      `json:"consumers"`
	ReaderSets  int      `json:"reader_sets"`
	Group       string   `json:"group,omitempty"`
	ShareGroup  string   `json:"share_group,omitempty"`
	FromStart   bool     `json:"from_start"`
	Rate        float64  `json:"rate"`
	RecordSize  int      `json:"record_size"`
	Payload     string   `json:"payload"`
	KeySpace    int      `json:"key_space"`
	Acks        string   `json:"acks"`
	Compression string   `json:"compression"`
	Idempotent  bool     `json:"idempotent"`
	LingerMs    float64  `json:"linger_ms"`
	MaxInflight int      `json:"max_inflight"`
	DurationSec float64  `json:"duration_s"`
	WarmupSec   float64  `json:"warmup_s"`
	Records     int64    `json:"records"`
}

// ProduceReport covers the producers. Bytes count keys and values.
type ProduceReport struct {
	// Records were acknowledged, warmup included.
	Records int64 `json:"records"`
	Bytes   int64 `json:"bytes"`
	// Aborted records were failed by the run's own shutdown (drain timeout).
	Aborted int64 `json:"aborted"`
	// MeasuredRecords were sent after the warmup; throughput and latency
	// cover only them, over WindowSec (warmup end to last ack).
	MeasuredRecords int64        `json:"measured_records"`
	WindowSec       float64      `json:"window_s"`
	RecordsPerSec   float64      `json:"records_per_s"`
	MiBPerSec       float64      `json:"mib_per_s"`
	Latency         LatencyStats `json:"latency"`
}

// ConsumeReport covers all consumers of all reader sets. Bytes count keys
// and values.
type ConsumeReport struct {
	// Records were received by all reader sets, warmup included.
	Records int64 `json:"records"`
	Bytes   int64 `json:"bytes"`
	// MeasuredRecords were received after the warmup; throughput covers
	// them over WindowSec (warmup end to last receipt).
	MeasuredRecords int64   `json:"measured_records"`
	WindowSec       float64 `json:"window_s"`
	RecordsPerSec   float64 `json:"records_per_s"`
	MiBPerSec       float64 `json:"mib_per_s"`
	// CaughtUp is true when every reader set reached the final high
	// watermarks before the drain timeout.
	CaughtUp bool `json:"caught_up"`
	// EndToEnd is send time (header lt-ts) to receipt, for records sent
	// after the warmup.
	EndToEnd LatencyStats `json:"end_to_end"`
}

// KVReport covers GET /kv lookups; 404s are misses, not errors.
type KVReport struct {
	Lookups       int64        `json:"lookups"`
	Hits          int64        `json:"hits"`
	Misses        int64        `json:"misses"`
	LookupsPerSec float64      `json:"lookups_per_s"`
	Latency       LatencyStats `json:"latency"`
}

// ObjectStoreReport is the change of the object-store request counters over
// the whole run, warmup included, per GiB of the run's produced and consumed
// bytes.
type ObjectStoreReport struct {
	Puts               float64 `json:"puts"`
	Gets               float64 `json:"gets"`
	PutsPerGiBProduced float64 `json:"puts_per_gib_produced"`
	GetsPerGiBConsumed float64 `json:"gets_per_gib_consumed"`
	// MeanPutMs is the mean PUT latency over the run, from the brokers'
	// PUT latency histograms (0 when they have none): what a produce
	// waits on the store after its object rolls.
	MeanPutMs float64  `json:"mean_put_ms,omitempty"`
	Series    []string `json:"series"`
}

const mib = 1 << 20

// perSec divides safely.
func perSec(n float64, sec float64) float64 {
	if sec <= 0 {
		return 0
	}
	return n / sec
}

// WriteJSON writes the report to path, indented.
func (r *Report) WriteJSON(path string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// WriteText prints the report as aligned tables.
func (r *Report) WriteText(w io.Writer) error {
	s := r.Setup
	var b strings.Builder
	fmt.Fprintf(&b, "floe loadtest  topic=%s partitions=%d producers=%d consumers=%d reader-sets=%d acks=%s compression=%s record-size=%d elapsed=%.1fs",
		s.Topic, s.Partitions, s.Producers, s.Consumers, s.ReaderSets, s.Acks, s.Compression, s.RecordSize, r.ElapsedSec)
	if s.ShareGroup != "" {
		fmt.Fprintf(&b, " share-group=%s", s.ShareGroup)
	}
	if r.Interrupted {
		b.WriteString(" (interrupted)")
	}
	b.WriteString("\n\n")

	label := func(name string) string { return fmt.Sprintf("%-10s", name) } // left-aligned in right-aligned tables
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "%s\trecords\tmeasured\twindow s\trecords/s\tMiB/s\t\n", label("throughput"))
	fmt.Fprintf(tw, "%s\t%d\t%d\t%.2f\t%.0f\t%.2f\t\n", label("produce"), r.Produce.Records, r.Produce.MeasuredRecords, r.Produce.WindowSec, r.Produce.RecordsPerSec, r.Produce.MiBPerSec)
	fmt.Fprintf(tw, "%s\t%d\t%d\t%.2f\t%.0f\t%.2f\t\n", label("consume"), r.Consume.Records, r.Consume.MeasuredRecords, r.Consume.WindowSec, r.Consume.RecordsPerSec, r.Consume.MiBPerSec)
	if r.KV != nil {
		fmt.Fprintf(tw, "%s\t%d\t%d\t\t%.0f\t-\t\n", label("kv lookup"), r.KV.Lookups, r.KV.Latency.Count, r.KV.LookupsPerSec)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	b.WriteString("\n")
	tw = tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "%s\tcount\tp50\tp90\tp99\tp99.9\tmax\t\n", label("latency ms"))
	row := func(name string, l LatencyStats) {
		fmt.Fprintf(tw, "%s\t%d\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\t\n", label(name), l.Count, l.P50Ms, l.P90Ms, l.P99Ms, l.P999Ms, l.MaxMs)
	}
	row("produce", r.Produce.Latency)
	row("end-to-end", r.Consume.EndToEnd)
	if r.KV != nil {
		row("kv lookup", r.KV.Latency)
	}
	if err := tw.Flush(); err != nil {
		return err
	}

	b.WriteString("\n")
	if r.KV != nil {
		fmt.Fprintf(&b, "kv lookups: %d hits, %d misses (404)\n", r.KV.Hits, r.KV.Misses)
	}
	if s.Consumers > 0 && s.Producers > 0 && !r.Consume.CaughtUp {
		b.WriteString("consumers did not catch up with the producers before the drain timeout\n")
	}
	if r.Produce.Aborted > 0 {
		fmt.Fprintf(&b, "aborted at shutdown: %d records\n", r.Produce.Aborted)
	}
	if r.ObjectStore != nil {
		o := r.ObjectStore
		meanPut := ""
		if o.MeanPutMs > 0 {
			meanPut = fmt.Sprintf(", mean PUT %.1f ms", o.MeanPutMs)
		}
		fmt.Fprintf(&b, "object store: %.0f PUTs (%.1f per GiB produced%s), %.0f GETs (%.1f per GiB consumed) from %s\n",
			o.Puts, o.PutsPerGiBProduced, meanPut, o.Gets, o.GetsPerGiBConsumed, strings.Join(o.Series, ", "))
	}
	if r.ErrorsTotal == 0 {
		b.WriteString("errors: none\n")
	} else {
		fmt.Fprintf(&b, "errors: %d\n", r.ErrorsTotal)
		kinds := make([]string, 0, len(r.Errors))
		for k := range r.Errors {
			kinds = append(kinds, k)
		}
		slices.Sort(kinds)
		etw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		for _, k := range kinds {
			fmt.Fprintf(etw, "  %s\t%d\n", k, r.Errors[k])
		}
		if err := etw.Flush(); err != nil {
			return err
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}
