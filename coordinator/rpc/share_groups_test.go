package rpc_test

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-io/floe/coordapi"
)

// TestShareGroupsOverNATS: a share group whose two members heartbeat
// through different brokers' clients, described through a third; the
// group configs altered and described over NATS. Every op travels at the
// client's Kafka version and comes back decoded at it.
func TestShareGroupsOverNATS(t *testing.T) {
	e := newGroupsEnv(t)
	ctx := context.Background()
	tp, err := e.coord.CreateTopic(ctx, coordapi.CreateTopicRequest{Name: "t", Partitions: 2, ReplicationFactor: -1})
	if err != nil {
		t.Fatal(err)
	}

	// share.auto.offset.reset=earliest, through a broker's client.
	alter := kmsg.NewPtrIncrementalAlterConfigsRequest()
	alter.Version = 1
	r := kmsg.NewIncrementalAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeGroupConfig, "sg"
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name, c.Value = "share.auto.offset.reset", kmsg.StringPtr("earliest")
	r.Configs = append(r.Configs, c)
	alter.Resources = append(alter.Resources, r)
	ar, err := e.a.AlterGroupConfigs(ctx, alter)
	if err != nil || len(ar.Resources) != 1 || ar.Resources[0].ErrorCode != 0 {
		t.Fatalf("alter group configs: %v %+v", err, ar)
	}
	describe := kmsg.NewPtrDescribeConfigsRequest()
	describe.Version = 4
	dr := kmsg.NewDescribeConfigsRequestResource()
	dr.ResourceType, dr.ResourceName, dr.ConfigNames = kmsg.ConfigResourceTypeGroupConfig, "sg", []string{"share.auto.offset.reset"}
	describe.Resources = append(describe.Resources, dr)
	dresp, err := e.b.DescribeGroupConfigs(ctx, describe)
	if err != nil || len(dresp.Resources) != 1 || len(dresp.Resources[0].Configs) != 1 {
		t.Fatalf("describe group configs: %v %+v", err, dresp)
	}
	if cfg := dresp.Resources[0].Configs[0]; *cfg.Value != "earliest" || cfg.Source != kmsg.ConfigSourceGroupConfig {
		t.Fatalf("described %+v", cfg)
	}

	hb := func(member string, epoch int32) *kmsg.ShareGroupHeartbeatRequest {
		req := kmsg.NewPtrShareGroupHeartbeatRequest()
		req.Version, req.GroupID, req.MemberID, req.MemberEpoch = 1, "sg", member, epoch
		if epoch == 0 {
			req.SubscribedTopicNames = []string{"t"}
		}
		return req
	}
	r1, err := e.a.ShareGroupHeartbeat(ctx, coordapi.ClientInfo{ID: "c1", Host: "/10.0.0.1"}, hb("m1", 0))
	if err != nil || r1.ErrorCode != 0 || r1.MemberEpoch != 1 || r1.Assignment == nil || len(r1.Assignment.TopicPartitions[0].Partitions) != 2 {
		t.Fatalf("m1 joins: %v %+v", err, r1)
	}
	r2, err := e.b.ShareGroupHeartbeat(ctx, coordapi.ClientInfo{ID: "c2", Host: "/10.0.0.2"}, hb("m2", 0))
	if err != nil || r2.ErrorCode != 0 || r2.MemberEpoch != 2 || len(r2.Assignment.TopicPartitions[0].Partitions) != 1 {
		t.Fatalf("m2 joins: %v %+v", err, r2)
	}
	r1, err = e.b.ShareGroupHeartbeat(ctx, coordapi.ClientInfo{ID: "c1", Host: "/10.0.0.1"}, hb("m1", 1))
	if err != nil || r1.MemberEpoch != 2 || r1.Assignment == nil || len(r1.Assignment.TopicPartitions[0].Partitions) != 1 {
		t.Fatalf("m1 through the other broker: %v %+v", err, r1)
	}

	sd := kmsg.NewPtrShareGroupDescribeRequest()
	sd.Version, sd.GroupIDs = 1, []string{"sg", "missing"}
	d, err := e.client.Groups().ShareGroupDescribe(ctx, sd)
	if err != nil || len(d.Groups) != 2 {
		t.Fatalf("describe: %v %+v", err, d)
	}
	g := d.Groups[0]
	if g.ErrorCode != 0 || g.GroupState != "Stable" || g.GroupEpoch != 2 || g.Assignor != "simple" || len(g.Members) != 2 {
		t.Fatalf("described %+v", g)
	}
	for _, m := range g.Members {
		want := map[string]string{"m1": "c1", "m2": "c2"}[m.MemberID]
		at := m.Assignment.TopicPartitions
		if m.ClientID != want || len(at) != 1 || at[0].Topic != "t" || at[0].TopicID != tp.ID || len(at[0].Partitions) != 1 {
			t.Fatalf("member %+v", m)
		}
	}
	if d.Groups[1].ErrorCode == 0 {
		t.Fatalf("missing group described: %+v", d.Groups[1])
	}

	leave, err := e.a.ShareGroupHeartbeat(ctx, coordapi.ClientInfo{}, hb("m2", -1))
	if err != nil || leave.ErrorCode != 0 || leave.MemberEpoch != -1 {
		t.Fatalf("m2 leaves: %v %+v", err, leave)
	}
	lg := kmsg.NewPtrListGroupsRequest()
	lg.Version, lg.TypesFilter = 5, []string{"share"}
	l, err := e.b.ListGroups(ctx, lg)
	if err != nil || len(l.Groups) != 1 || l.Groups[0].GroupType != "share" {
		t.Fatalf("list share groups: %v %+v", err, l)
	}
}

