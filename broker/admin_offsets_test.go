package broker

import (
	"context"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// offsetsFixture: topic "t" with 3 partitions. Partition 0 holds offsets
// 0..9 in three batches ([0,2] max ts 100, [3,4] max ts 300, [5,9] max ts
// 200); partition 1 was never written; partition 2 holds [0,4] (max ts 50)
// with the log start moved to 5 (all deleted).
func offsetsFixture(t *testing.T) (*Broker, *fakeCoordinator) {
	f := newFakeCoordinator()
	f.addTopic("t", 3, nil)
	f.appendBatch("t", 0, 3, 100)
	f.appendBatch("t", 0, 2, 300)
	f.appendBatch("t", 0, 5, 200)
	f.appendBatch("t", 2, 5, 50)
	tp, _ := f.Topic(t.Context(), "t")
	if _, err := f.DeleteRecords(t.Context(), tp.ID, 2, 5); err != nil {
		t.Fatal(err)
	}
	return newAdminBroker(t, f), f
}

func TestListOffsets(t *testing.T) {
	b, _ := offsetsFixture(t)
	type want struct {
		code      int16
		offset    int64
		timestamp int64
		epoch     int32 // checked at v4+
	}
	tests := []struct {
		name      string
		topic     string
		partition int32
		timestamp int64
		current   int32 // CurrentLeaderEpoch, sent at v4+
		isolation int8
		minV      int16
		want      want
	}{
		{"latest", "t", 0, -1, -1, 0, 1, want{0, 10, -1, 0}},
		{"latest read_committed is the LSO = HWM", "t", 0, -1, -1, 1, 2, want{0, 10, -1, 0}},
		{"earliest", "t", 0, -2, -1, 0, 1, want{0, 0, -1, 0}},
		{"max timestamp", "t", 0, -3, -1, 0, 7, want{0, 4, 300, 0}},
		{"local log start", "t", 0, -4, -1, 0, 8, want{0, 0, -1, 0}},
		{"by timestamp: first batch", "t", 0, 0, -1, 0, 1, want{0, 0, 100, 0}},
		{"by timestamp: first batch whose max ts is >=", "t", 0, 150, -1, 0, 1, want{0, 3, 300, 0}},
		{"by timestamp: exact", "t", 0, 300, -1, 0, 1, want{0, 3, 300, 0}},
		{"by timestamp: none is -1 without error", "t", 0, 301, -1, 0, 1, want{0, -1, -1, -1}},
		{"never written: latest has no epoch", "t", 1, -1, -1, 0, 1, want{0, 0, -1, -1}},
		{"never written: earliest has no epoch", "t", 1, -2, -1, 0, 1, want{0, 0, -1, -1}},
		{"never written: max timestamp", "t", 1, -3, -1, 0, 7, want{0, -1, -1, -1}},
		{"all deleted: latest", "t", 2, -1, -1, 0, 1, want{0, 5, -1, 0}},
		{"all deleted: earliest", "t", 2, -2, -1, 0, 1, want{0, 5, -1, 0}},
		{"all deleted: by timestamp", "t", 2, 0, -1, 0, 1, want{0, -1, -1, -1}},
		{"current epoch matches", "t", 0, -1, 0, 0, 4, want{0, 10, -1, 0}},
		{"current epoch newer", "t", 0, -1, 1, 0, 4, want{kerr.UnknownLeaderEpoch.Code, -1, -1, -1}},
		{"current epoch older", "t", 0, -1, -2, 0, 4, want{kerr.FencedLeaderEpoch.Code, -1, -1, -1}},
		{"unknown partition", "t", 3, -1, -1, 0, 1, want{kerr.UnknownTopicOrPartition.Code, -1, -1, -1}},
		{"negative partition", "t", -1, -1, -1, 0, 1, want{kerr.UnknownTopicOrPartition.Code, -1, -1, -1}},
		{"unknown topic", "nope", 0, -1, -1, 0, 1, want{kerr.UnknownTopicOrPartition.Code, -1, -1, -1}},
	}
	for _, v := range servedVersions(t, kmsg.ListOffsets) {
		for _, tc := range tests {
			if v < tc.minV {
				continue
			}
			t.Run(fmt.Sprintf("v%d/%s", v, tc.name), func(t *testing.T) {
				req := kmsg.NewPtrListOffsetsRequest()
				req.IsolationLevel = tc.isolation
				rt := kmsg.NewListOffsetsRequestTopic()
				rt.Topic = tc.topic
				rp := kmsg.NewListOffsetsRequestTopicPartition()
				rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = tc.partition, tc.timestamp, tc.current
				rt.Partitions = append(rt.Partitions, rp)
				req.Topics = append(req.Topics, rt)
				resp := serveVersion[*kmsg.ListOffsetsResponse](t, b, req, v)
				if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
					t.Fatalf("want 1 topic with 1 partition, got %+v", resp.Topics)
				}
				sp := resp.Topics[0].Partitions[0]
				got := want{sp.ErrorCode, sp.Offset, sp.Timestamp, sp.LeaderEpoch}
				if v < 4 {
					got.epoch, tc.want.epoch = 0, 0
				}
				if resp.Topics[0].Topic != tc.topic || sp.Partition != tc.partition || got != tc.want {
					t.Errorf("got %s/%d %+v, want %+v", resp.Topics[0].Topic, sp.Partition, got, tc.want)
				}
			})
		}
	}
}

