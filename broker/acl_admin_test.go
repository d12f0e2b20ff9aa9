package broker

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/internal/testkit"
)

// TestACLAdminAPIs creates, describes and deletes ACLs with kadm over TCP,
// as the super user and as principals the cluster does not allow.
func TestACLAdminAPIs(t *testing.T) {
	e := newACLEnv(t)
	ctx := t.Context()
	admin := e.admin()

	// A principal without CLUSTER ALTER / DESCRIBE is refused.
	alice := kadm.NewClient(e.client("alice"))
	b := kadm.NewACLs().Topics("orders-").ResourcePatternType(kadm.ACLPatternPrefixed).
		Allow("User:alice").Operations(kadm.OpWrite, kadm.OpRead)
	res, err := alice.CreateACLs(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		wantErr(t, "alice creates an acl", r.Err, kerr.ClusterAuthorizationFailed)
	}
	dres, err := alice.DescribeACLs(ctx, kadm.NewACLs().AnyResource().Allow().AllowHosts().Deny().DenyHosts().Operations().ResourcePatternType(kadm.ACLPatternAny))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range dres {
		wantErr(t, "alice describes acls", r.Err, kerr.ClusterAuthorizationFailed)
	}

	res, err = admin.CreateACLs(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Err != nil {
			t.Fatalf("admin creates %+v: %v", r, r.Err)
		}
	}
	e.grant(kadm.NewACLs().Groups("g").Allow("User:*").Operations(kadm.OpRead))
	// Idempotent: the same bindings again succeed and are not stored twice.
	e.grant(b)

	all := kadm.NewACLs().AnyResource().Allow().AllowHosts().Deny().DenyHosts().Operations().ResourcePatternType(kadm.ACLPatternAny)
	described, err := admin.DescribeACLs(ctx, all)
	if err != nil {
		t.Fatal(err)
	}
	var n int
	for _, d := range described {
		if d.Err != nil {
			t.Fatal(d.Err)
		}
		n += len(d.Described)
	}
	if n != 3 {
		t.Fatalf("described %d acls, want 3: %+v", n, described)
	}

	match := kadm.NewACLs().Topics("orders-eu").ResourcePatternType(kadm.ACLPatternMatch).Allow().AllowHosts().Deny().DenyHosts().Operations()
	described, err = admin.DescribeACLs(ctx, match)
	if err != nil {
		t.Fatal(err)
	}
	if len(described) != 1 || len(described[0].Described) != 2 {
		t.Fatalf("MATCH orders-eu: %+v", described)
	}

	deleted, err := admin.DeleteACLs(ctx, kadm.NewACLs().AnyResource().ResourcePatternType(kadm.ACLPatternAny).
		Allow("User:alice").AllowHosts().Operations(kadm.OpWrite))
	if err != nil {
		t.Fatal(err)
	}
	if len(deleted) != 1 || deleted[0].Err != nil || len(deleted[0].Deleted) != 1 || deleted[0].Deleted[0].Operation != kadm.OpWrite {
		t.Fatalf("delete alice's WRITE: %+v", deleted)
	}
	e.waitACLs(e.b)
	if got := e.b.acls.current().Len(); got != 2 {
		t.Fatalf("broker holds %d bindings after the delete, want 2", got)
	}
}

