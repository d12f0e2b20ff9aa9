package acl

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-io/floe/coordapi"
)

const (
	topic    = kmsg.ACLResourceTypeTopic
	group    = kmsg.ACLResourceTypeGroup
	cluster  = kmsg.ACLResourceTypeCluster
	txn      = kmsg.ACLResourceTypeTransactionalId
	literal  = kmsg.ACLResourcePatternTypeLiteral
	prefixed = kmsg.ACLResourcePatternTypePrefixed
	allow    = kmsg.ACLPermissionTypeAllow
	deny     = kmsg.ACLPermissionTypeDeny

	opAll             = kmsg.ACLOperationAll
	opRead            = kmsg.ACLOperationRead
	opWrite           = kmsg.ACLOperationWrite
	opCreate          = kmsg.ACLOperationCreate
	opDelete          = kmsg.ACLOperationDelete
	opAlter           = kmsg.ACLOperationAlter
	opDescribe        = kmsg.ACLOperationDescribe
	opDescribeConfigs = kmsg.ACLOperationDescribeConfigs
	opAlterConfigs    = kmsg.ACLOperationAlterConfigs
	opIdempotentWrite = kmsg.ACLOperationIdempotentWrite
)

// bind is a binding for the tables: host "*" unless set by withHost.
func bind(rt kmsg.ACLResourceType, pt kmsg.ACLResourcePatternType, name, principal string, op kmsg.ACLOperation, perm kmsg.ACLPermissionType) coordapi.ACLBinding {
	return coordapi.ACLBinding{ResourceType: rt, ResourceName: name, PatternType: pt, Principal: principal, Host: "*", Operation: op, Permission: perm}
}

func withHost(b coordapi.ACLBinding, host string) coordapi.ACLBinding {
	b.Host = host
	return b
}

type check struct {
	principal, host string
	op              kmsg.ACLOperation
	rt              kmsg.ACLResourceType
	name            string
	want            bool
}

