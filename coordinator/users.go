package coordinator

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/cockroachdb/pebble"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/internal/valenc"
	"github.com/floe-io/floe/sasl"
)

// SCRAM users (sasl/doc.go). A user's credential for one mechanism is one
// row; no password, nor salted password, is ever stored:
//
//	u <mechanism(1)> <user name> -> version 1, iterations (uvarint),
//	                                salt, stored key, server key (each
//	                                uvarint length, bytes)
//
// All rows are loaded at Open and kept in memory; AlterUserScramCredentials
// writes its changes in one synced batch.
const prefixUser byte = 'u'

func userKey(m coordapi.ScramMechanism, user string) []byte {
	return append([]byte{prefixUser, byte(m)}, user...)
}

func encodeUser(c coordapi.ScramCredential) []byte {
	b := []byte{valenc.Version1}
	b = binary.AppendUvarint(b, uint64(c.Iterations))
	b = valenc.AppendString(b, string(c.Salt))
	b = valenc.AppendString(b, string(c.StoredKey))
	return valenc.AppendString(b, string(c.ServerKey))
}

func decodeUser(k, v []byte) (string, coordapi.ScramCredential, error) {
	if len(k) < 2 {
		return "", coordapi.ScramCredential{}, fmt.Errorf("user key %x: too short", k)
	}
	d := valenc.New("user", v)
	c := coordapi.ScramCredential{Mechanism: coordapi.ScramMechanism(k[1])}
	c.Iterations = int32(d.Uvarint())
	c.Salt = []byte(d.String())
	c.StoredKey = []byte(d.String())
	c.ServerKey = []byte(d.String())
	return string(k[2:]), c, d.Done("user")
}

// userStore is the coordinator's SCRAM users in memory.
type userStore struct {
	sync.Mutex
	creds map[string]map[coordapi.ScramMechanism]coordapi.ScramCredential
}

func (c *Coordinator) loadUsers() error {
	c.users.creds = map[string]map[coordapi.ScramMechanism]coordapi.ScramCredential{}
	return c.scan(prefixUser, func(k, v []byte) error {
		user, cred, err := decodeUser(k, v)
		if err != nil {
			return err
		}
		c.users.setLocked(user, cred)
		return nil
	})
}

func (u *userStore) setLocked(user string, cred coordapi.ScramCredential) {
	m := u.creds[user]
	if m == nil {
		m = map[coordapi.ScramMechanism]coordapi.ScramCredential{}
		u.creds[user] = m
	}
	m[cred.Mechanism] = cred
}

// UserScramCredential returns user's stored credential for mechanism m,
// ok false when it has none: what a broker checks a SASL exchange against.
func (c *Coordinator) UserScramCredential(ctx context.Context, user string, m coordapi.ScramMechanism) (coordapi.ScramCredential, bool, error) {
	if err := c.enter(ctx); err != nil {
		return coordapi.ScramCredential{}, false, err
	}
	defer c.leave()
	c.users.Lock()
	defer c.users.Unlock()
	cred, ok := c.users.creds[user][m]
	return cred, ok, nil
}

// DescribeUserScramCredentials describes the named users' credentials
// (mechanisms and iterations), or every user's when users is empty, as
// Apache Kafka does: a user named twice is DUPLICATE_RESOURCE, an unknown
// one RESOURCE_NOT_FOUND, each in its own result.
func (c *Coordinator) DescribeUserScramCredentials(ctx context.Context, users []string) ([]coordapi.ScramUserInfo, error) {
	if err := c.enter(ctx); err != nil {
		return nil, err
	}
	defer c.leave()
	c.users.Lock()
	defer c.users.Unlock()
	describe := func(user string) coordapi.ScramUserInfo {
		info := coordapi.ScramUserInfo{User: user}
		for m, cred := range c.users.creds[user] {
			info.Credentials = append(info.Credentials, coordapi.ScramCredentialInfo{Mechanism: m, Iterations: cred.Iterations})
		}
		slices.SortFunc(info.Credentials, func(a, b coordapi.ScramCredentialInfo) int { return int(a.Mechanism) - int(b.Mechanism) })
		return info
	}
	var out []coordapi.ScramUserInfo
	if len(users) == 0 {
		for user := range c.users.creds {
			out = append(out, describe(user))
		}
		slices.SortFunc(out, func(a, b coordapi.ScramUserInfo) int { return strings.Compare(a.User, b.User) })
		return out, nil
	}
	count := map[string]int{}
	for _, u := range users {
		count[u]++
	}
	reported := map[string]bool{}
	for _, user := range users {
		if reported[user] {
			continue
		}
		reported[user] = true
		switch {
		case count[user] > 1:
			out = append(out, coordapi.ScramUserInfo{User: user, ErrorCode: kerr.DuplicateResource.Code,
				ErrorMessage: "Cannot describe SCRAM credentials for the same user twice in a single request: " + user})
		case len(c.users.creds[user]) == 0:
			out = append(out, coordapi.ScramUserInfo{User: user, ErrorCode: kerr.ResourceNotFound.Code,
				ErrorMessage: "Attempt to describe a user credential that does not exist: " + user})
		default:
			out = append(out, describe(user))
		}
	}
	return out, nil
}

