package broker

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/coordinator"
	"github.com/floe-io/floe/objectstore"
)

// offsetsFixture: topic "t" with 3 partitions on the real coordinator,
// its batches in a store the broker reads back. Partition 0 holds offsets
// 0..9 in three batches: [0,2] (every record at ts 100), [3,4] (both at ts
// 300), [5,9] (ts 110..200), so max timestamps 100, 300, 200; partition 1
// was never written; partition 2 holds [0,4] (ts 50) with the log start
// moved to 5 (all deleted).
func offsetsFixture(t *testing.T) *Broker {
	c := newTestCoordinator(t)
	store := objectstore.NewMemory()
	tp := createTopic(t, c, "t", 3, nil)
	commitBatches(t, c, store, tp.ID, 0, timestamps(3, 100), timestamps(2, 300), []int64{110, 120, 150, 180, 200})
	commitBatches(t, c, store, tp.ID, 2, timestamps(5, 50))
	if _, err := c.DeleteRecords(t.Context(), tp.ID, 2, 5); err != nil {
		t.Fatal(err)
	}
	return newTestBroker(t, Deps{Coordinator: c, Reader: storeReader{store}})
}

func TestListOffsets(t *testing.T) {
	b := offsetsFixture(t)
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
		{"max timestamp: the first record holding it", "t", 0, -3, -1, 0, 7, want{0, 3, 300, 0}},
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
	b := offsetsFixture(t)
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
	b := offsetsFixture(t)
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
			c := newTestCoordinator(t)
			b := newAdminBroker(t, c)
			u := createTopic(t, c, "u", 1, nil)
			commitBatches(t, c, nil, u.ID, 0, timestamps(20, 1))
			tp := createTopic(t, c, "t", 3, nil)
			commitBatches(t, c, nil, tp.ID, 0, timestamps(10, 1))
			commitBatches(t, c, nil, tp.ID, 1, timestamps(10, 1))

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
			if ps, _ := c.PartitionState(t.Context(), tp.ID, 0); ps.LogStartOffset != 4 {
				t.Errorf("t/0 log start %d, want 4", ps.LogStartOffset)
			}
			if ps, _ := c.PartitionState(t.Context(), tp.ID, 1); ps.LogStartOffset != 0 {
				t.Errorf("t/1 log start %d after a rejected delete, want 0", ps.LogStartOffset)
			}
		})
	}
}

// initProducerIDHook is the real coordinator with its InitProducerID
// observed: it records the last request, and answers err instead when set
// (failures the real one cannot produce on demand).
type initProducerIDHook struct {
	*coordinator.Coordinator
	mu   sync.Mutex
	last coordapi.InitProducerIDRequest
	err  error
}

func (h *initProducerIDHook) InitProducerID(ctx context.Context, req coordapi.InitProducerIDRequest) (coordapi.InitProducerIDResponse, error) {
	h.mu.Lock()
	h.last = req
	err := h.err
	h.mu.Unlock()
	if err != nil {
		return coordapi.InitProducerIDResponse{}, err
	}
	return h.Coordinator.InitProducerID(ctx, req)
}

func (h *initProducerIDHook) lastRequest() coordapi.InitProducerIDRequest {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.last
}

func (h *initProducerIDHook) fail(err error) {
	h.mu.Lock()
	h.err = err
	h.mu.Unlock()
}

func TestInitProducerID(t *testing.T) {
	for _, v := range servedVersions(t, kmsg.InitProducerID) {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			c := &initProducerIDHook{Coordinator: newTestCoordinator(t)}
			b := newAdminBroker(t, c)

			newProducer := func() *kmsg.InitProducerIDResponse {
				req := kmsg.NewPtrInitProducerIDRequest()
				req.TransactionTimeoutMillis = 60000
				return serveVersion[*kmsg.InitProducerIDResponse](t, b, req, v)
			}
			resp := newProducer()
			if resp.ErrorCode != 0 || resp.ProducerID < 0 || resp.ProducerEpoch != 0 {
				t.Fatalf("new producer: got code %d id %d epoch %d, want 0, a producer id, 0", resp.ErrorCode, resp.ProducerID, resp.ProducerEpoch)
			}
			if last := c.lastRequest(); last.TransactionalID != nil || last.TimeoutMs != 60000 || last.ProducerID != -1 || last.ProducerEpoch != -1 {
				t.Errorf("coordinator got %+v", last)
			}
			if again := newProducer(); again.ErrorCode != 0 || again.ProducerID < 0 || again.ProducerID == resp.ProducerID || again.ProducerEpoch != 0 {
				t.Errorf("second new producer: got code %d id %d epoch %d, want 0, an id other than %d, 0", again.ErrorCode, again.ProducerID, again.ProducerEpoch, resp.ProducerID)
			}

			if v >= 3 { // KIP-360 epoch bump
				req := kmsg.NewPtrInitProducerIDRequest()
				req.ProducerID, req.ProducerEpoch = resp.ProducerID, 0
				bumped := serveVersion[*kmsg.InitProducerIDResponse](t, b, req, v)
				if bumped.ErrorCode != 0 || bumped.ProducerID != resp.ProducerID || bumped.ProducerEpoch != 1 {
					t.Errorf("bump: got code %d id %d epoch %d, want 0 %d 1", bumped.ErrorCode, bumped.ProducerID, bumped.ProducerEpoch, resp.ProducerID)
				}
				if last := c.lastRequest(); last.ProducerID != resp.ProducerID || last.ProducerEpoch != 0 {
					t.Errorf("bump: coordinator got %+v", last)
				}
			}

			for _, tc := range []struct {
				name    string
				timeout int32
				inject  error // nil: the real coordinator's answer
				want    int16
			}{
				{"transaction timeout too long", 900001, nil, kerr.InvalidTransactionTimeout.Code},
				{"fenced", 60000, kerr.ProducerFenced, map[bool]int16{true: kerr.ProducerFenced.Code, false: kerr.InvalidProducerEpoch.Code}[v >= 4]},
				{"store failure", 60000, fmt.Errorf("pebble: disk on fire"), kerr.CoordinatorNotAvailable.Code}, // retriable
				{"deadline", 60000, fmt.Errorf("init producer id: %w", context.DeadlineExceeded), kerr.CoordinatorNotAvailable.Code},
			} {
				c.fail(tc.inject)
				req := kmsg.NewPtrInitProducerIDRequest()
				req.TransactionalID, req.TransactionTimeoutMillis = kmsg.StringPtr("tx"), tc.timeout
				resp := serveVersion[*kmsg.InitProducerIDResponse](t, b, req, v)
				if resp.ErrorCode != tc.want || resp.ProducerID != -1 || resp.ProducerEpoch != -1 {
					t.Errorf("%s: got code %d id %d epoch %d, want %d -1 -1", tc.name, resp.ErrorCode, resp.ProducerID, resp.ProducerEpoch, tc.want)
				}
			}
		})
	}
}
