package fleet

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/loadtest"
)

// Coordinator is what the simulator asks of the batch coordinator, as a
// broker does; the rpc client (coordinator/rpc.Client) implements it.
type Coordinator interface {
	CreateTopic(ctx context.Context, req coordapi.CreateTopicRequest) (coordapi.Topic, error)
	Topic(ctx context.Context, name string) (coordapi.Topic, error)
	InitProducerID(ctx context.Context, req coordapi.InitProducerIDRequest) (coordapi.InitProducerIDResponse, error)
	CommitObject(ctx context.Context, req *coordapi.CommitRequest) (*coordapi.CommitResponse, error)
	FindBatches(ctx context.Context, req coordapi.FindBatchesRequest) (coordapi.FindBatchesResponse, error)
	FindBatchesMulti(ctx context.Context, reqs []coordapi.FindBatchesRequest) ([]coordapi.FindBatchesResult, error)
}

// GroupCoordinator is what the simulated groups ask of the group
// coordinator; the rpc client's GroupClient implements it.
type GroupCoordinator interface {
	ConsumerGroupHeartbeat(ctx context.Context, c coordapi.ClientInfo, req *kmsg.ConsumerGroupHeartbeatRequest) (*kmsg.ConsumerGroupHeartbeatResponse, error)
	OffsetCommit(ctx context.Context, req *kmsg.OffsetCommitRequest) (*kmsg.OffsetCommitResponse, error)
}

// histShards spreads the brokers' latencies over this many histograms, so
// that hundreds of brokers do not queue on one lock.
const histShards = 16

// runner is one run's state.
type runner struct {
	cfg Config
	// coords are the connections to the coordinator: broker and consumer
	// i use coords[i mod len(coords)], coord the first.
	coords []Coordinator
	coord  Coordinator
	groups GroupCoordinator
	log    *slog.Logger

	topics []coordapi.Topic
	// gTopic and gPart map a global partition index (0..Partitions-1) to
	// its topic (an index into topics) and partition.
	gTopic, gPart []int32
	// start holds each partition's high watermark before the load, next
	// the high watermark the fleet's commits have reached since.
	start []int64
	next  []atomic.Int64
	// hot maps a zipf rank to a global partition, so that the hot
	// partitions are scattered over the topics.
	hot []int32

	t0, warmEnd, end time.Time
	// lag holds each broker's next arrival time (Unix ns): how far behind
	// now it is, is the broker's backlog.
	lag []atomic.Int64

	commitLat, commitRPC [histShards]*loadtest.Histogram
	c                    struct {
		commits, batches, records, bytes           atomic.Int64 // all, warmup included
		measured, measuredBatches, offeredMeasured atomic.Int64 // after the warmup, by the end
		backlog                                    atomic.Int64 // due before the end, never sent
	}
	findLat, multiLat *loadtest.Histogram
	f                 struct {
		calls, coords, multiCalls, multiPartitions, multiCoords atomic.Int64
	}
	hbLat, ocLat *loadtest.Histogram
	g            struct {
		heartbeats, offsetCommits, committedPartitions atomic.Int64
	}
	errs loadtest.ErrorCounts
}