func TestListOffsetsSeveralPartitions(t *testing.T) {
	b, _ := offsetsFixture(t)
	req := kmsg.NewPtrListOffsetsRequest()
	for _, name := range []string{"t", "nope"} {
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = name
		for _, p := range []int32{0, 2, 0} { // partition 0 twice
			rp := kmsg.NewListOffsetsRequestTopicPartition()
			rp.Partition, rp.Timestamp = p, -1
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
	}
	resp := serveVersion[*kmsg.ListOffsetsResponse](t, b, req, 8)
	want := [][]int16{
		{kerr.InvalidRequest.Code, 0, kerr.InvalidRequest.Code},
		{kerr.InvalidRequest.Code, kerr.UnknownTopicOrPartition.Code, kerr.InvalidRequest.Code},
	}
	if len(resp.Topics) != 2 {
		t.Fatalf("got %d topics, want 2", len(resp.Topics))
	}
	for i, st := range resp.Topics {
		if len(st.Partitions) != 3 {
			t.Fatalf("topic %s: got %d partitions, want 3", st.Topic, len(st.Partitions))
		}
		for j, sp := range st.Partitions {
			if sp.ErrorCode != want[i][j] {
				t.Errorf("%s[%d] partition %d: code %d, want %d", st.Topic, j, sp.Partition, sp.ErrorCode, want[i][j])
			}
		}
	}
	if sp := resp.Topics[0].Partitions[1]; sp.Offset != 5 || sp.LeaderEpoch != 0 {
		t.Errorf("t/2 latest: got offset %d epoch %d, want 5, 0", sp.Offset, sp.LeaderEpoch)
	}
}

func TestOffsetForLeaderEpoch(t *testing.T) {
	b, _ := offsetsFixture(t)
	type want struct {
		code   int16
		epoch  int32 // checked at v1+
		offset int64
	}
	tests := []struct {
		name      string
		topic     string
		partition int32
		current   int32 // sent at v2+
		epoch     int32
		minV      int16
		want      want
	}{
		{"current epoch ends at the high watermark", "t", 0, -1, 0, 0, want{0, 0, 10}},
		{"current epoch, fenced ok", "t", 0, 0, 0, 2, want{0, 0, 10}},
		{"never written", "t", 1, -1, 0, 0, want{0, 0, 0}},
		{"all deleted", "t", 2, -1, 0, 0, want{0, 0, 5}},
		{"newer epoch is unknown", "t", 0, -1, 1, 0, want{0, -1, -1}},
		{"undefined epoch", "t", 0, -1, -1, 0, want{0, -1, -1}},
		{"current epoch newer than ours", "t", 0, 1, 0, 2, want{kerr.UnknownLeaderEpoch.Code, -1, -1}},
		{"current epoch older than ours", "t", 0, -3, 0, 2, want{kerr.FencedLeaderEpoch.Code, -1, -1}},
		{"unknown partition", "t", 7, -1, 0, 0, want{kerr.UnknownTopicOrPartition.Code, -1, -1}},
		{"unknown topic", "nope", 0, -1, 0, 0, want{kerr.UnknownTopicOrPartition.Code, -1, -1}},
	}
	for _, v := range servedVersions(t, kmsg.OffsetForLeaderEpoch) {
		for _, tc := range tests {
			if v < tc.minV {
				continue
			}
			t.Run(fmt.Sprintf("v%d/%s", v, tc.name), func(t *testing.T) {
				req := kmsg.NewPtrOffsetForLeaderEpochRequest()
				req.ReplicaID = -1
				rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
				rt.Topic = tc.topic
				rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
				rp.Partition, rp.CurrentLeaderEpoch, rp.LeaderEpoch = tc.partition, tc.current, tc.epoch
				rt.Partitions = append(rt.Partitions, rp)
				req.Topics = append(req.Topics, rt)
				resp := serveVersion[*kmsg.OffsetForLeaderEpochResponse](t, b, req, v)
				if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
					t.Fatalf("want 1 topic with 1 partition, got %+v", resp.Topics)
				}
				sp := resp.Topics[0].Partitions[0]
				got := want{sp.ErrorCode, sp.LeaderEpoch, sp.EndOffset}
				if v < 1 {
					got.epoch, tc.want.epoch = 0, 0
				}
				if sp.Partition != tc.partition || got != tc.want {
					t.Errorf("got partition %d %+v, want %+v", sp.Partition, got, tc.want)
				}
			})
		}
	}
}

