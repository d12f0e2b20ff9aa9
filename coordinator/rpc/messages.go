package rpc

import (
	"github.com/floe-io/floe/coordapi"
)

// The request and response bodies of every op, as encode/decode pairs. A
// decode function reads with d and leaves any failure in d.err; the caller
// checks it once. Bodies are laid out field by field in the order written
// here (see the package doc for the primitives).

// Request types of ops whose arguments are not one coordinator type.
type (
	topicPartitionReq struct {
		ID        coordapi.TopicID
		Partition int32
	}
	listOffsetReq struct {
		ID        coordapi.TopicID
		Partition int32
		Timestamp int64
	}
	listOffsetResp struct {
		Offset    int64
		Timestamp int64
	}
	deleteRecordsReq struct {
		ID        coordapi.TopicID
		Partition int32
		Offset    int64
	}
	createPartitionsReq struct {
		Name         string
		Count        int32
		ValidateOnly bool
	}
	alterConfigsReq struct {
		Name         string
		Ops          []coordapi.ConfigOp
		Incremental  bool
		ValidateOnly bool
	}
	// topicsReq pages through the topics: those named after After.
	topicsReq struct {
		After string
	}
	topicsResp struct {
		Topics []coordapi.Topic
		// More says that topics after the last one remain.
		More bool
	}
	kvLookupReq struct {
		ID        coordapi.TopicID
		Partition int32
		Key       []byte
	}
	kvLookupResp struct {
		Offset        int64
		HighWatermark int64
		Found         bool
	}
	empty struct{}
)

func encEmpty(*encoder, empty)       {}
func decEmpty(*decoder) (v empty)    { return v }
func encString(e *encoder, s string) { e.str(s) }
func decString(d *decoder) string    { return d.str() }
func encInt64(e *encoder, v int64)   { e.varint(v) }
func decInt64(d *decoder) int64      { return d.varint() }

func encID(e *encoder, id coordapi.TopicID) { e.id(id) }
func decID(d *decoder) coordapi.TopicID     { return d.id() }

// topic: id(16) name(str) partitions(varint) configs(map).
// A topic: id, name, partitions, configs, then view (bool) and, for a
// view, its base topic's id and name and its key (bytes).
func encTopic(e *encoder, t coordapi.Topic) {
	e.id(t.ID)
	e.str(t.Name)
	e.varint(int64(t.Partitions))
	e.strMap(t.Configs)
	e.bool(t.View != nil)
	if v := t.View; v != nil {
		e.id(v.BaseID)
		e.str(v.BaseName)
		e.bytes(v.Key)
	}
}

func decTopic(d *decoder) coordapi.Topic {
	t := coordapi.Topic{ID: d.id(), Name: d.str(), Partitions: d.int32(), Configs: d.strMap()}
	if d.bool() {
		t.View = &coordapi.TopicView{BaseID: d.id(), BaseName: d.str(), Key: d.bytes()}
	}
	return t
}

// minTopicSize is the smallest encoded topic: id, empty name, partitions,
// empty map, no view.
const minTopicSize = 16 + 1 + 1 + 1 + 1

func encCreateTopicReq(e *encoder, r coordapi.CreateTopicRequest) {
	e.str(r.Name)
	e.varint(int64(r.Partitions))
	e.varint(int64(r.ReplicationFactor))
	e.strMap(r.Configs)
	e.bool(r.ValidateOnly)
}

func decCreateTopicReq(d *decoder) coordapi.CreateTopicRequest {
	return coordapi.CreateTopicRequest{
		Name: d.str(), Partitions: d.int32(), ReplicationFactor: d.int16(),
		Configs: d.strMap(), ValidateOnly: d.bool(),
	}
}

func encCreatePartitionsReq(e *encoder, r createPartitionsReq) {
	e.str(r.Name)
	e.varint(int64(r.Count))
	e.bool(r.ValidateOnly)
}

func decCreatePartitionsReq(d *decoder) createPartitionsReq {
	return createPartitionsReq{Name: d.str(), Count: d.int32(), ValidateOnly: d.bool()}
}

