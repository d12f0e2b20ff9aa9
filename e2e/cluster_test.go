package e2e

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-io/floe/internal/testkit"
	"github.com/floe-io/floe/internal/testkit/floetest"
)

// pinnedClient is a franz-go client whose every connection goes to addr,
// whichever broker Metadata names: all its requests are served by that one
// broker.
func pinnedClient(t testing.TB, addr string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	dial := func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.Dialer(dial)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// metadataBrokers returns the node ids broker addr names in Metadata, and
// how many partitions of topic each leads.
func metadataBrokers(ctx context.Context, addr, topic string) ([]int32, map[int32]int, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		return nil, nil, err
	}
	defer cl.Close()
	req := kmsg.NewPtrMetadataRequest()
	if topic != "" {
		req.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr(topic)}}
	}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, nil, err
	}
	var ids []int32
	for _, b := range resp.Brokers {
		ids = append(ids, b.NodeID)
	}
	slices.Sort(ids)
	leaders := map[int32]int{}
	for _, t := range resp.Topics {
		if err := kerr.ErrorForCode(t.ErrorCode); err != nil {
			return nil, nil, err
		}
		for _, p := range t.Partitions {
			leaders[p.Leader]++
		}
	}
	return ids, leaders, nil
}

// waitBrokers waits until broker addr's Metadata names exactly want.
func waitBrokers(t testing.TB, addr string, want []int32, within time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	testkit.CheckFor(t, within, 100*time.Millisecond, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		ids, _, err := metadataBrokers(ctx, addr, "")
		if err != nil {
			return err
		}
		if !slices.Equal(ids, want) {
			return fmt.Errorf("metadata names brokers %v, want %v", ids, want)
		}
		return nil
	})
	return time.Since(start)
}

// clusterRecord is record seq of producer p: partition seq % partitions,
// value (p, seq).
func clusterRecord(topic string, p, seq int, partitions int32) *kgo.Record {
	v := make([]byte, 16, 64)
	binary.BigEndian.PutUint64(v, uint64(p))
	binary.BigEndian.PutUint64(v[8:], uint64(seq))
	v = fmt.Appendf(v, "payload-%d-%d", p, seq)
	return &kgo.Record{Topic: topic, Partition: int32(seq) % partitions, Key: fmt.Appendf(nil, "p%d", p), Value: v}
}

