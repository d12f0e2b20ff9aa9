package e2e

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/floe-io/floe/coordinator/rpc"
	"github.com/floe-io/floe/internal/testkit"
	"github.com/floe-io/floe/internal/testkit/floetest"
	"github.com/floe-io/floe/internal/testkit/natstest"
)

// The high-availability tests: several coordinator processes on a 3-node
// NATS JetStream cluster (package coordinator/ha), one leading and the
// others standing by, with brokers that find the leader by themselves.
// The leader is killed, paused, its replica wiped and restored from a
// snapshot, and a NATS server is lost, all under an idempotent produce load
// whose every acknowledged record is then read back exactly once.

// haProducer is a seqProducer that also keeps when each record was handed
// to the client and when it was acknowledged, to time failovers.
type haProducer struct {
	*seqProducer
	times struct {
		sync.Mutex
		called  []time.Time       // by seq
		ackedAt map[int]time.Time // by seq
	}
}

// haProducerOpts are the HA tests' producer options: franz-go's defaults
// (idempotent, acks=all, retries), manual partitioning, and a buffer large
// enough that Produce does not block through a failover (a record handed
// to the client after a kill is then sent after it).
func haProducerOpts() []kgo.Opt {
	return []kgo.Opt{
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(5 * time.Millisecond),
		kgo.MaxBufferedRecords(50000),
		kgo.RecordDeliveryTimeout(30 * time.Second),
	}
}

// startHAProducer produces clusterRecord(topic, p, 0), (p, 1), ... through
// cl, perTick records every 5ms (200 perTick a second), until stop is
// closed or max records are sent, then flushes.
func startHAProducer(ctx context.Context, cl *kgo.Client, topic string, p int, partitions int32, perTick, max int, stop <-chan struct{}) *haProducer {
	hp := &haProducer{}
	hp.times.ackedAt = map[int]time.Time{}
	hp.seqProducer = startSeqProducerWith(ctx, cl, topic, p, partitions, perTick, max, stop,
		func() {
			hp.times.Lock()
			hp.times.called = append(hp.times.called, time.Now())
			hp.times.Unlock()
		},
		func(seq int, at time.Time) {
			hp.times.Lock()
			hp.times.ackedAt[seq] = at
			hp.times.Unlock()
		})
	return hp
}

// acksAfter returns how many records handed to the client after t0 are
// acknowledged, and when the first of them was.
func (hp *haProducer) acksAfter(t0 time.Time) (n int, first time.Time) {
	hp.times.Lock()
	defer hp.times.Unlock()
	for seq, at := range hp.times.ackedAt {
		if !hp.times.called[seq].After(t0) {
			continue
		}
		n++
		if first.IsZero() || at.Before(first) {
			first = at
		}
	}
	return n, first
}

// waitAcksAfter waits until n records handed to the client after t0 are
// acknowledged, and returns how long after t0 the first of them was.
func (hp *haProducer) waitAcksAfter(t *testing.T, t0 time.Time, n int, within time.Duration) time.Duration {
	t.Helper()
	var first time.Time
	testkit.CheckFor(t, within, 10*time.Millisecond, func() error {
		var got int
		if got, first = hp.acksAfter(t0); got < n {
			return fmt.Errorf("producer %d: %d records produced after %s acknowledged, waiting for %d (%d failed: %v)",
				hp.p, got, t0.Format("15:04:05.000"), n, hp.failedCount(), hp.firstFailures(3))
		}
		return nil
	})
	return first.Sub(t0)
}

func (hp *haProducer) failedCount() int {
	hp.mu.Lock()
	defer hp.mu.Unlock()
	return len(hp.mu.failed)
}

// finish waits for the producer's flush and checks that none of its
// records failed.
func (hp *haProducer) finish(t *testing.T) (sent, acked int) {
	t.Helper()
	sent, acked, failed := hp.wait(t)
	if failed > 0 {
		t.Errorf("producer %d: %d of %d records failed: %v", hp.p, failed, sent, hp.firstFailures(5))
	}
	return sent, acked
}

// checkNoOffsetTwice checks that no two acknowledged records were given
// the same offset.
func checkNoOffsetTwice(t *testing.T, producers ...*haProducer) {
	t.Helper()
	owner := map[recPos]recID{}
	twice := 0
	for _, hp := range producers {
		hp.mu.Lock()
		for seq, pos := range hp.mu.acked {
			id := recID{hp.p, seq}
			if other, ok := owner[pos]; ok {
				if twice++; twice <= 10 {
					t.Errorf("offset %v acknowledged to both producer %d seq %d and producer %d seq %d", pos, other.p, other.seq, id.p, id.seq)
				}
			}
			owner[pos] = id
		}
		hp.mu.Unlock()
	}
	if twice > 0 {
		t.Errorf("%d offsets were acknowledged twice", twice)
	}
}

// seqProducers returns the seqProducers of producers, for checkExactlyOnce.
func seqProducers(producers ...*haProducer) []*seqProducer {
	out := make([]*seqProducer, len(producers))
	for i, hp := range producers {
		out[i] = hp.seqProducer
	}
	return out
}

// probe sends one single-record Produce request (acks=all, no
// idempotence) at a time to partition 0 of its topic, 20ms apart, and
// keeps when each was sent and whether it succeeded: the cluster's
// availability as the broker answers it, without a client's retry
// backoff.
type probe struct {
	done chan struct{}
	mu   struct {
		sync.Mutex
		results []probeResult
	}
}

type probeResult struct {
	sent, answered time.Time
	ok             bool
}

