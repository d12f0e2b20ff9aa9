package e2e

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-io/floe/internal/testkit"
	"github.com/floe-io/floe/internal/testkit/floetest"
	"github.com/floe-io/floe/node"
)

// groupSession is the session timeout of the consumers in these tests:
// Kafka's group.min.session.timeout.ms, so that a crash is noticed fast.
const groupSession = 6 * time.Second

// TestGroupEagerCrash: three range (eager) consumers share a 12-partition
// topic; one crashes mid-consumption (its connections cut, no LeaveGroup).
// Its partitions move to the others once its session expires, and with
// offsets committed after processing, no record is skipped.
func TestGroupEagerCrash(t *testing.T) {
	testGroupFailover(t, (*groupMember).crash, groupSession+10*time.Second, kgo.RangeBalancer())
}

// TestGroupCooperativeCrash is the same with the cooperative-sticky
// balancer (incremental rebalances).
func TestGroupCooperativeCrash(t *testing.T) {
	testGroupFailover(t, (*groupMember).crash, groupSession+10*time.Second, kgo.CooperativeStickyBalancer())
}

// TestGroupNextGenLeave: the same with KIP-848 consumer groups (the
// coordinator assigns; franz-go's ServerSideBalancer), uniform and range
// assignors; the member leaves (ConsumerGroupHeartbeat epoch -1) mid-way.
// Reassignment takes a few of the coordinator's 5s heartbeat intervals:
// revoke, then assign (a minute allows for a slow machine).
func TestGroupNextGenLeave(t *testing.T) {
	for _, tc := range []struct {
		name     string
		balancer kgo.GroupBalancer
	}{{"uniform", kgo.CooperativeStickyBalancer()}, {"range", kgo.RangeBalancer()}} {
		t.Run(tc.name, func(t *testing.T) {
			testGroupFailover(t, (*groupMember).stop, time.Minute, tc.balancer, kgo.ServerSideBalancer())
		})
	}
}

// testGroupFailover runs three members, takes one away with kill, and
// checks that its partitions move within the given time and no record is
// skipped.
func testGroupFailover(t *testing.T, kill func(*groupMember), within time.Duration, balancer kgo.GroupBalancer, opts ...kgo.Opt) {
	n := floetest.StartNode(t, node.Config{})
	seeds := n.KafkaAddr()
	adm := newAdmin(t, seeds)
	w := workload{topic: "groups", partitions: 12, records: 24_000, baseTime: recentBase()}
	w.createAndProduce(t, adm, seeds)

	seen := newSeenSet(w.records)
	var members []*groupMember
	for i := range 3 {
		members = append(members, startGroupMember(t, seeds, "crash-group", w.topic, fmt.Sprintf("m%d", i), seen, balancer, opts...))
	}
	// Consume a while, so that the victim has processed and committed.
	waitConsuming(t, seen, members, w.records/6)
	victim := members[1]
	orphaned := victim.owned()
	killedAt := time.Now()
	kill(victim)
	t.Logf("took %s away owning partitions %v after %d records", victim.name, orphaned, seen.count())
	if seen.count() == w.records {
		t.Log("everything was consumed before the crash: the test only checks the reassignment")
	}

	// Within the session timeout (plus the rebalance) the survivors own
	// the victim's partitions.
	survivors := []*groupMember{members[0], members[2]}
	testkit.CheckFor(t, within, 20*time.Millisecond, func() error {
		for _, p := range orphaned {
			if !slices.ContainsFunc(survivors, func(m *groupMember) bool { return slices.Contains(m.owned(), p) }) {
				return fmt.Errorf("partition %d not reassigned %s after the member went away", p, time.Since(killedAt).Round(time.Millisecond))
			}
		}
		return nil
	})
	t.Logf("partitions reassigned %s after the member went away", time.Since(killedAt).Round(time.Millisecond))

	testkit.CheckFor(t, 2*time.Minute, 20*time.Millisecond, func() error {
		if missing := seen.missing(); len(missing) > 0 {
			return fmt.Errorf("%d records never consumed, first %v", len(missing), missing[:min(5, len(missing))])
		}
		return nil
	})
	// The survivors' last commits reach the end of every partition.
	testkit.CheckFor(t, 30*time.Second, 50*time.Millisecond, func() error {
		committed, err := adm.FetchOffsets(context.Background(), "crash-group")
		if err != nil {
			return err
		}
		for p := range w.partitions {
			o, ok := committed.Lookup(w.topic, p)
			want := int64(w.records) / int64(w.partitions)
			if !ok || o.At != want {
				return fmt.Errorf("partition %d committed %v, want %d", p, o.At, want)
			}
		}
		return nil
	})
	t.Logf("records delivered more than once (at-least-once): %d", seen.duplicates())
	for _, m := range survivors {
		m.stop()
	}
	// Both left the group: it is Empty, its offsets kept.
	described, err := adm.DescribeGroups(context.Background(), "crash-group")
	if err != nil {
		t.Fatal(err)
	}
	if g := described["crash-group"]; g.State != "Empty" || len(g.Members) != 0 {
		t.Fatalf("group after the survivors left: state %s, %d members", g.State, len(g.Members))
	}
}

