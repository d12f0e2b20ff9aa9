package broker

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-io/floe/internal/testkit"
)

// setShareReset sets share.auto.offset.reset of group to earliest through
// IncrementalAlterConfigs of a GROUP resource, as share tests do.
func setShareReset(t *testing.T, cl *kgo.Client, group string) {
	t.Helper()
	alter := kmsg.NewPtrIncrementalAlterConfigsRequest()
	ar := kmsg.NewIncrementalAlterConfigsRequestResource()
	ar.ResourceType, ar.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	ac := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	ac.Name, ac.Value = "share.auto.offset.reset", kmsg.StringPtr("earliest")
	ar.Configs = append(ar.Configs, ac)
	alter.Resources = append(alter.Resources, ar)
	wantCode(t, "alter group config", send[*kmsg.IncrementalAlterConfigsResponse](t, cl, alter).Resources[0].ErrorCode, nil)
}

// produceN produces n records "0".."n-1" to topic, spread over its
// partitions, and waits for them.
func produceN(t *testing.T, cl *kgo.Client, topic string, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	rs := make([]*kgo.Record, n)
	for i := range rs {
		rs[i] = &kgo.Record{Topic: topic, Value: []byte(strconv.Itoa(i))}
	}
	if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
}

// checkFor waits until fn reports true (testkit.CheckFor), failing the test
// after timeout.
func checkFor(t *testing.T, timeout time.Duration, fn func() bool) {
	t.Helper()
	testkit.CheckFor(t, timeout, 10*time.Millisecond, func() error {
		if !fn() {
			return fmt.Errorf("condition not met within %s", timeout)
		}
		return nil
	})
}

// topicID is topic's id, from the broker's metadata.
func (e *aclEnv) topicID(topic string) [16]byte {
	e.t.Helper()
	td, err := e.admin().ListTopics(e.t.Context(), topic)
	if err != nil || td[topic].Err != nil {
		e.t.Fatalf("list topic %s: %v %v", topic, err, td[topic].Err)
	}
	return td[topic].ID
}

// TestShareConsumersKgo runs franz-go's own share consumers (kgo.ShareGroup,
// which needs ShareFetch and ShareAcknowledge v2) against the broker: three
// consumers of one share group read records produced before and while they
// run, accepting each record explicitly, on three partitions (one each)
// and on one partition (shared by all three, 10 records a fetch). Every
// record is read, and none is delivered twice (every delivery is accepted
// at once, long before the 30 s lock could expire, so a second delivery
// would be a record held by two consumers).
func TestShareConsumersKgo(t *testing.T) {
	for _, tc := range []struct {
		name       string
		partitions int32
		maxRecords int32
	}{
		{"three partitions", 3, 500},
		{"one partition", 1, 10},
	} {
		t.Run(tc.name, func(t *testing.T) { testShareConsumersKgo(t, tc.partitions, tc.maxRecords) })
	}
}

