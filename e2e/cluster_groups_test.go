package e2e

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-io/floe/internal/testkit"
	"github.com/floe-io/floe/internal/testkit/floetest"
)

// TestClusterGroups: consumer groups in a cluster of separate processes
// (MinIO, NATS, a coordinator, three brokers). Group state lives in the
// coordinator, so every broker serves every group: one member's requests
// may go to any broker; when a broker dies the members carry on through
// the others in the same generation, and so they do through a coordinator
// restart (classic and KIP-848 groups); a member that crashes has its
// partitions moved with nothing skipped; committed offsets survive a
// coordinator restart and are served by a broker that joined afterwards.
func TestClusterGroups(t *testing.T) {
	c := floetest.RunCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	var addrs []string
	for _, b := range c.Brokers {
		addrs = append(addrs, b.KafkaAddr)
	}
	waitBrokers(t, addrs[0], []int32{1, 2, 3}, 10*time.Second)

	t.Run("one member through every broker", func(t *testing.T) {
		via := make([]*kgo.Client, 3) // via[i] sends everything to broker i+1
		for i, a := range addrs {
			via[i] = pinnedClient(t, a)
		}
		join := func(cl *kgo.Client, member string) *kmsg.JoinGroupResponse {
			req := kmsg.NewPtrJoinGroupRequest()
			req.Group, req.MemberID, req.ProtocolType = "raw", member, "consumer"
			req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 10_000, 10_000
			req.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{0, 1}}}
			resp, err := req.RequestWith(ctx, cl)
			if err != nil {
				t.Fatal(err)
			}
			return resp
		}
		first := join(via[0], "")
		if first.ErrorCode != kerr.MemberIDRequired.Code {
			t.Fatalf("first join through broker 1: %+v", first)
		}
		joined := join(via[1], first.MemberID)
		if joined.ErrorCode != 0 || joined.LeaderID != first.MemberID || joined.Generation != 1 {
			t.Fatalf("join through broker 2: %+v", joined)
		}
		sync := kmsg.NewPtrSyncGroupRequest()
		sync.Group, sync.MemberID, sync.Generation = "raw", first.MemberID, 1
		sync.GroupAssignment = []kmsg.SyncGroupRequestGroupAssignment{{MemberID: first.MemberID, MemberAssignment: []byte("mine")}}
		if resp, err := sync.RequestWith(ctx, via[2]); err != nil || resp.ErrorCode != 0 || string(resp.MemberAssignment) != "mine" {
			t.Fatalf("sync through broker 3: %+v, %v", resp, err)
		}
		hb := kmsg.NewPtrHeartbeatRequest()
		hb.Group, hb.MemberID, hb.Generation = "raw", first.MemberID, 1
		if resp, err := hb.RequestWith(ctx, via[0]); err != nil || resp.ErrorCode != 0 {
			t.Fatalf("heartbeat through broker 1: %+v, %v", resp, err)
		}
		adm := newAdmin(t, addrs[1])
		if _, err := adm.CreateTopic(ctx, 2, 1, nil, "raw-topic"); err != nil {
			t.Fatal(err)
		}
		commit := kmsg.NewPtrOffsetCommitRequest()
		commit.Group, commit.MemberID, commit.Generation = "raw", first.MemberID, 1
		commit.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "raw-topic", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 1, Offset: 33, LeaderEpoch: -1}}}}
		if resp, err := commit.RequestWith(ctx, via[1]); err != nil || resp.Topics[0].Partitions[0].ErrorCode != 0 {
			t.Fatalf("commit through broker 2: %+v, %v", resp, err)
		}
		fetch := kmsg.NewPtrOffsetFetchRequest()
		fetch.Group = "raw"
		fetch.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: "raw-topic", Partitions: []int32{1}}}
		if resp, err := fetch.RequestWith(ctx, via[2]); err != nil || resp.Topics[0].Partitions[0].Offset != 33 {
			t.Fatalf("fetch through broker 3: %+v, %v", resp, err)
		}
		describe := kmsg.NewPtrDescribeGroupsRequest()
		describe.Groups = []string{"raw"}
		if resp, err := describe.RequestWith(ctx, via[0]); err != nil || resp.Groups[0].State != "Stable" || len(resp.Groups[0].Members) != 1 {
			t.Fatalf("describe through broker 1: %+v, %v", resp, err)
		}
		leave := kmsg.NewPtrLeaveGroupRequest()
		leave.Group = "raw"
		leave.Members = []kmsg.LeaveGroupRequestMember{{MemberID: first.MemberID}}
		if resp, err := leave.RequestWith(ctx, via[2]); err != nil || resp.ErrorCode != 0 {
			t.Fatalf("leave through broker 3: %+v, %v", resp, err)
		}
		if resp, err := describe.RequestWith(ctx, via[1]); err != nil || resp.Groups[0].State != "Empty" {
			t.Fatalf("describe through broker 2 after the leave: %+v, %v", resp, err)
		}
	})

	t.Run("a broker, the coordinator and a member die", func(t *testing.T) {
		w := workload{topic: "cluster-groups", partitions: 12, records: 36_000, baseTime: recentBase()}
		w.createAndProduce(t, newAdmin(t, addrs[0]), addrs...)

		const group = "cluster-group"
		seen := newSeenSet(w.records)
		var members []*groupMember
		for i := range 3 {
			members = append(members, startGroupMember(t, addrs[0], group, w.topic, fmt.Sprintf("m%d", i), seen, kgo.CooperativeStickyBalancer(),
				kgo.SeedBrokers(addrs...)))
		}
		waitConsuming(t, seen, members, w.records/6)
		generation := waitSettled(t, newAdmin(t, addrs[0]), group, false, int(w.partitions), members)

		// A broker dies: the members whose coordinator (or fetches) it
		// was find another broker, and the group goes on.
		c.Brokers[1].Kill()
		survivor := addrs[0]
		t.Logf("killed broker 2 after %d records", seen.count())
		consumed := seen.count()
		waitProgress(t, seen, consumed, 2000, w.records, "when the broker died")

		// The coordinator restarts: the Stable group comes back with its
		// members, who carry on in the same generation.
		consumed = seen.count()
		c.Coord.Kill()
		c.StartCoordinator()
		t.Logf("coordinator restarted after %d records", consumed)
		waitProgress(t, seen, consumed, 2000, w.records, "at the restart")
		for _, m := range members {
			if g := m.generation(); g != generation {
				t.Errorf("%s: generation %d after the broker died and the coordinator restarted, was %d", m.name, g, generation)
			}
		}

		// Then a member crashes: its partitions move once its session
		// expires, and nothing is skipped.
		victim := members[1]
		orphaned := victim.owned()
		killedAt := time.Now()
		victim.crash()
		survivors := []*groupMember{members[0], members[2]}
		testkit.CheckFor(t, groupSession+20*time.Second, 20*time.Millisecond, func() error {
			for _, p := range orphaned {
				if !slices.ContainsFunc(survivors, func(m *groupMember) bool { return slices.Contains(m.owned(), p) }) {
					return fmt.Errorf("partition %d not reassigned %s after the member crashed", p, time.Since(killedAt).Round(time.Millisecond))
				}
			}
			return nil
		})
		t.Logf("crashed member's partitions %v reassigned after %s", orphaned, time.Since(killedAt).Round(time.Millisecond))
		testkit.CheckFor(t, 2*time.Minute, 20*time.Millisecond, func() error {
			if missing := seen.missing(); len(missing) > 0 {
				return fmt.Errorf("%d records never consumed, first %v", len(missing), missing[:min(5, len(missing))])
			}
			return nil
		})
		t.Logf("records delivered more than once: %d", seen.duplicates())

		want := int64(w.records) / int64(w.partitions)
		committedAll := func(adm *kadm.Client) error {
			committed, err := adm.FetchOffsets(ctx, group)
			if err != nil {
				return err
			}
			for p := range w.partitions {
				if o, ok := committed.Lookup(w.topic, p); !ok || o.At != want {
					return fmt.Errorf("partition %d committed %v, want %d", p, o.At, want)
				}
			}
			return nil
		}
		survivorAdm := newAdmin(t, survivor)
		testkit.CheckFor(t, 30*time.Second, 50*time.Millisecond, func() error { return committedAll(survivorAdm) })
		for _, m := range survivors {
			m.stop()
		}

		// The offsets are the coordinator's: they survive another
		// restart, and a broker that was not there when they were
		// committed serves them.
		c.Coord.Kill()
		c.StartCoordinator()
		b4 := c.AddBroker(4)
		b4Adm := kadm.NewClient(pinnedClient(t, b4.KafkaAddr))
		testkit.CheckFor(t, 30*time.Second, 100*time.Millisecond, func() error { return committedAll(b4Adm) })
	})

	t.Run("KIP-848 group through a coordinator restart", func(t *testing.T) {
		var seed string // a broker the previous subtest left alive
		for _, b := range c.Brokers {
			select {
			case <-b.Exited():
			default:
				seed = b.KafkaAddr
			}
		}
		w := workload{topic: "cluster-848", partitions: 12, records: 36_000, baseTime: recentBase()}
		w.createAndProduce(t, newAdmin(t, seed), seed)
		seen := newSeenSet(w.records)
		var members []*groupMember
		for i := range 3 {
			members = append(members, startGroupMember(t, seed, "cluster-848-group", w.topic, fmt.Sprintf("m%d", i), seen,
				kgo.CooperativeStickyBalancer(), kgo.ServerSideBalancer()))
		}
		waitConsuming(t, seen, members, w.records/6)
		rebalances := func() int {
			n := 0
			for _, m := range members {
				n += m.rebalances()
			}
			return n
		}
		waitSettled(t, newAdmin(t, seed), "cluster-848-group", true, int(w.partitions), members)
		settled := rebalances()
		consumed := seen.count()
		c.Coord.Kill()
		c.StartCoordinator()
		t.Logf("coordinator restarted after %d records", consumed)
		waitProgress(t, seen, consumed, 2000, w.records, "at the restart")
		if n := rebalances(); n != settled {
			t.Errorf("KIP-848 members saw %d assignment changes through a coordinator restart", n-settled)
		}
		testkit.CheckFor(t, 2*time.Minute, 20*time.Millisecond, func() error {
			if missing := seen.missing(); len(missing) > 0 {
				return fmt.Errorf("%d records never consumed, first %v", len(missing), missing[:min(5, len(missing))])
			}
			return nil
		})
	})
}

