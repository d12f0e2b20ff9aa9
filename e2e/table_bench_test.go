package e2e

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/floe-io/floe/internal/testkit"
	"github.com/floe-io/floe/internal/testkit/floetest"
)

// BenchmarkTableLag measures issue 41's targets for topics as Iceberg
// tables: the table lag p99 while a topic is produced at 20 MiB/s (target:
// at most 2 × --wal-retention plus one --table-interval), and the extra
// CPU of table output per GiB. One cluster (MinIO, a coordinator process,
// one broker process that ingests and runs every tier job) gets the same
// load twice, FLOE_BENCH_TABLE_SECONDS (default 90) at
// FLOE_BENCH_TABLE_MIBPS (default 20) of ~1 KiB JSON records over 8
// partitions: first to a topic without a table, then to one with
// table.enabled. Each phase runs until its topic is consolidated (and, with
// the table, until the table covers the high watermarks); the CPU time of
// each process over the phase is read from /proc. The lag is sampled every
// 500 ms from the coordinator's floe_table_lag_seconds (exact to the
// 1 s --tier-interval) and cross-checked against the producer's own
// timeline (when the high watermark first passed what the table covers,
// from floe_table_lag_offsets). --wal-retention is
// FLOE_BENCH_TABLE_WAL_S (default 30 s) and --table-interval
// FLOE_BENCH_TABLE_INTERVAL_S (default 10 s). FLOE_BENCH_TABLE_PPROF=file
// writes a 60 s CPU profile of the broker from when the table phase's
// production ends (its table jobs catching up). It prints the figures;
// it asserts nothing timed. Run with -benchtime 1x:
//
//	go test -run '^$' -bench TableLag -benchtime 1x -timeout 30m ./e2e/
func BenchmarkTableLag(b *testing.B) {
	const partitions = 8
	mibps := benchEnvInt(b, "FLOE_BENCH_TABLE_MIBPS", 20)
	seconds := benchEnvInt(b, "FLOE_BENCH_TABLE_SECONDS", 90)
	walS := benchEnvInt(b, "FLOE_BENCH_TABLE_WAL_S", 30)
	intervalS := benchEnvInt(b, "FLOE_BENCH_TABLE_INTERVAL_S", 10)

	c := floetest.RunClusterWith(b, 0, floetest.ClusterOptions{
		CoordinatorArgs: []string{"--tier-interval", "1s", "--wal-retention", strconv.Itoa(walS) + "s",
			"--table-interval", strconv.Itoa(intervalS) + "s"},
	})
	broker := c.AddBroker(1, "--tier-poll-interval", "200ms")
	adm := newAdmin(b, broker.KafkaAddr)
	ctx := context.Background()
	cpu := func() (br, co, mi time.Duration) {
		var err error
		if br, err = testkit.ProcessCPU(broker.PID()); err == nil {
			if co, err = testkit.ProcessCPU(c.Coord.PID()); err == nil {
				mi, err = testkit.ProcessCPU(c.MinIO.PID())
			}
		}
		if err != nil {
			b.Fatal(err)
		}
		return br, co, mi
	}
	type phase struct {
		name                    string
		bytes                   int64
		wall                    time.Duration
		broker, coord, minio    time.Duration
		lagSecs, lagOwn         []float64 // samples while producing and until caught up
		lagSecsProd, lagOwnProd []float64 // samples while producing
		caughtUp                time.Duration
	}
	var phases []phase
	for _, table := range []bool{false, true} {
		p := phase{name: "table off"}
		topic := "plain"
		configs := map[string]*string{"retention.ms": kadm.StringPtr("-1")}
		if table {
			p.name, topic = "table on", "tab"
			configs["table.enabled"] = kadm.StringPtr("true")
		}
		if _, err := adm.CreateTopic(ctx, partitions, -1, configs, topic); err != nil {
			b.Fatal(err)
		}
		b0, c0, m0 := cpu()
		start := time.Now()

		// The lag sampler: the coordinator's gauges, and the high
		// watermarks' timeline for the cross-check.
		type seen struct {
			at  time.Time
			hwm float64
		}
		var (
			timeline  []seen
			producing atomic.Bool
			stop      = make(chan struct{})
			sampled   sync.WaitGroup
		)
		producing.Store(true)
		if table {
			sampled.Add(1)
			go func() {
				defer sampled.Done()
				tick := time.NewTicker(500 * time.Millisecond)
				defer tick.Stop()
				for {
					select {
					case <-stop:
						return
					case <-tick.C:
					}
					now := time.Now()
					hwm, err1 := floetest.Metric(c.Coord.HTTPAddr, "floe_partition_high_watermark", `topic="tab"`)
					lagOff, err2 := floetest.Metric(c.Coord.HTTPAddr, "floe_table_lag_offsets", `topic="tab"`)
					lagSec, err3 := floetest.Metric(c.Coord.HTTPAddr, "floe_table_lag_seconds", `topic="tab"`)
					if err1 != nil || err2 != nil || err3 != nil {
						continue // not served yet
					}
					timeline = append(timeline, seen{now, hwm})
					// Own: since when the high watermark has been past
					// what the table covers.
					covered := hwm - lagOff
					own := 0.0
					if lagOff > 0 {
						i := slices.IndexFunc(timeline, func(s seen) bool { return s.hwm > covered })
						own = now.Sub(timeline[i].at).Seconds()
					}
					p.lagSecs = append(p.lagSecs, lagSec)
					p.lagOwn = append(p.lagOwn, own)
					if producing.Load() {
						p.lagSecsProd = append(p.lagSecsProd, lagSec)
						p.lagOwnProd = append(p.lagOwnProd, own)
					}
				}
			}()
		}
		p.bytes = producePaced(b, broker.KafkaAddr, topic, partitions, mibps, time.Duration(seconds)*time.Second)
		producing.Store(false)
		prodWall := time.Since(start)
		var profiled sync.WaitGroup
		if out := os.Getenv("FLOE_BENCH_TABLE_PPROF"); table && out != "" {
			profiled.Add(1)
			go func() {
				defer profiled.Done()
				if err := saveProfile(broker.HTTPAddr, out, 60); err != nil {
					fmt.Printf("profile: %v\n", err)
				}
			}()
		}
		defer profiled.Wait()
		waitConsolidated(b, c, topic, partitions, 10*time.Minute)
		if table {
			testkit.CheckFor(b, 10*time.Minute, 200*time.Millisecond, func() error {
				lag, err := floetest.Metric(c.Coord.HTTPAddr, "floe_table_lag_offsets", `topic="tab"`)
				if err == nil && lag != 0 {
					err = fmt.Errorf("table lag %v offsets", lag)
				}
				return err
			})
			p.caughtUp = time.Since(start) - prodWall
			close(stop)
			sampled.Wait()
		}
		p.wall = time.Since(start)
		b1, c1, m1 := cpu()
		p.broker, p.coord, p.minio = b1-b0, c1-c0, m1-m0
		fmt.Printf("%s: produced %.0f MiB in %s (%.1f MiB/s); phase %s; CPU broker %.1f s, coordinator %.1f s, MinIO %.1f s\n",
			p.name, float64(p.bytes)/(1<<20), prodWall.Round(time.Millisecond), float64(p.bytes)/(1<<20)/prodWall.Seconds(),
			p.wall.Round(time.Millisecond), p.broker.Seconds(), p.coord.Seconds(), p.minio.Seconds())
		if table {
			q := func(xs []float64, f float64) float64 {
				if len(xs) == 0 {
					return -1
				}
				s := slices.Clone(xs)
				slices.Sort(s)
				return s[min(len(s)-1, int(f*float64(len(s))))]
			}
			bound := float64(2*walS + intervalS)
			for _, l := range []struct {
				name string
				xs   []float64
			}{{"floe_table_lag_seconds while producing", p.lagSecsProd}, {"floe_table_lag_seconds, production and catch-up", p.lagSecs},
				{"own timeline while producing", p.lagOwnProd}, {"own timeline, production and catch-up", p.lagOwn}} {
				fmt.Printf("table lag (%s, %d samples): p50 %.1f s, p99 %.1f s, max %.1f s (target p99 <= 2 x %d s + %d s = %.0f s)\n",
					l.name, len(l.xs), q(l.xs, 0.5), q(l.xs, 0.99), q(l.xs, 1), walS, intervalS, bound)
			}
			fmt.Printf("table caught up %s after production ended\n", p.caughtUp.Round(time.Millisecond))
			b.ReportMetric(q(p.lagSecsProd, 0.99), "lag-p99-s")
			b.ReportMetric(q(p.lagSecsProd, 0.5), "lag-p50-s")
		}
		phases = append(phases, p)
	}
	off, on := phases[0], phases[1]
	gib := func(p phase) float64 { return float64(p.bytes) / (1 << 30) }
	perGiB := func(d time.Duration, p phase) float64 { return d.Seconds() / gib(p) }
	fmt.Printf("CPU per GiB produced: broker %.1f s off, %.1f s on: table output +%.1f s/GiB; coordinator %.2f vs %.2f; MinIO %.1f vs %.1f\n",
		perGiB(off.broker, off), perGiB(on.broker, on), perGiB(on.broker, on)-perGiB(off.broker, off),
		perGiB(off.coord, off), perGiB(on.coord, on), perGiB(off.minio, off), perGiB(on.minio, on))
	b.ReportMetric(perGiB(on.broker, on)-perGiB(off.broker, off), "table-broker-cpu-s/GiB")
}

