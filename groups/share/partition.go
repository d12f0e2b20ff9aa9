package share

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/floe-io/floe/coordapi"
)

// State is a record's state in a share-partition, with Kafka's RecordState
// ids (they are stored, and DescribeShareGroupOffsets-style tools print
// them).
type State uint8

// Record states. Acknowledged and Archived are terminal.
const (
	// Available records are acquired by the next fetch.
	Available State = 0
	// Acquired records are held by one member until they are acknowledged,
	// released, or their lock expires.
	Acquired State = 1
	// Acknowledged records were accepted: delivered and processed.
	Acknowledged State = 2
	// Archived records are never delivered again: rejected, gapped, past
	// the delivery count limit, or below the log start.
	Archived State = 4
)

// String names the state as Kafka's RecordState does, in lower case.
func (s State) String() string {
	switch s {
	case Available:
		return "available"
	case Acquired:
		return "acquired"
	case Acknowledged:
		return "acknowledged"
	case Archived:
		return "archived"
	}
	return fmt.Sprintf("state(%d)", uint8(s))
}

func (s State) valid() bool {
	return s == Available || s == Acquired || s == Acknowledged || s == Archived
}

// terminal reports whether records in s are done with: SPSO moves past
// them.
func (s State) terminal() bool { return s == Acknowledged || s == Archived }

// AckType is an acknowledgement type of ShareFetch and ShareAcknowledge
// (Kafka's AcknowledgeType ids, plus 0 for a gap).
type AckType int8

// Acknowledgement types.
const (
	// AckGap: the offset holds no record (a compaction hole or a
	// transaction marker); archived.
	AckGap AckType = 0
	// AckAccept: processed; acknowledged.
	AckAccept AckType = 1
	// AckRelease: give it back; available again, or archived once its
	// delivery count reached the limit.
	AckRelease AckType = 2
	// AckReject: unprocessable; archived.
	AckReject AckType = 3
	// AckRenew (ShareFetch and ShareAcknowledge v2, KIP-1222): keep the
	// record and restart its lock.
	AckRenew AckType = 4

	// AckArchiveAborted is internal, never accepted from a client: the
	// offsets hold records of an aborted transaction, which a
	// read_committed group never delivers (Kafka's
	// SharePartition.filterAbortedTransactionalAcquiredRecords). Archived
	// whatever their holder; see ApplyInternal.
	AckArchiveAborted AckType = 5
	// AckReturnUnread is internal, never accepted from a client: the broker
	// could not read the acquired records' bytes, so they never reached the
	// member. Available again, their delivery count back down by one; see
	// ApplyInternal.
	AckReturnUnread AckType = 6
)

// String names the type as Kafka's AcknowledgeType does, in lower case.
func (a AckType) String() string {
	switch a {
	case AckGap:
		return "gap"
	case AckAccept:
		return "accept"
	case AckRelease:
		return "release"
	case AckReject:
		return "reject"
	case AckRenew:
		return "renew"
	case AckArchiveAborted:
		return "archive_aborted"
	case AckReturnUnread:
		return "return_unread"
	}
	return fmt.Sprintf("ack(%d)", int8(a))
}

// AnyBroker, as ReleaseMember's via, releases a member's records whatever
// broker they were acquired through.
const AnyBroker int32 = -1

// ID names a share-partition: a share group's state of one partition.
type ID struct {
	Group     string
	Topic     coordapi.TopicID
	Partition int32
}

// String formats the id for logs and errors.
func (id ID) String() string { return fmt.Sprintf("%s/%s/%d", id.Group, id.Topic, id.Partition) }

// Range is a run of consecutive offsets in the same state with the same
// delivery count (and, when Acquired, the same holder and deadline).
type Range struct {
	First, Last   int64 // inclusive
	State         State
	DeliveryCount int16
	// Member, Via and DeadlineMs are set only when State is Acquired: the
	// member holding the records, the broker they went out through, and
	// when the lock expires (milliseconds on the coordinator's clock).
	Member     string
	Via        int32
	DeadlineMs int64
}

// Len is the number of offsets in r.
func (r Range) Len() int64 { return r.Last - r.First + 1 }

