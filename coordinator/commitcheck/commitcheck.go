// Package commitcheck refuses, before a commit touches any state, the
// commit requests no correct broker sends (Request) and those of objects
// too old to commit (Age).
//
// The collector deletes a WAL object no coordinator state names once the
// store's time of it (LastModified) is GCGrace old (package collect): the upload
// died, or its commit was refused. A commit that arrives later still, from
// a broker stalled between its upload and its commit, would name an object
// that is gone, and acknowledge records nobody can read. So the commit of
// an object older than Options.MaxObjectAge (half the grace) is refused:
//
//	key time ──── upload ──── commit ─────────────── collector
//	   │◀── ≤ MaxObjectAge ──▶│ accepted
//	   │◀─────────────── ≥ GCGrace from LastModified ──▶│ only then an orphan
//
// LastModified is at or after the key's time (the key is made before the
// upload), so an object committed before MaxObjectAge has passed is
// known to its shard a whole half grace before the collector may take it
// as an orphan; the other half covers the skew between the brokers', the
// store's and the coordinators' clocks. With shards, the object is known
// to the shard that committed it, which shard 0's collector asks
// (package collect).
//
// It holds no state and takes no locks.
package commitcheck

import (
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/floe-io/floe/coordapi"
)

// Request rejects commit requests no correct broker sends.
func Request(req *coordapi.CommitRequest) error {
	if req.ObjectKey == "" {
		return coordapi.Errorf(kerr.InvalidRequest, "empty object key")
	}
	if req.ObjectSize < 0 {
		return coordapi.Errorf(kerr.InvalidRequest, "negative object size %d", req.ObjectSize)
	}
	if req.Inline != nil && (int64(len(req.Inline)) != req.ObjectSize || len(req.Inline) > coordapi.MaxInlineObject) {
		return coordapi.Errorf(kerr.InvalidRequest, "inline object of %d bytes for an object of %d (at most %d)",
			len(req.Inline), req.ObjectSize, coordapi.MaxInlineObject)
	}
	for i := range req.Batches {
		b := &req.Batches[i]
		// ObjectSize - ByteLength, not ByteOffset + ByteLength: the sum
		// overflows for an offset near math.MaxInt64.
		if b.ByteOffset < 0 || b.ByteLength <= 0 || b.ByteOffset > req.ObjectSize-int64(b.ByteLength) {
			return coordapi.Errorf(kerr.InvalidRequest, "batch %d at [%d, +%d) is outside the object of %d bytes",
				i, b.ByteOffset, b.ByteLength, req.ObjectSize)
		}
		if b.LastOffsetDelta < 0 {
			return coordapi.Errorf(kerr.InvalidRequest, "batch %d has negative last offset delta %d", i, b.LastOffsetDelta)
		}
	}
	return nil
}

// KeyTime returns the time in a WAL object key's UUIDv7, and false
// for a key whose last segment is not one (tests' names, marker objects
// of another form).
func KeyTime(key string) (time.Time, bool) {
	name := key[strings.LastIndexByte(key, '/')+1:]
	name = strings.TrimPrefix(name, "txn-")
	id, err := uuid.Parse(name)
	if err != nil || id.Version() != 7 {
		return time.Time{}, false
	}
	sec, nsec := id.Time().UnixTime()
	return time.Unix(sec, nsec), true
}

// Age refuses, with REQUEST_TIMED_OUT, the commit of an object whose
// key's UUIDv7 time is more than limit before now, and answers its age;
// a limit of 0 or less, or a key that is not a UUIDv7, is never refused.
func Age(key string, now time.Time, limit time.Duration) (time.Duration, error) {
	if limit <= 0 {
		return 0, nil
	}
	t, ok := KeyTime(key)
	if !ok {
		return 0, nil
	}
	if age := now.Sub(t); age > limit {
		return age, coordapi.Errorf(kerr.RequestTimedOut,
			"object made %s ago, more than the %s a commit may take (a stalled broker, or its clock behind this coordinator's)",
			age.Round(time.Millisecond), limit)
	}
	return 0, nil
}
