package broker

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-io/floe/coordapi"
)

// Share sessions (KIP-932): the broker's soft state of a share group
// member's ShareFetches, per (group, member), as Kafka's ShareSessionCache.
// Epoch 0 opens a session (dropping any old one) at epoch 1; epoch n must
// match the session's and moves it to n+1; epoch -1 closes it. A session
// lists the partitions the member fetches: ShareFetch's Topics add to
// them, its ForgottenTopicsData remove them. The records themselves are
// the group coordinator's (ShareAcquire); a session that is closed (epoch
// -1) or whose connection dropped gives back what its member acquired
// through this broker with ShareRelease, off the answer path, as Kafka's
// releaseSession and ClientConnectionDisconnectListener do. A session
// replaced at epoch 0, or a forgotten partition, gives back nothing, as in
// Kafka: the member may hold those records still, and acknowledges them
// later (or their lock expires).

// Share session epochs, as Kafka's ShareRequestMetadata.
const (
	shareInitialEpoch int32 = 0
	shareFinalEpoch   int32 = -1
)

// maxShareMemberID bounds a member id: Kafka's are UUIDs (36 characters),
// longer ones are INVALID_REQUEST.
const maxShareMemberID = 36

// shareReleaseTimeout bounds a ShareRelease made off the answer path.
const shareReleaseTimeout = 10 * time.Second

type shareSessionKey struct{ group, member string }

// topicPartition names one partition of a share session by topic id.
type topicPartition struct {
	id        coordapi.TopicID
	partition int32
}

// shareSession is one member's share session on this broker; the cache's
// mutex guards it.
type shareSession struct {
	key   shareSessionKey
	epoch int32 // the epoch the next request must carry
	parts []topicPartition
	conn  *conn
}

func (s *shareSession) has(tp topicPartition) bool {
	for _, p := range s.parts {
		if p == tp {
			return true
		}
	}
	return false
}

// shareSessions is the broker's share session cache.
type shareSessions struct {
	mu sync.Mutex
	m  map[shareSessionKey]*shareSession
	// releasing are the releases in flight, by member: a member's next
	// acquisition through this broker waits for them, so that a release
	// of an ended session never gives back what a newer one acquired.
	releasing map[shareSessionKey][]chan struct{}
	// evictions counts the sessions closeConn dropped, for
	// floe.kafka.share.session.evictions.
	evictions atomic.Int64
}

// startRelease notes a release of key's records in flight; done ends it.
func (c *shareSessions) startRelease(key shareSessionKey) (done func()) {
	ch := make(chan struct{})
	c.mu.Lock()
	if c.releasing == nil {
		c.releasing = make(map[shareSessionKey][]chan struct{})
	}
	c.releasing[key] = append(c.releasing[key], ch)
	c.mu.Unlock()
	return func() {
		c.mu.Lock()
		rs := c.releasing[key]
		for i, r := range rs {
			if r == ch {
				rs = append(rs[:i:i], rs[i+1:]...)
				break
			}
		}
		if len(rs) == 0 {
			delete(c.releasing, key)
		} else {
			c.releasing[key] = rs
		}
		c.mu.Unlock()
		close(ch)
	}
}

// waitReleases waits for the releases of key's records in flight, or ctx.
func (c *shareSessions) waitReleases(ctx context.Context, key shareSessionKey) {
	c.mu.Lock()
	rs := append([]chan struct{}(nil), c.releasing[key]...)
	c.mu.Unlock()
	for _, r := range rs {
		select {
		case <-r:
		case <-ctx.Done():
			return
		}
	}
}

// nextShareEpoch is the epoch after e: it wraps to 1, never 0 or -1.
func nextShareEpoch(e int32) int32 {
	if e == 1<<31-1 {
		return 1
	}
	return e + 1
}

// shareSessionResult is what a request did to its session.
type shareSessionResult struct {
	code int16
	// parts are the session's partitions after the request; added those
	// it brought; dropped those a closed, replaced or forgetting request
	// left (only a closed session's records go back).
	parts, added, dropped []topicPartition
}

// open starts key's session at epoch 1 with parts, replacing any old one
// (whose partitions are dropped), unless the cache is full.
func (c *shareSessions) open(key shareSessionKey, parts []topicPartition, cn *conn, limit int) shareSessionResult {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = make(map[shareSessionKey]*shareSession)
	}
	var res shareSessionResult
	if old := c.m[key]; old != nil {
		res.dropped = old.parts
		delete(c.m, key)
	}
	if len(c.m) >= limit {
		res.code = kerr.ShareSessionLimitReached.Code
		return res
	}
	s := &shareSession{key: key, epoch: 1, conn: cn}
	for _, p := range parts {
		if !s.has(p) {
			s.parts = append(s.parts, p)
		}
	}
	c.m[key] = s
	res.parts, res.added = s.parts, s.parts
	return res
}