// String formats r as the package's tests print it.
func (r Range) String() string {
	s := fmt.Sprintf("%d-%d %s(%d)", r.First, r.Last, r.State, r.DeliveryCount)
	if r.State == Acquired {
		s += fmt.Sprintf(" %s@%d until %d", r.Member, r.Via, r.DeadlineMs)
	}
	return s
}

// mergeable reports whether b continues a: adjacent, in the same state,
// with the same count and holder.
func mergeable(a, b Range) bool {
	return a.Last+1 == b.First && a.State == b.State && a.DeliveryCount == b.DeliveryCount &&
		a.Member == b.Member && a.Via == b.Via && a.DeadlineMs == b.DeadlineMs
}

// released returns r without a holder, in state s.
func (r Range) released(s State) Range {
	r.State, r.Member, r.Via, r.DeadlineMs = s, "", 0, 0
	return r
}

// AcquiredRecords is a run of records a member acquired, with their
// delivery count: ShareFetch's AcquiredRecords.
type AcquiredRecords struct {
	First, Last   int64
	DeliveryCount int16
}

// Config holds a share-partition's limits: the group.share.* broker
// settings, or the share.* group configs that override them. A zero field
// takes its default.
type Config struct {
	// MaxRecordLocks bounds end - SPSO, the offsets in flight
	// (group.share.partition.max.record.locks). Default: 2000.
	MaxRecordLocks int
	// DeliveryCountLimit is how many times a record is delivered before it
	// is archived instead of made available again
	// (group.share.delivery.count.limit). Default: 5.
	DeliveryCountLimit int
	// LockDuration is how long an acquisition holds its records
	// (group.share.record.lock.duration.ms). Default: 30s.
	LockDuration time.Duration
	// NoRenew refuses AckRenew with INVALID_REQUEST
	// (share.renew.acknowledge.enable=false). Default: false, renew allowed.
	NoRenew bool
}

// Defaults: Kafka 4.4's.
const (
	DefaultMaxRecordLocks     = 2000
	DefaultDeliveryCountLimit = 5
	DefaultLockDuration       = 30 * time.Second
)

// Validate reports every field out of range, all at once.
func (c Config) Validate() error {
	var errs []error
	if c.MaxRecordLocks < 0 {
		errs = append(errs, fmt.Errorf("share: MaxRecordLocks %d is negative", c.MaxRecordLocks))
	}
	if c.DeliveryCountLimit < 0 || c.DeliveryCountLimit > math.MaxInt16 {
		errs = append(errs, fmt.Errorf("share: DeliveryCountLimit %d is not in [0, %d]", c.DeliveryCountLimit, math.MaxInt16))
	}
	if c.LockDuration < 0 {
		errs = append(errs, fmt.Errorf("share: LockDuration %v is negative", c.LockDuration))
	}
	return errors.Join(errs...)
}

func (c Config) withDefaults() Config {
	c.MaxRecordLocks = cmp.Or(c.MaxRecordLocks, DefaultMaxRecordLocks)
	c.DeliveryCountLimit = cmp.Or(c.DeliveryCountLimit, DefaultDeliveryCountLimit)
	c.LockDuration = cmp.Or(c.LockDuration, DefaultLockDuration)
	return c
}

// Stats counts the offsets an operation moved, for the
// floe_share_group_records_total outcomes and the lock timeout counter.
type Stats struct {
	Acquired     int64 // acquired for the first time
	Redelivered  int64 // acquired again after a release or expiry
	Acknowledged int64 // accepted
	// Released counts offsets given back: AckRelease, ReleaseMember.
	Released int64
	Rejected int64
	Gap      int64
	Renewed  int64
	// Expired counts offsets whose lock expired.
	Expired int64
	// ArchivedLimit counts offsets archived at the delivery count limit,
	// among Released and Expired.
	ArchivedLimit int64
	// ArchivedLogStart counts offsets not yet completed that the log start
	// passed.
	ArchivedLogStart int64
	// ArchivedAborted counts acquired offsets of aborted transactions that
	// the broker archived under read_committed (the internal "archive
	// aborted" acknowledgement), for the outcome archived_aborted.
	ArchivedAborted int64
	// Skipped counts offsets archived without being acquired because they
	// hold no record to deliver: on a hierarchical view, the base
	// partition's offsets between the batches of the view's key (Skip).
	Skipped int64
}

