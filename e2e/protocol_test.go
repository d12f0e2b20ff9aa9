package e2e

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-io/floe/broker"
	"github.com/floe-io/floe/internal/testkit"
	"github.com/floe-io/floe/internal/testkit/floetest"
	"github.com/floe-io/floe/node"
	"github.com/floe-io/floe/record"
)

// rawRoundTrip writes one request frame on c and reads one response body
// (after the correlation id).
func rawRoundTrip(t testing.TB, c net.Conn, rd *bufio.Reader, key, version int16, corr int32, body []byte) []byte {
	t.Helper()
	var b []byte
	b = binary.BigEndian.AppendUint32(b, 0)
	b = binary.BigEndian.AppendUint16(b, uint16(key))
	b = binary.BigEndian.AppendUint16(b, uint16(version))
	b = binary.BigEndian.AppendUint32(b, uint32(corr))
	b = binary.BigEndian.AppendUint16(b, 0xffff) // null client id
	if key == int16(kmsg.ApiVersions) && version >= 3 {
		b = append(b, 0) // header tags
	}
	b = append(b, body...)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write(b); err != nil {
		t.Fatal(err)
	}
	var size [4]byte
	if _, err := io.ReadFull(rd, size[:]); err != nil {
		t.Fatalf("read response: %v", err)
	}
	resp := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(rd, resp); err != nil {
		t.Fatal(err)
	}
	if got := int32(binary.BigEndian.Uint32(resp)); got != corr {
		t.Fatalf("correlation id %d, want %d", got, corr)
	}
	return resp[4:]
}

// A client asking ApiVersions at a version newer than served gets a v0
// answer with UNSUPPORTED_VERSION and our range, and the connection stays
// open for the retry at a served version (KIP-511).
func TestApiVersionsNewerThanServed(t *testing.T) {
	n := floetest.StartNode(t, node.Config{})
	c, err := net.Dial("tcp", n.KafkaAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	rd := bufio.NewReader(c)

	body := rawRoundTrip(t, c, rd, int16(kmsg.ApiVersions), 99, 1, []byte{0, 0, 0}) // v99 body is opaque to us
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.Version = 0
	if err := resp.ReadFrom(body); err != nil {
		t.Fatalf("decode v0 answer: %v", err)
	}
	if resp.ErrorCode != kerr.UnsupportedVersion.Code || len(resp.ApiKeys) != 1 || resp.ApiKeys[0].ApiKey != int16(kmsg.ApiVersions) {
		t.Fatalf("answer %+v, want UNSUPPORTED_VERSION with the ApiVersions range", resp)
	}
	maxV := resp.ApiKeys[0].MaxVersion

	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = maxV
	req.ClientSoftwareName, req.ClientSoftwareVersion = "floe-test", "1"
	body = rawRoundTrip(t, c, rd, int16(kmsg.ApiVersions), maxV, 2, req.AppendTo(nil))
	resp = kmsg.NewPtrApiVersionsResponse()
	resp.Version = maxV
	if err := resp.ReadFrom(body); err != nil {
		t.Fatalf("decode v%d answer: %v", maxV, err)
	}
	if resp.ErrorCode != 0 || len(resp.ApiKeys) < 10 {
		t.Fatalf("retry at v%d: error %d, %d apis", maxV, resp.ErrorCode, len(resp.ApiKeys))
	}
}

// A retried idempotent batch is answered with its original offset and is
// stored once.
func TestIdempotentRetryGetsOriginalOffset(t *testing.T) {
	n := floetest.StartNode(t, node.Config{})
	adm := newAdmin(t, n.KafkaAddr())
	ctx := context.Background()
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "idem"); err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.KafkaAddr()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	initResp, err := kmsg.NewPtrInitProducerIDRequest().RequestWith(ctx, cl)
	if err != nil || initResp.ErrorCode != 0 {
		t.Fatalf("init producer id: %v %v", err, kerr.ErrorForCode(initResp.ErrorCode))
	}
	batch := func(seq int32, n int) []byte {
		recs := make([]record.Record, n)
		for i := range recs {
			recs[i] = record.Record{Key: []byte("k"), Value: []byte{byte(seq), byte(i)}}
		}
		b, err := record.Build(record.BuildOptions{ProducerID: initResp.ProducerID, ProducerEpoch: initResp.ProducerEpoch,
			BaseSequence: seq, BaseTimestamp: time.Now().UnixMilli()}, recs)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	produce := func(records []byte) (int64, int16) {
		req := kmsg.NewPtrProduceRequest()
		req.Acks, req.TimeoutMillis = -1, 5000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = "idem"
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = records
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		p := resp.Topics[0].Partitions[0]
		return p.BaseOffset, p.ErrorCode
	}
	first, second := batch(0, 3), batch(3, 2)
	steps := []struct {
		name       string
		records    []byte
		wantOffset int64
		wantCode   int16
	}{
		{"first", first, 0, 0},
		{"second", second, 3, 0},
		{"retry of first", first, 0, 0},
		{"retry of second", second, 3, 0},
		{"gap in sequence", batch(9, 1), -1, kerr.OutOfOrderSequenceNumber.Code},
		{"next", batch(5, 1), 5, 0},
	}
	for _, s := range steps {
		off, code := produce(s.records)
		if code != s.wantCode || (code == 0 && off != s.wantOffset) {
			t.Fatalf("%s: offset %d code %v, want %d %v", s.name, off, kerr.ErrorForCode(code), s.wantOffset, kerr.ErrorForCode(s.wantCode))
		}
	}
	end, err := adm.ListEndOffsets(ctx, "idem")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := end.Lookup("idem", 0); o.Offset != 6 {
		t.Fatalf("log end %d, want 6: a retried batch was stored twice", o.Offset)
	}
}

// A fetch parked at the log end is woken by a commit: it answers with the
// new record long before its MaxWait; and acks=0 records are stored too.
func TestFetchLongPollWakesAndAcksZero(t *testing.T) {
	n := floetest.StartNode(t, node.Config{})
	adm := newAdmin(t, n.KafkaAddr())
	ctx := context.Background()
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "wake"); err != nil {
		t.Fatal(err)
	}
	const maxWait = 30 * time.Second
	consumer, err := kgo.NewClient(kgo.SeedBrokers(n.KafkaAddr()), kgo.FetchMaxWait(maxWait),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"wake": {0: kgo.NewOffset().AtEnd()}}))
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()
	producer, err := kgo.NewClient(kgo.SeedBrokers(n.KafkaAddr()), kgo.RequiredAcks(kgo.NoAck()), kgo.DisableIdempotentWrite(),
		kgo.DefaultProduceTopic("wake"))
	if err != nil {
		t.Fatal(err)
	}
	defer producer.Close()

	got := make(chan *kgo.Record, 1)
	go func() {
		pctx, cancel := context.WithTimeout(ctx, maxWait+10*time.Second)
		defer cancel()
		for pctx.Err() == nil {
			fs := consumer.PollFetches(pctx)
			if rs := fs.Records(); len(rs) > 0 {
				got <- rs[0]
				return
			}
		}
	}()
	// The consumer's fetch is parked at the log end before the produce.
	testkit.CheckFor(t, 10*time.Second, time.Millisecond, func() error {
		if n.Broker().ParkedFetches() == 0 {
			return errors.New("no fetch parked")
		}
		return nil
	})
	start := time.Now()
	if err := producer.ProduceSync(ctx, &kgo.Record{Value: []byte("wake up")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-got:
		if string(r.Value) != "wake up" || r.Offset != 0 {
			t.Fatalf("got %q at %d", r.Value, r.Offset)
		}
		t.Logf("record reached the parked consumer %s after produce (acks=0)", time.Since(start))
		if time.Since(start) > maxWait/2 {
			t.Fatalf("the parked fetch was not woken by the commit")
		}
	case <-time.After(maxWait + 10*time.Second):
		t.Fatal("the acks=0 record never reached the consumer")
	}
}

