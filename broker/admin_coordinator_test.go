package broker

import (
	"fmt"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/coordinator"
	"github.com/floe-io/floe/objectstore"
)

// These tests run the admin handlers against the real coordinator, so that
// its errors and messages are checked as clients see them.

func newCoordinatorBroker(t *testing.T, mods ...func(*Options)) (*Broker, *coordinator.Coordinator) {
	t.Helper()
	c := newTestCoordinator(t)
	return newAdminBroker(t, c, mods...), c
}

// checkResult compares an admin result with its expected code and a
// substring of its message.
func checkResult(t *testing.T, what string, code int16, msg *string, wantCode int16, wantMsg string) {
	t.Helper()
	if code != wantCode || !strings.Contains(showStr(msg), wantMsg) {
		t.Errorf("%s: code %d (%s) message %s; want code %d (%s) message ~%q",
			what, code, kerr.ErrorForCode(code), showStr(msg), wantCode, kerr.ErrorForCode(wantCode), wantMsg)
	}
	if wantCode == 0 && msg != nil {
		t.Errorf("%s: message %q on success", what, *msg)
	}
}

func TestCoordinatorTopicAdmin(t *testing.T) {
	b, c := newCoordinatorBroker(t)

	// CreateTopics: per-topic results with the coordinator's messages.
	req := createTopicsRequest(
		newTopic("orders", 2, 3, "retention.ms", "60000"),
		newTopic("orders", 2, 1),
		newTopic("plain", -1, -1),
		newTopic("bad name", 1, 1),
		newTopic("rf4", 1, 4),
		newTopic("bad-value", 1, 1, "retention.ms", "abc"),
		newTopic("kv", 1, 1, "kv.index.enabled", "true", "cleanup.policy", "compact"),
	)
	cresp := serveVersion[*kmsg.CreateTopicsResponse](t, b, req, 7)
	want := []struct {
		code int16
		msg  string
	}{
		{kerr.InvalidRequest.Code, "Duplicate topic name."},
		{kerr.InvalidRequest.Code, "Duplicate topic name."},
		{0, ""},
		{kerr.InvalidTopicException.Code, "illegal"},
		{kerr.InvalidReplicationFactor.Code, "Replication factor: 4"},
		{kerr.InvalidConfig.Code, "Invalid value abc for configuration retention.ms: Not a number of type LONG"},
		{kerr.InvalidConfig.Code, "--kv-index-enabled"},
	}
	for i, w := range want {
		st := cresp.Topics[i]
		checkResult(t, "create "+st.Topic, st.ErrorCode, st.ErrorMessage, w.code, w.msg)
	}
	plain := cresp.Topics[2]
	if plain.NumPartitions != 4 || plain.ReplicationFactor != 1 || plain.TopicID == [16]byte{} || len(plain.Configs) != len(coordapi.TopicConfigDefs) {
		t.Errorf("plain: partitions %d rf %d id %x configs %d", plain.NumPartitions, plain.ReplicationFactor, plain.TopicID, len(plain.Configs))
	}

	cresp = serveVersion[*kmsg.CreateTopicsResponse](t, b, createTopicsRequest(newTopic("orders", 2, 3, "retention.ms", "60000")), 7)
	checkResult(t, "create orders", cresp.Topics[0].ErrorCode, cresp.Topics[0].ErrorMessage, 0, "")
	ordersID := cresp.Topics[0].TopicID
	cresp = serveVersion[*kmsg.CreateTopicsResponse](t, b, createTopicsRequest(newTopic("orders", 2, 1)), 4)
	checkResult(t, "create orders again", cresp.Topics[0].ErrorCode, cresp.Topics[0].ErrorMessage, kerr.TopicAlreadyExists.Code, "Topic 'orders' already exists.")

	// Metadata sees it at once.
	mreq := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr("orders")
	mreq.Topics = append(mreq.Topics, mt)
	mresp := serveVersion[*kmsg.MetadataResponse](t, b, mreq, 12)
	if mresp.Topics[0].ErrorCode != 0 || len(mresp.Topics[0].Partitions) != 2 || mresp.Topics[0].TopicID != ordersID {
		t.Fatalf("metadata: %+v", mresp.Topics[0])
	}

	// IncrementalAlterConfigs: APPEND on a non-list key fails with the
	// coordinator's message; the next resource is still applied.
	s := kmsg.StringPtr
	ireq := kmsg.NewPtrIncrementalAlterConfigsRequest()
	ireq.Resources = []kmsg.IncrementalAlterConfigsRequestResource{
		incrementalResource(kmsg.ConfigResourceTypeTopic, "plain", incrementalOp("retention.ms", kmsg.IncrementalAlterConfigOpAppend, s("5"))),
		incrementalResource(kmsg.ConfigResourceTypeTopic, "orders",
			incrementalOp("cleanup.policy", kmsg.IncrementalAlterConfigOpAppend, s("compact")),
			incrementalOp("retention.ms", kmsg.IncrementalAlterConfigOpDelete, nil),
			incrementalOp("max.message.bytes", kmsg.IncrementalAlterConfigOpSet, s("2000000"))),
		incrementalResource(kmsg.ConfigResourceTypeTopic, "missing", incrementalOp("segment.ms", kmsg.IncrementalAlterConfigOpSet, s("1"))),
	}
	iresp := serveVersion[*kmsg.IncrementalAlterConfigsResponse](t, b, ireq, 1)
	checkResult(t, "append retention.ms", iresp.Resources[0].ErrorCode, iresp.Resources[0].ErrorMessage,
		kerr.InvalidConfig.Code, "Config value append is not allowed for config key: retention.ms")
	checkResult(t, "alter orders", iresp.Resources[1].ErrorCode, iresp.Resources[1].ErrorMessage, 0, "")
	checkResult(t, "alter missing", iresp.Resources[2].ErrorCode, iresp.Resources[2].ErrorMessage, kerr.UnknownTopicOrPartition.Code, "")

	// DescribeConfigs shows the result.
	dreq := describeConfigsRequest(configResource(kmsg.ConfigResourceTypeTopic, "orders", "cleanup.policy", "retention.ms", "max.message.bytes"))
	dreq.IncludeSynonyms = true
	dresp := serveVersion[*kmsg.DescribeConfigsResponse](t, b, dreq, 4)
	got := map[string]string{}
	for _, c := range dresp.Resources[0].Configs {
		got[c.Name] = fmt.Sprintf("%s/%s", showStr(c.Value), c.Source)
	}
	wantConfigs := map[string]string{
		"cleanup.policy":    "delete,compact/DYNAMIC_TOPIC_CONFIG",
		"retention.ms":      "604800000/DEFAULT_CONFIG",
		"max.message.bytes": "2000000/DYNAMIC_TOPIC_CONFIG",
	}
	if fmt.Sprint(got) != fmt.Sprint(wantConfigs) {
		t.Errorf("described %v, want %v", got, wantConfigs)
	}

	// Legacy AlterConfigs replaces the set; a bad value names itself.
	areq := alterConfigsRequest(false,
		alterResource(kmsg.ConfigResourceTypeTopic, "orders", "retention.ms", "1000"),
		alterResource(kmsg.ConfigResourceTypeTopic, "plain", "message.timestamp.type", "Sometimes"),
	)
	aresp := serveVersion[*kmsg.AlterConfigsResponse](t, b, areq, 2)
	checkResult(t, "legacy alter orders", aresp.Resources[0].ErrorCode, aresp.Resources[0].ErrorMessage, 0, "")
	checkResult(t, "legacy alter plain", aresp.Resources[1].ErrorCode, aresp.Resources[1].ErrorMessage,
		kerr.InvalidConfig.Code, "Invalid value Sometimes for configuration message.timestamp.type")
	if tp, _ := c.Topic(t.Context(), "orders"); fmt.Sprint(tp.Configs) != "map[retention.ms:1000]" {
		t.Errorf("orders configs after legacy alter: %v", tp.Configs)
	}

	// CreatePartitions.
	preq := kmsg.NewPtrCreatePartitionsRequest()
	for name, count := range map[string]int32{"orders": 5, "plain": 2} {
		rt := kmsg.NewCreatePartitionsRequestTopic()
		rt.Topic, rt.Count = name, count
		preq.Topics = append(preq.Topics, rt)
	}
	presp := serveVersion[*kmsg.CreatePartitionsResponse](t, b, preq, 3)
	for _, st := range presp.Topics {
		if st.Topic == "orders" {
			checkResult(t, "grow orders", st.ErrorCode, st.ErrorMessage, 0, "")
		} else {
			checkResult(t, "shrink plain", st.ErrorCode, st.ErrorMessage, kerr.InvalidPartitions.Code, "Topic currently has 4 partitions, which is higher than the requested 2.")
		}
	}
	if tp, _ := c.Topic(t.Context(), "orders"); tp.Partitions != 5 {
		t.Errorf("orders has %d partitions, want 5", tp.Partitions)
	}

	// DeleteTopics v6 by id, then by the same id again.
	for i, wantCode := range []int16{0, kerr.UnknownTopicID.Code} {
		dtreq := kmsg.NewPtrDeleteTopicsRequest()
		rt := kmsg.NewDeleteTopicsRequestTopic()
		rt.TopicID = ordersID
		dtreq.Topics = append(dtreq.Topics, rt)
		dtresp := serveVersion[*kmsg.DeleteTopicsResponse](t, b, dtreq, 6)
		st := dtresp.Topics[0]
		checkResult(t, fmt.Sprintf("delete by id #%d", i), st.ErrorCode, st.ErrorMessage, wantCode, "")
		if wantCode == 0 && showStr(st.Topic) != "orders" {
			t.Errorf("delete by id: name %s, want orders", showStr(st.Topic))
		}
	}
	mresp = serveVersion[*kmsg.MetadataResponse](t, b, mreq, 12)
	if mresp.Topics[0].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Errorf("metadata after delete: code %d", mresp.Topics[0].ErrorCode)
	}
}

