package acls

import (
	"context"
	"errors"
	"maps"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-io/floe/coordapi"
)

// memRows is Rows in memory; fail fails the writes.
type memRows struct {
	m       map[string][]byte
	version uint64
	fail    bool
}

func (r *memRows) Apply(sets [][2][]byte, deletes [][]byte, version uint64) error {
	if r.fail {
		return errors.New("disk full")
	}
	for _, kv := range sets {
		r.m[string(kv[0])] = slices.Clone(kv[1])
	}
	for _, k := range deletes {
		delete(r.m, string(k))
	}
	r.version = version
	return nil
}

func (r *memRows) Scan(fn func(key, value []byte) error) error {
	for _, k := range slices.Sorted(maps.Keys(r.m)) {
		if err := fn([]byte(k), r.m[k]); err != nil {
			return err
		}
	}
	return nil
}

func (r *memRows) Version() (uint64, error) { return r.version, nil }

func binding(topic, principal string, op kmsg.ACLOperation) coordapi.ACLBinding {
	return coordapi.ACLBinding{ResourceType: kmsg.ACLResourceTypeTopic, PatternType: kmsg.ACLResourcePatternTypeLiteral,
		ResourceName: topic, Principal: principal, Host: "*", Operation: op, Permission: kmsg.ACLPermissionTypeAllow}
}

// Changes bump the counter once each and notify subscribers with it; a
// change whose write fails changes nothing; the rows load back the same.
func TestStore(t *testing.T) {
	ctx := context.Background()
	rows := &memRows{m: map[string][]byte{}}
	s, err := Open(rows, nil)
	if err != nil {
		t.Fatal(err)
	}
	var notices []uint64
	cancel := s.SubscribeACLs(func(v uint64) { notices = append(notices, v) })
	defer cancel()
	a, b := binding("t", "User:alice", kmsg.ACLOperationRead), binding("t", "User:bob", kmsg.ACLOperationWrite)
	if err := s.CreateACLs(ctx, []coordapi.ACLBinding{a, b, a}); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateACLs(ctx, []coordapi.ACLBinding{a}); err != nil { // already there: no change
		t.Fatal(err)
	}
	rows.fail = true
	if _, err := s.DeleteACLs(ctx, []coordapi.ACLFilter{{ResourceType: kmsg.ACLResourceTypeAny, PatternType: kmsg.ACLResourcePatternTypeAny,
		Operation: kmsg.ACLOperationAny, Permission: kmsg.ACLPermissionTypeAny}}); err == nil {
		t.Fatal("a delete whose write failed succeeded")
	}
	rows.fail = false
	alice := "User:alice"
	deleted, err := s.DeleteACLs(ctx, []coordapi.ACLFilter{{ResourceType: kmsg.ACLResourceTypeAny, PatternType: kmsg.ACLResourcePatternTypeAny,
		Principal: &alice, Operation: kmsg.ACLOperationAny, Permission: kmsg.ACLPermissionTypeAny}})
	if err != nil || len(deleted) != 1 || !slices.Equal(deleted[0], []coordapi.ACLBinding{a}) {
		t.Fatalf("deleted %v, %v; want alice's binding", deleted, err)
	}
	if !slices.Equal(notices, []uint64{1, 2}) {
		t.Fatalf("notices %v, want [1 2]: one per change", notices)
	}
	again, err := Open(rows, nil)
	if err != nil {
		t.Fatal(err)
	}
	all := coordapi.ACLFilter{ResourceType: kmsg.ACLResourceTypeAny, PatternType: kmsg.ACLResourcePatternTypeAny,
		Operation: kmsg.ACLOperationAny, Permission: kmsg.ACLPermissionTypeAny}
	got, _ := again.DescribeACLs(ctx, all)
	v, _ := again.ACLVersion(ctx)
	if !slices.Equal(got, []coordapi.ACLBinding{b}) || v != 2 {
		t.Fatalf("loaded back %v at version %d, want bob's binding at 2", got, v)
	}
	if err := s.CreateACLs(ctx, []coordapi.ACLBinding{{}}); err == nil {
		t.Fatal("an invalid binding was created")
	}
}

// FuzzDecodeACL: a corrupt row fails to decode, never panics.
func FuzzDecodeACL(f *testing.F) {
	b := binding("t", "User:alice", kmsg.ACLOperationRead)
	f.Add(encodeACL(&b))
	f.Fuzz(func(t *testing.T, v []byte) {
		b, err := decodeACL(v)
		if err != nil {
			return
		}
		if b2, err := decodeACL(encodeACL(&b)); err != nil || b2 != b {
			t.Fatalf("a decoded row does not round-trip: %v", err)
		}
	})
}
