package users

import (
	"context"
	"errors"
	"maps"
	"slices"
	"testing"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/sasl"
)

// memRows is Rows in memory; fail fails the writes.
type memRows struct {
	m    map[string][]byte
	fail bool
}

func (r *memRows) Apply(sets [][2][]byte, deletes [][]byte) error {
	if r.fail {
		return errors.New("disk full")
	}
	for _, kv := range sets {
		r.m[string(kv[0])] = slices.Clone(kv[1])
	}
	for _, k := range deletes {
		delete(r.m, string(k))
	}
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

func upsert(t *testing.T, user string) coordapi.ScramUpsertion {
	t.Helper()
	salt := []byte("salt-" + user)
	salted, err := sasl.SaltPassword(coordapi.ScramSHA256, "pw-"+user, salt, 4096)
	if err != nil {
		t.Fatal(err)
	}
	return coordapi.ScramUpsertion{User: user, Mechanism: coordapi.ScramSHA256, Iterations: 4096, Salt: salt, SaltedPassword: salted}
}

// A change whose write fails is not installed; the rows written load back
// as the same credentials.
func TestStoreWrites(t *testing.T) {
	ctx := context.Background()
	rows := &memRows{m: map[string][]byte{}}
	s, err := Open(rows, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := s.AlterUserScramCredentials(ctx, nil, []coordapi.ScramUpsertion{upsert(t, "alice")}); err != nil || res[0].ErrorCode != 0 {
		t.Fatalf("alter: %+v %v", res, err)
	}
	rows.fail = true
	if _, err := s.AlterUserScramCredentials(ctx, nil, []coordapi.ScramUpsertion{upsert(t, "bob")}); err == nil {
		t.Fatal("an alter whose write failed succeeded")
	}
	if _, ok, _ := s.UserScramCredential(ctx, "bob", coordapi.ScramSHA256); ok {
		t.Fatal("bob's credential was installed though its write failed")
	}
	rows.fail = false
	want, _, _ := s.UserScramCredential(ctx, "alice", coordapi.ScramSHA256)
	again, err := Open(rows, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, ok, _ := again.UserScramCredential(ctx, "alice", coordapi.ScramSHA256)
	if !ok || got.Iterations != want.Iterations || string(got.StoredKey) != string(want.StoredKey) || string(got.ServerKey) != string(want.ServerKey) {
		t.Fatalf("alice loaded back as %+v (ok %v), want %+v", got, ok, want)
	}
}

// FuzzDecodeUser: a corrupt row fails to decode, never panics.
func FuzzDecodeUser(f *testing.F) {
	f.Add(userKey(coordapi.ScramSHA256, "alice"), encodeUser(coordapi.ScramCredential{Iterations: 4096, Salt: []byte("s"), StoredKey: []byte("k"), ServerKey: []byte("v")}))
	f.Fuzz(func(t *testing.T, k, v []byte) {
		user, cred, err := decodeUser(k, v)
		if err != nil {
			return
		}
		if u2, c2, err := decodeUser(userKey(cred.Mechanism, user), encodeUser(cred)); err != nil || u2 != user || c2.Iterations != cred.Iterations {
			t.Fatalf("a decoded row does not round-trip: %v", err)
		}
	})
}
