package coordinator

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-io/floe/coordapi"
)

func testACL(rt kmsg.ACLResourceType, pt kmsg.ACLResourcePatternType, name, principal string, op kmsg.ACLOperation, perm kmsg.ACLPermissionType) coordapi.ACLBinding {
	return coordapi.ACLBinding{ResourceType: rt, ResourceName: name, PatternType: pt, Principal: principal, Host: "*", Operation: op, Permission: perm}
}

var (
	aclReadT    = testACL(kmsg.ACLResourceTypeTopic, kmsg.ACLResourcePatternTypeLiteral, "t", "User:alice", kmsg.ACLOperationRead, kmsg.ACLPermissionTypeAllow)
	aclWriteFoo = testACL(kmsg.ACLResourceTypeTopic, kmsg.ACLResourcePatternTypePrefixed, "foo", "User:bob", kmsg.ACLOperationWrite, kmsg.ACLPermissionTypeAllow)
	aclAllTopic = testACL(kmsg.ACLResourceTypeTopic, kmsg.ACLResourcePatternTypeLiteral, "*", "User:*", kmsg.ACLOperationDescribe, kmsg.ACLPermissionTypeAllow)
	aclGroup    = testACL(kmsg.ACLResourceTypeGroup, kmsg.ACLResourcePatternTypeLiteral, "g", "User:alice", kmsg.ACLOperationRead, kmsg.ACLPermissionTypeDeny)
	aclCluster  = testACL(kmsg.ACLResourceTypeCluster, kmsg.ACLResourcePatternTypeLiteral, coordapi.ACLClusterName, "User:ops", kmsg.ACLOperationAlter, kmsg.ACLPermissionTypeAllow)
)

func (e *testEnv) describeACLs(f coordapi.ACLFilter) []coordapi.ACLBinding {
	e.t.Helper()
	got, err := e.c.DescribeACLs(e.t.Context(), f)
	if err != nil {
		e.t.Fatalf("DescribeACLs: %v", err)
	}
	return got
}

func (e *testEnv) aclVersion() uint64 {
	e.t.Helper()
	v, err := e.c.ACLVersion(e.t.Context())
	if err != nil {
		e.t.Fatalf("ACLVersion: %v", err)
	}
	return v
}

func wantACLs(t *testing.T, what string, got []coordapi.ACLBinding, want ...coordapi.ACLBinding) {
	t.Helper()
	slices.SortFunc(want, func(a, b coordapi.ACLBinding) int { return a.Compare(&b) })
	if !slices.Equal(got, want) {
		t.Fatalf("%s:\n got %+v\nwant %+v", what, got, want)
	}
}

