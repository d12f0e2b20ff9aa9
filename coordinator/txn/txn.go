package txn

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-io/floe/coordapi"
)

// Rows is where the transaction coordinator keeps a row per transactional
// id, keyed by the id (package doc): a key family of the batch
// coordinator's replicated state.
type Rows interface {
	// Apply sets sets' key-value pairs and deletes deletes, in one
	// durable write.
	Apply(sets [][2][]byte, deletes [][]byte) error
	// Scan calls fn with every row in key order; key and value are valid
	// during the call only.
	Scan(fn func(key, value []byte) error) error
}

// Partitions is the partitions' side of transactions: the batch
// coordinator.
type Partitions interface {
	// AllocateProducerID hands out a new producer id, durably.
	AllocateProducerID() (int64, error)
	// CheckPartitions answers 0 for each partition that exists, else
	// UNKNOWN_TOPIC_OR_PARTITION's code.
	CheckPartitions(parts []coordapi.TopicPartition) []int16
	// SetTxnView gives the partitions what they check the producer's
	// transactional batches against; nil: the producer id writes no more.
	SetTxnView(pid int64, v *coordapi.TxnView)
	// WriteTxnMarkers writes a commit or abort marker (a control batch of
	// the producer id and epoch) into every partition of parts, durably;
	// a partition whose topic was deleted gets none.
	WriteTxnMarkers(ctx context.Context, pid int64, epoch int16, parts []coordapi.TopicPartition, commit bool) error
}

// Offsets commits or drops a transaction's consumer-group offsets when it
// ends: the group coordinator (groups.Groups) implements it.
type Offsets interface {
	CompleteTxnOffsets(ctx context.Context, group string, producerID int64, commit bool) error
}

// Kafka's defaults of transactional.id.expiration.ms and
// producer.id.expiration.check.interval.ms (Options).
const (
	DefaultIDExpiration            = 7 * 24 * time.Hour
	DefaultExpirationCheckInterval = 10 * time.Minute
)

// MaxTimeoutMs is Kafka's transaction.max.timeout.ms default: the longest
// transaction timeout InitProducerId accepts.
const MaxTimeoutMs = 900000

// Options configure a Coordinator.
type Options struct {
	// Rows holds the transactional ids' rows. Required.
	Rows Rows
	// Partitions is the batch coordinator. Required.
	Partitions Partitions
	// Now returns the current time; tests replace it. Default: time.Now.
	Now func() time.Time
	// Logger receives the transaction coordinator's logs. Default: discard.
	Logger *slog.Logger
	// IDExpiration is how long a transactional id with no transaction open
	// is kept after its last change (transactional.id.expiration.ms);
	// Tick expires them every ExpirationCheckInterval. Negative: never.
	// Default: 7 days.
	IDExpiration time.Duration
	// ExpirationCheckInterval is how often Tick expires transactional ids
	// (producer.id.expiration.check.interval.ms). Default: 10m.
	ExpirationCheckInterval time.Duration
}

// Coordinator is the transaction coordinator: the transactional ids, their
// producers and their transactions.
type Coordinator struct {
	opts  Options
	log   *slog.Logger
	now   func() time.Time
	rows  Rows
	parts Partitions

	mu struct {
		sync.Mutex // guards the maps and fields, never a state
		byID       map[string]*state
		byPID      map[int64]*state
		offsets    Offsets
		// expiredMs is when Tick last expired transactional ids, on the
		// coordinator's clock (0: not yet).
		expiredMs int64
	}
	// views are the producers' views as VerifyTxnOffsetCommit reads them,
	// with their groups, by producer id.
	views struct {
		sync.Mutex
		m map[int64]view
	}
}

// view is one producer's transaction as TxnOffsetCommit is checked
// against it.
type view struct {
	id      string
	epoch   int16
	ongoing bool
	groups  []string
	parts   []coordapi.TopicPartition
}

