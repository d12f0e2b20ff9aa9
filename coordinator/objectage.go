package coordinator

import (
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/floe-io/floe/coordapi"
)

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

// objectKeyTime returns the time in a WAL object key's UUIDv7, and false
// for a key whose last segment is not one (tests' names, marker objects
// of another form).
func objectKeyTime(key string) (time.Time, bool) {
	name := key[strings.LastIndexByte(key, '/')+1:]
	name = strings.TrimPrefix(name, "txn-")
	id, err := uuid.Parse(name)
	if err != nil || id.Version() != 7 {
		return time.Time{}, false
	}
	sec, nsec := id.Time().UnixTime()
	return time.Unix(sec, nsec), true
}

// checkObjectAge refuses the commit of an object older than MaxObjectAge
// with REQUEST_TIMED_OUT: the producer's retry writes a new object.
func (c *Coordinator) checkObjectAge(req *coordapi.CommitRequest) error {
	if c.opts.MaxObjectAge <= 0 {
		return nil
	}
	t, ok := objectKeyTime(req.ObjectKey)
	if !ok {
		return nil
	}
	if age := c.now().Sub(t); age > c.opts.MaxObjectAge {
		c.log.Warn("commit refused: object too old", "key", req.ObjectKey, "age", age, "max", c.opts.MaxObjectAge, "broker", req.BrokerID)
		return coordapi.Errorf(kerr.RequestTimedOut,
			"object made %s ago, more than the %s a commit may take (a stalled broker, or its clock behind this coordinator's)",
			age.Round(time.Millisecond), c.opts.MaxObjectAge)
	}
	return nil
}
