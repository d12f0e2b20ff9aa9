package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestRunFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		out  string
	}{
		{[]string{"--help"}, 0, "-profile"},
		{[]string{"--list-profiles"}, 0, "s3-standard"},
		{[]string{"--profile", "nope"}, 2, "unknown profile"},
		{[]string{"stray"}, 2, "unexpected argument"},
		{[]string{"--upstream", "127.0.0.1:9000", "--listen", "127.0.0.1:0"}, 1, "must be an http"},
	} {
		var out bytes.Buffer
		if code := run(tc.args, &out, &out); code != tc.code || !strings.Contains(out.String(), tc.out) {
			t.Errorf("run(%q) = %d, %q; want %d and %q", tc.args, code, out.String(), tc.code, tc.out)
		}
	}
}