// next checks epoch against key's session and moves it on, adding add and
// removing forget. At shareFinalEpoch the session is closed: its
// partitions are all dropped.
func (c *shareSessions) next(key shareSessionKey, epoch int32, add, forget []topicPartition, cn *conn) shareSessionResult {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.m[key]
	switch {
	case s == nil:
		return shareSessionResult{code: kerr.ShareSessionNotFound.Code}
	case epoch == shareFinalEpoch:
		delete(c.m, key)
		return shareSessionResult{parts: s.parts, dropped: s.parts}
	case s.epoch != epoch:
		return shareSessionResult{code: kerr.InvalidShareSessionEpoch.Code}
	}
	s.epoch = nextShareEpoch(s.epoch)
	s.conn = cn
	var res shareSessionResult
	for _, p := range add {
		if !s.has(p) {
			s.parts = append(s.parts, p)
			res.added = append(res.added, p)
		}
	}
	if len(forget) > 0 {
		kept := s.parts[:0:0]
		for _, p := range s.parts {
			drop := false
			for _, f := range forget {
				if p == f {
					drop = true
					break
				}
			}
			if drop {
				res.dropped = append(res.dropped, p)
			} else {
				kept = append(kept, p)
			}
		}
		s.parts = kept
	}
	res.parts = s.parts
	return res
}

// len is the number of sessions.
func (c *shareSessions) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m)
}

// closeConn drops the sessions last used on cn and returns them.
func (c *shareSessions) closeConn(cn *conn) []*shareSession {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*shareSession
	for k, s := range c.m {
		if s.conn == cn {
			out = append(out, s)
			delete(c.m, k)
		}
	}
	c.evictions.Add(int64(len(out)))
	return out
}

// releaseShares gives back what key's member acquired through this broker
// on parts, off the answer path; the member's next acquisition here waits
// for it (shareSessions.waitReleases). A failed release leaves the records
// to their lock's expiry.
func (b *Broker) releaseShares(key shareSessionKey, parts []topicPartition) {
	if len(parts) == 0 || b.groups == nil {
		return
	}
	req := coordapi.ShareReleaseRequest{Group: key.group, Member: key.member, Via: b.opts.NodeID, Partitions: make([]coordapi.TopicPartition, len(parts))}
	for i, p := range parts {
		req.Partitions[i] = coordapi.TopicPartition{TopicID: p.id, Partition: p.partition}
	}
	done := b.shares.startRelease(key)
	b.shareReleases.Add(1)
	go func() {
		defer b.shareReleases.Done()
		defer done()
		ctx, cancel := context.WithTimeout(context.Background(), shareReleaseTimeout)
		defer cancel()
		if err := b.groups.ShareRelease(ctx, req); err != nil {
			b.log.Warn("release a share session's records; they come back when their lock expires",
				"group", key.group, "member_id", key.member, "err", err)
		}
	}()
}

// shareConnClosed ends the share sessions of a closed connection and gives
// back their records, as Kafka's ClientConnectionDisconnectListener.
func (b *Broker) shareConnClosed(cn *conn) {
	for _, s := range b.shares.closeConn(cn) {
		b.releaseShares(s.key, s.parts)
	}
}

// checkShareIDs validates a share request's group and member ids as Kafka
// does: null or empty ids, or a member id over 36 characters, are
// INVALID_REQUEST.
func checkShareIDs(group, member *string) int16 {
	if group == nil || *group == "" || member == nil || *member == "" || len(*member) > maxShareMemberID {
		return kerr.InvalidRequest.Code
	}
	return 0
}

// shareSessionOf checks what ShareFetch and ShareAcknowledge check first,
// in Kafka's order: the group and member ids, the group coordinator, and
// GROUP READ; it returns the request's session key, or the code to answer
// the whole request with.
func (b *Broker) shareSessionOf(r *request, group, member *string) (shareSessionKey, int16) {
	if code := checkShareIDs(group, member); code != 0 {
		return shareSessionKey{}, code
	}
	if code := b.groupsError(); code != 0 {
		return shareSessionKey{}, code
	}
	key := shareSessionKey{*group, *member}
	if !b.authorized(r, kmsg.ACLOperationRead, kmsg.ACLResourceTypeGroup, key.group) {
		return shareSessionKey{}, kerr.GroupAuthorizationFailed.Code
	}
	return key, 0
}

// splitReadable splits topics into those the request may READ and the
// answers of the others (TOPIC_AUTHORIZATION_FAILED), made by deny: what
// AlterShareGroupOffsets and DeleteShareGroupOffsets ask of each topic.
func splitReadable[T, A any](b *Broker, r *request, topics []T, name func(T) string, deny func(T, int16) A) (allowed []T, denied []A) {
	for _, t := range topics {
		if b.authorizedTopic(r, kmsg.ACLOperationRead, name(t)) {
			allowed = append(allowed, t)
		} else {
			denied = append(denied, deny(t, kerr.TopicAuthorizationFailed.Code))
		}
	}
	return allowed, denied
}