func TestCoordinatorOffsets(t *testing.T) {
	c := newTestCoordinator(t)
	// Batches are read back from an in-memory store, so that ListOffsets
	// can narrow a timestamp search to the record.
	store := objectstore.NewMemory()
	b := newTestBroker(t, Deps{Coordinator: c, Reader: storeReader{store}})
	cresp := serveVersion[*kmsg.CreateTopicsResponse](t, b, createTopicsRequest(newTopic("t", 2, 1)), 7)
	if cresp.Topics[0].ErrorCode != 0 {
		t.Fatalf("create: %s", showStr(cresp.Topics[0].ErrorMessage))
	}
	id := coordapi.TopicID(cresp.Topics[0].TopicID)
	// Partition 0: [0,2] max ts 100, [3,4] max ts 300, [5,9] max ts 200.
	commitBatches(t, c, store, id, 0, []int64{50, 80, 100}, []int64{250, 300}, []int64{110, 120, 150, 180, 200})

	listOffsets := func(partition int32, timestamp int64) kmsg.ListOffsetsResponseTopicPartition {
		req := kmsg.NewPtrListOffsetsRequest()
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = "t"
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = partition, timestamp, 0
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		return serveVersion[*kmsg.ListOffsetsResponse](t, b, req, 8).Topics[0].Partitions[0]
	}
	type lo struct {
		code      int16
		offset    int64
		timestamp int64
		epoch     int32
	}
	for _, tc := range []struct {
		partition int32
		timestamp int64
		want      lo
	}{
		{0, -1, lo{0, 10, -1, 0}},
		{0, -2, lo{0, 0, -1, 0}},
		{0, -3, lo{0, 4, 300, 0}},
		{0, -4, lo{0, 0, -1, 0}},
		{0, 150, lo{0, 3, 250, 0}}, // the first record at or after 150 of the first batch reaching it
		{0, 260, lo{0, 4, 300, 0}},
		{0, 90, lo{0, 2, 100, 0}},
		{0, 301, lo{0, -1, -1, -1}},
		{1, -1, lo{0, 0, -1, -1}},
		{1, -2, lo{0, 0, -1, -1}},
		{2, -1, lo{kerr.UnknownTopicOrPartition.Code, -1, -1, -1}},
	} {
		sp := listOffsets(tc.partition, tc.timestamp)
		if got := (lo{sp.ErrorCode, sp.Offset, sp.Timestamp, sp.LeaderEpoch}); got != tc.want {
			t.Errorf("ListOffsets t/%d at %d: got %+v, want %+v", tc.partition, tc.timestamp, got, tc.want)
		}
	}

	oreq := kmsg.NewPtrOffsetForLeaderEpochRequest()
	ort := kmsg.NewOffsetForLeaderEpochRequestTopic()
	ort.Topic = "t"
	for _, p := range []int32{0, 1} {
		orp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
		orp.Partition, orp.CurrentLeaderEpoch, orp.LeaderEpoch = p, 0, 0
		ort.Partitions = append(ort.Partitions, orp)
	}
	oreq.Topics = append(oreq.Topics, ort)
	oresp := serveVersion[*kmsg.OffsetForLeaderEpochResponse](t, b, oreq, 4)
	for i, want := range []int64{10, 0} {
		if sp := oresp.Topics[0].Partitions[i]; sp.ErrorCode != 0 || sp.LeaderEpoch != 0 || sp.EndOffset != want {
			t.Errorf("OffsetForLeaderEpoch t/%d: %+v, want end offset %d epoch 0", i, sp, want)
		}
	}

	dreq := kmsg.NewPtrDeleteRecordsRequest()
	drt := kmsg.NewDeleteRecordsRequestTopic()
	drt.Topic = "t"
	for p, offset := range []int64{4, 1} {
		drp := kmsg.NewDeleteRecordsRequestTopicPartition()
		drp.Partition, drp.Offset = int32(p), offset
		drt.Partitions = append(drt.Partitions, drp)
	}
	dreq.Topics = append(dreq.Topics, drt)
	dresp := serveVersion[*kmsg.DeleteRecordsResponse](t, b, dreq, 2)
	if sp := dresp.Topics[0].Partitions[0]; sp.ErrorCode != 0 || sp.LowWatermark != 4 {
		t.Errorf("DeleteRecords t/0 to 4: %+v", sp)
	}
	if sp := dresp.Topics[0].Partitions[1]; sp.ErrorCode != kerr.OffsetOutOfRange.Code || sp.LowWatermark != -1 {
		t.Errorf("DeleteRecords t/1 beyond the high watermark: %+v", sp)
	}
	for _, tc := range []struct {
		timestamp int64
		want      lo
	}{
		{-2, lo{0, 4, -1, 0}},
		{0, lo{0, 4, 300, 0}}, // the batch [3,4] holds the log start
		{-3, lo{0, 4, 300, 0}},
	} {
		sp := listOffsets(0, tc.timestamp)
		if got := (lo{sp.ErrorCode, sp.Offset, sp.Timestamp, sp.LeaderEpoch}); got != tc.want {
			t.Errorf("after DeleteRecords, ListOffsets t/0 at %d: got %+v, want %+v", tc.timestamp, got, tc.want)
		}
	}
}