func startProbe(ctx context.Context, t *testing.T, cl *kgo.Client, topic string, stop <-chan struct{}) *probe {
	pr := &probe{done: make(chan struct{})}
	value := []byte("probe")
	batch := buildBatch(t, value)
	go func() {
		defer close(pr.done)
		for {
			select {
			case <-stop:
				return
			case <-ctx.Done():
				return
			case <-time.After(20 * time.Millisecond):
			}
			sent := time.Now()
			rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			code, _, err := produceAt(rctx, cl, topic, batch)
			cancel()
			ok := err == nil && code == 0
			pr.mu.Lock()
			pr.mu.results = append(pr.mu.results, probeResult{sent, time.Now(), ok})
			pr.mu.Unlock()
		}
	}()
	return pr
}

// firstOKAfter returns how long after t0 the first probe sent after t0
// that succeeded was answered, and how many probes sent after t0 failed
// before it.
func (pr *probe) firstOKAfter(t0 time.Time) (d time.Duration, failed int, ok bool) {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	for _, r := range pr.mu.results {
		if !r.sent.After(t0) {
			continue
		}
		if r.ok {
			return r.answered.Sub(t0), failed, true
		}
		failed++
	}
	return 0, failed, false
}

// waitOKAfter waits for firstOKAfter.
func (pr *probe) waitOKAfter(t *testing.T, t0 time.Time, within time.Duration) (time.Duration, int) {
	t.Helper()
	var d time.Duration
	var failed int
	testkit.CheckFor(t, within, 5*time.Millisecond, func() error {
		var ok bool
		if d, failed, ok = pr.firstOKAfter(t0); !ok {
			return fmt.Errorf("no probe sent after %s succeeded yet (%d failed)", t0.Format("15:04:05.000"), failed)
		}
		return nil
	})
	return d, failed
}

// census counts who answered coordinator pings.
type census struct {
	sent, timeouts, errors int
	instances              map[string]int // reply payload -> answers
}

func (c census) String() string {
	return fmt.Sprintf("%d sent, %d answered by %d instance(s) %v, %d timed out, %d other errors",
		c.sent, c.sent-c.timeouts-c.errors, len(c.instances), slices.Collect(maps.Values(c.instances)), c.timeouts, c.errors)
}

// pingCensus sends n ping requests (op "ping", answered with the serving
// coordinator's instance id) on the cluster's coordinator subject, one at
// a time, each waiting up to timeout, as the brokers' requests are sent.
func pingCensus(t *testing.T, urls string, n int, timeout time.Duration) census {
	t.Helper()
	nc, err := nats.Connect(urls)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	req := binary.AppendUvarint([]byte{1}, uint64(timeout/time.Millisecond))
	c := census{instances: map[string]int{}}
	for range n {
		c.sent++
		m, err := nc.Request(rpc.Subject(floetest.ClusterName, "ping"), req, timeout)
		switch {
		case errors.Is(err, nats.ErrTimeout):
			c.timeouts++
		case err != nil:
			c.errors++
		default:
			c.instances[fmt.Sprintf("%x", m.Data)]++
		}
	}
	return c
}

// haConsumer is a consumer group member that commits the offsets of what
// it polled after every poll, and keeps the highest offset of each
// partition whose commit succeeded.
type haConsumer struct {
	cl     *kgo.Client
	cancel context.CancelFunc
	done   chan struct{}
	mu     struct {
		sync.Mutex
		committed           map[int32]int64
		commits, commitErrs int
		lastErr             error
	}
}

