package e2e

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/floe-io/floe/internal/testkit"
	"github.com/floe-io/floe/internal/testkit/floetest"
)

// The compaction workload: 100 keys written in 8 rounds with filler, some
// deleted on the way.
const (
	compactKeys   = 100
	compactRounds = 8
)

// compactRecord returns what round r writes for key i: a value, a
// tombstone (del), or nothing (skip). Keys i%10 == 0 are deleted in round
// 3 and never written again, keys i%10 == 1 deleted in round 5 and written
// again from round 6, keys i%10 == 2 deleted in the last round; the others
// are overwritten every round.
func compactRecord(i, r int) (value []byte, del, skip bool) {
	switch {
	case i%10 == 0 && r == 3, i%10 == 1 && r == 5, i%10 == 2 && r == compactRounds-1:
		return nil, true, false
	case i%10 == 0 && r > 3:
		return nil, false, true
	}
	v := fmt.Appendf(nil, "k%03d-r%d-", i, r)
	return append(v, strings.Repeat("f", 1500)...), false, false
}

// compactLatest returns key i's latest value after every round, or nil
// when its latest record is a tombstone.
func compactLatest(i int) []byte {
	for r := compactRounds - 1; r >= 0; r-- {
		if v, del, skip := compactRecord(i, r); !skip {
			if del {
				return nil
			}
			return v
		}
	}
	return nil
}

func compactKey(i int) string { return fmt.Sprintf("k%03d", i) }

// keyedProducer produces to one partition of each topic, in the
// background, records over 20 keys ("idem-NN") whose values are their
// sequence numbers, with franz-go's idempotent producer, until stopped.
type keyedProducer struct {
	done chan struct{}
	mu   struct {
		sync.Mutex
		sent   int
		latest map[string]int // topic/key -> the highest acknowledged seq
		errs   []error
	}
}

func startKeyedProducer(ctx context.Context, cl *kgo.Client, topics []string, stop <-chan struct{}) *keyedProducer {
	kp := &keyedProducer{done: make(chan struct{})}
	kp.mu.latest = map[string]int{}
	go func() {
		defer close(kp.done)
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for seq := 0; ; seq++ {
			select {
			case <-stop:
				_ = cl.Flush(ctx)
				return
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			for _, topic := range topics {
				key := fmt.Sprintf("idem-%02d", seq%20)
				rec := &kgo.Record{Topic: topic, Key: []byte(key), Value: fmt.Appendf(nil, "%d-%s", seq, strings.Repeat("i", 200))}
				kp.mu.Lock()
				kp.mu.sent++
				kp.mu.Unlock()
				cl.Produce(ctx, rec, func(r *kgo.Record, err error) {
					kp.mu.Lock()
					defer kp.mu.Unlock()
					if err != nil {
						kp.mu.errs = append(kp.mu.errs, fmt.Errorf("%s/%s seq %d: %w", r.Topic, r.Key, seq, err))
						return
					}
					k := r.Topic + "/" + string(r.Key)
					if s, ok := kp.mu.latest[k]; !ok || seq > s {
						kp.mu.latest[k] = seq
					}
				})
			}
		}
	}()
	return kp
}

// compactRead is a partition read from offset 0 to its end.
type compactRead struct {
	main map[string][]*kgo.Record // k000... -> its records in offset order
	idem map[string][]int         // idem-NN -> the seqs in offset order
	n    int
}

// readCompacted reads partition 0 of topic from the start until the record
// at the listed end offset minus one (always the latest of its key, so
// never compacted away), checking that offsets strictly increase.
func readCompacted(t *testing.T, addr, topic string) (compactRead, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl := pinnedClient(t, addr, kgo.FetchMaxWait(200*time.Millisecond),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	defer cl.Close()
	listed, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
	if err != nil {
		return compactRead{}, fmt.Errorf("list end offsets: %w", err)
	}
	end := listed[topic][0].Offset
	out := compactRead{main: map[string][]*kgo.Record{}, idem: map[string][]int{}}
	last := int64(-1)
	for last < end-1 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return out, fmt.Errorf("%s: read up to offset %d of %d before the deadline", topic, last, end)
		}
		var ferr error
		fs.EachError(func(_ string, _ int32, err error) {
			if !kerr.IsRetriable(err) {
				ferr = err
			}
		})
		if ferr != nil {
			return out, fmt.Errorf("%s: fetch: %w", topic, ferr)
		}
		for _, r := range fs.Records() {
			if r.Offset <= last {
				t.Fatalf("%s: offset %d after %d", topic, r.Offset, last)
			}
			last = r.Offset
			out.n++
			k := string(r.Key)
			if strings.HasPrefix(k, "idem-") {
				var seq int
				if _, err := fmt.Sscanf(string(r.Value), "%d-", &seq); err != nil {
					t.Fatalf("%s: idempotent record %q at %d: %v", topic, r.Value, r.Offset, err)
				}
				out.idem[k] = append(out.idem[k], seq)
				continue
			}
			out.main[k] = append(out.main[k], r)
		}
	}
	return out, nil
}