// Metadata creates missing topics only when the broker switch is on and
// the client allows it.
func TestMetadataAutoCreate(t *testing.T) {
	tests := []struct {
		name        string
		brokerAllow bool
		clientAllow bool
		wantCreated bool
	}{
		{"switch off", false, true, false},
		{"client forbids", true, false, false},
		{"both allow", true, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := floetest.StartNode(t, node.Config{Broker: broker.Options{AutoCreateTopics: tt.brokerAllow}})
			cl, err := kgo.NewClient(kgo.SeedBrokers(n.KafkaAddr()))
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			req := kmsg.NewPtrMetadataRequest()
			topic := "auto"
			rt := kmsg.NewMetadataRequestTopic()
			rt.Topic = &topic
			req.Topics = append(req.Topics, rt)
			req.AllowAutoTopicCreation = tt.clientAllow
			resp, err := req.RequestWith(context.Background(), cl)
			if err != nil {
				t.Fatal(err)
			}
			code := resp.Topics[0].ErrorCode
			if created := code == 0; created != tt.wantCreated {
				t.Fatalf("error code %v, want created=%v", kerr.ErrorForCode(code), tt.wantCreated)
			}
			if !tt.wantCreated && code != kerr.UnknownTopicOrPartition.Code {
				t.Fatalf("error code %v, want UNKNOWN_TOPIC_OR_PARTITION", kerr.ErrorForCode(code))
			}
			if tt.wantCreated && (len(resp.Topics[0].Partitions) != 1 || resp.Topics[0].TopicID == [16]byte{}) {
				t.Fatalf("created topic: %d partitions, id %x", len(resp.Topics[0].Partitions), resp.Topics[0].TopicID)
			}
		})
	}
}

// Produce reads topics from the broker's cache (no coordinator round trip
// on the connection's read loop), yet a change made through the broker is
// seen by the next produce at once: cleanup.policy=compact turned on, a
// keyless record is refused (INVALID_RECORD) right away, not after the
// cache's expiry.
func TestProduceSeesTopicChangeAtOnce(t *testing.T) {
	n := floetest.StartNode(t, node.Config{})
	adm := newAdmin(t, n.KafkaAddr())
	ctx := context.Background()
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "changing"); err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.KafkaAddr()), kgo.DefaultProduceTopic("changing"),
		kgo.RecordRetries(0), kgo.ProducerLinger(0))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("keyless, fine")}).FirstErr(); err != nil {
		t.Fatalf("keyless record on a delete topic: %v", err)
	}
	alterTopicConfigs(t, ctx, adm, "changing", "cleanup.policy", "compact")
	err = cl.ProduceSync(ctx, &kgo.Record{Value: []byte("keyless, refused")}).FirstErr()
	if !errors.Is(err, kerr.InvalidRecord) {
		t.Fatalf("keyless record right after cleanup.policy=compact: %v, want INVALID_RECORD", err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Key: []byte("k"), Value: []byte("keyed")}).FirstErr(); err != nil {
		t.Fatalf("keyed record on the compacted topic: %v", err)
	}
}
