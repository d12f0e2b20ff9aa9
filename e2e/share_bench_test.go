package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/floe-io/floe/internal/testkit"
	"github.com/floe-io/floe/internal/testkit/floetest"
)

// BenchmarkShareGroup compares a share group (KIP-932) with a classic
// consumer group reading the same topic, as issue 42 asks: 4 partitions of
// FLOE_BENCH_SHARE_RECORDS records of 1 KiB (default 200,000; the design's
// 2 M takes far longer than a run should on a 2-core machine), produced
// once through a broker that then stops. Each side then runs through a
// fresh broker process (an empty chunk cache) and reads everything from
// the start with 8 franz-go clients on one group:
//
//   - classic: kgo.ConsumerGroup (4 of the 8 own a partition, the others
//     idle, as Kafka assigns);
//   - share: kgo.ShareGroup with implicit acknowledgement (each poll
//     accepts the records of the poll before), share.auto.offset.reset
//     earliest; the simple assignor puts two consumers on each partition.
//
// For each, records/s from the clients' creation (joining included) to the
// last record, and from the first record to the last, are printed, with
// the broker's Fetch or ShareFetch requests and their mean time, the
// coordinator's share_acquire calls and their mean time, and the
// share/classic ratio (the target: at least 0.7). The share group's
// lag is checked to be 0 at the end (every record accepted). Rounds
// (FLOE_BENCH_SHARE_ROUNDS, default 1) alternate which side goes first.
// FLOE_BENCH_SHARE_MAX_RECORDS sets the share consumers' ShareFetch
// MaxRecords (kgo.ShareMaxRecords; default franz-go's 500), and
// FLOE_BENCH_SHARE_COORDINATOR_ARGS adds coordinator flags (say,
// "--group-share-partition-max-record-locks 4000"). With
// FLOE_BENCH_SHARE_PROFILE set to a directory, the coordinator runs with
// --pprof and a CPU profile of its first FLOE_BENCH_SHARE_PROFILE_SECONDS
// (default 5) of each share read is written there. Run with -benchtime
// 1x: the setup is in the benchmark body.
//
//	go test -run '^$' -bench ShareGroup -benchtime 1x ./e2e/
func BenchmarkShareGroup(b *testing.B) {
	const (
		topic      = "share-bench"
		partitions = 4
		valueLen   = 1 << 10
		consumers  = 8
	)
	perPartition := benchEnvInt(b, "FLOE_BENCH_SHARE_RECORDS", 200_000)
	rounds := benchEnvInt(b, "FLOE_BENCH_SHARE_ROUNDS", 1)
	maxRecords := benchEnvInt(b, "FLOE_BENCH_SHARE_MAX_RECORDS", 500)
	records := perPartition * partitions

	coordArgs := strings.Fields(os.Getenv("FLOE_BENCH_SHARE_COORDINATOR_ARGS"))
	profileDir := os.Getenv("FLOE_BENCH_SHARE_PROFILE")
	profileSecs := benchEnvInt(b, "FLOE_BENCH_SHARE_PROFILE_SECONDS", 5)
	if profileDir != "" {
		coordArgs = append(coordArgs, "--pprof")
	}
	c := floetest.RunClusterWith(b, 0, floetest.ClusterOptions{CoordinatorArgs: coordArgs})
	writer := c.AddBroker(1)
	adm := newAdmin(b, writer.KafkaAddr)
	ctx := context.Background()
	if _, err := adm.CreateTopic(ctx, partitions, -1, nil, topic); err != nil {
		b.Fatal(err)
	}
	produceStart := time.Now()
	produceCatchUp(b, writer.KafkaAddr, topic, partitions, records, valueLen, 64<<10)
	fmt.Printf("produced %d records of %d B over %d partitions in %s\n",
		records, valueLen, partitions, time.Since(produceStart).Round(time.Millisecond))
	writer.Stop()

	type side struct {
		name string
		runs []shareBenchRun
	}
	classic, share := &side{name: "classic"}, &side{name: "share"}
	nextID := 10
	b.ResetTimer()
	for round := range rounds {
		order := []*side{classic, share}
		if round%2 == 1 {
			slices.Reverse(order)
		}
		for _, s := range order {
			nextID++
			group := fmt.Sprintf("bench-%s-%d", s.name, round)
			var stopProfile func()
			if profileDir != "" && s == share {
				stopProfile = profileCoordinator(b, c, filepath.Join(profileDir, fmt.Sprintf("coordinator-share-%d.pprof", round)), profileSecs)
			}
			r := runShareBench(b, c, int32(nextID), topic, group, s == share, records, consumers, maxRecords)
			if stopProfile != nil {
				stopProfile()
			}
			s.runs = append(s.runs, r)
			fmt.Printf("round %d %-8s %s\n", round, s.name, r)
		}
	}
	b.StopTimer()
	mean := func(s *side) (wall, steady float64) {
		for _, r := range s.runs {
			wall += r.wallRate()
			steady += r.steadyRate()
		}
		n := float64(len(s.runs))
		return wall / n, steady / n
	}
	cw, cs := mean(classic)
	sw, ss := mean(share)
	fmt.Printf("mean of %d: classic %.0f records/s (%.0f from the first record), share %.0f records/s (%.0f from the first record): share/classic %.2f (%.2f from the first record)\n",
		rounds, cw, cs, sw, ss, sw/cw, ss/cs)
	b.ReportMetric(cw, "classic-records/s")
	b.ReportMetric(sw, "share-records/s")
	b.ReportMetric(sw/cw, "share/classic")
	b.ReportMetric(ss/cs, "share/classic-steady")
}

