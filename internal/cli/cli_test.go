package cli

import (
	"bytes"
	"errors"
	"flag"
	"io"
	"strings"
	"testing"
)

func TestExit(t *testing.T) {
	for _, tc := range []struct {
		err  error
		code int
		out  string
	}{
		{nil, 0, ""},
		{flag.ErrHelp, 0, ""},
		{errors.New("boom"), 1, "broker: boom\n"},
	} {
		var buf bytes.Buffer
		if code := Exit(&buf, "broker", tc.err); code != tc.code || buf.String() != tc.out {
			t.Errorf("Exit(%v) = %d, %q; want %d, %q", tc.err, code, buf.String(), tc.code, tc.out)
		}
	}
}

func TestNoArgs(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string // in the error; none: no error
	}{
		{[]string{"--s3-path-style", "--node-id", "2"}, nil},
		{[]string{"--s3-path-style=false"}, nil},
		{[]string{"--s3-path-style", "true", "--node-id", "2"}, []string{`"true"`, "--s3-path-style=true", "boolean flags"}},
		{[]string{"-s3-path-style", "false"}, []string{`"false"`, "-s3-path-style=false"}},
		{[]string{"--node-id", "2", "stray"}, []string{`"stray"`, "only flags", "--flag=false"}},
		{[]string{"--s3-path-style=true", "x"}, []string{`"x"`, "only flags"}},
	} {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		fs.Bool("s3-path-style", false, "")
		fs.Int("node-id", 1, "")
		if err := fs.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		err := NoArgs(fs, tc.args)
		if len(tc.want) == 0 {
			if err != nil {
				t.Errorf("%q: %v", tc.args, err)
			}
			continue
		}
		for _, w := range tc.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%q: error %v does not say %s", tc.args, err, w)
			}
		}
	}
}

func TestS3NeedsBucket(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string // in the error; "": no error
	}{
		{nil, ""},
		{[]string{"--s3-bucket", "b", "--s3-endpoint", "http://x"}, ""},
		{[]string{"--s3-endpoint", "http://x"}, "--s3-endpoint without --s3-bucket"},
		{[]string{"--s3-path-style", "--s3-region", "r"}, "--s3-region, --s3-path-style without --s3-bucket"},
	} {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		for _, name := range []string{"s3-bucket", "s3-endpoint", "s3-region"} {
			fs.String(name, "", "")
		}
		fs.Bool("s3-path-style", false, "")
		if err := fs.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		err := S3NeedsBucket(fs)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%q: %v, want %q", tc.args, err, tc.want)
		}
	}
}
