package coordapi

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func topicACL(pattern kmsg.ACLResourcePatternType, name string) ACLBinding {
	return ACLBinding{ResourceType: kmsg.ACLResourceTypeTopic, ResourceName: name, PatternType: pattern,
		Principal: "User:alice", Host: "*", Operation: kmsg.ACLOperationRead, Permission: kmsg.ACLPermissionTypeAllow}
}

func TestValidateBinding(t *testing.T) {
	lit := kmsg.ACLResourcePatternTypeLiteral
	for _, tc := range []struct {
		name string
		mod  func(*ACLBinding)
		ok   bool
	}{
		{"literal topic", func(*ACLBinding) {}, true},
		{"prefixed topic", func(b *ACLBinding) { b.PatternType = kmsg.ACLResourcePatternTypePrefixed }, true},
		{"wildcard principal", func(b *ACLBinding) { b.Principal = ACLWildcardPrincipal }, true},
		{"cluster", func(b *ACLBinding) { b.ResourceType, b.ResourceName = kmsg.ACLResourceTypeCluster, ACLClusterName }, true},
		{"cluster misnamed", func(b *ACLBinding) { b.ResourceType = kmsg.ACLResourceTypeCluster }, false},
		{"unknown resource type", func(b *ACLBinding) { b.ResourceType = kmsg.ACLResourceTypeUnknown }, false},
		{"any resource type", func(b *ACLBinding) { b.ResourceType = kmsg.ACLResourceTypeAny }, false},
		{"undefined resource type", func(b *ACLBinding) { b.ResourceType = 99 }, false},
		{"pattern any", func(b *ACLBinding) { b.PatternType = kmsg.ACLResourcePatternTypeAny }, false},
		{"pattern match", func(b *ACLBinding) { b.PatternType = kmsg.ACLResourcePatternTypeMatch }, false},
		{"operation any", func(b *ACLBinding) { b.Operation = kmsg.ACLOperationAny }, false},
		{"operation unknown", func(b *ACLBinding) { b.Operation = kmsg.ACLOperationUnknown }, false},
		{"operation all", func(b *ACLBinding) { b.Operation = kmsg.ACLOperationAll }, true},
		{"permission any", func(b *ACLBinding) { b.Permission = kmsg.ACLPermissionTypeAny }, false},
		{"empty name", func(b *ACLBinding) { b.ResourceName = "" }, false},
		{"principal without type", func(b *ACLBinding) { b.Principal = "alice" }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := topicACL(lit, "t")
			tc.mod(&b)
			err := ValidateBinding(b)
			if tc.ok != (err == nil) {
				t.Fatalf("ValidateBinding(%+v) = %v, want ok %v", b, err, tc.ok)
			}
			if err != nil && !errors.Is(err, kerr.InvalidRequest) {
				t.Fatalf("error %v is not INVALID_REQUEST", err)
			}
		})
	}
}

func TestValidateFilter(t *testing.T) {
	if err := ValidateFilter(ACLFilterAll); err != nil {
		t.Fatalf("all: %v", err)
	}
	for _, mod := range []func(*ACLFilter){
		func(f *ACLFilter) { f.ResourceType = kmsg.ACLResourceTypeUnknown },
		func(f *ACLFilter) { f.PatternType = kmsg.ACLResourcePatternTypeUnknown },
		func(f *ACLFilter) { f.Operation = kmsg.ACLOperationUnknown },
		func(f *ACLFilter) { f.Permission = kmsg.ACLPermissionTypeUnknown },
		func(f *ACLFilter) { f.Operation = 42 },
	} {
		f := ACLFilterAll
		mod(&f)
		if err := ValidateFilter(f); !errors.Is(err, kerr.InvalidRequest) {
			t.Errorf("ValidateFilter(%+v) = %v, want INVALID_REQUEST", f, err)
		}
	}
}

