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

func TestSegmentKey(t *testing.T) {
	id := TopicID{0x01, 0x23, 15: 0xff}
	for _, tc := range []struct {
		prefix string
		base   int64
		want   string
	}{
		{"", 0, "tiered/012300000000000000000000000000ff/7/00000000000000000000-u1.seg"},
		{"floe/", 42, "floe/tiered/012300000000000000000000000000ff/7/00000000000000000042-u1.seg"},
		{"/a/b/", 9223372036854775807, "a/b/tiered/012300000000000000000000000000ff/7/09223372036854775807-u1.seg"},
	} {
		if got := SegmentKey(tc.prefix, id, 7, tc.base, "u1"); got != tc.want {
			t.Errorf("SegmentKey(%q, %d) = %q, want %q", tc.prefix, tc.base, got, tc.want)
		}
		if got := TieredPrefix(tc.prefix); got+tc.want[len(got):] != tc.want || got[len(got)-len("tiered/"):] != "tiered/" {
			t.Errorf("TieredPrefix(%q) = %q, not a prefix of %q", tc.prefix, got, tc.want)
		}
	}
}

func TestSnapshotPrefix(t *testing.T) {
	for _, tc := range []struct{ prefix, want, legacy string }{
		{"", "coordinator/snapshots/", ""},
		{"prod", "prod/coordinator/snapshots/", "prodcoordinator/snapshots/"},
		{"prod/", "prod/coordinator/snapshots/", ""},
		{"/prod/", "prod/coordinator/snapshots/", "/prod/coordinator/snapshots/"},
		{"a/b", "a/b/coordinator/snapshots/", "a/bcoordinator/snapshots/"},
	} {
		if got := SnapshotPrefix(tc.prefix); got != tc.want {
			t.Errorf("SnapshotPrefix(%q) = %q, want %q", tc.prefix, got, tc.want)
		}
		if got := LegacySnapshotPrefix(tc.prefix); got != tc.legacy {
			t.Errorf("LegacySnapshotPrefix(%q) = %q, want %q", tc.prefix, got, tc.legacy)
		}
	}
}
