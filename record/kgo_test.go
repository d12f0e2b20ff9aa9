package record

// A real franz-go producer against a minimal in-process Kafka endpoint: every batch it
// sends, with each codec, with and without streaming compression (which frames snappy
// as xerial and merges batches), must pass Validate and the produce path's record check
// and decode with Records to exactly the records produced.

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// produceSink is a Kafka endpoint that answers ApiVersions, Metadata, InitProducerID
// and Produce for one partition of topic "t", and keeps each produced batch.
type produceSink struct {
	ln net.Listener

	mu      sync.Mutex
	batches [][]byte
	next    int64
}

func newProduceSink(t *testing.T) *produceSink {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &produceSink{ln: ln}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer c.Close()
				if err := s.serve(c); err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
					t.Errorf("sink: %v", err)
				}
			})
		}
	})
	return s
}

func (s *produceSink) serve(c net.Conn) error {
	for {
		var size [4]byte
		if _, err := io.ReadFull(c, size[:]); err != nil {
			return err
		}
		buf := make([]byte, binary.BigEndian.Uint32(size[:]))
		if _, err := io.ReadFull(c, buf); err != nil {
			return err
		}
		key, ver := int16(binary.BigEndian.Uint16(buf)), int16(binary.BigEndian.Uint16(buf[2:]))
		corr := binary.BigEndian.Uint32(buf[4:])
		at := 10
		if n := int16(binary.BigEndian.Uint16(buf[8:])); n > 0 {
			at += int(n)
		}
		req := kmsg.RequestForKey(key)
		if req == nil {
			return fmt.Errorf("unknown key %d", key)
		}
		req.SetVersion(ver)
		if req.IsFlexible() { // skip the header's tagged fields
			tags, n := binary.Uvarint(buf[at:])
			at += n
			for range tags {
				_, n = binary.Uvarint(buf[at:])
				at += n
				l, n := binary.Uvarint(buf[at:])
				at += n + int(l)
			}
		}
		if err := req.ReadFrom(buf[at:]); err != nil {
			return fmt.Errorf("key %d v%d: %w", key, ver, err)
		}
		resp, err := s.handle(req)
		if err != nil {
			return err
		}
		resp.SetVersion(ver)
		out := binary.BigEndian.AppendUint32(make([]byte, 4), corr)
		if resp.IsFlexible() && key != 18 { // ApiVersions responses keep the v0 header
			out = append(out, 0)
		}
		out = resp.AppendTo(out)
		binary.BigEndian.PutUint32(out, uint32(len(out)-4))
		if _, err := c.Write(out); err != nil {
			return err
		}
	}
}

func (s *produceSink) handle(req kmsg.Request) (kmsg.Response, error) {
	switch req := req.(type) {
	case *kmsg.ApiVersionsRequest:
		resp := req.ResponseKind().(*kmsg.ApiVersionsResponse)
		for _, k := range []struct{ key, min, max int16 }{{0, 3, 11}, {3, 1, 12}, {18, 0, 3}, {22, 0, 4}} {
			resp.ApiKeys = append(resp.ApiKeys, kmsg.ApiVersionsResponseApiKey{ApiKey: k.key, MinVersion: k.min, MaxVersion: k.max})
		}
		return resp, nil
	case *kmsg.MetadataRequest:
		resp := req.ResponseKind().(*kmsg.MetadataResponse)
		host, port, _ := net.SplitHostPort(s.ln.Addr().String())
		p, _ := strconv.Atoi(port)
		resp.Brokers = []kmsg.MetadataResponseBroker{{NodeID: 0, Host: host, Port: int32(p)}}
		part := kmsg.NewMetadataResponseTopicPartition()
		part.Leader, part.Replicas, part.ISR = 0, []int32{0}, []int32{0}
		topic := kmsg.NewMetadataResponseTopic()
		topic.Topic, topic.TopicID = kmsg.StringPtr("t"), [16]byte{1}
		topic.Partitions = []kmsg.MetadataResponseTopicPartition{part}
		resp.Topics = []kmsg.MetadataResponseTopic{topic}
		return resp, nil
	case *kmsg.InitProducerIDRequest:
		resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
		resp.ProducerID, resp.ProducerEpoch = 7, 0
		return resp, nil
	case *kmsg.ProduceRequest:
		resp := req.ResponseKind().(*kmsg.ProduceResponse)
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, t := range req.Topics {
			rt := kmsg.NewProduceResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewProduceResponseTopicPartition()
				rp.Partition, rp.BaseOffset = p.Partition, s.next
				batches, err := Split(p.Records)
				if err != nil {
					return nil, err
				}
				for _, b := range batches {
					h, _ := ParseHeader(b)
					s.next += int64(h.NumRecords)
					s.batches = append(s.batches, bytes.Clone(b))
				}
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil
	}
	return nil, fmt.Errorf("unexpected request key %d", req.Key())
}

func TestFranzProducer(t *testing.T) {
	for _, codec := range allCodecs {
		for _, streaming := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/streaming=%v", codec, streaming), func(t *testing.T) {
				// franz-go merges (and frames snappy as xerial) only the
				// batches its sink has not sent yet, which a quick sink
				// can leave none of: a run without a merge is tried
				// again, a few times.
				for attempt := 1; ; attempt++ {
					xerial := produceFranz(t, codec, streaming)
					if codec != CodecSnappy || !streaming || xerial > 0 {
						return
					}
					if attempt == 5 {
						t.Fatal("streaming snappy sent no xerial framed batch in 5 runs")
					}
				}
			})
		}
	}
}