// alter configs: name, n ops × (name str, op byte, value optStr),
// incremental, validate only.
func encAlterConfigsReq(e *encoder, r alterConfigsReq) {
	e.str(r.Name)
	e.uvarint(uint64(len(r.Ops)))
	for _, op := range r.Ops {
		e.str(op.Name)
		e.byte(byte(op.Op))
		e.optStr(op.Value)
	}
	e.bool(r.Incremental)
	e.bool(r.ValidateOnly)
}

func decAlterConfigsReq(d *decoder) alterConfigsReq {
	r := alterConfigsReq{Name: d.str()}
	if n := d.count(3); n > 0 {
		r.Ops = make([]coordapi.ConfigOp, n)
		for i := range r.Ops {
			r.Ops[i] = coordapi.ConfigOp{Name: d.str(), Op: int8(d.byte()), Value: d.optStr()}
		}
	}
	r.Incremental = d.bool()
	r.ValidateOnly = d.bool()
	return r
}

func encTopicsReq(e *encoder, r topicsReq) { e.str(r.After) }
func decTopicsReq(d *decoder) topicsReq    { return topicsReq{After: d.str()} }

func encTopicsResp(e *encoder, r topicsResp) {
	e.uvarint(uint64(len(r.Topics)))
	for _, t := range r.Topics {
		encTopic(e, t)
	}
	e.bool(r.More)
}

func decTopicsResp(d *decoder) topicsResp {
	var r topicsResp
	if n := d.count(minTopicSize); n > 0 {
		r.Topics = make([]coordapi.Topic, n)
		for i := range r.Topics {
			r.Topics[i] = decTopic(d)
		}
	}
	r.More = d.bool()
	return r
}

func encTopicPartitionReq(e *encoder, r topicPartitionReq) {
	e.id(r.ID)
	e.varint(int64(r.Partition))
}

func decTopicPartitionReq(d *decoder) topicPartitionReq {
	return topicPartitionReq{ID: d.id(), Partition: d.int32()}
}

// partition state: log start, high watermark, high watermark - last
// stable offset (0 without an open transaction).
func encPartitionState(e *encoder, s coordapi.PartitionState) {
	e.varint(s.LogStartOffset)
	e.varint(s.HighWatermark)
	e.varint(s.HighWatermark - s.LastStableOffset)
}

func decPartitionState(d *decoder) coordapi.PartitionState {
	s := coordapi.PartitionState{LogStartOffset: d.varint(), HighWatermark: d.varint()}
	s.LastStableOffset = s.HighWatermark - d.varint()
	return s
}

// aborted transactions: count, then each producer id, first offset, last
// offset - first offset.
func encAborted(e *encoder, as []coordapi.AbortedTxn) {
	e.uvarint(uint64(len(as)))
	for _, a := range as {
		e.varint(a.ProducerID)
		e.varint(a.FirstOffset)
		e.varint(a.LastOffset - a.FirstOffset)
	}
}

func decAborted(d *decoder) []coordapi.AbortedTxn {
	n := d.count(3)
	if n == 0 {
		return nil
	}
	out := make([]coordapi.AbortedTxn, n)
	for i := range out {
		out[i] = coordapi.AbortedTxn{ProducerID: d.varint(), FirstOffset: d.varint()}
		out[i].LastOffset = out[i].FirstOffset + d.varint()
	}
	return out
}

func encFindBatchesReq(e *encoder, r coordapi.FindBatchesRequest) {
	e.id(r.TopicID)
	e.varint(int64(r.Partition))
	e.varint(r.Offset)
	e.varint(int64(r.MaxBytes))
	e.bool(r.ReadCommitted)
}

func decFindBatchesReq(d *decoder) coordapi.FindBatchesRequest {
	return coordapi.FindBatchesRequest{TopicID: d.id(), Partition: d.int32(), Offset: d.varint(), MaxBytes: d.int32(), ReadCommitted: d.bool()}
}

// Batch coordinate flags.
const (
	flagLogAppendTime = 1 << 0
	flagSegment       = 1 << 1
)