func testShareConsumersKgo(t *testing.T, partitions, maxRecords int32) {
	e := newACLEnv(t, func(o *Options) { o.ACLsEnabled = false })
	e.topic("sq", partitions, nil)
	prod := e.client("producer", kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	setShareReset(t, prod, "sg")
	const before, during = 300, 300

	type delivery struct {
		consumer int
		count    int32
	}
	var (
		mu   sync.Mutex
		seen = map[string][]delivery{} // partition/offset → deliveries
		done = make(chan struct{})
	)
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for c := range 3 {
		cl := e.client(fmt.Sprintf("share-%d", c), kgo.ShareGroup("sg"), kgo.ConsumeTopics("sq"),
			kgo.FetchMaxWait(500*time.Millisecond), kgo.ShareMaxRecords(maxRecords))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				pctx, pcancel := context.WithTimeout(ctx, time.Second)
				fs := cl.PollFetches(pctx)
				pcancel()
				if ctx.Err() != nil {
					return
				}
				fs.EachError(func(topic string, p int32, err error) {
					if err != context.DeadlineExceeded {
						t.Logf("consumer %d: %s/%d: %v", c, topic, p, err)
					}
				})
				recs := fs.Records()
				mu.Lock()
				for _, r := range recs {
					k := fmt.Sprintf("%d/%d", r.Partition, r.Offset)
					seen[k] = append(seen[k], delivery{c, r.DeliveryCount()})
				}
				n := len(seen)
				mu.Unlock()
				for _, r := range recs {
					r.Ack(kgo.AckAccept)
				}
				if n >= before+during {
					select {
					case <-done:
					default:
						close(done)
					}
				}
			}
		}()
	}
	// Every consumer joined and took its one partition (the first to
	// join had all of them until its next heartbeat): produce.
	checkFor(t, 20*time.Second, func() bool {
		d := send[*kmsg.ShareGroupDescribeResponse](t, prod, shareDescribeReq("sg")).Groups
		if len(d) != 1 || len(d[0].Members) != 3 {
			return false
		}
		for _, m := range d[0].Members {
			if n := len(m.Assignment.TopicPartitions); n != 1 || len(m.Assignment.TopicPartitions[0].Partitions) != 1 {
				return false
			}
		}
		return true
	})
	produceN(t, prod, "sq", before)
	produceN(t, prod, "sq", during)
	select {
	case <-done:
	case <-ctx.Done():
	}
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != before+during {
		t.Fatalf("read %d distinct records, want %d", len(seen), before+during)
	}
	consumers := map[int]int{}
	for k, ds := range seen {
		if len(ds) != 1 {
			t.Errorf("record %s delivered %d times: %+v", k, len(ds), ds)
		}
		consumers[ds[0].consumer]++
	}
	t.Logf("records per consumer: %v", consumers)
	if partitions >= 3 && len(consumers) < 3 {
		t.Errorf("records per consumer: %v, want every consumer to read its partition", consumers)
	}
}