// TestGroupStaticMemberRestart: a static member (group.instance.id) of a
// classic group that restarts within its session timeout gets its
// partitions back (its Close sends no LeaveGroup; its new member id
// replaces the old one), and the other members see no rebalance.
//
// (No KIP-848 variant: franz-go v1.22.3 sends its static leave, epoch -2,
// without the instance id, which Kafka answers INVALID_REQUEST, and so
// does floe; the coordinator's unit tests cover the -2 leave and takeover.)
func TestGroupStaticMemberRestart(t *testing.T) {
	testStaticMemberRestart(t)
}

func testStaticMemberRestart(t *testing.T, extra ...kgo.Opt) {
	n := floetest.StartNode(t, node.Config{})
	seeds := n.KafkaAddr()
	adm := newAdmin(t, seeds)
	if _, err := adm.CreateTopic(context.Background(), 12, 1, nil, "static"); err != nil {
		t.Fatal(err)
	}
	seen := newSeenSet(0)
	var members []*groupMember
	for i := range 3 {
		members = append(members, startGroupMember(t, seeds, "static-group", "static", fmt.Sprintf("m%d", i), seen, kgo.RangeBalancer(),
			append([]kgo.Opt{kgo.InstanceID(fmt.Sprintf("instance-%d", i)), kgo.SessionTimeout(30 * time.Second)}, extra...)...))
	}
	generation := waitSettled(t, adm, "static-group", false, 12, members)
	before := make([]int, len(members))
	for i, m := range members {
		before[i] = m.rebalances()
	}
	restarting := members[1]
	owned := restarting.owned()
	restarting.stop() // a static member's Close sends no LeaveGroup
	again := startGroupMember(t, seeds, "static-group", "static", "m1-restarted", seen, kgo.RangeBalancer(),
		append([]kgo.Opt{kgo.InstanceID("instance-1"), kgo.SessionTimeout(30 * time.Second)}, extra...)...)
	testkit.CheckFor(t, 20*time.Second, 10*time.Millisecond, func() error {
		if got := again.owned(); !slices.Equal(got, owned) {
			return fmt.Errorf("restarted member owns %v, want %v", got, owned)
		}
		return nil
	})
	// The coordinator took the static member back without a rebalance: the
	// other members are still in the group at their generation, which a
	// heartbeat confirms (a rebalance would answer REBALANCE_IN_PROGRESS,
	// or ILLEGAL_GENERATION once past it).
	for _, i := range []int{0, 2} {
		memberID, g := members[i].cl.GroupMetadata()
		hb := kmsg.NewPtrHeartbeatRequest()
		hb.Group, hb.MemberID, hb.Generation = "static-group", memberID, g
		hb.InstanceID = kmsg.StringPtr(fmt.Sprintf("instance-%d", i))
		resp, err := hb.RequestWith(context.Background(), pinnedClient(t, seeds))
		if err != nil {
			t.Fatal(err)
		}
		if resp.ErrorCode != 0 || g != generation {
			t.Errorf("%s after the static restart: generation %d (was %d), heartbeat %v", members[i].name, g, generation, kerr.ErrorForCode(resp.ErrorCode))
		}
	}
	for _, i := range []int{0, 2} {
		if got := members[i].rebalances(); got != before[i] {
			t.Errorf("%s went through %d rebalances when the static member restarted", members[i].name, got-before[i])
		}
	}
}

