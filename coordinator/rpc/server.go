package rpc

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/twmb/franz-go/pkg/kerr"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/coordinator"
	"github.com/floe-io/floe/groups"
	"github.com/floe-io/floe/metrics"
)

const (
	// defaultServerTimeout bounds a request that carries no timeout.
	defaultServerTimeout = 5 * time.Second
	// maxServerTimeout bounds the timeout a request may ask for.
	maxServerTimeout = time.Minute
	// maxConcurrent bounds the requests being served at once; past it the
	// server stops taking messages off its subscriptions.
	maxConcurrent = 1024
	// replyOverhead is room kept in a reply for its envelope.
	replyOverhead = 64
	// drainTimeout bounds how long Close serves requests already delivered.
	drainTimeout = 5 * time.Second
	// workerIdle is how long a request goroutine waits for the next request
	// before it exits. Reusing goroutines keeps their grown stacks: a Pebble
	// read needs tens of KiB, which a new goroutine per request would grow
	// (and copy) again every time.
	workerIdle = 10 * time.Second
)

// handler serves one op: it decodes the request body from d and encodes
// the response body into e, or returns the error to answer.
type handler func(s *Server, ctx context.Context, d *decoder, e *encoder) error

// unary builds the handler of an op that decodes one request, makes one
// coordinator call and encodes its result.
func unary[Req, Resp any](dec func(*decoder) Req, call func(*coordinator.Coordinator, context.Context, Req) (Resp, error),
	enc func(*encoder, Resp)) handler {
	return func(s *Server, ctx context.Context, d *decoder, e *encoder) error {
		req := dec(d)
		if d.err != nil {
			return &coordapi.KafkaError{Code: kerr.InvalidRequest, Message: d.err.Error()}
		}
		resp, err := call(s.c, ctx, req)
		if err != nil {
			return err
		}
		enc(e, resp)
		return nil
	}
}

// settledUnary is unary for a call that also says whether its answer is
// settled (it depends only on what the coordinator's log has): the reply
// then goes out through ServerOptions.SettledGate. enc may trim the answer
// to the payload limit, hence the Server.
func settledUnary[Req, Resp any](dec func(*decoder) Req, call func(*coordinator.Coordinator, context.Context, Req) (Resp, bool, error),
	enc func(*Server, *encoder, Req, Resp) error) handler {
	return func(s *Server, ctx context.Context, d *decoder, e *encoder) error {
		req := dec(d)
		if d.err != nil {
			return &coordapi.KafkaError{Code: kerr.InvalidRequest, Message: d.err.Error()}
		}
		resp, settled, err := call(s.c, ctx, req)
		if err != nil {
			return err
		}
		e.settled = settled
		return enc(s, e, req, resp)
	}
}