func TestACLFilterMatches(t *testing.T) {
	lit, pre := kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLResourcePatternTypePrefixed
	str := func(s string) *string { return &s }
	for _, tc := range []struct {
		name    string
		filter  ACLFilter
		binding ACLBinding
		want    bool
	}{
		{"all", ACLFilterAll, topicACL(lit, "t"), true},
		{"any: same name", ACLFilter{ResourceType: kmsg.ACLResourceTypeTopic, ResourceName: str("foo"), PatternType: kmsg.ACLResourcePatternTypeAny,
			Operation: kmsg.ACLOperationAny, Permission: kmsg.ACLPermissionTypeAny}, topicACL(pre, "foo"), true},
		{"any: prefix is not the name", ACLFilter{ResourceType: kmsg.ACLResourceTypeTopic, ResourceName: str("foobar"), PatternType: kmsg.ACLResourcePatternTypeAny,
			Operation: kmsg.ACLOperationAny, Permission: kmsg.ACLPermissionTypeAny}, topicACL(pre, "foo"), false},
		{"match: prefix", ACLFilter{ResourceType: kmsg.ACLResourceTypeTopic, ResourceName: str("foobar"), PatternType: kmsg.ACLResourcePatternTypeMatch,
			Operation: kmsg.ACLOperationAny, Permission: kmsg.ACLPermissionTypeAny}, topicACL(pre, "foo"), true},
		{"match: wildcard literal", ACLFilter{ResourceType: kmsg.ACLResourceTypeAny, ResourceName: str("foobar"), PatternType: kmsg.ACLResourcePatternTypeMatch,
			Operation: kmsg.ACLOperationAny, Permission: kmsg.ACLPermissionTypeAny}, topicACL(lit, "*"), true},
		{"match: other literal", ACLFilter{ResourceType: kmsg.ACLResourceTypeAny, ResourceName: str("foobar"), PatternType: kmsg.ACLResourcePatternTypeMatch,
			Operation: kmsg.ACLOperationAny, Permission: kmsg.ACLPermissionTypeAny}, topicACL(lit, "foo"), false},
		{"literal filter skips prefixed", ACLFilter{ResourceType: kmsg.ACLResourceTypeAny, PatternType: lit,
			Operation: kmsg.ACLOperationAny, Permission: kmsg.ACLPermissionTypeAny}, topicACL(pre, "foo"), false},
		{"resource type", ACLFilter{ResourceType: kmsg.ACLResourceTypeGroup, PatternType: kmsg.ACLResourcePatternTypeAny,
			Operation: kmsg.ACLOperationAny, Permission: kmsg.ACLPermissionTypeAny}, topicACL(lit, "t"), false},
		{"principal", ACLFilter{ResourceType: kmsg.ACLResourceTypeAny, PatternType: kmsg.ACLResourcePatternTypeAny, Principal: str("User:bob"),
			Operation: kmsg.ACLOperationAny, Permission: kmsg.ACLPermissionTypeAny}, topicACL(lit, "t"), false},
		{"host", ACLFilter{ResourceType: kmsg.ACLResourceTypeAny, PatternType: kmsg.ACLResourcePatternTypeAny, Host: str("*"),
			Operation: kmsg.ACLOperationAny, Permission: kmsg.ACLPermissionTypeAny}, topicACL(lit, "t"), true},
		{"operation", ACLFilter{ResourceType: kmsg.ACLResourceTypeAny, PatternType: kmsg.ACLResourcePatternTypeAny,
			Operation: kmsg.ACLOperationWrite, Permission: kmsg.ACLPermissionTypeAny}, topicACL(lit, "t"), false},
		{"permission", ACLFilter{ResourceType: kmsg.ACLResourceTypeAny, PatternType: kmsg.ACLResourcePatternTypeAny,
			Operation: kmsg.ACLOperationAny, Permission: kmsg.ACLPermissionTypeDeny}, topicACL(lit, "t"), false},
	} {
		if got := tc.filter.Matches(&tc.binding); got != tc.want {
			t.Errorf("%s: Matches = %v, want %v", tc.name, got, tc.want)
		}
	}
}