// find batches response: log start, high watermark, n objects × (key str,
// size), n batches × (object index, byte offset, byte length, base offset,
// last offset - base offset, max timestamp, flags). Consecutive batches
// mostly share an object, so keys are sent once.
func encFindBatchesResp(e *encoder, r coordapi.FindBatchesResponse) {
	encPartitionState(e, r.PartitionState)
	var keys []string
	idx := make([]int, len(r.Batches))
	for i, b := range r.Batches {
		j := len(keys) - 1
		if j < 0 || keys[j] != b.ObjectKey || r.Batches[i-1].ObjectSize != b.ObjectSize {
			keys = append(keys, b.ObjectKey)
			j++
		}
		idx[i] = j
	}
	e.uvarint(uint64(len(keys)))
	for i, b := range r.Batches {
		if i == 0 || idx[i] != idx[i-1] {
			e.str(b.ObjectKey)
			e.varint(b.ObjectSize)
		}
	}
	e.uvarint(uint64(len(r.Batches)))
	for i, b := range r.Batches {
		e.uvarint(uint64(idx[i]))
		encBatchPlace(e, &b)
	}
	encAborted(e, r.Aborted)
}

// encBatchPlace encodes where a batch sits in its object and what it
// holds, the part of a BatchCoord every batch-listing reply carries after
// its object:
//
//	byte offset, byte length, base offset, last offset - base offset,
//	max timestamp, flags (1 byte; bit 0: log append time, bit 1: a
//	whole segment object)
func encBatchPlace(e *encoder, b *coordapi.BatchCoord) {
	e.varint(b.ByteOffset)
	e.varint(int64(b.ByteLength))
	e.varint(b.BaseOffset)
	e.varint(b.LastOffset - b.BaseOffset)
	e.varint(b.MaxTimestamp)
	var flags byte
	if b.LogAppendTime {
		flags |= flagLogAppendTime
	}
	if b.Segment {
		flags |= flagSegment
	}
	e.byte(flags)
}

// decBatchPlace decodes what encBatchPlace wrote into b.
func decBatchPlace(d *decoder, b *coordapi.BatchCoord) {
	b.ByteOffset = d.varint()
	b.ByteLength = d.int32()
	b.BaseOffset = d.varint()
	b.LastOffset = b.BaseOffset + d.varint()
	b.MaxTimestamp = d.varint()
	flags := d.byte()
	b.LogAppendTime = flags&flagLogAppendTime != 0
	b.Segment = flags&flagSegment != 0
}

func decFindBatchesResp(d *decoder) coordapi.FindBatchesResponse {
	r := coordapi.FindBatchesResponse{PartitionState: decPartitionState(d)}
	type object struct {
		key  string
		size int64
	}
	objects := make([]object, d.count(2))
	for i := range objects {
		objects[i] = object{d.str(), d.varint()}
	}
	if n := d.count(7); n > 0 {
		r.Batches = make([]coordapi.BatchCoord, n)
		for i := range r.Batches {
			j := d.uvarint()
			if j >= uint64(len(objects)) {
				d.fail("batch %d names object %d of %d", i, j, len(objects))
				break
			}
			b := coordapi.BatchCoord{ObjectKey: objects[j].key, ObjectSize: objects[j].size}
			decBatchPlace(d, &b)
			r.Batches[i] = b
		}
	}
	r.Aborted = decAborted(d)
	return r
}

func encListOffsetReq(e *encoder, r listOffsetReq) {
	e.id(r.ID)
	e.varint(int64(r.Partition))
	e.varint(r.Timestamp)
}

func decListOffsetReq(d *decoder) listOffsetReq {
	return listOffsetReq{ID: d.id(), Partition: d.int32(), Timestamp: d.varint()}
}

func encListOffsetResp(e *encoder, r listOffsetResp) {
	e.varint(r.Offset)
	e.varint(r.Timestamp)
}

func decListOffsetResp(d *decoder) listOffsetResp {
	return listOffsetResp{Offset: d.varint(), Timestamp: d.varint()}
}

func encDeleteRecordsReq(e *encoder, r deleteRecordsReq) {
	e.id(r.ID)
	e.varint(int64(r.Partition))
	e.varint(r.Offset)
}

func decDeleteRecordsReq(d *decoder) deleteRecordsReq {
	return deleteRecordsReq{ID: d.id(), Partition: d.int32(), Offset: d.varint()}
}

func encInitProducerIDReq(e *encoder, r coordapi.InitProducerIDRequest) {
	e.optStr(r.TransactionalID)
	e.varint(int64(r.TimeoutMs))
	e.varint(r.ProducerID)
	e.varint(int64(r.ProducerEpoch))
}