// handlers maps every op to its handler.
var handlers = map[string]handler{
	opCreateTopic:     unary(decCreateTopicReq, (*coordinator.Coordinator).CreateTopic, encTopic),
	opDeleteTopic:     (*Server).handleDeleteTopic,
	opDeleteTopicByID: (*Server).handleDeleteTopicByID,
	opCreatePartitions: unary(decCreatePartitionsReq, func(c *coordinator.Coordinator, ctx context.Context, r createPartitionsReq) (empty, error) {
		return empty{}, c.CreatePartitions(ctx, r.Name, r.Count, r.ValidateOnly)
	}, encEmpty),
	opAlterTopicConfigs: unary(decAlterConfigsReq, func(c *coordinator.Coordinator, ctx context.Context, r alterConfigsReq) (empty, error) {
		return empty{}, c.AlterTopicConfigs(ctx, r.Name, r.Ops, r.Incremental, r.ValidateOnly)
	}, encEmpty),
	opTopic:       unary(decString, (*coordinator.Coordinator).Topic, encTopic),
	opTopicByID:   unary(decID, (*coordinator.Coordinator).TopicByID, encTopic),
	opTopics:      (*Server).handleTopics,
	opFindBatches: settledUnary(decFindBatchesReq, (*coordinator.Coordinator).FindBatchesSettled, (*Server).encFindBatches),
	// find_batches_multi is new in this build: a coordinator without it
	// has no subscriber for it, which brokers take as "ask per partition".
	opFindBatchesMulti: settledUnary(decFindBatchesMultiReq, (*coordinator.Coordinator).FindBatchesMultiSettled, (*Server).encFindBatchesMulti),
	opPartitionState: unary(decTopicPartitionReq, func(c *coordinator.Coordinator, ctx context.Context, r topicPartitionReq) (coordapi.PartitionState, error) {
		return c.PartitionState(ctx, r.ID, r.Partition)
	}, encPartitionState),
	opListOffset: unary(decListOffsetReq, func(c *coordinator.Coordinator, ctx context.Context, r listOffsetReq) (listOffsetResp, error) {
		off, ts, err := c.ListOffset(ctx, r.ID, r.Partition, r.Timestamp)
		return listOffsetResp{Offset: off, Timestamp: ts}, err
	}, encListOffsetResp),
	opDeleteRecords: unary(decDeleteRecordsReq, func(c *coordinator.Coordinator, ctx context.Context, r deleteRecordsReq) (int64, error) {
		return c.DeleteRecords(ctx, r.ID, r.Partition, r.Offset)
	}, encInt64),
	opInitProducerID: unary(decInitProducerIDReq, (*coordinator.Coordinator).InitProducerID, encInitProducerIDResp),
	opCommitObject:   unary(decCommitReq, (*coordinator.Coordinator).CommitObject, encCommitResp),
	opRegisterBroker: unary(decBrokerInfo, func(c *coordinator.Coordinator, ctx context.Context, b coordapi.BrokerInfo) (empty, error) {
		return empty{}, c.RegisterBroker(ctx, b)
	}, encEmpty),
	opDeregisterBroker: unary(decBrokerInfo, func(c *coordinator.Coordinator, ctx context.Context, b coordapi.BrokerInfo) (empty, error) {
		return empty{}, c.DeregisterBroker(ctx, b)
	}, encEmpty),
	opKvLookup: unary(decKvLookupReq, func(c *coordinator.Coordinator, ctx context.Context, r kvLookupReq) (kvLookupResp, error) {
		off, hwm, found, err := c.KvLookup(ctx, r.ID, r.Partition, r.Key)
		return kvLookupResp{Offset: off, HighWatermark: hwm, Found: found}, err
	}, encKvLookupResp),
	opKvReady:       unary(decID, (*coordinator.Coordinator).KvReady, encBool),
	opObjectStates:  unary(decStrings, (*coordinator.Coordinator).ObjectStates, encObjectStates),
	opForgetObjects: unary(decStrings, (*coordinator.Coordinator).ForgetObjects, encStrings),
	opTxnView:       unary(decInt64, txnView, encTxnViewResp),
	opClusterInfo: unary(decEmpty, func(c *coordinator.Coordinator, ctx context.Context, _ empty) (coordapi.ClusterInfo, error) {
		return c.ClusterInfo(ctx)
	}, encClusterInfo),
	// The handover (shards.go).
	opFencePartition: unary(decFenceReq, func(c *coordinator.Coordinator, ctx context.Context, r fenceReq) (empty, error) {
		return empty{}, c.FencePartition(ctx, r.ID, r.Partition, r.Version)
	}, encEmpty),
	opExportPartition: unary(decExportReq, func(c *coordinator.Coordinator, ctx context.Context, r exportReq) (coordapi.PartitionChunk, error) {
		return c.ExportPartition(ctx, r.ID, r.Partition, r.Cursor, r.MaxBytes)
	}, encPartitionChunk),
	opImportPartition: unary(decPartitionChunk, func(c *coordinator.Coordinator, ctx context.Context, ch coordapi.PartitionChunk) (empty, error) {
		return empty{}, c.ImportPartition(ctx, &ch)
	}, encEmpty),
	opDropPartition: unary(decTopicPartitionReq, func(c *coordinator.Coordinator, ctx context.Context, r topicPartitionReq) (empty, error) {
		return empty{}, c.DropPartition(ctx, r.ID, r.Partition)
	}, encEmpty),
	opCommitShards: unary(decCommitShardsReq, func(c *coordinator.Coordinator, ctx context.Context, r commitShardsReq) (empty, error) {
		return empty{}, c.CommitShards(ctx, r.Shards, r.Version)
	}, encEmpty),
	// The table catalog (tables.go).
	opTableLoad:       unary(decIdent, tableLoad, encTableResp),
	opTableSwap:       unary(decTableSwapReq, tableSwap, encTableResp),
	opTableList:       unary(decStrings, tableList, encIdents),
	opTableNamespaces: unary(decEmpty, tableNamespaces, encNamespaces),
	opPing: func(s *Server, _ context.Context, _ *decoder, e *encoder) error {
		e.str(s.instance)
		return nil
	},
	opListBrokers: unary(decEmpty, func(c *coordinator.Coordinator, ctx context.Context, _ empty) ([]coordapi.BrokerInfo, error) {
		return c.ListBrokers(ctx)
	}, encBrokerList),
	opKvGet: settledUnary(decKvGetReq, (*coordinator.Coordinator).KvGetSettled,
		func(_ *Server, e *encoder, _ coordapi.KvGetRequest, res coordapi.KvGetResult) error {
			encKvGetResp(e, res)
			return nil
		}),
	opAddPartitionsToTxn: unary(decAddPartitionsReq, (*coordinator.Coordinator).AddPartitionsToTxn, encCodes),
	opAddOffsetsToTxn: unary(decAddOffsetsReq, func(c *coordinator.Coordinator, ctx context.Context, r addOffsetsReq) (empty, error) {
		return empty{}, c.AddOffsetsToTxn(ctx, r.P, r.Group)
	}, encEmpty),
	opEndTxn: unary(decEndTxnReq, func(c *coordinator.Coordinator, ctx context.Context, r coordapi.EndTxnRequest) (empty, error) {
		return empty{}, c.EndTxn(ctx, r)
	}, encEmpty),
	opDescribeTxns: unary(decStrings, (*coordinator.Coordinator).DescribeTransactions, encTxnDescriptions),
	opListTxns: unary(decListTxnsReq, func(c *coordinator.Coordinator, ctx context.Context, r listTxnsReq) ([]coordapi.TxnListing, error) {
		return c.ListTransactions(ctx, r.States, r.ProducerIDs)
	}, encTxnListings),
	opDescribeProducers: unary(decTopicPartitionReq, func(c *coordinator.Coordinator, ctx context.Context, r topicPartitionReq) ([]coordapi.ProducerDescription, error) {
		return c.DescribeProducers(ctx, r.ID, r.Partition)
	}, encProducerDescriptions),
	opUserScramCredential: unary(decUserScramReq, func(c *coordinator.Coordinator, ctx context.Context, r userScramReq) (userScramResp, error) {
		cred, ok, err := c.UserScramCredential(ctx, r.User, r.Mechanism)
		return userScramResp{Cred: cred, OK: ok}, err
	}, encUserScramResp),
	opDescribeUserScram: unary(decStrings, (*coordinator.Coordinator).DescribeUserScramCredentials, encScramUserInfos),
	opAlterUserScram: unary(decAlterUserScramReq, func(c *coordinator.Coordinator, ctx context.Context, r alterUserScramReq) ([]coordapi.ScramUserResult, error) {
		return c.AlterUserScramCredentials(ctx, r.Dels, r.Ups)
	}, encScramUserResults),
	opFindKeyBatches:  unary(decFindKeyBatchesReq, (*coordinator.Coordinator).FindKeyBatches, encFindKeyBatchesResp),
	opKvLatestOffsets: unary(decKvOffsetsReq, (*coordinator.Coordinator).KvLatestOffsets, encOffsets),
	opClaimTierJob: unary(decClaimTierJobReq, func(c *coordinator.Coordinator, ctx context.Context, r coordapi.ClaimTierJobRequest) (claimTierJobResp, error) {
		job, ok, err := c.ClaimTierJob(ctx, r)
		return claimTierJobResp{Job: job, OK: ok}, err
	}, encClaimTierJobResp),
	opCompleteTierJob: unary(decCompleteTierJobReq, func(c *coordinator.Coordinator, ctx context.Context, r coordapi.CompleteTierJobRequest) (empty, error) {
		return empty{}, c.CompleteTierJob(ctx, r)
	}, encEmpty),
	opCreateACLs: unary(decACLBindings, func(c *coordinator.Coordinator, ctx context.Context, bs []coordapi.ACLBinding) (empty, error) {
		return empty{}, c.CreateACLs(ctx, bs)
	}, encEmpty),
	opDeleteACLs:   (*Server).handleDeleteACLs,
	opDescribeACLs: (*Server).handleDescribeACLs,
	opACLVersion: unary(decEmpty, func(c *coordinator.Coordinator, ctx context.Context, _ empty) (uint64, error) {
		return c.ACLVersion(ctx)
	}, encUvarint),
	opAbandonTierJob: unary(decAbandonTierJobReq, func(c *coordinator.Coordinator, ctx context.Context, r abandonTierJobReq) (empty, error) {
		return empty{}, c.AbandonTierJob(ctx, r.JobID, r.Reason)
	}, encEmpty),
}

