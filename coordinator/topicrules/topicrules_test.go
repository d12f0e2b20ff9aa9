package topicrules

import (
	"errors"
	"maps"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/floe-io/floe/coordapi"
)

// errCode is the Kafka error code err carries, 0 for nil.
func errCode(err error) int16 { return coordapi.ErrorCode(err) }

func TestValidateName(t *testing.T) {
	invalid := kerr.InvalidTopicException.Code
	for _, tc := range []struct {
		name string
		want int16
	}{
		{"orders", 0},
		{"Orders.v2_all-EU", 0},
		{"0123456789", 0},
		{"a", 0},
		{"z", 0},
		{"Z", 0},
		{"9", 0},
		{"A", 0},
		{"`", invalid},
		{"{", invalid},
		{"@", invalid},
		{"[", invalid},
		{"...", 0},
		{"a/b", 0},
		{"a/b/c", 0},
		{"a//b", 0},
		{strings.Repeat("x", MaxNameLen), 0},
		{strings.Repeat("x", MaxNameLen+1), invalid},
		{"", invalid},
		{".", invalid},
		{"..", invalid},
		{"/a", invalid},
		{"a/", invalid},
		{"/", invalid},
		{"a b", invalid},
		{"a:b", invalid},
		{"a\x00b", invalid},
		{"caf\u00e9", invalid},
		{"a+b", invalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := ValidateName(tc.name)
			if got := errCode(err); got != tc.want {
				t.Fatalf("ValidateName(%q): code %d (%v), want %d", tc.name, got, err, tc.want)
			}
			var ke *coordapi.KafkaError
			if err != nil && (!errors.As(err, &ke) || ke.Message == "") {
				t.Fatalf("ValidateName(%q): %v is not a KafkaError with a message", tc.name, err)
			}
		})
	}
}

