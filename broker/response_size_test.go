package broker

import (
	"bytes"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// A Fetch response's size hint covers its framed encoding at every served
// version, so that writeLoop's buffer is allocated once.
func TestResponseSizeHintCoversFetch(t *testing.T) {
	resp := kmsg.NewPtrFetchResponse()
	for ti, name := range []string{"a", "a-much-longer-topic-name-than-the-first"} {
		rt := kmsg.NewFetchResponseTopic()
		rt.Topic = name
		rt.TopicID[0] = byte(ti + 1)
		for p := range 3 {
			rp := kmsg.NewFetchResponseTopicPartition()
			rp.Partition = int32(p)
			rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset = 1<<40, 1<<40, 1<<39
			rp.RecordBatches = bytes.Repeat([]byte{byte(p)}, 1000*(p+1))
			for a := range p {
				at := kmsg.NewFetchResponseTopicPartitionAbortedTransaction()
				at.ProducerID, at.FirstOffset = int64(a)<<50, 1<<45
				rp.AbortedTransactions = append(rp.AbortedTransactions, at)
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	for v := int16(4); v <= 13; v++ {
		inf := &inflight{resp: resp, version: v, flexible: v >= 12, key: int16(kmsg.Fetch)}
		got := len(appendResponse(nil, inf))
		if hint := responseSizeHint(resp); hint < got {
			t.Errorf("v%d: hint %d below the encoded %d bytes", v, hint, got)
		}
	}
	if n := responseSizeHint(kmsg.NewPtrProduceResponse()); n != 0 {
		t.Errorf("produce response hint %d, want 0", n)
	}
}
