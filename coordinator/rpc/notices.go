package rpc

import (
	"github.com/floe-io/floe/coordinator"
)

// encNotices encodes a notice message of as many of ns as fit in limit
// bytes (at least one) and returns how many it took:
//
//	version, n topics × (topic id(16), n partitions × (partition, high watermark))
//
// Notices of one topic that are not adjacent in ns go in separate topic
// groups; the coordinator lists a commit's notices topic by topic.
func encNotices(e *encoder, ns []coordinator.CommitNotice, limit int) int {
	// Each notice takes at most 10+10 bytes, each topic group 16+10.
	const perNotice, perTopic = 20, 26
	n, size, groups := 0, 1+10, 0
	for n < len(ns) {
		add := perNotice
		if n == 0 || ns[n].TopicID != ns[n-1].TopicID {
			add += perTopic
		}
		if n > 0 && size+add > limit {
			break
		}
		size += add
		if add > perNotice {
			groups++
		}
		n++
	}
	e.byte(version)
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
		}
		i = j
	}
	return n
}

// decNotices decodes a notice message.
func decNotices(data []byte) ([]coordinator.CommitNotice, error) {
	d := decoder{b: data}
	if v := d.byte(); d.err == nil && v != version {
		d.fail("notice version %d", v)
	}
	groups := d.count(16 + 1)
	var out []coordinator.CommitNotice
	for range groups {
		id := d.id()
		n := d.count(2)
		for range n {
			out = append(out, coordinator.CommitNotice{TopicID: id, Partition: d.int32(), HighWatermark: d.varint()})
		}
	}
	if d.err != nil {
		return nil, d.err
	}
	return out, nil
}
