package groups

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"time"

	"github.com/cockroachdb/pebble"

	"github.com/floe-io/floe/groups/members"
	"github.com/floe-io/floe/internal/keyspan"
	"github.com/floe-io/floe/internal/valenc"
)

// A KIP-848 group's members are written down as Kafka's coordinator writes
// its ConsumerGroupMemberMetadata, target assignment and current member
// assignment records, so that a coordinator restart costs the group
// nothing: its members heartbeat and commit at their epochs, keep their
// partitions, and a revocation in progress carries on. Each member is one
// key (the 'c' family), next to one key with the group's assignment
// epoch, assignor and metadata digest; the group epoch stays in the group
// record. After every operation on the group, the members it touched are
// encoded again and only those whose bytes differ from the last write are
// written, with the group's keys, in one synced batch before the heartbeat
// answers: a steady-state heartbeat writes nothing.

// famConsumer is the key family of KIP-848 groups' members and assignment
// state.
const famConsumer byte = 'c'

// consumerPrefix is the prefix of every consumer-family key of group; the
// key that is the prefix alone holds the group's state, and the prefix
// followed by a member id (never empty) holds that member.
func consumerPrefix(group string) []byte {
	k := make([]byte, 0, 3+len(group))
	k = append(k, famConsumer)
	k = binary.BigEndian.AppendUint16(k, uint16(len(group)))
	return append(k, group...)
}

func consumerMemberKey(group, member string) []byte {
	return append(consumerPrefix(group), member...)
}

// parseConsumerKey splits a consumer-family key into its group and member
// id ("" for the group's state key).
func parseConsumerKey(k []byte) (group, member string, err error) {
	if len(k) < 3 || k[0] != famConsumer {
		return "", "", fmt.Errorf("groups: bad consumer key %x", k)
	}
	n := int(binary.BigEndian.Uint16(k[1:]))
	if len(k) < 3+n {
		return "", "", fmt.Errorf("groups: bad consumer key %x", k)
	}
	return string(k[3 : 3+n]), string(k[3+n:]), nil
}

// consumerStateRecord is a KIP-848 group's assignment state; its epoch is
// in the group record, written in the same batch.
type consumerStateRecord struct {
	assignmentEpoch int32
	assignor        string
	// metaSig is the digest of the subscribed topics' metadata the target
	// assignment was computed from.
	metaSig string
}

func (r consumerStateRecord) encode() []byte {
	v := []byte{valueV1}
	v = binary.AppendVarint(v, int64(r.assignmentEpoch))
	v = valenc.AppendString(v, r.assignor)
	return valenc.AppendString(v, r.metaSig)
}

func decodeConsumerStateRecord(b []byte) (consumerStateRecord, error) {
	d := valenc.New("consumer group", b)
	var r consumerStateRecord
	r.assignmentEpoch = int32(d.Varint())
	r.assignor = d.String()
	r.metaSig = d.String()
	return r, d.Done("consumer group")
}

func (c *consumerGroup) stateRecordLocked() consumerStateRecord {
	return consumerStateRecord{assignmentEpoch: c.assignmentEpoch, assignor: c.assignor, metaSig: c.metaSig}
}

// encodeConsumerMember is m's record: everything but its id (the key's),
// its session and revocation deadlines (they start afresh at Open) and
// what is derived from the rest (the compiled regex).
func encodeConsumerMember(m *consumerMember) []byte {
	v := []byte{valueV1}
	v = members.AppendOptString(v, m.instanceID)
	v = members.AppendOptString(v, m.rackID)
	v = valenc.AppendString(v, m.clientID)
	v = valenc.AppendString(v, m.clientHost)
	v = binary.AppendVarint(v, int64(m.epoch))
	v = binary.AppendVarint(v, int64(m.prevEpoch))
	v = append(v, byte(m.state))
	v = binary.AppendVarint(v, m.rebalance.Milliseconds())
	v = valenc.AppendString(v, m.assignor)
	v = members.AppendStrings(v, m.topics)
	v = valenc.AppendString(v, m.regex)
	v = members.AppendPartitions(v, m.target)
	v = members.AppendPartitions(v, m.assigned)
	v = members.AppendPartitions(v, m.revoking)
	ids := slices.Collect(maps.Keys(m.since))
	slices.SortFunc(ids, func(a, b topicID) int { return bytes.Compare(a[:], b[:]) })
	v = binary.AppendUvarint(v, uint64(len(ids)))
	for _, id := range ids {
		v = append(v, id[:]...)
		ps := slices.Sorted(maps.Keys(m.since[id]))
		v = binary.AppendUvarint(v, uint64(len(ps)))
		for _, p := range ps {
			v = binary.AppendVarint(v, int64(p))
			v = binary.AppendVarint(v, int64(m.since[id][p]))
		}
	}
	return v
}

// decodeConsumerMember reads the record of member id.
func decodeConsumerMember(id string, b []byte) (*consumerMember, error) {
	d := members.NewDecoder("consumer member", valueV1, b)
	m := &consumerMember{id: id}
	m.instanceID = d.OptString()
	m.rackID = d.OptString()
	m.clientID = d.String()
	m.clientHost = d.String()
	m.epoch = int32(d.Varint())
	m.prevEpoch = int32(d.Varint())
	m.state = memberState(d.Byte())
	if m.state > memberUnreleased {
		d.Corrupt(fmt.Errorf("unknown member state %d", m.state))
	}
	m.rebalance = time.Duration(d.Varint()) * time.Millisecond
	m.assignor = d.String()
	m.topics = d.Strings()
	m.regex = d.String()
	m.target = d.Partitions()
	m.assigned = d.Partitions()
	m.revoking = d.Partitions()
	m.since = make(map[topicID]map[int32]int32)
	for n, i := d.Count(), uint64(0); i < n && d.Err() == nil; i++ {
		tid := d.TopicID()
		np := d.Count()
		ps := m.since[tid]
		if ps == nil {
			ps = make(map[int32]int32, np)
			m.since[tid] = ps
		}
		for j := uint64(0); j < np && d.Err() == nil; j++ {
			p, e := d.Varint(), d.Varint()
			ps[int32(p)] = int32(e)
		}
	}
	if err := d.Done(); err != nil {
		return nil, err
	}
	return m, nil
}

