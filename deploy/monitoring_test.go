package deploy

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// absent lists the metrics the dashboard or the rules name that the test's
// cluster cannot be made to serve, each with the reason. Anything else they
// name must be on a broker's or the coordinator's /metrics.
var absent = map[string]string{
	"up": "Prometheus's own series for each scrape target, not floe's",
	"floe_kafka_authentications_total": "counted only on a listener with SASL (--sasl-mechanisms); " +
		"the test's cluster runs without security",
}

// expr is one PromQL expression of the dashboard or the rules, and where.
type expr struct {
	where string
	query string
}

// dashboardExprs returns every PromQL expression of the Grafana dashboard's
// panels (rows' nested panels too), with Grafana's interval variables
// replaced by durations so that they parse.
func dashboardExprs(t *testing.T) []expr {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("grafana", "floe.json"))
	if err != nil {
		t.Fatal(err)
	}
	type target struct {
		RefID string `json:"refId"`
		Expr  string `json:"expr"`
	}
	type panel struct {
		Title   string   `json:"title"`
		Type    string   `json:"type"`
		Targets []target `json:"targets"`
		Panels  []panel  `json:"panels"`
	}
	var d struct {
		UID    string  `json:"uid"`
		Title  string  `json:"title"`
		Panels []panel `json:"panels"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("grafana/floe.json: %v", err)
	}
	if d.UID == "" || d.Title == "" {
		t.Errorf("grafana/floe.json: no uid or title")
	}
	vars := strings.NewReplacer("$__rate_interval", "5m", "$__interval", "1m", "$__range", "1h")
	var out []expr
	var walk func([]panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			for _, tg := range p.Targets {
				if tg.Expr == "" {
					t.Errorf("dashboard panel %q target %s has no expr", p.Title, tg.RefID)
					continue
				}
				out = append(out, expr{where: fmt.Sprintf("panel %q %s", p.Title, tg.RefID), query: vars.Replace(tg.Expr)})
			}
			if p.Type != "row" && len(p.Targets) == 0 {
				t.Errorf("dashboard panel %q has no query", p.Title)
			}
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	return out
}

// ruleExprs parses the Prometheus rules file with rulefmt (strict about
// unknown fields, which also parses each expression and template) and
// returns its expressions and the names its recording rules define.
func ruleExprs(t *testing.T) ([]expr, map[string]bool) {
	t.Helper()
	groups, errs := rulefmt.ParseFile(filepath.Join("prometheus", "floe-rules.yaml"), false,
		model.UTF8Validation, parser.NewParser(parser.Options{}), slog.New(slog.DiscardHandler))
	for _, err := range errs {
		t.Errorf("prometheus/floe-rules.yaml: %v", err)
	}
	if groups == nil {
		t.FailNow()
	}
	var out []expr
	recorded := map[string]bool{}
	alerts := 0
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			name := r.Record
			if name == "" {
				name = r.Alert
				alerts++
				if r.Labels["severity"] == "" || r.Annotations["summary"] == "" {
					t.Errorf("alert %s: no severity label or summary", r.Alert)
				}
			} else {
				recorded[r.Record] = true
			}
			out = append(out, expr{where: "rule " + name, query: r.Expr})
		}
	}
	if alerts == 0 {
		t.Errorf("prometheus/floe-rules.yaml has no alerts")
	}
	return out, recorded
}

// selectors returns the vector selectors of a PromQL expression: the metric
// name and the label names each matches on.
func selectors(t *testing.T, e expr) map[string][]string {
	t.Helper()
	ast, err := parser.NewParser(parser.Options{}).ParseExpr(e.query)
	if err != nil {
		t.Errorf("%s: %v\n%s", e.where, err, e.query)
		return nil
	}
	out := map[string][]string{}
	parser.Inspect(ast, func(n parser.Node, _ []parser.Node) error {
		vs, ok := n.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		name := vs.Name
		var labels []string
		for _, m := range vs.LabelMatchers {
			switch m.Name {
			case model.MetricNameLabel:
				name = m.Value
			default:
				labels = append(labels, m.Name)
			}
		}
		if name == "" {
			t.Errorf("%s: a selector without a metric name: %s", e.where, vs)
			return nil
		}
		out[name] = append(out[name], labels...)
		return nil
	})
	return out
}

// TestMonitoringQueriesParse parses every query of the dashboard and the
// rules, without a cluster.
func TestMonitoringQueriesParse(t *testing.T) {
	exprs := dashboardExprs(t)
	rules, _ := ruleExprs(t)
	if len(exprs) < 20 {
		t.Errorf("the dashboard has %d queries", len(exprs))
	}
	for _, e := range append(exprs, rules...) {
		if len(selectors(t, e)) == 0 {
			t.Errorf("%s selects no metric: %s", e.where, e.query)
		}
	}
}

// TestMonitoringMetricsExist scrapes the /metrics of a running broker and
// coordinator (runMonitored) and checks that every metric the dashboard
// and the rules select exists there, with the labels they match.
func TestMonitoringMetricsExist(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	exprs := dashboardExprs(t)
	rules, recorded := ruleExprs(t)
	exprs = append(exprs, rules...)

	fams := runMonitored(t, nil)
	served := map[string]map[string]bool{}
	for _, f := range fams {
		addServed(f, served)
	}

	checked := map[string]bool{}
	for _, e := range exprs {
		for name, labels := range selectors(t, e) {
			checked[name] = true
			if recorded[name] {
				continue // a recording rule of the rules file
			}
			if reason, ok := absent[name]; ok {
				if served[name] != nil {
					t.Errorf("%s is listed as absent (%s) but is served: drop it from the list", name, reason)
				}
				continue
			}
			have := served[name]
			if have == nil {
				t.Errorf("%s: %s is on no /metrics (%s)", e.where, name, similar(name, served))
				continue
			}
			for _, l := range labels {
				if !have[l] && l != "job" && l != "instance" {
					t.Errorf("%s: %s has no label %s (has %v)", e.where, name, l, keys(have))
				}
			}
		}
	}
	for name := range absent {
		if !checked[name] {
			t.Errorf("%s is listed as absent but nothing selects it", name)
		}
	}
	t.Logf("checked %d metrics of %d queries", len(checked), len(exprs))
}

// exercise produces, consumes with a committing group, and looks a key up.
func exercise(t *testing.T, kafkaAddr, httpAddr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(kafkaAddr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 2, -1, map[string]*string{
		"cleanup.policy": kadm.StringPtr("compact"), "kv.index.enabled": kadm.StringPtr("true"),
	}, "users"); err != nil {
		t.Fatalf("create topic users: %v", err)
	}
	// orders is consolidated into segments a second after it is written.
	if _, err := adm.CreateTopic(ctx, 2, -1, map[string]*string{"local.retention.ms": kadm.StringPtr("1000")}, "orders"); err != nil {
		t.Fatalf("create topic orders: %v", err)
	}
	var recs []*kgo.Record
	for i := range 50 {
		recs = append(recs,
			&kgo.Record{Topic: "users", Key: fmt.Appendf(nil, "user-%d", i%10), Value: fmt.Appendf(nil, "v%d", i)},
			&kgo.Record{Topic: "orders", Key: fmt.Appendf(nil, "o-%d", i), Value: []byte("order")})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}

	// A group that reads part of orders and commits: it lags.
	cons, err := kgo.NewClient(kgo.SeedBrokers(kafkaAddr), kgo.ConsumerGroup("billing"), kgo.ConsumeTopics("orders"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit(), kgo.FetchMaxBytes(1))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	got := 0
	for got == 0 {
		fs := cons.PollRecords(ctx, 5)
		if err := fs.Err0(); err != nil {
			t.Fatalf("consume: %v", err)
		}
		got += fs.NumRecords()
		if err := cons.CommitUncommittedOffsets(ctx); err != nil {
			t.Fatalf("commit: %v", err)
		}
	}
	// A share group that reads some of orders and accepts it.
	alter := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, "dispatch"
	rc := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	rc.Name, rc.Value = "share.auto.offset.reset", kmsg.StringPtr("earliest")
	res.Configs = append(res.Configs, rc)
	alter.Resources = append(alter.Resources, res)
	if ar, err := alter.RequestWith(ctx, cl); err != nil || ar.Resources[0].ErrorCode != 0 {
		t.Fatalf("share.auto.offset.reset: %v %+v", err, ar)
	}
	share, err := kgo.NewClient(kgo.SeedBrokers(kafkaAddr), kgo.ShareGroup("dispatch"), kgo.ConsumeTopics("orders"))
	if err != nil {
		t.Fatal(err)
	}
	defer share.Close()
	for n := 0; n == 0; {
		fs := share.PollRecords(ctx, 5)
		if err := fs.Err0(); err != nil {
			t.Fatalf("share consume: %v", err)
		}
		for _, r := range fs.Records() {
			r.Ack(kgo.AckAccept)
		}
		n += fs.NumRecords()
	}
	if err := share.FlushAcks(ctx); err != nil {
		t.Fatalf("share acks: %v", err)
	}
	// And the whole of users, without a group.
	all, err := kgo.NewClient(kgo.SeedBrokers(kafkaAddr), kgo.ConsumeTopics("users"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer all.Close()
	for n := 0; n < 50; {
		fs := all.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatalf("consume users: %v", err)
		}
		n += fs.NumRecords()
	}

	resp, err := http.Get("http://" + httpAddr + "/kv/users/user-3")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || string(body) != "v43" {
		t.Fatalf("GET /kv/users/user-3: %s %q, want 200 v43", resp.Status, body)
	}
}

// scrapeFamilies reads one /metrics.
func scrapeFamilies(httpAddr string) (map[string]*dto.MetricFamily, error) {
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Get("http://" + httpAddr + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("%s/metrics: %w", httpAddr, err)
	}
	return fams, nil
}

// addServed adds one /metrics's families to served: each sample name
// (histograms' _bucket, _sum and _count, as PromQL sees them) with its
// label names.
func addServed(fams map[string]*dto.MetricFamily, served map[string]map[string]bool) {
	for name, f := range fams {
		names := []string{name}
		switch f.GetType() {
		case dto.MetricType_HISTOGRAM:
			names = []string{name + "_bucket", name + "_sum", name + "_count"}
		case dto.MetricType_SUMMARY:
			names = append(names, name+"_sum", name+"_count")
		}
		for _, n := range names {
			if served[n] == nil {
				served[n] = map[string]bool{}
			}
			for _, m := range f.GetMetric() {
				for _, l := range m.GetLabel() {
					served[n][l.GetName()] = true
				}
				if n == name+"_bucket" {
					served[n]["le"] = true
				}
			}
		}
	}
}

// similar names the served metrics sharing name's first three words, to
// make a renamed metric easy to spot.
func similar(name string, served map[string]map[string]bool) string {
	parts := strings.SplitN(name, "_", 4)
	prefix := strings.Join(parts[:min(3, len(parts))], "_")
	var out []string
	for n := range served {
		if strings.HasPrefix(n, prefix) {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	if len(out) == 0 {
		return "nothing similar is served"
	}
	return "served: " + strings.Join(out, ", ")
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
