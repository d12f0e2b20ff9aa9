// Command s3-latency-proxy puts an S3 latency profile in front of an S3
// API (usually a local MinIO), so that floe and its benchmarks run at the
// latency of real S3:
//
//	s3-latency-proxy --listen 127.0.0.1:9100 --upstream http://127.0.0.1:9000 --profile s3-standard
//	go run ./cmd/broker --s3-endpoint http://127.0.0.1:9100 --s3-bucket floe --s3-path-style ...
//
// Requests are forwarded unchanged after a latency drawn per request from
// the profile (package s3latency draws the profiles and cites their
// sources). It prints what it did every --report interval and when it
// stops (SIGINT or SIGTERM).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/floe-io/floe/internal/cli"
	"github.com/floe-io/floe/s3latency"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("s3-latency-proxy", flag.ContinueOnError)
	fs.SetOutput(stderr)
	listen := fs.String("listen", "127.0.0.1:9100", "address to serve the S3 API on")
	upstream := fs.String("upstream", "http://127.0.0.1:9000", "the S3 API's base URL")
	profile := fs.String("profile", "s3-standard", "latency profile: "+strings.Join(s3latency.Names(), ", "))
	seed := fs.Uint64("seed", 0, "seed for the latency draws (0: random)")
	report := fs.Duration("report", 10*time.Second, "print the counts this often (0: only at the end)")
	list := fs.Bool("list-profiles", false, "print the profiles and their sources, and exit")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if err := cli.NoArgs(fs, args); err != nil {
		fmt.Fprintln(stderr, "s3-latency-proxy:", err)
		return 2
	}
	if *list {
		for _, p := range s3latency.Profiles() {
			fmt.Fprintf(stdout, "%-12s %s\n", p.Name, p.Source)
		}
		return 0
	}
	prof, err := s3latency.Lookup(*profile)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	srv, err := s3latency.Listen(*listen, s3latency.Options{Upstream: *upstream, Profile: prof, Seed: *seed})
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	fmt.Fprintf(stderr, "s3-latency-proxy: %s -> %s, profile %s\n", srv.URL, *upstream, prof.Name)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var tick <-chan time.Time
	if *report > 0 {
		t := time.NewTicker(*report)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-tick:
			printStats(stderr, srv.Proxy.Stats())
		case <-ctx.Done():
			srv.Close()
			printStats(stderr, srv.Proxy.Stats())
			return 0
		}
	}
}

// printStats writes one line: requests and mean drawn latency per
// operation, throttled and tail requests.
func printStats(w io.Writer, st s3latency.Stats) {
	var parts []string
	for op, s := range st.Ops {
		parts = append(parts, fmt.Sprintf("%s=%d (mean %.1fms)", op, s.Requests,
			float64(s.Delay.Microseconds())/1000/float64(max(s.Requests, 1))))
	}
	slices.Sort(parts)
	fmt.Fprintf(w, "s3-latency-proxy: %s slowdowns=%d tails=%d\n", strings.Join(parts, " "), st.SlowDowns, st.Tails)
}