// TestACLAPIsEveryVersion serves DescribeAcls, CreateAcls and DeleteAcls at
// every version, and checks Kafka's validation errors.
func TestACLAPIsEveryVersion(t *testing.T) {
	c := newTestCoordinator(t)
	b := newAdminBroker(t, c, func(o *Options) {
		o.ACLsEnabled = true
		o.SuperUsers = []string{AnonymousPrincipal} // serveVersion has no connection
		o.Logger = testkit.Logger()
	})
	for _, v := range servedVersions(t, kmsg.CreateACLs) {
		req := kmsg.NewPtrCreateACLsRequest()
		add := func(rt kmsg.ACLResourceType, name string, pt kmsg.ACLResourcePatternType, principal string) {
			cr := kmsg.NewCreateACLsRequestCreation()
			cr.ResourceType, cr.ResourceName, cr.ResourcePatternType = rt, name, pt
			cr.Principal, cr.Host = principal, "*"
			cr.Operation, cr.PermissionType = kmsg.ACLOperationRead, kmsg.ACLPermissionTypeAllow
			req.Creations = append(req.Creations, cr)
		}
		pt := kmsg.ACLResourcePatternTypePrefixed
		if v == 0 {
			pt = kmsg.ACLResourcePatternTypeLiteral
		}
		add(kmsg.ACLResourceTypeTopic, "t", pt, "User:alice")
		add(kmsg.ACLResourceTypeTopic, "t", pt, "alice")                                                       // no principal type
		add(kmsg.ACLResourceTypeCluster, "x", kmsg.ACLResourcePatternTypeLiteral, "User:alice")                // misnamed cluster
		add(kmsg.ACLResourceTypeAny, "t", kmsg.ACLResourcePatternTypeLiteral, "User:alice")                    // ANY in a create
		add(kmsg.ACLResourceTypeGroup, "", kmsg.ACLResourcePatternTypeLiteral, "User:alice")                   // empty name
		add(kmsg.ACLResourceTypeGroup, "g", kmsg.ACLResourcePatternTypeLiteral, coordapi.ACLWildcardPrincipal) // fine
		resp := serveVersion[*kmsg.CreateACLsResponse](t, b, req, v)
		if len(resp.Results) != 6 {
			t.Fatalf("v%d: %d results", v, len(resp.Results))
		}
		for i, want := range []*kerr.Error{nil, kerr.InvalidRequest, kerr.InvalidRequest, kerr.InvalidRequest, kerr.InvalidRequest, nil} {
			wantCode(t, "create", resp.Results[i].ErrorCode, want)
			if want != nil && showStr(resp.Results[i].ErrorMessage) == "" {
				t.Fatalf("v%d result %d: no error message", v, i)
			}
		}

		dreq := kmsg.NewPtrDescribeACLsRequest()
		dreq.ResourceType, dreq.Operation, dreq.PermissionType = kmsg.ACLResourceTypeAny, kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
		dreq.ResourcePatternType = kmsg.ACLResourcePatternTypeAny
		if v == 0 {
			dreq.ResourcePatternType = kmsg.ACLResourcePatternTypeLiteral
		}
		dresp := serveVersion[*kmsg.DescribeACLsResponse](t, b, dreq, v)
		wantCode(t, "describe", dresp.ErrorCode, nil)
		if len(dresp.Resources) != 2 || len(dresp.Resources[0].ACLs) != 1 || dresp.Resources[0].ResourceName != "t" ||
			dresp.Resources[1].ACLs[0].Principal != coordapi.ACLWildcardPrincipal {
			t.Fatalf("v%d describe: %+v", v, dresp.Resources)
		}
		dreq.Operation = kmsg.ACLOperationUnknown
		wantCode(t, "describe UNKNOWN", serveVersion[*kmsg.DescribeACLsResponse](t, b, dreq, v).ErrorCode, kerr.InvalidRequest)

		delReq := kmsg.NewPtrDeleteACLsRequest()
		f := kmsg.NewDeleteACLsRequestFilter()
		f.ResourceType, f.Operation, f.PermissionType = kmsg.ACLResourceTypeAny, kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
		f.ResourcePatternType = dreq.ResourcePatternType
		bad := f
		bad.PermissionType = kmsg.ACLPermissionTypeUnknown
		delReq.Filters = append(delReq.Filters, bad, f)
		delResp := serveVersion[*kmsg.DeleteACLsResponse](t, b, delReq, v)
		if len(delResp.Results) != 2 {
			t.Fatalf("v%d delete: %+v", v, delResp)
		}
		wantCode(t, "delete UNKNOWN", delResp.Results[0].ErrorCode, kerr.InvalidRequest)
		wantCode(t, "delete", delResp.Results[1].ErrorCode, nil)
		if len(delResp.Results[1].MatchingACLs) != 2 {
			t.Fatalf("v%d delete matched %+v", v, delResp.Results[1].MatchingACLs)
		}
	}
}

