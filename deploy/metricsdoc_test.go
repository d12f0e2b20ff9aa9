package deploy

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/floe-io/floe/internal/docgen"
	"github.com/floe-io/floe/internal/testkit"
	"github.com/floe-io/floe/internal/testkit/floetest"
)

// metricsDocCommand regenerates docs/metrics.md's table.
const metricsDocCommand = "FLOE_UPDATE_DOCS=1 go test ./deploy -run TestMetricsDoc"

// conditional lists the metrics that the cluster of runMonitored does not
// serve, each with the condition that creates it. docs/metrics.md lists
// them by hand, outside its generated table; TestMetricsDoc checks that it
// names each of them and that none is served (a served one belongs in the
// generated table: drop it from here).
var conditional = map[string]string{
	"floe_kafka_authentications_total":         "SASL on the Kafka listener (--sasl-mechanisms)",
	"floe_kafka_authorization_denied_total":    "ACLs (--acls-enabled) refusing a request",
	"floe_kv_denied_total":                     "/kv refusing a lookup: security or --kv-quota-rps",
	"floe_kv_null_keys_total":                  "a record without a key produced to a kv-indexed topic",
	"floe_objectstore_hedges_total":            "a hedged request (--s3-hedge-quantile, on by default with S3): the test turns hedging off, else a slow MinIO request would add it",
	"floe_cache_chunk_loads_total":             "zone cache sharing (--rack)",
	"floe_zone_peer_served_total":              "zone cache sharing (--rack) with peers of the same zone",
	"floe_zone_peer_served_bytes_total":        "zone cache sharing (--rack) with peers of the same zone",
	"floe_tiered_compaction_jobs_total":        "a compaction pass, once a compacted topic's segments are dirty enough (min.cleanable.dirty.ratio)",
	"floe_tiered_compaction_bytes_in_total":    "a compaction pass",
	"floe_tiered_compaction_bytes_out_total":   "a compaction pass",
	"floe_tiered_compaction_records_in_total":  "a compaction pass",
	"floe_tiered_compaction_records_out_total": "a compaction pass",
	"floe_table_rows_total":                    "a table job's commit (a table.enabled topic)",
	"floe_table_bytes_total":                   "a table job's commit",
	"floe_table_commits_total":                 "a table job's commit",
	"floe_table_commit_duration_seconds":       "a table job's commit",
	"floe_table_records_skipped_total":         "a table job skipping an aborted or deleted record",
	"floe_table_lag_offsets":                   "a table.enabled topic",
	"floe_table_lag_seconds":                   "a table.enabled topic",
}

// monitoredWant are the series that appear some time after the traffic of
// exercise (observable gauges read at each scrape, consolidation jobs):
// runMonitored waits for them before its last scrape.
var monitoredWant = []string{"floe_consumer_group_lag", "floe_share_group_lag", "floe_partition_compaction_lag_milliseconds", "floe_kv_lookup_duration_seconds",
	"floe_coordinator_rpc_duration_seconds", "floe_objectstore_requests_total", "floe_tiered_jobs_total"}

// runMonitored starts a cluster (MinIO, NATS, a coordinator and a broker
// process), makes it serve what the dashboard shows (produce and fetch, a
// consumer group that commits, an indexed compacted topic and a /kv
// lookup, a topic consolidated into segments) and returns both /metrics,
// by process ("broker", "coordinator"), once every family of
// monitoredWant, and each of want's names in the process it names, is
// served.
func runMonitored(t *testing.T, want map[string][]string) map[string]map[string]*dto.MetricFamily {
	t.Helper()
	c := floetest.RunClusterWith(t, 1, floetest.ClusterOptions{
		CoordinatorArgs: []string{"--kv-index-enabled", "--tier-interval", "200ms"},
		// No hedging: a request slow enough to be hedged would add
		// floe_objectstore_hedges_total, or not, by chance.
		BrokerArgs: []string{"--kv-index-enabled", "--num-partitions", "2", "--tier-poll-interval", "100ms", "--s3-hedge-quantile", "-1"},
	})
	broker := c.Brokers[0]
	exercise(t, broker.KafkaAddr, broker.HTTPAddr)

	addrs := map[string]string{"broker": broker.HTTPAddr, "coordinator": c.Coord.HTTPAddr}
	var out map[string]map[string]*dto.MetricFamily
	testkit.CheckFor(t, 60*time.Second, 100*time.Millisecond, func() error {
		out = map[string]map[string]*dto.MetricFamily{}
		anywhere := map[string]bool{}
		for proc, addr := range addrs {
			fams, err := scrapeFamilies(addr)
			if err != nil {
				return err
			}
			out[proc] = fams
			for name := range fams {
				anywhere[name] = true
			}
		}
		for _, w := range monitoredWant {
			if !anywhere[w] {
				return fmt.Errorf("%s not served yet", w)
			}
		}
		for name, procs := range want {
			for _, p := range procs {
				if out[p][name] == nil {
					return fmt.Errorf("%s not served by the %s yet", name, p)
				}
			}
		}
		return nil
	})
	return out
}

