package e2e

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-io/floe/broker"
	"github.com/floe-io/floe/internal/testkit/floetest"
	"github.com/floe-io/floe/node"
	"github.com/floe-io/floe/record"
)

// produceRaw sends one Produce request with records for topic/partition and
// returns the partition's error code.
func produceRaw(t *testing.T, cl *kgo.Client, topic string, partition int32, records []byte) int16 {
	t.Helper()
	req := kmsg.NewPtrProduceRequest()
	req.Acks = -1
	req.TimeoutMillis = 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition = partition
	rp.Records = records
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(context.Background(), cl)
	if err != nil {
		t.Fatalf("produce: %v", err)
	}
	return resp.Topics[0].Partitions[0].ErrorCode
}

func buildBatch(t *testing.T, value []byte) []byte {
	t.Helper()
	b, err := record.Build(record.BuildOptions{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, BaseTimestamp: time.Now().UnixMilli()},
		[]record.Record{{Key: []byte("k"), Value: value}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestProduceBadInput checks the error codes Apache Kafka answers for bad
// produce input, through a real client connection.
func TestProduceBadInput(t *testing.T) {
	n := floetest.StartNode(t, node.Config{Broker: broker.Options{MaxRequestBytes: 1 << 20}})
	adm := newAdmin(t, n.KafkaAddr())
	ctx := context.Background()
	if _, err := adm.CreateTopic(ctx, 2, 1, map[string]*string{"max.message.bytes": ptr("2000")}, "small"); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"cleanup.policy": ptr("compact")}, "compacted"); err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.KafkaAddr()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()

	good := buildBatch(t, []byte("v"))
	corrupt := append([]byte(nil), good...)
	corrupt[len(corrupt)-1] ^= 0xff // breaks the CRC
	magic1 := append([]byte(nil), good...)
	magic1[16] = 1
	keyless, err := record.Build(record.BuildOptions{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}, []record.Record{{Value: []byte("v")}})
	if err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name      string
		topic     string
		partition int32
		records   []byte
		want      int16
	}{
		{"good batch", "small", 0, good, 0},
		{"unknown topic", "nope", 0, good, kerr.UnknownTopicOrPartition.Code},
		{"unknown partition", "small", 7, good, kerr.UnknownTopicOrPartition.Code},
		{"batch over max.message.bytes", "small", 1, buildBatch(t, make([]byte, 4000)), kerr.MessageTooLarge.Code},
		{"bad crc", "small", 0, corrupt, kerr.CorruptMessage.Code},
		{"truncated batch", "small", 0, good[:30], kerr.CorruptMessage.Code},
		{"magic 1", "small", 0, magic1, kerr.UnsupportedForMessageFormat.Code},
		{"keyless record on compacted topic", "compacted", 0, keyless, kerr.InvalidRecord.Code},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := produceRaw(t, cl, tt.topic, tt.partition, tt.records); got != tt.want {
				t.Fatalf("error code %d (%v), want %d (%v)", got, kerr.ErrorForCode(got), tt.want, kerr.ErrorForCode(tt.want))
			}
		})
	}

	// An oversized frame closes that connection and nothing else.
	bad, err := net.Dial("tcp", n.KafkaAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer bad.Close()
	var size [4]byte
	binary.BigEndian.PutUint32(size[:], 2<<20)
	bad.Write(size[:])
	bad.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := bad.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("oversized frame: read = %v, want EOF (connection closed)", err)
	}
	if got := produceRaw(t, cl, "small", 0, good); got != 0 {
		t.Fatalf("produce after another connection's bad frame: %v", kerr.ErrorForCode(got))
	}
}

func ptr[T any](v T) *T { return &v }
