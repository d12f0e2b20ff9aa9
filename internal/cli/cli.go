// Package cli holds what floe's binaries share around their flags: the
// exit status of a run (0 for --help, which the flag package answers with
// flag.ErrHelp after printing the usage) and the refusal of stray
// arguments, after which the flag package silently stops reading flags.
package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// Exit returns the exit status of a binary whose run returned err, printing
// err, prefixed by the binary's name, to w: 0 for nil and for flag.ErrHelp
// (the usage is printed already), else 1.
func Exit(w io.Writer, name string, err error) int {
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return 0
	}
	fmt.Fprintf(w, "%s: %v\n", name, err)
	return 1
}

// NoArgs refuses the arguments fs.Parse(args) left over: the flag package
// stops at the first one, so every flag after it would be ignored. When the
// argument follows a boolean flag ("--s3-path-style true"), the error says
// that such flags take their value after "=".
func NoArgs(fs *flag.FlagSet, args []string) error {
	if fs.NArg() == 0 {
		return nil
	}
	first := fs.Arg(0)
	i := len(args) - fs.NArg()
	if i > 0 {
		prev := args[i-1]
		name := strings.TrimLeft(prev, "-")
		if f := fs.Lookup(name); f != nil && strings.HasPrefix(prev, "-") && !strings.Contains(prev, "=") && isBool(f) {
			return fmt.Errorf("unexpected argument %q after %s: boolean flags take their value after =, as %s=%s (nothing after %q was read)",
				first, prev, prev, first, first)
		}
	}
	return fmt.Errorf("unexpected argument %q: only flags are taken (nothing after it was read; boolean flags take --flag=false)", first)
}

func isBool(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// s3Flags are the flags that only matter with --s3-bucket.
var s3Flags = []string{"s3-endpoint", "s3-region", "s3-path-style", "s3-create-bucket", "s3-ca-file"}

// S3NeedsBucket refuses S3 flags set (on the command line or in the
// environment) without --s3-bucket: without a bucket a binary uses its
// local directory, and would ignore them.
func S3NeedsBucket(fs *flag.FlagSet) error {
	if b := fs.Lookup("s3-bucket"); b == nil || b.Value.String() != "" {
		return nil
	}
	var set []string
	for _, name := range s3Flags {
		if f := fs.Lookup(name); f != nil && f.Value.String() != f.DefValue {
			set = append(set, "--"+name)
		}
	}
	if len(set) == 0 {
		return nil
	}
	return fmt.Errorf("%s without --s3-bucket: objects would go to the local directory; set --s3-bucket too", strings.Join(set, ", "))
}
