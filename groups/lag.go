package groups

// CommittedOffset is one committed offset, as CommittedOffsets reports it.
type CommittedOffset struct {
	Group     string
	Topic     string
	Partition int32
	Offset    int64
	// TopicID is the id the topic had at the commit; zero when unknown
	// (offsets committed by builds that did not keep it).
	TopicID [16]byte
}

// CommittedOffsets calls fn with every committed offset of every group,
// read from memory (no Pebble read): a group's offsets under its lock, one
// group at a time, so that a collection does not hold up the groups.
// Pending transactional offsets are not reported. It does nothing once
// closed.
func (gs *Groups) CommittedOffsets(fn func(CommittedOffset)) {
	if !gs.enter() {
		return
	}
	defer gs.leave()
	for _, g := range gs.snapshot() {
		g.mu.Lock()
		if !g.mu.dead {
			for topic, parts := range g.mu.offsets {
				for p, r := range parts {
					fn(CommittedOffset{Group: g.name, Topic: topic, Partition: p, Offset: r.offset, TopicID: r.topicID})
				}
			}
		}
		g.mu.Unlock()
	}
}
