package groups

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/cockroachdb/pebble"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/groups/share"
	"github.com/floe-io/floe/internal/valenc"
)

// A share group is written down as a KIP-848 group is (consumer_store.go):
// the group record (type 2, the group epoch), one 'h' key with the
// assignment epoch and metadata digest, and one 'h' key per member; after
// each operation the touched members whose bytes changed are written, with
// the rows of share-partitions started or changed meanwhile (family 'q',
// package share), in one batch through the log before the heartbeat
// answers.

// famShare is the key family of share groups' state and members.
const famShare byte = 'h'

// sharePrefix is the prefix of every 'h' key of group: the key that is
// the prefix alone holds the group's state, the prefix and a member id
// (never empty) that member.
func sharePrefix(group string) []byte {
	k := make([]byte, 0, 3+len(group))
	k = append(k, famShare)
	k = binary.BigEndian.AppendUint16(k, uint16(len(group)))
	return append(k, group...)
}

func shareMemberKey(group, member string) []byte {
	return append(sharePrefix(group), member...)
}

// parseShareKey splits an 'h' key into its group and member id ("" for
// the group's state key).
func parseShareKey(k []byte) (group, member string, err error) {
	if len(k) < 3 || k[0] != famShare {
		return "", "", fmt.Errorf("groups: bad share group key %x", k)
	}
	n := int(binary.BigEndian.Uint16(k[1:]))
	if len(k) < 3+n {
		return "", "", fmt.Errorf("groups: bad share group key %x", k)
	}
	return string(k[3 : 3+n]), string(k[3+n:]), nil
}

// shareStateRecord is a share group's assignment state; its epoch is in
// the group record, written in the same batch.
type shareStateRecord struct {
	assignmentEpoch int32
	metaSig         string
}

func (r shareStateRecord) encode() []byte {
	v := []byte{valueV1}
	v = binary.AppendVarint(v, int64(r.assignmentEpoch))
	return valenc.AppendString(v, r.metaSig)
}

func decodeShareStateRecord(b []byte) (shareStateRecord, error) {
	d := valenc.New("share group", b)
	var r shareStateRecord
	r.assignmentEpoch = int32(d.Varint())
	r.metaSig = d.String()
	return r, d.Done("share group")
}

// encodeShareMember is m's record: everything but its id (the key's) and
// its session (it starts afresh at Open).
func encodeShareMember(m *shareMember) []byte {
	v := []byte{valueV1}
	v = appendOptString(v, m.rackID)
	v = valenc.AppendString(v, m.clientID)
	v = valenc.AppendString(v, m.clientHost)
	v = binary.AppendVarint(v, int64(m.epoch))
	v = binary.AppendVarint(v, int64(m.prevEpoch))
	v = binary.AppendUvarint(v, uint64(len(m.topics)))
	for _, t := range m.topics {
		v = valenc.AppendString(v, t)
	}
	v = appendPartitions(v, m.target)
	return appendPartitions(v, m.assigned)
}

func decodeShareMember(id string, b []byte) (*shareMember, error) {
	d := &memberDecoder{Decoder: valenc.New("share member", b)}
	m := &shareMember{id: id}
	m.rackID = d.optString()
	m.clientID = d.String()
	m.clientHost = d.String()
	m.epoch = int32(d.Varint())
	m.prevEpoch = int32(d.Varint())
	for n, i := d.count(), uint64(0); i < n && d.Err() == nil; i++ {
		m.topics = append(m.topics, d.String())
	}
	m.target = d.partitions()
	m.assigned = d.partitions()
	if d.bad != nil {
		return nil, fmt.Errorf("decode share member value: %w", d.bad)
	}
	if err := d.Done("share member"); err != nil {
		return nil, err
	}
	return m, nil
}

func (s *shareGroup) stateRecordLocked() shareStateRecord {
	return shareStateRecord{assignmentEpoch: s.assignmentEpoch, metaSig: s.metaSig}
}

// persistShareLocked writes what changed in the share group since its
// last write in one batch: the group record and state when they differ,
// the touched members whose records differ, deletions of members that are
// gone, and the queued share-partition rows. Nothing is written when
// nothing changed. On an error nothing is forgotten: the next operation
// tries again.
func (g *group) persistShareLocked() error {
	wait, err := g.persistShareStartLocked()
	if err != nil {
		return err
	}
	return wait()
}

// persistShareStartLocked is persistShareLocked returning before the write
// is durable (batch.start): the caller calls wait after releasing g.mu, and
// answers nothing derived from the write before it returns. The group's
// later writes are applied after this one (Pebble's WAL, or the log, keeps
// their order), so a later write's wait covers this one too.
func (g *group) persistShareStartLocked() (wait func() error, err error) {
	s := g.mu.share
	if s.epoch == s.persistedEpoch && len(s.dirty) == 0 && len(s.partRows) == 0 && s.writtenGroup != nil {
		return noWait, nil
	}
	gr := groupRecord{protocolType: shareProtocolType, generation: s.epoch, share: true}
	if s.emptyLocked() {
		gr.emptySinceMs = msOf(s.emptySince)
	}
	b := g.gs.newBatch()
	gv := gr.encode()
	if !bytes.Equal(gv, s.writtenGroup) {
		b.b.Set(groupKey(g.name), gv, nil)
	}
	sv := s.stateRecordLocked().encode()
	if !bytes.Equal(sv, s.writtenState) {
		b.b.Set(sharePrefix(g.name), sv, nil)
	}
	type write struct {
		m *shareMember
		v []byte
	}
	var writes []write
	check := func(m *shareMember) {
		if v := encodeShareMember(m); !bytes.Equal(v, m.written) {
			b.b.Set(shareMemberKey(g.name, m.id), v, nil)
			writes = append(writes, write{m, v})
		}
	}
	for id := range s.dirty {
		if m := s.members[id]; m != nil {
			check(m)
		} else {
			b.b.Delete(shareMemberKey(g.name, id), nil)
		}
	}
	for _, r := range s.partRows {
		b.applyShare(r)
	}
	wait, err = b.start(g.gs.db)
	if err != nil {
		return nil, err
	}
	s.writtenGroup, s.writtenState = gv, sv
	for _, w := range writes {
		w.m.written = w.v
	}
	s.persistedEpoch, s.dirty, s.partRows = s.epoch, nil, nil
	g.mu.persisted = true
	return wait, nil
}