func TestAuthorize(t *testing.T) {
	const alice, bob = "User:alice", "User:bob"
	for _, tc := range []struct {
		name     string
		bindings []coordapi.ACLBinding
		super    []string
		checks   []check
	}{
		{
			name: "no acl: denied",
			checks: []check{
				{alice, "10.0.0.1", opRead, topic, "t", false},
				{alice, "10.0.0.1", opDescribe, cluster, coordapi.ACLClusterName, false},
			},
		},
		{
			name:  "super user: allowed everything, even denied",
			super: []string{"User:admin"},
			bindings: []coordapi.ACLBinding{
				bind(topic, literal, "*", "User:*", opAll, deny),
			},
			checks: []check{
				{"User:admin", "10.0.0.1", opWrite, topic, "t", true},
				{"User:admin", "10.0.0.1", opAlter, cluster, coordapi.ACLClusterName, true},
				{"User:Admin", "10.0.0.1", opWrite, topic, "t", false},
			},
		},
		{
			name:     "literal allow: that topic and that operation",
			bindings: []coordapi.ACLBinding{bind(topic, literal, "t", alice, opRead, allow)},
			checks: []check{
				{alice, "10.0.0.1", opRead, topic, "t", true},
				{alice, "10.0.0.1", opWrite, topic, "t", false},
				{alice, "10.0.0.1", opRead, topic, "t2", false},
				{alice, "10.0.0.1", opRead, group, "t", false},
				{bob, "10.0.0.1", opRead, topic, "t", false},
			},
		},
		{
			name: "deny wins over allow",
			bindings: []coordapi.ACLBinding{
				bind(topic, literal, "t", alice, opAll, allow),
				bind(topic, literal, "t", alice, opWrite, deny),
			},
			checks: []check{
				{alice, "10.0.0.1", opRead, topic, "t", true},
				{alice, "10.0.0.1", opWrite, topic, "t", false},
			},
		},
		{
			name: "deny all wins; a deny implies nothing",
			bindings: []coordapi.ACLBinding{
				bind(topic, literal, "*", "User:*", opRead, allow),
				bind(topic, literal, "secret", alice, opAll, deny),
				bind(topic, literal, "t", alice, opWrite, deny),
			},
			checks: []check{
				{alice, "10.0.0.1", opRead, topic, "secret", false},
				{alice, "10.0.0.1", opRead, topic, "t", true},
				{alice, "10.0.0.1", opDescribe, topic, "t", true}, // DENY WRITE does not deny DESCRIBE
			},
		},
		{
			name:     "operation ALL allows any operation",
			bindings: []coordapi.ACLBinding{bind(group, literal, "g", alice, opAll, allow)},
			checks: []check{
				{alice, "h", opRead, group, "g", true},
				{alice, "h", opDelete, group, "g", true},
				{alice, "h", opDescribe, group, "g", true},
			},
		},
		{
			name: "implied describe",
			bindings: []coordapi.ACLBinding{
				bind(topic, literal, "r", alice, opRead, allow),
				bind(topic, literal, "w", alice, opWrite, allow),
				bind(topic, literal, "d", alice, opDelete, allow),
				bind(topic, literal, "a", alice, opAlter, allow),
				bind(topic, literal, "c", alice, opCreate, allow),
				bind(topic, literal, "ac", alice, opAlterConfigs, allow),
			},
			checks: []check{
				{alice, "h", opDescribe, topic, "r", true},
				{alice, "h", opDescribe, topic, "w", true},
				{alice, "h", opDescribe, topic, "d", true},
				{alice, "h", opDescribe, topic, "a", true},
				{alice, "h", opDescribe, topic, "c", false},
				{alice, "h", opDescribeConfigs, topic, "ac", true},
				{alice, "h", opDescribeConfigs, topic, "a", false},
				{alice, "h", opRead, topic, "w", false},
				{alice, "h", opDescribe, topic, "ac", false},
			},
		},
		{
			name:     "wildcard principal",
			bindings: []coordapi.ACLBinding{bind(topic, literal, "t", "User:*", opRead, allow)},
			checks: []check{
				{alice, "h", opRead, topic, "t", true},
				{bob, "h", opRead, topic, "t", true},
				{"User:ANONYMOUS", "h", opRead, topic, "t", true},
			},
		},
		{
			name: "wildcard principal deny",
			bindings: []coordapi.ACLBinding{
				bind(topic, literal, "t", alice, opRead, allow),
				bind(topic, literal, "t", "User:*", opRead, deny),
			},
			checks: []check{{alice, "h", opRead, topic, "t", false}},
		},
		{
			name: "hosts",
			bindings: []coordapi.ACLBinding{
				withHost(bind(topic, literal, "t", alice, opRead, allow), "10.0.0.1"),
				withHost(bind(topic, literal, "t", alice, opWrite, allow), "*"),
				withHost(bind(topic, literal, "t", alice, opWrite, deny), "10.0.0.9"),
			},
			checks: []check{
				{alice, "10.0.0.1", opRead, topic, "t", true},
				{alice, "10.0.0.2", opRead, topic, "t", false},
				{alice, "10.0.0.2", opWrite, topic, "t", true},
				{alice, "10.0.0.9", opWrite, topic, "t", false},
			},
		},
		{
			name:     "literal * matches every resource of its type",
			bindings: []coordapi.ACLBinding{bind(topic, literal, "*", alice, opRead, allow)},
			checks: []check{
				{alice, "h", opRead, topic, "anything", true},
				{alice, "h", opRead, topic, "*", true},
				{alice, "h", opRead, group, "anything", false},
			},
		},
		{
			name: "prefixed",
			bindings: []coordapi.ACLBinding{
				bind(topic, prefixed, "orders-", alice, opWrite, allow),
				bind(topic, prefixed, "orders-secret", alice, opWrite, deny),
				bind(topic, prefixed, "o", bob, opRead, allow),
				bind(group, prefixed, "app-", alice, opRead, allow),
			},
			checks: []check{
				{alice, "h", opWrite, topic, "orders-eu", true},
				{alice, "h", opWrite, topic, "orders-", true},
				{alice, "h", opWrite, topic, "orders", false},
				{alice, "h", opWrite, topic, "orders-secret-1", false},
				{alice, "h", opDescribe, topic, "orders-eu", true},
				{bob, "h", opRead, topic, "orders-eu", true},
				{bob, "h", opRead, topic, "x", false},
				{alice, "h", opRead, group, "app-1", true},
				{alice, "h", opRead, group, "ap", false},
				{alice, "h", opRead, topic, "app-1", false},
			},
		},
		{
			name: "a prefixed * is a prefix, not a wildcard",
			bindings: []coordapi.ACLBinding{
				bind(topic, prefixed, "*", alice, opRead, allow),
			},
			checks: []check{
				{alice, "h", opRead, topic, "*x", true},
				{alice, "h", opRead, topic, "x", false},
			},
		},
		{
			name:     "cluster and transactional id",
			bindings: []coordapi.ACLBinding{bind(cluster, literal, coordapi.ACLClusterName, alice, opAlter, allow), bind(txn, literal, "tx", alice, opWrite, allow)},
			checks: []check{
				{alice, "h", opAlter, cluster, coordapi.ACLClusterName, true},
				{alice, "h", opDescribe, cluster, coordapi.ACLClusterName, true},
				{alice, "h", opCreate, cluster, coordapi.ACLClusterName, false},
				{alice, "h", opWrite, txn, "tx", true},
				{alice, "h", opWrite, txn, "ty", false},
			},
		},
		{
			name:     "invalid bindings are skipped",
			bindings: []coordapi.ACLBinding{bind(topic, kmsg.ACLResourcePatternTypeMatch, "t", alice, opRead, allow)},
			checks:   []check{{alice, "h", opRead, topic, "t", false}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := New(tc.bindings, tc.super)
			for _, c := range tc.checks {
				if got := a.Authorize(c.principal, c.host, c.op, c.rt, c.name); got != c.want {
					t.Errorf("Authorize(%s, %s, %s, %s, %q) = %v, want %v", c.principal, c.host, c.op, c.rt, c.name, got, c.want)
				}
			}
		})
	}
}