// producePaced produces ~1 KiB JSON records (an id, a user, an amount and
// a note of random base64, so that values compress as real ones do, about
// 4:3) to topic round-robin over partitions at mibps for d, and returns
// the value bytes produced. It fails b on the first error.
func producePaced(b *testing.B, addr, topic string, partitions, mibps int, d time.Duration) int64 {
	b.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(5*time.Millisecond),
		kgo.MaxBufferedBytes(64<<20))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	var (
		errMu sync.Mutex
		first error
		bytes int64
		n     int
	)
	note := make([]byte, 660)
	const tick = 10 * time.Millisecond
	perTick := int64(mibps) << 20 / int64(time.Second/tick)
	t := time.NewTicker(tick)
	defer t.Stop()
	end := time.Now().Add(d)
	var owed int64
	for now := time.Now(); now.Before(end); now = <-t.C {
		owed += perTick
		for owed > 0 {
			for i := range note {
				note[i] = byte(rand.Uint32())
			}
			v := fmt.Appendf(nil, `{"id":%d,"user":"user-%d","amount":%d.%02d,"note":"%s"}`,
				n, rand.IntN(10000), rand.IntN(1000), rand.IntN(100), base64.StdEncoding.EncodeToString(note))
			cl.Produce(context.Background(), &kgo.Record{Partition: int32(n % partitions), Value: v}, func(_ *kgo.Record, err error) {
				if err != nil {
					errMu.Lock()
					if first == nil {
						first = err
					}
					errMu.Unlock()
				}
			})
			n++
			owed -= int64(len(v))
			bytes += int64(len(v))
		}
	}
	if err := cl.Flush(context.Background()); err != nil {
		b.Fatal(err)
	}
	errMu.Lock()
	defer errMu.Unlock()
	if first != nil {
		b.Fatal(first)
	}
	return bytes
}

// saveProfile writes a CPU profile of secs seconds of the process serving
// httpAddr's /debug/pprof to out.
func saveProfile(httpAddr, out string, secs int) error {
	cl := &http.Client{Timeout: time.Duration(secs+30) * time.Second}
	resp, err := cl.Get(fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", httpAddr, secs))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET /debug/pprof/profile: %s", resp.Status)
	}
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
