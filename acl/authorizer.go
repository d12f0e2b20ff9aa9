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
	// principals holds the bindings of each principal ("User:*" too).
	principals map[string]*principalACLs
	n          int
}

const maxResourceType = kmsg.ACLResourceTypeUser

// principalACLs are one principal's bindings, indexed for checks.
type principalACLs struct {
	// literal and prefixed hold the bindings' entries by (resource type,
	// name).
	literal  map[resKey][]entry
	prefixed map[resKey][]entry
	// prefixLens are the distinct lengths of the prefixed names of each
	// resource type, ascending.
	prefixLens [maxResourceType + 1][]int
	// byType holds the bindings of each resource type, for AuthorizeAny.
	byType [maxResourceType + 1][]*coordapi.ACLBinding
}

type resKey struct {
	rt   kmsg.ACLResourceType
	name string
}

// entry is what a check needs of a binding once its principal and
// resource matched.
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
		superUsers: make(map[string]struct{}, len(superUsers)),
		principals: make(map[string]*principalACLs),
	}
	for _, p := range superUsers {
		a.superUsers[p] = struct{}{}
	}
	lens := map[*principalACLs]*[maxResourceType + 1]map[int]struct{}{}
	for i := range bindings {
		b := &bindings[i]
		if coordapi.ValidateBinding(*b) != nil {
			continue
		}
		p := a.principals[b.Principal]
		if p == nil {
			p = &principalACLs{literal: map[resKey][]entry{}, prefixed: map[resKey][]entry{}}
			a.principals[b.Principal] = p
			lens[p] = new([maxResourceType + 1]map[int]struct{})
		}
		k := resKey{b.ResourceType, b.ResourceName}
		e := entry{host: b.Host, op: b.Operation, allow: b.Permission == kmsg.ACLPermissionTypeAllow}
		if b.PatternType == kmsg.ACLResourcePatternTypeLiteral {
			p.literal[k] = append(p.literal[k], e)
		} else {
			p.prefixed[k] = append(p.prefixed[k], e)
			l := lens[p]
			if l[b.ResourceType] == nil {
				l[b.ResourceType] = map[int]struct{}{}
			}
			l[b.ResourceType][len(b.ResourceName)] = struct{}{}
		}
		p.byType[b.ResourceType] = append(p.byType[b.ResourceType], b)
		a.n++
	}
	for p, l := range lens {
		for rt, set := range l {
			for n := range set {
				p.prefixLens[rt] = append(p.prefixLens[rt], n)
			}
			slices.Sort(p.prefixLens[rt])
		}
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
	var v verdict
	v.check(a.principals[principal], host, op, rt, name)
	if principal != coordapi.ACLWildcardPrincipal && !v.denied {
		v.check(a.principals[coordapi.ACLWildcardPrincipal], host, op, rt, name)
	}
	return v.allowed && !v.denied
}

// verdict gathers what the bindings that apply to a check say.
type verdict struct{ allowed, denied bool }

// check applies p's bindings (nil: none) of resource (rt, name).
func (v *verdict) check(p *principalACLs, host string, op kmsg.ACLOperation, rt kmsg.ACLResourceType, name string) {
	if p == nil {
		return
	}
	v.entries(p.literal[resKey{rt, name}], host, op)
	if name != coordapi.ACLWildcardResource {
		v.entries(p.literal[resKey{rt, coordapi.ACLWildcardResource}], host, op)
	}
	for _, l := range p.prefixLens[rt] {
		if l > len(name) || v.denied {
			break
		}
		v.entries(p.prefixed[resKey{rt, name[:l]}], host, op)
	}
}

// entries applies the entries of one resource pattern.
func (v *verdict) entries(es []entry, host string, op kmsg.ACLOperation) {
	for _, e := range es {
		if e.host != host && e.host != coordapi.ACLWildcardHost {
			continue
		}
		if !e.allow {
			if e.op == op || e.op == kmsg.ACLOperationAll {
				v.denied = true
			}
			continue
		}
		if !v.allowed && implies(e.op, op) {
			v.allowed = true
		}
	}
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
	if rt < 0 || rt > maxResourceType {
		return false
	}
	var bs []*coordapi.ACLBinding
	if p := a.principals[principal]; p != nil {
		bs = append(bs, p.byType[rt]...)
	}
	if p := a.principals[coordapi.ACLWildcardPrincipal]; p != nil && principal != coordapi.ACLWildcardPrincipal {
		bs = append(bs, p.byType[rt]...)
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