// createAndProduce creates w's topic with adm and produces w through
// seeds, each record to its partition.
func (w workload) createAndProduce(t *testing.T, adm *kadm.Client, seeds ...string) {
	t.Helper()
	if _, err := adm.CreateTopic(context.Background(), w.partitions, 1, nil, w.topic); err != nil {
		t.Fatal(err)
	}
	prod, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	w.produce(t, prod)
}

// waitProgress waits until the members consumed n more records than the
// from they had consumed when something happened (what), or all of them.
func waitProgress(t *testing.T, seen *seenSet, from, n, total int, what string) {
	t.Helper()
	testkit.CheckFor(t, 30*time.Second, 50*time.Millisecond, func() error {
		if got := seen.count(); got < min(from+n, total) {
			return fmt.Errorf("%d records consumed, %d %s", got, from, what)
		}
		return nil
	})
}

// waitConsuming waits until n records were consumed and every member owns
// partitions: the members have processed and committed for a while.
func waitConsuming(t *testing.T, seen *seenSet, members []*groupMember, n int) {
	t.Helper()
	testkit.CheckFor(t, time.Minute, 10*time.Millisecond, func() error {
		if got := seen.count(); got < n {
			return fmt.Errorf("%d records consumed, waiting for %d", got, n)
		}
		for _, m := range members {
			if len(m.owned()) == 0 {
				return fmt.Errorf("%s owns no partitions yet", m.name)
			}
		}
		return nil
	})
}

// seenSet records which workload records were consumed.
type seenSet struct {
	mu     sync.Mutex
	counts []int
}

func newSeenSet(n int) *seenSet { return &seenSet{counts: make([]int, n)} }

func (s *seenSet) add(i int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if i < len(s.counts) {
		s.counts[i]++
	}
}

func (s *seenSet) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, c := range s.counts {
		if c > 0 {
			n++
		}
	}
	return n
}

func (s *seenSet) missing() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []int
	for i, c := range s.counts {
		if c == 0 {
			out = append(out, i)
		}
	}
	return out
}

func (s *seenSet) duplicates() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, c := range s.counts {
		n += max(c-1, 0)
	}
	return n
}

// groupMember is a franz-go group consumer that commits after processing.
type groupMember struct {
	t      *testing.T
	name   string
	cl     *kgo.Client
	cancel context.CancelFunc
	done   chan struct{}
	dialer *killableDialer

	mu struct {
		sync.Mutex
		owned      map[int32]bool
		rebalances int
	}
}