// Server serves a Coordinator over NATS: one queue subscription per op,
// each request handled on a goroutine of its own (reused for later ones),
// and the coordinator's commit notices published on CommitsSubject.
type Server struct {
	nc      *nats.Conn
	cluster string
	c       *coordinator.Coordinator
	groups  *groups.Groups // nil: group ops are not served
	gate    func() error   // ServerOptions.Gate
	// settledGate is ServerOptions.SettledGate.
	settledGate func() error
	// instance names this server, differently on every start: see opPing.
	instance string
	log      *slog.Logger
	ctx      context.Context
	cancel   context.CancelFunc
	sem      chan struct{}
	// work hands requests to idle workers (unbuffered: a send succeeds only
	// when one is waiting).
	work chan request
	// heldSem bounds the requests held in a rebalance (heldOps), which
	// do not take sem; heldCtx ends them when Close starts waiting.
	heldSem    chan struct{}
	heldCtx    context.Context
	heldCancel context.CancelFunc

	duration metric.Float64Histogram

	// unsubscribe stops the coordinator's commit and topic notices.
	unsubscribe func()

	mu struct {
		sync.Mutex
		subs []*nats.Subscription
		// closing is set when Close starts draining; closed once the
		// subscriptions are drained, after which no handler starts.
		closing, closed bool
	}
	// inflight counts running handlers; Add only under mu while not closed.
	inflight sync.WaitGroup
}

