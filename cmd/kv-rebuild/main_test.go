package main

import (
	"errors"
	"flag"
	"strings"
	"testing"
)

// TestRunRefuses checks what run refuses before it opens anything.
func TestRunRefuses(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want error  // errors.Is; nil: see msg
		msg  string // in the error
	}{
		{[]string{"--help"}, flag.ErrHelp, ""},
		{[]string{"--topic", "users", "extra"}, nil, `unexpected argument "extra"`},
		{[]string{"--s3-path-style", "true", "--topic", "users"}, nil, "--s3-path-style=true"},
		{[]string{"--s3-endpoint", "http://127.0.0.1:9000", "--topic", "users"}, nil, "--s3-endpoint without --s3-bucket"},
		{nil, nil, "--topic is required"},
	} {
		err := run(tc.args)
		if tc.want != nil && !errors.Is(err, tc.want) || tc.want == nil && (err == nil || !strings.Contains(err.Error(), tc.msg)) {
			t.Errorf("%q: %v, want %v %q", tc.args, err, tc.want, tc.msg)
		}
	}
}
