// Command floe is floe's admin tool: topics, consumer groups, /kv lookups,
// producing and consuming from a terminal, ACLs, SCRAM users and the
// cluster, for the things users reach for rpk or kafka-*.sh to do. It
// speaks Kafka through franz-go (kadm, kgo) and /kv over HTTP, so it works
// against any floe broker, and its Kafka commands against any Kafka.
//
//	floe topic create orders --partitions 6 --config retention.ms=86400000
//	floe produce orders --key-separator : < orders.txt
//	floe consume orders -e --format '%k=%v (partition %p, offset %o)\n'
//	floe group reset-offsets billing --topic orders --to-earliest --execute
//	floe share consume jobs --group workers --ack accept
//	floe kv get users alice
//
// Exit status: 0 on success, 1 when an operation fails (a Kafka error is
// printed by its name, as TOPIC_ALREADY_EXISTS), 2 on bad usage. docs/cli.md
// is the reference.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// cli is one invocation: its streams and its global settings.
type cli struct {
	ctx    context.Context
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
	g      *globals
	path   string // the command being run, "floe topic create", for messages
}

// command is a leaf subcommand ("topic create") or a group of them
// ("topic").
type command struct {
	name    string
	summary string
	run     func(c *cli, args []string) error // leaf
	subs    []*command                        // group
}

// commands is floe's command tree.
var commands = []*command{
	{name: "topic", summary: "create, list, describe, alter and delete topics", subs: []*command{
		{name: "create", summary: "create topics", run: topicCreate},
		{name: "list", summary: "list topics", run: topicList},
		{name: "describe", summary: "show a topic's configs and partitions", run: topicDescribe},
		{name: "alter", summary: "change a topic's configs or add partitions", run: topicAlter},
		{name: "delete", summary: "delete topics", run: topicDelete},
	}},
	{name: "group", summary: "list, describe consumer groups and reset their offsets", subs: []*command{
		{name: "list", summary: "list consumer groups", run: groupList},
		{name: "describe", summary: "show a group's members, offsets and lag", run: groupDescribe},
		{name: "reset-offsets", summary: "move a group's committed offsets (dry run unless --execute)", run: groupResetOffsets},
	}},
	{name: "share", summary: "share groups (queues): consume, list, describe, reset offsets, delete", subs: []*command{
		{name: "consume", summary: "consume as a share group member, acknowledging each record", run: shareConsume},
		{name: "list", summary: "list share groups", run: shareList},
		{name: "describe", summary: "show a share group's members, start offsets and lag", run: shareDescribe},
		{name: "reset-offsets", summary: "move a share group's start offsets (dry run unless --execute)", run: shareResetOffsets},
		{name: "delete", summary: "delete share groups", run: shareDelete},
	}},
	{name: "kv", summary: "look keys up in indexed topics (GET /kv)", subs: []*command{
		{name: "get", summary: "read the latest value of a key", run: kvGet},
	}},
	{name: "produce", summary: "produce records from stdin or a file, one per line", run: produce},
	{name: "consume", summary: "consume records and print them", run: consume},
	{name: "acl", summary: "list, create and delete ACLs", subs: []*command{
		{name: "list", summary: "list ACLs matching a filter", run: aclList},
		{name: "create", summary: "create ACLs", run: aclCreate},
		{name: "delete", summary: "delete ACLs matching a filter", run: aclDelete},
	}},
	{name: "user", summary: "list, create and delete SCRAM users", subs: []*command{
		{name: "list", summary: "list SCRAM users and their mechanisms", run: userList},
		{name: "create", summary: "create a SCRAM user or change its password", run: userCreate},
		{name: "delete", summary: "delete a SCRAM user's credential", run: userDelete},
	}},
	{name: "cluster", summary: "show the cluster", subs: []*command{
		{name: "info", summary: "cluster id, controller, brokers, topics (and ApiVersions)", run: clusterInfo},
	}},
}

// usageError is bad usage: exit status 2.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

// usagef returns a usageError.
func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

// errHelp is returned after usage was printed for --help: exit status 0.
var errHelp = errors.New("help")

// run is the whole command: main is a thin wrapper over it, and tests call
// it directly. It returns the exit status.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	c := &cli{ctx: ctx, stdin: stdin, stdout: stdout, stderr: stderr, g: newGlobals()}

	c.path = "floe"
	cmds := commands
	for {
		f := c.flags("<command>", "")
		rest, err := f.parseGroup(args)
		switch {
		case errors.Is(err, flag.ErrHelp) || err == nil && len(rest) > 0 && rest[0] == "help":
			printGroupUsage(stdout, c.path, cmds, c.g)
			return 0
		case err != nil:
			return c.exit(err)
		case len(rest) == 0:
			printGroupUsage(stderr, c.path, cmds, c.g)
			return 2
		}
		cmd := find(cmds, rest[0])
		if cmd == nil {
			return c.exit(usagef("unknown command %q", rest[0]))
		}
		c.path += " " + cmd.name
		if cmd.run != nil {
			return c.exit(cmd.run(c, rest[1:]))
		}
		cmds, args = cmd.subs, rest[1:]
	}
}

// exit prints err as its exit status asks and returns that status.
func (c *cli) exit(err error) int {
	var ue usageError
	switch {
	case err == nil, errors.Is(err, errHelp):
		return 0
	case errors.As(err, &ue):
		fmt.Fprintf(c.stderr, "%s: %s\nRun '%s --help' for usage.\n", c.path, ue.msg, c.path)
		return 2
	default:
		for _, line := range strings.Split(err.Error(), "\n") {
			fmt.Fprintf(c.stderr, "%s: %s\n", c.path, line)
		}
		return 1
	}
}

// find returns the command named name.
func find(cmds []*command, name string) *command {
	for _, c := range cmds {
		if c.name == name {
			return c
		}
	}
	return nil
}

// printGroupUsage prints the usage of the top level or of a command group.
func printGroupUsage(w io.Writer, path string, cmds []*command, g *globals) {
	fmt.Fprintf(w, "Usage: %s <command> [flags]\n\nCommands:\n", path)
	for _, c := range cmds {
		fmt.Fprintf(w, "  %-15s %s\n", c.name, c.summary)
	}
	fmt.Fprintf(w, "\nRun '%s <command> --help' for a command's flags.\n", path)
	if path == "floe" {
		fmt.Fprintln(w)
		g.printUsage(w)
	}
}
