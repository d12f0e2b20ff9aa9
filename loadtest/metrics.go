package loadtest

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// scrapeTimeout bounds one /metrics scrape.
const scrapeTimeout = 5 * time.Second

// sample is one line of the Prometheus text format.
type sample struct {
	name   string
	labels map[string]string
	value  float64
}

// parsePromText parses the Prometheus text exposition format (0.0.4, and
// the sample lines of OpenMetrics). Comments, blank lines and the optional
// timestamp are skipped; a malformed line is an error.
func parsePromText(r io.Reader) ([]sample, error) {
	var out []sample
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for line := 1; sc.Scan(); line++ {
		s := strings.TrimSpace(sc.Text())
		if s == "" || s[0] == '#' {
			continue
		}
		smp, err := parseSampleLine(s)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		out = append(out, smp)
	}
	return out, sc.Err()
}

func parseSampleLine(s string) (sample, error) {
	var smp sample
	i := strings.IndexAny(s, "{ \t")
	if i <= 0 {
		return smp, fmt.Errorf("no value in %q", s)
	}
	smp.name, s = s[:i], s[i:]
	if s[0] == '{' {
		labels, rest, err := parseLabels(s[1:])
		if err != nil {
			return smp, err
		}
		smp.labels, s = labels, rest
	}
	if i := strings.Index(s, " # "); i >= 0 { // OpenMetrics exemplar
		s = s[:i]
	}
	fields := strings.Fields(s)
	if len(fields) == 0 || len(fields) > 2 {
		return smp, fmt.Errorf("want value [timestamp] after %s, got %q", smp.name, s)
	}
	v, err := strconv.ParseFloat(fields[0], 64)
	if err != nil {
		return smp, fmt.Errorf("value of %s: %w", smp.name, err)
	}
	smp.value = v
	return smp, nil
}

// parseLabels parses `a="x",b="y"}` and returns what follows the brace.
func parseLabels(s string) (map[string]string, string, error) {
	labels := make(map[string]string)
	for {
		s = strings.TrimLeft(s, " \t,")
		if s == "" {
			return nil, "", fmt.Errorf("unterminated labels")
		}
		if s[0] == '}' {
			return labels, s[1:], nil
		}
		eq := strings.IndexByte(s, '=')
		if eq <= 0 || len(s) < eq+2 || s[eq+1] != '"' {
			return nil, "", fmt.Errorf("bad label in %q", s)
		}
		name := strings.TrimSpace(s[:eq])
		s = s[eq+2:]
		var val strings.Builder
		closed := false
		for i := 0; i < len(s); i++ {
			switch c := s[i]; {
			case c == '\\' && i+1 < len(s):
				i++
				switch s[i] {
				case 'n':
					val.WriteByte('\n')
				default:
					val.WriteByte(s[i])
				}
			case c == '"':
				s, closed = s[i+1:], true
			default:
				val.WriteByte(c)
			}
			if closed {
				break
			}
		}
		if !closed {
			return nil, "", fmt.Errorf("unterminated value of label %s", name)
		}
		labels[name] = val.String()
	}
}

// objectStoreOps sums object-store PUT and GET request counters. Exact
// names win: series named one of names. Failing those, any counter whose
// name contains "objectstore" and ends in _total, leaving out byte, error
// and duration counters; failing those, the _count of such histograms.
// The operation is the label op (or operation, method), put or get in any
// case, "PutObject" and "GetObject" included. It returns the names used.
func objectStoreOps(samples []sample, names []string) (puts, gets float64, used []string) {
	pick := func(match func(string) bool) {
		for _, s := range samples {
			if !match(s.name) {
				continue
			}
			var n *float64
			switch opOf(s.labels) {
			case "put":
				n = &puts
			case "get":
				n = &gets
			default:
				continue
			}
			*n += s.value
			if !slices.Contains(used, s.name) {
				used = append(used, s.name)
			}
		}
	}
	lenient := func(suffix string) func(string) bool {
		return func(name string) bool {
			l := strings.ToLower(name)
			if !strings.Contains(strings.ReplaceAll(l, "_", ""), "objectstore") || !strings.HasSuffix(l, suffix) {
				return false
			}
			for _, w := range []string{"byte", "error", "fail", "duration", "seconds", "latency", "size"} {
				if strings.Contains(l, w) {
					return false
				}
			}
			return true
		}
	}
	pick(func(name string) bool { return slices.Contains(names, name) })
	if used == nil {
		pick(lenient("_total"))
	}
	if used == nil {
		pick(lenient("_count"))
	}
	return puts, gets, used
}

// opOf reads the operation label, lower-cased and without an "object"
// suffix.
func opOf(labels map[string]string) string {
	for _, k := range []string{"op", "operation", "method"} {
		if v, ok := labels[k]; ok {
			return strings.TrimSuffix(strings.ToLower(v), "object")
		}
	}
	return ""
}

// putSeconds sums the object-store PUT latency histograms: the _sum and
// _count of every series whose name holds "objectstore" and ends in
// _seconds_sum or _seconds_count (the unit is in the name), with the
// operation put.
func putSeconds(samples []sample) (sum, count float64) {
	for _, s := range samples {
		l := strings.ToLower(s.name)
		if !strings.Contains(strings.ReplaceAll(l, "_", ""), "objectstore") || opOf(s.labels) != "put" {
			continue
		}
		switch {
		case strings.HasSuffix(l, "_seconds_sum"):
			sum += s.value
		case strings.HasSuffix(l, "_seconds_count"):
			count += s.value
		}
	}
	return sum, count
}

// objectStoreCounts is one scrape of all metrics endpoints.
type objectStoreCounts struct {
	puts, gets float64
	series     []string
	// putSec and putTimed are the PUT latency histograms' sum (seconds)
	// and count, 0 when the endpoints have none.
	putSec, putTimed float64
}

// scrapeObjectStore scrapes every URL and sums their object-store counters.
func scrapeObjectStore(ctx context.Context, client *http.Client, urls, names []string) (objectStoreCounts, error) {
	var c objectStoreCounts
	for _, u := range urls {
		samples, err := scrape(ctx, client, u)
		if err != nil {
			return c, err
		}
		puts, gets, used := objectStoreOps(samples, names)
		c.puts += puts
		c.gets += gets
		sec, timed := putSeconds(samples)
		c.putSec += sec
		c.putTimed += timed
		for _, n := range used {
			if !slices.Contains(c.series, n) {
				c.series = append(c.series, n)
			}
		}
	}
	return c, nil
}

func scrape(ctx context.Context, client *http.Client, u string) ([]sample, error) {
	ctx, cancel := context.WithTimeout(ctx, scrapeTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	// Ask for the text format, not protobuf.
	req.Header.Set("Accept", "text/plain;version=0.0.4;q=1,*/*;q=0.1")
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", u, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("scrape %s: http %d", u, resp.StatusCode)
	}
	samples, err := parsePromText(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", u, err)
	}
	return samples, nil
}

// ScrapeSums scrapes a Prometheus text endpoint and sums each named
// metric's samples over their labels; a name with no sample is absent from
// the result. The fleet simulator reads the coordinator's state sizes with
// it.
func ScrapeSums(ctx context.Context, client *http.Client, url string, names ...string) (map[string]float64, error) {
	samples, err := scrape(ctx, client, url)
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for _, s := range samples {
		if slices.Contains(names, s.name) {
			out[s.name] += s.value
		}
	}
	return out, nil
}
