package groups

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-io/floe/coordapi"
)

func (h *harness) describeShareOffsets(group string, topics map[string][]int32) kmsg.DescribeShareGroupOffsetsResponseGroup {
	h.t.Helper()
	req := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
	req.Version = 1
	rg := kmsg.NewDescribeShareGroupOffsetsRequestGroup()
	rg.GroupID = group
	for name, ps := range topics {
		rt := kmsg.NewDescribeShareGroupOffsetsRequestGroupTopic()
		rt.Topic, rt.Partitions = name, ps
		rg.Topics = append(rg.Topics, rt)
	}
	req.Groups = append(req.Groups, rg)
	resp := h.gs.DescribeShareGroupOffsets(context.Background(), req)
	if len(resp.Groups) != 1 {
		h.t.Fatalf("describe answered %d groups", len(resp.Groups))
	}
	return resp.Groups[0]
}

// offsetsOf is a describe answer's (start, epoch, lag, error) by partition
// of one topic.
type shareOffset struct {
	start int64
	epoch int32
	lag   int64
	code  int16
}

func offsetsOf(g kmsg.DescribeShareGroupOffsetsResponseGroup, topic string) map[int32]shareOffset {
	out := map[int32]shareOffset{}
	for _, t := range g.Topics {
		if t.Topic != topic {
			continue
		}
		for _, p := range t.Partitions {
			out[p.Partition] = shareOffset{p.StartOffset, p.LeaderEpoch, p.Lag, p.ErrorCode}
		}
	}
	return out
}