// TestACLAPIsDisabled: without --acls-enabled the ACL APIs answer
// SECURITY_DISABLED, as Kafka without an authorizer.
func TestACLAPIsDisabled(t *testing.T) {
	b := newAdminBroker(t, newTestCoordinator(t))
	dreq := kmsg.NewPtrDescribeACLsRequest()
	dreq.ResourceType, dreq.Operation, dreq.PermissionType = kmsg.ACLResourceTypeAny, kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	dreq.ResourcePatternType = kmsg.ACLResourcePatternTypeAny
	wantCode(t, "describe", serveVersion[*kmsg.DescribeACLsResponse](t, b, dreq, 3).ErrorCode, kerr.SecurityDisabled)
	creq := kmsg.NewPtrCreateACLsRequest()
	creq.Creations = append(creq.Creations, kmsg.NewCreateACLsRequestCreation())
	wantCode(t, "create", serveVersion[*kmsg.CreateACLsResponse](t, b, creq, 3).Results[0].ErrorCode, kerr.SecurityDisabled)
	delReq := kmsg.NewPtrDeleteACLsRequest()
	delReq.Filters = append(delReq.Filters, kmsg.NewDeleteACLsRequestFilter())
	wantCode(t, "delete", serveVersion[*kmsg.DeleteACLsResponse](t, b, delReq, 3).Results[0].ErrorCode, kerr.SecurityDisabled)
	if !b.AuthorizeTopic("User:alice", "10.0.0.1", kmsg.ACLOperationRead, "t") {
		t.Fatal("AuthorizeTopic denied with ACLs off")
	}
}

// TestACLDescribeCluster: DescribeCluster answers every principal, as
// Kafka does, with the cluster operations it may perform.
func TestACLDescribeCluster(t *testing.T) {
	e := newACLEnv(t)
	req := kmsg.NewPtrDescribeClusterRequest()
	req.IncludeClusterAuthorizedOperations = true
	resp := send[*kmsg.DescribeClusterResponse](t, e.client("alice"), req)
	wantCode(t, "alice", resp.ErrorCode, nil)
	if len(resp.Brokers) != 1 || resp.ClusterAuthorizedOperations != 0 {
		t.Fatalf("alice without acls: %+v", resp)
	}
	e.grant(kadm.NewACLs().Clusters().Allow("User:alice").Operations(kadm.OpAlter))
	resp = send[*kmsg.DescribeClusterResponse](t, e.client("alice"), req)
	if want := int32(1<<kmsg.ACLOperationAlter | 1<<kmsg.ACLOperationDescribe); resp.ClusterAuthorizedOperations != want {
		t.Fatalf("alice with CLUSTER ALTER: operations %b, want %b", resp.ClusterAuthorizedOperations, want)
	}
	if ops := send[*kmsg.DescribeClusterResponse](t, e.client(aclAdmin), req).ClusterAuthorizedOperations; ops != clusterAuthorizedOperations {
		t.Fatalf("admin: operations %b", ops)
	}
}

func TestParseSuperUsers(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string
		ok   bool
	}{
		{"", nil, true},
		{"User:admin", []string{"User:admin"}, true},
		{" User:admin , User:ops ", []string{"User:admin", "User:ops"}, true},
		{"User:admin;User:ops", []string{"User:admin", "User:ops"}, true},
		{"admin", nil, false},
		{"User:", nil, false},
	} {
		got, err := ParseSuperUsers(c.in)
		if (err == nil) != c.ok || !slices.Equal(got, c.want) {
			t.Errorf("ParseSuperUsers(%q) = %q, %v", c.in, got, err)
		}
	}
}