func TestCollisionName(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"orders", "orders"},
		{"a.b", "a_b"},
		{"a_b", "a_b"},
		{"..x.", "__x_"},
		{"a/b.c", "a/b_c"},
	} {
		if got := CollisionName(tc.in); got != tc.want {
			t.Errorf("CollisionName(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestNewID draws many ids: none may be zero, the metadata topic's id, or
// start with '-' in base64 (its first six bits 62). A random UUID starts
// with those bits once in 64 draws, so the draws would show a NewID that
// did not skip them.
func TestNewID(t *testing.T) {
	seen := map[coordapi.TopicID]bool{}
	for range 5000 {
		id := NewID()
		switch {
		case id.IsZero():
			t.Fatal("NewID returned the zero id")
		case id == (coordapi.TopicID{15: 1}):
			t.Fatal("NewID returned the metadata topic's id")
		case id[0]>>2 == 62:
			t.Fatalf("NewID returned %x, whose base64 starts with '-'", id)
		case seen[id]:
			t.Fatalf("NewID returned %x twice", id)
		}
		seen[id] = true
	}
}

func TestPartitions(t *testing.T) {
	const def, limit = 3, 100
	invalid := kerr.InvalidPartitions.Code
	for _, tc := range []struct {
		n     int32
		want  int32
		wantC int16
	}{
		{-1, def, 0},
		{1, 1, 0},
		{7, 7, 0},
		{limit, limit, 0},
		{limit + 1, 0, invalid},
		{0, 0, invalid},
		{-2, 0, invalid},
		{-1 << 31, 0, invalid},
	} {
		got, err := Partitions(tc.n, def, limit)
		if got != tc.want || errCode(err) != tc.wantC {
			t.Errorf("Partitions(%d, %d, %d) = %d, %v; want %d, code %d", tc.n, def, limit, got, err, tc.want, tc.wantC)
		}
	}
}

func TestReplicationFactor(t *testing.T) {
	invalid := kerr.InvalidReplicationFactor.Code
	for _, tc := range []struct {
		rf   int16
		want int16
	}{
		{-1, 0},
		{1, 0},
		{2, 0},
		{3, 0},
		{0, invalid},
		{-2, invalid},
		{4, invalid},
		{-1 << 15, invalid},
		{1<<15 - 1, invalid},
	} {
		if err := ReplicationFactor(tc.rf); errCode(err) != tc.want {
			t.Errorf("ReplicationFactor(%d) = %v, want code %d", tc.rf, err, tc.want)
		}
	}
}

func TestApplyConfigOps(t *testing.T) {
	str := func(s string) *string { return &s }
	const (
		list  = coordapi.ConfigCleanupPolicy // a LIST config, default "delete"
		long  = coordapi.ConfigRetentionMs   // not a LIST config
		other = "segment.bytes"
	)
	set := func(name string, v *string) coordapi.ConfigOp {
		return coordapi.ConfigOp{Name: name, Op: coordapi.OpSet, Value: v}
	}
	op := func(o int8, name string, v *string) coordapi.ConfigOp {
		return coordapi.ConfigOp{Name: name, Op: o, Value: v}
	}
	current := map[string]string{long: "1000", other: "4096"}
	for _, tc := range []struct {
		name        string
		current     map[string]string
		ops         []coordapi.ConfigOp
		incremental bool
		want        map[string]string
		wantC       int16
	}{
		{"alter: replaces the whole set", current, []coordapi.ConfigOp{set(long, str("5"))}, false,
			map[string]string{long: "5"}, 0},
		{"alter: no ops clears the set", current, nil, false, map[string]string{}, 0},
		{"alter: nil value leaves the config out", current, []coordapi.ConfigOp{set(long, nil), set(other, str("1"))}, false,
			map[string]string{other: "1"}, 0},
		{"alter: unknown name", current, []coordapi.ConfigOp{set("no.such.config", str("1"))}, false,
			nil, kerr.InvalidConfig.Code},
		{"alter: duplicate name", current, []coordapi.ConfigOp{set(long, str("1")), set(long, str("2"))}, false,
			nil, kerr.InvalidRequest.Code},
		{"incremental: set keeps the others", current, []coordapi.ConfigOp{set(long, str("5"))}, true,
			map[string]string{long: "5", other: "4096"}, 0},
		{"incremental: on a nil set", nil, []coordapi.ConfigOp{set(long, str("5"))}, true,
			map[string]string{long: "5"}, 0},
		{"incremental: no ops on a nil set", nil, nil, true, map[string]string{}, 0},
		{"incremental: delete", current, []coordapi.ConfigOp{op(coordapi.OpDelete, long, nil)}, true,
			map[string]string{other: "4096"}, 0},
		{"incremental: delete of an unset config", current, []coordapi.ConfigOp{op(coordapi.OpDelete, list, nil)}, true,
			map[string]string{long: "1000", other: "4096"}, 0},
		{"incremental: set with a nil value", current, []coordapi.ConfigOp{set(long, nil)}, true,
			nil, kerr.InvalidRequest.Code},
		{"incremental: append with a nil value", current, []coordapi.ConfigOp{op(coordapi.OpAppend, list, nil)}, true,
			nil, kerr.InvalidRequest.Code},
		{"incremental: unknown name", current, []coordapi.ConfigOp{op(coordapi.OpDelete, "no.such.config", nil)}, true,
			nil, kerr.InvalidConfig.Code},
		{"incremental: duplicate name", current, []coordapi.ConfigOp{set(long, str("1")), op(coordapi.OpDelete, long, nil)}, true,
			nil, kerr.InvalidRequest.Code},
		{"incremental: unknown op", current, []coordapi.ConfigOp{op(9, long, str("1"))}, true,
			nil, kerr.InvalidRequest.Code},
		{"incremental: append to the default", nil, []coordapi.ConfigOp{op(coordapi.OpAppend, list, str("compact"))}, true,
			map[string]string{list: "delete,compact"}, 0},
		{"incremental: append skips items already there", map[string]string{list: "compact"},
			[]coordapi.ConfigOp{op(coordapi.OpAppend, list, str(" compact, delete ,delete"))}, true,
			map[string]string{list: "compact,delete"}, 0},
		{"incremental: subtract from the default", nil, []coordapi.ConfigOp{op(coordapi.OpSubtract, list, str("delete"))}, true,
			map[string]string{list: ""}, 0},
		{"incremental: subtract an absent item", map[string]string{list: "compact,delete"},
			[]coordapi.ConfigOp{op(coordapi.OpSubtract, list, str("other,delete"))}, true,
			map[string]string{list: "compact"}, 0},
		{"incremental: append to a non-list", current, []coordapi.ConfigOp{op(coordapi.OpAppend, long, str("1"))}, true,
			nil, kerr.InvalidConfig.Code},
		{"incremental: subtract from a non-list", current, []coordapi.ConfigOp{op(coordapi.OpSubtract, long, str("1"))}, true,
			nil, kerr.InvalidConfig.Code},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := maps.Clone(tc.current)
			got, err := ApplyConfigOps(tc.current, tc.ops, tc.incremental)
			if c := errCode(err); c != tc.wantC {
				t.Fatalf("ApplyConfigOps: code %d (%v), want %d", c, err, tc.wantC)
			}
			if err != nil && got != nil {
				t.Fatalf("ApplyConfigOps: %v with a set %v", err, got)
			}
			if err == nil && (got == nil || !maps.Equal(got, tc.want)) {
				t.Fatalf("ApplyConfigOps = %v, want %v", got, tc.want)
			}
			if !maps.Equal(tc.current, before) {
				t.Fatalf("ApplyConfigOps changed current: %v, was %v", tc.current, before)
			}
		})
	}
}
