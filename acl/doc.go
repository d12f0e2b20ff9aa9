// Package acl is floe's authorizer: it decides whether a principal, from a
// client host, may perform an operation on a resource, with Apache Kafka's
// StandardAuthorizer semantics, from the ACL bindings the coordinator
// stores (coordapi.ACLBinding).
//
//	bindings (coordinator) ──> New ──> *Authorizer (immutable, indexed)
//	request (principal, host, op, resource) ──> Authorize ──> allowed?
//
// The rules, in the order they apply:
//
//   - a super user (Options.SuperUsers, "User:admin") is allowed everything;
//   - a binding applies to a resource when its type is the resource's and
//     its pattern names it: a LITERAL name equal to the resource's or "*",
//     or a PREFIXED name the resource's name starts with; and when its
//     principal is the request's or "User:*" and its host the request's or
//     "*";
//   - a DENY binding applies to its operation and to ALL; an ALLOW binding
//     also implies DESCRIBE when it allows READ, WRITE, DELETE or ALTER, and
//     DESCRIBE_CONFIGS when it allows ALTER_CONFIGS;
//   - a DENY that applies wins over any ALLOW; with no ALLOW that applies
//     the request is denied (Kafka's allow.everyone.if.no.acl.found=false).
//
// An Authorizer is built once per change of the bindings and never
// modified, so that checks take no lock. Bindings are indexed by principal,
// then by (resource type, name), literal and prefixed apart, the prefixed
// ones also by the lengths of their names: a check costs a few map lookups
// for the principal and for "User:*", plus one per distinct length of
// their prefixes, never a scan of the bindings.
package acl
