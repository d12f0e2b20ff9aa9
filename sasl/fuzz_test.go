package sasl

import (
	"context"
	"encoding/base64"
	"strings"
	"testing"
)

func splitAttrs(s string) []string { return strings.Split(s, ",") }

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

// FuzzPlain: any PLAIN message parses or fails cleanly, and what parses has
// a user and a password.
//
//	go test ./sasl -run '^$' -fuzz FuzzPlain -fuzztime 1m
func FuzzPlain(f *testing.F) {
	for _, s := range []string{"\x00alice\x00pw", "alice\x00alice\x00pw", "", "\x00\x00", "a\x00b", "\x00a\x00b\x00c"} {
		f.Add([]byte(s))
	}
	creds := newUsers(f, "alice", "pw")
	f.Fuzz(func(t *testing.T, msg []byte) {
		_, user, password, err := ParsePlain(msg)
		if err == nil && (user == "" || password == "") {
			t.Fatalf("%q parsed to an empty user or password", msg)
		}
		s, _ := NewSession(Plain, creds)
		if _, done, _ := s.Step(context.Background(), msg); !done {
			t.Fatal("a PLAIN exchange is one step")
		}
	})
}

// FuzzScram: any pair of client messages is answered or refused without a
// panic, and only the right proof authenticates.
//
//	go test ./sasl -run '^$' -fuzz FuzzScram -fuzztime 1m
func FuzzScram(f *testing.F) {
	f.Add([]byte("n,,n=alice,r=abc"), []byte("c=biws,r=abcdef,p=AAAA"))
	f.Add([]byte("y,a=alice,n=alice,r=x,ext=1"), []byte("c=eSxhPWFsaWNlLA==,r=x,p="))
	f.Add([]byte("p=tls-unique,,n=a,r=b"), []byte(""))
	f.Add([]byte("n,,n=a=2Cb=3D,r=n"), []byte(",p=,"))
	creds := newUsers(f, "alice", "pw", "a,b=", "pw")
	f.Fuzz(func(t *testing.T, first, final []byte) {
		ctx := context.Background()
		for _, mech := range []string{ScramSHA256, ScramSHA512} {
			s, _ := NewSession(mech, creds)
			if _, done, err := s.Step(ctx, first); err != nil || done {
				continue
			}
			if _, done, err := s.Step(ctx, final); err == nil && (!done || s.Username() == "") {
				t.Fatalf("%q then %q: accepted without a user", first, final)
			}
		}
	})
}
