package rpc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/floe-io/floe/coordapi"
)

// ClientOptions configure a Client.
type ClientOptions struct {
	// Timeout bounds every request whose context has no earlier deadline.
	// Default: 5s.
	Timeout time.Duration
	// Logger receives the client's logs (undecodable commit notices).
	// Default: discard.
	Logger *slog.Logger
}

// Client calls a coordinator served by Serve. It implements
// coordapi.Coordinator, as the in-process *coordinator.Coordinator does, and
// is safe for concurrent use. It does not own its NATS connection.
type Client struct {
	nc       *nats.Conn
	cluster  string
	opts     ClientOptions
	subjects map[string]string
}

var _ coordapi.Coordinator = (*Client)(nil)

// NewClient returns a client for the coordinator of cluster on nc.
func NewClient(nc *nats.Conn, cluster string, opts ClientOptions) *Client {
	if opts.Timeout <= 0 {
		opts.Timeout = 5 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	c := &Client{nc: nc, cluster: cluster, opts: opts, subjects: map[string]string{}}
	for op := range handlers {
		c.subjects[op] = Subject(cluster, op)
	}
	for op := range groupOps {
		c.subjects[op] = Subject(cluster, op)
	}
	for op := range shareOps {
		c.subjects[op] = Subject(cluster, op)
	}
	return c
}

// maxPayload is the NATS server's max_payload, or NATS's default 1 MiB
// before the connection is first established.
func (c *Client) maxPayload() int {
	if n := c.nc.MaxPayload(); n > 0 {
		return int(n)
	}
	return 1 << 20
}

// clientError is a request that failed in the client: no answer
// (ErrUnavailable) or an answer it cannot read (ErrInternal).
type clientError struct {
	op    string
	kind  error
	cause error
}

func (e *clientError) Error() string {
	return "coordinator " + e.op + ": " + e.kind.Error() + ": " + e.cause.Error()
}

func (e *clientError) Unwrap() []error { return []error{kerr.KafkaStorageError, e.kind, e.cause} }

// call sends op's request, encoded by enc, and decodes the reply with dec.
func call[Resp any](c *Client, ctx context.Context, op string, enc func(*encoder), dec func(*decoder) Resp) (Resp, error) {
	return callWith(c, ctx, op, 0, enc, dec)
}

// callWith is call with a timeout other than the client's (0: the
// client's), for requests the coordinator may hold.
func callWith[Resp any](c *Client, ctx context.Context, op string, timeout time.Duration, enc func(*encoder), dec func(*decoder) Resp) (Resp, error) {
	var zero Resp
	if timeout <= 0 {
		timeout = c.opts.Timeout
	}
	if dl, ok := ctx.Deadline(); ok {
		timeout = min(timeout, time.Until(dl))
	}
	if err := ctx.Err(); err != nil {
		return zero, &clientError{op, ErrUnavailable, err}
	}
	if timeout <= 0 {
		return zero, &clientError{op, ErrUnavailable, context.DeadlineExceeded}
	}
	if st := c.nc.Status(); st != nats.CONNECTED {
		// Fail at once rather than queue the request while NATS reconnects.
		return zero, &clientError{op, ErrUnavailable, fmt.Errorf("nats connection %s", st)}
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	e := getEncoder()
	defer putEncoder(e)
	e.byte(version)
	e.uvarint(uint64((timeout + time.Millisecond - 1) / time.Millisecond))
	enc(e)
	if limit := c.maxPayload(); len(e.b) > limit {
		return zero, &coordapi.KafkaError{Code: kerr.MessageTooLarge,
			Message: fmt.Sprintf("coordinator %s: request of %d bytes exceeds the NATS max payload of %d", op, len(e.b), limit)}
	}
	m, err := c.nc.RequestWithContext(ctx, c.subjects[op], e.b)
	if err != nil {
		return zero, &clientError{op, ErrUnavailable, err}
	}
	d := decoder{b: m.Data}
	ver, status := d.byte(), d.byte()
	switch {
	case d.err != nil:
		return zero, &clientError{op, ErrInternal, d.err}
	case ver != version:
		return zero, &clientError{op, ErrInternal, fmt.Errorf("%w: reply version %d", errMalformed, ver)}
	case status == statusError:
		return zero, decError(&d, op)
	case status != statusOK:
		return zero, &clientError{op, ErrInternal, fmt.Errorf("%w: reply status %d", errMalformed, status)}
	}
	resp := dec(&d)
	if d.err != nil {
		return zero, &clientError{op, ErrInternal, d.err}
	}
	return resp, nil
}

// CreateTopic creates a topic; see coordinator.Coordinator.CreateTopic.
func (c *Client) CreateTopic(ctx context.Context, req coordapi.CreateTopicRequest) (coordapi.Topic, error) {
	return call(c, ctx, opCreateTopic, func(e *encoder) { encCreateTopicReq(e, req) }, decTopic)
}

// DeleteTopic deletes a topic by name; see coordinator.Coordinator.DeleteTopic.
func (c *Client) DeleteTopic(ctx context.Context, name string) (coordapi.TopicID, error) {
	return call(c, ctx, opDeleteTopic, func(e *encoder) { e.str(name) }, decID)
}

// DeleteTopicByID deletes a topic by id; see
// coordinator.Coordinator.DeleteTopicByID.
func (c *Client) DeleteTopicByID(ctx context.Context, id coordapi.TopicID) (string, error) {
	return call(c, ctx, opDeleteTopicByID, func(e *encoder) { e.id(id) }, decString)
}

// CreatePartitions grows a topic; see coordinator.Coordinator.CreatePartitions.
func (c *Client) CreatePartitions(ctx context.Context, name string, count int32, validateOnly bool) error {
	_, err := call(c, ctx, opCreatePartitions, func(e *encoder) {
		encCreatePartitionsReq(e, createPartitionsReq{Name: name, Count: count, ValidateOnly: validateOnly})
	}, decEmpty)
	return err
}

// AlterTopicConfigs changes a topic's configs; see
// coordinator.Coordinator.AlterTopicConfigs.
func (c *Client) AlterTopicConfigs(ctx context.Context, name string, ops []coordapi.ConfigOp, incremental, validateOnly bool) error {
	_, err := call(c, ctx, opAlterTopicConfigs, func(e *encoder) {
		encAlterConfigsReq(e, alterConfigsReq{Name: name, Ops: ops, Incremental: incremental, ValidateOnly: validateOnly})
	}, decEmpty)
	return err
}

// Topic returns a topic by name; see coordinator.Coordinator.Topic.
func (c *Client) Topic(ctx context.Context, name string) (coordapi.Topic, error) {
	return call(c, ctx, opTopic, func(e *encoder) { e.str(name) }, decTopic)
}

// TopicByID returns a topic by id; see coordinator.Coordinator.TopicByID.
func (c *Client) TopicByID(ctx context.Context, id coordapi.TopicID) (coordapi.Topic, error) {
	return call(c, ctx, opTopicByID, func(e *encoder) { e.id(id) }, decTopic)
}

// Topics returns every topic, sorted by name, fetched in as many pages as
// the NATS payload limit needs.
func (c *Client) Topics(ctx context.Context) ([]coordapi.Topic, error) {
	var (
		out   []coordapi.Topic
		after string
	)
	for {
		page, err := call(c, ctx, opTopics, func(e *encoder) { encTopicsReq(e, topicsReq{After: after}) }, decTopicsResp)
		if err != nil {
			return nil, err
		}
		out = append(out, page.Topics...)
		if !page.More || len(page.Topics) == 0 {
			return out, nil
		}
		after = page.Topics[len(page.Topics)-1].Name
	}
}

// FindBatches returns where the batches from an offset on live; see
// coordinator.Coordinator.FindBatches. The answer may hold fewer batches
// than MaxBytes allows when they would not fit in one NATS message.
func (c *Client) FindBatches(ctx context.Context, req coordapi.FindBatchesRequest) (coordapi.FindBatchesResponse, error) {
	return call(c, ctx, opFindBatches, func(e *encoder) { encFindBatchesReq(e, req) }, decFindBatchesResp)
}

// FindBatchesMulti answers many FindBatches requests; see
// coordinator.Coordinator.FindBatchesMulti. Requests too many for one NATS
// message are sent in consecutive messages, and so are the ones a reply
// left out (the server answers what fits), so a result may hold fewer
// batches than MaxBytes allows. A coordinator that predates the call has
// no subscriber for it: the error then wraps errors.ErrUnsupported (as
// well as ErrUnavailable and nats.ErrNoResponders, which a coordinator
// that is down gives too), and the caller asks with FindBatches.
func (c *Client) FindBatchesMulti(ctx context.Context, reqs []coordapi.FindBatchesRequest) ([]coordapi.FindBatchesResult, error) {
	out := make([]coordapi.FindBatchesResult, 0, len(reqs))
	per := max(1, (c.maxPayload()-multiReqOverhead)/maxMultiReqSize)
	for len(out) < len(reqs) {
		part := reqs[len(out):]
		part = part[:min(len(part), per)]
		res, err := call(c, ctx, opFindBatchesMulti, func(e *encoder) { encFindBatchesMultiReq(e, part) }, decFindBatchesMultiResp)
		if err != nil {
			if errors.Is(err, nats.ErrNoResponders) {
				err = fmt.Errorf("%w (no coordinator serves it: none is up, or they predate it: %w)", err, errors.ErrUnsupported)
			}
			return nil, err
		}
		if len(res) == 0 || len(res) > len(part) {
			return nil, &clientError{opFindBatchesMulti, ErrInternal,
				fmt.Errorf("%w: %d results for %d requests", errMalformed, len(res), len(part))}
		}
		out = append(out, res...)
	}
	return out, nil
}

// multiReqOverhead bounds a find_batches_multi request's envelope and
// counts.
const multiReqOverhead = 1 + 10 + 10 + 10

// PartitionState returns a partition's offsets; see
// coordinator.Coordinator.PartitionState.
func (c *Client) PartitionState(ctx context.Context, id coordapi.TopicID, partition int32) (coordapi.PartitionState, error) {
	return call(c, ctx, opPartitionState, func(e *encoder) {
		encTopicPartitionReq(e, topicPartitionReq{ID: id, Partition: partition})
	}, decPartitionState)
}

// ListOffset answers ListOffsets for one partition; see
// coordinator.Coordinator.ListOffset.
func (c *Client) ListOffset(ctx context.Context, id coordapi.TopicID, partition int32, timestamp int64) (offset, ts int64, err error) {
	r, err := call(c, ctx, opListOffset, func(e *encoder) {
		encListOffsetReq(e, listOffsetReq{ID: id, Partition: partition, Timestamp: timestamp})
	}, decListOffsetResp)
	return r.Offset, r.Timestamp, err
}

// ClaimTierJob assigns this broker the next consolidation job; see
// coordinator.Coordinator.ClaimTierJob.
func (c *Client) ClaimTierJob(ctx context.Context, req coordapi.ClaimTierJobRequest) (coordapi.TierJob, bool, error) {
	r, err := call(c, ctx, opClaimTierJob, func(e *encoder) { encClaimTierJobReq(e, req) }, decClaimTierJobResp)
	return r.Job, r.OK, err
}

// CompleteTierJob reports the segment a job wrote; see
// coordinator.Coordinator.CompleteTierJob.
func (c *Client) CompleteTierJob(ctx context.Context, req coordapi.CompleteTierJobRequest) error {
	_, err := call(c, ctx, opCompleteTierJob, func(e *encoder) { encCompleteTierJobReq(e, req) }, decEmpty)
	return err
}

// AbandonTierJob gives a job back; see
// coordinator.Coordinator.AbandonTierJob.
func (c *Client) AbandonTierJob(ctx context.Context, jobID uint64, reason string) error {
	_, err := call(c, ctx, opAbandonTierJob, func(e *encoder) {
		encAbandonTierJobReq(e, abandonTierJobReq{JobID: jobID, Reason: reason})
	}, decEmpty)
	return err
}

// DeleteRecords moves a partition's log start; see
// coordinator.Coordinator.DeleteRecords.
func (c *Client) DeleteRecords(ctx context.Context, id coordapi.TopicID, partition int32, offset int64) (int64, error) {
	return call(c, ctx, opDeleteRecords, func(e *encoder) {
		encDeleteRecordsReq(e, deleteRecordsReq{ID: id, Partition: partition, Offset: offset})
	}, decInt64)
}

// InitProducerID hands out a producer id and epoch; see
// coordinator.Coordinator.InitProducerID.
func (c *Client) InitProducerID(ctx context.Context, req coordapi.InitProducerIDRequest) (coordapi.InitProducerIDResponse, error) {
	return call(c, ctx, opInitProducerID, func(e *encoder) { encInitProducerIDReq(e, req) }, decInitProducerIDResp)
}

// CommitObject commits an uploaded object; see
// coordinator.Coordinator.CommitObject. A request too large for one NATS
// message is committed as consecutive commits of the same object; if one
// of them fails, the ones before it stay committed and the error is
// returned (the broker answers a retriable error, as for a commit whose
// answer was lost).
func (c *Client) CommitObject(ctx context.Context, req *coordapi.CommitRequest) (*coordapi.CommitResponse, error) {
	limit := c.maxPayload()
	if req.Inline != nil {
		// Only a coordinator in the broker's process takes inline objects
		// (coordinator.Options.Inline); sent over NATS without its bytes,
		// it would commit an object nobody wrote.
		return nil, &clientError{opCommitObject, ErrInternal,
			fmt.Errorf("object %s: inline objects are committed in process only: %w", req.ObjectKey, errors.ErrUnsupported)}
	}
	if encodedCommitBound(req) <= limit {
		return c.commitObject(ctx, req)
	}
	parts := splitCommit(req, limit)
	out := &coordapi.CommitResponse{Results: make([]coordapi.BatchResult, 0, len(req.Batches))}
	for i, part := range parts {
		resp, err := c.commitObject(ctx, part)
		if err != nil {
			if i > 0 {
				c.opts.Logger.Warn("commit failed after part of the object was committed",
					"key", req.ObjectKey, "parts", len(parts), "committed", i, "err", err)
			}
			return nil, err
		}
		if len(resp.Results) != len(part.Batches) {
			return nil, &clientError{opCommitObject, ErrInternal,
				fmt.Errorf("%d results for %d batches", len(resp.Results), len(part.Batches))}
		}
		out.Results = append(out.Results, resp.Results...)
	}
	return out, nil
}

func (c *Client) commitObject(ctx context.Context, req *coordapi.CommitRequest) (*coordapi.CommitResponse, error) {
	return call(c, ctx, opCommitObject, func(e *encoder) { encCommitReq(e, req) }, decCommitResp)
}

// encodedCommitBound bounds a commit request's encoded size cheaply: no
// field of a batch takes more than 10 bytes.
func encodedCommitBound(r *coordapi.CommitRequest) int {
	n := commitOverhead + len(r.ObjectKey) + len(r.Batches)*(16+10*10)
	for i := range r.Batches {
		n += len(r.Batches[i].TransactionalID) + 10
		for _, k := range r.Batches[i].Keys {
			n += len(k.Key) + 10 + 5 + 1
		}
	}
	return n
}

// KvLatestOffsets returns the key index's latest offset of each key;
// see coordinator.Coordinator.KvLatestOffsets.
func (c *Client) KvLatestOffsets(ctx context.Context, req coordapi.KvOffsetsRequest) ([]int64, error) {
	out, err := call(c, ctx, opKvLatestOffsets, func(e *encoder) { encKvOffsetsReq(e, req) }, decOffsets)
	if err == nil && len(out) != len(req.Keys) {
		return nil, fmt.Errorf("kv latest offsets: %d answers for %d keys", len(out), len(req.Keys))
	}
	return out, err
}

// KvLookup returns the offset of a key's latest record in an indexed
// topic's partition; see coordinator.Coordinator.KvLookup.
func (c *Client) KvLookup(ctx context.Context, id coordapi.TopicID, partition int32, key []byte) (offset, hwm int64, found bool, err error) {
	r, err := call(c, ctx, opKvLookup, func(e *encoder) {
		encKvLookupReq(e, kvLookupReq{ID: id, Partition: partition, Key: key})
	}, decKvLookupResp)
	return r.Offset, r.HighWatermark, r.Found, err
}

// KvReady reports whether a topic's key index answers lookups; see
// coordinator.Coordinator.KvReady.
func (c *Client) KvReady(ctx context.Context, id coordapi.TopicID) (bool, error) {
	return call(c, ctx, opKvReady, func(e *encoder) { e.id(id) }, decBool)
}

// KvGet answers a /kv lookup in one round trip; see
// coordinator.Coordinator.KvGet. A coordinator of an earlier build, which
// does not serve kv_get (no responders on its subject), is asked with the
// ops it has instead: kv_ready, kv_lookup, then find_batches (or
// partition_state for an offset below the log start). It cannot tell
// whether the topic is still indexed: Indexed is then true.
func (c *Client) KvGet(ctx context.Context, req coordapi.KvGetRequest) (coordapi.KvGetResult, error) {
	r, err := call(c, ctx, opKvGet, func(e *encoder) { encKvGetReq(e, req) }, decKvGetResp)
	if errors.Is(err, nats.ErrNoResponders) {
		return c.kvGetEarlier(ctx, req)
	}
	return r, err
}

// kvGetEarlier is KvGet over the ops of earlier coordinators.
func (c *Client) kvGetEarlier(ctx context.Context, req coordapi.KvGetRequest) (coordapi.KvGetResult, error) {
	r := coordapi.KvGetResult{Indexed: true}
	ready, err := c.KvReady(ctx, req.TopicID)
	if err != nil || !ready {
		return r, err
	}
	r.Ready = true
	offset, hwm, found, err := c.KvLookup(ctx, req.TopicID, req.Partition, req.Key)
	if err != nil {
		return coordapi.KvGetResult{}, err
	}
	r.Found, r.Offset, r.HighWatermark = found, offset, hwm
	r.LastStableOffset = hwm // kv_lookup does not say; /kv does not use it
	if !found || offset >= hwm {
		return r, nil
	}
	fb, err := c.FindBatches(ctx, coordapi.FindBatchesRequest{TopicID: req.TopicID, Partition: req.Partition, Offset: offset, MaxBytes: 1})
	if errors.Is(err, kerr.OffsetOutOfRange) {
		// Below the log start (at or past the high watermark cannot be:
		// it only grows).
		st, err := c.PartitionState(ctx, req.TopicID, req.Partition)
		r.PartitionState = st
		return r, err
	}
	if err != nil {
		return coordapi.KvGetResult{}, err
	}
	r.PartitionState = fb.PartitionState
	if len(fb.Batches) > 0 && fb.Batches[0].BaseOffset <= offset && offset <= fb.Batches[0].LastOffset {
		r.Batch = fb.Batches[0]
	}
	return r, nil
}

// FindKeyBatches answers a view fetch from the posting index; see
// coordinator.Coordinator.FindKeyBatches. Against a coordinator of an
// earlier build the error wraps errors.ErrUnsupported.
func (c *Client) FindKeyBatches(ctx context.Context, req coordapi.FindKeyBatchesRequest) (coordapi.FindKeyBatchesResponse, error) {
	return call(c, ctx, opFindKeyBatches, func(e *encoder) { encFindKeyBatchesReq(e, req) }, decFindKeyBatchesResp)
}

// RegisterBroker registers a broker or renews its registration; see
// coordinator.Coordinator.RegisterBroker.
func (c *Client) RegisterBroker(ctx context.Context, info coordapi.BrokerInfo) error {
	_, err := call(c, ctx, opRegisterBroker, func(e *encoder) { encBrokerInfo(e, info) }, decEmpty)
	return err
}

// DeregisterBroker removes a broker's registration; see
// coordinator.Coordinator.DeregisterBroker.
func (c *Client) DeregisterBroker(ctx context.Context, info coordapi.BrokerInfo) error {
	_, err := call(c, ctx, opDeregisterBroker, func(e *encoder) { encBrokerInfo(e, info) }, decEmpty)
	return err
}

// ListBrokers returns the live brokers sorted by node id; see
// coordinator.Coordinator.ListBrokers.
func (c *Client) ListBrokers(ctx context.Context) ([]coordapi.BrokerInfo, error) {
	return call(c, ctx, opListBrokers, func(*encoder) {}, decBrokerList)
}

// Subscribe calls fn with the notices of every commit any coordinator of
// the cluster publishes, on one goroutine, in the order they arrive; see
// coordinator.Coordinator.Subscribe. Notices published while the NATS
// connection is down are lost (a waiting fetch then waits out its
// MaxWaitMs). The returned cancel stops further calls.
func (c *Client) Subscribe(fn func([]coordapi.CommitNotice)) (cancel func()) {
	sub, err := c.nc.Subscribe(CommitsSubject(c.cluster), func(m *nats.Msg) {
		ns, err := decNotices(m.Data)
		if err != nil {
			c.opts.Logger.Warn("undecodable commit notice", "subject", m.Subject, "err", err)
			return
		}
		if len(ns) > 0 {
			fn(ns)
		}
	})
	if err == nil {
		err = sub.SetPendingLimits(-1, 64<<20)
	}
	if err != nil {
		c.opts.Logger.Error("subscribe to commit notices", "subject", CommitsSubject(c.cluster), "err", err)
		return func() {}
	}
	return func() { _ = sub.Unsubscribe() }
}

// SubscribeTopics calls fn with the topic change notices the cluster's
// coordinator publishes (created, deleted, partitions added, configs
// altered), on one goroutine, in the order they arrive; see
// coordinator.Coordinator.SubscribeTopics. Notices published while the
// NATS connection is down are lost, so callers bound how long they trust
// what they cached. The returned cancel stops further calls.
func (c *Client) SubscribeTopics(fn func([]coordapi.TopicNotice)) (cancel func()) {
	sub, err := c.nc.Subscribe(TopicsSubject(c.cluster), func(m *nats.Msg) {
		ns, err := decTopicNotices(m.Data)
		if err != nil {
			c.opts.Logger.Warn("undecodable topic notice", "subject", m.Subject, "err", err)
			return
		}
		if len(ns) > 0 {
			fn(ns)
		}
	})
	if err != nil {
		c.opts.Logger.Error("subscribe to topic notices", "subject", TopicsSubject(c.cluster), "err", err)
		return func() {}
	}
	return func() { _ = sub.Unsubscribe() }
}

// CreateACLs stores ACL bindings; see coordinator.Coordinator.CreateACLs.
// Bindings too many for one NATS message are sent in consecutive requests,
// each stored durably on its own (creating a binding twice is harmless, so
// a retry after a failure part way is too).
func (c *Client) CreateACLs(ctx context.Context, bindings []coordapi.ACLBinding) error {
	limit := c.maxPayload() / 2 // room for the envelope, well within the limit
	for len(bindings) > 0 {
		n, size := 0, 16
		for n < len(bindings) {
			if size += aclBindingSize(&bindings[n]); size > limit && n > 0 {
				break
			}
			n++
		}
		chunk := bindings[:n]
		if _, err := call(c, ctx, opCreateACLs, func(e *encoder) { encACLBindings(e, chunk) }, decEmpty); err != nil {
			return err
		}
		bindings = bindings[n:]
	}
	return nil
}

// DeleteACLs removes the ACL bindings filters match and returns them per
// filter; see coordinator.Coordinator.DeleteACLs.
func (c *Client) DeleteACLs(ctx context.Context, filters []coordapi.ACLFilter) ([][]coordapi.ACLBinding, error) {
	out, err := call(c, ctx, opDeleteACLs, func(e *encoder) { encACLFilters(e, filters) }, decDeleteACLsResp)
	if err != nil {
		return nil, err
	}
	if len(out.Deleted) != len(filters) {
		return nil, &clientError{opDeleteACLs, ErrInternal, fmt.Errorf("%w: %d results for %d filters", errMalformed, len(out.Deleted), len(filters))}
	}
	if out.Truncated {
		c.opts.Logger.Warn("delete_acls: the coordinator listed only some of the deleted bindings (too many for one message)")
	}
	return out.Deleted, nil
}

// DescribeACLs returns the ACL bindings filter matches; see
// coordinator.Coordinator.DescribeACLs. Bindings too many for one NATS
// message are asked for page by page.
func (c *Client) DescribeACLs(ctx context.Context, filter coordapi.ACLFilter) ([]coordapi.ACLBinding, error) {
	var (
		out   []coordapi.ACLBinding
		after *coordapi.ACLBinding
	)
	for {
		page, err := call(c, ctx, opDescribeACLs, func(e *encoder) { encDescribeACLsReq(e, describeACLsReq{Filter: filter, After: after}) }, decDescribeACLsResp)
		if err != nil {
			return nil, err
		}
		out = append(out, page.Bindings...)
		if !page.More || len(page.Bindings) == 0 {
			return out, nil
		}
		after = &out[len(out)-1]
	}
}

// ACLVersion returns the ACL change counter; see
// coordinator.Coordinator.ACLVersion.
func (c *Client) ACLVersion(ctx context.Context) (uint64, error) {
	return call(c, ctx, opACLVersion, func(*encoder) {}, decUvarint)
}

// SubscribeACLs calls fn with the version of every ACL change any
// coordinator of the cluster publishes; see
// coordinator.Coordinator.SubscribeACLs. Notices published while the NATS
// connection is down are lost: callers poll ACLVersion too. The returned
// cancel stops further calls.
func (c *Client) SubscribeACLs(fn func(version uint64)) (cancel func()) {
	sub, err := c.nc.Subscribe(ACLsSubject(c.cluster), func(m *nats.Msg) {
		v, err := decACLNotice(m.Data)
		if err != nil {
			c.opts.Logger.Warn("undecodable acl notice", "subject", m.Subject, "err", err)
			return
		}
		fn(v)
	})
	if err != nil {
		c.opts.Logger.Error("subscribe to acl notices", "subject", ACLsSubject(c.cluster), "err", err)
		return func() {}
	}
	return func() { _ = sub.Unsubscribe() }
}