// Result is what an operation answers and the rows it changed.
type Result struct {
	// Acquired is what Acquire gave the member, ascending.
	Acquired []AcquiredRecords
	// Wake reports that records became available or the window opened:
	// fetches waiting on the share-partition may acquire now.
	Wake  bool
	Stats Stats
	// Rows are the writes that take the stored state to the new one, in
	// order, for one batch with the rest of the call's writes.
	Rows []Mutation
}

// Partition is the state of one share-partition: the share-partition start
// offset (SPSO), and the ranges that tile [SPSO, end), where end is the
// first offset never acquired. Its methods change it in memory and return
// the rows to write; it takes no locks, reads no clock and does no I/O.
type Partition struct {
	id     ID
	head   []byte
	cfg    Config
	epoch  int32
	start  int64
	end    int64
	initMs int64
	// ranges tile [start, end) in order; the first is never terminal after
	// an operation (SPSO moves past a terminal prefix), and no two
	// neighbours are mergeable.
	ranges []Range
}

// New starts share-partition id at offset (SPSO = end = offset), as a
// partition's first assignment does (share.auto.offset.reset resolved by
// the caller), at nowMs. Its Rows write the head and clear any ranges left
// under it.
func New(id ID, cfg Config, offset, nowMs int64) (*Partition, Result) {
	p := &Partition{id: id, head: HeadKey(id), cfg: cfg.withDefaults(), start: offset, end: offset, initMs: nowMs}
	return p, Result{Rows: []Mutation{p.clearRanges(), p.headRow()}}
}

// ID is the share-partition's id.
func (p *Partition) ID() ID { return p.id }

// Config is the share-partition's configuration, defaults filled in.
func (p *Partition) Config() Config { return p.cfg }

// SetConfig changes the limits, as a group config change does. Records
// already acquired keep their deadlines; the new delivery count limit
// applies at their next release or expiry.
func (p *Partition) SetConfig(cfg Config) { p.cfg = cfg.withDefaults() }

// Start is the share-partition start offset (SPSO).
func (p *Partition) Start() int64 { return p.start }

// End is the first offset never acquired.
func (p *Partition) End() int64 { return p.end }

// StateEpoch is bumped by every Reset.
func (p *Partition) StateEpoch() int32 { return p.epoch }

// InitMs is when the share-partition was started.
func (p *Partition) InitMs() int64 { return p.initMs }

// Ranges returns a copy of the ranges in flight, ascending.
func (p *Partition) Ranges() []Range { return slices.Clone(p.ranges) }

// Clone returns a copy of p that shares nothing with it.
func (p *Partition) Clone() *Partition {
	c := *p
	c.ranges = slices.Clone(p.ranges)
	return &c
}

// Completed is the number of acknowledged or archived offsets at or after
// SPSO.
func (p *Partition) Completed() int64 {
	var n int64
	for _, r := range p.ranges {
		if r.State.terminal() {
			n += r.Len()
		}
	}
	return n
}

// Lag is the records below bound (the high watermark, or the last stable
// offset under read_committed) not yet completed: bound - SPSO - Completed
// (KIP-1226), at least 0.
func (p *Partition) Lag(bound int64) int64 {
	return max(0, bound-p.start-p.Completed())
}

// NextDeadline is the earliest lock deadline of the acquired records;
// false when none are acquired.
func (p *Partition) NextDeadline() (int64, bool) {
	var d int64
	ok := false
	for _, r := range p.ranges {
		if r.State == Acquired && (!ok || r.DeadlineMs < d) {
			d, ok = r.DeadlineMs, true
		}
	}
	return d, ok
}

// AcquireRequest asks for records for one member.
type AcquireRequest struct {
	Member string
	// Via is the broker the records go out through.
	Via int32
	// NowMs is the coordinator's clock: the lock runs from it.
	NowMs int64
	// MaxRecords is ShareFetch's MaxRecords; nothing is acquired at 0.
	MaxRecords int
	// Bound is the first offset not to acquire: the high watermark, or the
	// last stable offset under read_committed.
	Bound int64
	// BatchLast, when set, returns the last offset of the log batch that
	// holds offset (at least offset). Each cut at MaxRecords is rounded up
	// to it, so whole batches are acquired (ShareAcquireMode 0,
	// batch_optimized: MaxRecords is a soft limit, as in Kafka). Nil cuts at
	// exactly MaxRecords (mode 1, record_limit).
	BatchLast func(offset int64) int64
}