// TestCluster runs a cluster of separate processes: MinIO, NATS, one
// coordinator and three brokers. Producers write through every broker,
// a consumer on another reads everything back in order; Metadata names the
// live brokers and spreads leadership over them; a consumer on broker 2
// is woken by a commit on broker 1; brokers that leave stop being named;
// with the coordinator down brokers answer retriable errors at once, and
// the restarted coordinator has everything.
func TestCluster(t *testing.T) {
	perProducer := 3000
	if testing.Short() {
		perProducer = 500
	}
	c := floetest.RunCluster(t, 3)
	b1, b2, b3 := c.Brokers[0], c.Brokers[1], c.Brokers[2]
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	waitBrokers(t, b1.KafkaAddr, []int32{1, 2, 3}, 10*time.Second)

	const topic, partitions = "orders", 30
	adm := kadm.NewClient(pinnedClient(t, b1.KafkaAddr))
	if _, err := adm.CreateTopic(ctx, partitions, 1, nil, topic); err != nil {
		t.Fatalf("create topic: %v", err)
	}
	// Every broker sees the topic, and leadership is spread over all three.
	for _, b := range c.Brokers {
		_, leaders, err := metadataBrokers(ctx, b.KafkaAddr, topic)
		if err != nil {
			t.Fatal(err)
		}
		if len(leaders) != 3 || leaders[1]+leaders[2]+leaders[3] != partitions {
			t.Fatalf("broker %s: leaders %v, want all of 1, 2, 3 leading %d partitions", b.KafkaAddr, leaders, partitions)
		}
	}

	t.Run("produce through every broker", func(t *testing.T) {
		start := time.Now()
		var wg sync.WaitGroup
		errs := make(chan error, 3)
		for p, b := range c.Brokers {
			cl := pinnedClient(t, b.KafkaAddr, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(5*time.Millisecond))
			wg.Add(1)
			go func() {
				defer wg.Done()
				for seq := range perProducer {
					cl.Produce(ctx, clusterRecord(topic, p, seq, partitions), func(r *kgo.Record, err error) {
						if err != nil {
							select {
							case errs <- fmt.Errorf("producer %d: %w", p, err):
							default:
							}
						}
					})
				}
				if err := cl.Flush(ctx); err != nil {
					errs <- err
				}
			}()
		}
		wg.Wait()
		select {
		case err := <-errs:
			t.Fatal(err)
		default:
		}
		produced := time.Since(start)

		// A consumer on broker 2 reads all of them, each producer's in order
		// within each partition, at contiguous offsets.
		parts := map[int32]kgo.Offset{}
		for p := range int32(partitions) {
			parts[p] = kgo.NewOffset().AtStart()
		}
		cl := pinnedClient(t, b2.KafkaAddr, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: parts}),
			kgo.FetchMaxWait(500*time.Millisecond))
		next := map[int32]int64{}
		lastSeq := map[[2]int64]int{} // (partition, producer) -> last seq
		seen := map[[2]int]bool{}
		total := 3 * perProducer
		for len(seen) < total {
			fs := cl.PollFetches(ctx)
			if ctx.Err() != nil {
				t.Fatalf("consumed %d of %d records", len(seen), total)
			}
			fs.EachError(func(topic string, p int32, err error) {
				if !kerr.IsRetriable(err) {
					t.Fatalf("fetch %s/%d: %v", topic, p, err)
				}
			})
			fs.EachRecord(func(r *kgo.Record) {
				if r.Offset != next[r.Partition] {
					t.Fatalf("partition %d: offset %d, want %d", r.Partition, r.Offset, next[r.Partition])
				}
				next[r.Partition]++
				p, seq := int(binary.BigEndian.Uint64(r.Value)), int(binary.BigEndian.Uint64(r.Value[8:]))
				if want := fmt.Sprintf("payload-%d-%d", p, seq); string(r.Value[16:]) != want || int32(seq)%partitions != r.Partition {
					t.Fatalf("partition %d offset %d: record %q of producer %d seq %d", r.Partition, r.Offset, r.Value[16:], p, seq)
				}
				k := [2]int64{int64(r.Partition), int64(p)}
				if last, ok := lastSeq[k]; ok && seq <= last {
					t.Fatalf("partition %d: producer %d seq %d after %d", r.Partition, p, seq, last)
				}
				lastSeq[k] = seq
				if seen[[2]int{p, seq}] {
					t.Fatalf("producer %d seq %d consumed twice", p, seq)
				}
				seen[[2]int{p, seq}] = true
			})
		}
		t.Logf("produced %d records through 3 brokers in %s, consumed through one in %s", total, produced, time.Since(start)-produced)
	})

	t.Run("fetch wake-up across brokers", func(t *testing.T) {
		lat := measureWakeUps(t, ctx, b1, b2, "wake", 10)
		for i, l := range lat {
			// Without the commit notice the fetch would wait out MaxWait
			// (5s); the figures are BenchmarkClusterFetchWakeUp's.
			if l.consumed > 4*time.Second {
				t.Errorf("record %d reached the consumer %s after it was produced", i, l.consumed)
			}
		}
		t.Logf("produce -> consume through another broker: %v", lat)
	})

	t.Run("brokers that leave stop being named", func(t *testing.T) {
		b3.Kill() // a crash: named until its registration expires (3s)
		d := waitBrokers(t, b1.KafkaAddr, []int32{1, 2}, 10*time.Second)
		t.Logf("killed broker 3 no longer named after %s", d)
		b2.Stop() // graceful: deregisters
		d = waitBrokers(t, b1.KafkaAddr, []int32{1}, 5*time.Second)
		t.Logf("stopped broker 2 no longer named after %s", d)
	})

	t.Run("coordinator down", func(t *testing.T) {
		cl := pinnedClient(t, b1.KafkaAddr)
		before, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
		if err != nil {
			t.Fatal(err)
		}
		// A hung coordinator (stopped, its connection still open): the
		// broker's coordinator timeout (3s) answers before the request's (5s).
		produceDown := func(state string) {
			start := time.Now()
			code := produceRaw(t, cl, topic, 0, buildBatch(t, []byte("while the coordinator is "+state)))
			took := time.Since(start)
			if err := kerr.ErrorForCode(code); !kerr.IsRetriable(err) {
				t.Fatalf("produce with the coordinator %s: %v, want a retriable error", state, err)
			}
			if took > 5*time.Second {
				t.Fatalf("produce with the coordinator %s answered after %s, request timeout 5s", state, took)
			}
			t.Logf("produce with the coordinator %s: %v after %s", state, kerr.ErrorForCode(code), took)
		}
		if err := c.Coord.Signal(syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		produceDown("hung")
		// A dead one: no responders, answered at once.
		c.Coord.Kill()
		produceDown("dead")

		// The restarted coordinator has every acknowledged batch, and
		// brokers use it again.
		c.StartCoordinator()
		testkit.CheckFor(t, 20*time.Second, 100*time.Millisecond, func() error {
			if code := produceRaw(t, cl, topic, 0, buildBatch(t, []byte("after restart"))); code != 0 {
				return kerr.ErrorForCode(code)
			}
			return nil
		})
		after, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
		if err != nil {
			t.Fatal(err)
		}
		before.Each(func(o kadm.ListedOffset) {
			a, _ := after.Lookup(topic, o.Partition)
			want := o.Offset
			if o.Partition == 0 {
				want++ // the record produced after the restart
			}
			if a.Err != nil || a.Offset != want {
				t.Errorf("partition %d: end offset %d (%v) after the restart, want %d", o.Partition, a.Offset, a.Err, want)
			}
		})
		waitBrokers(t, b1.KafkaAddr, []int32{1}, 10*time.Second)
	})
}