// AlterUserScramCredentials deletes and sets users' SCRAM credentials, with
// Apache Kafka's checks, one result per user named (in the order first
// named). The accepted changes are written in one synced batch.
func (c *Coordinator) AlterUserScramCredentials(ctx context.Context, dels []coordapi.ScramDeletion, ups []coordapi.ScramUpsertion) ([]coordapi.ScramUserResult, error) {
	if err := c.enter(ctx); err != nil {
		return nil, err
	}
	defer c.leave()
	c.users.Lock()
	defer c.users.Unlock()

	var order []string
	results := map[string]*coordapi.ScramUserResult{}
	count := map[string]int{}
	note := func(user string) {
		if _, ok := results[user]; !ok {
			order = append(order, user)
			results[user] = &coordapi.ScramUserResult{User: user}
		}
		count[user]++
	}
	for _, d := range dels {
		note(d.User)
	}
	for _, u := range ups {
		note(u.User)
	}
	fail := func(user string, code *kerr.Error, msg string) {
		if r := results[user]; r.ErrorCode == 0 {
			r.ErrorCode, r.ErrorMessage = code.Code, msg
		}
	}
	for user, n := range count {
		if n > 1 {
			fail(user, kerr.DuplicateResource, "A user credential cannot be altered twice in the same request")
		}
		if user == "" {
			fail(user, kerr.UnacceptableCredential, "Username must not be empty")
		}
	}
	type set struct {
		user string
		cred coordapi.ScramCredential
	}
	var sets []set
	var deletes []coordapi.ScramDeletion
	for _, d := range dels {
		switch {
		case d.Mechanism != coordapi.ScramSHA256 && d.Mechanism != coordapi.ScramSHA512:
			fail(d.User, kerr.UnsupportedSaslMechanism, "Unknown SCRAM mechanism")
		default:
			if _, ok := c.users.creds[d.User][d.Mechanism]; !ok {
				fail(d.User, kerr.ResourceNotFound, "Attempt to delete a user credential that does not exist")
			}
		}
		deletes = append(deletes, d)
	}
	for _, u := range ups {
		switch {
		case u.Mechanism != coordapi.ScramSHA256 && u.Mechanism != coordapi.ScramSHA512:
			fail(u.User, kerr.UnsupportedSaslMechanism, "Unknown SCRAM mechanism")
			continue
		case u.Iterations < coordapi.ScramMinIterations:
			fail(u.User, kerr.UnacceptableCredential, fmt.Sprintf("Too few iterations: %d (at least %d)", u.Iterations, coordapi.ScramMinIterations))
			continue
		case u.Iterations > coordapi.ScramMaxIterations:
			fail(u.User, kerr.UnacceptableCredential, fmt.Sprintf("Too many iterations: %d (at most %d)", u.Iterations, coordapi.ScramMaxIterations))
			continue
		case len(u.Salt) == 0:
			fail(u.User, kerr.UnacceptableCredential, "Salt must not be empty")
			continue
		}
		cred, err := sasl.Derive(u.Mechanism, u.SaltedPassword, u.Salt, u.Iterations)
		if err != nil {
			fail(u.User, kerr.UnacceptableCredential, err.Error())
			continue
		}
		sets = append(sets, set{u.User, cred})
	}

	b := c.db.NewBatch()
	defer b.Close()
	writes := 0
	for _, d := range deletes {
		if results[d.User].ErrorCode == 0 {
			_ = b.Delete(userKey(d.Mechanism, d.User), nil)
			writes++
		}
	}
	for _, s := range sets {
		if results[s.user].ErrorCode == 0 {
			_ = b.Set(userKey(s.cred.Mechanism, s.user), encodeUser(s.cred), nil)
			writes++
		}
	}
	if writes > 0 {
		if err := c.write(b, pebble.Sync); err != nil {
			return nil, fmt.Errorf("alter user scram credentials: commit: %w", err)
		}
	}
	for _, d := range deletes {
		if results[d.User].ErrorCode == 0 {
			delete(c.users.creds[d.User], d.Mechanism)
			if len(c.users.creds[d.User]) == 0 {
				delete(c.users.creds, d.User)
			}
		}
	}
	for _, s := range sets {
		if results[s.user].ErrorCode == 0 {
			c.users.setLocked(s.user, s.cred)
		}
	}
	out := make([]coordapi.ScramUserResult, len(order))
	for i, user := range order {
		out[i] = *results[user]
		if out[i].ErrorCode == 0 {
			c.log.Info("user scram credentials altered", "user", user)
		} else {
			c.log.Info("user scram credentials not altered", "user", user, "error_code", out[i].ErrorCode, "message", out[i].ErrorMessage)
		}
	}
	return out, nil
}