func startGroupMember(t *testing.T, seeds, group, topic, name string, seen *seenSet, balancer kgo.GroupBalancer, opts ...kgo.Opt) *groupMember {
	t.Helper()
	m := &groupMember{t: t, name: name, done: make(chan struct{}), dialer: &killableDialer{}}
	m.mu.owned = make(map[int32]bool)
	ctx, cancel := context.WithCancel(context.Background())
	m.cancel = cancel
	opts = append([]kgo.Opt{
		kgo.SeedBrokers(seeds),
		kgo.WithContext(ctx),
		kgo.Dialer(m.dialer.DialContext),
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(topic),
		kgo.Balancers(balancer),
		kgo.SessionTimeout(groupSession),
		kgo.HeartbeatInterval(500 * time.Millisecond),
		kgo.RebalanceTimeout(20 * time.Second),
		kgo.DisableAutoCommit(),
		kgo.BlockRebalanceOnPoll(),
		kgo.FetchMaxWait(200 * time.Millisecond),
		kgo.FetchMaxBytes(64 << 10),
		kgo.FetchMaxPartitionBytes(8 << 10),
		kgo.ClientID(name),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, a map[string][]int32) {
			m.mu.Lock()
			defer m.mu.Unlock()
			m.mu.rebalances++
			for _, p := range a[topic] {
				m.mu.owned[p] = true
			}
		}),
		kgo.OnPartitionsRevoked(func(ctx context.Context, cl *kgo.Client, r map[string][]int32) {
			m.mu.Lock()
			m.mu.rebalances++
			for _, p := range r[topic] {
				delete(m.mu.owned, p)
			}
			m.mu.Unlock()
		}),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, l map[string][]int32) {
			m.mu.Lock()
			defer m.mu.Unlock()
			for _, p := range l[topic] {
				delete(m.mu.owned, p)
			}
		}),
	}, opts...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	m.cl = cl
	go m.consume(ctx, seen)
	t.Cleanup(m.stop)
	return m
}

func (m *groupMember) consume(ctx context.Context, seen *seenSet) {
	defer close(m.done)
	// BlockRebalanceOnPoll: a poll not followed by AllowRebalance would
	// keep Close from leaving.
	defer m.cl.AllowRebalance()
	for {
		fs := m.cl.PollFetches(ctx)
		if ctx.Err() != nil || fs.IsClientClosed() {
			return
		}
		var recs []*kgo.Record
		fs.EachRecord(func(r *kgo.Record) {
			for _, h := range r.Headers {
				if h.Key == "idx" {
					seen.add(int(binary.BigEndian.Uint64(h.Value)))
				}
			}
			recs = append(recs, r)
		})
		if len(recs) > 0 {
			time.Sleep(time.Duration(len(recs)) * time.Millisecond) // processing
			if err := m.cl.CommitRecords(ctx, recs...); err != nil && ctx.Err() == nil {
				m.t.Logf("%s: commit: %v (the records are delivered again)", m.name, err)
			}
		}
		m.cl.AllowRebalance()
	}
}

// owned returns the partitions the member owns, sorted.
func (m *groupMember) owned() []int32 {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []int32
	for p := range m.mu.owned {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

// generation is the member's group generation (classic) or member epoch
// (KIP-848).
func (m *groupMember) generation() int32 {
	_, g := m.cl.GroupMetadata()
	return g
}

func (m *groupMember) rebalances() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.mu.rebalances
}

// crash cuts the member's connections and stops it without a LeaveGroup:
// the coordinator only learns of it when its session expires.
func (m *groupMember) crash() {
	m.dialer.kill()
	m.cancel()
	<-m.done
	m.cl.Close()
}

// stop closes the member: a dynamic member leaves the group, a static one
// (InstanceID) does not.
func (m *groupMember) stop() {
	select {
	case <-m.done:
		return
	default:
	}
	m.cl.Close()
	m.cancel()
	<-m.done
}

// killableDialer dials normally until killed; then it closes every
// connection it made and refuses new ones.
type killableDialer struct {
	mu    sync.Mutex
	dead  bool
	conns []net.Conn
}

func (d *killableDialer) DialContext(ctx context.Context, network, host string) (net.Conn, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.dead {
		return nil, errors.New("killed")
	}
	c, err := (&net.Dialer{Timeout: 5 * time.Second}).DialContext(ctx, network, host)
	if err == nil {
		d.conns = append(d.conns, c)
	}
	return c, err
}

func (d *killableDialer) kill() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.dead = true
	for _, c := range d.conns {
		c.Close()
	}
}
