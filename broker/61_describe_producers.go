package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-io/floe/coordapi"
)

// DescribeProducers: v0 (flexible). The producers with state on each
// partition (id, epoch, last sequence and timestamp, open transaction's
// first offset), for kafka-transactions.sh describe-producers and kadm:
// what finds a hanging transaction. It needs TOPIC READ.
func init() { register(kmsg.DescribeProducers, 0, 0, (*Broker).handleDescribeProducers) }

func (b *Broker) handleDescribeProducers(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.req.(*kmsg.DescribeProducersRequest)
	resp := req.ResponseKind().(*kmsg.DescribeProducersResponse)
	for _, rt := range req.Topics {
		st := kmsg.NewDescribeProducersResponseTopic()
		st.Topic = rt.Topic
		var code int16
		t, err := b.topics.ByName(ctx, rt.Topic)
		switch {
		case !b.authorizedTopic(r, kmsg.ACLOperationRead, rt.Topic):
			code = kerr.TopicAuthorizationFailed.Code
		case err != nil:
			code = coordapi.ErrorCode(err)
		}
		for _, p := range rt.Partitions {
			sp := kmsg.NewDescribeProducersResponseTopicPartition()
			sp.Partition = p
			if code != 0 {
				sp.ErrorCode = code
				st.Partitions = append(st.Partitions, sp)
				continue
			}
			prods, err := b.coord.DescribeProducers(ctx, dataID(t), p)
			if err != nil {
				sp.ErrorCode = coordapi.ErrorCode(err)
				sp.ErrorMessage = errorMessage(err)
			}
			for _, pd := range prods {
				ap := kmsg.NewDescribeProducersResponseTopicPartitionActiveProducer()
				ap.ProducerID, ap.ProducerEpoch, ap.LastSequence = pd.ProducerID, int32(pd.ProducerEpoch), pd.LastSequence
				ap.LastTimestamp, ap.CoordinatorEpoch, ap.CurrentTxnStartOffset = pd.LastTimestamp, pd.CoordinatorEpoch, pd.CurrentTxnStartOffset
				sp.ActiveProducers = append(sp.ActiveProducers, ap)
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}