func TestDeleteRecords(t *testing.T) {
	for _, v := range servedVersions(t, kmsg.DeleteRecords) {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			f := newFakeCoordinator()
			b := newAdminBroker(t, f)
			f.addTopic("u", 1, nil)
			f.appendBatch("u", 0, 20, 1)
			f.addTopic("t", 3, nil)
			f.appendBatch("t", 0, 10, 1)
			f.appendBatch("t", 1, 10, 1)

			req := kmsg.NewPtrDeleteRecordsRequest()
			add := func(topic string, parts map[int32]int64, order ...int32) {
				rt := kmsg.NewDeleteRecordsRequestTopic()
				rt.Topic = topic
				for _, p := range order {
					rp := kmsg.NewDeleteRecordsRequestTopicPartition()
					rp.Partition, rp.Offset = p, parts[p]
					rt.Partitions = append(rt.Partitions, rp)
				}
				req.Topics = append(req.Topics, rt)
			}
			add("t", map[int32]int64{0: 4, 1: 11, 2: 0, 3: 0}, 0, 1, 2, 3)
			add("u", map[int32]int64{0: -1}, 0)
			add("nope", map[int32]int64{0: 1}, 0)
			resp := serveVersion[*kmsg.DeleteRecordsResponse](t, b, req, v)
			type res struct {
				code int16
				low  int64
			}
			want := map[string][]res{
				"t":    {{0, 4}, {kerr.OffsetOutOfRange.Code, -1}, {0, 0}, {kerr.UnknownTopicOrPartition.Code, -1}},
				"u":    {{0, 20}},
				"nope": {{kerr.UnknownTopicOrPartition.Code, -1}},
			}
			if len(resp.Topics) != 3 {
				t.Fatalf("got %d topics, want 3", len(resp.Topics))
			}
			for _, st := range resp.Topics {
				if len(st.Partitions) != len(want[st.Topic]) {
					t.Fatalf("%s: got %d partitions, want %d", st.Topic, len(st.Partitions), len(want[st.Topic]))
				}
				for i, sp := range st.Partitions {
					if got := (res{sp.ErrorCode, sp.LowWatermark}); got != want[st.Topic][i] {
						t.Errorf("%s/%d: got %+v, want %+v", st.Topic, sp.Partition, got, want[st.Topic][i])
					}
				}
			}
			tp, _ := f.Topic(t.Context(), "t")
			if ps, _ := f.PartitionState(t.Context(), tp.ID, 0); ps.LogStartOffset != 4 {
				t.Errorf("t/0 log start %d, want 4", ps.LogStartOffset)
			}
			if ps, _ := f.PartitionState(t.Context(), tp.ID, 1); ps.LogStartOffset != 0 {
				t.Errorf("t/1 log start %d after a rejected delete, want 0", ps.LogStartOffset)
			}
		})
	}
}