// Acquire gives req.Member records under a lock of Config.LockDuration:
// first the available records below end (released or expired, their
// delivery count going up), then new ones from end up to req.Bound. It
// takes at most MaxRecords (rounded up to batch ends, see BatchLast), and
// new records only while end - SPSO stays under MaxRecordLocks; with the
// window full, it still redelivers available records below end, as
// Kafka's SharePartition does.
func (p *Partition) Acquire(req AcquireRequest) Result {
	t := p.begin()
	var res Result
	if req.MaxRecords <= 0 || req.Member == "" {
		return t.finish(res)
	}
	deadline := req.NowMs + p.cfg.LockDuration.Milliseconds()
	maxRecords := int64(req.MaxRecords)
	want := min(maxRecords, int64(p.cfg.MaxRecordLocks)-(p.end-p.start))
	last := req.Bound - 1 // last offset to acquire
	next := p.end
	for _, r := range p.ranges {
		if r.State == Available {
			next = r.First
			break
		}
	}
	if want <= 0 {
		if next >= p.end {
			return t.finish(res)
		}
		// The window is full but records below end are available:
		// redeliver those, take nothing new.
		want = min(maxRecords, p.end-next)
		last = min(last, p.end-1)
	}
	cut := func(first, last, got int64) int64 {
		if last-first+1 <= want-got {
			return last
		}
		c := first + want - got - 1
		if req.BatchLast != nil {
			c = max(c, req.BatchLast(c))
		}
		return min(c, last)
	}
	acquire := func(r Range) Range {
		r.State, r.Member, r.Via, r.DeadlineMs = Acquired, req.Member, req.Via, deadline
		if r.DeliveryCount < math.MaxInt16 {
			r.DeliveryCount++
		}
		return r
	}
	var got int64
	// Available records below end, by offset.
	for next < p.end && next <= last && got < want {
		r := p.ranges[p.find(next)]
		if r.State != Available {
			next = r.Last + 1
			continue
		}
		a := max(r.First, next)
		e := cut(a, min(r.Last, last), got)
		t.update(a, e, acquire)
		res.Acquired = append(res.Acquired, AcquiredRecords{a, e, acquire(r).DeliveryCount})
		t.stats.Redelivered += e - a + 1
		got += e - a + 1
		next = e + 1
	}
	// New records from end.
	if got < want && p.end <= last {
		first := p.end
		e := cut(first, last, got)
		t.append(Range{First: first, Last: e, State: Acquired, DeliveryCount: 1, Member: req.Member, Via: req.Via, DeadlineMs: deadline})
		res.Acquired = append(res.Acquired, AcquiredRecords{first, e, 1})
		t.stats.Acquired += e - first + 1
	}
	res.Acquired = mergeAcquired(res.Acquired)
	return t.finish(res)
}

// NextOffset is the first offset Acquire would look at: the first
// available record below end, else end.
func (p *Partition) NextOffset() int64 {
	for _, r := range p.ranges {
		if r.State == Available {
			return r.First
		}
	}
	return p.end
}

// Skip archives the offsets in [first, last] without acquiring them: they
// hold no record the share-partition delivers (on a hierarchical view, the
// base partition's offsets between the batches of the view's key, which
// the posting index names). Available offsets there are archived, their
// delivery count kept; offsets from end on are appended archived, moving
// end past last, if first is not past end (ranges tile [SPSO, end));
// acquired, acknowledged and archived offsets are left alone, and offsets
// below SPSO skipped. SPSO moves past them once what precedes them is
// done. Counted in Stats.Skipped.
func (p *Partition) Skip(first, last int64) Result {
	t := p.begin()
	first = max(first, p.start)
	if first > last {
		return t.finish(Result{})
	}
	if first < p.end {
		t.update(first, min(last, p.end-1), func(r Range) Range {
			if r.State != Available {
				return r
			}
			t.stats.Skipped += r.Len()
			return r.released(Archived)
		})
	}
	if last >= p.end && first <= p.end {
		a := p.end
		t.append(Range{First: a, Last: last, State: Archived})
		t.stats.Skipped += last - a + 1
	}
	return t.finish(Result{})
}

