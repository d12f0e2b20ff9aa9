package rpc

import (
	"context"

	"github.com/floe-io/floe/coordapi"
)

// user_scram_credential request: user (str), mechanism (byte). Reply:
// found (bool), then iterations (varint), salt, stored key, server key
// (bytes).
type userScramReq struct {
	User      string
	Mechanism coordapi.ScramMechanism
}

type userScramResp struct {
	Cred coordapi.ScramCredential
	OK   bool
}

func encUserScramReq(e *encoder, r userScramReq) {
	e.str(r.User)
	e.byte(byte(r.Mechanism))
}

func decUserScramReq(d *decoder) userScramReq {
	return userScramReq{User: d.str(), Mechanism: coordapi.ScramMechanism(d.byte())}
}

func encUserScramResp(e *encoder, r userScramResp) {
	e.bool(r.OK)
	if !r.OK {
		return
	}
	e.byte(byte(r.Cred.Mechanism))
	e.varint(int64(r.Cred.Iterations))
	e.bytes(r.Cred.Salt)
	e.bytes(r.Cred.StoredKey)
	e.bytes(r.Cred.ServerKey)
}

func decUserScramResp(d *decoder) userScramResp {
	if !d.bool() {
		return userScramResp{}
	}
	r := userScramResp{OK: true}
	r.Cred.Mechanism = coordapi.ScramMechanism(d.byte())
	r.Cred.Iterations = d.int32()
	r.Cred.Salt = clone(d.bytes())
	r.Cred.StoredKey = clone(d.bytes())
	r.Cred.ServerKey = clone(d.bytes())
	return r
}

func clone(b []byte) []byte { return append([]byte(nil), b...) }

// describe_user_scram request: user names (count, str each; none: all).
// Reply: per user, name (str), error code (varint), message (str), count
// of credentials, each mechanism (byte) and iterations (varint).
func encStrings(e *encoder, ss []string) {
	e.uvarint(uint64(len(ss)))
	for _, s := range ss {
		e.str(s)
	}
}

func decStrings(d *decoder) []string {
	n := d.count(1)
	if n == 0 {
		return nil
	}
	out := make([]string, n)
	for i := range out {
		out[i] = d.str()
	}
	return out
}

func encScramUserInfos(e *encoder, infos []coordapi.ScramUserInfo) {
	e.uvarint(uint64(len(infos)))
	for _, in := range infos {
		e.str(in.User)
		e.varint(int64(in.ErrorCode))
		e.str(in.ErrorMessage)
		e.uvarint(uint64(len(in.Credentials)))
		for _, c := range in.Credentials {
			e.byte(byte(c.Mechanism))
			e.varint(int64(c.Iterations))
		}
	}
}

func decScramUserInfos(d *decoder) []coordapi.ScramUserInfo {
	n := d.count(3)
	if n == 0 {
		return nil
	}
	out := make([]coordapi.ScramUserInfo, n)
	for i := range out {
		in := coordapi.ScramUserInfo{User: d.str(), ErrorCode: d.int16(), ErrorMessage: d.str()}
		if m := d.count(2); m > 0 {
			in.Credentials = make([]coordapi.ScramCredentialInfo, m)
			for j := range in.Credentials {
				in.Credentials[j] = coordapi.ScramCredentialInfo{Mechanism: coordapi.ScramMechanism(d.byte()), Iterations: d.int32()}
			}
		}
		out[i] = in
	}
	return out
}

// alter_user_scram request: deletions (count; user str, mechanism byte),
// upsertions (count; user str, mechanism byte, iterations varint, salt
// and salted password bytes). Reply: per user, name (str), error code
// (varint), message (str).
type alterUserScramReq struct {
	Dels []coordapi.ScramDeletion
	Ups  []coordapi.ScramUpsertion
}

func encAlterUserScramReq(e *encoder, r alterUserScramReq) {
	e.uvarint(uint64(len(r.Dels)))
	for _, d := range r.Dels {
		e.str(d.User)
		e.byte(byte(d.Mechanism))
	}
	e.uvarint(uint64(len(r.Ups)))
	for _, u := range r.Ups {
		e.str(u.User)
		e.byte(byte(u.Mechanism))
		e.varint(int64(u.Iterations))
		e.bytes(u.Salt)
		e.bytes(u.SaltedPassword)
	}
}

func decAlterUserScramReq(d *decoder) alterUserScramReq {
	var r alterUserScramReq
	if n := d.count(2); n > 0 {
		r.Dels = make([]coordapi.ScramDeletion, n)
		for i := range r.Dels {
			r.Dels[i] = coordapi.ScramDeletion{User: d.str(), Mechanism: coordapi.ScramMechanism(d.byte())}
		}
	}
	if n := d.count(5); n > 0 {
		r.Ups = make([]coordapi.ScramUpsertion, n)
		for i := range r.Ups {
			r.Ups[i] = coordapi.ScramUpsertion{User: d.str(), Mechanism: coordapi.ScramMechanism(d.byte()), Iterations: d.int32(),
				Salt: clone(d.bytes()), SaltedPassword: clone(d.bytes())}
		}
	}
	return r
}

func encScramUserResults(e *encoder, rs []coordapi.ScramUserResult) {
	e.uvarint(uint64(len(rs)))
	for _, r := range rs {
		e.str(r.User)
		e.varint(int64(r.ErrorCode))
		e.str(r.ErrorMessage)
	}
}

func decScramUserResults(d *decoder) []coordapi.ScramUserResult {
	n := d.count(3)
	if n == 0 {
		return nil
	}
	out := make([]coordapi.ScramUserResult, n)
	for i := range out {
		out[i] = coordapi.ScramUserResult{User: d.str(), ErrorCode: d.int16(), ErrorMessage: d.str()}
	}
	return out
}

// UserScramCredential returns a user's stored SCRAM credential; see
// coordinator.Coordinator.UserScramCredential.
func (c *Client) UserScramCredential(ctx context.Context, user string, m coordapi.ScramMechanism) (coordapi.ScramCredential, bool, error) {
	r, err := call(c, ctx, opUserScramCredential, func(e *encoder) { encUserScramReq(e, userScramReq{User: user, Mechanism: m}) }, decUserScramResp)
	return r.Cred, r.OK, err
}

// DescribeUserScramCredentials describes users' SCRAM credentials; see
// coordinator.Coordinator.DescribeUserScramCredentials.
func (c *Client) DescribeUserScramCredentials(ctx context.Context, users []string) ([]coordapi.ScramUserInfo, error) {
	return call(c, ctx, opDescribeUserScram, func(e *encoder) { encStrings(e, users) }, decScramUserInfos)
}

// AlterUserScramCredentials deletes and sets users' SCRAM credentials; see
// coordinator.Coordinator.AlterUserScramCredentials.
func (c *Client) AlterUserScramCredentials(ctx context.Context, dels []coordapi.ScramDeletion, ups []coordapi.ScramUpsertion) ([]coordapi.ScramUserResult, error) {
	return call(c, ctx, opAlterUserScram, func(e *encoder) { encAlterUserScramReq(e, alterUserScramReq{Dels: dels, Ups: ups}) }, decScramUserResults)
}