// TestShareAcquireOverNATS: records committed to a share group's partition
// are acquired through one broker's client with their batch coordinates,
// acknowledged through another's (acks follow the member, not the
// broker), released by broker, and a held acquire is woken by a commit.
func TestShareAcquireOverNATS(t *testing.T) {
	e := newGroupsEnv(t)
	ctx := context.Background()
	tp, err := e.coord.CreateTopic(ctx, coordapi.CreateTopicRequest{Name: "t", Partitions: 1, ReplicationFactor: -1})
	if err != nil {
		t.Fatal(err)
	}
	commit := func(key string, records int32) {
		t.Helper()
		if _, err := e.coord.CommitObject(ctx, &coordapi.CommitRequest{ObjectKey: key, ObjectSize: 100, BrokerID: 1, Batches: []coordapi.CommitBatch{
			{TopicID: tp.ID, ByteLength: 100, LastOffsetDelta: records - 1, MaxTimestamp: 10, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1},
		}}); err != nil {
			t.Fatal(err)
		}
	}
	commit("wal/1", 5)
	hb := kmsg.NewPtrShareGroupHeartbeatRequest()
	hb.Version, hb.GroupID, hb.MemberID, hb.SubscribedTopicNames = 1, "sg", "m1", []string{"t"}
	if r, err := e.a.ShareGroupHeartbeat(ctx, coordapi.ClientInfo{}, hb); err != nil || r.ErrorCode != 0 {
		t.Fatalf("join: %v %+v", err, r)
	}
	// latest: the share-partition starts at 5.
	commit("wal/2", 3)
	req := coordapi.ShareAcquireRequest{Group: "sg", Member: "m1", Via: 1, MaxRecords: 100, MaxBytes: 1 << 20,
		Partitions: []coordapi.ShareAcquirePartition{{Topic: tp.ID, Fetch: true}}}
	resp, err := e.a.ShareAcquire(ctx, req)
	if err != nil || resp.LockDurationMs != 30000 || len(resp.Partitions) != 1 {
		t.Fatalf("acquire: %v %+v", err, resp)
	}
	p := resp.Partitions[0]
	if len(p.Acquired) != 1 || p.Acquired[0] != (coordapi.ShareAcquiredRecords{First: 5, Last: 7, DeliveryCount: 1}) ||
		len(p.Batches) != 1 || p.Batches[0].ObjectKey != "wal/2" || p.HighWatermark != 8 {
		t.Fatalf("acquired %+v", p)
	}
	// Accept 5 through the other broker's client; release the rest by
	// broker 1.
	ack := coordapi.ShareAcquireRequest{Group: "sg", Member: "m1", Via: 2,
		Partitions: []coordapi.ShareAcquirePartition{{Topic: tp.ID, Acks: []coordapi.ShareAckBatch{{First: 5, Last: 5, Types: []int8{1}}}}}}
	if r, err := e.b.ShareAcquire(ctx, ack); err != nil || r.Partitions[0].AckErrorCode != 0 {
		t.Fatalf("ack: %v %+v", err, r)
	}
	other := ack
	other.Member, other.Partitions = "m2", []coordapi.ShareAcquirePartition{{Topic: tp.ID, Acks: []coordapi.ShareAckBatch{{First: 6, Last: 6, Types: []int8{1}}}}}
	if r, err := e.b.ShareAcquire(ctx, other); err != nil || r.Partitions[0].AckErrorCode != kerr.InvalidRecordState.Code {
		t.Fatalf("another member's ack: %v %+v", err, r)
	}
	if err := e.b.ShareRelease(ctx, coordapi.ShareReleaseRequest{Group: "sg", Member: "m1", Via: 1}); err != nil {
		t.Fatal(err)
	}
	resp, err = e.a.ShareAcquire(ctx, req)
	if err != nil || len(resp.Partitions[0].Acquired) != 1 || resp.Partitions[0].Acquired[0] != (coordapi.ShareAcquiredRecords{First: 6, Last: 7, DeliveryCount: 2}) {
		t.Fatalf("after the release: %v %+v", err, resp)
	}
	// Nothing left: a held acquire, woken by the next commit.
	held := req
	held.MaxWaitMs = 20_000
	done := make(chan coordapi.ShareAcquireResponse, 1)
	go func() {
		r, err := e.b.ShareAcquire(ctx, held)
		if err != nil {
			t.Error(err)
		}
		done <- r
	}()
	// The commit may come before the acquire is held: it then acquires at
	// once. Either way it answers 8-9 well before its max wait.
	commit("wal/3", 2)
	if r := <-done; len(r.Partitions) != 1 || len(r.Partitions[0].Acquired) != 1 || r.Partitions[0].Acquired[0].First != 8 {
		t.Fatalf("held acquire: %+v", r)
	}
}