// Serve subscribes to every op of cluster on nc and serves requests with c
// until ctx is done or Close is called. It does not close nc or c. A nil
// logger discards the logs.
func Serve(ctx context.Context, nc *nats.Conn, cluster string, c *coordinator.Coordinator, logger *slog.Logger) (*Server, error) {
	return ServeWith(ctx, nc, cluster, c, ServerOptions{Logger: logger})
}

// ServerOptions configure a Server.
type ServerOptions struct {
	// Logger receives the server's logs. Default: discard.
	Logger *slog.Logger
	// Meter records floe.coordinator.rpc.duration, each request's service
	// time by op and outcome. Default: no metrics.
	Meter metric.Meter
	// Groups, when set, is served too: the group ops (JoinGroup,
	// OffsetCommit, ... ConsumerGroupHeartbeat), so that every broker of
	// the cluster shares one group state. Deleting a topic then also
	// drops its committed offsets. The owner closes it, before Close so
	// that held JoinGroups and SyncGroups are answered.
	Groups *groups.Groups
	// Gate, when set, is asked before every reply: a non-nil error is
	// answered instead of the result (and a retriable one: the broker
	// tries again, reaching the coordinator that now leads). Package ha
	// sets it so that a leader whose lease ran out answers nothing it
	// computed, however late it runs.
	Gate func() error
	// SettledGate, when set with Gate, is asked instead of it before a
	// reply that depends only on what the coordinator's log has: fetches'
	// FindBatches, which read no further than the durable high watermarks
	// (coordinator.FindBatchesSettled), and /kv lookups of durable keys
	// (coordinator.KvGetSettled). Package ha sets it to check its
	// lease without waiting for the log: a consumer's fetch does not wait
	// for commits of other partitions in flight. Default: Gate.
	SettledGate func() error
	// QueueGroup is the queue group the server subscribes in. Default:
	// "floe-coordinator". Package ha gives each term its own, so that a
	// leader that lost its lease without knowing it (stopped, hung) does
	// not keep a share of the requests: every request reaches the new
	// leader too, which answers first; the old one's late replies, gated,
	// are dropped by the requester.
	QueueGroup string
}