// mergeAcquired joins adjacent runs with the same delivery count.
func mergeAcquired(as []AcquiredRecords) []AcquiredRecords {
	out := as[:0]
	for _, a := range as {
		if n := len(out); n > 0 && out[n-1].Last+1 == a.First && out[n-1].DeliveryCount == a.DeliveryCount {
			out[n-1].Last = a.Last
			continue
		}
		out = append(out, a)
	}
	return out
}

// AckBatch is one acknowledgement batch of a partition: a type for the
// whole of [First, Last], or one per offset.
type AckBatch struct {
	First, Last int64
	Types       []AckType
}

// Acknowledge applies member's acknowledgements through broker via, all or
// nothing, as Kafka's SharePartition does (it rolls back on any error):
//
//   - a batch with First > Last, overlapping the previous one, without
//     types, with a type count that is neither 1 nor its length, or with an
//     unknown type (AckRenew under NoRenew too), is INVALID_REQUEST;
//   - a batch wholly below SPSO is skipped, one that straddles it is cut;
//   - offsets at or past end are INVALID_REQUEST, or INVALID_RECORD_STATE
//     when nothing is in flight;
//   - an offset that member has not acquired (available, acquired by
//     another member, already acknowledged or archived, or acknowledged
//     twice in the call) is INVALID_RECORD_STATE.
//
// A returned error wraps a *kerr.Error, and nothing changed. AckRenew
// restarts the lock from nowMs and moves the records to via.
func (p *Partition) Acknowledge(member string, via int32, nowMs int64, batches []AckBatch) (Result, error) {
	if err := p.checkAcks(member, batches); err != nil {
		return Result{}, err
	}
	t := p.begin()
	var res Result
	limit := int16(min(p.cfg.DeliveryCountLimit, math.MaxInt16))
	deadline := nowMs + p.cfg.LockDuration.Milliseconds()
	apply := func(a, b int64, typ AckType) {
		n := b - a + 1
		switch typ {
		case AckAccept:
			t.stats.Acknowledged += n
			t.update(a, b, func(r Range) Range { return r.released(Acknowledged) })
		case AckReject:
			t.stats.Rejected += n
			t.update(a, b, func(r Range) Range { return r.released(Archived) })
		case AckGap:
			t.stats.Gap += n
			t.update(a, b, func(r Range) Range { return r.released(Archived) })
		case AckRelease:
			t.stats.Released += n
			t.update(a, b, func(r Range) Range {
				if r.DeliveryCount >= limit {
					t.stats.ArchivedLimit += r.Len()
					return r.released(Archived)
				}
				t.wake = true
				return r.released(Available)
			})
		case AckRenew:
			t.stats.Renewed += n
			t.update(a, b, func(r Range) Range {
				r.Via, r.DeadlineMs = via, deadline
				return r
			})
		}
	}
	for _, b := range batches {
		if b.Last < p.start {
			continue
		}
		first := max(b.First, p.start)
		if len(b.Types) == 1 {
			apply(first, b.Last, b.Types[0])
			continue
		}
		for o := first; o <= b.Last; {
			typ := b.Types[o-b.First]
			e := o
			for e < b.Last && b.Types[e+1-b.First] == typ {
				e++
			}
			apply(o, e, typ)
			o = e + 1
		}
	}
	return t.finish(res), nil
}