// wakeUp is one record's trip from a producer on one broker to a
// long-polling consumer on another.
type wakeUp struct {
	// acked is how long the produce took (upload, commit, answer).
	acked time.Duration
	// consumed is how long after the produce started the consumer had it.
	consumed time.Duration
}

func (w wakeUp) String() string {
	return fmt.Sprintf("%s (acked %s)", w.consumed.Round(time.Millisecond), w.acked.Round(time.Millisecond))
}

// measureWakeUps creates topic (one partition), has a consumer on broker
// consume long-poll it with MaxWait 5s, and produces n records one at a time
// through broker produce, each once the previous one was consumed and the
// consumer's next fetch is parked again.
func measureWakeUps(t testing.TB, ctx context.Context, produce, consume *floetest.Process, topic string, n int) []wakeUp {
	t.Helper()
	produceAddr, consumeAddr := produce.KafkaAddr, consume.KafkaAddr
	prod := pinnedClient(t, produceAddr, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if _, err := kadm.NewClient(prod).CreateTopic(ctx, 1, 1, nil, topic); err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		t.Fatalf("create topic %s: %v", topic, err)
	}
	cons := pinnedClient(t, consumeAddr, kgo.FetchMaxWait(5*time.Second),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtEnd()}}))
	arrived := make(chan time.Time, 1)
	go func() {
		for {
			fs := cons.PollFetches(ctx)
			now := time.Now()
			if fs.IsClientClosed() || ctx.Err() != nil {
				return
			}
			fs.EachRecord(func(*kgo.Record) {
				select {
				case arrived <- now:
				default:
				}
			})
		}
	}()
	out := make([]wakeUp, 0, n)
	for i := range n {
		// The consumer has resolved its start offset (or consumed the
		// last record) and is in its long poll.
		waitParked(t, consume.HTTPAddr)
		start := time.Now()
		if err := prod.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: fmt.Appendf(nil, "wake-%d", i)}).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
		acked := time.Since(start)
		select {
		case at := <-arrived:
			out = append(out, wakeUp{acked: acked, consumed: at.Sub(start)})
		case <-time.After(10 * time.Second):
			t.Fatalf("record %d not consumed within 10s", i)
		}
	}
	return out
}

// waitParked waits until the broker serving HTTP at httpAddr has a fetch
// parked at the log end (its floe_kafka_fetch_parked gauge).
func waitParked(t testing.TB, httpAddr string) {
	t.Helper()
	testkit.CheckFor(t, 10*time.Second, 2*time.Millisecond, func() error {
		n, err := floetest.Metric(httpAddr, "floe_kafka_fetch_parked")
		if err == nil && n < 1 {
			err = fmt.Errorf("%v fetches parked", n)
		}
		return err
	})
}

// BenchmarkClusterFetchWakeUp measures, on a cluster of processes, how
// long a record produced through broker 1 takes to reach a consumer
// long-polling (MaxWait 5s) on broker 2: the commit notice over NATS wakes
// the fetch. wake-ms is from the produce's answer to the record's arrival
// (the notice path; it can be below zero when the consumer wins the race),
// e2e-ms from the produce's start.
func BenchmarkClusterFetchWakeUp(b *testing.B) {
	c := floetest.RunCluster(b, 2)
	ctx := context.Background()
	waitBrokers2 := func() {
		testkit.CheckFor(b, 10*time.Second, 100*time.Millisecond, func() error {
			ids, _, err := metadataBrokers(ctx, c.Brokers[0].KafkaAddr, "")
			if err != nil || len(ids) != 2 {
				return fmt.Errorf("brokers %v, %v", ids, err)
			}
			return nil
		})
	}
	waitBrokers2()
	b.ResetTimer()
	lat := measureWakeUps(b, ctx, c.Brokers[0], c.Brokers[1], "wake", b.N)
	b.StopTimer()
	wake := make([]float64, len(lat))
	e2e := make([]float64, len(lat))
	for i, l := range lat {
		wake[i] = float64((l.consumed - l.acked).Microseconds()) / 1000
		e2e[i] = float64(l.consumed.Microseconds()) / 1000
	}
	slices.Sort(wake)
	slices.Sort(e2e)
	pct := func(s []float64, p float64) float64 { return s[min(len(s)-1, int(p*float64(len(s))))] }
	b.ReportMetric(pct(wake, 0.5), "wake-p50-ms")
	b.ReportMetric(pct(wake, 0.99), "wake-p99-ms")
	b.ReportMetric(pct(e2e, 0.5), "e2e-p50-ms")
	b.ReportMetric(pct(e2e, 0.99), "e2e-p99-ms")
}
