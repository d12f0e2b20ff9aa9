package users

import (
	"context"
	"encoding/binary"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/internal/valenc"
	"github.com/floe-io/floe/sasl"
)

// userKey is a credential's row key: the mechanism, then the user name.
func userKey(m coordapi.ScramMechanism, user string) []byte {
	return append([]byte{byte(m)}, user...)
}

func encodeUser(c coordapi.ScramCredential) []byte {
	b := []byte{valenc.Version1}
	b = binary.AppendUvarint(b, uint64(c.Iterations))
	b = valenc.AppendString(b, string(c.Salt))
	b = valenc.AppendString(b, string(c.StoredKey))
	return valenc.AppendString(b, string(c.ServerKey))
}

func decodeUser(k, v []byte) (string, coordapi.ScramCredential, error) {
	if len(k) < 1 {
		return "", coordapi.ScramCredential{}, fmt.Errorf("user key %x: too short", k)
	}
	d := valenc.New("user", v)
	c := coordapi.ScramCredential{Mechanism: coordapi.ScramMechanism(k[0])}
	c.Iterations = int32(d.Uvarint())
	c.Salt = []byte(d.String())
	c.StoredKey = []byte(d.String())
	c.ServerKey = []byte(d.String())
	return string(k[1:]), c, d.Done("user")
}

// Rows is where the users' rows live, keyed as the package doc draws
// them: a key family of the batch coordinator's replicated state.
type Rows interface {
	// Apply sets sets' key-value pairs and deletes deletes, in one
	// durable write.
	Apply(sets [][2][]byte, deletes [][]byte) error
	// Scan calls fn with every row in key order; key and value are valid
	// during the call only.
	Scan(fn func(key, value []byte) error) error
}

// Store is the cluster's SCRAM users: every row in memory, each change
// written through Rows before it is installed.
type Store struct {
	rows Rows
	log  *slog.Logger

	mu    sync.Mutex
	creds map[string]map[coordapi.ScramMechanism]coordapi.ScramCredential
}

// Open loads the users of rows. log receives a line per change (nil:
// none).
func Open(rows Rows, log *slog.Logger) (*Store, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Store{rows: rows, log: log, creds: map[string]map[coordapi.ScramMechanism]coordapi.ScramCredential{}}
	err := rows.Scan(func(k, v []byte) error {
		user, cred, err := decodeUser(k, v)
		if err != nil {
			return err
		}
		s.setLocked(user, cred)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("users: load: %w", err)
	}
	return s, nil
}

func (s *Store) setLocked(user string, cred coordapi.ScramCredential) {
	m := s.creds[user]
	if m == nil {
		m = map[coordapi.ScramMechanism]coordapi.ScramCredential{}
		s.creds[user] = m
	}
	m[cred.Mechanism] = cred
}

// UserScramCredential returns user's stored credential for mechanism m,
// ok false when it has none: what a broker checks a SASL exchange against.
func (s *Store) UserScramCredential(_ context.Context, user string, m coordapi.ScramMechanism) (coordapi.ScramCredential, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cred, ok := s.creds[user][m]
	return cred, ok, nil
}

// DescribeUserScramCredentials describes the named users' credentials
// (mechanisms and iterations), or every user's when users is empty, as
// Apache Kafka does: a user named twice is DUPLICATE_RESOURCE, an unknown
// one RESOURCE_NOT_FOUND, each in its own result.
func (s *Store) DescribeUserScramCredentials(_ context.Context, users []string) ([]coordapi.ScramUserInfo, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	describe := func(user string) coordapi.ScramUserInfo {
		info := coordapi.ScramUserInfo{User: user}
		for m, cred := range s.creds[user] {
			info.Credentials = append(info.Credentials, coordapi.ScramCredentialInfo{Mechanism: m, Iterations: cred.Iterations})
		}
		slices.SortFunc(info.Credentials, func(a, b coordapi.ScramCredentialInfo) int { return int(a.Mechanism) - int(b.Mechanism) })
		return info
	}
	var out []coordapi.ScramUserInfo
	if len(users) == 0 {
		for user := range s.creds {
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
		case len(s.creds[user]) == 0:
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
func (s *Store) AlterUserScramCredentials(_ context.Context, dels []coordapi.ScramDeletion, ups []coordapi.ScramUpsertion) ([]coordapi.ScramUserResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()

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
			if _, ok := s.creds[d.User][d.Mechanism]; !ok {
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

	var rowSets [][2][]byte
	var rowDels [][]byte
	for _, d := range deletes {
		if results[d.User].ErrorCode == 0 {
			rowDels = append(rowDels, userKey(d.Mechanism, d.User))
		}
	}
	for _, st := range sets {
		if results[st.user].ErrorCode == 0 {
			rowSets = append(rowSets, [2][]byte{userKey(st.cred.Mechanism, st.user), encodeUser(st.cred)})
		}
	}
	if len(rowSets)+len(rowDels) > 0 {
		if err := s.rows.Apply(rowSets, rowDels); err != nil {
			return nil, fmt.Errorf("alter user scram credentials: commit: %w", err)
		}
	}
	for _, d := range deletes {
		if results[d.User].ErrorCode == 0 {
			delete(s.creds[d.User], d.Mechanism)
			if len(s.creds[d.User]) == 0 {
				delete(s.creds, d.User)
			}
		}
	}
	for _, st := range sets {
		if results[st.user].ErrorCode == 0 {
			s.setLocked(st.user, st.cred)
		}
	}
	out := make([]coordapi.ScramUserResult, len(order))
	for i, user := range order {
		out[i] = *results[user]
		if out[i].ErrorCode == 0 {
			s.log.Info("user scram credentials altered", "user", user)
		} else {
			s.log.Info("user scram credentials not altered", "user", user, "error_code", out[i].ErrorCode, "message", out[i].ErrorMessage)
		}
	}
	return out, nil
}