func TestAuthorizeAny(t *testing.T) {
	const alice = "User:alice"
	for _, tc := range []struct {
		name     string
		bindings []coordapi.ACLBinding
		want     bool
	}{
		{"none", nil, false},
		{"literal allow", []coordapi.ACLBinding{bind(topic, literal, "t", alice, opWrite, allow)}, true},
		{"wildcard principal", []coordapi.ACLBinding{bind(topic, prefixed, "t", "User:*", opWrite, allow)}, true},
		{"all", []coordapi.ACLBinding{bind(topic, literal, "t", alice, opAll, allow)}, true},
		{"other operation", []coordapi.ACLBinding{bind(topic, literal, "t", alice, opRead, allow)}, false},
		{"other resource type", []coordapi.ACLBinding{bind(group, literal, "t", alice, opWrite, allow)}, false},
		{"other host", []coordapi.ACLBinding{withHost(bind(topic, literal, "t", alice, opWrite, allow), "10.9.9.9")}, false},
		{"denied literal", []coordapi.ACLBinding{
			bind(topic, literal, "t", alice, opWrite, allow), bind(topic, literal, "t", alice, opWrite, deny)}, false},
		{"denied by prefix", []coordapi.ACLBinding{
			bind(topic, prefixed, "tab", alice, opWrite, allow), bind(topic, prefixed, "ta", alice, opWrite, deny)}, false},
		{"prefix deny does not dominate a shorter allow", []coordapi.ACLBinding{
			bind(topic, prefixed, "ta", alice, opWrite, allow), bind(topic, prefixed, "tab", alice, opWrite, deny)}, true},
		{"wildcard deny", []coordapi.ACLBinding{
			bind(topic, literal, "t", alice, opWrite, allow), bind(topic, literal, "*", "User:*", opWrite, deny)}, false},
		{"wildcard allow", []coordapi.ACLBinding{
			bind(topic, literal, "*", alice, opWrite, allow), bind(topic, literal, "t", alice, opWrite, deny)}, true},
	} {
		a := New(tc.bindings, nil)
		if got := a.AuthorizeAny(alice, "10.0.0.1", opWrite, topic); got != tc.want {
			t.Errorf("%s: AuthorizeAny = %v, want %v", tc.name, got, tc.want)
		}
	}
	if !New(nil, []string{alice}).AuthorizeAny(alice, "h", opIdempotentWrite, cluster) {
		t.Error("super user: AuthorizeAny = false")
	}
}

// BenchmarkAuthorize checks a request against 10,000 bindings: 990
// principals with 8 literal topic bindings and 2 prefixed ones each, and
// 100 bindings of every user (User:*, prefixed).
func BenchmarkAuthorize(b *testing.B) {
	var bindings []coordapi.ACLBinding
	for i := range 100 {
		bindings = append(bindings, bind(topic, prefixed, fmt.Sprintf("public-%d-", i), "User:*", opRead, allow))
	}
	for p := range 990 {
		principal := fmt.Sprintf("User:user-%d", p)
		for i := range 8 {
			bindings = append(bindings, bind(topic, literal, fmt.Sprintf("topic-%d-%d", p, i), principal, opRead, allow))
		}
		bindings = append(bindings,
			bind(topic, prefixed, fmt.Sprintf("team-%d-", p), principal, opWrite, allow),
			bind(group, prefixed, fmt.Sprintf("app-%d-", p), principal, opRead, allow))
	}
	a := New(bindings, []string{"User:admin"})
	if a.Len() != 10000 {
		b.Fatalf("%d bindings", a.Len())
	}
	for _, bc := range []struct {
		name string
		c    check
	}{
		{"literal allowed", check{"User:user-500", "10.0.0.1", opRead, topic, "topic-500-3", true}},
		{"prefixed allowed", check{"User:user-500", "10.0.0.1", opWrite, topic, "team-500-orders-eu-west-1", true}},
		{"denied", check{"User:user-500", "10.0.0.1", opWrite, topic, "topic-501-3", false}},
		{"wildcard allowed", check{"User:user-500", "10.0.0.1", opRead, topic, "public-42-events", true}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			c := bc.c
			for b.Loop() {
				if a.Authorize(c.principal, c.host, c.op, c.rt, c.name) != c.want {
					b.Fatal("wrong answer")
				}
			}
		})
	}
}
