package rpc

import (
	"context"

	"github.com/floe-io/floe/coordapi"
)

// The transaction ops (coordinator/txn.go). A producer is its
// transactional id (str), producer id and epoch (varints).
func encTxnProducer(e *encoder, p coordapi.TxnProducer) {
	e.str(p.TransactionalID)
	e.varint(p.ProducerID)
	e.varint(int64(p.ProducerEpoch))
}

func decTxnProducer(d *decoder) coordapi.TxnProducer {
	return coordapi.TxnProducer{TransactionalID: d.str(), ProducerID: d.varint(), ProducerEpoch: d.int16()}
}

func encTopicPartitions(e *encoder, tps []coordapi.TopicPartition) {
	e.uvarint(uint64(len(tps)))
	for _, tp := range tps {
		e.id(tp.TopicID)
		e.varint(int64(tp.Partition))
	}
}

func decTopicPartitions(d *decoder) []coordapi.TopicPartition {
	n := d.count(17)
	if n == 0 {
		return nil
	}
	out := make([]coordapi.TopicPartition, n)
	for i := range out {
		out[i] = coordapi.TopicPartition{TopicID: d.id(), Partition: d.int32()}
	}
	return out
}

// add_partitions_to_txn request: producer, verify only (bool), partitions.
// Reply: an error code per partition (count, varints).
func encAddPartitionsReq(e *encoder, r coordapi.AddPartitionsRequest) {
	encTxnProducer(e, r.TxnProducer)
	e.bool(r.VerifyOnly)
	encTopicPartitions(e, r.Partitions)
}

func decAddPartitionsReq(d *decoder) coordapi.AddPartitionsRequest {
	return coordapi.AddPartitionsRequest{TxnProducer: decTxnProducer(d), VerifyOnly: d.bool(), Partitions: decTopicPartitions(d)}
}

func encCodes(e *encoder, codes []int16) {
	e.uvarint(uint64(len(codes)))
	for _, c := range codes {
		e.varint(int64(c))
	}
}

func decCodes(d *decoder) []int16 {
	n := d.count(1)
	if n == 0 {
		return nil
	}
	out := make([]int16, n)
	for i := range out {
		out[i] = d.int16()
	}
	return out
}

// add_offsets_to_txn request: producer, group (str). Reply: empty.
type addOffsetsReq struct {
	P     coordapi.TxnProducer
	Group string
}

func encAddOffsetsReq(e *encoder, r addOffsetsReq) {
	encTxnProducer(e, r.P)
	e.str(r.Group)
}

func decAddOffsetsReq(d *decoder) addOffsetsReq {
	return addOffsetsReq{P: decTxnProducer(d), Group: d.str()}
}

// end_txn request: producer, commit (bool). Reply: empty.
func encEndTxnReq(e *encoder, r coordapi.EndTxnRequest) {
	encTxnProducer(e, r.TxnProducer)
	e.bool(r.Commit)
}

func decEndTxnReq(d *decoder) coordapi.EndTxnRequest {
	return coordapi.EndTxnRequest{TxnProducer: decTxnProducer(d), Commit: d.bool()}
}

// describe_transactions request: ids (strings). Reply: per id, id (str),
// error code, state (byte), producer id, epoch, timeout, start ms,
// partitions.
func encTxnDescriptions(e *encoder, ds []coordapi.TxnDescription) {
	e.uvarint(uint64(len(ds)))
	for _, d := range ds {
		e.str(d.TransactionalID)
		e.varint(int64(d.ErrorCode))
		e.byte(byte(d.State))
		e.varint(d.ProducerID)
		e.varint(int64(d.ProducerEpoch))
		e.varint(int64(d.TimeoutMs))
		e.varint(d.StartMs)
		encTopicPartitions(e, d.Partitions)
	}
}

func decTxnDescriptions(d *decoder) []coordapi.TxnDescription {
	n := d.count(8)
	if n == 0 {
		return nil
	}
	out := make([]coordapi.TxnDescription, n)
	for i := range out {
		out[i] = coordapi.TxnDescription{TransactionalID: d.str(), ErrorCode: d.int16(), State: coordapi.TxnState(d.byte()),
			ProducerID: d.varint(), ProducerEpoch: d.int16(), TimeoutMs: d.int32(), StartMs: d.varint(), Partitions: decTopicPartitions(d)}
	}
	return out
}

// list_transactions request: states (count, bytes), producer ids (count,
// varints). Reply: per transaction, id (str), producer id, state (byte).
type listTxnsReq struct {
	States      []coordapi.TxnState
	ProducerIDs []int64
}

func encListTxnsReq(e *encoder, r listTxnsReq) {
	e.uvarint(uint64(len(r.States)))
	for _, s := range r.States {
		e.byte(byte(s))
	}
	encOffsets(e, r.ProducerIDs)
}