// TestShareOffsetsOverNATS: the share-group offsets admin ops travel at
// their Kafka versions: an alter through one broker's client creates the
// group's state, a describe through another reads it back with its lag,
// and a delete drops it.
func TestShareOffsetsOverNATS(t *testing.T) {
	e := newGroupsEnv(t)
	ctx := context.Background()
	tp, err := e.coord.CreateTopic(ctx, coordapi.CreateTopicRequest{Name: "t", Partitions: 1, ReplicationFactor: -1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.coord.CommitObject(ctx, &coordapi.CommitRequest{ObjectKey: "wal/1", ObjectSize: 100, BrokerID: 1, Batches: []coordapi.CommitBatch{
		{TopicID: tp.ID, ByteLength: 100, LastOffsetDelta: 9, MaxTimestamp: 10, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1},
	}}); err != nil {
		t.Fatal(err)
	}
	alter := kmsg.NewPtrAlterShareGroupOffsetsRequest()
	alter.GroupID = "sg"
	alter.Topics = []kmsg.AlterShareGroupOffsetsRequestTopic{{Topic: "t", Partitions: []kmsg.AlterShareGroupOffsetsRequestTopicPartition{{Partition: 0, StartOffset: 4}}}}
	ar, err := e.a.AlterShareGroupOffsets(ctx, alter)
	if err != nil || ar.ErrorCode != 0 || len(ar.Topics) != 1 || ar.Topics[0].TopicID != tp.ID || ar.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("alter: %v %+v", err, ar)
	}
	for _, v := range []int16{0, 1} {
		describe := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
		describe.Version = v
		describe.Groups = []kmsg.DescribeShareGroupOffsetsRequestGroup{{GroupID: "sg"}}
		dr, err := e.b.DescribeShareGroupOffsets(ctx, describe)
		if err != nil || len(dr.Groups) != 1 || len(dr.Groups[0].Topics) != 1 || len(dr.Groups[0].Topics[0].Partitions) != 1 {
			t.Fatalf("describe v%d: %v %+v", v, err, dr)
		}
		wantLag := map[int16]int64{0: -1, 1: 6}[v] // v0 carries no lag
		if p := dr.Groups[0].Topics[0].Partitions[0]; p.StartOffset != 4 || p.LeaderEpoch != 0 || p.Lag != wantLag {
			t.Fatalf("described v%d: %+v", v, p)
		}
	}
	del := kmsg.NewPtrDeleteShareGroupOffsetsRequest()
	del.GroupID, del.Topics = "sg", []kmsg.DeleteShareGroupOffsetsRequestTopic{{Topic: "t"}, {Topic: "nope"}}
	dl, err := e.client.Groups().DeleteShareGroupOffsets(ctx, del)
	if err != nil || dl.ErrorCode != 0 || len(dl.Topics) != 2 || dl.Topics[0].ErrorCode != 0 || dl.Topics[1].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("delete: %v %+v", err, dl)
	}
}
