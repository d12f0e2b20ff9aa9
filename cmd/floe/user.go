package main

import (
	"bufio"
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
	adm, err := c.admin()
	if err != nil {
		return err
	}
	defer adm.Close()
	ctx, cancel := c.reqCtx()
	defer cancel()
	described, err := adm.DescribeUserSCRAMs(ctx, users...)
	if err != nil {
		return c.reachErr(err)
	}
	out := []userEntry{}
	var errs []error
	for _, d := range described.Sorted() {
		e := userEntry{User: d.User, Mechanisms: []userMechanism{}}
		if err := kafkaErr(d.Err, d.ErrMessage); err != nil {
			e.Error = err.Error()
			errs = append(errs, fmt.Errorf("user %s: %w", d.User, err))
		}
		for _, ci := range d.CredInfos {
			e.Mechanisms = append(e.Mechanisms, userMechanism{Mechanism: ci.Mechanism.String(), Iterations: ci.Iterations})
		}
		out = append(out, e)
	}
	if c.g.json {
		if err := printJSON(c.stdout, out); err != nil {
			return err
		}
		return errors.Join(errs...)
	}
	tb := newTable(c.stdout, "USER", "MECHANISM", "ITERATIONS")
	for _, e := range out {
		for _, m := range e.Mechanisms {
			tb.row(e.User, m.Mechanism, m.Iterations)
		}
	}
	tb.flush()
	return errors.Join(errs...)
}

// userResult is one user's outcome in create and delete.
type userResult struct {
	User      string `json:"user"`
	Mechanism string `json:"mechanism"`
	Error     string `json:"error,omitempty"`
}

func (c *cli) printUserResults(out []userResult, verb string) error {
	if c.g.json {
		return printJSON(c.stdout, out)
	}
	tb := newTable(c.stdout, "USER", "MECHANISM", "STATUS")
	for _, r := range out {
		status := verb
		if r.Error != "" {
			status = "failed"
		}
		tb.row(r.User, r.Mechanism, status)
	}
	tb.flush()
	return nil
}

func userCreate(c *cli, args []string) error {
	f := c.flags("USER [flags]", `
Create a SCRAM user, or set a new password for one: the client salts and
hashes the password (AlterUserScramCredentials upsert), the broker never
sees it. Without --password the password is the first line of stdin.`)
	mech := f.String("mechanism", "SCRAM-SHA-256", "`mechanism`: SCRAM-SHA-256 or SCRAM-SHA-512")
	password := f.String("password", "", "the user's `password` (default: read from stdin)")
	iterations := f.Int("iterations", 4096, "SCRAM iteration `count` (4096 to 16384)")
	pos, err := f.parse(args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("name one user")
	}
	m, err := parseMechanism(*mech)
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
	adm, err := c.admin()
	if err != nil {
		return err
	}
	defer adm.Close()
	ctx, cancel := c.reqCtx()
	defer cancel()
	altered, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: pos[0], Mechanism: m, Iterations: int32(*iterations), Password: pw}})
	if err != nil {
		return c.reachErr(err)
	}
	return c.userResults(altered, pos[0], m, "created")
}

// userResults prints the outcome of an alteration of user's mechanism.
func (c *cli) userResults(altered kadm.AlteredUserSCRAMs, user string, m kadm.ScramMechanism, verb string) error {
	a, ok := altered[user]
	err := kafkaErr(a.Err, a.ErrMessage)
	if !ok {
		err = fmt.Errorf("no answer for user %s: %w", user, kerr.UnknownServerError)
	}
	if perr := c.printUserResults([]userResult{{User: user, Mechanism: m.String(), Error: errString(err)}}, verb); perr != nil {
		return perr
	}
	if err != nil {
		return fmt.Errorf("user %s: %w", user, err)
	}
	return nil
}

func userDelete(c *cli, args []string) error {
	f := c.flags("USER [flags]", `
Delete a SCRAM user's credential for one mechanism (a user with none left
can no longer log in with SCRAM).`)
	mech := f.String("mechanism", "SCRAM-SHA-256", "`mechanism`: SCRAM-SHA-256 or SCRAM-SHA-512")
	pos, err := f.parse(args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("name one user")
	}
	m, err := parseMechanism(*mech)
	if err != nil {
		return err
	}
	adm, err := c.admin()
	if err != nil {
		return err
	}
	defer adm.Close()
	ctx, cancel := c.reqCtx()
	defer cancel()
	altered, err := adm.AlterUserSCRAMs(ctx, []kadm.DeleteSCRAM{{User: pos[0], Mechanism: m}}, nil)
	if err != nil {
		return c.reachErr(err)
	}
	return c.userResults(altered, pos[0], m, "deleted")
}