func TestCoordinatorInitProducerID(t *testing.T) {
	b, _ := newCoordinatorBroker(t)
	for _, v := range servedVersions(t, kmsg.InitProducerID) {
		req := kmsg.NewPtrInitProducerIDRequest()
		req.TransactionTimeoutMillis = -1 // librdkafka's idempotent producer
		resp := serveVersion[*kmsg.InitProducerIDResponse](t, b, req, v)
		if resp.ErrorCode != 0 || resp.ProducerID < 0 || resp.ProducerEpoch != 0 {
			t.Fatalf("v%d new producer: %+v", v, resp)
		}
		if v >= 3 {
			bump := kmsg.NewPtrInitProducerIDRequest()
			bump.ProducerID, bump.ProducerEpoch = resp.ProducerID, resp.ProducerEpoch
			bumped := serveVersion[*kmsg.InitProducerIDResponse](t, b, bump, v)
			if bumped.ErrorCode != 0 || bumped.ProducerID != resp.ProducerID || bumped.ProducerEpoch != 1 {
				t.Errorf("v%d bump: %+v", v, bumped)
			}
		}
		for _, tc := range []struct {
			txn     string
			timeout int32
			want    int16
		}{
			{"tx", 900001, kerr.InvalidTransactionTimeout.Code},
			{"", 60000, kerr.InvalidRequest.Code},
		} {
			req := kmsg.NewPtrInitProducerIDRequest()
			req.TransactionalID, req.TransactionTimeoutMillis = kmsg.StringPtr(tc.txn), tc.timeout
			resp := serveVersion[*kmsg.InitProducerIDResponse](t, b, req, v)
			if resp.ErrorCode != tc.want || resp.ProducerID != -1 || resp.ProducerEpoch != -1 {
				t.Errorf("v%d transactional id %q timeout %d: %+v, want code %d", v, tc.txn, tc.timeout, resp, tc.want)
			}
		}
		// A valid transactional id gets a producer at epoch 0, and its
		// next InitProducerId bumps the epoch (fencing the first).
		req = kmsg.NewPtrInitProducerIDRequest()
		req.TransactionalID, req.TransactionTimeoutMillis = kmsg.StringPtr(fmt.Sprintf("tx-v%d", v)), 60000
		first := serveVersion[*kmsg.InitProducerIDResponse](t, b, req, v)
		again := serveVersion[*kmsg.InitProducerIDResponse](t, b, req, v)
		if first.ErrorCode != 0 || first.ProducerEpoch != 0 || again.ErrorCode != 0 || again.ProducerID != first.ProducerID || again.ProducerEpoch != 1 {
			t.Errorf("v%d transactional id: %+v then %+v", v, first, again)
		}
	}
}
