package loadtest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Timeouts of the setup and teardown steps, each one bounded on its own.
const (
	setupTimeout = 30 * time.Second
	closeTimeout = 5 * time.Second
)

// gib is 2^30 bytes.
const gib = 1 << 30

// Run runs one load test and returns its report. Canceling ctx (SIGINT)
// ends the load phase early; the run still drains (producers flush,
// consumers catch up), within DrainTimeout, and reports, with Interrupted
// set. An error means the run could not start
// (bad config, unreachable cluster, missing topic) or was not measured.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	r := &runner{cfg: &cfg, log: cfg.Logger, errs: &ErrorCounts{}, http: &http.Client{}}
	if r.log == nil {
		r.log = slog.Default()
	}
	return r.run(ctx)
}

// runner holds one run's clients and statistics.
type runner struct {
	cfg  *Config
	log  *slog.Logger
	errs *ErrorCounts
	http *http.Client

	adm        *kadm.Client
	admCl      *kgo.Client // adm's client, for requests kadm does not make
	partitions []int32
	start      map[int32]int64 // consumers' start offsets, listed at setup

	t0, warmupEnd time.Time

	producers []*producer
	pc        produceCounters
	sets      []*readerSet
	consumers []*consumer
	cc        consumeCounters
	kv        *kvLooker
}

func (r *runner) run(ctx context.Context) (*Report, error) {
	cfg := r.cfg
	// A short metadata min age: the topic may have just been created.
	admCl, err := kgo.NewClient(append(seedOpts(cfg), kgo.MetadataMinAge(100*time.Millisecond))...)
	if err != nil {
		return nil, fmt.Errorf("admin client: %w", err)
	}
	defer admCl.Close()
	r.adm, r.admCl = kadm.NewClient(admCl), admCl
	if err := r.setupTopic(ctx); err != nil {
		return nil, err
	}
	var before objectStoreCounts
	if len(cfg.MetricsURLs) > 0 {
		if before, err = scrapeObjectStore(ctx, r.http, cfg.MetricsURLs, cfg.MetricsNames); err != nil {
			return nil, err
		}
		if len(before.series) == 0 {
			r.log.Warn("no object-store request counters found; object-store report will be empty", "urls", cfg.MetricsURLs)
		}
	}

	var clients []*kgo.Client
	defer func() { closeAll(clients) }() // on setup errors; emptied below
	if err := r.newProducers(&clients); err != nil {
		return nil, err
	}
	if err := r.newConsumers(&clients); err != nil {
		return nil, err
	}
	clients = nil

	r.t0 = time.Now()
	r.warmupEnd = r.t0.Add(cfg.Warmup)
	lim := newLimiter(cfg.Rate) // made now: a bucket filled during setup would open with a burst
	for _, p := range r.producers {
		p.warmupEnd, p.lim = r.warmupEnd, lim
	}
	for _, c := range r.consumers {
		c.warmupEnd = r.warmupEnd
	}
	if cfg.KVURL != "" {
		r.kv = newKVLooker(cfg, r.errs, r.warmupEnd)
	}
	r.log.Info("load phase", "topic", cfg.Topic, "partitions", len(r.partitions), "producers", len(r.producers),
		"consumers", len(r.consumers), "duration", cfg.Duration, "records", cfg.Records, "warmup", cfg.Warmup)

	kvEnd, caughtUp := r.load(ctx)
	end := time.Now()

	rep := r.report(end, kvEnd, caughtUp)
	rep.Interrupted = ctx.Err() != nil
	if len(cfg.MetricsURLs) > 0 {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), setupTimeout)
		after, err := scrapeObjectStore(sctx, r.http, cfg.MetricsURLs, cfg.MetricsNames)
		cancel()
		if err != nil {
			r.log.Warn("final metrics scrape failed", "err", err)
			r.errs.Add("metrics", err)
			rep.Errors, rep.ErrorsTotal = r.errs.Snapshot(), r.errs.Total()
		} else {
			rep.ObjectStore = objectStoreReport(before, after, rep.Produce.Bytes, rep.Consume.Bytes)
		}
	}
	return rep, nil
}