func decInitProducerIDReq(d *decoder) coordapi.InitProducerIDRequest {
	return coordapi.InitProducerIDRequest{TransactionalID: d.optStr(), TimeoutMs: d.int32(),
		ProducerID: d.varint(), ProducerEpoch: d.int16()}
}

func encInitProducerIDResp(e *encoder, r coordapi.InitProducerIDResponse) {
	e.varint(r.ProducerID)
	e.varint(int64(r.ProducerEpoch))
}

func decInitProducerIDResp(d *decoder) coordapi.InitProducerIDResponse {
	return coordapi.InitProducerIDResponse{ProducerID: d.varint(), ProducerEpoch: d.int16()}
}

func encBrokerInfo(e *encoder, b coordapi.BrokerInfo) {
	e.varint(int64(b.NodeID))
	e.str(b.Host)
	e.varint(int64(b.Port))
	e.str(b.Rack)
	e.str(b.InternalAddr)
}

func decBrokerInfo(d *decoder) coordapi.BrokerInfo {
	return coordapi.BrokerInfo{NodeID: d.int32(), Host: d.str(), Port: d.int32(), Rack: d.str(), InternalAddr: d.str()}
}

func encBrokerList(e *encoder, bs []coordapi.BrokerInfo) {
	e.uvarint(uint64(len(bs)))
	for _, b := range bs {
		encBrokerInfo(e, b)
	}
}

func decBrokerList(d *decoder) []coordapi.BrokerInfo {
	n := d.count(4)
	if n == 0 {
		return nil
	}
	out := make([]coordapi.BrokerInfo, n)
	for i := range out {
		out[i] = decBrokerInfo(d)
	}
	return out
}

func encKvLookupReq(e *encoder, r kvLookupReq) {
	e.id(r.ID)
	e.varint(int64(r.Partition))
	e.bytes(r.Key)
}

func decKvLookupReq(d *decoder) kvLookupReq {
	return kvLookupReq{ID: d.id(), Partition: d.int32(), Key: d.bytes()}
}

func encKvLookupResp(e *encoder, r kvLookupResp) {
	e.varint(r.Offset)
	e.varint(r.HighWatermark)
	e.bool(r.Found)
}

func decKvLookupResp(d *decoder) kvLookupResp {
	return kvLookupResp{Offset: d.varint(), HighWatermark: d.varint(), Found: d.bool()}
}

func encBool(e *encoder, v bool) { e.bool(v) }
func decBool(d *decoder) bool    { return d.bool() }

func encKvGetReq(e *encoder, r coordapi.KvGetRequest) {
	e.id(r.TopicID)
	e.varint(int64(r.Partition))
	e.bytes(r.Key)
}

func decKvGetReq(d *decoder) coordapi.KvGetRequest {
	return coordapi.KvGetRequest{TopicID: d.id(), Partition: d.int32(), Key: d.bytes()}
}

// kv_get result flags. Decoders ignore bits they do not know.
const (
	kvGetIndexed = 1 << 0
	kvGetReady   = 1 << 1
	kvGetFound   = 1 << 2
	kvGetBatch   = 1 << 3 // the batch's coordinates follow
)

// kv get response: flags (byte), offset, log start, high watermark, and
// with kvGetBatch the batch: object key (str), object size, byte offset,
// byte length, base offset, last offset - base offset, max timestamp,
// batch flags (byte, as in find_batches).
func encKvGetResp(e *encoder, r coordapi.KvGetResult) {
	var flags byte
	for _, f := range []struct {
		set  bool
		flag byte
	}{{r.Indexed, kvGetIndexed}, {r.Ready, kvGetReady}, {r.Found, kvGetFound}, {r.HasBatch(), kvGetBatch}} {
		if f.set {
			flags |= f.flag
		}
	}
	e.byte(flags)
	e.varint(r.Offset)
	encPartitionState(e, r.PartitionState)
	if !r.HasBatch() {
		return
	}
	e.str(r.Batch.ObjectKey)
	e.varint(r.Batch.ObjectSize)
	encBatchPlace(e, &r.Batch)
}