func decListTxnsReq(d *decoder) listTxnsReq {
	var r listTxnsReq
	if n := d.count(1); n > 0 {
		r.States = make([]coordapi.TxnState, n)
		for i := range r.States {
			r.States[i] = coordapi.TxnState(d.byte())
		}
	}
	r.ProducerIDs = decOffsets(d)
	return r
}

func encTxnListings(e *encoder, ls []coordapi.TxnListing) {
	e.uvarint(uint64(len(ls)))
	for _, l := range ls {
		e.str(l.TransactionalID)
		e.varint(l.ProducerID)
		e.byte(byte(l.State))
	}
}

func decTxnListings(d *decoder) []coordapi.TxnListing {
	n := d.count(3)
	if n == 0 {
		return nil
	}
	out := make([]coordapi.TxnListing, n)
	for i := range out {
		out[i] = coordapi.TxnListing{TransactionalID: d.str(), ProducerID: d.varint(), State: coordapi.TxnState(d.byte())}
	}
	return out
}

// describe_producers request: topic id, partition. Reply: per producer,
// id, epoch, last sequence, last timestamp, coordinator epoch, current
// transaction's first offset.
func encProducerDescriptions(e *encoder, ps []coordapi.ProducerDescription) {
	e.uvarint(uint64(len(ps)))
	for _, p := range ps {
		e.varint(p.ProducerID)
		e.varint(int64(p.ProducerEpoch))
		e.varint(int64(p.LastSequence))
		e.varint(p.LastTimestamp)
		e.varint(int64(p.CoordinatorEpoch))
		e.varint(p.CurrentTxnStartOffset)
	}
}

func decProducerDescriptions(d *decoder) []coordapi.ProducerDescription {
	n := d.count(6)
	if n == 0 {
		return nil
	}
	out := make([]coordapi.ProducerDescription, n)
	for i := range out {
		out[i] = coordapi.ProducerDescription{ProducerID: d.varint(), ProducerEpoch: d.int16(), LastSequence: d.int32(),
			LastTimestamp: d.varint(), CoordinatorEpoch: d.int32(), CurrentTxnStartOffset: d.varint()}
	}
	return out
}

// AddPartitionsToTxn adds partitions to a producer's transaction; see
// coordinator.Coordinator.AddPartitionsToTxn.
func (c *Client) AddPartitionsToTxn(ctx context.Context, req coordapi.AddPartitionsRequest) ([]int16, error) {
	return call(c, ctx, opAddPartitionsToTxn, func(e *encoder) { encAddPartitionsReq(e, req) }, decCodes)
}

// AddOffsetsToTxn adds a group to a producer's transaction; see
// coordinator.Coordinator.AddOffsetsToTxn.
func (c *Client) AddOffsetsToTxn(ctx context.Context, p coordapi.TxnProducer, group string) error {
	_, err := call(c, ctx, opAddOffsetsToTxn, func(e *encoder) { encAddOffsetsReq(e, addOffsetsReq{P: p, Group: group}) }, decEmpty)
	return err
}

// EndTxn ends a producer's transaction; see coordinator.Coordinator.EndTxn.
// It may take as long as writing the markers does.
func (c *Client) EndTxn(ctx context.Context, req coordapi.EndTxnRequest) error {
	_, err := callWith(c, ctx, opEndTxn, 2*c.opts.Timeout, func(e *encoder) { encEndTxnReq(e, req) }, decEmpty)
	return err
}

// DescribeTransactions describes transactional ids; see
// coordinator.Coordinator.DescribeTransactions.
func (c *Client) DescribeTransactions(ctx context.Context, ids []string) ([]coordapi.TxnDescription, error) {
	return call(c, ctx, opDescribeTxns, func(e *encoder) { encStrings(e, ids) }, decTxnDescriptions)
}

// ListTransactions lists transactional ids; see
// coordinator.Coordinator.ListTransactions.
func (c *Client) ListTransactions(ctx context.Context, states []coordapi.TxnState, producerIDs []int64) ([]coordapi.TxnListing, error) {
	return call(c, ctx, opListTxns, func(e *encoder) { encListTxnsReq(e, listTxnsReq{States: states, ProducerIDs: producerIDs}) }, decTxnListings)
}

// DescribeProducers lists a partition's producers; see
// coordinator.Coordinator.DescribeProducers.
func (c *Client) DescribeProducers(ctx context.Context, id coordapi.TopicID, partition int32) ([]coordapi.ProducerDescription, error) {
	return call(c, ctx, opDescribeProducers, func(e *encoder) { encTopicPartitionReq(e, topicPartitionReq{ID: id, Partition: partition}) }, decProducerDescriptions)
}
