package loadtest

import (
	"context"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
)

const promSample = `# HELP floe_objectstore_requests_total Object-store requests.
# TYPE floe_objectstore_requests_total counter
floe_objectstore_requests_total{backend="s3",op="put"} 120
floe_objectstore_requests_total{backend="s3",op="get"} 45
floe_objectstore_requests_total{backend="s3",op="delete"} 2
floe_objectstore_requests_total{backend="dir",op="put"} 5 1700000000000
# TYPE floe_objectstore_request_duration_seconds histogram
floe_objectstore_request_duration_seconds_count{op="put"} 125
floe_objectstore_request_duration_seconds_sum{op="put"} 3.5
floe_cache_hits_total{kind="chunk"} 1e3
weird_label_value{path="a\"b\\c",op="get"} +Inf
`

func TestParsePromText(t *testing.T) {
	samples, err := parsePromText(strings.NewReader(promSample))
	if err != nil {
		t.Fatal(err)
	}
	if len(samples) != 8 {
		t.Fatalf("%d samples, want 8", len(samples))
	}
	if s := samples[0]; s.name != "floe_objectstore_requests_total" || s.value != 120 ||
		!reflect.DeepEqual(s.labels, map[string]string{"backend": "s3", "op": "put"}) {
		t.Errorf("first sample = %+v", s)
	}
	if s := samples[6]; s.name != "floe_cache_hits_total" || s.value != 1000 {
		t.Errorf("sample 6 = %+v", s)
	}
	if got := samples[7].labels["path"]; got != `a"b\c` {
		t.Errorf("escaped label = %q", got)
	}

	for _, bad := range []string{"novalue\n", "m{op=\"put\" 1\n", "m{op=put} 1\n", "m abc\n"} {
		if _, err := parsePromText(strings.NewReader(bad)); err == nil {
			t.Errorf("parse %q: no error", bad)
		}
	}
}

func TestObjectStoreOps(t *testing.T) {
	samples, err := parsePromText(strings.NewReader(promSample))
	if err != nil {
		t.Fatal(err)
	}
	// The exact name wins over the histogram count.
	puts, gets, used := objectStoreOps(samples, []string{"floe_objectstore_requests_total"})
	if puts != 125 || gets != 45 || !reflect.DeepEqual(used, []string{"floe_objectstore_requests_total"}) {
		t.Errorf("exact: puts %v gets %v used %v", puts, gets, used)
	}

	// Lenient: other names, other op spellings; byte counters left out.
	lenient := `floe_object_store_ops_total{operation="PutObject"} 7
floe_object_store_ops_total{operation="GetObject"} 9
floe_objectstore_bytes_total{op="put"} 99999
floe_objectstore_errors_total{op="get"} 4
`
	samples, err = parsePromText(strings.NewReader(lenient))
	if err != nil {
		t.Fatal(err)
	}
	puts, gets, used = objectStoreOps(samples, []string{"floe_objectstore_requests_total"})
	if puts != 7 || gets != 9 || !reflect.DeepEqual(used, []string{"floe_object_store_ops_total"}) {
		t.Errorf("lenient: puts %v gets %v used %v", puts, gets, used)
	}

	// Last resort: a histogram's _count.
	samples, _ = parsePromText(strings.NewReader(`x_objectstore_request_count{op="put"} 3` + "\n"))
	if puts, _, _ := objectStoreOps(samples, nil); puts != 3 {
		t.Errorf("count fallback: puts %v", puts)
	}
}

func TestScrapeObjectStore(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		w.Write([]byte(promSample))
	}))
	defer srv.Close()
	names := []string{"floe_objectstore_requests_total"}
	// Two brokers' endpoints are summed.
	c, err := scrapeObjectStore(context.Background(), srv.Client(), []string{srv.URL + "/metrics", srv.URL + "/metrics"}, names)
	if err != nil {
		t.Fatal(err)
	}
	if c.puts != 250 || c.gets != 90 {
		t.Errorf("puts %v gets %v, want 250 and 90", c.puts, c.gets)
	}
	if c.putSec != 7 || c.putTimed != 250 {
		t.Errorf("PUT latency sum %v count %v, want 7 and 250", c.putSec, c.putTimed)
	}
	if _, err := scrapeObjectStore(context.Background(), srv.Client(), []string{srv.URL + "/nope"}, names); err == nil {
		t.Error("scrape of a 404 succeeded")
	}
	r := objectStoreReport(objectStoreCounts{puts: 10, gets: 10}, objectStoreCounts{puts: 30, gets: 110}, gib/2, 2*gib)
	if r.Puts != 20 || r.Gets != 100 || r.PutsPerGiBProduced != 40 || r.GetsPerGiBConsumed != 50 || r.MeanPutMs != 0 {
		t.Errorf("report = %+v", r)
	}
	r = objectStoreReport(objectStoreCounts{puts: 10, putSec: 1, putTimed: 10}, objectStoreCounts{puts: 30, putSec: 2.5, putTimed: 30}, gib, gib)
	if r.MeanPutMs != 75 {
		t.Errorf("mean PUT %v ms, want 75 (1.5 s over 20 PUTs)", r.MeanPutMs)
	}
}