func TestACLsCreateDescribeDelete(t *testing.T) {
	e := newEnv(t)
	var notices []uint64
	cancel := e.c.SubscribeACLs(func(v uint64) { notices = append(notices, v) })
	defer cancel()
	if v := e.aclVersion(); v != 0 {
		t.Fatalf("new coordinator: ACL version %d", v)
	}
	all := []coordapi.ACLBinding{aclReadT, aclWriteFoo, aclAllTopic, aclGroup, aclCluster}
	if err := e.c.CreateACLs(t.Context(), all); err != nil {
		t.Fatal(err)
	}
	if v := e.aclVersion(); v != 1 || !slices.Equal(notices, []uint64{1}) {
		t.Fatalf("after a create: version %d, notices %v", v, notices)
	}
	// Idempotent: a duplicate is not stored again, and changes nothing.
	if err := e.c.CreateACLs(t.Context(), []coordapi.ACLBinding{aclReadT, aclReadT}); err != nil {
		t.Fatal(err)
	}
	if v := e.aclVersion(); v != 1 || len(notices) != 1 {
		t.Fatalf("after a duplicate create: version %d, notices %v", v, notices)
	}
	wantACLs(t, "all", e.describeACLs(coordapi.ACLFilterAll), all...)

	topicAny := coordapi.ACLFilterAll
	topicAny.ResourceType = kmsg.ACLResourceTypeTopic
	wantACLs(t, "topics", e.describeACLs(topicAny), aclReadT, aclWriteFoo, aclAllTopic)

	match := topicAny
	match.PatternType, match.ResourceName = kmsg.ACLResourcePatternTypeMatch, strp("foobar")
	wantACLs(t, "match foobar", e.describeACLs(match), aclWriteFoo, aclAllTopic)

	exact := topicAny
	exact.ResourceName = strp("foo")
	wantACLs(t, "any foo", e.describeACLs(exact), aclWriteFoo)

	alice := coordapi.ACLFilterAll
	alice.Principal = strp("User:alice")
	wantACLs(t, "alice", e.describeACLs(alice), aclReadT, aclGroup)

	deny := coordapi.ACLFilterAll
	deny.Permission = kmsg.ACLPermissionTypeDeny
	none := coordapi.ACLFilterAll
	none.Principal = strp("User:nobody")
	deleted, err := e.c.DeleteACLs(t.Context(), []coordapi.ACLFilter{alice, deny, none})
	if err != nil {
		t.Fatal(err)
	}
	if len(deleted) != 3 {
		t.Fatalf("DeleteACLs: %d results for 3 filters", len(deleted))
	}
	wantACLs(t, "deleted by alice", deleted[0], aclReadT, aclGroup)
	wantACLs(t, "deleted by deny", deleted[1], aclGroup)
	wantACLs(t, "deleted by none", deleted[2])
	if v := e.aclVersion(); v != 2 || !slices.Equal(notices, []uint64{1, 2}) {
		t.Fatalf("after a delete: version %d, notices %v", v, notices)
	}
	wantACLs(t, "after delete", e.describeACLs(coordapi.ACLFilterAll), aclWriteFoo, aclAllTopic, aclCluster)
	// Deleting nothing changes nothing.
	if _, err := e.c.DeleteACLs(t.Context(), []coordapi.ACLFilter{none}); err != nil {
		t.Fatal(err)
	}
	if v := e.aclVersion(); v != 2 {
		t.Fatalf("after deleting nothing: version %d", v)
	}

	// Persistence: the bindings and the version survive a reopen.
	e.reopen()
	wantACLs(t, "after reopen", e.describeACLs(coordapi.ACLFilterAll), aclWriteFoo, aclAllTopic, aclCluster)
	if v := e.aclVersion(); v != 2 {
		t.Fatalf("after reopen: version %d", v)
	}
	if err := e.c.CreateACLs(t.Context(), []coordapi.ACLBinding{aclGroup}); err != nil {
		t.Fatal(err)
	}
	if v := e.aclVersion(); v != 3 {
		t.Fatalf("after reopen and create: version %d", v)
	}
	e.reopen()
	wantACLs(t, "after second reopen", e.describeACLs(coordapi.ACLFilterAll), aclWriteFoo, aclAllTopic, aclCluster, aclGroup)
}

func TestACLsInvalid(t *testing.T) {
	e := newEnv(t)
	bad := aclReadT
	bad.Principal = "alice"
	err := e.c.CreateACLs(t.Context(), []coordapi.ACLBinding{aclGroup, bad})
	wantKerr(t, err, kerr.InvalidRequest)
	if got := e.describeACLs(coordapi.ACLFilterAll); len(got) != 0 {
		t.Fatalf("a failed create stored %+v", got)
	}
	f := coordapi.ACLFilterAll
	f.Operation = kmsg.ACLOperationUnknown
	_, err = e.c.DeleteACLs(t.Context(), []coordapi.ACLFilter{f})
	wantKerr(t, err, kerr.InvalidRequest)
	_, err = e.c.DescribeACLs(t.Context(), f)
	wantKerr(t, err, kerr.InvalidRequest)
}
