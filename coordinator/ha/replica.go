package ha

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"

	"github.com/cockroachdb/pebble"
	"github.com/nats-io/nats.go"

	"github.com/floe-io/floe/internal/pebblelog"
)

// errGap is returned when the stream no longer holds the entry a replica
// needs next (it was trimmed below a snapshot): the replica must restore a
// snapshot.
var errGap = errors.New("ha: the coordinator log no longer holds this replica's next entry")

// replica is a standby's copy of the coordinator's two databases, kept up to
// date by applying the log's entries in order. Each database records the
// last entry applied to it (appliedKey) in the batch that applies it, so
// that a replica that stops anywhere resumes where it was.
type replica struct {
	log    *slog.Logger
	coord  *pebble.DB
	groups *pebble.DB
	// applied is each database's position; next is the sequence of the
	// next message to read.
	applied map[string]position
	next    uint64
	// empty is set when neither database held anything when opened;
	// fromScratch when the replica applies the log from its start, with
	// no snapshot.
	empty, fromScratch bool
	// partial collects the parts of an entry split over several messages.
	partial struct {
		kind  string
		parts [][]byte
		n     int
	}
	// leader is the last leader entry read; broken is set once a message
	// of an older term got in after it (see apply).
	leader leaderEntry
	broken bool
}

// leaderEntry is the entry a new leader appends before anything else,
// fencing the appends of the one before (format 1, JSON).
type leaderEntry struct {
	Term uint64 `json:"term"`
	ID   string `json:"id"`
	// Time is when the leader took over, in Unix milliseconds.
	Time int64 `json:"time_ms"`
	// Adopted is set by a leader whose state predates the log (a build
	// before it): a replica needs the snapshot it takes to start from.
	Adopted bool `json:"adopted,omitempty"`
}

// snapshotEntry is appended once a snapshot covering every entry up to Seq
// is in the object store (format 1, JSON).
type snapshotEntry struct {
	Seq uint64 `json:"seq"`
}

// openReplica opens (creating) the databases in coordDir and groupsDir.
func openReplica(coordDir, groupsDir string, log *slog.Logger) (*replica, error) {
	r := &replica{log: log, applied: map[string]position{}}
	var err error
	if r.coord, err = pebble.Open(coordDir, &pebble.Options{Logger: pebblelog.New(nil, "ha")}); err != nil {
		return nil, fmt.Errorf("ha: open %s: %w", coordDir, err)
	}
	if r.groups, err = pebble.Open(groupsDir, &pebble.Options{Logger: pebblelog.New(nil, "ha")}); err != nil {
		r.coord.Close()
		return nil, fmt.Errorf("ha: open %s: %w", groupsDir, err)
	}
	r.empty = true
	for kind, db := range r.dbs() {
		pos, ok, err := readApplied(db)
		if err != nil {
			r.close()
			return nil, err
		}
		r.applied[kind] = pos
		if ok || !isEmpty(db) {
			r.empty = false
		}
	}
	r.next = min(r.applied[dbCoordinator].seq, r.applied[dbGroups].seq) + 1
	// The term in force where the replica resumes: the term of the
	// smaller of its positions (terms only grow along the log). Entries
	// of older terms from there on are a deposed leader's (see apply).
	from := r.applied[dbCoordinator]
	if g := r.applied[dbGroups]; g.seq < from.seq {
		from = g
	}
	r.leader.Term = from.term
	return r, nil
}

// dbs returns the databases by entry kind.
func (r *replica) dbs() map[string]*pebble.DB {
	return map[string]*pebble.DB{dbCoordinator: r.coord, dbGroups: r.groups}
}

// isEmpty reports whether db holds no key.
func isEmpty(db *pebble.DB) bool {
	it, err := db.NewIter(nil)
	if err != nil {
		return false
	}
	defer it.Close()
	return !it.First()
}

// close closes the databases.
func (r *replica) close() error {
	var errs []error
	if r.coord != nil {
		errs = append(errs, r.coord.Close())
		r.coord = nil
	}
	if r.groups != nil {
		errs = append(errs, r.groups.Close())
		r.groups = nil
	}
	return errors.Join(errs...)
}

// position returns the sequence up to which every entry is applied.
func (r *replica) position() uint64 { return r.next - 1 }

// apply applies the message at seq, which must be the next one: a
// sequence beyond it means the stream lost what lies between (errGap).
func (r *replica) apply(seq uint64, h nats.Header, data []byte) error {
	if seq < r.next {
		return nil // read again after a consumer restart
	}
	if seq > r.next {
		return fmt.Errorf("%w: message %d, expected %d", errGap, seq, r.next)
	}
	if f := h.Get(hdrFormat); f != logFormat {
		return fmt.Errorf("ha: log message %d has format %q; this build reads %q", seq, f, logFormat)
	}
	kind := h.Get(hdrDB)
	term, err := strconv.ParseUint(h.Get(hdrTerm), 10, 64)
	if err != nil {
		return fmt.Errorf("ha: log message %d has a bad term %q", seq, h.Get(hdrTerm))
	}
	// Only the leader of the newest term appends, each message right
	// after its previous one: a message of an older term (a deposed
	// leader's append whose expected sequence the new leader's appends
	// came round to) is skipped, and so is every message of the newest
	// term after it until the next leader entry, for its leader computed
	// them on an append the log refused. Those leaders answered nothing
	// for them (their lease ran out, or their log failed).
	switch {
	case kind == kindLeader && term >= r.leader.Term:
		r.broken = false // a new leader: applyEntry takes its term
	case term < r.leader.Term || r.broken:
		if term < r.leader.Term {
			r.broken = true
		}
		r.log.Warn("skipping a log message appended out of turn", "seq", seq, "term", term, "leader_term", r.leader.Term)
		r.next = seq + 1
		return nil
	case term > r.leader.Term:
		r.leader.Term = term // its leader entry is before where this replica resumed
	}
	entry, complete, err := r.assemble(seq, kind, h.Get(hdrPart), data)
	if err != nil {
		return err
	}
	if complete {
		if err := r.applyEntry(position{seq, term, seq}, kind, entry); err != nil {
			return err
		}
	}
	r.next = seq + 1
	return nil
}