func decKvGetResp(d *decoder) coordapi.KvGetResult {
	flags := d.byte()
	r := coordapi.KvGetResult{
		Indexed: flags&kvGetIndexed != 0, Ready: flags&kvGetReady != 0, Found: flags&kvGetFound != 0,
		Offset: d.varint(), PartitionState: decPartitionState(d),
	}
	if flags&kvGetBatch == 0 {
		return r
	}
	b := coordapi.BatchCoord{ObjectKey: d.str(), ObjectSize: d.varint()}
	decBatchPlace(d, &b)
	if d.err == nil && b.ObjectKey == "" {
		d.fail("kv get batch without an object key")
	}
	r.Batch = b
	return r
}

// claim_tier_job request: broker id. Reply: ok (bool), then when ok the
// job: id, topic id, partition, base offset, last offset - base offset,
// lease ms, log append time (bool), its batches as a find_batches reply
// encodes them (with a zero partition state), then its kind (byte) and,
// for a compaction job, the CompactJob: its segments as a find_batches
// reply encodes them, dirty offset, key index (bool), now ms, delete
// retention ms, segment bytes, and the producer last offsets (count,
// then each as a delta from the previous, the first from 0).
// claim_tier_job request: broker id, then tables (bool; absent from
// brokers of earlier builds, which run no table jobs), then table
// maintain (bool; absent from brokers of earlier builds, which run no
// table maintenance jobs), then table WAL (bool; absent from brokers of
// earlier builds, whose table jobs read segments only).
func encClaimTierJobReq(e *encoder, r coordapi.ClaimTierJobRequest) {
	e.varint(int64(r.BrokerID))
	e.bool(r.Tables)
	e.bool(r.TableMaintain)
	e.bool(r.TableWAL)
}

func decClaimTierJobReq(d *decoder) coordapi.ClaimTierJobRequest {
	r := coordapi.ClaimTierJobRequest{BrokerID: d.int32()}
	if d.left() > 0 {
		r.Tables = d.bool()
	}
	if d.left() > 0 {
		r.TableMaintain = d.bool()
	}
	if d.left() > 0 {
		r.TableWAL = d.bool()
	}
	return r
}

// claimTierJobResp is ClaimTierJob's two results.
type claimTierJobResp struct {
	Job coordapi.TierJob
	OK  bool
}

func encClaimTierJobResp(e *encoder, r claimTierJobResp) {
	e.bool(r.OK)
	if !r.OK {
		return
	}
	j := &r.Job
	e.uvarint(j.ID)
	e.id(j.TopicID)
	e.varint(int64(j.Partition))
	e.varint(j.BaseOffset)
	e.varint(j.LastOffset - j.BaseOffset)
	e.varint(j.LeaseMs)
	e.bool(j.LogAppendTime)
	encFindBatchesResp(e, coordapi.FindBatchesResponse{Batches: j.Batches})
	e.byte(byte(j.Kind))
	switch j.Kind {
	case coordapi.TierJobTable:
		encTableJob(e, j.Table) // tables.go
		return
	case coordapi.TierJobTableMaintain:
		encTableMaintainJob(e, j.Maintain) // tables.go
		return
	}
	if j.Kind != coordapi.TierJobCompact {
		return
	}
	cj := j.Compact
	if cj == nil {
		cj = &coordapi.CompactJob{}
	}
	encFindBatchesResp(e, coordapi.FindBatchesResponse{Batches: cj.Segments})
	e.varint(cj.DirtyOffset)
	e.bool(cj.KeyIndex)
	e.varint(cj.NowMs)
	e.varint(cj.DeleteRetentionMs)
	e.varint(cj.SegmentBytes)
	e.uvarint(uint64(len(cj.ProducerLastOffsets)))
	var prev int64
	for _, o := range cj.ProducerLastOffsets {
		e.varint(o - prev)
		prev = o
	}
	encAborted(e, cj.Aborted)
}

