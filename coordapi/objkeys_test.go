package coordapi

import "testing"

func TestWALKey(t *testing.T) {
	for _, tc := range []struct{ prefix, want string }{
		{"", "wal/0190"},
		{"floe", "floe/wal/0190"},
		{"floe/", "floe/wal/0190"},
		{"/floe/", "floe/wal/0190"},
		{"a/b", "a/b/wal/0190"},
		{"a/b//", "a/b/wal/0190"},
	} {
		if got := WALKey(tc.prefix, "0190"); got != tc.want {
			t.Errorf("WALKey(%q) = %q, want %q", tc.prefix, got, tc.want)
		}
		if got, want := WALPrefix(tc.prefix), tc.want[:len(tc.want)-len("0190")]; got != want {
			t.Errorf("WALPrefix(%q) = %q, want %q", tc.prefix, got, want)
		}
	}
}
