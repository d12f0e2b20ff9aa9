package sharegroups

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/cockroachdb/pebble"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/groups/members"
	"github.com/floe-io/floe/groups/share"
	"github.com/floe-io/floe/internal/keyspan"
	"github.com/floe-io/floe/internal/valenc"
)

// A share group is written down as package groups writes a KIP-848
// group: the group record (the Host's, type 2, the group epoch), one 'h' key with the
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
	v := []byte{valenc.Version1}
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
// its session (it starts afresh at Restore).
func encodeShareMember(m *member) []byte {
	v := []byte{valenc.Version1}
	v = members.AppendOptString(v, m.rackID)
	v = valenc.AppendString(v, m.clientID)
	v = valenc.AppendString(v, m.clientHost)
	v = binary.AppendVarint(v, int64(m.epoch))
	v = binary.AppendVarint(v, int64(m.prevEpoch))
	v = members.AppendStrings(v, m.topics)
	v = members.AppendPartitions(v, m.target)
	return members.AppendPartitions(v, m.assigned)
}

func decodeShareMember(id string, b []byte) (*member, error) {
	d := members.NewDecoder("share member", valenc.Version1, b)
	m := &member{id: id}
	m.rackID = d.OptString()
	m.clientID = d.String()
	m.clientHost = d.String()
	m.epoch = int32(d.Varint())
	m.prevEpoch = int32(d.Varint())
	m.topics = d.Strings()
	m.target = d.Partitions()
	m.assigned = d.Partitions()
	if err := d.Done(); err != nil {
		return nil, err
	}
	return m, nil
}