// TestShareFetchSessions speaks ShareFetch and ShareAcknowledge (kmsg, over
// TCP) and checks the share session rules: a first fetch at epoch 0 gets
// records; the same epoch again is INVALID_SHARE_SESSION_EPOCH; epoch 1
// acknowledges; an unknown member's epoch 1 is SHARE_SESSION_NOT_FOUND;
// acks at epoch 0 and ShareAcknowledge at epoch 0 are refused; a session
// replaced at epoch 0 leaves its records the member's, to acknowledge in
// the new one; released records come back with a higher delivery count;
// an ack of a record not held is INVALID_RECORD_STATE; closing with epoch
// -1 applies the acks and releases the rest, and a dropped connection
// releases its session's records.
func TestShareFetchSessions(t *testing.T) {
	e := newACLEnv(t, func(o *Options) { o.ACLsEnabled = false })
	e.topic("sf", 1, nil)
	cl := e.client("c")
	setShareReset(t, cl, "sg")
	for i := range 10 { // ten batches of one record
		if err := produceOne(t, cl, "sf", strconv.Itoa(i)); err != nil {
			t.Fatal(err)
		}
	}
	topicID := e.topicID("sf")
	hb := send[*kmsg.ShareGroupHeartbeatResponse](t, cl, shareHeartbeatReq("sg", "m1", 0, "sf"))
	wantCode(t, "join", hb.ErrorCode, nil)

	fetch := func(cl *kgo.Client, member string, epoch int32, maxRecords int32, acks ...kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch) *kmsg.ShareFetchResponse {
		t.Helper()
		req := kmsg.NewPtrShareFetchRequest()
		req.Version = 2
		req.GroupID, req.MemberID = kmsg.StringPtr("sg"), kmsg.StringPtr(member)
		req.ShareSessionEpoch, req.MaxWaitMillis, req.MaxBytes, req.MaxRecords, req.BatchSize = epoch, 0, 1<<20, maxRecords, maxRecords
		rt := kmsg.NewShareFetchRequestTopic()
		rt.TopicID = topicID
		rp := kmsg.NewShareFetchRequestTopicPartition()
		rp.AcknowledgementBatches = acks
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		return send[*kmsg.ShareFetchResponse](t, cl, req)
	}
	ack := func(first, last int64, typ int8) kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch {
		return kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch{FirstOffset: first, LastOffset: last, AcknowledgeTypes: []int8{typ}}
	}
	acquired := func(r *kmsg.ShareFetchResponse) []kmsg.ShareFetchResponseTopicPartitionAcquiredRecord {
		t.Helper()
		wantCode(t, "share fetch", r.ErrorCode, nil)
		var out []kmsg.ShareFetchResponseTopicPartitionAcquiredRecord
		for _, tp := range r.Topics {
			for _, p := range tp.Partitions {
				wantCode(t, "share fetch partition", p.ErrorCode, nil)
				out = append(out, p.AcquiredRecords...)
			}
		}
		return out
	}
	ackCode := func(r *kmsg.ShareFetchResponse) int16 {
		t.Helper()
		if len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
			t.Fatalf("want one partition: %+v", r)
		}
		return r.Topics[0].Partitions[0].AcknowledgeErrorCode
	}

	// Acks in a new session are INVALID_REQUEST.
	wantCode(t, "acks at epoch 0", fetch(cl, "m1", 0, 5, ack(0, 0, 1)).ErrorCode, kerr.InvalidRequest)
	r := fetch(cl, "m1", 0, 5)
	if got := acquired(r); len(got) != 1 || got[0].FirstOffset != 0 || got[0].LastOffset != 4 || got[0].DeliveryCount != 1 || r.AcquisitionLockTimeoutMillis != 30000 {
		t.Fatalf("first fetch acquired %+v (lock %d)", got, r.AcquisitionLockTimeoutMillis)
	}
	if len(r.Topics[0].Partitions[0].Records) == 0 {
		t.Fatal("first fetch: no record bytes")
	}
	wantCode(t, "epoch 0 again is a new session, not an error", fetch(cl, "m1", 0, 0).ErrorCode, nil)
	wantCode(t, "stale epoch", fetch(cl, "m1", 2, 5).ErrorCode, kerr.InvalidShareSessionEpoch)
	wantCode(t, "no session", fetch(cl, "m2", 1, 5).ErrorCode, kerr.ShareSessionNotFound)

	// The replaced session's records stay m1's (as in Kafka: the client
	// may hold them still): the new session gets the next ones.
	epoch := int32(1)
	if got := acquired(fetch(cl, "m1", epoch, 5)); len(got) != 1 || got[0].FirstOffset != 5 || got[0].LastOffset != 9 {
		t.Fatalf("after the session was replaced: %+v", got)
	}
	epoch++
	// m1 acknowledges the old session's records in the new one: release
	// 0, accept 1-4; 0 comes back with count 2.
	r = fetch(cl, "m1", epoch, 1, ack(0, 0, 2), ack(1, 4, 1))
	epoch++
	wantCode(t, "ack", ackCode(r), nil)
	if got := acquired(r); len(got) != 1 || got[0].FirstOffset != 0 || got[0].LastOffset != 0 || got[0].DeliveryCount != 2 {
		t.Fatalf("released record: %+v", got)
	}
	// Accepting 1 again: not held, INVALID_RECORD_STATE, and nothing of
	// the call's acks applies.
	r = fetch(cl, "m1", epoch, 0, ack(0, 0, 1), ack(1, 1, 1))
	epoch++
	wantCode(t, "ack of an accepted record", ackCode(r), kerr.InvalidRecordState)

	// ShareAcknowledge: epoch 0 refused; the current epoch accepts 0.
	sack := func(epoch int32, first, last int64, typ int8) *kmsg.ShareAcknowledgeResponse {
		t.Helper()
		req := kmsg.NewPtrShareAcknowledgeRequest()
		req.Version = 2
		req.GroupID, req.MemberID, req.ShareSessionEpoch = kmsg.StringPtr("sg"), kmsg.StringPtr("m1"), epoch
		rt := kmsg.NewShareAcknowledgeRequestTopic()
		rt.TopicID = topicID
		rp := kmsg.NewShareAcknowledgeRequestTopicPartition()
		rp.AcknowledgementBatches = []kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch{{FirstOffset: first, LastOffset: last, AcknowledgeTypes: []int8{typ}}}
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		return send[*kmsg.ShareAcknowledgeResponse](t, cl, req)
	}
	wantCode(t, "ShareAcknowledge at epoch 0", sack(0, 0, 0, 1).ErrorCode, kerr.InvalidShareSessionEpoch)
	a := sack(epoch, 0, 0, 1)
	epoch++
	wantCode(t, "ShareAcknowledge", a.ErrorCode, nil)
	if a.AcquisitionLockTimeoutMillis != 30000 || a.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("ShareAcknowledge: %+v", a)
	}

	// Close the session with epoch -1 accepting 5: 6-9 come back (their
	// count kept, as Kafka 4.4's releaseAcquiredRecords), through a new
	// session.
	wantCode(t, "close", sack(-1, 5, 5, 1).ErrorCode, nil)
	var again []kmsg.ShareFetchResponseTopicPartitionAcquiredRecord
	cl2 := e.client("c2")
	epoch = 0
	checkFor(t, 5*time.Second, func() bool {
		again = acquired(fetch(cl2, "m1", epoch, 100))
		epoch++
		return len(again) > 0
	})
	if again[0].FirstOffset != 6 || again[len(again)-1].LastOffset != 9 || again[0].DeliveryCount != 2 {
		t.Fatalf("after close: %+v", again)
	}

	// A dropped connection releases its session's records. The broker
	// must have seen the drop before the member opens a session elsewhere:
	// an epoch-0 session of the same member replaces the old one and takes
	// it off the dropped connection, which then releases nothing (as Kafka
	// 4.4), and the records wait for their lock to expire.
	evicted := e.b.shares.evictions.Load()
	cl2.Close()
	checkFor(t, 5*time.Second, func() bool { return e.b.shares.evictions.Load() > evicted })
	cl3 := e.client("c3")
	epoch = 0
	checkFor(t, 5*time.Second, func() bool {
		again = acquired(fetch(cl3, "m1", epoch, 100))
		epoch++
		return len(again) > 0
	})
	if again[0].FirstOffset != 6 || again[0].DeliveryCount != 3 {
		t.Fatalf("after the connection dropped: %+v", again)
	}
}