// waitSettled waits until the group has settled: the group coordinator
// holds it Stable with exactly these members (for KIP-848 groups, every
// member at the group epoch), the members agree on one generation (member
// epoch) and together own each of partitions exactly once. It returns the
// generation. Cooperative and KIP-848 reassignments come in steps; a group
// between two steps is not Stable, or leaves partitions unowned.
func waitSettled(t *testing.T, adm *kadm.Client, group string, kip848 bool, partitions int, members []*groupMember) int32 {
	t.Helper()
	var generation int32
	testkit.CheckFor(t, time.Minute, 20*time.Millisecond, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if kip848 {
			described, err := adm.DescribeConsumerGroups(ctx, group)
			if err != nil {
				return err
			}
			g := described[group]
			if g.Err != nil || g.State != "Stable" || len(g.Members) != len(members) {
				return fmt.Errorf("group %s: state %s, %d members, %v", group, g.State, len(g.Members), g.Err)
			}
			for _, m := range g.Members {
				if m.MemberEpoch != g.Epoch {
					return fmt.Errorf("member %s at epoch %d, group at %d", m.MemberID, m.MemberEpoch, g.Epoch)
				}
			}
		} else {
			described, err := adm.DescribeGroups(ctx, group)
			if err != nil {
				return err
			}
			if g := described[group]; g.Err != nil || g.State != "Stable" || len(g.Members) != len(members) {
				return fmt.Errorf("group %s: state %s, %d members, %v", group, g.State, len(g.Members), g.Err)
			}
		}
		generation = members[0].generation()
		owned := map[int32]string{}
		for _, m := range members {
			if g := m.generation(); g != generation {
				return fmt.Errorf("members at generations %d and %d", generation, g)
			}
			for _, p := range m.owned() {
				if other, dup := owned[p]; dup {
					return fmt.Errorf("partition %d owned by %s and %s", p, other, m.name)
				}
				owned[p] = m.name
			}
		}
		if len(owned) != partitions {
			return fmt.Errorf("%d of %d partitions owned", len(owned), partitions)
		}
		return nil
	})
	return generation
}