// checkAcks validates batches against the state without changing it; see
// Acknowledge.
func (p *Partition) checkAcks(member string, batches []AckBatch) error {
	prevLast := int64(-1)
	for _, b := range batches {
		switch {
		case b.First > b.Last:
			return ackErr(kerr.InvalidRequest, "batch %d-%d: first offset after last", b.First, b.Last)
		case b.First < prevLast:
			return ackErr(kerr.InvalidRequest, "batch %d-%d: overlaps the previous batch", b.First, b.Last)
		case len(b.Types) == 0:
			return ackErr(kerr.InvalidRequest, "batch %d-%d: no acknowledge type", b.First, b.Last)
		case len(b.Types) > 1 && int64(len(b.Types)) != b.Last-b.First+1:
			return ackErr(kerr.InvalidRequest, "batch %d-%d: %d acknowledge types", b.First, b.Last, len(b.Types))
		}
		for _, typ := range b.Types {
			if typ < AckGap || typ > AckRenew || (typ == AckRenew && p.cfg.NoRenew) {
				return ackErr(kerr.InvalidRequest, "batch %d-%d: invalid acknowledge type %d", b.First, b.Last, typ)
			}
		}
		prevLast = b.Last
	}
	applied := int64(-1) // last offset an earlier batch acknowledges
	for _, b := range batches {
		if b.Last < p.start {
			continue
		}
		first := max(b.First, p.start)
		switch {
		case len(p.ranges) == 0:
			return ackErr(kerr.InvalidRecordState, "batch %d-%d: no record in flight", b.First, b.Last)
		case first >= p.end:
			return ackErr(kerr.InvalidRequest, "batch %d-%d: first offset past the acquired records", b.First, b.Last)
		case b.Last >= p.end:
			return ackErr(kerr.InvalidRequest, "batch %d-%d: last offset past the acquired records", b.First, b.Last)
		case first <= applied:
			return ackErr(kerr.InvalidRecordState, "offset %d acknowledged twice", first)
		}
		for i := p.find(first); i < len(p.ranges) && p.ranges[i].First <= b.Last; i++ {
			r := p.ranges[i]
			if r.State != Acquired || r.Member != member {
				o := max(r.First, first)
				if r.State == Acquired {
					return ackErr(kerr.InvalidRecordState, "offset %d: acquired by another member", o)
				}
				return ackErr(kerr.InvalidRecordState, "offset %d: %s, not acquired", o, r.State)
			}
		}
		applied = b.Last
	}
	return nil
}

func ackErr(code *kerr.Error, format string, args ...any) error {
	return fmt.Errorf("share: "+format+": %w", append(args, code)...)
}

// Internal reports whether a is an internal type (AckArchiveAborted,
// AckReturnUnread): a broker's, never a client's.
func (a AckType) Internal() bool { return a == AckArchiveAborted || a == AckReturnUnread }

// ApplyInternal applies the internal acknowledgements a broker sends for
// records it acquired for member through broker via, offset by offset and
// never failing, since the broker cannot know what changed meanwhile (a
// lock expired, another member acquired the records):
//
//   - AckArchiveAborted archives every offset not yet acknowledged or
//     archived, acquired by anyone or available: an aborted transaction's
//     records are never to be delivered under read_committed, whoever holds
//     them (the holder was never given them: its broker filtered them out).
//   - AckReturnUnread makes the offsets still acquired by member through
//     via available again, their delivery count down by one (they never
//     reached the member); others are left alone.
//
// Offsets below SPSO or at or past end, and other types, are skipped.
func (p *Partition) ApplyInternal(member string, via int32, batches []AckBatch) Result {
	t := p.begin()
	apply := func(a, b int64, typ AckType) {
		a, b = max(a, p.start), min(b, p.end-1)
		if a > b || len(p.ranges) == 0 {
			return
		}
		switch typ {
		case AckArchiveAborted:
			t.update(a, b, func(r Range) Range {
				if r.State.terminal() {
					return r
				}
				t.stats.ArchivedAborted += r.Len()
				return r.released(Archived)
			})
		case AckReturnUnread:
			t.update(a, b, func(r Range) Range {
				if r.State != Acquired || r.Member != member || r.Via != via {
					return r
				}
				t.stats.Released += r.Len()
				t.wake = true
				r = r.released(Available)
				r.DeliveryCount = max(0, r.DeliveryCount-1)
				return r
			})
		}
	}
	for _, b := range batches {
		switch {
		case b.First > b.Last || len(b.Types) == 0:
		case len(b.Types) == 1:
			apply(b.First, b.Last, b.Types[0])
		case int64(len(b.Types)) == b.Last-b.First+1:
			for o := b.First; o <= b.Last; o++ {
				apply(o, o, b.Types[o-b.First])
			}
		}
	}
	return t.finish(Result{})
}