// compileSubscription compiles a subscription regex as
// validateConsumerHeartbeat does: RE2, matched against whole topic names.
func compileSubscription(regex string) (*regexp.Regexp, error) {
	return regexp.Compile("^(?:" + regex + ")$")
}

// markLocked records that member id (present or removed) changed and must
// be compared with its last write.
func (c *consumerGroup) markLocked(id string) {
	if c.dirty == nil {
		c.dirty = make(map[string]struct{})
	}
	c.dirty[id] = struct{}{}
}

// persistConsumerLocked writes what changed in the group since its last
// write, in one batch with pebble.Sync: the group record and state when
// they differ, the touched members whose records differ, and deletions of
// members that are gone. Nothing is written when nothing changed. On an
// error nothing is forgotten: the next operation tries again.
func (g *group) persistConsumerLocked() error {
	c := g.mu.consumer
	if c.epoch == c.persistedEpoch && !c.dirtyAll && len(c.dirty) == 0 {
		return nil
	}
	gr := groupRecord{protocolType: consumerProtocolType, generation: c.epoch, consumer: true}
	if c.emptyLocked() {
		gr.emptySinceMs = msOf(c.emptySince)
	}
	b := g.gs.newBatch()
	gv := gr.encode()
	if !bytes.Equal(gv, c.writtenGroup) {
		b.b.Set(groupKey(g.name), gv, nil)
	}
	sv := c.stateRecordLocked().encode()
	if !bytes.Equal(sv, c.writtenState) {
		b.b.Set(consumerPrefix(g.name), sv, nil)
	}
	type write struct {
		m *consumerMember
		v []byte
	}
	var writes []write
	check := func(m *consumerMember) {
		if v := encodeConsumerMember(m); !bytes.Equal(v, m.written) {
			b.b.Set(consumerMemberKey(g.name, m.id), v, nil)
			writes = append(writes, write{m, v})
		}
	}
	if c.dirtyAll {
		for _, m := range c.members {
			check(m)
		}
	}
	for id := range c.dirty {
		switch m := c.members[id]; {
		case m == nil:
			b.b.Delete(consumerMemberKey(g.name, id), nil)
		case !c.dirtyAll:
			check(m)
		}
	}
	if err := b.commit(); err != nil {
		return err
	}
	c.writtenGroup, c.writtenState = gv, sv
	for _, w := range writes {
		w.m.written = w.v
	}
	c.persistedEpoch, c.dirtyAll, c.dirty = c.epoch, false, nil
	g.mu.persisted = true
	return nil
}

// restoreConsumerLocked brings back a KIP-848 group's state and members at
// Open. What is derived is rebuilt (owners, static members, compiled
// regexes); each member's session starts afresh, and so does the
// rebalance timeout of a member that was revoking partitions.
func (g *group) restoreConsumerLocked(lc *loadedConsumer, now time.Time) {
	c := g.mu.consumer
	if lc.state != nil {
		c.assignmentEpoch = min(lc.state.assignmentEpoch, c.epoch)
		if validAssignor(lc.state.assignor) {
			c.assignor = lc.state.assignor
		}
		c.metaSig = lc.state.metaSig
		c.writtenState = lc.stateRaw
	}
	// Members without a state key (never written so) would keep metaSig
	// empty: the first heartbeat finds the metadata changed and
	// recomputes the target at a new epoch.
	for _, m := range lc.members {
		if m.regex != "" {
			re, err := compileSubscription(m.regex)
			if err != nil {
				g.gs.log.Error("restore consumer group member regex", "group", g.name, "member_id", m.id, "regex", m.regex, "err", err)
			}
			m.re = re
		}
		m.session = now.Add(g.gs.opts.ConsumerSessionTimeout)
		if m.state == memberUnrevoked {
			m.revokeBy = now.Add(m.rebalance)
		}
		c.members[m.id] = m
		if m.instanceID != nil {
			c.static[*m.instanceID] = m.id
		}
		c.claimLocked(m, m.assigned)
		c.claimLocked(m, m.revoking)
	}
	g.wakeAtLocked(c.nextDeadlineLocked())
}

// loadConsumers reads the consumer family into out, by group.
func loadConsumers(db *pebble.DB, out map[string]*loadedConsumer) error {
	return keyspan.ScanFamily(db, famConsumer, func(k, v []byte) error {
		group, member, err := parseConsumerKey(k)
		if err != nil {
			return err
		}
		lc := out[group]
		if lc == nil {
			lc = &loadedConsumer{}
			out[group] = lc
		}
		raw := bytes.Clone(v)
		if member == "" {
			r, err := decodeConsumerStateRecord(raw)
			if err != nil {
				return fmt.Errorf("consumer group %q: %w", group, err)
			}
			lc.state, lc.stateRaw = &r, raw
			return nil
		}
		m, err := decodeConsumerMember(member, raw)
		if err != nil {
			return fmt.Errorf("consumer group %q member %q: %w", group, member, err)
		}
		m.written = raw
		lc.members = append(lc.members, m)
		return nil
	})
}