// state is one transactional id's state. mu serializes the transaction's
// steps; EndTxn holds it while it writes the markers.
type state struct {
	mu sync.Mutex
	id string

	pid, prevPID     int64
	epoch, prevEpoch int16
	timeoutMs        int32
	state            coordapi.TxnState
	parts            []coordapi.TopicPartition // sorted, unique
	groups           []string
	startMs          int64
	updateMs         int64
	// markersDone is set once this transaction's markers are written, so
	// that a retried completion does not write them twice.
	markersDone bool
}

// New returns the transaction coordinator of the rows in opts.Rows, and
// gives the partitions every producer's view.
func New(opts Options) (*Coordinator, error) {
	if opts.Rows == nil || opts.Partitions == nil {
		return nil, errors.New("txn: Options.Rows and Options.Partitions are required")
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	opts.IDExpiration = cmp.Or(opts.IDExpiration, DefaultIDExpiration)
	opts.ExpirationCheckInterval = cmp.Or(opts.ExpirationCheckInterval, DefaultExpirationCheckInterval)
	c := &Coordinator{opts: opts, log: opts.Logger, now: opts.Now, rows: opts.Rows, parts: opts.Partitions}
	c.mu.byID = map[string]*state{}
	c.mu.byPID = map[int64]*state{}
	c.views.m = map[int64]view{}
	err := c.rows.Scan(func(id, row []byte) error {
		t, err := decodeRow(string(id), row)
		if err != nil {
			return err
		}
		c.mu.byID[t.id] = t
		c.mu.byPID[t.pid] = t
		c.installView(t)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("txn: load: %w", err)
	}
	return c, nil
}

// SetOffsets gives the coordinator the group coordinator whose
// transactional offsets EndTxn commits or drops. Without it a transaction
// holding offsets cannot end (COORDINATOR_NOT_AVAILABLE, retriable).
func (c *Coordinator) SetOffsets(o Offsets) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.mu.offsets = o
}

// installView gives the partitions and VerifyTxnOffsetCommit t's view.
// t.mu must be held, or t not shared yet.
func (c *Coordinator) installView(t *state) {
	c.parts.SetTxnView(t.pid, &coordapi.TxnView{
		TransactionalID: t.id, Epoch: t.epoch, Ongoing: t.state == coordapi.TxnOngoing, Partitions: slices.Clone(t.parts),
	})
	c.views.Lock()
	c.views.m[t.pid] = view{id: t.id, epoch: t.epoch, ongoing: t.state == coordapi.TxnOngoing, groups: slices.Clone(t.groups),
		parts: slices.Clone(t.parts)}
	c.views.Unlock()
}

// View returns producer id pid's view, what the partitions check its
// transactional batches against (Partitions.SetTxnView gives them the
// same), and false when pid writes nothing: the shards of a sharded
// coordinator other than this one's ask for it (coordinator.TxnOwner).
func (c *Coordinator) View(pid int64) (coordapi.TxnView, bool) {
	c.views.Lock()
	defer c.views.Unlock()
	v, ok := c.views.m[pid]
	if !ok {
		return coordapi.TxnView{}, false
	}
	return coordapi.TxnView{TransactionalID: v.id, Epoch: v.epoch, Ongoing: v.ongoing, Partitions: slices.Clone(v.parts)}, true
}

// dropView forgets producer id pid's view: it writes nothing more.
func (c *Coordinator) dropView(pid int64) {
	c.parts.SetTxnView(pid, nil)
	c.views.Lock()
	delete(c.views.m, pid)
	c.views.Unlock()
}

// lookup returns the state of a transactional id, nil for none.
func (c *Coordinator) lookup(id string) *state {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mu.byID[id]
}

// persistLocked writes t's row and installs its view. t.mu must be held.
func (c *Coordinator) persistLocked(t *state) error {
	t.updateMs = c.now().UnixMilli()
	if err := c.rows.Apply([][2][]byte{{[]byte(t.id), encodeRow(t)}}, nil); err != nil {
		return fmt.Errorf("transaction %q: %w", t.id, err)
	}
	c.installView(t)
	return nil
}

// lock returns the transaction of p's transactional id, locked, once p is
// its current producer (checkProducerLocked); the caller unlocks it.
func (c *Coordinator) lock(p coordapi.TxnProducer) (*state, error) {
	t := c.lookup(p.TransactionalID)
	if t == nil {
		return nil, coordapi.Errorf(kerr.InvalidProducerIDMapping, "Transactional id %q has no producer: call InitProducerId first", p.TransactionalID)
	}
	t.mu.Lock()
	if t.state == coordapi.TxnDead {
		t.mu.Unlock()
		return nil, coordapi.Errorf(kerr.InvalidProducerIDMapping, "Transactional id %q expired: call InitProducerId first", p.TransactionalID)
	}
	if err := checkProducerLocked(t, p); err != nil {
		t.mu.Unlock()
		return nil, err
	}
	return t, nil
}

// checkProducerLocked validates a request's producer against t, as
// Kafka's TransactionCoordinator does. t.mu must be held.
func checkProducerLocked(t *state, p coordapi.TxnProducer) error {
	switch {
	case p.ProducerID != t.pid:
		return coordapi.Errorf(kerr.InvalidProducerIDMapping, "Producer id %d is not the one of transactional id %q", p.ProducerID, t.id)
	case p.ProducerEpoch != t.epoch:
		return coordapi.Errorf(kerr.ProducerFenced, "Producer epoch %d of transactional id %q is not its current epoch %d: a newer producer fenced it",
			p.ProducerEpoch, t.id, t.epoch)
	}
	return nil
}

// InitProducerID is InitProducerId for a transactional id
// (req.TransactionalID set): a new id gets a producer id at epoch 0; a
// known one gets its epoch bumped (a new producer id when the epoch would
// overflow), fencing the producer that had it, after its ongoing
// transaction is aborted. A request carrying a producer id and epoch
// (KIP-360) must name the current ones, or the previous ones when it
// retries a bump already made. Kafka-level failures: INVALID_REQUEST for
// an empty id, INVALID_TRANSACTION_TIMEOUT, PRODUCER_FENCED.
func (c *Coordinator) InitProducerID(ctx context.Context, req coordapi.InitProducerIDRequest) (coordapi.InitProducerIDResponse, error) {
	switch {
	case req.TransactionalID == nil || *req.TransactionalID == "":
		return coordapi.InitProducerIDResponse{}, coordapi.Errorf(kerr.InvalidRequest, "Transactional id must not be empty")
	case req.TimeoutMs <= 0 || req.TimeoutMs > MaxTimeoutMs:
		return coordapi.InitProducerIDResponse{}, coordapi.Errorf(kerr.InvalidTransactionTimeout,
			"Transaction timeout %d ms is not in 1..%d (transaction.max.timeout.ms)", req.TimeoutMs, MaxTimeoutMs)
	}
	id := *req.TransactionalID
	var t *state
	for {
		c.mu.Lock()
		t = c.mu.byID[id]
		if t == nil {
			t = &state{id: id, pid: -1, prevPID: -1, prevEpoch: -1, startMs: -1}
			c.mu.byID[id] = t
		}
		c.mu.Unlock()
		t.mu.Lock()
		if t.state != coordapi.TxnDead {
			break
		}
		t.mu.Unlock() // expired since it was looked up: look again
	}
	defer t.mu.Unlock()
	if t.pid < 0 { // new (or a new one whose first init failed)
		pid, err := c.parts.AllocateProducerID()
		if err != nil {
			return coordapi.InitProducerIDResponse{}, err
		}
		t.pid, t.epoch, t.timeoutMs, t.state = pid, 0, req.TimeoutMs, coordapi.TxnEmpty
		if err := c.persistLocked(t); err != nil {
			t.pid = -1
			return coordapi.InitProducerIDResponse{}, err
		}
		c.mu.Lock()
		c.mu.byPID[t.pid] = t
		c.mu.Unlock()
		c.log.Info("transactional id registered", "transactional_id", id, "producer_id", t.pid)
		return coordapi.InitProducerIDResponse{ProducerID: t.pid, ProducerEpoch: 0}, nil
	}
	if req.ProducerID >= 0 {
		switch {
		case req.ProducerID == t.prevPID && req.ProducerEpoch == t.prevEpoch:
			// A retry of the bump that made the current epoch.
			return coordapi.InitProducerIDResponse{ProducerID: t.pid, ProducerEpoch: t.epoch}, nil
		case req.ProducerID != t.pid || req.ProducerEpoch != t.epoch:
			return coordapi.InitProducerIDResponse{}, coordapi.Errorf(kerr.ProducerFenced,
				"Producer %d epoch %d of transactional id %q is not its current one (%d epoch %d)", req.ProducerID, req.ProducerEpoch, id, t.pid, t.epoch)
		}
	}
	switch t.state {
	case coordapi.TxnOngoing:
		// A new producer instance took the id over: abort what the old one
		// left open with the epoch bumped, which fences it; the new
		// instance gets that epoch (a new producer id only once the
		// abort is done, when the epoch is exhausted).
		fenceLocked(t)
		if err := c.endLocked(ctx, t, false); err != nil {
			return coordapi.InitProducerIDResponse{}, err
		}
		c.log.Info("ongoing transaction aborted by a new producer", "transactional_id", id, "producer_id", t.pid, "epoch", t.epoch)
		if t.epoch >= math.MaxInt16-1 {
			if err := c.bumpLocked(t); err != nil {
				return coordapi.InitProducerIDResponse{}, err
			}
		}
	case coordapi.TxnPrepareCommit, coordapi.TxnPrepareAbort:
		if err := c.completeLocked(ctx, t); err != nil {
			return coordapi.InitProducerIDResponse{}, err
		}
		if err := c.bumpLocked(t); err != nil {
			return coordapi.InitProducerIDResponse{}, err
		}
	default:
		if err := c.bumpLocked(t); err != nil {
			return coordapi.InitProducerIDResponse{}, err
		}
	}
	t.timeoutMs = req.TimeoutMs
	if err := c.persistLocked(t); err != nil {
		return coordapi.InitProducerIDResponse{}, err
	}
	return coordapi.InitProducerIDResponse{ProducerID: t.pid, ProducerEpoch: t.epoch}, nil
}

// bumpLocked bumps t's epoch, or gives it a new producer id when the epoch
// would overflow, in memory: the caller persists it. t.mu must be held.
func (c *Coordinator) bumpLocked(t *state) error {
	t.prevPID, t.prevEpoch = t.pid, t.epoch
	if t.epoch >= math.MaxInt16-1 {
		pid, err := c.parts.AllocateProducerID()
		if err != nil {
			return err
		}
		c.mu.Lock()
		delete(c.mu.byPID, t.pid)
		c.mu.byPID[pid] = t
		c.mu.Unlock()
		c.dropView(t.pid) // the old id writes nothing more
		t.pid, t.epoch = pid, 0
		return nil
	}
	t.epoch++
	return nil
}

// fenceLocked bumps t's epoch before aborting its ongoing transaction,
// fencing the producer that had it, but never changes the producer id:
// the transaction's open rows, held keys and pending offsets are keyed by
// it, and its markers must carry it. An exhausted epoch stays at its
// maximum. t.mu must be held.
func fenceLocked(t *state) {
	t.prevPID, t.prevEpoch = t.pid, t.epoch
	if t.epoch < math.MaxInt16 {
		t.epoch++
	}
}

// AddPartitionsToTxn adds partitions to the producer's transaction,
// starting one when none is ongoing, and returns an error code per
// partition: 0, UNKNOWN_TOPIC_OR_PARTITION for a partition that does not
// exist (the others then OPERATION_NOT_ATTEMPTED, as Kafka answers). With
// VerifyOnly nothing is added: a partition not in the transaction is
// INVALID_TXN_STATE. Request-level failures (the error):
// INVALID_PRODUCER_ID_MAPPING, PRODUCER_FENCED, CONCURRENT_TRANSACTIONS
// while the previous transaction is being completed.
func (c *Coordinator) AddPartitionsToTxn(ctx context.Context, req coordapi.AddPartitionsRequest) ([]int16, error) {
	t, err := c.lock(req.TxnProducer)
	if err != nil {
		return nil, err
	}
	defer t.mu.Unlock()
	codes := make([]int16, len(req.Partitions))
	if req.VerifyOnly {
		for i, tp := range req.Partitions {
			if t.state != coordapi.TxnOngoing || !slices.Contains(t.parts, tp) {
				codes[i] = kerr.InvalidTxnState.Code
			}
		}
		return codes, nil
	}
	// Memory changes only with a durable write: restored on any failure.
	saved := t.save()
	if err := c.beginLocked(t); err != nil {
		return nil, err
	}
	failed := false
	for i, code := range c.parts.CheckPartitions(req.Partitions) {
		if code != 0 {
			codes[i], failed = code, true
		}
	}
	if failed {
		t.restore(saved)
		for i := range codes {
			if codes[i] == 0 {
				codes[i] = kerr.OperationNotAttempted.Code
			}
		}
		return codes, nil
	}
	before := len(t.parts)
	for _, tp := range req.Partitions {
		if !slices.Contains(t.parts, tp) {
			t.parts = append(t.parts, tp)
		}
	}
	if len(t.parts) == before && t.state == coordapi.TxnOngoing && t.startMs >= 0 {
		return codes, nil // nothing new
	}
	slices.SortFunc(t.parts, ComparePartitions)
	if err := c.persistLocked(t); err != nil {
		t.restore(saved)
		return nil, err
	}
	return codes, nil
}

// saved is what a transaction step may change of a state before its
// write, to restore when the write fails.
type saved struct {
	state       coordapi.TxnState
	parts       []coordapi.TopicPartition
	groups      []string
	startMs     int64
	markersDone bool
}

func (t *state) save() saved {
	return saved{t.state, slices.Clone(t.parts), slices.Clone(t.groups), t.startMs, t.markersDone}
}

func (t *state) restore(s saved) {
	t.state, t.parts, t.groups, t.startMs, t.markersDone = s.state, s.parts, s.groups, s.startMs, s.markersDone
}

// ComparePartitions orders partitions by topic id, then partition: the
// order of a transaction's partitions, in its row and its view.
func ComparePartitions(a, b coordapi.TopicPartition) int {
	if c := slices.Compare(a.TopicID[:], b.TopicID[:]); c != 0 {
		return c
	}
	return cmp.Compare(a.Partition, b.Partition)
}

// beginLocked makes t's transaction ongoing, starting a new one when the
// last one completed. t.mu must be held.
func (c *Coordinator) beginLocked(t *state) error {
	switch t.state {
	case coordapi.TxnOngoing:
		return nil
	case coordapi.TxnPrepareCommit, coordapi.TxnPrepareAbort:
		return coordapi.Errorf(kerr.ConcurrentTransactions, "The previous transaction of %q is being completed", t.id)
	case coordapi.TxnDead:
		return coordapi.Errorf(kerr.InvalidTxnState, "Transactional id %q is dead", t.id)
	}
	t.state = coordapi.TxnOngoing
	t.parts, t.groups = nil, nil
	t.startMs = c.now().UnixMilli()
	t.markersDone = false
	return nil
}

// AddOffsetsToTxn adds a consumer group to the producer's transaction, so
// that EndTxn commits or drops its transactional offsets; it starts a
// transaction when none is ongoing. Failures: as AddPartitionsToTxn's
// request-level ones.
func (c *Coordinator) AddOffsetsToTxn(ctx context.Context, p coordapi.TxnProducer, group string) error {
	t, err := c.lock(p)
	if err != nil {
		return err
	}
	defer t.mu.Unlock()
	saved := t.save()
	if err := c.beginLocked(t); err != nil {
		return err
	}
	if !slices.Contains(t.groups, group) {
		t.groups = append(t.groups, group)
	}
	if err := c.persistLocked(t); err != nil {
		t.restore(saved)
		return err
	}
	return nil
}

// EndTxn commits or aborts the producer's ongoing transaction: it writes
// the markers into every partition the transaction holds, commits or drops
// its groups' transactional offsets, and only then answers. A retry of an
// EndTxn already done succeeds; ending a transaction other than the way it
// was already ended, or with none ongoing, is INVALID_TXN_STATE; a
// completion that fails (the object store, the group coordinator) leaves
// the transaction prepared, finished by a retry or by Tick.
func (c *Coordinator) EndTxn(ctx context.Context, req coordapi.EndTxnRequest) error {
	// A retry after a timeout abort bumped the epoch is PRODUCER_FENCED,
	// as in Kafka.
	t, err := c.lock(req.TxnProducer)
	if err != nil {
		return err
	}
	defer t.mu.Unlock()
	want := map[bool][2]coordapi.TxnState{
		true:  {coordapi.TxnPrepareCommit, coordapi.TxnCompleteCommit},
		false: {coordapi.TxnPrepareAbort, coordapi.TxnCompleteAbort},
	}[req.Commit]
	switch t.state {
	case coordapi.TxnOngoing:
		return c.endLocked(ctx, t, req.Commit)
	case want[0]:
		return c.completeLocked(ctx, t)
	case want[1]:
		return nil // a retry
	}
	return coordapi.Errorf(kerr.InvalidTxnState, "Transaction of %q is %s: it cannot be %s", t.id, t.state,
		map[bool]string{true: "committed", false: "aborted"}[req.Commit])
}

// endLocked prepares t's ongoing transaction to commit or abort and
// completes it. t.mu must be held.
func (c *Coordinator) endLocked(ctx context.Context, t *state, commit bool) error {
	t.state = coordapi.TxnPrepareAbort
	if commit {
		t.state = coordapi.TxnPrepareCommit
	}
	if err := c.persistLocked(t); err != nil {
		t.state = coordapi.TxnOngoing
		return err
	}
	return c.completeLocked(ctx, t)
}

// completeLocked finishes t's prepared transaction: markers, group
// offsets, the complete state. t.mu must be held.
func (c *Coordinator) completeLocked(ctx context.Context, t *state) error {
	commit := t.state == coordapi.TxnPrepareCommit
	if !t.markersDone && len(t.parts) > 0 {
		if err := c.parts.WriteTxnMarkers(ctx, t.pid, t.epoch, t.parts, commit); err != nil {
			// Decided (Prepare*, durable): the client retries EndTxn,
			// which writes the markers again, as Kafka answers a retry
			// while a transaction is being completed.
			return coordapi.Errorf(kerr.ConcurrentTransactions, "Transaction of %q is being completed (its markers: %v)", t.id, err)
		}
		t.markersDone = true
	}
	if len(t.groups) > 0 {
		c.mu.Lock()
		offsets := c.mu.offsets
		c.mu.Unlock()
		if offsets == nil {
			return coordapi.Errorf(kerr.CoordinatorNotAvailable, "the group coordinator is not available to complete the offsets of %q", t.id)
		}
		for _, g := range t.groups {
			if err := offsets.CompleteTxnOffsets(ctx, g, t.pid, commit); err != nil {
				return fmt.Errorf("transaction %q: offsets of group %q: %w", t.id, g, err)
			}
		}
	}
	t.state = coordapi.TxnCompleteAbort
	if commit {
		t.state = coordapi.TxnCompleteCommit
	}
	parts := len(t.parts)
	t.parts, t.groups, t.startMs = nil, nil, -1
	if err := c.persistLocked(t); err != nil {
		return err
	}
	c.log.Debug("transaction completed", "transactional_id", t.id, "producer_id", t.pid, "epoch", t.epoch,
		"commit", commit, "partitions", parts)
	return nil
}

// DescribeTransactions describes transactional ids; an unknown one is
// TRANSACTIONAL_ID_NOT_FOUND in its result.
func (c *Coordinator) DescribeTransactions(ctx context.Context, ids []string) ([]coordapi.TxnDescription, error) {
	out := make([]coordapi.TxnDescription, len(ids))
	for i, id := range ids {
		out[i] = coordapi.TxnDescription{TransactionalID: id, ProducerID: -1, ProducerEpoch: -1, StartMs: -1}
		t := c.lookup(id)
		if t == nil {
			out[i].ErrorCode = kerr.TransactionalIDNotFound.Code
			continue
		}
		t.mu.Lock()
		if t.pid < 0 {
			out[i].ErrorCode = kerr.TransactionalIDNotFound.Code
		} else {
			out[i].State, out[i].ProducerID, out[i].ProducerEpoch, out[i].TimeoutMs = t.state, t.pid, t.epoch, t.timeoutMs
			out[i].StartMs = t.startMs
			out[i].Partitions = slices.Clone(t.parts)
		}
		t.mu.Unlock()
	}
	return out, nil
}

// ListTransactions lists the transactional ids, those in one of states
// and of one of producerIDs when they are given.
func (c *Coordinator) ListTransactions(ctx context.Context, states []coordapi.TxnState, producerIDs []int64) ([]coordapi.TxnListing, error) {
	var out []coordapi.TxnListing
	for _, t := range c.all() {
		t.mu.Lock()
		l := coordapi.TxnListing{TransactionalID: t.id, ProducerID: t.pid, State: t.state}
		t.mu.Unlock()
		if l.ProducerID < 0 || (len(states) > 0 && !slices.Contains(states, l.State)) ||
			(len(producerIDs) > 0 && !slices.Contains(producerIDs, l.ProducerID)) {
			continue
		}
		out = append(out, l)
	}
	slices.SortFunc(out, func(a, b coordapi.TxnListing) int { return cmp.Compare(a.TransactionalID, b.TransactionalID) })
	return out, nil
}

// all returns every transactional id's state.
func (c *Coordinator) all() []*state {
	c.mu.Lock()
	defer c.mu.Unlock()
	all := make([]*state, 0, len(c.mu.byID))
	for _, t := range c.mu.byID {
		all = append(all, t)
	}
	return all
}

// Tick runs one pass of the transaction loop: a transaction ongoing for
// longer than its timeout is aborted with its epoch bumped, which fences
// its producer (Kafka's transaction.timeout.ms); a prepared one is
// completed; once every ExpirationCheckInterval, transactional ids idle
// for IDExpiration are expired. It returns how many transactions it
// aborted.
func (c *Coordinator) Tick(ctx context.Context) int {
	all := c.all()
	nowMs := c.now().UnixMilli()
	c.mu.Lock()
	expire := c.opts.IDExpiration > 0 && nowMs-c.mu.expiredMs >= c.opts.ExpirationCheckInterval.Milliseconds()
	if expire {
		c.mu.expiredMs = nowMs
	}
	c.mu.Unlock()
	if expire {
		c.expire(ctx, all, nowMs)
	}
	aborted := 0
	for _, t := range all {
		if ctx.Err() != nil {
			return aborted
		}
		if !t.mu.TryLock() {
			continue // busy: an operation of its producer is running
		}
		var err error
		switch t.state {
		case coordapi.TxnOngoing:
			if t.startMs >= 0 && nowMs-t.startMs > int64(t.timeoutMs) {
				fenceLocked(t)
				err = c.endLocked(ctx, t, false)
				if err == nil {
					aborted++
					c.log.Info("transaction aborted: past its timeout", "transactional_id", t.id,
						"timeout_ms", t.timeoutMs, "producer_id", t.pid, "epoch", t.epoch)
				}
			}
		case coordapi.TxnPrepareCommit, coordapi.TxnPrepareAbort:
			err = c.completeLocked(ctx, t)
		}
		t.mu.Unlock()
		if err != nil && ctx.Err() == nil {
			c.log.Warn("transaction not completed; retrying", "transactional_id", t.id, "err", err)
		}
	}
	return aborted
}

// expire drops the transactional ids among all that have no transaction
// open and have not changed for IDExpiration, as Kafka's transaction
// coordinator does, so that they do not grow without bound. A producer
// whose transactional id expired gets INVALID_PRODUCER_ID_MAPPING until it
// calls InitProducerId again, which registers the id anew.
func (c *Coordinator) expire(ctx context.Context, all []*state, nowMs int64) {
	cutoff := nowMs - c.opts.IDExpiration.Milliseconds()
	// The expired ids stay locked (TryLock: none is waited for while
	// others are held) until one write has deleted them all.
	var expired []*state
	for _, t := range all {
		if ctx.Err() != nil {
			break
		}
		if !t.mu.TryLock() {
			continue // busy: not idle
		}
		if expirable(t, cutoff) {
			expired = append(expired, t)
		} else {
			t.mu.Unlock()
		}
	}
	if len(expired) == 0 {
		return
	}
	if err := c.expireLocked(expired); err != nil {
		c.log.Warn("transactional ids not expired", "count", len(expired), "err", err)
	} else {
		c.log.Info("transactional ids expired", "count", len(expired))
	}
	for _, t := range expired {
		t.mu.Unlock()
	}
}

// expirable reports whether t has no transaction open and last changed
// before cutoffMs. t.mu must be held.
func expirable(t *state, cutoffMs int64) bool {
	switch t.state {
	case coordapi.TxnEmpty, coordapi.TxnCompleteCommit, coordapi.TxnCompleteAbort:
		return t.pid >= 0 && t.updateMs < cutoffMs
	}
	return false
}

// expireLocked deletes ts in one durable write and marks them dead: the
// operations that looked one up before then look again, or fail. Each
// t.mu must be held.
func (c *Coordinator) expireLocked(ts []*state) error {
	ids := make([][]byte, len(ts))
	for i, t := range ts {
		ids[i] = []byte(t.id)
	}
	if err := c.rows.Apply(nil, ids); err != nil {
		return err
	}
	c.mu.Lock()
	for _, t := range ts {
		if c.mu.byID[t.id] == t {
			delete(c.mu.byID, t.id)
		}
		if c.mu.byPID[t.pid] == t {
			delete(c.mu.byPID, t.pid)
		}
	}
	c.mu.Unlock()
	for _, t := range ts {
		c.dropView(t.pid)
		t.state, t.pid = coordapi.TxnDead, -1 // a stale pointer describes no producer
	}
	return nil
}

// VerifyTxnOffsetCommit checks a TxnOffsetCommit against its transaction
// before the group coordinator stores its offsets (groups.TxnVerifier):
// the transactional id's ongoing transaction must be this producer's, at
// this epoch, and hold the group (AddOffsetsToTxn). It answers 0 or the
// code for every partition: INVALID_PRODUCER_ID_MAPPING, PRODUCER_FENCED
// (INVALID_PRODUCER_EPOCH before v3, KIP-588), INVALID_TXN_STATE. It reads
// only the views, never a transaction's lock, since it runs under the
// group's lock, which EndTxn takes under its transaction's.
func (c *Coordinator) VerifyTxnOffsetCommit(_ context.Context, req *kmsg.TxnOffsetCommitRequest) int16 {
	c.views.Lock()
	v, ok := c.views.m[req.ProducerID]
	c.views.Unlock()
	switch {
	case !ok || v.id != req.TransactionalID:
		return kerr.InvalidProducerIDMapping.Code
	case v.epoch != req.ProducerEpoch:
		if req.Version < 3 {
			return kerr.InvalidProducerEpoch.Code
		}
		return kerr.ProducerFenced.Code
	case !v.ongoing || !slices.Contains(v.groups, req.Group):
		return kerr.InvalidTxnState.Code
	}
	return 0
}