// assemble adds a message to the entry being collected, returning the
// entry once it is whole. An entry left unfinished (its leader failed
// between parts) is dropped when the next one starts.
func (r *replica) assemble(seq uint64, kind, part string, data []byte) ([]byte, bool, error) {
	p := &r.partial
	if part == "" {
		if p.parts != nil {
			r.log.Warn("dropping an unfinished log entry", "kind", p.kind, "parts", len(p.parts), "of", p.n, "at", seq)
			p.parts = nil
		}
		return data, true, nil
	}
	i, n, err := parsePart(part)
	if err != nil {
		return nil, false, fmt.Errorf("ha: log message %d: %w", seq, err)
	}
	if i == 1 || p.parts == nil || p.kind != kind || p.n != n || len(p.parts) != i-1 {
		if p.parts != nil {
			r.log.Warn("dropping an unfinished log entry", "kind", p.kind, "parts", len(p.parts), "of", p.n, "at", seq)
		}
		p.parts, p.kind, p.n = nil, kind, n
		if i != 1 {
			return nil, false, nil // the rest of an entry whose start was dropped
		}
	}
	p.parts = append(p.parts, data) // each message's own bytes
	if i < n {
		return nil, false, nil
	}
	entry := bytes.Join(p.parts, nil)
	p.parts = nil
	return entry, true, nil
}

// parsePart parses a part header, "i/n".
func parsePart(s string) (i, n int, err error) {
	a, b, ok := strings.Cut(s, "/")
	if ok {
		if i, err = strconv.Atoi(a); err == nil {
			n, err = strconv.Atoi(b)
		}
	}
	if !ok || err != nil || i < 1 || n < 2 || i > n {
		return 0, 0, fmt.Errorf("bad part %q", s)
	}
	return i, n, nil
}

// applyEntry applies a whole entry whose last message is at pos.
func (r *replica) applyEntry(pos position, kind string, entry []byte) error {
	seq := pos.seq
	switch kind {
	case dbCoordinator, dbGroups:
		if seq <= r.applied[kind].seq {
			return nil
		}
		if err := checkBatch(entry); err != nil {
			return fmt.Errorf("ha: log entry %d: %w", seq, err)
		}
		db := r.dbs()[kind]
		b := db.NewBatch()
		defer b.Close()
		// The entry is this replica's own (a message's bytes, or the
		// parts joined): the batch may write to it.
		if err := b.SetRepr(entry); err != nil {
			return fmt.Errorf("ha: log entry %d: %w", seq, err)
		}
		_ = b.Set(appliedKey, pos.encode(), nil)
		if err := b.Commit(pebble.NoSync); err != nil {
			return fmt.Errorf("ha: apply log entry %d: %w", seq, err)
		}
		r.applied[kind] = pos
	case kindLeader:
		var l leaderEntry
		if err := json.Unmarshal(entry, &l); err != nil {
			return fmt.Errorf("ha: leader entry %d: %w", seq, err)
		}
		if l.Adopted && r.fromScratch {
			return fmt.Errorf("ha: leader entry %d: the log starts from a state %s adopted from before the log, and no snapshot of it is here to start from (is the snapshot store the leader's?)", seq, l.ID)
		}
		r.leader = l
	case kindSnapshot:
		// Everything up to here is applied: say so in both databases,
		// so that one rarely written does not hold a restart far back.
		for kind, db := range r.dbs() {
			if err := stamp(db, pos); err != nil {
				return err
			}
			r.applied[kind] = pos
		}
	default:
		return fmt.Errorf("ha: log entry %d is of unknown kind %q", seq, kind)
	}
	return nil
}

// checkBatch checks that repr is a whole Pebble batch of sets, deletes and
// range deletes (what the coordinators write), so that nothing Pebble would
// choke on reaches it: record kind(1), key (uvarint length and bytes), and
// for a set or a range delete a value (the range's end key) the same way.
func checkBatch(repr []byte) error {
	if len(repr) < 12 {
		return fmt.Errorf("a batch of %d bytes", len(repr))
	}
	count := binary.LittleEndian.Uint32(repr[8:12])
	p := repr[12:]
	str := func() bool {
		n, m := binary.Uvarint(p)
		if m <= 0 || n > uint64(len(p)-m) {
			return false
		}
		p = p[m+int(n):]
		return true
	}
	for i := uint32(0); i < count; i++ {
		if len(p) == 0 {
			return fmt.Errorf("a batch of %d records ends after %d", count, i)
		}
		kind := pebble.InternalKeyKind(p[0])
		p = p[1:]
		ok := str()
		switch kind {
		case pebble.InternalKeyKindSet, pebble.InternalKeyKindRangeDelete:
			ok = ok && str()
		case pebble.InternalKeyKindDelete, pebble.InternalKeyKindSingleDelete:
		default:
			return fmt.Errorf("a batch with a record of kind %v", kind)
		}
		if !ok {
			return fmt.Errorf("a corrupt batch: record %d of %d", i, count)
		}
	}
	if len(p) != 0 {
		return fmt.Errorf("a batch with %d bytes after its %d records", len(p), count)
	}
	return nil
}