func startHAConsumer(t *testing.T, seeds []string, group, topic string) *haConsumer {
	t.Helper()
	hc := &haConsumer{done: make(chan struct{})}
	hc.mu.committed = map[int32]int64{}
	ctx, cancel := context.WithCancel(context.Background())
	hc.cancel = cancel
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit(),
		kgo.FetchMaxWait(200*time.Millisecond), kgo.SessionTimeout(15*time.Second), kgo.HeartbeatInterval(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	hc.cl = cl
	go func() {
		defer close(hc.done)
		for {
			fs := cl.PollFetches(ctx)
			if ctx.Err() != nil || fs.IsClientClosed() {
				return
			}
			recs := fs.Records()
			if len(recs) == 0 {
				continue
			}
			cctx, ccancel := context.WithTimeout(ctx, 10*time.Second)
			err := cl.CommitRecords(cctx, recs...)
			ccancel()
			hc.mu.Lock()
			if err != nil {
				hc.mu.commitErrs++
				hc.mu.lastErr = err
			} else {
				hc.mu.commits++
				for _, r := range recs {
					hc.mu.committed[r.Partition] = max(hc.mu.committed[r.Partition], r.Offset+1)
				}
			}
			hc.mu.Unlock()
		}
	}()
	t.Cleanup(hc.stop)
	return hc
}

func (hc *haConsumer) stop() {
	hc.cancel()
	<-hc.done
	hc.cl.Close()
}

// committed returns the offsets committed successfully so far.
func (hc *haConsumer) committed() map[int32]int64 {
	hc.mu.Lock()
	defer hc.mu.Unlock()
	return maps.Clone(hc.mu.committed)
}

// waitCommitted waits until the member has committed at least n records
// (summed over partitions).
func (hc *haConsumer) waitCommitted(t *testing.T, n int64, within time.Duration) {
	t.Helper()
	testkit.CheckFor(t, within, 20*time.Millisecond, func() error {
		var sum int64
		for _, o := range hc.committed() {
			sum += o
		}
		if sum < n {
			hc.mu.Lock()
			defer hc.mu.Unlock()
			return fmt.Errorf("group member committed %d records, waiting for %d (%d commits failed, last: %v)", sum, n, hc.mu.commitErrs, hc.mu.lastErr)
		}
		return nil
	})
}

// fetchCommitted fetches group's committed offsets of topic, retrying
// while the cluster answers errors.
func fetchCommitted(t *testing.T, ctx context.Context, adm *kadm.Client, group, topic string, within time.Duration) map[int32]int64 {
	t.Helper()
	var out map[int32]int64
	testkit.CheckFor(t, within, 50*time.Millisecond, func() error {
		resp, err := adm.FetchOffsets(ctx, group)
		if err != nil {
			return err
		}
		var perr error
		resp.EachError(func(o kadm.OffsetResponse) { perr = o.Err })
		if perr != nil {
			return perr
		}
		out = map[int32]int64{}
		resp.Each(func(o kadm.OffsetResponse) {
			if o.Topic == topic {
				out[o.Partition] = o.At
			}
		})
		return nil
	})
	return out
}

// endOffsets lists topic's end offsets, retrying while the cluster answers
// errors.
func endOffsets(t *testing.T, ctx context.Context, adm *kadm.Client, topic string, within time.Duration) map[int32]int64 {
	t.Helper()
	var out map[int32]int64
	testkit.CheckFor(t, within, 50*time.Millisecond, func() error {
		listed, err := adm.ListEndOffsets(ctx, topic)
		if err != nil {
			return err
		}
		if err := listed.Error(); err != nil {
			return err
		}
		out = map[int32]int64{}
		listed.Each(func(o kadm.ListedOffset) { out[o.Partition] = o.Offset })
		return nil
	})
	return out
}

// waitGroupCaughtUp waits until group has committed topic's end offsets on
// every partition.
func waitGroupCaughtUp(t *testing.T, ctx context.Context, adm *kadm.Client, group, topic string, within time.Duration) {
	t.Helper()
	end := endOffsets(t, ctx, adm, topic, 10*time.Second)
	testkit.CheckFor(t, within, 100*time.Millisecond, func() error {
		got := fetchCommitted(t, ctx, adm, group, topic, 10*time.Second)
		for p, e := range end {
			if got[p] != e {
				return fmt.Errorf("group %s committed %v, the end offsets are %v", group, got, end)
			}
		}
		return nil
	})
}

// createHATopic creates topic through the broker at addr, retrying while
// the cluster answers errors (a coordinator taking over).
func createHATopic(t *testing.T, ctx context.Context, addr, topic string, partitions int32) {
	t.Helper()
	adm := kadm.NewClient(pinnedClient(t, addr))
	failed := false
	testkit.CheckFor(t, 20*time.Second, 100*time.Millisecond, func() error {
		resp, err := adm.CreateTopic(ctx, partitions, 1, nil, topic)
		if err == nil {
			err = resp.Err
		}
		if errors.Is(err, kerr.TopicAlreadyExists) && failed {
			// An earlier attempt's answer was lost while the coordinators
			// changed leader, but its create was committed: Kafka's
			// controller leaves a client the same doubt. The topic must
			// be the one asked for.
			return checkPartitionCount(ctx, adm, topic, partitions)
		}
		failed = failed || err != nil
		return err
	})
}

// checkPartitionCount fails unless topic exists with partitions partitions.
func checkPartitionCount(ctx context.Context, adm *kadm.Client, topic string, partitions int32) error {
	td, err := adm.ListTopics(ctx, topic)
	if err != nil {
		return err
	}
	d, ok := td[topic]
	if !ok || d.Err != nil {
		return fmt.Errorf("describe %s after it already existed: %v", topic, d.Err)
	}
	if got := int32(len(d.Partitions)); got != partitions {
		return fmt.Errorf("topic %s exists with %d partitions, want %d", topic, got, partitions)
	}
	return nil
}

// logCoordinators logs, when the test failed, what each coordinator
// process printed about its role, and the last lines of each.
// earlier, when set, holds processes of theirs that were replaced.
func logCoordinators(t *testing.T, c *floetest.HACluster, earlier *[]*floetest.Process) {
	t.Cleanup(func() {
		auditLog(t, c)
		for _, hc := range c.Coords {
			if hc.Proc == nil {
				continue
			}
			if ended := floetest.Lines(hc.Proc.Output(), "coordinator role ended"); len(ended) > 0 {
				t.Logf("%s: its role ended %d times with an error; the first: %s", hc.ID, len(ended), ended[0])
			}
		}
		if !t.Failed() {
			return
		}
		procs := map[string]*floetest.Process{}
		for _, hc := range c.Coords {
			if hc.Proc != nil {
				procs[hc.ID] = hc.Proc
			}
		}
		if earlier != nil {
			for i, p := range *earlier {
				procs[fmt.Sprintf("earlier process %d", i)] = p
			}
		}
		for name, p := range procs {
			lines := floetest.Lines(p.Output(), "component=ha", "level=WARN", "level=ERROR", "panic", "goroutine ")
			if len(lines) > 80 {
				lines = lines[len(lines)-80:]
			}
			t.Logf("coordinator %s (pid %d):\n%s", name, p.PID(), strings.Join(lines, "\n"))
		}
		for i, b := range c.Brokers {
			lines := floetest.Lines(b.Output(), "level=WARN", "level=ERROR", "panic")
			if len(lines) > 30 {
				lines = lines[len(lines)-30:]
			}
			t.Logf("broker %d (pid %d):\n%s", i+1, b.PID(), strings.Join(lines, "\n"))
		}
	})
}

// auditLog reads the whole coordinator log and fails the test for every
// message appended under an older term after a newer leader's entry (a
// deposed leader's append that got past the fence), unless the
// coordinators logged that they skip it.
func auditLog(t *testing.T, c *floetest.HACluster) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	a, err := c.AuditLog(ctx)
	if err != nil {
		t.Errorf("audit the coordinator log: %v", err)
		return
	}
	leaders := make([]string, len(a.Leaders))
	for i, l := range a.Leaders {
		leaders[i] = fmt.Sprintf("%s term %d at %d", l.ID, l.Term, l.Seq)
	}
	t.Logf("coordinator log %d..%d, leader entries: %s", a.First, a.Last, strings.Join(leaders, ", "))
	// A stale message is harmless only if every replica skips it: then
	// the coordinators say so (a line with "skip" and its seq=).
	var outs []string
	for _, hc := range c.Coords {
		if hc.Proc != nil {
			outs = append(outs, hc.Proc.Output())
		}
	}
	bad := 0
	for _, m := range a.Stale {
		skipped := false
		for _, out := range outs {
			for _, line := range floetest.Lines(out, fmt.Sprintf(" seq=%d ", m.Seq)) {
				skipped = skipped || strings.Contains(strings.ToLower(line), "skip")
			}
		}
		if skipped {
			t.Logf("coordinator log: a message appended out of turn got in, and was skipped: %s", m)
			continue
		}
		if bad++; bad <= 10 {
			t.Errorf("coordinator log: a message appended out of turn (a deposed leader's, after a newer leader fenced the log, or one after it) got in, and replicas apply it: %s", m)
		}
	}
	if bad > 10 {
		t.Errorf("... %d such messages in all", bad)
	}
}