// shareFetchReq is a ShareFetch v2 of group sg by member at epoch for
// partition 0 of topic, with acks.
func shareFetchReq(member string, epoch int32, topic [16]byte, acks ...kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch) *kmsg.ShareFetchRequest {
	req := kmsg.NewPtrShareFetchRequest()
	req.Version = 2
	req.GroupID, req.MemberID = kmsg.StringPtr("sg"), kmsg.StringPtr(member)
	req.ShareSessionEpoch, req.MaxBytes, req.MaxRecords, req.BatchSize = epoch, 1<<20, 10, 10
	rt := kmsg.NewShareFetchRequestTopic()
	rt.TopicID = topic
	rp := kmsg.NewShareFetchRequestTopicPartition()
	rp.AcknowledgementBatches = acks
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

// TestShareFetchErrors: the requests Kafka refuses, with its codes, and
// the session cache's limit.
func TestShareFetchErrors(t *testing.T) {
	e := newACLEnv(t, func(o *Options) { o.ACLsEnabled = false; o.MaxShareSessions = 1 })
	e.topic("sf", 1, nil)
	cl := e.client("c")
	id := e.topicID("sf")
	renewAck := kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch{FirstOffset: 0, LastOffset: 0, AcknowledgeTypes: []int8{4}}
	for _, c := range []struct {
		name string
		req  func() *kmsg.ShareFetchRequest
		want *kerr.Error
	}{
		{"null group", func() *kmsg.ShareFetchRequest { r := shareFetchReq("m", 0, id); r.GroupID = nil; return r }, kerr.InvalidRequest},
		{"empty member", func() *kmsg.ShareFetchRequest { return shareFetchReq("", 0, id) }, kerr.InvalidRequest},
		{"member id over 36 characters", func() *kmsg.ShareFetchRequest { return shareFetchReq(strings.Repeat("m", 37), 0, id) }, kerr.InvalidRequest},
		{"epoch -2", func() *kmsg.ShareFetchRequest { return shareFetchReq("m", -2, id) }, kerr.InvalidShareSessionEpoch},
		{"renew with records to fetch", func() *kmsg.ShareFetchRequest {
			r := shareFetchReq("m", 1, id, renewAck)
			r.IsRenewAck = true
			return r
		}, kerr.InvalidRequest},
		{"final fetch forgetting", func() *kmsg.ShareFetchRequest {
			r := shareFetchReq("m", -1, id, renewAck)
			r.ForgottenTopicsData = []kmsg.ShareFetchRequestForgottenTopicsData{{TopicID: id, Partitions: []int32{0}}}
			return r
		}, kerr.InvalidRequest},
		{"final fetch adding a partition", func() *kmsg.ShareFetchRequest { return shareFetchReq("m", -1, id) }, kerr.InvalidRequest},
		{"no session", func() *kmsg.ShareFetchRequest { return shareFetchReq("m", 3, id) }, kerr.ShareSessionNotFound},
		{"first session", func() *kmsg.ShareFetchRequest { return shareFetchReq("m", 0, id) }, nil},
		{"a second session past the limit", func() *kmsg.ShareFetchRequest { return shareFetchReq("m2", 0, id) }, kerr.ShareSessionLimitReached},
		{"the first member's new session replaces its old one", func() *kmsg.ShareFetchRequest { return shareFetchReq("m", 0, id) }, nil},
	} {
		wantCode(t, c.name, send[*kmsg.ShareFetchResponse](t, cl, c.req()).ErrorCode, c.want)
	}
	// A renewal piggybacked on a fetch fails the partition's acks.
	r := send[*kmsg.ShareFetchResponse](t, cl, shareFetchReq("m", 1, id, renewAck))
	wantCode(t, "renew on a fetch", r.ErrorCode, nil)
	if len(r.Topics) != 1 || r.Topics[0].Partitions[0].AcknowledgeErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("renew on a fetch: %+v", r)
	}
	// An unknown topic id is the partition's UNKNOWN_TOPIC_ID.
	r = send[*kmsg.ShareFetchResponse](t, cl, shareFetchReq("m", 2, [16]byte{1}))
	if len(r.Topics) != 1 || r.Topics[0].Partitions[0].ErrorCode != kerr.UnknownTopicID.Code {
		t.Fatalf("unknown topic: %+v", r)
	}
	// ShareAcknowledge's own: epoch 0, and no session.
	sack := kmsg.NewPtrShareAcknowledgeRequest()
	sack.Version, sack.GroupID, sack.MemberID = 2, kmsg.StringPtr("sg"), kmsg.StringPtr("m")
	wantCode(t, "ShareAcknowledge at epoch 0", send[*kmsg.ShareAcknowledgeResponse](t, cl, sack).ErrorCode, kerr.InvalidShareSessionEpoch)
	sack.MemberID, sack.ShareSessionEpoch = kmsg.StringPtr("m3"), 1
	wantCode(t, "ShareAcknowledge without a session", send[*kmsg.ShareAcknowledgeResponse](t, cl, sack).ErrorCode, kerr.ShareSessionNotFound)
}