// ServeWith is Serve with options.
func ServeWith(ctx context.Context, nc *nats.Conn, cluster string, c *coordinator.Coordinator, opts ServerOptions) (*Server, error) {
	return serveOps(ctx, nc, cluster, c, opts, handlers)
}

// serveOps is ServeWith serving the batch coordinator ops in handlers
// (tests serve fewer, as a coordinator of an earlier build does).
func serveOps(ctx context.Context, nc *nats.Conn, cluster string, c *coordinator.Coordinator, opts ServerOptions, handlers map[string]handler) (*Server, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if err := CheckCluster(cluster); err != nil {
		return nil, err
	}
	duration, err := metrics.OrNoop(opts.Meter).Float64Histogram("floe.coordinator.rpc.duration", metric.WithUnit("s"),
		metric.WithDescription("Coordinator requests served over NATS, by op and outcome (ok, kafka_error, error)."))
	if err != nil {
		return nil, fmt.Errorf("rpc: histogram: %w", err)
	}
	sctx, cancel := context.WithCancel(ctx)
	s := &Server{nc: nc, cluster: cluster, c: c, groups: opts.Groups, gate: opts.Gate, settledGate: opts.SettledGate, instance: newInstanceID(), log: opts.Logger, ctx: sctx, cancel: cancel,
		sem: make(chan struct{}, maxConcurrent), work: make(chan request), heldSem: make(chan struct{}, maxHeldGroupRequests), duration: duration}
	s.heldCtx, s.heldCancel = context.WithCancel(sctx)
	ops := make(map[string]handler, len(handlers)+len(groupOps))
	for op, h := range handlers {
		ops[op] = h
	}
	if s.groups != nil {
		for op, g := range groupOps {
			ops[op] = handleGroupOp(g)
		}
		for op, h := range shareOps {
			ops[op] = h
		}
	}
	group := opts.QueueGroup
	if group == "" {
		group = queueGroup
	}
	for op, h := range ops {
		sub, err := nc.QueueSubscribe(Subject(cluster, op), group, s.dispatch(op, h))
		if err == nil {
			// Never drop requests for being slow: the client's deadline
			// bounds how long they wait.
			err = sub.SetPendingLimits(-1, -1)
		}
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("rpc: subscribe %s: %w", Subject(cluster, op), err)
		}
		s.mu.subs = append(s.mu.subs, sub)
	}
	// Make sure the server has the subscriptions before anyone is told
	// the coordinator is up.
	if err := nc.FlushTimeout(10 * time.Second); err != nil {
		s.Close()
		return nil, fmt.Errorf("rpc: flush subscriptions: %w", err)
	}
	stopCommits, stopTopics := c.Subscribe(s.publishNotices), c.SubscribeTopics(s.publishTopicNotices)
	stopACLs := c.SubscribeACLs(s.publishACLNotice)
	s.unsubscribe = func() { stopCommits(); stopTopics(); stopACLs() }
	go func() {
		<-sctx.Done()
		s.Close()
	}()
	s.log.Info("coordinator serving over nats", "cluster", cluster, "url", nc.ConnectedUrlRedacted())
	return s, nil
}