// produceFranz produces sample records through a franz-go client with
// codec (streaming compression when streaming), checks every batch the
// client sent and its records, and returns how many batches were snappy
// with xerial framing.
func produceFranz(t *testing.T, codec Codec, streaming bool) (xerial int) {
	sink := newProduceSink(t)
	opts := []kgo.Opt{
		kgo.SeedBrokers(sink.ln.Addr().String()),
		kgo.DefaultProduceTopic("t"),
		kgo.ProducerBatchCompression(kgoCodec(codec)),
		kgo.ProducerBatchMaxBytes(16 << 10),
		kgo.ManualFlushing(), // everything buffered first, so streaming merges batches
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
	}
	if streaming {
		opts = append(opts, kgo.StreamingCompression())
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()

	base := time.UnixMilli(1_700_000_000_000)
	var want []*kgo.Record
	for i, r := range sampleRecords(400, 200, 30) {
		kr := &kgo.Record{Key: r.Key, Value: r.Value, Timestamp: base.Add(time.Duration(r.TimestampDelta+int64(i)) * time.Millisecond)}
		for _, h := range r.Headers {
			kr.Headers = append(kr.Headers, kgo.RecordHeader{Key: h.Key, Value: h.Value})
		}
		want = append(want, kr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var (
		wg         sync.WaitGroup
		errMu      sync.Mutex
		produceErr error
	)
	for _, r := range want {
		wg.Add(1)
		cl.Produce(ctx, r, func(_ *kgo.Record, err error) {
			defer wg.Done()
			errMu.Lock()
			produceErr = cmp.Or(produceErr, err)
			errMu.Unlock()
		})
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatalf("flush: %v", err)
	}
	wg.Wait()
	if produceErr != nil {
		t.Fatalf("produce: %v", produceErr)
	}

	sink.mu.Lock()
	batches := sink.batches
	sink.mu.Unlock()
	var i, multi int
	for _, b := range batches {
		h, err := Validate(b)
		if err != nil {
			t.Fatalf("batch of franz-go: Validate: %v", err)
		}
		if h.ProducerID != 7 || h.ProducerEpoch != 0 || h.BaseSequence != int32(i) {
			t.Fatalf("producer fields %d/%d/%d at record %d", h.ProducerID, h.ProducerEpoch, h.BaseSequence, i)
		}
		if h.Codec() == CodecSnappy && bytes.HasPrefix(b[HeaderSize:], xerialMagic) {
			xerial++
		}
		if h.NumRecords > 1 {
			multi++
		}
		if err := Records(b, nil); err != nil {
			t.Fatalf("batch of franz-go: the produce check: %v", err)
		}
		err = Records(b, func(r *Record) error {
			w := want[i]
			ts := h.BaseTimestamp + r.TimestampDelta
			if !bytes.Equal(r.Key, w.Key) || !bytes.Equal(r.Value, w.Value) || ts != w.Timestamp.UnixMilli() || len(r.Headers) != len(w.Headers) {
				return fmt.Errorf("record %d: got %s ts %d, want key %q ts %d", i, fmtRecord(r), ts, w.Key, w.Timestamp.UnixMilli())
			}
			for j, hh := range r.Headers {
				if hh.Key != w.Headers[j].Key || !bytes.Equal(hh.Value, w.Headers[j].Value) {
					return fmt.Errorf("record %d header %d", i, j)
				}
			}
			i++
			return nil
		})
		if err != nil {
			t.Fatalf("Records: %v", err)
		}
	}
	if i != len(want) {
		t.Fatalf("decoded %d records, produced %d", i, len(want))
	}
	if multi == 0 {
		t.Fatal("no batch held more than one record")
	}
	t.Logf("%d batches, %d xerial", len(batches), xerial)
	return xerial
}