// TestACLShareFetch: ShareFetch and ShareAcknowledge need GROUP READ
// (else GROUP_AUTHORIZATION_FAILED) and TOPIC READ on each topic (else the
// partition's TOPIC_AUTHORIZATION_FAILED), as Kafka.
func TestACLShareFetch(t *testing.T) {
	e := newACLEnv(t)
	e.topic("t", 1, nil)
	id := e.topicID("t")
	alice := e.client("alice")
	sack := kmsg.NewPtrShareAcknowledgeRequest()
	sack.Version, sack.GroupID, sack.MemberID, sack.ShareSessionEpoch = 2, kmsg.StringPtr("sg"), kmsg.StringPtr("m"), 1
	wantCode(t, "fetch without GROUP READ", send[*kmsg.ShareFetchResponse](t, alice, shareFetchReq("m", 0, id)).ErrorCode, kerr.GroupAuthorizationFailed)
	wantCode(t, "acknowledge without GROUP READ", send[*kmsg.ShareAcknowledgeResponse](t, alice, sack).ErrorCode, kerr.GroupAuthorizationFailed)
	e.grant(kadm.NewACLs().Groups("sg").Allow("User:alice").Operations(kadm.OpRead))
	r := send[*kmsg.ShareFetchResponse](t, alice, shareFetchReq("m", 0, id))
	if r.ErrorCode != 0 || len(r.Topics) != 1 || r.Topics[0].Partitions[0].ErrorCode != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("fetch without TOPIC READ: %+v", r)
	}
	e.grant(kadm.NewACLs().Topics("t").Allow("User:alice").Operations(kadm.OpRead))
	r = send[*kmsg.ShareFetchResponse](t, alice, shareFetchReq("m", 0, id))
	if r.ErrorCode != 0 || len(r.Topics) != 1 || r.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("fetch: %+v", r)
	}
}