// Close stops taking requests and waits for the ones being served: it
// removes the subscriptions (other coordinators of the queue group get the
// next requests), serves what was already delivered, and returns once
// every reply is sent. It does not close the NATS connection or the
// coordinator.
func (s *Server) Close() {
	s.mu.Lock()
	if s.mu.closing {
		s.mu.Unlock()
		return
	}
	s.mu.closing = true
	subs := s.mu.subs
	s.mu.Unlock()
	if s.unsubscribe != nil {
		s.unsubscribe()
	}
	for _, sub := range subs {
		if err := sub.Drain(); err != nil {
			_ = sub.Unsubscribe()
		}
	}
	// Make sure the NATS server knows: from here on, requests go to other
	// coordinators or fail at once with no responders.
	_ = s.nc.FlushTimeout(2 * time.Second)
	deadline := time.Now().Add(drainTimeout)
	for _, sub := range subs {
		for sub.IsDraining() && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
	}
	s.mu.Lock()
	s.mu.closed = true
	s.mu.Unlock()
	// Requests held in a rebalance could wait for minutes: end them (the
	// broker answers COORDINATOR_NOT_AVAILABLE and the client rejoins).
	s.heldCancel()
	s.inflight.Wait()
	s.cancel()
}

// dispatch returns the subscription callback of op: it hands each request
// to an idle worker goroutine or starts one, blocking while maxConcurrent
// are running.
func (s *Server) dispatch(op string, h handler) nats.MsgHandler {
	sem := s.sem
	if heldOps[op] {
		sem = s.heldSem
	}
	rec := outcomeOptions(op)
	return func(m *nats.Msg) {
		select {
		case sem <- struct{}{}:
		case <-s.ctx.Done():
			return
		}
		s.mu.Lock()
		if s.mu.closed {
			s.mu.Unlock()
			<-sem
			return
		}
		s.inflight.Add(1)
		s.mu.Unlock()
		r := request{op: op, h: h, m: m, sem: sem, rec: rec}
		select {
		case s.work <- r: // an idle worker takes it
		default:
			go s.worker(r)
		}
	}
}

// request is one request a worker serves: it holds a slot of sem and
// counts in inflight until served.
type request struct {
	op  string
	h   handler
	m   *nats.Msg
	sem chan struct{}
	rec *outcomes
}

// Outcomes of a request, as its duration's "outcome" attribute says them.
const (
	outcomeOK = iota
	outcomeKafkaError
	outcomeError
)

// outcomes holds an op's attribute sets for its duration, one an outcome,
// built once: a set built per request cost an allocation and its hashing
// on every find.
type outcomes [3]metric.RecordOption

// outcomeOptions returns op's outcomes.
func outcomeOptions(op string) *outcomes {
	var o outcomes
	for i, name := range [...]string{outcomeOK: "ok", outcomeKafkaError: "kafka_error", outcomeError: "error"} {
		o[i] = metric.WithAttributeSet(attribute.NewSet(attribute.String("op", op), attribute.String("outcome", name)))
	}
	return &o
}

// worker serves r, then the requests handed to it on s.work until none
// comes for workerIdle or the server stops.
func (s *Server) worker(r request) {
	idle := time.NewTimer(workerIdle)
	defer idle.Stop()
	for {
		s.serve(r)
		<-r.sem
		s.inflight.Done()
		idle.Reset(workerIdle)
		select {
		case r = <-s.work:
		case <-idle.C:
			return
		case <-s.ctx.Done():
			return
		}
	}
}