func TestInitProducerID(t *testing.T) {
	for _, v := range servedVersions(t, kmsg.InitProducerID) {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			f := newFakeCoordinator()
			b := newAdminBroker(t, f)

			req := kmsg.NewPtrInitProducerIDRequest()
			req.TransactionTimeoutMillis = 60000
			resp := serveVersion[*kmsg.InitProducerIDResponse](t, b, req, v)
			if resp.ErrorCode != 0 || resp.ProducerID != 1001 || resp.ProducerEpoch != 0 {
				t.Fatalf("new producer: got code %d id %d epoch %d, want 0 1001 0", resp.ErrorCode, resp.ProducerID, resp.ProducerEpoch)
			}
			f.mu.Lock()
			last := f.mu.lastInit
			f.mu.Unlock()
			if last.TransactionalID != nil || last.TimeoutMs != 60000 || last.ProducerID != -1 || last.ProducerEpoch != -1 {
				t.Errorf("coordinator got %+v", last)
			}

			if v >= 3 { // KIP-360 epoch bump
				req := kmsg.NewPtrInitProducerIDRequest()
				req.ProducerID, req.ProducerEpoch = 1001, 0
				resp := serveVersion[*kmsg.InitProducerIDResponse](t, b, req, v)
				if resp.ErrorCode != 0 || resp.ProducerID != 1001 || resp.ProducerEpoch != 1 {
					t.Errorf("bump: got code %d id %d epoch %d, want 0 1001 1", resp.ErrorCode, resp.ProducerID, resp.ProducerEpoch)
				}
			}

			for _, tc := range []struct {
				err  error
				want int16
			}{
				{kafkaErr(kerr.TransactionalIDAuthorizationFailed, "no transactions"), kerr.TransactionalIDAuthorizationFailed.Code},
				{fmt.Errorf("init producer id: %w", kerr.InvalidTransactionTimeout), kerr.InvalidTransactionTimeout.Code},
				{kerr.ProducerFenced, map[bool]int16{true: kerr.ProducerFenced.Code, false: kerr.InvalidProducerEpoch.Code}[v >= 4]},
				{fmt.Errorf("pebble: disk on fire"), kerr.CoordinatorNotAvailable.Code}, // retriable
				{fmt.Errorf("init producer id: %w", context.DeadlineExceeded), kerr.CoordinatorNotAvailable.Code},
			} {
				f.mu.Lock()
				f.mu.initErr = tc.err
				f.mu.Unlock()
				req := kmsg.NewPtrInitProducerIDRequest()
				req.TransactionalID = kmsg.StringPtr("tx")
				resp := serveVersion[*kmsg.InitProducerIDResponse](t, b, req, v)
				if resp.ErrorCode != tc.want || resp.ProducerID != -1 || resp.ProducerEpoch != -1 {
					t.Errorf("%v: got code %d id %d epoch %d, want %d -1 -1", tc.err, resp.ErrorCode, resp.ProducerID, resp.ProducerEpoch, tc.want)
				}
			}
		})
	}
}