// checkMain checks the main keys of a read: one record per live key with
// its latest value; for a deleted key, while tombstones are kept, its
// tombstone (or nothing for a key deleted before the last round: see
// lastRoundDelete), and afterwards nothing.
func (cr compactRead) checkMain(topic string, tombstones bool) error {
	var errs []error
	for i := range compactKeys {
		k := compactKey(i)
		recs := cr.main[k]
		want := compactLatest(i)
		tombstone := len(recs) == 1 && recs[0].Value == nil
		switch {
		case want != nil && (len(recs) != 1 || string(recs[0].Value) != string(want)):
			errs = append(errs, fmt.Errorf("%s: live key %s has %d records, want 1 with its latest value", topic, k, len(recs)))
		case want == nil && tombstones && lastRoundDelete(i) && !tombstone:
			errs = append(errs, fmt.Errorf("%s: deleted key %s has %d records, want its tombstone", topic, k, len(recs)))
		case want == nil && tombstones && !tombstone && len(recs) != 0:
			errs = append(errs, fmt.Errorf("%s: deleted key %s has %d records, want its tombstone or none", topic, k, len(recs)))
		case want == nil && !tombstones && len(recs) != 0:
			errs = append(errs, fmt.Errorf("%s: deleted key %s has %d records after delete.retention.ms, want none", topic, k, len(recs)))
		}
		if len(errs) > 3 {
			break
		}
	}
	return errors.Join(errs...)
}

// lastRoundDelete reports whether key i was deleted in the last round. Its
// tombstone's delete.retention.ms starts with the pass that covers that
// round, which is also the pass the check of the compacted topic waits
// for, so it is still there then. An earlier round's tombstone may have
// been kept by a pass while later rounds were produced, and be gone by the
// time the compaction of every live key is done on a slow machine.
func lastRoundDelete(i int) bool {
	_, del, _ := compactRecord(i, compactRounds-1)
	return del
}

// checkIdem checks the idempotent producer's records: no (key, seq)
// twice, seqs increasing per key, and (once it stopped) each key's last
// record the latest acknowledged.
func (cr compactRead) checkIdem(topic string, latest map[string]int) error {
	for k, seqs := range cr.idem {
		for j := 1; j < len(seqs); j++ {
			if seqs[j] <= seqs[j-1] {
				return fmt.Errorf("%s: %s has seq %d after %d: a duplicate or reordering", topic, k, seqs[j], seqs[j-1])
			}
		}
	}
	if latest == nil {
		return nil
	}
	for k, seq := range latest {
		topicOf, key, _ := strings.Cut(k, "/")
		if topicOf != topic {
			continue
		}
		seqs := cr.idem[key]
		if len(seqs) == 0 || seqs[len(seqs)-1] != seq {
			return fmt.Errorf("%s: %s ends with seqs %v, the latest acknowledged is %d", topic, key, seqs[max(len(seqs)-3, 0):], seq)
		}
	}
	return nil
}

// checkKV checks GET /kv for every main key of the indexed topic: the
// latest value of a live key, 404 for a deleted one. With unavailableOK,
// a 5xx answer (the coordinator is down) passes; a wrong answer never
// does.
func checkKV(t *testing.T, httpAddr, topic string, unavailableOK bool) error {
	for i := range compactKeys {
		a := kvGet(t, httpAddr, fmt.Sprintf("/kv/%s/%s", topic, compactKey(i)))
		want := compactLatest(i)
		switch {
		case unavailableOK && a.status >= 500:
		case want != nil && (a.status != http.StatusOK || string(a.value) != string(want)):
			return fmt.Errorf("/kv %s: %d (code %d %s), want its latest value", compactKey(i), a.status, a.errorCode, a.message)
		case want == nil && a.status != http.StatusNotFound:
			return fmt.Errorf("/kv %s: %d, want 404 for a deleted key", compactKey(i), a.status)
		}
	}
	return nil
}