// TestMetricsDoc generates docs/metrics.md's table from the /metrics of a
// running broker and coordinator (runMonitored): every family with its
// type, unit (from its name's suffix), label names, the process serving it
// and its help. Checked, it first waits for every metric the page lists,
// so that a series created late does not make it fail.
func TestMetricsDoc(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	path := filepath.Join("..", "docs", "metrics.md")
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var want map[string][]string
	if os.Getenv(docgen.UpdateEnv) == "" {
		if want = documented(string(doc)); len(want) == 0 {
			t.Fatalf("%s: no metric in its generated table; regenerate it with\n\t%s", path, metricsDocCommand)
		}
	}
	fams := runMonitored(t, want)
	body := metricsTable(fams)
	docgen.CheckCommand(t, path, "metrics", body, metricsDocCommand)

	outside, err := docgen.ReplaceSection(string(doc), "metrics", "")
	if err != nil {
		t.Fatal(err)
	}
	for name, reason := range conditional {
		if !strings.Contains(outside, "`"+name+"`") {
			t.Errorf("docs/metrics.md does not list %s (served only with %s) outside its generated table", name, reason)
		}
		for proc, f := range fams {
			if f[name] != nil {
				t.Errorf("%s is listed as conditional (%s) but the %s serves it: drop it from the list and the page's hand-written table", name, reason, proc)
			}
		}
	}
}

var docRow = regexp.MustCompile("(?m)^\\| `([a-zA-Z0-9_:]+)` \\| [^|]+ \\| [^|]+ \\| [^|]+ \\| (broker|coordinator|both) \\|")

// documented returns the metrics of doc's generated table, with the
// processes that serve them.
func documented(doc string) map[string][]string {
	out := map[string][]string{}
	for _, m := range docRow.FindAllStringSubmatch(doc, -1) {
		switch m[2] {
		case "both":
			out[m[1]] = []string{"broker", "coordinator"}
		default:
			out[m[1]] = []string{m[2]}
		}
	}
	return out
}

// metricsTable renders the families of both processes as a Markdown table,
// floe's own first, then the Go runtime's and the process's.
func metricsTable(fams map[string]map[string]*dto.MetricFamily) string {
	type entry struct {
		typ, help string
		labels    map[string]bool
		procs     []string
	}
	entries := map[string]*entry{}
	for _, proc := range []string{"broker", "coordinator"} {
		for name, f := range fams[proc] {
			e := entries[name]
			if e == nil {
				e = &entry{typ: strings.ToLower(f.GetType().String()), help: f.GetHelp(), labels: map[string]bool{}}
				entries[name] = e
			}
			e.procs = append(e.procs, proc)
			for _, m := range f.GetMetric() {
				for _, l := range m.GetLabel() {
					e.labels[l.GetName()] = true
				}
			}
		}
	}
	names := make([]string, 0, len(entries))
	for n := range entries {
		names = append(names, n)
	}
	slices.SortFunc(names, func(a, b string) int {
		fa, fb := strings.HasPrefix(a, "floe_"), strings.HasPrefix(b, "floe_")
		if fa != fb {
			if fa {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	})
	var b strings.Builder
	b.WriteString("| metric | type | unit | labels | served by | what |\n|---|---|---|---|---|---|\n")
	for _, n := range names {
		e := entries[n]
		labels := make([]string, 0, len(e.labels))
		for l := range e.labels {
			labels = append(labels, "`"+l+"`")
		}
		slices.Sort(labels)
		lcell := strings.Join(labels, ", ")
		if lcell == "" {
			lcell = "none"
		}
		procs := e.procs[0]
		if len(e.procs) == 2 {
			procs = "both"
		}
		typ := e.typ
		if typ == "histogram" {
			typ = "histogram (`_bucket`, `_sum`, `_count`)"
		} else if typ == "summary" {
			typ = "summary (`_sum`, `_count`)"
		}
		help := strings.ReplaceAll(strings.ReplaceAll(e.help, "|", `\|`), "\n", " ")
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s | %s |\n", n, typ, unit(n), lcell, procs, help)
	}
	return b.String()
}

// unit reads a metric's unit from its name's suffix, as Prometheus names
// it (counters end in _total after it).
func unit(name string) string {
	name = strings.TrimSuffix(name, "_total")
	for _, u := range []string{"seconds", "milliseconds", "bytes", "ratio", "percent", "threads"} {
		if strings.HasSuffix(name, "_"+u) {
			return u
		}
	}
	return "none"
}