// ExpireLocks releases the records whose lock expired at nowMs: available
// again with their delivery count, or archived once it reached the limit.
func (p *Partition) ExpireLocks(nowMs int64) Result {
	t := p.begin()
	limit := int16(min(p.cfg.DeliveryCountLimit, math.MaxInt16))
	var due []Range
	for _, r := range p.ranges {
		if r.State == Acquired && r.DeadlineMs <= nowMs {
			due = append(due, r)
		}
	}
	for _, d := range due {
		t.stats.Expired += d.Len()
		t.update(d.First, d.Last, func(r Range) Range {
			if r.DeliveryCount >= limit {
				t.stats.ArchivedLimit += r.Len()
				return r.released(Archived)
			}
			t.wake = true
			return r.released(Available)
		})
	}
	return t.finish(Result{})
}

// ReleaseMember makes the records member acquired through broker via
// (AnyBroker: through any) available again, as Kafka 4.4's
// SharePartition.releaseAcquiredRecords does when a share session closes,
// its connection drops or a member leaves: their delivery count is kept
// (DeliveryCountOps.NO_OP), and records at the delivery count limit are
// archived, as at a lock expiry. (Kafka 4.0 took the count back down by
// one; 4.4 does not, so a record whose holder keeps dying is poison too.)
func (p *Partition) ReleaseMember(member string, via int32) Result {
	t := p.begin()
	limit := int16(min(p.cfg.DeliveryCountLimit, math.MaxInt16))
	var held []Range
	for _, r := range p.ranges {
		if r.State == Acquired && r.Member == member && (via == AnyBroker || r.Via == via) {
			held = append(held, r)
		}
	}
	for _, h := range held {
		t.stats.Released += h.Len()
		t.update(h.First, h.Last, func(r Range) Range {
			if r.DeliveryCount >= limit {
				t.stats.ArchivedLimit += r.Len()
				return r.released(Archived)
			}
			t.wake = true
			return r.released(Available)
		})
	}
	return t.finish(Result{})
}

// AdvanceLogStart archives what lies below a new log start offset
// (retention, DeleteRecords): SPSO moves up to it, and end too if it was
// below. Acquired records there are dropped with the rest: their holder's
// acknowledgements are skipped, as Kafka skips acknowledgements below SPSO.
// An offset at or below SPSO changes nothing.
func (p *Partition) AdvanceLogStart(offset int64) Result {
	t := p.begin()
	if offset <= p.start {
		return t.finish(Result{})
	}
	i := sort.Search(len(p.ranges), func(i int) bool { return p.ranges[i].Last >= offset })
	for _, r := range p.ranges[:i] {
		if !r.State.terminal() {
			t.stats.ArchivedLogStart += r.Len()
		}
	}
	if i < len(p.ranges) && p.ranges[i].First < offset {
		r := p.ranges[i]
		if !r.State.terminal() {
			t.stats.ArchivedLogStart += offset - r.First
		}
		t.noteOld(r)
		p.ranges[i].First = offset
		t.noteNew(offset)
	}
	p.ranges = append(p.ranges[:0], p.ranges[i:]...)
	p.start = offset
	p.end = max(p.end, offset)
	return t.finish(Result{})
}

// Reset moves SPSO and end to offset and forgets every range, acquired ones
// included, bumping the state epoch: AlterShareGroupOffsets on an empty
// group, or share.auto.offset.reset (the caller resolves earliest, latest
// or by_duration to an offset).
func (p *Partition) Reset(offset int64) Result {
	t := p.begin()
	t.reset = true
	p.ranges = nil
	p.start, p.end = offset, offset
	p.epoch++
	return t.finish(Result{Wake: true})
}

// find returns the index of the range holding offset o; o must be in
// [start, end).
func (p *Partition) find(o int64) int {
	return sort.Search(len(p.ranges), func(i int) bool { return p.ranges[i].Last >= o })
}

// tx is one operation in progress: it remembers the rows it may have
// changed, to write only those.
type tx struct {
	p          *Partition
	start, end int64
	epoch      int32
	reset      bool
	wake       bool
	stats      Stats
	old        map[int64]oldRange // by first offset, before the operation
}

type oldRange struct {
	r  Range
	ok bool // false: no range started at this offset
}

func (p *Partition) begin() *tx {
	return &tx{p: p, start: p.start, end: p.end, epoch: p.epoch}
}