// Run creates the topics (or checks those that exist), plays the fleet for
// cfg.Duration and returns the report. Broker and consumer i call the
// coordinator through coords[i mod len(coords)] (each its own NATS
// connection, as brokers have). A cancelled ctx ends the load early; the
// report says so.
func Run(ctx context.Context, cfg Config, coords []Coordinator, groups GroupCoordinator) (*Report, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if len(coords) == 0 {
		return nil, errors.New("fleet: no Coordinator")
	}
	if cfg.Groups > 0 && groups == nil {
		return nil, errors.New("fleet: groups need a GroupCoordinator")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Seed == 0 {
		cfg.Seed = time.Now().UnixNano()
	}
	r := &runner{cfg: cfg, coords: coords, coord: coords[0], groups: groups, log: cfg.Logger,
		findLat: loadtest.NewHistogram(), multiLat: loadtest.NewHistogram(),
		hbLat: loadtest.NewHistogram(), ocLat: loadtest.NewHistogram()}
	for i := range histShards {
		r.commitLat[i], r.commitRPC[i] = loadtest.NewHistogram(), loadtest.NewHistogram()
	}
	rep := &Report{Setup: setupOf(cfg)}

	var before ProcessStats
	if p := cfg.Probe; p != nil && p.PID > 0 {
		st, err := p.coordinator()
		if err != nil {
			return nil, err
		}
		before = st
	}
	setupStart := time.Now()
	if err := r.createTopics(ctx); err != nil {
		return nil, err
	}
	if err := r.readStart(ctx); err != nil {
		return nil, err
	}
	r.log.Info("topics ready", "topics", len(r.topics), "partitions", cfg.Partitions, "took", time.Since(setupStart).Round(time.Millisecond))
	pids, err := r.producerIDs(ctx)
	if err != nil {
		return nil, err
	}
	r.hot = make([]int32, cfg.Partitions)
	for i, g := range rand.New(rand.NewPCG(uint64(cfg.Seed), 1)).Perm(cfg.Partitions) {
		r.hot[i] = int32(g)
	}

	var pre ProcessStats
	var logBefore LogStats
	if p := cfg.Probe; p != nil {
		if p.PID > 0 {
			if pre, err = p.coordinator(); err != nil {
				return nil, err
			}
		}
		if p.Log != nil {
			if logBefore, err = p.Log(ctx); err != nil {
				r.log.Warn("no log stats", "err", err)
			}
		}
	}

	self, _ := process(os.Getpid()) // Linux only; 0 elsewhere
	r.t0 = time.Now()
	r.warmEnd, r.end = r.t0.Add(cfg.Warmup), r.t0.Add(cfg.Duration)
	rep.StartedAt = r.t0.UTC().Format(time.RFC3339Nano)
	r.lag = make([]atomic.Int64, cfg.Brokers)
	loadCtx, cancel := context.WithDeadline(ctx, r.end)
	defer cancel()
	stopProgress := r.startProgress(loadCtx)
	var wg sync.WaitGroup
	for b := range cfg.Brokers {
		wg.Go(func() { r.broker(ctx, b, pids[b]) })
	}
	for i := range cfg.Consumers {
		wg.Go(func() { r.consumer(loadCtx, i) })
	}
	for i := range cfg.Groups {
		wg.Go(func() { r.group(loadCtx, i) })
	}
	wg.Wait()
	stopProgress()
	elapsed := time.Since(r.t0)
	rep.ElapsedSec = elapsed.Seconds()
	rep.Interrupted = ctx.Err() != nil

	r.fill(rep)
	if st, err := process(os.Getpid()); err == nil {
		rep.SimulatorCPUSec = (st.CPU - self.CPU).Seconds()
	}
	if p := cfg.Probe; p != nil {
		r.probeAfter(context.WithoutCancel(ctx), rep, p, before, pre, logBefore, elapsed)
	}
	rep.Errors, rep.ErrorsTotal = r.errs.Snapshot(), r.errs.Total()
	return rep, nil
}

// createTopics creates the topics, or checks that those that exist have
// the partitions they should, and fills the global partition maps.
func (r *runner) createTopics(ctx context.Context) error {
	cfg := r.cfg
	per, extra := cfg.Partitions/cfg.Topics, cfg.Partitions%cfg.Topics
	r.gTopic, r.gPart = make([]int32, 0, cfg.Partitions), make([]int32, 0, cfg.Partitions)
	for i := range cfg.Topics {
		n := int32(per)
		if i < extra {
			n++
		}
		name := fmt.Sprintf("%s%d", cfg.TopicPrefix, i)
		tctx, cancel := context.WithTimeout(ctx, cfg.RequestTimeout)
		t, err := r.coord.CreateTopic(tctx, coordapi.CreateTopicRequest{Name: name, Partitions: n, ReplicationFactor: -1})
		if errors.Is(err, kerr.TopicAlreadyExists) {
			t, err = r.coord.Topic(tctx, name)
			if err == nil && t.Partitions != n {
				err = fmt.Errorf("it exists with %d partitions, not %d", t.Partitions, n)
			}
		}
		cancel()
		if err != nil {
			return fmt.Errorf("topic %s: %w", name, err)
		}
		r.topics = append(r.topics, t)
		for p := range n {
			r.gTopic, r.gPart = append(r.gTopic, int32(i)), append(r.gPart, p)
		}
	}
	return nil
}

// findChunk is how many partitions readStart asks about in one call.
const findChunk = 1000

// readStart reads every partition's high watermark: past the high
// watermark, FindBatchesMulti answers OFFSET_OUT_OF_RANGE with the
// partition's state.
func (r *runner) readStart(ctx context.Context) error {
	n := r.cfg.Partitions
	r.start, r.next = make([]int64, n), make([]atomic.Int64, n)
	for lo := 0; lo < n; lo += findChunk {
		hi := min(lo+findChunk, n)
		reqs := make([]coordapi.FindBatchesRequest, 0, hi-lo)
		for g := lo; g < hi; g++ {
			reqs = append(reqs, r.findReq(g, math.MaxInt64))
		}
		tctx, cancel := context.WithTimeout(ctx, r.cfg.RequestTimeout)
		res, err := r.coord.FindBatchesMulti(tctx, reqs)
		cancel()
		if err != nil {
			return fmt.Errorf("high watermarks of partitions %d-%d: %w", lo, hi-1, err)
		}
		for i, res := range res {
			if res.ErrorCode != 0 && res.ErrorCode != kerr.OffsetOutOfRange.Code {
				return fmt.Errorf("high watermark of %s/%d: %w", r.topics[r.gTopic[lo+i]].Name, r.gPart[lo+i], kerr.ErrorForCode(res.ErrorCode))
			}
			r.start[lo+i] = res.HighWatermark
			r.next[lo+i].Store(res.HighWatermark)
		}
	}
	return nil
}

func (r *runner) findReq(g int, offset int64) coordapi.FindBatchesRequest {
	return coordapi.FindBatchesRequest{TopicID: r.topics[r.gTopic[g]].ID, Partition: r.gPart[g], Offset: offset, MaxBytes: r.cfg.FetchMaxBytes}
}

// producerIDs gets each broker's producer ids (none without
// ProducersPerBroker).
func (r *runner) producerIDs(ctx context.Context) ([][]int64, error) {
	out := make([][]int64, r.cfg.Brokers)
	for b := range out {
		for range r.cfg.ProducersPerBroker {
			tctx, cancel := context.WithTimeout(ctx, r.cfg.RequestTimeout)
			resp, err := r.coord.InitProducerID(tctx, coordapi.InitProducerIDRequest{TimeoutMs: 60000, ProducerID: -1, ProducerEpoch: -1})
			cancel()
			if err != nil {
				return nil, fmt.Errorf("init producer id: %w", err)
			}
			out[b] = append(out[b], resp.ProducerID)
		}
	}
	return out, nil
}

// broker plays one broker: objects arrive at its share of the rate and
// are committed one at a time, in order, until the end of the load.
func (r *runner) broker(ctx context.Context, b int, pids []int64) {
	cfg := r.cfg
	rng := rand.New(rand.NewPCG(uint64(cfg.Seed), uint64(b)+2))
	rate := cfg.ObjectsPerSecond / float64(cfg.Brokers)
	interarrival := func() time.Duration {
		if cfg.Arrivals == ArrivalsEven {
			return time.Duration(float64(time.Second) / rate)
		}
		return time.Duration(rng.ExpFloat64() / rate * float64(time.Second))
	}
	// Even arrivals start at a random phase, so that brokers do not commit
	// in lockstep.
	next := r.t0.Add(time.Duration(rng.Float64() * float64(time.Second) / rate))
	if cfg.Arrivals == ArrivalsPoisson {
		next = r.t0.Add(interarrival())
	}
	var zipf *rand.Zipf
	if cfg.PartitionChoice == ChoiceZipf {
		zipf = rand.NewZipf(rng, cfg.ZipfS, 1, uint64(cfg.Partitions-1))
	}
	o := &objectMaker{r: r, rng: rng, zipf: zipf, pids: pids, picked: map[int32]struct{}{}, seq: map[int32]int32{}}
	shard := b % histShards
	coord := r.coords[b%len(r.coords)]
	timer := time.NewTimer(0)
	<-timer.C
	// A broker behind stops at the end too: what it has not sent by then
	// is its backlog.
	for next.Before(r.end) && time.Now().Before(r.end) {
		r.lag[b].Store(next.UnixNano())
		if d := time.Until(next); d > 0 {
			timer.Reset(d)
			select {
			case <-ctx.Done():
				timer.Stop()
				return
			case <-timer.C:
			}
		}
		if ctx.Err() != nil {
			return
		}
		req := o.object(b)
		cctx, cancel := context.WithTimeout(ctx, cfg.CommitTimeout)
		sent := time.Now()
		resp, err := coord.CommitObject(cctx, req)
		done := time.Now()
		cancel()
		measured := !next.Before(r.warmEnd)
		if measured {
			r.c.offeredMeasured.Add(1)
		}
		if err == nil && len(resp.Results) != len(req.Batches) {
			err = fmt.Errorf("%d results for %d batches", len(resp.Results), len(req.Batches))
		}
		if err != nil {
			addError(&r.errs, "commit", err)
		} else {
			batches, records := o.apply(req, resp)
			r.c.commits.Add(1)
			r.c.batches.Add(batches)
			r.c.records.Add(records)
			r.c.bytes.Add(req.ObjectSize)
			if measured {
				r.commitLat[shard].Record(done.Sub(next))
				r.commitRPC[shard].Record(done.Sub(sent))
				if !done.After(r.end) {
					r.c.measured.Add(1)
					r.c.measuredBatches.Add(batches)
				}
			}
		}
		next = next.Add(interarrival())
	}
	r.lag[b].Store(0)
	// What arrived before the end and was never sent is the backlog.
	for ; next.Before(r.end); next = next.Add(interarrival()) {
		r.c.backlog.Add(1)
		if !next.Before(r.warmEnd) {
			r.c.offeredMeasured.Add(1)
		}
	}
}

// objectMaker rolls one broker's objects.
type objectMaker struct {
	r      *runner
	rng    *rand.Rand
	zipf   *rand.Zipf
	pids   []int64
	picked map[int32]struct{}
	// seq is the next sequence of the broker's producer on each partition.
	seq map[int32]int32
	// parts are the global partitions of the object being committed.
	parts []int32
}

// object rolls an object of BatchesPerObject batches on distinct
// partitions, as a broker's roll of its producers' batches.
func (o *objectMaker) object(broker int) *coordapi.CommitRequest {
	cfg := o.r.cfg
	clear(o.picked)
	o.parts = o.parts[:0]
	pick := func(g int32) {
		if _, dup := o.picked[g]; !dup {
			o.picked[g] = struct{}{}
			o.parts = append(o.parts, g)
		}
	}
	if o.zipf != nil {
		for tries := 0; len(o.parts) < cfg.BatchesPerObject && tries < 20*cfg.BatchesPerObject; tries++ {
			pick(o.r.hot[o.zipf.Uint64()])
		}
	}
	for len(o.parts) < cfg.BatchesPerObject {
		pick(int32(o.rng.IntN(cfg.Partitions)))
	}
	req := &coordapi.CommitRequest{
		ObjectKey: coordapi.WALKey("", uuid.Must(uuid.NewV7()).String()),
		BrokerID:  int32(broker),
		Batches:   make([]coordapi.CommitBatch, len(o.parts)),
	}
	mean := cfg.ObjectBytes / int64(len(o.parts))
	now := time.Now().UnixMilli()
	var off int64
	for i, g := range o.parts {
		length := max(1, mean*3/4+o.rng.Int64N(mean/2+1))
		records := 1 + o.rng.IntN(2*cfg.RecordsPerBatch-1)
		b := coordapi.CommitBatch{
			TopicID: o.r.topics[o.r.gTopic[g]].ID, Partition: o.r.gPart[g],
			ByteOffset: off, ByteLength: int32(min(length, math.MaxInt32)),
			LastOffsetDelta: int32(records - 1), MaxTimestamp: now,
			ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1,
		}
		if len(o.pids) > 0 {
			b.ProducerID, b.ProducerEpoch, b.BaseSequence = o.pids[int(g)%len(o.pids)], 0, o.seq[g]
		}
		off += int64(b.ByteLength)
		req.Batches[i] = b
	}
	req.ObjectSize = off
	return req
}

// apply counts a committed object's accepted batches and records, moves
// the partitions' high watermarks and the producers' sequences on, and
// counts the refused batches by error code.
func (o *objectMaker) apply(req *coordapi.CommitRequest, resp *coordapi.CommitResponse) (batches, records int64) {
	for i, res := range resp.Results {
		b := &req.Batches[i]
		if res.ErrorCode != 0 {
			o.r.errs.AddKind("commit batch: " + kerr.ErrorForCode(res.ErrorCode).Error())
			continue
		}
		n := int64(b.LastOffsetDelta) + 1
		batches++
		records += n
		g := o.parts[i]
		if len(o.pids) > 0 {
			o.seq[g] += int32(n)
		}
		end := res.BaseOffset + n
		for {
			cur := o.r.next[g].Load()
			if end <= cur || o.r.next[g].CompareAndSwap(cur, end) {
				break
			}
		}
	}
	return batches, records
}

// consumer tails its partitions: every FetchInterval it asks where the
// batches after the last offset it saw are, with one FindBatchesMulti or a
// FindBatches per partition.
func (r *runner) consumer(ctx context.Context, i int) {
	cfg := r.cfg
	parts := make([]int, cfg.ConsumerPartitions)
	pos := make([]int64, len(parts))
	for j := range parts {
		parts[j] = (i*cfg.ConsumerPartitions + j) % cfg.Partitions
		pos[j] = r.start[parts[j]]
	}
	coord := r.coords[i%len(r.coords)]
	multi := cfg.FetchAPI == FetchMulti || (cfg.FetchAPI == FetchBoth && i%2 == 1)
	advance := func(j int, code int16, res coordapi.FindBatchesResponse) int64 {
		switch {
		case code == kerr.OffsetOutOfRange.Code:
			pos[j] = res.HighWatermark
		case code != 0:
			r.errs.AddKind("find batches: " + kerr.ErrorForCode(code).Error())
		case len(res.Batches) > 0:
			pos[j] = res.Batches[len(res.Batches)-1].LastOffset + 1
		}
		return int64(len(res.Batches))
	}
	t := time.NewTicker(cfg.FetchInterval)
	defer t.Stop()
	reqs := make([]coordapi.FindBatchesRequest, len(parts))
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if multi {
			for j, g := range parts {
				reqs[j] = r.findReq(g, pos[j])
			}
			tctx, cancel := context.WithTimeout(ctx, cfg.RequestTimeout)
			start := time.Now()
			res, err := coord.FindBatchesMulti(tctx, reqs)
			took := time.Since(start)
			cancel()
			if err != nil {
				if !r.over(ctx) {
					addError(&r.errs, "find batches multi", err)
				}
				continue
			}
			var coords int64
			for j := range res {
				coords += advance(j, res[j].ErrorCode, res[j].FindBatchesResponse)
			}
			if start.After(r.warmEnd) {
				r.multiLat.Record(took)
			}
			r.f.multiCalls.Add(1)
			r.f.multiPartitions.Add(int64(len(reqs)))
			r.f.multiCoords.Add(coords)
			continue
		}
		for j, g := range parts {
			tctx, cancel := context.WithTimeout(ctx, cfg.RequestTimeout)
			start := time.Now()
			res, err := coord.FindBatches(tctx, r.findReq(g, pos[j]))
			took := time.Since(start)
			cancel()
			var code int16
			if err != nil {
				if r.over(ctx) {
					return
				}
				var ke *kerr.Error
				if !errors.As(err, &ke) || ke != kerr.OffsetOutOfRange {
					addError(&r.errs, "find batches", err)
					continue
				}
				code = ke.Code
				// Out of range: the high watermark is the next offset the
				// fleet's commits reached, as a fetch's answer would say.
				res.HighWatermark = max(pos[j], r.next[g].Load())
			}
			if start.After(r.warmEnd) {
				r.findLat.Record(took)
			}
			r.f.calls.Add(1)
			r.f.coords.Add(advance(j, code, res))
		}
	}
}

