package rpc

import (
	"github.com/floe-io/floe/coordapi"
)

// noticeVersion is the version of the commit notice message. Version 2
// added the log start offset and the committed batches' coordinates, 3 the
// last stable offset, 4 whether the partition has aborted transactions.
const noticeVersion byte = 4

// noticeSize bounds the encoded size of one notice.
func noticeSize(n *coordapi.CommitNotice) int {
	size := 40 // partition, high watermark, log start, LSO delta, batch count
	for _, b := range n.Batches {
		size += len(b.ObjectKey) + 60
	}
	return size
}

// encNotices encodes a notice message of as many of ns as fit in limit
// bytes (at least one) and returns how many it took:
//
//	version, n topics × (topic id(16), n partitions × (partition, high watermark,
//	    log start, high watermark - last stable offset, has aborted, n batches × (object key, object size, byte offset, byte length,
//	    base offset, last-base, max timestamp, log-append-time flag)))
//
// Notices of one topic that are not adjacent in ns go in separate topic
// groups; the coordinator lists a commit's notices topic by topic.
func encNotices(e *encoder, ns []coordapi.CommitNotice, limit int) int {
	const perTopic = 26
	n, size, groups := 0, 1+10, 0
	for n < len(ns) {
		add := noticeSize(&ns[n])
		newGroup := n == 0 || ns[n].TopicID != ns[n-1].TopicID
		if newGroup {
			add += perTopic
		}
		if n > 0 && size+add > limit {
			break
		}
		size += add
		if newGroup {
			groups++
		}
		n++
	}
	e.byte(noticeVersion)
	e.uvarint(uint64(groups))
	for i := 0; i < n; {
		j := i + 1
		for j < n && ns[j].TopicID == ns[i].TopicID {
			j++
		}
		e.id(ns[i].TopicID)
		e.uvarint(uint64(j - i))
		for _, nt := range ns[i:j] {
			e.varint(int64(nt.Partition))
			e.varint(nt.HighWatermark)
			e.varint(nt.LogStartOffset)
			e.varint(nt.HighWatermark - nt.LastStableOffset)
			e.bool(nt.HasAborted)
			e.uvarint(uint64(len(nt.Batches)))
			for _, b := range nt.Batches {
				e.str(b.ObjectKey)
				e.varint(b.ObjectSize)
				e.varint(b.ByteOffset)
				e.varint(int64(b.ByteLength))
				e.varint(b.BaseOffset)
				e.varint(b.LastOffset - b.BaseOffset)
				e.varint(b.MaxTimestamp)
				e.bool(b.LogAppendTime)
			}
		}
		i = j
	}
	return n
}

// decNotices decodes a notice message.
func decNotices(data []byte) ([]coordapi.CommitNotice, error) {
	d := decoder{b: data}
	if v := d.byte(); d.err == nil && v != noticeVersion {
		d.fail("notice version %d", v)
	}
	groups := d.count(16 + 1)
	var out []coordapi.CommitNotice
	for range groups {
		id := d.id()
		n := d.count(4)
		for range n {
			nt := coordapi.CommitNotice{TopicID: id, Partition: d.int32(), HighWatermark: d.varint(), LogStartOffset: d.varint()}
			nt.LastStableOffset = nt.HighWatermark - d.varint()
			nt.HasAborted = d.bool()
			nb := d.count(9)
			if nb > 0 {
				nt.Batches = make([]coordapi.BatchCoord, 0, nb)
			}
			for range nb {
				b := coordapi.BatchCoord{ObjectKey: d.str(), ObjectSize: d.varint(), ByteOffset: d.varint(), ByteLength: d.int32()}
				b.BaseOffset = d.varint()
				b.LastOffset = b.BaseOffset + d.varint()
				b.MaxTimestamp = d.varint()
				b.LogAppendTime = d.bool()
				nt.Batches = append(nt.Batches, b)
			}
			out = append(out, nt)
		}
	}
	if d.err != nil {
		return nil, d.err
	}
	return out, nil
}

// topicNoticeVersion is the version of the topic notice message.
const topicNoticeVersion byte = 1

// encTopicNotices encodes a topic notice message:
//
//	version, n × (topic id(16), name (str))
//
// Topic names are at most 249 bytes, so a message of a few notices is far
// below any payload limit.
func encTopicNotices(e *encoder, ns []coordapi.TopicNotice) {
	e.byte(topicNoticeVersion)
	e.uvarint(uint64(len(ns)))
	for _, n := range ns {
		e.id(n.ID)
		e.str(n.Name)
	}
}

// decTopicNotices decodes a message of encTopicNotices.
func decTopicNotices(data []byte) ([]coordapi.TopicNotice, error) {
	d := decoder{b: data}
	if v := d.byte(); d.err == nil && v != topicNoticeVersion {
		d.fail("topic notice version %d", v)
	}
	n := d.count(16 + 1)
	out := make([]coordapi.TopicNotice, 0, n)
	for range n {
		out = append(out, coordapi.TopicNotice{ID: d.id(), Name: d.str()})
	}
	if d.err != nil {
		return nil, d.err
	}
	return out, nil
}
