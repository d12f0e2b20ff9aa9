package acls

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/internal/valenc"
)

// Rows is where the bindings and their change counter live: a key family
// and a meta row of the batch coordinator's replicated state.
type Rows interface {
	// Apply sets sets' key-value pairs, deletes deletes and sets the
	// change counter to version, in one durable write.
	Apply(sets [][2][]byte, deletes [][]byte, version uint64) error
	// Scan calls fn with every binding row in key order; key and value
	// are valid during the call only.
	Scan(fn func(key, value []byte) error) error
	// Version returns the change counter, 0 when none was written.
	Version() (uint64, error)
}

// Store is the cluster's ACL bindings, all in memory, each change written
// through Rows before it is installed.
type Store struct {
	rows Rows
	log  *slog.Logger

	mu       sync.RWMutex
	bindings map[coordapi.ACLBinding]struct{}
	version  uint64

	subs struct {
		sync.Mutex
		next int
		fns  map[int]func(uint64)
	}
}

// Open loads the bindings of rows. log receives a line per change (nil:
// none).
func Open(rows Rows, log *slog.Logger) (*Store, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Store{rows: rows, log: log, bindings: map[coordapi.ACLBinding]struct{}{}}
	err := rows.Scan(func(k, v []byte) error {
		b, err := decodeACL(v)
		if err != nil {
			return fmt.Errorf("acl %x: %w", k, err)
		}
		if string(aclKey(&b)) != string(k) {
			return fmt.Errorf("acl row %x holds another binding (%+v)", k, b)
		}
		s.bindings[b] = struct{}{}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("acls: load: %w", err)
	}
	if s.version, err = rows.Version(); err != nil {
		return nil, fmt.Errorf("acls: load version: %w", err)
	}
	return s, nil
}

// aclKey is a binding's row key: the binding itself.
func aclKey(b *coordapi.ACLBinding) []byte {
	k := make([]byte, 0, 7+len(b.ResourceName)+len(b.Principal)+len(b.Host))
	k = append(k, byte(b.ResourceType), byte(b.PatternType))
	k = valenc.AppendString(k, b.ResourceName)
	k = valenc.AppendString(k, b.Principal)
	k = valenc.AppendString(k, b.Host)
	return append(k, byte(b.Operation), byte(b.Permission))
}

func encodeACL(b *coordapi.ACLBinding) []byte {
	v := []byte{valenc.Version1, byte(b.ResourceType), byte(b.PatternType), byte(b.Operation), byte(b.Permission)}
	v = valenc.AppendString(v, b.ResourceName)
	v = valenc.AppendString(v, b.Principal)
	return valenc.AppendString(v, b.Host)
}

func decodeACL(v []byte) (coordapi.ACLBinding, error) {
	d := valenc.New("acl", v)
	var b coordapi.ACLBinding
	b.ResourceType = kmsg.ACLResourceType(d.Byte())
	b.PatternType = kmsg.ACLResourcePatternType(d.Byte())
	b.Operation = kmsg.ACLOperation(d.Byte())
	b.Permission = kmsg.ACLPermissionType(d.Byte())
	b.ResourceName = d.String()
	b.Principal = d.String()
	b.Host = d.String()
	return b, d.Done("acl")
}

// CreateACLs stores bindings in one durable write, skipping those already
// stored; see coordapi.ACLStore. Every binding must pass
// coordapi.ValidateBinding, else nothing is stored and the error wraps
// kerr.InvalidRequest.
func (s *Store) CreateACLs(_ context.Context, bindings []coordapi.ACLBinding) error {
	for _, b := range bindings {
		if err := coordapi.ValidateBinding(b); err != nil {
			return fmt.Errorf("create acl %+v: %w", b, err)
		}
	}
	var version uint64
	defer func() { s.notify(version) }()
	s.mu.Lock()
	defer s.mu.Unlock()
	var add []coordapi.ACLBinding
	for _, b := range bindings {
		if _, ok := s.bindings[b]; !ok && !slices.Contains(add, b) {
			add = append(add, b)
		}
	}
	if len(add) == 0 {
		return nil
	}
	next := s.version + 1
	sets := make([][2][]byte, len(add))
	for i := range add {
		sets[i] = [2][]byte{aclKey(&add[i]), encodeACL(&add[i])}
	}
	if err := s.rows.Apply(sets, nil, next); err != nil {
		return fmt.Errorf("create acls: commit: %w", err)
	}
	for _, b := range add {
		s.bindings[b] = struct{}{}
		s.log.Info("acl created", logAttrs(&b)...)
	}
	s.version, version = next, next
	return nil
}

// DeleteACLs removes the bindings each filter matches in one durable write
// and returns them per filter; see coordapi.ACLStore. Every filter must
// pass coordapi.ValidateFilter, else nothing is deleted and the error wraps
// kerr.InvalidRequest.
func (s *Store) DeleteACLs(_ context.Context, filters []coordapi.ACLFilter) ([][]coordapi.ACLBinding, error) {
	for _, f := range filters {
		if err := coordapi.ValidateFilter(f); err != nil {
			return nil, fmt.Errorf("delete acls %+v: %w", f, err)
		}
	}
	var version uint64
	defer func() { s.notify(version) }()
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([][]coordapi.ACLBinding, len(filters))
	del := map[coordapi.ACLBinding]struct{}{}
	for i := range filters {
		out[i] = s.matchLocked(&filters[i])
		for _, b := range out[i] {
			del[b] = struct{}{}
		}
	}
	if len(del) == 0 {
		return out, nil
	}
	next := s.version + 1
	keys := make([][]byte, 0, len(del))
	for b := range del {
		keys = append(keys, aclKey(&b))
	}
	if err := s.rows.Apply(nil, keys, next); err != nil {
		return nil, fmt.Errorf("delete acls: commit: %w", err)
	}
	for b := range del {
		delete(s.bindings, b)
		s.log.Info("acl deleted", logAttrs(&b)...)
	}
	s.version, version = next, next
	return out, nil
}

// DescribeACLs returns the bindings filter matches, sorted; see
// coordapi.ACLStore.
func (s *Store) DescribeACLs(_ context.Context, filter coordapi.ACLFilter) ([]coordapi.ACLBinding, error) {
	if err := coordapi.ValidateFilter(filter); err != nil {
		return nil, fmt.Errorf("describe acls %+v: %w", filter, err)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.matchLocked(&filter), nil
}

// matchLocked returns the stored bindings f matches, sorted. s.mu must be
// held.
func (s *Store) matchLocked(f *coordapi.ACLFilter) []coordapi.ACLBinding {
	var out []coordapi.ACLBinding
	for b := range s.bindings {
		if f.Matches(&b) {
			out = append(out, b)
		}
	}
	slices.SortFunc(out, func(a, b coordapi.ACLBinding) int { return a.Compare(&b) })
	return out
}

// ACLVersion returns the change counter; see coordapi.ACLStore.
func (s *Store) ACLVersion(context.Context) (uint64, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.version, nil
}

// SubscribeACLs registers fn to be called with the new version after every
// change of the bindings committed. fn runs on the changing goroutine after
// its locks are released and should return quickly. The returned cancel
// stops further calls.
func (s *Store) SubscribeACLs(fn func(version uint64)) (cancel func()) {
	s.subs.Lock()
	defer s.subs.Unlock()
	if s.subs.fns == nil {
		s.subs.fns = map[int]func(uint64){}
	}
	id := s.subs.next
	s.subs.next++
	s.subs.fns[id] = fn
	return func() {
		s.subs.Lock()
		delete(s.subs.fns, id)
		s.subs.Unlock()
	}
}

// notify calls every subscriber with version, unless it is 0 (no change).
// Changes defer it before taking their lock.
func (s *Store) notify(version uint64) {
	if version == 0 {
		return
	}
	s.subs.Lock()
	fns := make([]func(uint64), 0, len(s.subs.fns))
	for _, fn := range s.subs.fns {
		fns = append(fns, fn)
	}
	s.subs.Unlock()
	for _, fn := range fns {
		fn(version)
	}
}

// logAttrs are a binding's log attributes.
func logAttrs(b *coordapi.ACLBinding) []any {
	return []any{"resource_type", b.ResourceType.String(), "pattern", b.PatternType.String(), "name", b.ResourceName,
		"principal", b.Principal, "host", b.Host, "operation", b.Operation.String(), "permission", b.Permission.String()}
}