// TestShareFetchIncremental: a session's later fetches answer only the
// partitions with records, an error, an acknowledgement outcome, or new to
// the session; forgetting a partition leaves its records the member's.
func TestShareFetchIncremental(t *testing.T) {
	e := newACLEnv(t, func(o *Options) { o.ACLsEnabled = false })
	e.topic("si", 2, nil)
	cl := e.client("c")
	setShareReset(t, cl, "sg")
	id := e.topicID("si")
	for _, m := range []string{"m1", "m2"} {
		wantCode(t, m+" joins", send[*kmsg.ShareGroupHeartbeatResponse](t, cl, shareHeartbeatReq("sg", m, 0, "si")).ErrorCode, nil)
	}
	fetch := func(member string, epoch int32, parts []int32, forget []int32) *kmsg.ShareFetchResponse {
		t.Helper()
		req := shareFetchReq(member, epoch, id)
		req.Topics[0].Partitions = nil
		for _, p := range parts {
			rp := kmsg.NewShareFetchRequestTopicPartition()
			rp.Partition = p
			req.Topics[0].Partitions = append(req.Topics[0].Partitions, rp)
		}
		if forget != nil {
			req.ForgottenTopicsData = []kmsg.ShareFetchRequestForgottenTopicsData{{TopicID: id, Partitions: forget}}
		}
		r := send[*kmsg.ShareFetchResponse](t, cl, req)
		wantCode(t, "share fetch", r.ErrorCode, nil)
		return r
	}
	answered := func(r *kmsg.ShareFetchResponse) map[int32]int {
		out := map[int32]int{}
		for _, tp := range r.Topics {
			for _, p := range tp.Partitions {
				out[p.Partition] = len(p.AcquiredRecords)
			}
		}
		return out
	}
	// The first fetch answers both partitions, with nothing yet.
	if got := answered(fetch("m1", 0, []int32{0, 1}, nil)); len(got) != 2 {
		t.Fatalf("full fetch answered %v", got)
	}
	if err := e.client("p", kgo.DefaultProduceTopic("si"), kgo.RecordPartitioner(kgo.ManualPartitioner())).ProduceSync(t.Context(),
		&kgo.Record{Value: []byte("x"), Partition: 0}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	// Only partition 0 has records: partition 1 is left out.
	var got map[int32]int
	epoch := int32(1)
	checkFor(t, 5*time.Second, func() bool {
		got = answered(fetch("m1", epoch, nil, nil))
		epoch++
		return got[0] > 0
	})
	if len(got) != 1 {
		t.Fatalf("incremental fetch answered %v, want partition 0 only", got)
	}
	if got := answered(fetch("m1", epoch, nil, nil)); len(got) != 0 {
		t.Fatalf("a fetch with nothing new answered %v", got)
	}
	epoch++
	// Forgetting partition 0 leaves its record m1's, as in Kafka: m2 gets
	// nothing, and m1 still accepts it.
	if got := answered(fetch("m1", epoch, nil, []int32{0})); len(got) != 0 {
		t.Fatalf("forgetting answered %v", got)
	}
	epoch++
	if got := answered(fetch("m2", 0, []int32{0}, nil)); got[0] != 0 {
		t.Fatalf("m2 acquired a record m1 holds: %v", got)
	}
	sack := kmsg.NewPtrShareAcknowledgeRequest()
	sack.Version, sack.GroupID, sack.MemberID, sack.ShareSessionEpoch = 2, kmsg.StringPtr("sg"), kmsg.StringPtr("m1"), epoch
	sack.Topics = []kmsg.ShareAcknowledgeRequestTopic{{TopicID: id, Partitions: []kmsg.ShareAcknowledgeRequestTopicPartition{{
		Partition: 0, AcknowledgementBatches: []kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch{{FirstOffset: 0, LastOffset: 0, AcknowledgeTypes: []int8{1}}}}}}}
	if a := send[*kmsg.ShareAcknowledgeResponse](t, cl, sack); a.ErrorCode != 0 || a.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("m1 accepts the forgotten partition's record: %+v", a)
	}
}