// haLines returns the HA lines of a coordinator's output, for the test log.
func haLines(p *floetest.Process) string {
	return strings.Join(floetest.Lines(p.Output(), "component=ha"), "\n")
}

// TestHALeaderKill kills (SIGKILL) the leading coordinator of three in the
// middle of an idempotent produce load through two brokers and a consumer
// group's commits. A standby takes over within about the lease TTL; the
// producers carry on; every acknowledged record is then in the log exactly
// once, at the offset acknowledged, offsets dense and none given twice;
// the offsets the group committed before the kill are still committed
// after it, and the group goes on to commit the whole log.
func TestHALeaderKill(t *testing.T) {
	start := time.Now()
	c := floetest.RunHA(t, floetest.HAOptions{Coordinators: 3, Brokers: 2})
	logCoordinators(t, c, nil)
	leader := c.WaitLeader(t, 10*time.Second)
	t.Logf("cluster up in %s: %s leads", time.Since(start).Round(time.Millisecond), leader.ID)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute) // a bound, not a pace: producers stop on their own
	defer cancel()

	const topic, partitions, group, probes = "ha-kill", 4, "ha-kill-group", "ha-kill-probes"
	b1, b2 := c.Brokers[0], c.Brokers[1]
	createHATopic(t, ctx, b1.KafkaAddr, topic, partitions)
	createHATopic(t, ctx, b1.KafkaAddr, probes, 1)
	stop := make(chan struct{})
	pr := startProbe(ctx, t, pinnedClient(t, b2.KafkaAddr), probes, stop)
	p1 := startHAProducer(ctx, pinnedClient(t, b1.KafkaAddr, haProducerOpts()...), topic, 1, partitions, 4, 1<<30, stop)
	p2 := startHAProducer(ctx, pinnedClient(t, b2.KafkaAddr, haProducerOpts()...), topic, 2, partitions, 4, 1<<30, stop)
	cons := startHAConsumer(t, c.KafkaAddrs(), group, topic)
	p1.waitAcks(t, 500, 20*time.Second)
	p2.waitAcks(t, 500, 20*time.Second)
	cons.waitCommitted(t, 200, 20*time.Second)

	committedAtKill := cons.committed()
	ackedAtKill := p1.ackCount() + p2.ackCount()
	killedAt := time.Now()
	leader.Proc.Kill()
	next := c.WaitLeader(t, 20*time.Second, leader)
	tookOver := time.Since(killedAt)
	f1 := p1.waitAcksAfter(t, killedAt, 1, 30*time.Second)
	f2 := p2.waitAcksAfter(t, killedAt, 1, 30*time.Second)
	fp, probesFailed := pr.waitOKAfter(t, killedAt, 30*time.Second)
	h, _ := next.Health()
	t.Logf("%s killed after %d acks; %s said leader (%s) %s later; failover (kill to the first ack of a record produced after it): "+
		"producer 1 %s, producer 2 %s (franz-go retries a failed produce after a metadata refresh, at most one per MetadataMinAge, 5s by default); a raw produce probe first succeeded %s after the kill (%d failed before)",
		leader.ID, ackedAtKill, next.ID, h, tookOver.Round(time.Millisecond), f1.Round(time.Millisecond), f2.Round(time.Millisecond),
		fp.Round(time.Millisecond), probesFailed)

	// The group's commits from before the kill survived it.
	adm := kadm.NewClient(pinnedClient(t, b2.KafkaAddr))
	after := fetchCommitted(t, ctx, adm, group, topic, 20*time.Second)
	for p, o := range committedAtKill {
		if after[p] < o {
			t.Errorf("partition %d: group %s committed %d before the kill, %d after", p, group, o, after[p])
		}
	}
	t.Logf("group offsets before the kill %v, fetched after the failover %v", committedAtKill, after)

	p1.waitAcksAfter(t, killedAt, 1000, 30*time.Second)
	p2.waitAcksAfter(t, killedAt, 1000, 30*time.Second)
	close(stop)
	sent1, acked1 := p1.finish(t)
	sent2, acked2 := p2.finish(t)
	t.Logf("producer 1: %d sent, %d acknowledged; producer 2: %d sent, %d acknowledged", sent1, acked1, sent2, acked2)

	readStart := time.Now()
	read, unacked := checkReadBack(t, ctx, b1.KafkaAddr, topic, partitions, p1, p2)
	t.Logf("read back %d records in %s: each acknowledged record once, offsets dense; %d unacknowledged in the log",
		read, time.Since(readStart).Round(time.Millisecond), unacked)

	waitGroupCaughtUp(t, ctx, adm, group, topic, 20*time.Second)
	cons.mu.Lock()
	t.Logf("the group committed the whole log: %d commits, %d failed (around the failover; last: %v)", cons.mu.commits, cons.mu.commitErrs, cons.mu.lastErr)
	cons.mu.Unlock()
	t.Logf("total %s", time.Since(start).Round(time.Millisecond))
}

