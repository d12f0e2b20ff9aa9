package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// flags is one command's flag set: its own flags and the global ones,
// with the synopsis and description its --help prints.
type flags struct {
	*flag.FlagSet
	c        *cli
	synopsis string // after the command path: "TOPIC... [flags]"
	desc     string
}

// flags returns a flag set for the command at c.path with the global flags
// registered on it, so they may come anywhere on the command line.
func (c *cli) flags(synopsis, desc string) *flags {
	fs := flag.NewFlagSet(c.path, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are reported by exit, usage by usage
	fs.Usage = func() {}
	c.g.register(fs)
	return &flags{FlagSet: fs, c: c, synopsis: synopsis, desc: desc}
}

// parseGroup parses flags up to the first argument that is not one (a
// subcommand's name) and returns the rest.
func (f *flags) parseGroup(args []string) ([]string, error) {
	if err := f.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, err
		}
		return nil, usageError{err.Error()}
	}
	return f.Args(), nil
}

// parse parses a leaf command's flags, which may come before, between or
// after its positional arguments ("--" ends the flags), and returns the
// positional arguments. --help prints the usage to stdout and returns
// errHelp.
func (f *flags) parse(args []string) ([]string, error) {
	var pos []string
	for {
		err := f.Parse(args)
		if errors.Is(err, flag.ErrHelp) {
			f.usage(f.c.stdout)
			return nil, errHelp
		}
		if err != nil {
			return nil, usageError{err.Error()}
		}
		rest := f.Args()
		if len(rest) == 0 {
			break
		}
		if used := len(args) - len(rest); used > 0 && args[used-1] == "--" {
			pos = append(pos, rest...)
			break
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
	return pos, f.c.g.resolve()
}

// parseNoArgs parses the flags of a command that takes no positional
// arguments.
func (f *flags) parseNoArgs(args []string) error {
	pos, err := f.parse(args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("unexpected argument %q", pos[0])
	}
	return nil
}

// parseOne parses the flags of a command that takes one positional
// argument, a what ("topic"), and returns it.
func (f *flags) parseOne(args []string, what string) (string, error) {
	pos, err := f.parse(args)
	if err != nil {
		return "", err
	}
	if len(pos) != 1 {
		return "", usagef("name one %s", what)
	}
	return pos[0], nil
}

// parseSome parses the flags of a command that takes one or more what
// ("topic") and returns them.
func (f *flags) parseSome(args []string, what string) ([]string, error) {
	pos, err := f.parse(args)
	if err != nil {
		return nil, err
	}
	if len(pos) == 0 {
		return nil, usagef("name at least one %s", what)
	}
	return pos, nil
}

// usage prints the command's usage: synopsis, description, its flags and
// the global ones.
func (f *flags) usage(w io.Writer) {
	fmt.Fprintf(w, "Usage: %s %s\n", f.Name(), f.synopsis)
	if f.desc != "" {
		fmt.Fprintf(w, "\n%s\n", strings.TrimSpace(f.desc))
	}
	var own []*flag.Flag
	f.VisitAll(func(fl *flag.Flag) {
		if !f.c.g.isGlobal(fl.Name) {
			own = append(own, fl)
		}
	})
	if len(own) > 0 {
		fmt.Fprintln(w, "\nFlags:")
		printFlags(w, own)
	}
	fmt.Fprintln(w, "\nGlobal flags (--brokers, --tls*, --sasl-*, --json, --profile...) may be given too: see 'floe --help'.")
}

// printFlags prints flag usages, flag.PrintDefaults style with "--".
func printFlags(w io.Writer, fl []*flag.Flag) {
	for _, f := range fl {
		name, usage := flag.UnquoteUsage(f)
		dash := "--"
		if len(f.Name) == 1 {
			dash = "-"
		}
		line := "  " + dash + f.Name
		if name != "" {
			line += " " + name
		}
		fmt.Fprintf(w, "%s\n    \t%s", line, strings.ReplaceAll(usage, "\n", "\n    \t"))
		if d := f.DefValue; d != "" && d != "false" && d != "0" && d != "[]" && !strings.Contains(usage, "(default") {
			fmt.Fprintf(w, " (default %s)", d)
		}
		fmt.Fprintln(w)
	}
}

// listFlag is a repeatable string flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

// pairsFlag is a repeatable k=v flag (--config, -H), in order.
type pairsFlag []pair

type pair struct{ k, v string }

func (p *pairsFlag) String() string {
	var s []string
	for _, kv := range *p {
		s = append(s, kv.k+"="+kv.v)
	}
	return strings.Join(s, ",")
}

func (p *pairsFlag) Set(v string) error {
	k, val, ok := strings.Cut(v, "=")
	if !ok || k == "" {
		return fmt.Errorf("%q is not key=value", v)
	}
	*p = append(*p, pair{k, val})
	return nil
}

// optInt is an integer flag that knows whether it was set.
type optInt struct {
	v   int64
	set bool
}

func (o *optInt) String() string {
	if o == nil || !o.set {
		return ""
	}
	return strconv.FormatInt(o.v, 10)
}

func (o *optInt) Set(s string) error {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return errors.New("not an integer")
	}
	o.v, o.set = n, true
	return nil
}