func decClaimTierJobResp(d *decoder) claimTierJobResp {
	if !d.bool() {
		return claimTierJobResp{}
	}
	j := coordapi.TierJob{ID: d.uvarint(), TopicID: d.id(), Partition: d.int32(), BaseOffset: d.varint()}
	j.LastOffset = j.BaseOffset + d.varint()
	j.LeaseMs = d.varint()
	j.LogAppendTime = d.bool()
	j.Batches = decFindBatchesResp(d).Batches
	j.Kind = coordapi.TierJobKind(d.byte())
	switch j.Kind {
	case coordapi.TierJobConsolidate:
	case coordapi.TierJobCompact:
		cj := &coordapi.CompactJob{Segments: decFindBatchesResp(d).Batches, DirtyOffset: d.varint(), KeyIndex: d.bool(),
			NowMs: d.varint(), DeleteRetentionMs: d.varint(), SegmentBytes: d.varint()}
		if n := d.count(1); n > 0 {
			cj.ProducerLastOffsets = make([]int64, n)
			var prev int64
			for i := range cj.ProducerLastOffsets {
				prev += d.varint()
				cj.ProducerLastOffsets[i] = prev
			}
		}
		cj.Aborted = decAborted(d)
		j.Compact = cj
	case coordapi.TierJobTable:
		j.Table = decTableJob(d)
	case coordapi.TierJobTableMaintain:
		j.Maintain = decTableMaintainJob(d)
	default:
		d.fail("unknown tier job kind %d", j.Kind)
	}
	return claimTierJobResp{Job: j, OK: true}
}

// complete_tier_job request: job id, topic id, partition, base offset,
// last offset - base offset, object key (str), object size, data length,
// then compacted (bool) and, when set, the CompactResult: cleaned through,
// tombstone horizon ms, bytes in, bytes out, records in, records out, and
// its segments (count, then each: object key, object size, data length,
// base offset, last offset - base offset, batches, max timestamp, max
// timestamp offset, max timestamp last), then table (bool; absent from
// brokers of earlier builds) and, when set, the TableResult (tables.go).
// Reply: empty.
func encCompleteTierJobReq(e *encoder, r coordapi.CompleteTierJobRequest) {
	e.uvarint(r.JobID)
	e.id(r.TopicID)
	e.varint(int64(r.Partition))
	e.varint(r.BaseOffset)
	e.varint(r.LastOffset - r.BaseOffset)
	e.str(r.ObjectKey)
	e.varint(r.ObjectSize)
	e.varint(r.DataLength)
	e.bool(r.Compacted != nil)
	if c := r.Compacted; c != nil {
		e.varint(c.CleanedThrough)
		e.varint(c.TombstoneHorizonMs)
		e.varint(c.BytesIn)
		e.varint(c.BytesOut)
		e.varint(c.RecordsIn)
		e.varint(c.RecordsOut)
		e.uvarint(uint64(len(c.Segments)))
		for _, sg := range c.Segments {
			e.str(sg.ObjectKey)
			e.varint(sg.ObjectSize)
			e.varint(sg.DataLength)
			e.varint(sg.BaseOffset)
			e.varint(sg.LastOffset - sg.BaseOffset)
			e.varint(sg.Batches)
			e.varint(sg.MaxTimestamp)
			e.varint(sg.MaxTimestampOffset)
			e.varint(sg.MaxTimestampLast)
		}
	}
	e.bool(r.Table != nil)
	if r.Table != nil {
		encTableResult(e, r.Table)
	}
}

func decCompleteTierJobReq(d *decoder) coordapi.CompleteTierJobRequest {
	r := coordapi.CompleteTierJobRequest{JobID: d.uvarint(), TopicID: d.id(), Partition: d.int32(), BaseOffset: d.varint()}
	r.LastOffset = r.BaseOffset + d.varint()
	r.ObjectKey = d.str()
	r.ObjectSize = d.varint()
	r.DataLength = d.varint()
	if d.bool() {
		r.Compacted = decCompactResult(d)
	}
	if d.left() > 0 && d.bool() {
		r.Table = decTableResult(d)
	}
	return r
}

func decCompactResult(d *decoder) *coordapi.CompactResult {
	c := &coordapi.CompactResult{CleanedThrough: d.varint(), TombstoneHorizonMs: d.varint(),
		BytesIn: d.varint(), BytesOut: d.varint(), RecordsIn: d.varint(), RecordsOut: d.varint()}
	if n := d.count(9); n > 0 { // a segment: a string and eight varints, a byte each at least
		c.Segments = make([]coordapi.CompactedSegment, n)
		for i := range c.Segments {
			sg := coordapi.CompactedSegment{ObjectKey: d.str(), ObjectSize: d.varint(), DataLength: d.varint(), BaseOffset: d.varint()}
			sg.LastOffset = sg.BaseOffset + d.varint()
			sg.Batches = d.varint()
			sg.MaxTimestamp, sg.MaxTimestampOffset, sg.MaxTimestampLast = d.varint(), d.varint(), d.varint()
			c.Segments[i] = sg
		}
	}
	return c
}