// TestHALeaderPause stops the leading coordinator (SIGSTOP) for twice its
// lease TTL under a produce load: another takes over and the load carries
// on. Woken up (SIGCONT), the old leader finds its lease gone and steps
// down to standby without answering anything it computed: every
// acknowledged record is in the log once, where acknowledged, including
// those produced while it was stopped.
func TestHALeaderPause(t *testing.T) {
	start := time.Now()
	c := floetest.RunHA(t, floetest.HAOptions{Coordinators: 3, Brokers: 2})
	logCoordinators(t, c, nil)
	old := c.WaitLeader(t, 10*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute) // a bound, not a pace: producers stop on their own
	defer cancel()

	const topic, partitions = "ha-pause", 4
	b1, b2 := c.Brokers[0], c.Brokers[1]
	createHATopic(t, ctx, b1.KafkaAddr, topic, partitions)
	stop := make(chan struct{})
	p1 := startHAProducer(ctx, pinnedClient(t, b1.KafkaAddr, haProducerOpts()...), topic, 1, partitions, 4, 1<<30, stop)
	p2 := startHAProducer(ctx, pinnedClient(t, b2.KafkaAddr, haProducerOpts()...), topic, 2, partitions, 4, 1<<30, stop)
	p1.waitAcks(t, 500, 20*time.Second)
	p2.waitAcks(t, 500, 20*time.Second)
	oldHealth, _ := old.Health()
	t.Logf("coordinator pings while %s leads: %s", old.ID, pingCensus(t, c.NATSURLs, 10, 300*time.Millisecond))

	if err := old.Proc.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stoppedAt := time.Now()
	resumed := false
	defer func() {
		if !resumed {
			old.Proc.Signal(syscall.SIGCONT)
		}
	}()
	next := c.WaitLeader(t, 20*time.Second, old)
	tookOver := time.Since(stoppedAt)
	nextHealth, _ := next.Health()
	if nextHealth.Term <= oldHealth.Term {
		t.Errorf("the new leader's term %d is not past the old one's %d", nextHealth.Term, oldHealth.Term)
	}
	// Who answers the coordinator's requests now? Pings over NATS, as a
	// broker sends its requests: every one should be answered, by the
	// new leader. A stopped subscriber never answers, so a timeout far
	// above a round trip (2s) still catches it, and a slow machine's
	// round trip is not taken for it.
	census := pingCensus(t, c.NATSURLs, 20, 2*time.Second)
	t.Logf("coordinator pings while %s is stopped and %s leads: %s", old.ID, next.ID, census)
	if census.timeouts > 0 {
		t.Errorf("%d of %d coordinator requests went unanswered while the old leader was stopped and %s led: "+
			"the stopped process is still subscribed in the coordinators' queue group and gets its share of the requests", census.timeouts, census.sent, next.ID)
	}
	// The load goes on through the new leader while the old one stays
	// stopped, for twice the lease TTL in all.
	var f1, f2 time.Duration
	err := testkit.Poll(20*time.Second, 10*time.Millisecond, func() error {
		n1, first1 := p1.acksAfter(stoppedAt)
		n2, first2 := p2.acksAfter(stoppedAt)
		if n1 < 300 || n2 < 300 {
			return fmt.Errorf("%d and %d records produced since the pause at %s acknowledged, waiting for 300 each (failed: %d %v, %d %v)",
				n1, n2, stoppedAt.Format("15:04:05.000"), p1.failedCount(), p1.firstFailures(3), p2.failedCount(), p2.firstFailures(3))
		}
		f1, f2 = first1.Sub(stoppedAt), first2.Sub(stoppedAt)
		return nil
	})
	if err != nil {
		t.Errorf("while the old leader was stopped and %s led: %v", next.ID, err)
	}
	testkit.CheckFor(t, 2*c.LeaseTTL, 10*time.Millisecond, func() error {
		if paused := time.Since(stoppedAt); paused < 2*c.LeaseTTL {
			return fmt.Errorf("stopped for %s, waiting for twice the lease TTL", paused)
		}
		return nil
	})
	acksPaused := p1.ackCount() + p2.ackCount()
	if err := old.Proc.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	resumedAt := time.Now()
	resumed = true
	paused := resumedAt.Sub(stoppedAt)
	h := old.WaitRole(t, "standby", 10*time.Second)
	steppedDown := time.Since(resumedAt)
	t.Logf("%s (%s) stopped; %s led (%s) %s later; first acks of records produced after the pause at %s and %s; "+
		"woken after %s, %s said %q %s later",
		old.ID, oldHealth, next.ID, nextHealth, tookOver.Round(time.Millisecond), f1.Round(time.Millisecond), f2.Round(time.Millisecond),
		paused.Round(time.Millisecond), old.ID, h.Body, steppedDown.Round(time.Millisecond))
	// One coordinator leads (next, or another if next was fenced).
	t.Logf("after the old leader woke up, %s leads", c.WaitLeader(t, 20*time.Second).ID)
	testkit.CheckFor(t, 5*time.Second, 20*time.Millisecond, func() error {
		if !strings.Contains(old.Proc.Output(), "stopped leading") {
			return fmt.Errorf("the old leader's log does not say it stopped leading:\n%s", haLines(old.Proc))
		}
		return nil
	})
	t.Logf("the old leader's role:\n%s", haLines(old.Proc))

	p1.waitAcksAfter(t, resumedAt, 500, 30*time.Second)
	p2.waitAcksAfter(t, resumedAt, 500, 30*time.Second)
	close(stop)
	p1.finish(t)
	p2.finish(t)
	rctx, rcancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer rcancel()
	read, unacked := checkReadBack(t, rctx, b2.KafkaAddr, topic, partitions, p1, p2)
	t.Logf("%d acks by the time the old leader woke; read back %d records, each acknowledged one once (%d unacknowledged); total %s",
		acksPaused, read, unacked, time.Since(start).Round(time.Millisecond))
}