// setupTopic creates or checks the topic and lists the consumers' start
// offsets.
func (r *runner) setupTopic(ctx context.Context) error {
	cfg := r.cfg
	ctx, cancel := context.WithTimeout(ctx, setupTimeout)
	defer cancel()
	td, err := r.adm.ListTopics(ctx, cfg.Topic)
	if err != nil {
		return fmt.Errorf("list topic %s: %w", cfg.Topic, err)
	}
	if !td.Has(cfg.Topic) {
		if !cfg.CreateTopic {
			return fmt.Errorf("topic %s does not exist (pass --create-topic)", cfg.Topic)
		}
		var configs map[string]*string
		for k, v := range cfg.TopicConfigs {
			if configs == nil {
				configs = make(map[string]*string)
			}
			configs[k] = &v
		}
		resp, err := r.adm.CreateTopic(ctx, int32(cfg.Partitions), int16(cfg.ReplicationFactor), configs, cfg.Topic)
		if err == nil {
			err = resp.Err
		}
		if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
			return fmt.Errorf("create topic %s: %w", cfg.Topic, err)
		}
		r.log.Info("created topic", "topic", cfg.Topic, "partitions", cfg.Partitions, "configs", cfg.TopicConfigs)
		// Metadata may lag the creation on a real cluster.
		for {
			if td, err = r.adm.ListTopics(ctx, cfg.Topic); err == nil && td.Has(cfg.Topic) && len(td[cfg.Topic].Partitions) > 0 {
				break
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("topic %s not visible after creation: %w", cfg.Topic, ctx.Err())
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	if err := td[cfg.Topic].Err; err != nil {
		return fmt.Errorf("topic %s: %w", cfg.Topic, err)
	}
	for p := range td[cfg.Topic].Partitions {
		r.partitions = append(r.partitions, p)
	}
	slices.Sort(r.partitions)

	if cfg.Consumers == 0 {
		return nil
	}
	list := r.adm.ListEndOffsets
	if cfg.FromStart {
		list = r.adm.ListStartOffsets
	}
	offs, err := list(ctx, cfg.Topic)
	if err == nil {
		err = offs.Error()
	}
	if err != nil {
		return fmt.Errorf("list offsets of %s: %w", cfg.Topic, err)
	}
	r.start = make(map[int32]int64, len(r.partitions))
	offs.Each(func(o kadm.ListedOffset) { r.start[o.Partition] = o.Offset })
	return nil
}

// newProducers makes the producer clients, adding them to clients.
func (r *runner) newProducers(clients *[]*kgo.Client) error {
	cfg := r.cfg
	pay := newPayload(cfg.Payload, cfg.RecordSize)
	for i := range cfg.Producers {
		cl, err := kgo.NewClient(producerOpts(cfg)...)
		if err != nil {
			return fmt.Errorf("producer %d: %w", i, err)
		}
		*clients = append(*clients, cl)
		r.producers = append(r.producers, &producer{cl: cl, cfg: cfg, payload: pay, hist: NewHistogram(), c: &r.pc, errs: r.errs})
	}
	return nil
}

// newConsumers makes the reader sets and their consumer clients, adding
// them to clients.
func (r *runner) newConsumers(clients *[]*kgo.Client) error {
	cfg := r.cfg
	if cfg.Consumers == 0 {
		return nil
	}
	for i := range cfg.ConsumerGroups {
		name := cfg.groupName(i)
		set := newReaderSet(name, r.start)
		r.sets = append(r.sets, set)
		if cfg.ShareGroup != "" {
			set.share = true
			if err := r.prepareShareGroup(name); err != nil {
				return err
			}
		}
		add := func(opts []kgo.Opt) error {
			cl, err := kgo.NewClient(opts...)
			if err != nil {
				return fmt.Errorf("consumer: %w", err)
			}
			*clients = append(*clients, cl)
			r.consumers = append(r.consumers, &consumer{cl: cl, set: set, hist: NewHistogram(), c: &r.cc, errs: r.errs})
			return nil
		}
		if name != "" {
			for range cfg.Consumers {
				if err := add(consumerOpts(cfg, name, nil, r.start)); err != nil {
					return err
				}
			}
			continue
		}
		split := splitPartitions(r.partitions, cfg.Consumers)
		if len(r.partitions) < cfg.Consumers && i == 0 {
			r.log.Warn("more direct consumers than partitions; the extra ones stay idle", "consumers", cfg.Consumers, "partitions", len(r.partitions))
		}
		for _, parts := range split {
			if len(parts) == 0 {
				continue
			}
			offs := make(map[int32]kgo.Offset, len(parts))
			for _, p := range parts {
				offs[p] = kgo.NewOffset().At(r.start[p])
			}
			if err := add(consumerOpts(cfg, "", offs, r.start)); err != nil {
				return err
			}
		}
	}
	return nil
}

// prepareShareGroup makes share group name start where the run reads
// from, before its consumers join: with FromStart, at the log start of
// partitions it has no state for (share.auto.offset.reset=earliest); else
// at the pre-run ends (AlterShareGroupOffsets, which creates the group,
// and which a group with members refuses: it then keeps its state).
func (r *runner) prepareShareGroup(name string) error {
	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
	defer cancel()
	if r.cfg.FromStart {
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		res := kmsg.NewIncrementalAlterConfigsRequestResource()
		res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, name
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Value = "share.auto.offset.reset", kmsg.StringPtr("earliest")
		res.Configs = append(res.Configs, c)
		req.Resources = append(req.Resources, res)
		resp, err := req.RequestWith(ctx, r.admCl)
		if err == nil && len(resp.Resources) == 1 {
			err = kerr.ErrorForCode(resp.Resources[0].ErrorCode)
		}
		if err != nil {
			return fmt.Errorf("share group %s: share.auto.offset.reset=earliest: %w", name, err)
		}
		return nil
	}
	var offs kadm.Offsets
	for p, o := range r.start {
		offs.AddOffset(r.cfg.Topic, p, o, -1)
	}
	resp, err := r.adm.AlterShareGroupOffsets(ctx, name, offs)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		r.log.Warn("share group start offsets not set; it reads from its own state", "group", name, "err", err)
	}
	return nil
}

// load runs the load and drain phases. It returns when lookups stopped and
// whether every reader set caught up with the producers.
func (r *runner) load(ctx context.Context) (kvEnd time.Time, caughtUp bool) {
	cfg := r.cfg
	stop, stopCancel := context.WithCancel(ctx)
	if cfg.Duration > 0 {
		stop, stopCancel = context.WithDeadline(ctx, r.t0.Add(cfg.Duration))
	}
	defer stopCancel()
	// Records already buffered are delivered after stop; sendCtx fails
	// them only when the drain times out.
	sendCtx, sendCancel := context.WithCancel(context.WithoutCancel(ctx))
	defer sendCancel()
	consumeCtx, consumeCancel := context.WithCancel(context.WithoutCancel(ctx))
	defer consumeCancel()

	progressDone := r.startProgress(ctx)
	defer progressDone()

	var cwg sync.WaitGroup
	for _, c := range r.consumers {
		cwg.Go(func() { c.run(consumeCtx) })
	}
	var pwg sync.WaitGroup
	for _, p := range r.producers {
		pwg.Go(func() { p.run(stop, sendCtx) })
	}
	loopsDone := make(chan struct{})
	go func() { pwg.Wait(); close(loopsDone) }()

	kvCtx, kvCancel := context.WithCancel(stop)
	defer kvCancel()
	var kwg sync.WaitGroup
	if r.kv != nil {
		for _, h := range r.kv.hists {
			kwg.Go(func() { r.kv.worker(kvCtx, h) })
		}
	}

	// Load phase: until the duration, SIGINT, or the record budget.
	if len(r.producers) > 0 {
		select {
		case <-stop.Done():
		case <-loopsDone:
		}
	} else {
		<-stop.Done()
	}
	kvCancel()
	kwg.Wait()
	kvEnd = time.Now()

	// Drain phase.
	drainEnd := time.Now().Add(cfg.DrainTimeout)
	drainTimer := time.AfterFunc(cfg.DrainTimeout, sendCancel)
	defer drainTimer.Stop()
	<-loopsDone
	r.log.Info("draining", "produced", r.pc.acked.Load())
	var fwg sync.WaitGroup
	for _, p := range r.producers {
		fwg.Go(func() {
			if err := p.cl.Flush(sendCtx); err != nil {
				r.log.Warn("producer flush did not finish", "err", err)
			}
		})
	}
	fwg.Wait()
	closeAll(producerClients(r.producers))

	caughtUp = len(r.sets) > 0 && len(r.producers) > 0 && r.awaitCatchUp(context.WithoutCancel(ctx), drainEnd)
	consumeCancel()
	cwg.Wait()
	cls := make([]*kgo.Client, 0, len(r.consumers))
	for _, c := range r.consumers {
		cls = append(cls, c.cl)
	}
	closeAll(cls)
	return kvEnd, caughtUp
}

// awaitCatchUp gives the reader sets the final high watermarks and waits
// until all reach them or deadline. It runs after SIGINT too, so that what
// was produced is also consumed; a second SIGINT kills the process.
func (r *runner) awaitCatchUp(ctx context.Context, deadline time.Time) bool {
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	offs, err := r.adm.ListEndOffsets(ctx, r.cfg.Topic)
	if err == nil {
		err = offs.Error()
	}
	if err != nil {
		r.log.Warn("list end offsets for the drain failed", "err", err)
		r.errs.Add("drain", err)
		return false
	}
	target := make(map[int32]int64)
	offs.Each(func(o kadm.ListedOffset) { target[o.Partition] = o.Offset })
	for _, s := range r.sets {
		s.setTarget(target)
	}
	for _, s := range r.sets {
		select {
		case <-s.caughtUp:
		case <-ctx.Done():
			r.log.Warn("consumers did not catch up before the drain timeout", "group", s.name)
			return false
		}
	}
	return true
}

func producerClients(ps []*producer) []*kgo.Client {
	out := make([]*kgo.Client, 0, len(ps))
	for _, p := range ps {
		out = append(out, p.cl)
	}
	return out
}

// closeAll closes clients in parallel, waiting at most closeTimeout: a
// client stuck on a dead broker must not hang the report.
func closeAll(cls []*kgo.Client) {
	if len(cls) == 0 {
		return
	}
	var wg sync.WaitGroup
	for _, cl := range cls {
		wg.Go(cl.Close)
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(closeTimeout):
	}
}

// report gathers the statistics.
func (r *runner) report(end, kvEnd time.Time, caughtUp bool) *Report {
	cfg := r.cfg
	window := func(last int64) float64 {
		if last == 0 {
			return 0
		}
		return max(0, time.Unix(0, last).Sub(r.warmupEnd).Seconds())
	}
	rep := &Report{
		StartedAt:  r.t0.UTC().Format(time.RFC3339Nano),
		ElapsedSec: end.Sub(r.t0).Seconds(),
		Setup: ReportSetup{
			Brokers: cfg.Brokers, Topic: cfg.Topic, Partitions: len(r.partitions),
			Producers: cfg.Producers, Consumers: cfg.Consumers, ReaderSets: len(r.sets), Group: cfg.Group, ShareGroup: cfg.ShareGroup, FromStart: cfg.FromStart,
			Rate: cfg.Rate, RecordSize: cfg.RecordSize, Payload: cfg.Payload, KeySpace: cfg.KeySpace,
			Acks: cfg.Acks, Compression: cfg.Compression, Idempotent: cfg.Idempotent,
			LingerMs: float64(cfg.Linger) / float64(time.Millisecond), MaxInflight: cfg.MaxInflight,
			DurationSec: cfg.Duration.Seconds(), WarmupSec: cfg.Warmup.Seconds(), Records: cfg.Records,
		},
		Errors:      r.errs.Snapshot(),
		ErrorsTotal: r.errs.Total(),
	}

	pw := window(r.pc.lastAck.Load())
	var ph []*Histogram
	for _, p := range r.producers {
		ph = append(ph, p.hist)
	}
	rep.Produce = ProduceReport{
		Records: r.pc.acked.Load(), Bytes: r.pc.ackedBytes.Load(), Aborted: r.pc.aborted.Load(),
		MeasuredRecords: r.pc.measured.Load(), WindowSec: pw,
		RecordsPerSec: perSec(float64(r.pc.measured.Load()), pw),
		MiBPerSec:     perSec(float64(r.pc.measuredBytes.Load())/mib, pw),
		Latency:       latencyStats(merged(ph)),
	}

	cw := window(r.cc.lastRecv.Load())
	var ch []*Histogram
	for _, c := range r.consumers {
		ch = append(ch, c.hist)
	}
	rep.Consume = ConsumeReport{
		Records: r.cc.records.Load(), Bytes: r.cc.bytes.Load(),
		MeasuredRecords: r.cc.measured.Load(), WindowSec: cw,
		RecordsPerSec: perSec(float64(r.cc.measured.Load()), cw),
		MiBPerSec:     perSec(float64(r.cc.measuredBytes.Load())/mib, cw),
		CaughtUp:      caughtUp,
		EndToEnd:      latencyStats(merged(ch)),
	}

	if r.kv != nil {
		kw := max(0, kvEnd.Sub(r.warmupEnd).Seconds())
		rep.KV = &KVReport{
			Lookups: r.kv.c.lookups.Load(), Hits: r.kv.c.hits.Load(), Misses: r.kv.c.misses.Load(),
			LookupsPerSec: perSec(float64(r.kv.c.measured.Load()), kw),
			Latency:       latencyStats(merged(r.kv.hists)),
		}
	}
	return rep
}

// objectStoreReport turns two scrapes into requests per GiB.
func objectStoreReport(before, after objectStoreCounts, produced, consumed int64) *ObjectStoreReport {
	o := &ObjectStoreReport{
		Puts:   max(0, after.puts-before.puts), // a restarted broker resets its counters
		Gets:   max(0, after.gets-before.gets),
		Series: after.series,
	}
	if timed := after.putTimed - before.putTimed; timed > 0 && after.putSec >= before.putSec {
		o.MeanPutMs = 1000 * (after.putSec - before.putSec) / timed
	}
	o.PutsPerGiBProduced = perSec(o.Puts, float64(produced)/gib)
	o.GetsPerGiBConsumed = perSec(o.Gets, float64(consumed)/gib)
	return o
}
