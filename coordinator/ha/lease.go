package ha

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// leaseKey is the key of the leader's lease in the lease bucket.
const leaseKey = "leader"

// leaseValue is the lease's value (JSON): who holds it.
type leaseValue struct {
	ID string `json:"id"`
	// Addr is the holder's HTTP address, for operators.
	Addr string `json:"addr,omitempty"`
}

// lease is leadership held in a JetStream KV bucket whose keys expire after
// the lease TTL (the bucket's max age, kept by the servers' clocks): the
// holder renews it every third of the TTL with an update conditional on its
// revision, and a candidate takes it with a create, which succeeds only once
// the key is gone (expired, or deleted by a leader stepping down). The term
// is the revision the lease was taken at, so terms only grow.
//
// The holder stops counting itself leader a TTL after the start of its last
// successful renewal, by its own monotonic clock, which runs ahead of the
// key's expiry on the servers: a holder paused, partitioned or slow past its
// TTL knows it before anyone else can take over.
type lease struct {
	kv  jetstream.KeyValue
	ttl time.Duration
	me  leaseValue

	mu struct {
		sync.Mutex
		rev     uint64    // revision of our last write, 0 when not held
		term    uint64    // revision the lease was taken at
		renewed time.Time // start of the last successful renewal
		lost    bool
	}
}

// errLeaseHeld is returned by tryAcquire while another holds the lease.
var errLeaseHeld = errors.New("ha: the lease is held by another coordinator")

// tryAcquire takes the lease if nobody holds it, or if it is our own (this
// coordinator restarted, under the same id, before the key expired). It
// returns the holder's id when another has it.
func (l *lease) tryAcquire(ctx context.Context) (holder string, err error) {
	val, _ := json.Marshal(l.me)
	start := time.Now()
	e, err := l.kv.Get(ctx, leaseKey)
	var rev uint64
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound):
		rev, err = l.kv.Create(ctx, leaseKey, val)
		if errors.Is(err, jetstream.ErrKeyExists) || isWrongSequence(err) {
			return "", errLeaseHeld
		}
	case err != nil:
		return "", fmt.Errorf("ha: read lease: %w", err)
	default:
		var v leaseValue
		if json.Unmarshal(e.Value(), &v) != nil || v.ID != l.me.ID {
			return v.ID, errLeaseHeld
		}
		rev, err = l.kv.Update(ctx, leaseKey, val, e.Revision())
	}
	if err != nil {
		return "", fmt.Errorf("ha: take lease: %w", err)
	}
	l.mu.Lock()
	l.mu.rev, l.mu.term, l.mu.renewed, l.mu.lost = rev, rev, start, false
	l.mu.Unlock()
	return l.me.ID, nil
}

// renew extends a held lease. It reports false once the lease is lost:
// taken by another, or not renewed for a TTL.
func (l *lease) renew(ctx context.Context) bool {
	l.mu.Lock()
	rev, lost := l.mu.rev, l.mu.lost
	l.mu.Unlock()
	if lost || rev == 0 {
		return false
	}
	val, _ := json.Marshal(l.me)
	start := time.Now()
	rctx, cancel := context.WithTimeout(ctx, l.ttl/3)
	next, err := l.kv.Update(rctx, leaseKey, val, rev)
	cancel()
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case err == nil:
		l.mu.rev, l.mu.renewed = next, start
	case errors.Is(err, jetstream.ErrKeyRevisionMismatch), errors.Is(err, jetstream.ErrKeyExists), isWrongSequence(err):
		l.mu.lost = true // someone else's now
	}
	if time.Since(l.mu.renewed) >= l.ttl {
		l.mu.lost = true
	}
	return !l.mu.lost
}

// valid reports whether the lease is still ours by our own clock.
func (l *lease) valid() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return !l.mu.lost && l.mu.rev != 0 && time.Since(l.mu.renewed) < l.ttl
}

// term returns the term the lease was taken at.
func (l *lease) term() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.mu.term
}

// raiseTerm makes the term at least t: a new leader's term is above every
// term already in the log.
func (l *lease) raiseTerm(t uint64) {
	l.mu.Lock()
	l.mu.term = max(l.mu.term, t)
	l.mu.Unlock()
}

// release gives the lease up (a leader stepping down or stopping), so that
// a standby need not wait for it to expire.
func (l *lease) release(ctx context.Context) {
	l.mu.Lock()
	rev := l.mu.rev
	l.mu.rev, l.mu.lost = 0, true
	l.mu.Unlock()
	if rev != 0 {
		_ = l.kv.Delete(ctx, leaseKey, jetstream.LastRevision(rev))
	}
}

// isWrongSequence reports whether err is JetStream's answer to a write
// whose expected last sequence was not the stream's (or the subject's).
func isWrongSequence(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && (apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
		apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant)
}