// TestHAWipeRestore takes snapshots every second: a standby is stopped,
// its replica wiped, and restarted; it restores the newest snapshot from
// the bucket and applies the log from there until it has caught up with
// the leader. Then the leader is killed, so the restored coordinator must
// lead: the topic, every record and the group's offsets are there.
func TestHAWipeRestore(t *testing.T) {
	start := time.Now()
	c := floetest.RunHA(t, floetest.HAOptions{Coordinators: 2, Brokers: 1, CoordinatorArgs: []string{"--snapshot-interval", "1s"}})
	logCoordinators(t, c, nil)
	leader := c.WaitLeader(t, 10*time.Second)
	standby := c.Standbys(leader)[0]
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute) // a bound, not a pace: producers stop on their own
	defer cancel()

	const topic, partitions, group = "ha-restore", 4, "ha-restore-group"
	b1 := c.Brokers[0]
	createHATopic(t, ctx, b1.KafkaAddr, topic, partitions)
	cl := pinnedClient(t, b1.KafkaAddr, haProducerOpts()...)
	pA := startHAProducer(ctx, cl, topic, 1, partitions, 5, 3000, nil)
	pA.finish(t)
	adm := kadm.NewClient(pinnedClient(t, b1.KafkaAddr))
	var commit kadm.Offsets
	for p := range int32(partitions) {
		commit.AddOffset(topic, p, int64(100+p), -1)
	}
	testkit.CheckFor(t, 10*time.Second, 50*time.Millisecond, func() error {
		resp, err := adm.CommitOffsets(ctx, group, commit)
		if err != nil {
			return err
		}
		var perr error
		resp.EachError(func(o kadm.OffsetResponse) { perr = o.Err })
		return perr
	})

	// Two more snapshots: the second began after the first ended, after
	// the records and the commit.
	n0 := floetest.CountLines(leader.Proc.Output(), "snapshot taken")
	testkit.CheckFor(t, 15*time.Second, 50*time.Millisecond, func() error {
		if n := floetest.CountLines(leader.Proc.Output(), "snapshot taken"); n < n0+2 {
			return fmt.Errorf("%d snapshots taken, waiting for %d", n, n0+2)
		}
		return nil
	})
	manifests, err := c.SnapshotManifests(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(manifests) == 0 {
		t.Fatal("the leader logged snapshots, but none is in the bucket")
	}
	snapLines := floetest.Lines(leader.Proc.Output(), "snapshot taken")
	t.Logf("snapshots in the bucket: %v; the leader's last: %s", manifests, snapLines[len(snapLines)-1])

	// The standby is stopped and wiped; more records while it is down.
	standby.Proc.Stop()
	if err := standby.Wipe(); err != nil {
		t.Fatal(err)
	}
	pB := startHAProducer(ctx, cl, topic, 2, partitions, 5, 1000, nil)
	pB.finish(t)
	restartAt := time.Now()
	standby.Start()
	testkit.CheckFor(t, 20*time.Second, 20*time.Millisecond, func() error {
		if !strings.Contains(standby.Proc.Output(), "restoring the coordinator state from a snapshot") {
			return fmt.Errorf("the wiped standby did not restore a snapshot:\n%s", haLines(standby.Proc))
		}
		return nil
	})
	lh, err := leader.Health()
	if err != nil {
		t.Fatal(err)
	}
	var sh floetest.Health
	testkit.CheckFor(t, 20*time.Second, 20*time.Millisecond, func() error {
		if sh, err = standby.Health(); err != nil {
			return err
		}
		if sh.Role != "standby" || sh.Lag != 0 || sh.Applied < lh.Applied {
			return fmt.Errorf("restored standby: %s; waiting for lag=0 and applied >= %d (the leader's)", sh, lh.Applied)
		}
		return nil
	})
	t.Logf("the wiped standby restored and caught up in %s: %s (the leader said %s); %s",
		time.Since(restartAt).Round(time.Millisecond), sh, lh, strings.Join(floetest.Lines(standby.Proc.Output(), "restor"), "; "))

	// The restored replica must lead.
	killedAt := time.Now()
	leader.Proc.Kill()
	standby.WaitRole(t, "leader", 20*time.Second)
	t.Logf("%s killed; the restored %s leads %s later", leader.ID, standby.ID, time.Since(killedAt).Round(time.Millisecond))

	read, _ := checkReadBack(t, ctx, b1.KafkaAddr, topic, partitions, pA, pB)
	if read != 4000 {
		t.Errorf("%d records read back, want 4000", read)
	}
	got := fetchCommitted(t, ctx, adm, group, topic, 20*time.Second)
	for p := range int32(partitions) {
		if got[p] != int64(100+p) {
			t.Errorf("partition %d: group %s committed %d, want %d", p, group, got[p], 100+p)
		}
	}
	// And it serves writes.
	pC := startHAProducer(ctx, cl, topic, 3, partitions, 5, 200, nil)
	pC.finish(t)
	t.Logf("through the restored leader: %d records and the group's offsets %v read back, 200 more produced; total %s",
		read, got, time.Since(start).Round(time.Millisecond))
}