// TestCompaction compacts two compacted topics, one with the key index
// (the index names each key's latest offset) and one without (the
// compactor builds its key map), with real clients and MinIO: 100 keys
// overwritten in 8 rounds with filler, some deleted, while an idempotent
// producer keeps writing to the same partitions and /kv is read
// throughout. A consumer from offset 0 then gets one record per live key
// with its latest value, and the tombstones until delete.retention.ms has
// passed since they were first cleaned; the compacting broker and the
// coordinator are SIGKILLed mid-pass; the idempotent producer sees no
// error and no duplicate; ListOffsets keeps the log start; kcat
// (librdkafka) reads the compacted topic through its gaps and empty
// batches; and the bucket holds exactly the segments the coordinator
// references once the collector has run.
func TestCompaction(t *testing.T) {
	const gcGrace = 5 * time.Second // a tier job's lease is half of it
	c := floetest.RunClusterWith(t, 0, floetest.ClusterOptions{
		CoordinatorArgs: []string{"--tier-interval", "100ms", "--gc-grace", gcGrace.String(), "--kv-index-enabled"},
		BrokerArgs:      []string{"--tier-poll-interval", "50ms", "--kv-index-enabled"},
	})
	// Broker 1 serves clients and /kv and runs no jobs; broker 2 runs them.
	b1 := c.AddBroker(1, "--consolidation-enabled=false", "--kv-remote-read-enabled")
	b2 := c.AddBroker(2)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	const kvTopic, plainTopic = "compact-kv", "compact-plain"
	topics := []string{kvTopic, plainTopic}
	adm := kadm.NewClient(pinnedClient(t, b1.KafkaAddr))
	common := map[string]*string{
		"local.retention.ms": kadm.StringPtr("200"), "segment.bytes": kadm.StringPtr("1048576"),
		"delete.retention.ms": kadm.StringPtr("15000"), "min.cleanable.dirty.ratio": kadm.StringPtr("0.2"),
	}
	for _, tc := range []struct {
		name  string
		extra map[string]*string
	}{
		{kvTopic, map[string]*string{"cleanup.policy": kadm.StringPtr("compact"), "kv.index.enabled": kadm.StringPtr("true")}},
		{plainTopic, map[string]*string{"cleanup.policy": kadm.StringPtr("compact,delete"), "retention.ms": kadm.StringPtr("-1")}},
	} {
		configs := map[string]*string{}
		for k, v := range common {
			configs[k] = v
		}
		for k, v := range tc.extra {
			configs[k] = v
		}
		resp, err := adm.CreateTopic(ctx, 1, -1, configs, tc.name)
		if err == nil {
			err = resp.Err
		}
		if err != nil {
			t.Fatalf("create %s: %v", tc.name, err)
		}
	}

	stop := make(chan struct{})
	idem := startKeyedProducer(ctx, pinnedClient(t, b1.KafkaAddr, kgo.ProducerLinger(2*time.Millisecond)), topics, stop)
	// The main workload, a round at a time (each round its own objects).
	main := pinnedClient(t, b1.KafkaAddr, kgo.ProducerLinger(0))
	for r := range compactRounds {
		var recs []*kgo.Record
		for _, topic := range topics {
			for i := range compactKeys {
				v, del, skip := compactRecord(i, r)
				if skip {
					continue
				}
				rec := &kgo.Record{Topic: topic, Key: []byte(compactKey(i)), Value: v}
				if del {
					rec.Value = nil
				}
				recs = append(recs, rec)
			}
		}
		if err := main.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatalf("round %d: %v", r, err)
		}
	}
	if err := checkKV(t, b1.HTTPAddr, kvTopic, false); err != nil {
		t.Fatalf("before compaction: %v", err)
	}
	// /kv is read throughout: every answer must be right.
	kvErr := make(chan error, 1)
	kvStop := make(chan struct{})
	var kvWG sync.WaitGroup
	kvWG.Add(1)
	go func() {
		defer kvWG.Done()
		for n := 0; ; n++ {
			select {
			case <-kvStop:
				kvErr <- nil
				return
			default:
			}
			if err := checkKV(t, b1.HTTPAddr, kvTopic, true); err != nil {
				kvErr <- fmt.Errorf("/kv pass %d: %w", n, err)
				return
			}
		}
	}()

	passes := func() float64 {
		n, err := floetest.Metric(c.Coord.HTTPAddr, "floe_coordinator_compaction_passes_total")
		if err != nil {
			return 0
		}
		return n
	}
	waitPasses := func(n float64) {
		t.Helper()
		testkit.CheckFor(t, 60*time.Second, 5*time.Millisecond, func() error {
			if got := passes(); got < n {
				return fmt.Errorf("%v compaction passes, waiting for %v", got, n)
			}
			return nil
		})
	}
	// Compacted: one record per live key, the tombstones kept (for
	// delete.retention.ms, 15s, after the pass that first kept them; see
	// lastRoundDelete).
	var lastErr string
	testkit.CheckFor(t, 90*time.Second, 200*time.Millisecond, func() error {
		for _, topic := range topics {
			cr, err := readCompacted(t, b1.KafkaAddr, topic)
			if err == nil {
				err = cr.checkMain(topic, true)
			}
			if err != nil {
				if err.Error() != lastErr {
					t.Logf("not yet: %v", err)
					lastErr = err.Error()
				}
				return err
			}
			if err := cr.checkIdem(topic, nil); err != nil {
				t.Fatal(err)
			}
		}
		return nil
	})
	t.Logf("compacted after %v passes", passes())

	// SIGKILL the compacting broker, then the coordinator, each while a
	// job is assigned (broker 2 runs them all; the idempotent producer's
	// new segments keep passes coming, so it is mostly a compaction).
	inFlight := func() error {
		var n [5]float64
		for i, outcome := range []string{"assigned", "completed", "refused", "abandoned", "expired"} {
			v, err := floetest.Metric(c.Coord.HTTPAddr, "floe_coordinator_tier_jobs_total", fmt.Sprintf(`outcome="%s"`, outcome))
			if err != nil {
				return err
			}
			n[i] = v
		}
		if n[0]-n[1]-n[2]-n[3]-n[4] < 1 {
			return fmt.Errorf("no tier job in flight (%v)", n)
		}
		return nil
	}
	waitPasses(passes() + 1)
	testkit.CheckFor(t, 60*time.Second, time.Millisecond, inFlight)
	b2.Kill()
	t.Logf("killed broker 2 with a job in flight, after %v passes", passes())
	b2 = c.AddBroker(2)
	waitPasses(passes() + 2)
	testkit.CheckFor(t, 60*time.Second, time.Millisecond, inFlight)
	c.Coord.Kill()
	t.Logf("killed the coordinator with a job in flight")
	c.StartCoordinator()
	waitPasses(2)

	// After delete.retention.ms the tombstones are gone too.
	testkit.CheckFor(t, 90*time.Second, 200*time.Millisecond, func() error {
		for _, topic := range topics {
			cr, err := readCompacted(t, b1.KafkaAddr, topic)
			if err != nil {
				return err
			}
			if err := cr.checkMain(topic, false); err != nil {
				return err
			}
		}
		return nil
	})
	close(kvStop)
	kvWG.Wait()
	if err := <-kvErr; err != nil {
		t.Error(err)
	}
	if err := checkKV(t, b1.HTTPAddr, kvTopic, false); err != nil {
		t.Errorf("after compaction: %v", err)
	}

	close(stop)
	select {
	case <-idem.done:
	case <-time.After(60 * time.Second):
		t.Fatal("the idempotent producer did not flush within 60s")
	}
	idem.mu.Lock()
	sent, latest, errs := idem.mu.sent, idem.mu.latest, idem.mu.errs
	idem.mu.Unlock()
	t.Logf("idempotent producer: %d records sent", sent)
	if len(errs) > 0 {
		t.Errorf("idempotent producer: %d errors, e.g. %v", len(errs), errs[:min(len(errs), 3)])
	}
	for _, topic := range topics {
		cr, err := readCompacted(t, b1.KafkaAddr, topic)
		if err != nil {
			t.Fatal(err)
		}
		if err := cr.checkMain(topic, false); err != nil {
			t.Error(err)
		}
		if err := cr.checkIdem(topic, latest); err != nil {
			t.Error(err)
		}
		t.Logf("%s: %d records read from offset 0", topic, cr.n)
		// ListOffsets: compaction leaves the log start where it was.
		starts, err := adm.ListStartOffsets(ctx, topic)
		if err != nil {
			t.Fatal(err)
		}
		if o := starts[topic][0]; o.Err != nil || o.Offset != 0 {
			t.Errorf("%s: log start offset %d (%v), want 0", topic, o.Offset, o.Err)
		}
	}

	// librdkafka reads the compacted topic through its gaps and emptied
	// batches to the end.
	out, stderr := runKcat(t, 60*time.Second, "", "-C", "-b", b1.KafkaAddr, "-t", plainTopic, "-p", "0", "-o", "beginning", "-e", "-q", "-f", "%k\n")
	checkKcatStderr(t, stderr)
	seen := map[string]int{}
	for _, k := range strings.Fields(out) {
		seen[k]++
	}
	for i := range compactKeys {
		want := 1
		if compactLatest(i) == nil {
			want = 0
		}
		if seen[compactKey(i)] != want {
			t.Errorf("kcat: key %s read %d times, want %d", compactKey(i), seen[compactKey(i)], want)
		}
	}

	// After the grace, the bucket's segments are exactly the ones the
	// coordinator references: the killed passes' outputs were collected.
	store := c.MinIO.Store(t)
	testkit.CheckFor(t, 60*time.Second, 200*time.Millisecond, func() error {
		var known float64
		for _, topic := range topics {
			n, err := floetest.Metric(c.Coord.HTTPAddr, "floe_partition_segments", fmt.Sprintf(`topic="%s"`, topic))
			if err != nil {
				return err
			}
			known += n
		}
		if segs := bucketKeys(t, store, "tiered/"); float64(len(segs)) != known {
			return fmt.Errorf("bucket holds %d segments, the coordinator references %v", len(segs), known)
		}
		return nil
	})
}