func (s *Group) stateRecordLocked() shareStateRecord {
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
// is durable (Batch.Start): the caller calls wait after unlocking g, and
// answers nothing derived from the write before it returns. The group's
// later writes are applied after this one (Pebble's WAL, or the log, keeps
// their order), so a later write's wait covers this one too.
func (g *group) persistShareStartLocked() (wait func() error, err error) {
	s := g.s
	if s.epoch == s.persistedEpoch && len(s.dirty) == 0 && len(s.partRows) == 0 && s.writtenGroup != nil {
		return noWait, nil
	}
	var emptySinceMs int64
	if s.Empty() {
		emptySinceMs = msOf(s.emptySince)
	}
	b := g.c.host.NewBatch()
	gk, gv := g.c.host.GroupRecord(g.name, s.epoch, emptySinceMs)
	if !bytes.Equal(gv, s.writtenGroup) {
		b.Set(gk, gv)
	}
	sv := s.stateRecordLocked().encode()
	if !bytes.Equal(sv, s.writtenState) {
		b.Set(sharePrefix(g.name), sv)
	}
	type write struct {
		m *member
		v []byte
	}
	var writes []write
	check := func(m *member) {
		if v := encodeShareMember(m); !bytes.Equal(v, m.written) {
			b.Set(shareMemberKey(g.name, m.id), v)
			writes = append(writes, write{m, v})
		}
	}
	for id := range s.dirty {
		if m := s.members[id]; m != nil {
			check(m)
		} else {
			b.Delete(shareMemberKey(g.name, id))
		}
	}
	for _, r := range s.partRows {
		applyMutation(b, r)
	}
	wait, err = b.Start()
	if err != nil {
		return nil, err
	}
	s.writtenGroup, s.writtenState = gv, sv
	for _, w := range writes {
		w.m.written = w.v
	}
	s.persistedEpoch, s.dirty, s.partRows = s.epoch, nil, nil
	g.SetPersisted()
	return wait, nil
}

// applyMutation adds one share-partition mutation to b.
func applyMutation(b Batch, m share.Mutation) {
	switch m.Op {
	case share.OpSet:
		b.Set(m.Key, m.Value)
	case share.OpDelete:
		b.Delete(m.Key)
	case share.OpDeleteRange:
		b.DeleteRange(m.Key, m.End)
	}
}

// DeleteGroup adds to b the deletion of share group name's state, members
// and share-partitions (its 'h' and 'q' keys): DeleteGroups, or keys left
// by a failed write under a group id that is no share group.
func DeleteGroup(b Batch, name string) {
	p := sharePrefix(name)
	b.DeleteRange(p, keyspan.PrefixEnd(p))
	lo, hi := share.GroupSpan(name)
	b.DeleteRange(lo, hi)
}

// Loaded is a share group's 'h' and 'q' keys as Load read them.
type Loaded struct {
	state    *shareStateRecord
	stateRaw []byte
	members  []*member
	// parts are the share-partitions' heads and ranges, by id.
	parts map[share.ID]*loadedPart
}

type loadedPart struct {
	head []byte
	rows []share.Row
}

func loadedOf(out map[string]*Loaded, group string) *Loaded {
	ls := out[group]
	if ls == nil {
		ls = &Loaded{parts: map[share.ID]*loadedPart{}}
		out[group] = ls
	}
	return ls
}

// Members is the number of members ls holds.
func (ls *Loaded) Members() int { return len(ls.members) }

// Load reads the 'h' and 'q' families into out, by group (at the Host's
// Open, before Restore).
func Load(db *pebble.DB, out map[string]*Loaded) error {
	err := keyspan.ScanFamily(db, famShare, func(k, v []byte) error {
		group, member, err := parseShareKey(k)
		if err != nil {
			return err
		}
		ls := loadedOf(out, group)
		raw := bytes.Clone(v)
		if member == "" {
			r, err := decodeShareStateRecord(raw)
			if err != nil {
				return fmt.Errorf("share group %q: %w", group, err)
			}
			ls.state, ls.stateRaw = &r, raw
			return nil
		}
		m, err := decodeShareMember(member, raw)
		if err != nil {
			return fmt.Errorf("share group %q member %q: %w", group, member, err)
		}
		m.written = raw
		ls.members = append(ls.members, m)
		return nil
	})
	if err != nil {
		return err
	}
	lo, hi := share.FamilySpan()
	return keyspan.Scan(db, lo, hi, func(k, v []byte) error {
		id, _, isRange, err := share.ParseKey(k)
		if err != nil {
			return err
		}
		ls := loadedOf(out, id.Group)
		lp := ls.parts[id]
		if lp == nil {
			lp = &loadedPart{}
			ls.parts[id] = lp
		}
		if isRange {
			lp.rows = append(lp.rows, share.Row{Key: bytes.Clone(k), Value: bytes.Clone(v)})
		} else {
			lp.head = bytes.Clone(v)
		}
		return nil
	})
}

// Restore makes e (its mutex held) the share group its group record
// names, at epoch, Empty since since, record being the record's bytes,
// and brings back its state, members and share-partitions from ls when
// there are any (at the Host's Open). Each member's session starts
// afresh; the share-partitions are loaded with the group's current
// configuration.
func (c *Coordinator) Restore(e Entry, epoch int32, since time.Time, record []byte, ls *Loaded, now time.Time) error {
	s := newGroup(epoch, since)
	s.writtenGroup = record
	e.SetShare(s)
	if ls == nil {
		return nil
	}
	g := c.open(e)
	if ls.state != nil {
		s.assignmentEpoch = min(ls.state.assignmentEpoch, s.epoch)
		s.metaSig = ls.state.metaSig
		s.writtenState = ls.stateRaw
	}
	for _, m := range ls.members {
		m.session = now.Add(g.c.opts.SessionTimeout)
		s.members[m.id] = m
	}
	cfg := g.c.host.Config(g.name).Partition
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
	g.WakeAt(s.NextDeadline())
	g.armAllLocksLocked()
	return nil
}

// Partition returns the group's share-partition of one partition; nil
// when it was never started. The Entry's mutex must be held while the
// share-partition is used.
func (s *Group) Partition(id coordapi.TopicID, partition int32) *share.Partition {
	return s.parts[topicID(id)][partition]
}

// sharePartitionLocked is g's share-partition of one partition; nil when
// g is no share group, or the share-partition was never started.
func (g *group) sharePartitionLocked(id coordapi.TopicID, partition int32) *share.Partition {
	if g.s == nil {
		return nil
	}
	return g.s.Partition(id, partition)
}