// TestHANATSNodeLoss shuts down one of the three NATS servers under a
// produce load and a consumer group: the one leading the coordinator log's
// stream (the stream elects another leader), or the one the leading
// coordinator is connected to (it reconnects to another). The coordinators
// keep one leader (the same or another), clients reconnect, and produce
// and consume go on with nothing acknowledged lost.
func TestHANATSNodeLoss(t *testing.T) {
	t.Run("stream leader", func(t *testing.T) {
		testHANATSNodeLoss(t, func(c *floetest.HACluster, _ *floetest.HACoordinator) *server.Server {
			return natstest.StreamLeader(c.NATS, floetest.LogStream)
		})
	})
	t.Run("leader's server", func(t *testing.T) {
		testHANATSNodeLoss(t, func(c *floetest.HACluster, leader *floetest.HACoordinator) *server.Server {
			return c.NATSServerOf(leader.Proc)
		})
	})
}

func testHANATSNodeLoss(t *testing.T, pick func(*floetest.HACluster, *floetest.HACoordinator) *server.Server) {
	start := time.Now()
	c := floetest.RunHA(t, floetest.HAOptions{Coordinators: 3, Brokers: 2})
	logCoordinators(t, c, nil)
	leader := c.WaitLeader(t, 10*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute) // a bound, not a pace: producers stop on their own
	defer cancel()

	const topic, partitions, group = "ha-nats", 4, "ha-nats-group"
	b1, b2 := c.Brokers[0], c.Brokers[1]
	createHATopic(t, ctx, b1.KafkaAddr, topic, partitions)
	stop := make(chan struct{})
	p1 := startHAProducer(ctx, pinnedClient(t, b1.KafkaAddr, haProducerOpts()...), topic, 1, partitions, 4, 1<<30, stop)
	p2 := startHAProducer(ctx, pinnedClient(t, b2.KafkaAddr, haProducerOpts()...), topic, 2, partitions, 4, 1<<30, stop)
	cons := startHAConsumer(t, c.KafkaAddrs(), group, topic)
	p1.waitAcks(t, 500, 20*time.Second)
	p2.waitAcks(t, 500, 20*time.Second)
	cons.waitCommitted(t, 200, 20*time.Second)

	victim := pick(c, leader)
	if victim == nil {
		t.Fatal("no NATS server to shut down found")
	}
	name := victim.Name()
	var role []string
	if victim.JetStreamIsStreamLeader(server.DEFAULT_GLOBAL_ACCOUNT, floetest.LogStream) {
		role = append(role, "leading the log stream")
	}
	if victim.JetStreamIsLeader() {
		role = append(role, "the JetStream meta leader")
	}
	if c.NATSServerOf(leader.Proc) == victim {
		role = append(role, "the leading coordinator's")
	}
	lostAt := time.Now()
	victim.Shutdown()
	victim.WaitForShutdown()
	f1 := p1.waitAcksAfter(t, lostAt, 1, 30*time.Second)
	f2 := p2.waitAcksAfter(t, lostAt, 1, 30*time.Second)
	var newStreamLeader string
	testkit.CheckFor(t, 20*time.Second, 50*time.Millisecond, func() error {
		s := natstest.StreamLeader(c.NATS, floetest.LogStream)
		if s == nil {
			return fmt.Errorf("no NATS server leads stream %s", floetest.LogStream)
		}
		newStreamLeader = s.Name()
		return nil
	})
	now := c.WaitLeader(t, 20*time.Second)
	t.Logf("NATS server %s (%s) shut down; the stream's leader is now %s; coordinator %s led before, %s now; "+
		"first acks of records produced after the loss at %s and %s",
		name, strings.Join(role, ", "), newStreamLeader, leader.ID, now.ID, f1.Round(time.Millisecond), f2.Round(time.Millisecond))

	p1.waitAcksAfter(t, lostAt, 1000, 30*time.Second)
	p2.waitAcksAfter(t, lostAt, 1000, 30*time.Second)
	close(stop)
	p1.finish(t)
	p2.finish(t)
	read, unacked := checkReadBack(t, ctx, b1.KafkaAddr, topic, partitions, p1, p2)
	adm := kadm.NewClient(pinnedClient(t, b2.KafkaAddr))
	waitGroupCaughtUp(t, ctx, adm, group, topic, 20*time.Second)
	cons.mu.Lock()
	commits, commitErrs := cons.mu.commits, cons.mu.commitErrs
	cons.mu.Unlock()
	t.Logf("read back %d records, each acknowledged one once (%d unacknowledged); the group committed the whole log (%d commits, %d failed); total %s",
		read, unacked, commits, commitErrs, time.Since(start).Round(time.Millisecond))
}

