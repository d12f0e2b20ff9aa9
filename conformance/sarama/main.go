// Command sarama runs conformance checks of IBM/sarama, the Go client that
// picks each API's version from the Kafka version it is configured for,
// against a Kafka-compatible cluster:
//
//	go run . BOOTSTRAP [REGEXP]
//
// Each check prints "PASS name" or "FAIL name: reason"; the run ends with
// "N passed, N failed" and exits with 1 if any failed. scripts/
// conformance-sarama.sh starts floe (or Apache Kafka, to prove the checks,
// with CONFORMANCE_KAFKA=1, which leaves out the floe-* checks of floe's own
// features) and runs it. CHECK_TIMEOUT (seconds, default 60) bounds each check.
package main

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// A check is one named conformance check: nil when the cluster behaved as
// Apache Kafka does.
type check struct {
	name string
	run  func(e *env) error
}

// env is what every check gets: the cluster's address and a unique suffix
// for the topics and groups it creates.
type env struct {
	bootstrap []string
	suffix    string
	n         int
}

// topic returns a new topic name for a check.
func (e *env) topic(base string) string {
	e.n++
	return fmt.Sprintf("sarama-%s-%s-%d", base, e.suffix, e.n)
}

func main() {
	if len(os.Args) < 2 || len(os.Args) > 3 {
		fmt.Fprintln(os.Stderr, "usage: sarama BOOTSTRAP [REGEXP]")
		os.Exit(2)
	}
	filter := regexp.MustCompile("")
	if len(os.Args) == 3 {
		filter = regexp.MustCompile(os.Args[2])
	}
	timeout := 60 * time.Second
	if s := os.Getenv("CHECK_TIMEOUT"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			fmt.Fprintf(os.Stderr, "CHECK_TIMEOUT=%q: want a positive number of seconds\n", s)
			os.Exit(2)
		}
		timeout = time.Duration(n) * time.Second
	}
	e := &env{bootstrap: []string{os.Args[1]}, suffix: strconv.FormatInt(time.Now().UnixNano()%1e9, 36)}
	passed, failed := 0, 0
	// The floe-* checks exercise floe's own features (hierarchical topics).
	skipFloe := os.Getenv("CONFORMANCE_KAFKA") == "1"
	for _, c := range checks() {
		if !filter.MatchString(c.name) || (skipFloe && strings.HasPrefix(c.name, "floe-")) {
			continue
		}
		start := time.Now()
		if err := runBounded(c, e, timeout); err != nil {
			failed++
			fmt.Printf("FAIL %s: %v\n", c.name, err)
			continue
		}
		passed++
		fmt.Printf("PASS %s (%.1f s)\n", c.name, time.Since(start).Seconds())
	}
	fmt.Printf("%d passed, %d failed\n", passed, failed)
	if failed > 0 || passed == 0 {
		os.Exit(1)
	}
}

// runBounded runs c, failing it if it takes longer than timeout. Sarama's
// calls take no context, so a check that hangs is left running; the run
// goes on with the next check.
func runBounded(c check, e *env, timeout time.Duration) error {
	done := make(chan error, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				done <- fmt.Errorf("panic: %v", r)
			}
		}()
		done <- c.run(e)
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(timeout):
		return fmt.Errorf("no result within %s", timeout)
	}
}