// noteOld remembers r as it was before the operation, if it is the first
// time the operation touches its key.
func (t *tx) noteOld(r Range) {
	if t.old == nil {
		t.old = make(map[int64]oldRange)
	}
	if _, seen := t.old[r.First]; !seen {
		t.old[r.First] = oldRange{r, true}
	}
}

// noteNew remembers that a range now starts at first.
func (t *tx) noteNew(first int64) {
	if t.old == nil {
		t.old = make(map[int64]oldRange)
	}
	if _, seen := t.old[first]; !seen {
		t.old[first] = oldRange{}
	}
}

// splice replaces ranges[lo:hi] with repl (which covers the same offsets),
// merging it with its neighbours.
func (t *tx) splice(lo, hi int, repl []Range) {
	rs := t.p.ranges
	if lo > 0 {
		lo--
		repl = append([]Range{rs[lo]}, repl...)
	}
	if hi < len(rs) {
		repl = append(repl, rs[hi])
		hi++
	}
	for _, r := range rs[lo:hi] {
		t.noteOld(r)
	}
	merged := repl[:0]
	for _, r := range repl {
		if n := len(merged); n > 0 && mergeable(merged[n-1], r) {
			merged[n-1].Last = r.Last
			continue
		}
		merged = append(merged, r)
	}
	for _, r := range merged {
		t.noteNew(r.First)
	}
	t.p.ranges = slices.Replace(rs, lo, hi, merged...)
}

// update applies fn to every range piece in [a, b], splitting the ranges
// at a and b; start <= a <= b < end. fn keeps First and Last.
func (t *tx) update(a, b int64, fn func(Range) Range) {
	rs := t.p.ranges
	i, j := t.p.find(a), t.p.find(b)
	repl := make([]Range, 0, j-i+3)
	if rs[i].First < a {
		left := rs[i]
		left.Last = a - 1
		repl = append(repl, left)
	}
	for _, r := range rs[i : j+1] {
		r.First, r.Last = max(r.First, a), min(r.Last, b)
		repl = append(repl, fn(r))
	}
	if rs[j].Last > b {
		right := rs[j]
		right.First = b + 1
		repl = append(repl, right)
	}
	t.splice(i, j+1, repl)
}

// append adds r at end and moves end past it.
func (t *tx) append(r Range) {
	t.splice(len(t.p.ranges), len(t.p.ranges), []Range{r})
	t.p.end = r.Last + 1
}

// finish moves SPSO past the completed prefix and returns res with the
// operation's rows and stats.
func (t *tx) finish(res Result) Result {
	p := t.p
	n := 0
	for n < len(p.ranges) && p.ranges[n].State.terminal() {
		n++
	}
	if n > 0 {
		p.start = p.ranges[n-1].Last + 1
		p.ranges = append(p.ranges[:0], p.ranges[n:]...)
	}
	if len(p.ranges) == 0 {
		p.ranges = nil
	}
	res.Stats = t.stats
	res.Wake = res.Wake || t.wake || p.start > t.start
	switch {
	case t.reset:
		res.Rows = append(res.Rows, p.clearRanges())
	case p.start != t.start:
		res.Rows = append(res.Rows, Mutation{Op: OpDeleteRange, Key: rangeKey(p.head, 0), End: rangeKey(p.head, p.start)})
	}
	if !t.reset {
		keys := make([]int64, 0, len(t.old))
		for k := range t.old {
			if k >= p.start {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		for _, k := range keys {
			o := t.old[k]
			cur, ok := p.rangeAt(k)
			switch {
			case ok && (!o.ok || cur != o.r):
				res.Rows = append(res.Rows, Mutation{Op: OpSet, Key: rangeKey(p.head, k), Value: encodeRange(cur)})
			case !ok && o.ok:
				res.Rows = append(res.Rows, Mutation{Op: OpDelete, Key: rangeKey(p.head, k)})
			}
		}
	}
	if p.start != t.start || p.end != t.end || p.epoch != t.epoch {
		res.Rows = append(res.Rows, p.headRow())
	}
	return res
}

// rangeAt returns the range starting at first, if one does.
func (p *Partition) rangeAt(first int64) (Range, bool) {
	i, ok := slices.BinarySearchFunc(p.ranges, first, func(r Range, o int64) int { return cmp.Compare(r.First, o) })
	if !ok {
		return Range{}, false
	}
	return p.ranges[i], true
}