// group plays one KIP-848 consumer group of one member subscribed to topic
// i mod Topics: heartbeats at the interval the coordinator answers, and
// the assigned partitions' offsets committed every OffsetCommitInterval
// (at the high watermarks the fleet reached: a consumer at the tail).
func (r *runner) group(ctx context.Context, i int) {
	cfg := r.cfg
	ti := i % len(r.topics)
	topic := r.topics[ti]
	name := fmt.Sprintf("%sgroup-%d", cfg.TopicPrefix, i)
	member := uuid.NewString()
	client := coordapi.ClientInfo{ID: "fleetsim", Host: "127.0.0.1"}
	var epoch int32
	var owned []int32
	ack := true // the next heartbeat reports the owned partitions
	hbEvery := 5 * time.Second
	// The first global index of the topic's partitions.
	first := 0
	for g := range r.gTopic {
		if int(r.gTopic[g]) == ti {
			first = g
			break
		}
	}
	heartbeat := func() {
		req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		req.Version = 1
		req.Group, req.MemberID, req.MemberEpoch = name, member, epoch
		if epoch == 0 {
			req.RebalanceTimeoutMillis = 30000
			req.SubscribedTopicNames = []string{topic.Name}
			req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		} else if ack {
			req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{{TopicID: topic.ID, Partitions: owned}}
		}
		tctx, cancel := context.WithTimeout(ctx, cfg.RequestTimeout)
		start := time.Now()
		resp, err := r.groups.ConsumerGroupHeartbeat(tctx, client, req)
		took := time.Since(start)
		cancel()
		if err != nil {
			if !r.over(ctx) {
				addError(&r.errs, "heartbeat", err)
			}
			return
		}
		if start.After(r.warmEnd) {
			r.hbLat.Record(took)
		}
		r.g.heartbeats.Add(1)
		if resp.ErrorCode != 0 {
			r.errs.AddKind("heartbeat: " + kerr.ErrorForCode(resp.ErrorCode).Error())
			epoch, owned, ack = 0, nil, true // join again
			return
		}
		ack = false
		epoch = resp.MemberEpoch
		if resp.HeartbeatIntervalMillis > 0 {
			hbEvery = time.Duration(resp.HeartbeatIntervalMillis) * time.Millisecond
		}
		if a := resp.Assignment; a != nil {
			owned, ack = nil, true
			for _, t := range a.Topics {
				if t.TopicID == topic.ID {
					owned = append(owned, t.Partitions...)
				}
			}
		}
	}
	commit := func() {
		if len(owned) == 0 || epoch == 0 {
			return
		}
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Version = 9
		req.Group, req.Generation, req.MemberID = name, epoch, member
		t := kmsg.NewOffsetCommitRequestTopic()
		t.Topic, t.TopicID = topic.Name, topic.ID
		for _, p := range owned {
			pt := kmsg.NewOffsetCommitRequestTopicPartition()
			pt.Partition, pt.Offset, pt.LeaderEpoch = p, r.next[first+int(p)].Load(), -1
			t.Partitions = append(t.Partitions, pt)
		}
		req.Topics = []kmsg.OffsetCommitRequestTopic{t}
		tctx, cancel := context.WithTimeout(ctx, cfg.RequestTimeout)
		start := time.Now()
		resp, err := r.groups.OffsetCommit(tctx, req)
		took := time.Since(start)
		cancel()
		if err != nil {
			if !r.over(ctx) {
				addError(&r.errs, "offset commit", err)
			}
			return
		}
		if start.After(r.warmEnd) {
			r.ocLat.Record(took)
		}
		r.g.offsetCommits.Add(1)
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				if p.ErrorCode != 0 {
					r.errs.AddKind("offset commit: " + kerr.ErrorForCode(p.ErrorCode).Error())
				} else {
					r.g.committedPartitions.Add(1)
				}
			}
		}
	}
	heartbeat()
	hb := time.NewTimer(hbEvery)
	if ack {
		hb.Reset(0)
	}
	defer hb.Stop()
	// Groups commit out of step with each other, as their clients started
	// at different times.
	oc := time.NewTimer(time.Duration(rand.Int64N(int64(cfg.OffsetCommitInterval))))
	defer oc.Stop()
	for {
		select {
		case <-ctx.Done():
			// Leave, as a closing client does, so that the group's next
			// member is assigned its partitions at once.
			if epoch != 0 {
				leave := kmsg.NewPtrConsumerGroupHeartbeatRequest()
				leave.Version = 1
				leave.Group, leave.MemberID, leave.MemberEpoch = name, member, -1
				lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cfg.RequestTimeout)
				if resp, err := r.groups.ConsumerGroupHeartbeat(lctx, client, leave); err != nil {
					addError(&r.errs, "leave group", err)
				} else if resp.ErrorCode != 0 {
					r.errs.AddKind("leave group: " + kerr.ErrorForCode(resp.ErrorCode).Error())
				}
				cancel()
			}
			return
		case <-hb.C:
			heartbeat()
			wait := hbEvery
			if ack {
				wait = 0 // acknowledge an assignment at once, as a client does
			}
			hb.Reset(wait)
		case <-oc.C:
			commit()
			oc.Reset(cfg.OffsetCommitInterval)
		}
	}
}

// over says whether the load is over: a call that failed then was cut
// short by the end, not by the coordinator.
func (r *runner) over(ctx context.Context) bool {
	return ctx.Err() != nil || !time.Now().Before(r.end)
}
