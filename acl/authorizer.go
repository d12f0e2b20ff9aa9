package acl

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-io/floe/coordapi"
)

// Authorizer answers authorization checks from a fixed set of bindings. It
// is immutable and safe for concurrent use; build a new one when the
// bindings change.
type Authorizer struct {
	superUsers map[string]struct{}
	// literal and prefixed hold the bindings' entries by (resource type,
	// name, principal).
	literal  map[resKey][]entry
	prefixed map[resKey][]entry
	// prefixLens are the distinct lengths of the prefixed names of each
	// resource type, ascending.
	prefixLens [maxResourceType + 1][]int
	// byPrincipal holds the bindings of each (resource type, principal),
	// for AuthorizeAny.
	byPrincipal map[principalKey][]*coordapi.ACLBinding
	n           int
}

const maxResourceType = kmsg.ACLResourceTypeUser

type resKey struct {
	rt        kmsg.ACLResourceType
	name      string
	principal string
}

type principalKey struct {
	rt        kmsg.ACLResourceType
	principal string
}

// entry is what a check needs of a binding once its resource and principal
// matched.
type entry struct {
	host  string
	op    kmsg.ACLOperation
	allow bool
}

// New builds an authorizer from bindings (invalid ones are skipped: the
// coordinator stores none) and the principals allowed everything
// ("User:admin").
func New(bindings []coordapi.ACLBinding, superUsers []string) *Authorizer {
	a := &Authorizer{
		superUsers:  make(map[string]struct{}, len(superUsers)),
		literal:     make(map[resKey][]entry),
		prefixed:    make(map[resKey][]entry),
		byPrincipal: make(map[principalKey][]*coordapi.ACLBinding),
	}
	for _, p := range superUsers {
		a.superUsers[p] = struct{}{}
	}
	lens := make([]map[int]struct{}, maxResourceType+1)
	for i := range bindings {
		b := &bindings[i]
		if coordapi.ValidateBinding(*b) != nil {
			continue
		}
		k := resKey{b.ResourceType, b.ResourceName, b.Principal}
		e := entry{host: b.Host, op: b.Operation, allow: b.Permission == kmsg.ACLPermissionTypeAllow}
		if b.PatternType == kmsg.ACLResourcePatternTypeLiteral {
			a.literal[k] = append(a.literal[k], e)
		} else {
			a.prefixed[k] = append(a.prefixed[k], e)
			if lens[b.ResourceType] == nil {
				lens[b.ResourceType] = map[int]struct{}{}
			}
			lens[b.ResourceType][len(b.ResourceName)] = struct{}{}
		}
		pk := principalKey{b.ResourceType, b.Principal}
		a.byPrincipal[pk] = append(a.byPrincipal[pk], b)
		a.n++
	}
	for rt, set := range lens {
		for l := range set {
			a.prefixLens[rt] = append(a.prefixLens[rt], l)
		}
		slices.Sort(a.prefixLens[rt])
	}
	return a
}

// Len returns how many bindings the authorizer holds.
func (a *Authorizer) Len() int { return a.n }

// IsSuperUser reports whether principal is allowed everything.
func (a *Authorizer) IsSuperUser(principal string) bool {
	_, ok := a.superUsers[principal]
	return ok
}

// Authorize reports whether principal, connected from host (an IP
// address), may perform op on the resource of type rt named name (the
// CLUSTER resource is named coordapi.ACLClusterName). See the package doc
// for the rules.
func (a *Authorizer) Authorize(principal, host string, op kmsg.ACLOperation, rt kmsg.ACLResourceType, name string) bool {
	if _, ok := a.superUsers[principal]; ok {
		return true
	}
	if rt < 0 || rt > maxResourceType {
		return false
	}
	var allowed, denied bool
	check := func(es []entry) {
		for _, e := range es {
			if e.host != host && e.host != coordapi.ACLWildcardHost {
				continue
			}
			if !e.allow {
				if e.op == op || e.op == kmsg.ACLOperationAll {
					denied = true
				}
				continue
			}
			if !allowed && implies(e.op, op) {
				allowed = true
			}
		}
	}
	look := func(m map[resKey][]entry, name string) {
		check(m[resKey{rt, name, principal}])
		if principal != coordapi.ACLWildcardPrincipal {
			check(m[resKey{rt, name, coordapi.ACLWildcardPrincipal}])
		}
	}
	look(a.literal, name)
	if name != coordapi.ACLWildcardResource {
		look(a.literal, coordapi.ACLWildcardResource)
	}
	for _, l := range a.prefixLens[rt] {
		if l > len(name) || denied {
			break
		}
		look(a.prefixed, name[:l])
	}
	return allowed && !denied
}

// implies reports whether an ALLOW binding of operation granted allows op.
func implies(granted, op kmsg.ACLOperation) bool {
	if granted == op || granted == kmsg.ACLOperationAll {
		return true
	}
	switch op {
	case kmsg.ACLOperationDescribe:
		switch granted {
		case kmsg.ACLOperationRead, kmsg.ACLOperationWrite, kmsg.ACLOperationDelete, kmsg.ACLOperationAlter:
			return true
		}
	case kmsg.ACLOperationDescribeConfigs:
		return granted == kmsg.ACLOperationAlterConfigs
	}
	return false
}

// AuthorizeAny reports whether principal, from host, may perform op on at
// least one resource of type rt, as Kafka's authorizeByResourceType does
// (KIP-679: an idempotent producer needs WRITE on some topic): some ALLOW
// binding of op (or ALL) applies to the principal and host, and no DENY of
// the same kind dominates it (a DENY literal of the same name, a DENY
// prefix of its name, or a DENY on every resource). Super users are always
// allowed. Implied operations do not count, as in Kafka.
func (a *Authorizer) AuthorizeAny(principal, host string, op kmsg.ACLOperation, rt kmsg.ACLResourceType) bool {
	if _, ok := a.superUsers[principal]; ok {
		return true
	}
	var bs []*coordapi.ACLBinding
	bs = append(bs, a.byPrincipal[principalKey{rt, principal}]...)
	if principal != coordapi.ACLWildcardPrincipal {
		bs = append(bs, a.byPrincipal[principalKey{rt, coordapi.ACLWildcardPrincipal}]...)
	}
	denyLiteral, denyPrefix := map[string]bool{}, map[string]bool{}
	var allows []*coordapi.ACLBinding
	wildcardAllow := false
	for _, b := range bs {
		if b.Host != host && b.Host != coordapi.ACLWildcardHost {
			continue
		}
		if b.Operation != op && b.Operation != kmsg.ACLOperationAll {
			continue
		}
		literal := b.PatternType == kmsg.ACLResourcePatternTypeLiteral
		if b.Permission == kmsg.ACLPermissionTypeDeny {
			switch {
			case literal && b.ResourceName == coordapi.ACLWildcardResource:
				return false
			case literal:
				denyLiteral[b.ResourceName] = true
			default:
				denyPrefix[b.ResourceName] = true
			}
			continue
		}
		if literal && b.ResourceName == coordapi.ACLWildcardResource {
			wildcardAllow = true
			continue
		}
		allows = append(allows, b)
	}
	if wildcardAllow {
		return true
	}
next:
	for _, b := range allows {
		if b.PatternType == kmsg.ACLResourcePatternTypeLiteral && denyLiteral[b.ResourceName] {
			continue
		}
		for l := 1; l <= len(b.ResourceName); l++ {
			if denyPrefix[b.ResourceName[:l]] {
				continue next
			}
		}
		return true
	}
	return false
}
