package groups

import (
	"encoding/binary"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-io/floe/internal/valenc"
)

// A Stable classic group's members are written down with the generation
// they hold (the stable family), so that a coordinator restart, a deploy or
// a failover, costs the group nothing: its members' heartbeats and commits
// go on being accepted, as Kafka's coordinator reloads a group's members
// from __consumer_offsets. Only a Stable group is written down; one caught
// mid-rebalance comes back Empty and its members rejoin.

// famStable is the key family of Stable groups' members.
const famStable byte = 's'

// stableRecord is a Stable classic group's generation as it was completed.
type stableRecord struct {
	// generation must match the group record's: a snapshot of an older
	// generation (never left behind by a complete write) is ignored.
	generation int32
	protocol   string
	leader     string
	members    []memberRecord
}

// memberRecord is one member of a stableRecord.
type memberRecord struct {
	id          string
	instanceID  *string
	clientID    string
	clientHost  string
	protocols   []kmsg.JoinGroupRequestProtocol
	sessionMs   int64
	rebalanceMs int64
	assignment  []byte
}

func stableKey(group string) []byte {
	k := make([]byte, 0, 1+len(group))
	k = append(k, famStable)
	return append(k, group...)
}

func (r stableRecord) encode() []byte {
	v := []byte{valueV1}
	v = binary.AppendVarint(v, int64(r.generation))
	v = valenc.AppendString(v, r.protocol)
	v = valenc.AppendString(v, r.leader)
	v = binary.AppendUvarint(v, uint64(len(r.members)))
	for _, m := range r.members {
		v = valenc.AppendString(v, m.id)
		if m.instanceID != nil {
			v = append(v, 1)
			v = valenc.AppendString(v, *m.instanceID)
		} else {
			v = append(v, 0)
		}
		v = valenc.AppendString(v, m.clientID)
		v = valenc.AppendString(v, m.clientHost)
		v = binary.AppendUvarint(v, uint64(len(m.protocols)))
		for _, p := range m.protocols {
			v = valenc.AppendString(v, p.Name)
			v = valenc.AppendString(v, string(p.Metadata))
		}
		v = binary.AppendVarint(v, m.sessionMs)
		v = binary.AppendVarint(v, m.rebalanceMs)
		v = valenc.AppendString(v, string(m.assignment))
	}
	return v
}

// decodeStableRecord reads a stableRecord; counts are bounded by the bytes
// left, so that a corrupt value cannot make it allocate.
func decodeStableRecord(b []byte) (stableRecord, error) {
	d := valenc.New("stable group", b)
	var r stableRecord
	r.generation = int32(d.Varint())
	r.protocol = d.String()
	r.leader = d.String()
	n := d.Uvarint()
	if n > uint64(len(b)) {
		n = 0
		d.Bytes(uint64(len(b)) + 1) // fails: more members than bytes
	}
	for i := uint64(0); i < n && d.Err() == nil; i++ {
		var m memberRecord
		m.id = d.String()
		if d.Byte() == 1 {
			s := d.String()
			m.instanceID = &s
		}
		m.clientID = d.String()
		m.clientHost = d.String()
		np := d.Uvarint()
		if np > uint64(len(b)) {
			d.Bytes(uint64(len(b)) + 1)
			break
		}
		for j := uint64(0); j < np && d.Err() == nil; j++ {
			name := d.String()
			meta := []byte(d.String())
			m.protocols = append(m.protocols, kmsg.JoinGroupRequestProtocol{Name: name, Metadata: meta})
		}
		m.sessionMs = d.Varint()
		m.rebalanceMs = d.Varint()
		m.assignment = []byte(d.String())
		r.members = append(r.members, m)
	}
	return r, d.Done("stable group")
}

// stableLocked is the group's record of its current Stable generation.
func (g *group) stableLocked() stableRecord {
	r := stableRecord{generation: g.mu.generation, protocol: g.mu.protocol, leader: g.mu.leader}
	for _, m := range g.sortedMembersLocked() {
		r.members = append(r.members, memberRecord{
			id: m.id, instanceID: m.instanceID, clientID: m.clientID, clientHost: m.clientHost,
			protocols: m.protocols, sessionMs: m.session.Milliseconds(), rebalanceMs: m.rebalance.Milliseconds(),
			assignment: m.assignment,
		})
	}
	return r
}

// restoreStableLocked brings back a Stable group's members at Open. Their
// sessions start afresh: a member that does not heartbeat within its
// session timeout expires, and the group rebalances without it.
func (g *group) restoreStableLocked(r stableRecord, now time.Time) {
	g.mu.protocol, g.mu.leader = r.protocol, r.leader
	for _, mr := range r.members {
		m := &member{
			id: mr.id, instanceID: mr.instanceID, clientID: mr.clientID, clientHost: mr.clientHost,
			protocolType: g.mu.protocolType, protocols: mr.protocols,
			session:    time.Duration(mr.sessionMs) * time.Millisecond,
			rebalance:  time.Duration(mr.rebalanceMs) * time.Millisecond,
			assignment: mr.assignment,
		}
		g.mu.members[m.id] = m
		for _, p := range m.protocols {
			g.mu.protocols[p.Name]++
		}
		if m.instanceID != nil {
			g.mu.static[*m.instanceID] = m.id
		}
		m.deadline = now.Add(m.session)
		g.wakeAtLocked(m.deadline)
	}
	if _, ok := g.mu.members[g.mu.leader]; !ok {
		g.mu.leader = ""
		if ms := g.sortedMembersLocked(); len(ms) > 0 {
			g.mu.leader = ms[0].id
		}
	}
	g.setStateLocked(Stable)
	g.computeSubscribedLocked()
}

// validStable reports whether r can be restored into a group whose record
// is gr: the same classic generation, with members.
func validStable(r stableRecord, gr groupRecord) bool {
	return !gr.consumer && r.generation == gr.generation && len(r.members) > 0 && gr.protocolType != ""
}