// serve handles one request and sends its reply.
func (s *Server) serve(r request) {
	op, h, m := r.op, r.h, r.m
	if m.Reply == "" {
		return // nobody to answer
	}
	d := decoder{b: m.Data}
	ver := d.byte()
	timeout := time.Duration(d.uvarint()) * time.Millisecond
	e := getEncoder()
	defer putEncoder(e)
	e.byte(version)
	start := time.Now()
	var err error
	switch {
	case d.err != nil:
		err = &coordapi.KafkaError{Code: kerr.InvalidRequest, Message: d.err.Error()}
	case ver != version:
		err = errUnsupportedVersion
	default:
		if timeout <= 0 {
			timeout = defaultServerTimeout
		}
		parent, limit := s.ctx, maxServerTimeout
		if heldOps[op] {
			parent, limit = s.heldCtx, maxGroupWait
		}
		ctx, cancel := context.WithTimeout(parent, min(timeout, limit))
		e.byte(statusOK)
		err = h(s, ctx, &d, e)
		cancel()
	}
	if gate := s.gate; gate != nil {
		if e.settled && err == nil && s.settledGate != nil {
			gate = s.settledGate
		}
		if gerr := gate(); gerr != nil {
			err = gerr
		}
	}
	if err == nil && int64(len(e.b)) > s.nc.MaxPayload() {
		err = fmt.Errorf("reply of %d bytes exceeds the NATS max payload of %d", len(e.b), s.nc.MaxPayload())
	}
	outcome := outcomeOK
	if err != nil {
		e.b = e.b[:1]
		e.byte(statusError)
		encError(e, err)
		outcome = outcomeKafkaError
		if !isKafkaError(err) {
			outcome = outcomeError
			s.log.Warn("coordinator request failed", "op", op, "err", err)
		}
	}
	s.duration.Record(context.Background(), time.Since(start).Seconds(), r.rec[outcome])
	if err := m.Respond(e.b); err != nil {
		s.log.Debug("reply to coordinator request", "op", op, "err", err)
	}
}

// isKafkaError reports whether err is a Kafka-level failure, answered as a
// code rather than logged.
func isKafkaError(err error) bool {
	var ke *kerr.Error
	return errors.As(err, &ke)
}

// payloadLimit is the largest reply body the server may send.
func (s *Server) payloadLimit() int {
	return int(s.nc.MaxPayload()) - replyOverhead
}

// encFindBatches encodes find_batches' answer, dropping trailing batches
// that would not fit in one message (a fetch returning fewer batches is
// fine).
func (s *Server) encFindBatches(e *encoder, _ coordapi.FindBatchesRequest, resp coordapi.FindBatchesResponse) error {
	start := len(e.b)
	for {
		encFindBatchesResp(e, resp)
		if len(e.b) <= s.payloadLimit() || len(resp.Batches) <= 1 {
			return nil
		}
		keep := max(1, len(resp.Batches)*s.payloadLimit()/(len(e.b)-start)*9/10)
		resp.Batches = resp.Batches[:min(keep, len(resp.Batches)-1)]
		e.b = e.b[:start]
	}
}

// encFindBatchesMulti encodes find_batches_multi's answer with the results
// that fit in one message: the first requests' results in order, the last
// one possibly trimmed to fewer batches (see findmulti.go). The client asks
// again for the rest.
func (s *Server) encFindBatchesMulti(e *encoder, reqs []coordapi.FindBatchesRequest, results []coordapi.FindBatchesResult) error {
	var m multiReplyEncoder
	limit := s.payloadLimit()
	for i := range results {
		added, whole := m.fit(&results[i], limit)
		if !added && i == 0 {
			return fmt.Errorf("find batches: the answer for %s/%d does not fit in a message of %d bytes",
				reqs[0].TopicID, reqs[0].Partition, limit)
		}
		if !whole {
			break
		}
	}
	m.finish(e)
	return nil
}