// TestHAFailoverTime measures failovers: with FLOE_HA_FAILOVER_RUNS=N it
// kills the leading coordinator N times under a produce load (restarting
// each on its data dir, as a standby, before the next kill) and logs the
// failover time, from the SIGKILL to the first acknowledgement of a record
// produced after it, p50 and max: for a franz-go producer with its
// defaults (whose retry of a failed produce waits for a metadata refresh,
// at most one per MetadataMinAge, 5s), for one with MetadataMinAge 250ms,
// and for raw one-record produce requests. Every acknowledged record is
// then read back exactly once. FLOE_HA_LEASE_TTL sets --lease-ttl (2s).
func TestHAFailoverTime(t *testing.T) {
	runs, _ := strconv.Atoi(os.Getenv("FLOE_HA_FAILOVER_RUNS"))
	if runs <= 0 {
		t.Skip("set FLOE_HA_FAILOVER_RUNS=N to measure N failovers")
	}
	start := time.Now()
	opts := floetest.HAOptions{Coordinators: 3, Brokers: 2}
	if v := os.Getenv("FLOE_HA_LEASE_TTL"); v != "" { // e.g. 5s, the flag's default
		ttl, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("FLOE_HA_LEASE_TTL: %v", err)
		}
		opts.LeaseTTL = ttl
	}
	c := floetest.RunHA(t, opts)
	var killed []*floetest.Process
	logCoordinators(t, c, &killed)
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(runs)*30*time.Second+time.Minute)
	defer cancel()

	const topic, partitions, probes = "ha-failover", 4, "ha-failover-probes"
	b1, b2 := c.Brokers[0], c.Brokers[1]
	createHATopic(t, ctx, b1.KafkaAddr, topic, partitions)
	createHATopic(t, ctx, b1.KafkaAddr, probes, 1)
	stop := make(chan struct{})
	pr := startProbe(ctx, t, pinnedClient(t, b2.KafkaAddr), probes, stop)
	p1 := startHAProducer(ctx, pinnedClient(t, b1.KafkaAddr, haProducerOpts()...), topic, 1, partitions, 4, 1<<30, stop)
	// Producer 2 refreshes metadata as often as every 250ms (franz-go's
	// default MetadataMinAge, 5s, holds a failed produce's retry until the
	// next refresh).
	p2 := startHAProducer(ctx, pinnedClient(t, b2.KafkaAddr, append(haProducerOpts(), kgo.MetadataMinAge(250*time.Millisecond))...),
		topic, 2, partitions, 4, 1<<30, stop)
	var failovers, fastFailovers, takeovers, probeTimes []time.Duration
	for i := range runs {
		leader := c.WaitLeader(t, 20*time.Second)
		for _, s := range c.Standbys(leader) {
			testkit.CheckFor(t, 20*time.Second, 20*time.Millisecond, func() error {
				h, err := s.Health()
				if err != nil {
					return err
				}
				if h.Role != "standby" || h.Leader != leader.ID || h.Lag > 100 {
					return fmt.Errorf("%s: %s", s.ID, h)
				}
				return nil
			})
		}
		p1.waitAcks(t, p1.ackCount()+200, 20*time.Second)
		killedAt := time.Now()
		leader.Proc.Kill()
		killed = append(killed, leader.Proc)
		next := c.WaitLeader(t, 20*time.Second, leader)
		takeover := time.Since(killedAt)
		first := p1.waitAcksAfter(t, killedAt, 1, 30*time.Second)
		fast := p2.waitAcksAfter(t, killedAt, 1, 30*time.Second)
		fp, _ := pr.waitOKAfter(t, killedAt, 30*time.Second)
		failovers, fastFailovers = append(failovers, first), append(fastFailovers, fast)
		takeovers, probeTimes = append(takeovers, takeover), append(probeTimes, fp)
		t.Logf("run %d: %s killed, %s led %s later; first acks %s (franz-go defaults) and %s (MetadataMinAge 250ms) after the kill, first raw probe %s after",
			i+1, leader.ID, next.ID, takeover.Round(time.Millisecond), first.Round(time.Millisecond), fast.Round(time.Millisecond), fp.Round(time.Millisecond))
		leader.Start() // back as a standby, on its data dir
	}
	close(stop)
	p1.finish(t)
	p2.finish(t)
	read, _ := checkReadBack(t, ctx, b1.KafkaAddr, topic, partitions, p1, p2)
	pct := func(ds []time.Duration) (p50, worst time.Duration) {
		s := slices.Clone(ds)
		slices.Sort(s)
		return s[(len(s)-1)/2], s[len(s)-1]
	}
	p50, worst := pct(failovers)
	fp50, fworst := pct(fastFailovers)
	tp50, tworst := pct(takeovers)
	pp50, pworst := pct(probeTimes)
	r := func(d time.Duration) time.Duration { return d.Round(time.Millisecond) }
	t.Logf("%d failovers (lease TTL %s), from the SIGKILL: to the first ack of a record produced after it p50 %s, max %s (franz-go defaults), "+
		"p50 %s, max %s (MetadataMinAge 250ms); to the first raw produce probe acknowledged p50 %s, max %s; "+
		"to /healthz leader p50 %s, max %s; %d records read back exactly once; total %s",
		runs, c.LeaseTTL, r(p50), r(worst), r(fp50), r(fworst), r(pp50), r(pworst),
		r(tp50), r(tworst), read, r(time.Since(start)))
}

// checkReadBack reads topic back through addr and checks it against the
// producers, which have finished: every acknowledged record is there once,
// where it was acknowledged, no offset was given twice, and every record
// sent is there. It returns how many records were read and how many of
// them were not acknowledged.
func checkReadBack(t *testing.T, ctx context.Context, addr, topic string, partitions int32, producers ...*haProducer) (read, unacked int) {
	t.Helper()
	where := readBack(t, ctx, addr, topic, partitions)
	unacked = checkExactlyOnce(t, where, seqProducers(producers...)...)
	checkNoOffsetTwice(t, producers...)
	sent := 0
	for _, p := range producers {
		p.mu.Lock()
		sent += p.mu.sent
		p.mu.Unlock()
	}
	if len(where) != sent {
		t.Errorf("%d distinct records in the log, %d sent (all acknowledged)", len(where), sent)
	}
	return len(where), unacked
}