func (h *harness) alterShareOffsets(group, topic string, offsets map[int32]int64) *kmsg.AlterShareGroupOffsetsResponse {
	req := kmsg.NewPtrAlterShareGroupOffsetsRequest()
	req.GroupID = group
	rt := kmsg.NewAlterShareGroupOffsetsRequestTopic()
	rt.Topic = topic
	for p, o := range offsets {
		rp := kmsg.NewAlterShareGroupOffsetsRequestTopicPartition()
		rp.Partition, rp.StartOffset = p, o
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	return h.gs.AlterShareGroupOffsets(context.Background(), req)
}

func (h *harness) deleteShareOffsets(group string, topics ...string) *kmsg.DeleteShareGroupOffsetsResponse {
	req := kmsg.NewPtrDeleteShareGroupOffsetsRequest()
	req.GroupID = group
	for _, name := range topics {
		rt := kmsg.NewDeleteShareGroupOffsetsRequestTopic()
		rt.Topic = name
		req.Topics = append(req.Topics, rt)
	}
	return h.gs.DeleteShareGroupOffsets(context.Background(), req)
}

// TestShareOffsetsAdmin runs a share group through the offsets admin APIs:
// describe with lag (KIP-1226) and -1s where there is no state, alter and
// delete refused while a member is in and accepted once Empty, the state
// kept across a restart, and a deleted topic's partitions started anew by
// the next assignment.
func TestShareOffsetsAdmin(t *testing.T) {
	h, st, tid := shareFetchHarness(t) // g: m1, m2 on t (1 partition, 10 records)
	other := st.set("u", 2)
	st.setOffsets(other, 0, 4)
	h.gs.dropTopics() // as the coordinator's topic notices do

	// m1 acquires 0-5 and accepts 0-2: SPSO 3, lag 10 - 3 - 0 = 7.
	h.acquire(acquireReq("m1", 1, tid, 6, coordapi.ShareAcquireRecordLimit))
	h.acquire(acquireReq("m1", 1, tid, 0, 0, ackOf(0, 2, 1)))

	d := h.describeShareOffsets("g", nil)
	if d.ErrorCode != 0 || len(d.Topics) != 1 || d.Topics[0].TopicID != tid {
		t.Fatalf("describe all: %+v", d)
	}
	if got, want := offsetsOf(d, "t")[0], (shareOffset{3, 0, 7, 0}); got != want {
		t.Fatalf("describe all: t-0 = %+v, want %+v", got, want)
	}
	d = h.describeShareOffsets("g", map[string][]int32{"t": {0, 1}, "u": {0}, "nope": {0}})
	if got := offsetsOf(d, "t"); got[0] != (shareOffset{3, 0, 7, 0}) || got[1] != (shareOffset{-1, -1, -1, 0}) {
		t.Fatalf("describe t: %+v", got)
	}
	if got := offsetsOf(d, "u")[0]; got != (shareOffset{-1, -1, -1, 0}) {
		t.Fatalf("describe u (no state): %+v", got)
	}
	if got := offsetsOf(d, "nope")[0]; got.code != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("describe unknown topic: %+v", got)
	}
	if d := h.describeShareOffsets("unknown", map[string][]int32{"t": {0}}); d.ErrorCode != 0 || offsetsOf(d, "t")[0] != (shareOffset{-1, -1, -1, 0}) {
		t.Fatalf("describe unknown group: %+v", d)
	}
	if d := h.describeShareOffsets("", nil); d.ErrorCode != kerr.InvalidGroupID.Code {
		t.Fatalf("describe empty group id: %+v", d)
	}

	// Alter and delete while members are in.
	wantCode(t, "alter with members", h.alterShareOffsets("g", "t", map[int32]int64{0: 8}).ErrorCode, kerr.NonEmptyGroup)
	wantCode(t, "delete with members", h.deleteShareOffsets("g", "t").ErrorCode, kerr.NonEmptyGroup)
	h.shareHeartbeat(shareHB("g", "m1", -1))
	h.shareHeartbeat(shareHB("g", "m2", -1))

	epoch := h.sharePart("g", tid, 0).StateEpoch()
	for _, c := range []struct {
		name    string
		group   string
		topic   string
		offsets map[int32]int64
		top     *kerr.Error
		part    *kerr.Error
	}{
		{"unknown topic", "g", "nope", map[int32]int64{0: 1}, nil, kerr.UnknownTopicOrPartition},
		{"partition past the count", "g", "t", map[int32]int64{1: 1}, nil, kerr.UnknownTopicOrPartition},
		{"negative offset", "g", "t", map[int32]int64{0: -1}, nil, kerr.InvalidRequest},
		{"empty group id", "", "t", map[int32]int64{0: 1}, kerr.InvalidGroupID, kerr.InvalidGroupID},
		{"set", "g", "t", map[int32]int64{0: 8}, nil, nil},
		{"new group", "fresh", "u", map[int32]int64{0: 2, 1: 3}, nil, nil},
	} {
		resp := h.alterShareOffsets(c.group, c.topic, c.offsets)
		wantCode(t, c.name+": group", resp.ErrorCode, c.top)
		for _, p := range resp.Topics[0].Partitions {
			wantCode(t, c.name+": partition", p.ErrorCode, c.part)
		}
	}
	if p := h.sharePart("g", tid, 0); p.Start() != 8 || len(p.Ranges()) != 0 || p.StateEpoch() != epoch+1 {
		t.Fatalf("after alter: start %d ranges %v epoch %d (was %d)", p.Start(), p.Ranges(), p.StateEpoch(), epoch)
	}
	if got := offsetsOf(h.describeShareOffsets("fresh", nil), "u"); got[0] != (shareOffset{2, 0, 2, 0}) || got[1] != (shareOffset{3, 0, 1, 0}) {
		t.Fatalf("group made by alter: %+v", got)
	}
	if d := h.describeShareOffsets("nothing-made", nil); len(d.Topics) != 0 {
		t.Fatalf("a failed alter made a group: %+v", d)
	}
	h.alterShareOffsets("nothing-made", "nope", map[int32]int64{0: 1})
	if h.shareDescribe("nothing-made").ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatal("an alter of only unknown topics kept a group")
	}

	h.restart()
	if got := offsetsOf(h.describeShareOffsets("g", nil), "t")[0]; got != (shareOffset{8, 0, 2, 0}) {
		t.Fatalf("after restart: %+v", got)
	}

	// Delete: per topic; the group's other state stays.
	wantCode(t, "delete unknown group", h.deleteShareOffsets("none", "t").ErrorCode, kerr.GroupIDNotFound)
	resp := h.deleteShareOffsets("g", "t", "u", "nope")
	wantCode(t, "delete", resp.ErrorCode, nil)
	wantCode(t, "delete t", resp.Topics[0].ErrorCode, nil)
	wantCode(t, "delete u (no state)", resp.Topics[1].ErrorCode, kerr.UnknownTopicOrPartition)
	wantCode(t, "delete nope", resp.Topics[2].ErrorCode, kerr.UnknownTopicOrPartition)
	if d := h.describeShareOffsets("g", nil); len(d.Topics) != 0 {
		t.Fatalf("after delete: %+v", d)
	}
	h.restart()
	if h.sharePart("g", tid, 0) != nil {
		t.Fatal("deleted share-partition back after a restart")
	}
	// The next assignment starts it again by share.auto.offset.reset.
	st.setOffsets(tid, 4, 10)
	h.shareJoin("g", "m3", "t")
	if p := h.sharePart("g", tid, 0); p == nil || p.Start() != 4 {
		t.Fatalf("share-partition after delete and a join: %v", p)
	}
}

// TestShareOffsetsLagReadCommitted: under read_committed the lag counts to
// the last stable offset.
func TestShareOffsetsLagReadCommitted(t *testing.T) {
	h, st := newShareHarness(t)
	tid := st.set("t", 1)
	st.mu.Lock()
	st.states[coordapi.TopicID(tid)] = coordapi.PartitionState{HighWatermark: 10, LastStableOffset: 6}
	st.mu.Unlock()
	wantCode(t, "alter", h.alterShareOffsets("g", "t", map[int32]int64{0: 2}).Topics[0].Partitions[0].ErrorCode, nil)
	for _, c := range []struct {
		level string
		lag   int64
	}{{"read_uncommitted", 8}, {"read_committed", 4}} {
		if code, msg := h.alterGroupConfig("g", cfgShareIsolationLevel, c.level); code != 0 {
			t.Fatalf("%s: %s %s", c.level, errName(code), msg)
		}
		if got := offsetsOf(h.describeShareOffsets("g", nil), "t")[0].lag; got != c.lag {
			t.Errorf("%s: lag %d, want %d", c.level, got, c.lag)
		}
	}
}