// handleTopics answers one page of topics: those named after the request's
// After, as many as fit in one message.
func (s *Server) handleTopics(ctx context.Context, d *decoder, e *encoder) error {
	req := decTopicsReq(d)
	if d.err != nil {
		return &coordapi.KafkaError{Code: kerr.InvalidRequest, Message: d.err.Error()}
	}
	topics, err := s.c.Topics(ctx)
	if err != nil {
		return err
	}
	i := 0
	for i < len(topics) && topics[i].Name <= req.After {
		i++
	}
	var page encoder
	n, limit := 0, s.payloadLimit()-16
	for ; i < len(topics); i++ {
		mark := len(page.b)
		encTopic(&page, topics[i])
		if len(page.b) > limit && n > 0 {
			page.b = page.b[:mark]
			break
		}
		n++
	}
	e.uvarint(uint64(n))
	e.b = append(e.b, page.b...)
	e.bool(i < len(topics))
	return nil
}

// publishNotices publishes one commit's notices on CommitsSubject, grouped
// by topic, in as many messages as the payload limit needs.
func (s *Server) publishNotices(ns []coordapi.CommitNotice) {
	subj := CommitsSubject(s.cluster)
	limit := s.payloadLimit()
	for len(ns) > 0 {
		e := getEncoder()
		n := encNotices(e, ns, limit)
		if err := s.nc.Publish(subj, e.b); err != nil {
			s.log.Debug("publish commit notices", "err", err)
		}
		putEncoder(e)
		ns = ns[n:]
	}
}

// publishTopicNotices publishes topic change notices on TopicsSubject.
func (s *Server) publishTopicNotices(ns []coordapi.TopicNotice) {
	e := getEncoder()
	defer putEncoder(e)
	encTopicNotices(e, ns)
	if err := s.nc.Publish(TopicsSubject(s.cluster), e.b); err != nil {
		s.log.Debug("publish topic notices", "err", err)
	}
}

// publishACLNotice publishes an ACL change notice on ACLsSubject.
func (s *Server) publishACLNotice(version uint64) {
	e := getEncoder()
	defer putEncoder(e)
	encACLNotice(e, version)
	if err := s.nc.Publish(ACLsSubject(s.cluster), e.b); err != nil {
		s.log.Debug("publish acl notice", "err", err)
	}
}

// handleDeleteTopic answers delete_topic, and drops the topic's committed
// offsets from every group, as Kafka does.
func (s *Server) handleDeleteTopic(ctx context.Context, d *decoder, e *encoder) error {
	name := decString(d)
	if d.err != nil {
		return &coordapi.KafkaError{Code: kerr.InvalidRequest, Message: d.err.Error()}
	}
	id, err := s.c.DeleteTopic(ctx, name)
	if err != nil {
		return err
	}
	s.deleteTopicOffsets(ctx, name)
	encID(e, id)
	return nil
}

// handleDeleteTopicByID answers delete_topic_by_id; see handleDeleteTopic.
func (s *Server) handleDeleteTopicByID(ctx context.Context, d *decoder, e *encoder) error {
	id := decID(d)
	if d.err != nil {
		return &coordapi.KafkaError{Code: kerr.InvalidRequest, Message: d.err.Error()}
	}
	name, err := s.c.DeleteTopicByID(ctx, id)
	if err != nil {
		return err
	}
	s.deleteTopicOffsets(ctx, name)
	encString(e, name)
	return nil
}

// deleteTopicOffsets drops a deleted topic's committed offsets. A failure
// is only logged: the topic is gone, and OffsetFetch never shows offsets
// of a topic id that no longer exists.
func (s *Server) deleteTopicOffsets(ctx context.Context, name string) {
	if s.groups == nil {
		return
	}
	if err := s.groups.DeleteTopicOffsets(ctx, name); err != nil {
		s.log.Warn("drop committed offsets of a deleted topic", "topic", name, "err", err)
	}
}

// newInstanceID returns a random server instance id.
func newInstanceID() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
