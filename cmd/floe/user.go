package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// userEntry is one SCRAM user as user list prints it.
type userEntry struct {
	User       string          `json:"user"`
	Mechanisms []userMechanism `json:"mechanisms"`
	Error      string          `json:"error,omitempty"`
}

type userMechanism struct {
	Mechanism  string `json:"mechanism"`
	Iterations int32  `json:"iterations"`
}

// parseMechanism reads --mechanism.
func parseMechanism(s string) (kadm.ScramMechanism, error) {
	switch strings.ToUpper(s) {
	case "SCRAM-SHA-256":
		return kadm.ScramSha256, nil
	case "SCRAM-SHA-512":
		return kadm.ScramSha512, nil
	}
	return 0, usagef("--mechanism %q: want SCRAM-SHA-256 or SCRAM-SHA-512", s)
}

func userList(c *cli, args []string) error {
	f := c.flags("[USER...] [flags]", `
List SCRAM users (all, or those named) with their mechanisms and
iteration counts; passwords are never shown. Needs CLUSTER DESCRIBE.`)
	users, err := f.parse(args)
	if err != nil {
		return err
	}
	described, err := request(c, func(ctx context.Context, adm *kadm.Client) (kadm.DescribedUserSCRAMs, error) {
		return adm.DescribeUserSCRAMs(ctx, users...)
	})
	if err != nil {
		return err
	}
	out := []userEntry{}
	var errs itemErrs
	for _, d := range described.Sorted() {
		e := userEntry{User: d.User, Mechanisms: []userMechanism{}}
		e.Error = errs.add(kafkaErr(d.Err, d.ErrMessage), "user %s", d.User)
		for _, ci := range d.CredInfos {
			e.Mechanisms = append(e.Mechanisms, userMechanism{Mechanism: ci.Mechanism.String(), Iterations: ci.Iterations})
		}
		out = append(out, e)
	}
	return c.report(out, func() {
		tb := newTable(c.stdout, "USER", "MECHANISM", "ITERATIONS")
		for _, e := range out {
			for _, m := range e.Mechanisms {
				tb.row(e.User, m.Mechanism, m.Iterations)
			}
		}
		tb.flush()
	}, errs)
}

// userResult is one user's outcome in create and delete.
type userResult struct {
	User      string `json:"user"`
	Mechanism string `json:"mechanism"`
	Error     string `json:"error,omitempty"`
}

func userCreate(c *cli, args []string) error {
	f := c.flags("USER [flags]", `
Create a SCRAM user, or set a new password for one: the client salts and
hashes the password (AlterUserScramCredentials upsert), the broker never
sees it. Without --password the password is the first line of stdin.`)
	mech := f.String("mechanism", "SCRAM-SHA-256", "`mechanism`: SCRAM-SHA-256 or SCRAM-SHA-512")
	password := f.String("password", "", "the user's `password` (default: read from stdin)")
	iterations := f.Int("iterations", 4096, "SCRAM iteration `count` (4096 to 16384)")
	user, m, err := parseUserMechanism(f, args, mech)
	if err != nil {
		return err
	}
	if *iterations < 4096 || *iterations > 16384 {
		return usagef("--iterations must be between 4096 and 16384")
	}
	pw := *password
	if pw == "" {
		line, err := bufio.NewReader(c.stdin).ReadString('\n')
		pw = strings.TrimRight(line, "\r\n")
		if pw == "" {
			if err != nil && !errors.Is(err, io.EOF) {
				return err
			}
			return usagef("no password: give --password or a line on stdin")
		}
	}
	return c.alterUserSCRAM(user, m, "created", nil, []kadm.UpsertSCRAM{{User: user, Mechanism: m, Iterations: int32(*iterations), Password: pw}})
}

func userDelete(c *cli, args []string) error {
	f := c.flags("USER [flags]", `
Delete a SCRAM user's credential for one mechanism (a user with none left
can no longer log in with SCRAM).`)
	mech := f.String("mechanism", "SCRAM-SHA-256", "`mechanism`: SCRAM-SHA-256 or SCRAM-SHA-512")
	user, m, err := parseUserMechanism(f, args, mech)
	if err != nil {
		return err
	}
	return c.alterUserSCRAM(user, m, "deleted", []kadm.DeleteSCRAM{{User: user, Mechanism: m}}, nil)
}

// parseUserMechanism parses the flags of user create and delete, which
// name one user, and their --mechanism, mech.
func parseUserMechanism(f *flags, args []string, mech *string) (string, kadm.ScramMechanism, error) {
	user, err := f.parseOne(args, "user")
	if err != nil {
		return "", 0, err
	}
	m, err := parseMechanism(*mech)
	return user, m, err
}

// alterUserSCRAM deletes or upserts user's credential for m and prints the
// outcome: verb ("created") or failed.
func (c *cli) alterUserSCRAM(user string, m kadm.ScramMechanism, verb string, del []kadm.DeleteSCRAM, upsert []kadm.UpsertSCRAM) error {
	altered, err := request(c, func(ctx context.Context, adm *kadm.Client) (kadm.AlteredUserSCRAMs, error) {
		return adm.AlterUserSCRAMs(ctx, del, upsert)
	})
	if err != nil {
		return err
	}
	a, ok := altered[user]
	err = kafkaErr(a.Err, a.ErrMessage)
	if !ok {
		err = fmt.Errorf("no answer for user %s: %w", user, kerr.UnknownServerError)
	}
	var errs itemErrs
	out := []userResult{{User: user, Mechanism: m.String(), Error: errs.add(err, "user %s", user)}}
	return c.report(out, func() {
		tb := newTable(c.stdout, "USER", "MECHANISM", "STATUS")
		for _, r := range out {
			tb.row(r.User, r.Mechanism, status(verb, r.Error))
		}
		tb.flush()
	}, errs)
}