// shareBenchRun is one side's read of the whole topic.
type shareBenchRun struct {
	records     int
	delivered   int64 // records handed to the clients, redeliveries included
	wall        time.Duration
	first, last time.Duration // since the clients' creation
	acquires    float64       // the coordinator's share_acquire calls
	acquireMean time.Duration // their mean duration at the coordinator
	// fetches and fetchMean are the broker's Fetch (classic) or
	// ShareFetch (share) requests and their mean duration, long polls
	// included.
	fetches   float64
	fetchMean time.Duration
}

func (r shareBenchRun) wallRate() float64 { return float64(r.records) / r.last.Seconds() }

func (r shareBenchRun) steadyRate() float64 {
	return float64(r.records) / (r.last - r.first).Seconds()
}

func (r shareBenchRun) String() string {
	return fmt.Sprintf("%8.0f records/s (%8.0f from the first record at %s), %d records delivered for %d, %.0f fetches of mean %s at the broker, %.0f share_acquire calls of mean %s at the coordinator",
		r.wallRate(), r.steadyRate(), r.first.Round(time.Millisecond), r.delivered, r.records,
		r.fetches, r.fetchMean.Round(10*time.Microsecond), r.acquires, r.acquireMean.Round(10*time.Microsecond))
}

// runShareBench starts broker id, reads every record of topic from the
// start through it with consumers clients of group (a share group when
// share, else a classic one), and stops it.
func runShareBench(b *testing.B, c *floetest.Cluster, id int32, topic, group string, share bool, records, consumers, maxRecords int) shareBenchRun {
	b.Helper()
	p := c.AddBroker(int(id))
	defer p.Stop()
	testkit.CheckFor(b, 30*time.Second, 50*time.Millisecond, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		ids, _, err := metadataBrokers(ctx, p.KafkaAddr, "")
		if err == nil && !slices.Equal(ids, []int32{id}) {
			err = fmt.Errorf("metadata names brokers %v, want only %d", ids, id)
		}
		return err
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if share {
		admCl, err := kgo.NewClient(kgo.SeedBrokers(p.KafkaAddr))
		if err != nil {
			b.Fatal(err)
		}
		setShareAutoOffsetReset(b, ctx, admCl, group)
		admCl.Close()
	}
	acquiresBefore, acquireSecsBefore := shareAcquires(b, c)

	var (
		mu        sync.Mutex
		seen      = map[int32][]bool{}
		distinct  int
		delivered atomic.Int64
		firstAt   time.Time
		lastAt    time.Time
		done      = make(chan struct{})
		wg        sync.WaitGroup
		clients   []*kgo.Client
	)
	start := time.Now()
	for range consumers {
		opts := []kgo.Opt{kgo.ConsumeTopics(topic)}
		if share {
			opts = append(opts, kgo.ShareGroup(group), kgo.ShareMaxRecords(int32(maxRecords)))
		} else {
			opts = append(opts, kgo.ConsumerGroup(group), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		}
		// Closed at the end of this run, not of the benchmark: a share
		// client left open would go on heartbeating into later rounds.
		cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(p.KafkaAddr)}, opts...)...)
		if err != nil {
			b.Fatal(err)
		}
		clients = append(clients, cl)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				// Polling goes on after the last record, until the run
				// ends: a share consumer's poll accepts the records of
				// the one before.
				fs := cl.PollFetches(ctx)
				if ctx.Err() != nil {
					return
				}
				fs.EachError(func(t string, p int32, err error) { b.Errorf("fetch %s/%d: %v", t, p, err) })
				n := fs.NumRecords()
				if n == 0 {
					continue
				}
				delivered.Add(int64(n))
				now := time.Now()
				mu.Lock()
				if firstAt.IsZero() {
					firstAt = now
				}
				fs.EachRecord(func(r *kgo.Record) {
					s := seen[r.Partition]
					if s == nil {
						s = make([]bool, records/4+1)
						seen[r.Partition] = s
					}
					if r.Offset < int64(len(s)) && !s[r.Offset] {
						s[r.Offset] = true
						distinct++
					}
				})
				if distinct >= records && lastAt.IsZero() {
					lastAt = now
					close(done)
				}
				mu.Unlock()
			}
		}()
	}
	select {
	case <-done:
	case <-ctx.Done():
		b.Fatalf("read %d of %d records", distinct, records)
	}
	if share {
		// The last poll's records are accepted by the next poll: wait
		// for the lag to reach 0 before the clients close.
		adm := newAdmin(b, p.KafkaAddr)
		testkit.CheckFor(b, 60*time.Second, 100*time.Millisecond, func() error {
			d, err := adm.DescribeShareGroupOffsets(ctx, group)
			if err != nil {
				return err
			}
			var lag int64
			d[group].Offsets.Each(func(o kadm.ShareOffset) { lag += o.Lag })
			if lag != 0 {
				return fmt.Errorf("share group lag %d", lag)
			}
			return nil
		})
	}
	cancel()
	wg.Wait()
	for _, cl := range clients {
		cl.Close()
	}
	api := "Fetch"
	if share {
		api = "ShareFetch"
	}
	fetches, _ := floetest.Metric(p.HTTPAddr, "floe_kafka_request_duration_seconds_count", `api="`+api+`"`)
	fetchSecs, _ := floetest.Metric(p.HTTPAddr, "floe_kafka_request_duration_seconds_sum", `api="`+api+`"`)
	acquires, acquireSecs := shareAcquires(b, c)
	r := shareBenchRun{records: records, delivered: delivered.Load(), first: firstAt.Sub(start), last: lastAt.Sub(start),
		acquires: acquires - acquiresBefore, fetches: fetches}
	if r.acquires > 0 {
		r.acquireMean = time.Duration((acquireSecs - acquireSecsBefore) / r.acquires * float64(time.Second))
	}
	if fetches > 0 {
		r.fetchMean = time.Duration(fetchSecs / fetches * float64(time.Second))
	}
	return r
}

