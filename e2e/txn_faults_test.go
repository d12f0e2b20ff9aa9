package e2e

import (
	"context"
	"fmt"
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

// etlStats counts what the transactional workers did.
type etlStats struct {
	committed, aborted, failed atomic.Int64
	mu                         sync.Mutex
	abortedAttempts            map[string]bool // attempts ended by a deliberate abort
}

// etlWorker runs a read-process-write loop until ctx ends: consume "in"
// in group "etl", produce each value with the attempt's id to "out", and
// commit the offsets in the transaction; every fifth attempt is aborted on
// purpose. A session that fails is closed and a new one started, as an
// application would.
func etlWorker(ctx context.Context, t *testing.T, seeds []string, id int, st *etlStats) {
	attempt := 0
	for ctx.Err() == nil {
		sess, err := kgo.NewGroupTransactSession(
			kgo.SeedBrokers(seeds...),
			kgo.TransactionalID(fmt.Sprintf("etl-%d", id)),
			kgo.TransactionTimeout(10*time.Second),
			kgo.ConsumerGroup("etl"),
			kgo.ConsumeTopics("in"),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
			kgo.FetchIsolationLevel(kgo.ReadCommitted()),
			kgo.DefaultProduceTopic("out"),
			kgo.RecordRetries(20),
			kgo.RetryTimeout(20*time.Second),
		)
		if err != nil {
			t.Errorf("worker %d: session: %v", id, err)
			return
		}
		for ctx.Err() == nil {
			pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			fs := sess.PollRecords(pctx, 200)
			cancel()
			if fs.IsClientClosed() {
				break
			}
			recs := fs.Records()
			if len(recs) == 0 {
				continue
			}
			attempt++
			name := fmt.Sprintf("w%d-a%d", id, attempt)
			if err := sess.Begin(); err != nil {
				st.failed.Add(1)
				break
			}
			outs := make([]*kgo.Record, len(recs))
			for i, r := range recs {
				outs[i] = &kgo.Record{Key: r.Key, Value: []byte(string(r.Value) + "|" + name)}
			}
			// Written before the end, so that an abort has records to
			// hide (an abort drops what is still buffered).
			commit := attempt%5 != 0
			if err := sess.ProduceSync(ctx, outs...).FirstErr(); err != nil {
				commit = false
			}
			ectx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			committed, err := sess.End(ectx, kgo.TransactionEndTry(commit))
			cancel()
			switch {
			case err != nil:
				st.failed.Add(1)
			case committed:
				st.committed.Add(1)
			default:
				st.aborted.Add(1)
				if !commit {
					st.mu.Lock()
					st.abortedAttempts[name] = true
					st.mu.Unlock()
				}
			}
			if err != nil {
				break // a fresh session, as the docs advise
			}
		}
		sess.Close()
	}
}

// TestTransactionsUnderFaults is the exactly-once checker: three
// transactional workers copy a topic into another, read-process-write with
// their offsets committed in the transactions and deliberate aborts mixed
// in, on MinIO with real coordinator and broker processes, while a broker
// and then the coordinator are SIGKILLed and restarted. A read_committed
// consumer of the output must see every input record exactly once and
// nothing of an aborted attempt; a read_uncommitted one sees the aborted
// records too.
func TestTransactionsUnderFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("a fault test with real processes")
	}
	c := floetest.RunCluster(t, 2)
	seeds := c.KafkaAddrs()
	ctx := context.Background()
	admCl := newFranzClient(t, seeds[0], kgo.SeedBrokers(seeds...))
	adm := kadm.NewClient(admCl)
	for _, topic := range []string{"in", "out"} {
		if resp, err := adm.CreateTopic(ctx, 4, 1, nil, topic); err != nil || resp.Err != nil {
			t.Fatalf("create %s: %v %v", topic, err, resp.Err)
		}
	}
	const n = 3000
	var in []*kgo.Record
	for i := range n {
		in = append(in, &kgo.Record{Topic: "in", Key: fmt.Appendf(nil, "k%d", i%97), Value: fmt.Appendf(nil, "v%05d", i)})
	}
	if err := admCl.ProduceSync(ctx, in...).FirstErr(); err != nil {
		t.Fatal(err)
	}

	st := &etlStats{abortedAttempts: map[string]bool{}}
	wctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for w := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			etlWorker(wctx, t, seeds, w, st)
		}()
	}
	defer func() { stop(); wg.Wait() }()

	progress := func(atLeast int64) {
		t.Helper()
		testkit.CheckFor(t, 60*time.Second, 50*time.Millisecond, func() error {
			if got := st.committed.Load(); got < atLeast {
				return fmt.Errorf("%d transactions committed, waiting for %d", got, atLeast)
			}
			return nil
		})
	}
	progress(3)
	c.Brokers[0].Kill() // SIGKILL mid-stream
	c.AddBroker(3)
	progress(st.committed.Load() + 2)
	c.Coord.Kill()
	c.StartCoordinator()
	progress(st.committed.Load() + 2)

	// Done when the group has committed every input offset. The admin
	// client may still name the killed broker until the registry forgets
	// it: its requests are retried.
	var ends kadm.ListedOffsets
	testkit.CheckFor(t, 30*time.Second, 200*time.Millisecond, func() (err error) {
		ends, err = adm.ListEndOffsets(ctx, "in")
		if err == nil {
			err = ends.Error()
		}
		return err
	})
	testkit.CheckFor(t, 120*time.Second, 200*time.Millisecond, func() error {
		offs, err := adm.FetchOffsets(ctx, "etl")
		if err != nil {
			return err
		}
		var behind int64
		ends.Each(func(e kadm.ListedOffset) {
			o, _ := offs.Lookup("in", e.Partition)
			behind += e.Offset - max(o.At, 0)
		})
		if behind > 0 {
			return fmt.Errorf("group etl is %d records behind", behind)
		}
		return nil
	})
	stop()
	wg.Wait()

	// Everything is written: a reader is done when a poll of a few
	// seconds brings nothing. Its first poll waits as long as the test
	// may: a new client's first records need metadata, offsets and a
	// broker with a cold cache, which a slow machine can take seconds for.
	read := func(level kgo.IsolationLevel) []string {
		t.Helper()
		cl := newFranzClient(t, c.Brokers[1].KafkaAddr, kgo.SeedBrokers(c.KafkaAddrs()[1:]...), kgo.ConsumeTopics("out"),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(level))
		var vals []string
		for quiet := time.Duration(0); ; quiet = 5 * time.Second {
			pctx, cancel := ctx, context.CancelFunc(func() {})
			if quiet > 0 {
				pctx, cancel = context.WithTimeout(ctx, quiet)
			}
			fs := cl.PollFetches(pctx)
			cancel()
			got := 0
			fs.EachRecord(func(r *kgo.Record) { vals = append(vals, string(r.Value)); got++ })
			if got == 0 {
				return vals
			}
		}
	}
	committed := read(kgo.ReadCommitted())
	count := map[string]int{}
	abortedVisible := 0
	st.mu.Lock()
	for _, v := range committed {
		src, attempt, _ := strings.Cut(v, "|")
		count[src]++
		if st.abortedAttempts[attempt] {
			abortedVisible++
		}
	}
	st.mu.Unlock()
	lost, dup := 0, 0
	for i := range n {
		switch count[fmt.Sprintf("v%05d", i)] {
		case 0:
			lost++
		case 1:
		default:
			dup++
		}
	}
	all := read(kgo.ReadUncommitted())
	t.Logf("transactions: %d committed, %d aborted (%d on purpose), %d failed; output: %d read_committed, %d read_uncommitted records; lost %d, duplicated %d, aborted visible %d",
		st.committed.Load(), st.aborted.Load(), len(st.abortedAttempts), st.failed.Load(), len(committed), len(all), lost, dup, abortedVisible)
	if lost != 0 || dup != 0 || abortedVisible != 0 {
		t.Fatalf("exactly-once broken: lost %d, duplicated %d, aborted visible %d", lost, dup, abortedVisible)
	}
	if len(st.abortedAttempts) > 0 && len(all) <= len(committed) {
		t.Fatalf("read_uncommitted saw %d records, no more than read_committed's %d: the aborted ones are missing", len(all), len(committed))
	}
}