// applyShare adds one share-partition mutation to the batch.
func (b batch) applyShare(m share.Mutation) {
	switch m.Op {
	case share.OpSet:
		b.b.Set(m.Key, m.Value, nil)
	case share.OpDelete:
		b.b.Delete(m.Key, nil)
	case share.OpDeleteRange:
		b.b.DeleteRange(m.Key, m.End, nil)
	}
}

// deleteShare forgets a share group's state, members and share-partitions.
func (b batch) deleteShare(name string) {
	p := sharePrefix(name)
	b.b.DeleteRange(p, prefixEnd(p), nil)
	lo, hi := share.GroupSpan(name)
	b.b.DeleteRange(lo, hi, nil)
}

// loadedShare is a share group's 'h' and 'q' keys as read at Open.
type loadedShare struct {
	state    *shareStateRecord
	stateRaw []byte
	members  []*shareMember
	// parts are the share-partitions' heads and ranges, by id.
	parts map[share.ID]*loadedSharePart
}

type loadedSharePart struct {
	head []byte
	rows []share.Row
}

func loadedShareOf(out map[string]*loadedShare, group string) *loadedShare {
	ls := out[group]
	if ls == nil {
		ls = &loadedShare{parts: map[share.ID]*loadedSharePart{}}
		out[group] = ls
	}
	return ls
}

// loadShares reads the 'h' and 'q' families into out, by group.
func loadShares(db *pebble.DB, out map[string]*loadedShare) error {
	it, err := db.NewIter(&pebble.IterOptions{LowerBound: []byte{famShare}, UpperBound: []byte{famShare + 1}})
	if err != nil {
		return err
	}
	for it.First(); it.Valid(); it.Next() {
		group, member, err := parseShareKey(it.Key())
		if err != nil {
			it.Close()
			return err
		}
		ls := loadedShareOf(out, group)
		raw := bytes.Clone(it.Value())
		if member == "" {
			r, err := decodeShareStateRecord(raw)
			if err != nil {
				it.Close()
				return fmt.Errorf("share group %q: %w", group, err)
			}
			ls.state, ls.stateRaw = &r, raw
			continue
		}
		m, err := decodeShareMember(member, raw)
		if err != nil {
			it.Close()
			return fmt.Errorf("share group %q member %q: %w", group, member, err)
		}
		m.written = raw
		ls.members = append(ls.members, m)
	}
	if err := it.Close(); err != nil {
		return err
	}
	lo, hi := share.FamilySpan()
	it, err = db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return err
	}
	for it.First(); it.Valid(); it.Next() {
		id, _, isRange, err := share.ParseKey(it.Key())
		if err != nil {
			it.Close()
			return err
		}
		ls := loadedShareOf(out, id.Group)
		lp := ls.parts[id]
		if lp == nil {
			lp = &loadedSharePart{}
			ls.parts[id] = lp
		}
		if isRange {
			lp.rows = append(lp.rows, share.Row{Key: bytes.Clone(it.Key()), Value: bytes.Clone(it.Value())})
		} else {
			lp.head = bytes.Clone(it.Value())
		}
	}
	return it.Close()
}

// restoreShareLocked brings back a share group's state, members and
// share-partitions at Open. Each member's session starts afresh; the
// share-partitions are loaded with the group's current configuration.
func (g *group) restoreShareLocked(ls *loadedShare, now time.Time) error {
	s := g.mu.share
	if ls.state != nil {
		s.assignmentEpoch = min(ls.state.assignmentEpoch, s.epoch)
		s.metaSig = ls.state.metaSig
		s.writtenState = ls.stateRaw
	}
	for _, m := range ls.members {
		m.session = now.Add(g.gs.opts.ShareSessionTimeout)
		s.members[m.id] = m
	}
	cfg := g.gs.shareConfig(g.name)
	for id, lp := range ls.parts {
		if lp.head == nil {
			return fmt.Errorf("share-partition %s: %w: ranges without a head", id, share.ErrCorrupt)
		}
		p, err := share.Load(id, cfg, lp.head, lp.rows)
		if err != nil {
			return err
		}
		t := topicID(id.Topic)
		if s.parts[t] == nil {
			s.parts[t] = make(map[int32]*share.Partition)
		}
		s.parts[t][id.Partition] = p
	}
	g.wakeAtLocked(s.nextDeadlineLocked())
	g.armAllLocksLocked()
	return nil
}

// sharePartitionLocked returns the group's share-partition of one partition, for
// tests and the share fetch path; nil when it was never started.
func (g *group) sharePartitionLocked(id coordapi.TopicID, partition int32) *share.Partition {
	if s := g.mu.share; s != nil {
		return s.parts[topicID(id)][partition]
	}
	return nil
}
