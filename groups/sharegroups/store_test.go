package sharegroups

import (
	"encoding/hex"
	"reflect"
	"slices"
	"testing"

	"github.com/floe-io/floe/groups/members"
	"github.com/floe-io/floe/internal/valenc"
)

// testShareMembers are share group members as a member record can hold
// them (the fields it writes; session and written are not in it).
func testShareMembers() []*member {
	t1, t2 := topicID{1, 2, 3}, topicID{0xff, 9}
	return []*member{
		{id: "new", target: members.Partitions{}, assigned: members.Partitions{}},
		{id: "full", rackID: strPtr("rack-1"), clientID: "client", clientHost: "/10.0.0.1",
			epoch: 7, prevEpoch: 5, topics: []string{"a", "b"},
			target:   members.Partitions{t1: {0, 1}, t2: {3}},
			assigned: members.Partitions{t1: {0}, t2: {3, 4, 1000000}}},
		{id: "left", epoch: -1, prevEpoch: 3, topics: []string{"only"},
			target: members.Partitions{t2: {2}}, assigned: members.Partitions{}},
	}
}

// shareMemberGolden are testShareMembers' records as written to the 'h'
// family: a change to these bytes is a change of the on-disk format.
var shareMemberGolden = map[string]string{
	"new":  "010000000000000000",
	"full": "0101067261636b2d3106636c69656e74092f31302e302e302e310e0a02016101620201020300000000000000000000000000020002ff090000000000000000000000000000010602010203000000000000000000000000000100ff09000000000000000000000000000003060880897a",
	"left": "01000000010601046f6e6c7901ff090000000000000000000000000000010400",
}

// TestShareMemberCodec: members are written as the golden bytes say,
// round-trip through their records, and truncated records fail.
func TestShareMemberCodec(t *testing.T) {
	for _, m := range testShareMembers() {
		t.Run(m.id, func(t *testing.T) {
			v := rewriteShareMember(t, m)
			if got, want := hex.EncodeToString(v), shareMemberGolden[m.id]; got != want {
				t.Fatalf("record changed:\n got %s\nwant %s", got, want)
			}
			for n := range len(v) {
				if _, err := decodeShareMember(m.id, v[:n]); err == nil {
					t.Fatalf("truncated to %d bytes: no error", n)
				}
			}
		})
	}
	valid := encodeShareMember(testShareMembers()[1])
	for _, tc := range []struct {
		name string
		v    []byte
	}{
		{"empty", nil},
		{"unknown format", append([]byte{2}, valid[1:]...)},
		{"trailing bytes", append(slices.Clone(valid), 0)},
		{"bad presence byte", []byte{valenc.Version1, 2}},
		{"huge topic count", []byte{valenc.Version1, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0x0f}},
		{"huge partition topic count", []byte{valenc.Version1, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0x03}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if m, err := decodeShareMember("m", tc.v); err == nil {
				t.Fatalf("decoded %+v", m)
			}
		})
	}
}

// rewriteShareMember returns m's record, failing t unless the record
// decodes to m again.
func rewriteShareMember(t *testing.T, m *member) []byte {
	t.Helper()
	v := encodeShareMember(m)
	got, err := decodeShareMember(m.id, v)
	if err != nil {
		t.Fatalf("%x does not decode: %v", v, err)
	}
	if !reflect.DeepEqual(got, m) {
		t.Fatalf("round trip of %x:\n got %+v\nwant %+v", v, got, m)
	}
	return v
}

// FuzzShareMember: decoding any bytes (a share member's record is read
// from disk) fails or yields a member that its record decodes to again;
// it never panics.
func FuzzShareMember(f *testing.F) {
	for _, m := range testShareMembers() {
		f.Add(encodeShareMember(m))
	}
	f.Add(shareStateRecord{assignmentEpoch: 3, metaSig: "sig"}.encode())
	f.Fuzz(func(t *testing.T, b []byte) {
		decodeShareStateRecord(b)
		parseShareKey(b)
		if m, err := decodeShareMember("m", b); err == nil {
			rewriteShareMember(t, m)
		}
	})
}