// profileCoordinator starts a CPU profile of secs seconds of the cluster's
// coordinator (which runs with --pprof), written to path; the returned
// func waits for it.
func profileCoordinator(b *testing.B, c *floetest.Cluster, path string, secs int) func() {
	b.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		resp, err := http.Get(fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", c.Coord.HTTPAddr, secs))
		if err != nil {
			fmt.Printf("coordinator profile: %v\n", err)
			return
		}
		defer resp.Body.Close()
		data, err := io.ReadAll(resp.Body)
		if err == nil {
			err = os.WriteFile(path, data, 0o644)
		}
		if err != nil {
			fmt.Printf("coordinator profile: %v\n", err)
			return
		}
		fmt.Printf("coordinator CPU profile (%d s) in %s\n", secs, path)
	}()
	return func() { <-done }
}

// shareAcquires is how many share_acquire calls the cluster's coordinator
// has served, and their summed duration in seconds.
func shareAcquires(b *testing.B, c *floetest.Cluster) (n, secs float64) {
	b.Helper()
	n, _ = floetest.Metric(c.Coord.HTTPAddr, "floe_coordinator_rpc_duration_seconds_count", `op="share_acquire"`)
	secs, _ = floetest.Metric(c.Coord.HTTPAddr, "floe_coordinator_rpc_duration_seconds_sum", `op="share_acquire"`)
	return n, secs
}
