package rpc_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-io/floe/coordapi"
)

func strptr(s string) *string { return &s }

func TestACLsOverNATS(t *testing.T) {
	testBinding := coordapi.ACLBinding{ResourceType: kmsg.ACLResourceTypeTopic, ResourceName: "orders-", PatternType: kmsg.ACLResourcePatternTypePrefixed,
		Principal: "User:alice", Host: "10.0.0.1", Operation: kmsg.ACLOperationWrite, Permission: kmsg.ACLPermissionTypeAllow}
	testBinding2 := coordapi.ACLBinding{ResourceType: kmsg.ACLResourceTypeCluster, ResourceName: coordapi.ACLClusterName, PatternType: kmsg.ACLResourcePatternTypeLiteral,
		Principal: "User:*", Host: "*", Operation: kmsg.ACLOperationDescribe, Permission: kmsg.ACLPermissionTypeDeny}
	testFilter := coordapi.ACLFilter{ResourceType: kmsg.ACLResourceTypeTopic, ResourceName: strptr("orders-eu"), PatternType: kmsg.ACLResourcePatternTypeMatch,
		Principal: strptr("User:alice"), Operation: kmsg.ACLOperationAny, Permission: kmsg.ACLPermissionTypeAny}
	e := newEnv(t, nil)
	ctx := context.Background()
	notices := make(chan uint64, 16)
	cancel := e.client.SubscribeACLs(func(v uint64) { notices <- v })
	defer cancel()
	if err := e.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := e.client.CreateACLs(ctx, []coordapi.ACLBinding{testBinding, testBinding2}); err != nil {
		t.Fatal(err)
	}
	select {
	case v := <-notices:
		if v != 1 {
			t.Fatalf("notice of version %d, want 1", v)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no acl notice after a create")
	}
	if v, err := e.client.ACLVersion(ctx); err != nil || v != 1 {
		t.Fatalf("ACLVersion = %d, %v", v, err)
	}
	got, err := e.client.DescribeACLs(ctx, testFilter)
	if err != nil || len(got) != 1 || got[0] != testBinding {
		t.Fatalf("DescribeACLs = %+v, %v", got, err)
	}
	bad := testBinding
	bad.PatternType = kmsg.ACLResourcePatternTypeAny
	wantKerr(t, e.client.CreateACLs(ctx, []coordapi.ACLBinding{bad}), kerr.InvalidRequest)
	deleted, err := e.client.DeleteACLs(ctx, []coordapi.ACLFilter{coordapi.ACLFilterAll, testFilter})
	if err != nil || len(deleted) != 2 || len(deleted[0]) != 2 || len(deleted[1]) != 1 {
		t.Fatalf("DeleteACLs = %+v, %v", deleted, err)
	}
	if v, err := e.client.ACLVersion(ctx); err != nil || v != 2 {
		t.Fatalf("ACLVersion after delete = %d, %v", v, err)
	}
}

// TestACLsSmallPayload: more bindings than one message holds are described
// page by page, and a delete of all of them deletes all (its listing cut to
// one message).
func TestACLsSmallPayload(t *testing.T) {
	e := newEnv(t, &server.Options{MaxPayload: 4 << 10})
	ctx := context.Background()
	const n = 500 // ≈ 60 bytes each: several pages
	var bindings []coordapi.ACLBinding
	for i := range n {
		bindings = append(bindings, coordapi.ACLBinding{ResourceType: kmsg.ACLResourceTypeTopic, ResourceName: fmt.Sprintf("topic-%04d", i),
			PatternType: kmsg.ACLResourcePatternTypeLiteral, Principal: fmt.Sprintf("User:user-%04d", i), Host: "*",
			Operation: kmsg.ACLOperationRead, Permission: kmsg.ACLPermissionTypeAllow})
	}
	if err := e.client.CreateACLs(ctx, bindings); err != nil { // in several requests
		t.Fatal(err)
	}
	got, err := e.client.DescribeACLs(ctx, coordapi.ACLFilterAll)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, bindings) {
		t.Fatalf("described %d bindings, want the %d created", len(got), n)
	}
	deleted, err := e.client.DeleteACLs(ctx, []coordapi.ACLFilter{coordapi.ACLFilterAll})
	if err != nil {
		t.Fatal(err)
	}
	if len(deleted) != 1 || len(deleted[0]) == 0 || len(deleted[0]) >= n {
		t.Fatalf("delete listed %d bindings, want some, cut to one message", len(deleted[0]))
	}
	if got, err = e.client.DescribeACLs(ctx, coordapi.ACLFilterAll); err != nil || len(got) != 0 {
		t.Fatalf("after deleting all: %d bindings, %v", len(got), err)
	}
}