// kv_latest_offsets request: topic id, partition, key count, then each
// key (bytes). Reply: an offset per key (varint, -1 for none).
func encKvOffsetsReq(e *encoder, r coordapi.KvOffsetsRequest) {
	e.id(r.TopicID)
	e.varint(int64(r.Partition))
	e.uvarint(uint64(len(r.Keys)))
	for _, k := range r.Keys {
		e.bytes(k)
	}
}

func decKvOffsetsReq(d *decoder) coordapi.KvOffsetsRequest {
	r := coordapi.KvOffsetsRequest{TopicID: d.id(), Partition: d.int32()}
	if n := d.count(1); n > 0 {
		r.Keys = make([][]byte, n)
		for i := range r.Keys {
			r.Keys[i] = d.bytes()
		}
	}
	return r
}

func encOffsets(e *encoder, offsets []int64) {
	e.uvarint(uint64(len(offsets)))
	for _, o := range offsets {
		e.varint(o)
	}
}

func decOffsets(d *decoder) []int64 {
	n := d.count(1)
	if n == 0 {
		return nil
	}
	out := make([]int64, n)
	for i := range out {
		out[i] = d.varint()
	}
	return out
}

// abandon_tier_job request: job id, reason (str). Reply: empty.
type abandonTierJobReq struct {
	JobID  uint64
	Reason string
}

func encAbandonTierJobReq(e *encoder, r abandonTierJobReq) {
	e.uvarint(r.JobID)
	e.str(r.Reason)
}

func decAbandonTierJobReq(d *decoder) abandonTierJobReq {
	return abandonTierJobReq{JobID: d.uvarint(), Reason: d.str()}
}

// find_key_batches request: topic id(16), partition, key (bytes), offset,
// max bytes.
func encFindKeyBatchesReq(e *encoder, r coordapi.FindKeyBatchesRequest) {
	e.id(r.TopicID)
	e.varint(int64(r.Partition))
	e.bytes(r.Key)
	e.varint(r.Offset)
	e.varint(int64(r.MaxBytes))
	e.bool(r.ReadCommitted)
}

func decFindKeyBatchesReq(d *decoder) coordapi.FindKeyBatchesRequest {
	return coordapi.FindKeyBatchesRequest{TopicID: d.id(), Partition: d.int32(), Key: d.bytes(), Offset: d.varint(), MaxBytes: d.int32(), ReadCommitted: d.bool()}
}

// find_key_batches reply: ready (bool), through, the batches' coordinates
// and the partition state as a find_batches reply encodes them, then n ×
// (base offset, last offset - base offset): the batches' own offsets (a
// segment coordinate's differ from them).
func encFindKeyBatchesResp(e *encoder, r coordapi.FindKeyBatchesResponse) {
	e.bool(r.Ready)
	e.varint(r.Through)
	coords := make([]coordapi.BatchCoord, len(r.Batches))
	for i := range r.Batches {
		coords[i] = r.Batches[i].Coord
	}
	encFindBatchesResp(e, coordapi.FindBatchesResponse{Batches: coords, PartitionState: r.PartitionState, Aborted: r.Aborted})
	e.uvarint(uint64(len(r.Batches)))
	for _, b := range r.Batches {
		e.varint(b.BaseOffset)
		e.varint(b.LastOffset - b.BaseOffset)
	}
}

func decFindKeyBatchesResp(d *decoder) coordapi.FindKeyBatchesResponse {
	r := coordapi.FindKeyBatchesResponse{Ready: d.bool(), Through: d.varint()}
	fb := decFindBatchesResp(d)
	r.PartitionState, r.Aborted = fb.PartitionState, fb.Aborted
	n := d.count(2)
	if d.err == nil && n != len(fb.Batches) {
		d.fail("find key batches: %d offset pairs for %d batches", n, len(fb.Batches))
		return r
	}
	if n > 0 {
		r.Batches = make([]coordapi.KeyBatch, n)
		for i := range r.Batches {
			base := d.varint()
			r.Batches[i] = coordapi.KeyBatch{Coord: fb.Batches[i], BaseOffset: base, LastOffset: base + d.varint()}
		}
	}
	return r
}
