package coordapi

import (
	"context"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ACL wildcards, as Apache Kafka spells them.
const (
	// ACLWildcardPrincipal matches every principal of type User.
	ACLWildcardPrincipal = "User:*"
	// ACLWildcardHost matches every client host.
	ACLWildcardHost = "*"
	// ACLWildcardResource as a LITERAL resource name matches every
	// resource of the binding's type.
	ACLWildcardResource = "*"
	// ACLClusterName is the only name of the CLUSTER resource.
	ACLClusterName = "kafka-cluster"
)

// ACLBinding is one access control entry on one resource pattern, as
// CreateAcls creates it and DescribeAcls lists it: principal (from host)
// is allowed or denied operation on the resources the pattern names.
type ACLBinding struct {
	ResourceType kmsg.ACLResourceType
	ResourceName string
	// PatternType is LITERAL (the name, or "*" for every resource of the
	// type) or PREFIXED (every resource whose name starts with it).
	PatternType kmsg.ACLResourcePatternType
	// Principal is "Type:name": "User:alice", or "User:*" for every user.
	Principal string
	// Host is a client IP address, or "*" for every host.
	Host       string
	Operation  kmsg.ACLOperation
	Permission kmsg.ACLPermissionType
}

// ACLFilter selects bindings, as DescribeAcls and DeleteAcls filters do:
// ResourceType, Operation and Permission ANY match every value, a nil
// string matches every value. PatternType ANY matches bindings of any
// pattern type whose name equals ResourceName exactly; MATCH matches the
// bindings that would apply to a resource named ResourceName (the literal
// one, the literal "*", and every prefix); LITERAL and PREFIXED match that
// pattern type with an equal name.
type ACLFilter struct {
	ResourceType kmsg.ACLResourceType
	ResourceName *string
	PatternType  kmsg.ACLResourcePatternType
	Principal    *string
	Host         *string
	Operation    kmsg.ACLOperation
	Permission   kmsg.ACLPermissionType
}

// ACLFilterAll matches every binding.
var ACLFilterAll = ACLFilter{
	ResourceType: kmsg.ACLResourceTypeAny,
	PatternType:  kmsg.ACLResourcePatternTypeAny,
	Operation:    kmsg.ACLOperationAny,
	Permission:   kmsg.ACLPermissionTypeAny,
}

// ACLStore is the coordinator's ACL API: the bindings every broker's
// authorizer is built from. It is part of Coordinator.
type ACLStore interface {
	// CreateACLs stores bindings in one durable write; a binding already
	// stored is not stored twice. Every binding must pass ValidateBinding
	// (else the whole call fails with INVALID_REQUEST and stores nothing).
	CreateACLs(ctx context.Context, bindings []ACLBinding) error
	// DeleteACLs removes, in one durable write, the bindings each filter
	// matches and returns them per filter, in filter order (a binding
	// matched by several filters is listed under each). Every filter must
	// pass ValidateFilter.
	DeleteACLs(ctx context.Context, filters []ACLFilter) ([][]ACLBinding, error)
	// DescribeACLs returns the bindings filter matches, sorted.
	DescribeACLs(ctx context.Context, filter ACLFilter) ([]ACLBinding, error)
	// ACLVersion is a number that changes whenever the bindings change:
	// brokers poll it and reload the bindings when it differs from what
	// they loaded. It survives restarts of the coordinator.
	ACLVersion(ctx context.Context) (uint64, error)
	// SubscribeACLs calls fn with the new ACL version after every change
	// of the bindings, until cancel is called. Notices can be lost (a NATS
	// disconnect): callers also poll ACLVersion.
	SubscribeACLs(fn func(version uint64)) (cancel func())
}

// knownResourceType reports whether t is a concrete resource type (not
// UNKNOWN, ANY, or a code Kafka does not define).
func knownResourceType(t kmsg.ACLResourceType) bool {
	return t >= kmsg.ACLResourceTypeTopic && t <= kmsg.ACLResourceTypeUser
}

// knownOperation reports whether op is a concrete operation (ALL included).
func knownOperation(op kmsg.ACLOperation) bool {
	return op >= kmsg.ACLOperationAll && op <= kmsg.ACLOperationDescribeTokens
}

// ValidateBinding checks a binding to create as Apache Kafka's
// AclControlManager and AclApis do, returning an error wrapping
// INVALID_REQUEST with Kafka's message, or nil.
func ValidateBinding(b ACLBinding) error {
	switch {
	case !knownResourceType(b.ResourceType):
		return Errorf(kerr.InvalidRequest, "Invalid resourceType %s", b.ResourceType)
	case b.PatternType != kmsg.ACLResourcePatternTypeLiteral && b.PatternType != kmsg.ACLResourcePatternTypePrefixed:
		return Errorf(kerr.InvalidRequest, "Invalid patternType %s", b.PatternType)
	case !knownOperation(b.Operation):
		return Errorf(kerr.InvalidRequest, "Invalid operation %s", b.Operation)
	case b.Permission != kmsg.ACLPermissionTypeAllow && b.Permission != kmsg.ACLPermissionTypeDeny:
		return Errorf(kerr.InvalidRequest, "Invalid permissionType %s", b.Permission)
	case b.ResourceType == kmsg.ACLResourceTypeCluster && b.ResourceName != ACLClusterName:
		return Errorf(kerr.InvalidRequest, "The only valid name for the CLUSTER resource is %s", ACLClusterName)
	case b.ResourceName == "":
		return Errorf(kerr.InvalidRequest, "Resource name should not be empty")
	case !strings.Contains(b.Principal, ":"):
		return Errorf(kerr.InvalidRequest, "Could not parse principal from `%s` (no colon is present separating the principal type from the principal name)", b.Principal)
	}
	return nil
}

// ValidateFilter checks a DescribeAcls or DeleteAcls filter as Apache
// Kafka does: no UNKNOWN (or undefined) value. It returns an error
// wrapping INVALID_REQUEST, or nil.
func ValidateFilter(f ACLFilter) error {
	switch {
	case f.ResourceType != kmsg.ACLResourceTypeAny && !knownResourceType(f.ResourceType):
		return Errorf(kerr.InvalidRequest, "Unknown patternFilter: resourceType %s", f.ResourceType)
	case f.PatternType < kmsg.ACLResourcePatternTypeAny || f.PatternType > kmsg.ACLResourcePatternTypePrefixed:
		return Errorf(kerr.InvalidRequest, "Unknown patternFilter: patternType %s", f.PatternType)
	case f.Operation != kmsg.ACLOperationAny && !knownOperation(f.Operation):
		return Errorf(kerr.InvalidRequest, "Unknown entryFilter: operation %s", f.Operation)
	case f.Permission < kmsg.ACLPermissionTypeAny || f.Permission > kmsg.ACLPermissionTypeAllow:
		return Errorf(kerr.InvalidRequest, "Unknown entryFilter: permissionType %s", f.Permission)
	}
	return nil
}

// Matches reports whether the filter selects b, with the semantics of
// Kafka's ResourcePatternFilter and AccessControlEntryFilter.
func (f *ACLFilter) Matches(b *ACLBinding) bool {
	if f.ResourceType != kmsg.ACLResourceTypeAny && f.ResourceType != b.ResourceType {
		return false
	}
	if f.Principal != nil && *f.Principal != b.Principal {
		return false
	}
	if f.Host != nil && *f.Host != b.Host {
		return false
	}
	if f.Operation != kmsg.ACLOperationAny && f.Operation != b.Operation {
		return false
	}
	if f.Permission != kmsg.ACLPermissionTypeAny && f.Permission != b.Permission {
		return false
	}
	pt := f.PatternType
	if pt != kmsg.ACLResourcePatternTypeAny && pt != kmsg.ACLResourcePatternTypeMatch && pt != b.PatternType {
		return false
	}
	if f.ResourceName == nil {
		return true
	}
	name := *f.ResourceName
	if pt != kmsg.ACLResourcePatternTypeMatch {
		return name == b.ResourceName
	}
	switch b.PatternType {
	case kmsg.ACLResourcePatternTypeLiteral:
		return name == b.ResourceName || b.ResourceName == ACLWildcardResource
	case kmsg.ACLResourcePatternTypePrefixed:
		return strings.HasPrefix(name, b.ResourceName)
	}
	return false
}

// Compare orders bindings by resource type, pattern type, name, principal,
// host, operation and permission: the order DescribeACLs lists them in.
func (b *ACLBinding) Compare(o *ACLBinding) int {
	switch {
	case b.ResourceType != o.ResourceType:
		return int(b.ResourceType) - int(o.ResourceType)
	case b.PatternType != o.PatternType:
		return int(b.PatternType) - int(o.PatternType)
	case b.ResourceName != o.ResourceName:
		return strings.Compare(b.ResourceName, o.ResourceName)
	case b.Principal != o.Principal:
		return strings.Compare(b.Principal, o.Principal)
	case b.Host != o.Host:
		return strings.Compare(b.Host, o.Host)
	case b.Operation != o.Operation:
		return int(b.Operation) - int(o.Operation)
	}
	return int(b.Permission) - int(o.Permission)
}
