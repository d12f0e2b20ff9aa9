package coordinator

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/sasl"
)

func upsertion(t *testing.T, user string, m coordapi.ScramMechanism, password string, iterations int) coordapi.ScramUpsertion {
	t.Helper()
	u, err := sasl.NewUpsertion(user, m, password, iterations)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func TestUserScramCredentials(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	res, err := e.c.AlterUserScramCredentials(ctx, nil, []coordapi.ScramUpsertion{
		upsertion(t, "alice", coordapi.ScramSHA256, "alice-secret", 4096),
		upsertion(t, "bob", coordapi.ScramSHA512, "bob-secret", 8192),
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.ErrorCode != 0 {
			t.Fatalf("upsert %s: %d %s", r.User, r.ErrorCode, r.ErrorMessage)
		}
	}
	// A second mechanism for alice, in its own request.
	if res, err = e.c.AlterUserScramCredentials(ctx, nil, []coordapi.ScramUpsertion{upsertion(t, "alice", coordapi.ScramSHA512, "alice-secret", 4096)}); err != nil || res[0].ErrorCode != 0 {
		t.Fatalf("second mechanism: %+v %v", res, err)
	}

	check := func(when string) {
		t.Helper()
		cred, ok, err := e.c.UserScramCredential(ctx, "bob", coordapi.ScramSHA512)
		if err != nil || !ok {
			t.Fatalf("%s: bob's credential: ok %v, %v", when, ok, err)
		}
		if !sasl.Verify(cred, "bob-secret") || sasl.Verify(cred, "wrong") || cred.Iterations != 8192 {
			t.Fatalf("%s: bob's credential does not check his password only: %+v", when, cred)
		}
		if _, ok, _ := e.c.UserScramCredential(ctx, "bob", coordapi.ScramSHA256); ok {
			t.Fatalf("%s: bob has a SCRAM-SHA-256 credential he was never given", when)
		}
		infos, err := e.c.DescribeUserScramCredentials(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(infos) != 2 || infos[0].User != "alice" || len(infos[0].Credentials) != 2 || infos[1].User != "bob" ||
			infos[1].Credentials[0] != (coordapi.ScramCredentialInfo{Mechanism: coordapi.ScramSHA512, Iterations: 8192}) {
			t.Fatalf("%s: describe all: %+v", when, infos)
		}
	}
	check("before reopen")
	e.reopen()
	check("after reopen")

	infos, err := e.c.DescribeUserScramCredentials(ctx, []string{"carol", "bob", "carol"})
	if err != nil {
		t.Fatal(err)
	}
	if len(infos) != 2 || infos[0].User != "carol" || infos[0].ErrorCode != kerr.DuplicateResource.Code ||
		infos[1].User != "bob" || infos[1].ErrorCode != 0 {
		t.Fatalf("describe with a duplicate: %+v", infos)
	}
	if infos, _ = e.c.DescribeUserScramCredentials(ctx, []string{"carol"}); infos[0].ErrorCode != kerr.ResourceNotFound.Code {
		t.Fatalf("describe unknown: %+v", infos)
	}

	// Kafka's refusals, each in its user's result; the good user of the
	// same request is still altered.
	for _, tc := range []struct {
		name string
		dels []coordapi.ScramDeletion
		ups  []coordapi.ScramUpsertion
		want *kerr.Error
	}{
		{"few iterations", nil, []coordapi.ScramUpsertion{upsertion(t, "dave", coordapi.ScramSHA256, "x", 1000)}, kerr.UnacceptableCredential},
		{"many iterations", nil, []coordapi.ScramUpsertion{upsertion(t, "dave", coordapi.ScramSHA256, "x", 20000)}, kerr.UnacceptableCredential},
		{"unknown mechanism", []coordapi.ScramDeletion{{User: "dave", Mechanism: 7}}, nil, kerr.UnsupportedSaslMechanism},
		{"delete missing", []coordapi.ScramDeletion{{User: "dave", Mechanism: coordapi.ScramSHA256}}, nil, kerr.ResourceNotFound},
		{"twice", []coordapi.ScramDeletion{{User: "dave", Mechanism: coordapi.ScramSHA256}},
			[]coordapi.ScramUpsertion{upsertion(t, "dave", coordapi.ScramSHA256, "x", 4096)}, kerr.DuplicateResource},
		{"empty name", nil, []coordapi.ScramUpsertion{upsertion(t, "", coordapi.ScramSHA256, "x", 4096)}, kerr.UnacceptableCredential},
	} {
		res, err := e.c.AlterUserScramCredentials(ctx, tc.dels, tc.ups)
		if err != nil {
			t.Fatal(err)
		}
		if len(res) != 1 || res[0].ErrorCode != tc.want.Code {
			t.Errorf("%s: %+v, want %s", tc.name, res, tc.want)
		}
	}
	if _, ok, _ := e.c.UserScramCredential(ctx, "dave", coordapi.ScramSHA256); ok {
		t.Fatal("a refused upsertion was stored")
	}

	// Deleting alice's two credentials removes her.
	res, err = e.c.AlterUserScramCredentials(ctx, []coordapi.ScramDeletion{{User: "alice", Mechanism: coordapi.ScramSHA256}}, nil)
	if err != nil || res[0].ErrorCode != 0 {
		t.Fatalf("delete: %+v %v", res, err)
	}
	res, _ = e.c.AlterUserScramCredentials(ctx, []coordapi.ScramDeletion{{User: "alice", Mechanism: coordapi.ScramSHA512}}, nil)
	if res[0].ErrorCode != 0 {
		t.Fatalf("delete: %+v", res)
	}
	e.reopen()
	if infos, _ := e.c.DescribeUserScramCredentials(ctx, nil); len(infos) != 1 || infos[0].User != "bob" {
		t.Fatalf("after deleting alice: %+v", infos)
	}
}
