package broker

import (
	"context"
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-io/floe/coordapi"
)

// Authorization (Options.ACLsEnabled): every handler checks the
// connection's principal and host against the broker's authorizer (acls.go
// keeps it current) with the operation and resource Apache Kafka's
// KafkaApis checks, and answers Kafka's *_AUTHORIZATION_FAILED codes when
// denied. With ACLs off every check is allowed and costs one nil test.
//
// Handlers call authorized (any resource) or authorizeCluster (the CLUSTER
// resource); the SASL handlers need none, DescribeUserScramCredentials
// needs authorizeCluster(r, DESCRIBE), AlterUserScramCredentials
// authorizeCluster(r, ALTER). A denied check is counted and logged
// (denials.go).

// authorized reports whether r's principal, from r's client host, may
// perform op on the resource of type rt named name. A topic is checked
// under the name of the topic holding its data: a hierarchical view
// "base/KEY" under "base" (aclTopic). A denial is counted and logged.
func (b *Broker) authorized(r *request, op kmsg.ACLOperation, rt kmsg.ACLResourceType, name string) bool {
	if b.acls == nil {
		return true
	}
	if rt == kmsg.ACLResourceTypeTopic {
		name = aclTopic(name)
	}
	principal, host := r.principal(), r.clientHost()
	if b.acls.current().Authorize(principal, host, op, rt, name) {
		return true
	}
	b.denials.denied(r.key, principal, host, op, rt, name)
	return false
}

// authorizeCluster reports whether r's principal may perform op on the
// CLUSTER resource; see authorized.
func (b *Broker) authorizeCluster(r *request, op kmsg.ACLOperation) bool {
	return b.authorized(r, op, kmsg.ACLResourceTypeCluster, coordapi.ACLClusterName)
}

// authorizedTopic is authorized for a TOPIC resource.
func (b *Broker) authorizedTopic(r *request, op kmsg.ACLOperation, topic string) bool {
	return b.authorized(r, op, kmsg.ACLResourceTypeTopic, topic)
}

// authorizedQuiet is authorized without counting or logging a denial: for
// checks whose denial is not one (Metadata listing every topic hides the
// ones the principal may not describe; the first of two alternatives).
func (b *Broker) authorizedQuiet(r *request, op kmsg.ACLOperation, rt kmsg.ACLResourceType, name string) bool {
	if b.acls == nil {
		return true
	}
	if rt == kmsg.ACLResourceTypeTopic {
		name = aclTopic(name)
	}
	return b.acls.current().Authorize(r.principal(), r.clientHost(), op, rt, name)
}

// authorizedAny reports whether r's principal may perform op on at least one
// resource of type rt (Kafka's authorizeByResourceType, KIP-679). It does
// not count a denial: its callers check an alternative first.
func (b *Broker) authorizedAny(r *request, op kmsg.ACLOperation, rt kmsg.ACLResourceType) bool {
	if b.acls == nil {
		return true
	}
	return b.acls.current().AuthorizeAny(r.principal(), r.clientHost(), op, rt)
}

// denied counts and logs a denial found without authorized (after
// authorizedQuiet or authorizedAny).
func (b *Broker) denied(r *request, op kmsg.ACLOperation, rt kmsg.ACLResourceType, name string) {
	if b.acls == nil {
		return
	}
	if rt == kmsg.ACLResourceTypeTopic {
		name = aclTopic(name)
	}
	b.denials.denied(r.key, r.principal(), r.clientHost(), op, rt, name)
}

// AuthorizeTopic reports whether principal ("User:alice"), connecting from
// host (an IP address), may perform op on topic: what the HTTP /kv endpoint
// asks before answering a lookup (op READ). A view "base/KEY" is checked as
// its base topic. With ACLs off (Options.ACLsEnabled false) it is always
// true. A denial is counted (api "kv") and logged.
func (b *Broker) AuthorizeTopic(principal, host string, op kmsg.ACLOperation, topic string) bool {
	if b.acls == nil {
		return true
	}
	topic = aclTopic(topic)
	if b.acls.current().Authorize(principal, host, op, kmsg.ACLResourceTypeTopic, topic) {
		return true
	}
	b.denials.denied(apiKV, principal, host, op, kmsg.ACLResourceTypeTopic, topic)
	return false
}

// ACLsEnabled reports whether the broker authorizes requests.
func (b *Broker) ACLsEnabled() bool { return b.acls != nil }

// aclTopic returns the name a topic's ACLs are checked under: a view's base
// topic ("base/KEY" is checked as "base"), else the name itself. A name
// with a '/' is never a real topic's (Kafka's topic names have none).
func aclTopic(name string) string {
	if base, _, ok := coordapi.SplitViewName(name); ok {
		return base
	}
	return name
}

// principal returns the principal r's connection authenticated as, or
// AnonymousPrincipal for a request served without one (tests).
func (r *request) principal() string {
	if r.conn == nil {
		return AnonymousPrincipal
	}
	return r.conn.principal()
}

// clientHost returns the IP address of r's client, "" without a
// connection (tests).
func (r *request) clientHost() string {
	if r.conn == nil {
		return ""
	}
	return r.conn.clientHost()
}

// lookupAuthorized is lookupTopic behind a check of op on the topic: a
// topic r's principal may not op is TOPIC_AUTHORIZATION_FAILED, whether it
// exists or not, as Kafka answers.
func (b *Broker) lookupAuthorized(ctx context.Context, r *request, seen map[string]topicLookup, op kmsg.ACLOperation, name string) topicLookup {
	if !b.authorizedTopic(r, op, name) {
		return topicLookup{err: kerr.TopicAuthorizationFailed}
	}
	return b.lookupTopic(ctx, seen, name)
}

// mayCreateTopic reports whether r's principal may create topic name:
// CLUSTER CREATE, or else TOPIC CREATE on it (CreateTopics, Metadata's
// auto-creation), as Kafka checks.
func (b *Broker) mayCreateTopic(r *request, name string) bool {
	if b.authorizedQuiet(r, kmsg.ACLOperationCreate, kmsg.ACLResourceTypeCluster, coordapi.ACLClusterName) {
		return true
	}
	return b.authorizedTopic(r, kmsg.ACLOperationCreate, name)
}

// configsAuthorized checks op (DESCRIBE_CONFIGS or ALTER_CONFIGS) on a
// config resource as Kafka does: a topic's on the TOPIC, a broker's on the
// CLUSTER. It returns TOPIC_ or CLUSTER_AUTHORIZATION_FAILED, or nil (also
// for the other resource types, which the handlers refuse anyway).
func (b *Broker) configsAuthorized(r *request, op kmsg.ACLOperation, typ kmsg.ConfigResourceType, name string) error {
	switch typ {
	case kmsg.ConfigResourceTypeTopic:
		if !b.authorizedTopic(r, op, name) {
			return kerr.TopicAuthorizationFailed
		}
	case kmsg.ConfigResourceTypeBroker, kmsg.ConfigResourceTypeBrokerLogger:
		if !b.authorizeCluster(r, op) {
			return kerr.ClusterAuthorizationFailed
		}
	case kmsg.ConfigResourceTypeGroupConfig:
		return b.groupConfigsAuthorized(r, op, name)
	}
	return nil
}

// authorizedGroups splits groups by whether r's principal may op on them:
// allowed are those it may, and ok[i] tells whether groups[i] is one of
// them. With ACLs off allowed is groups, unchanged, and ok nil (groupOK).
func (b *Broker) authorizedGroups(r *request, op kmsg.ACLOperation, groups []string) (allowed []string, ok []bool) {
	if b.acls == nil {
		return groups, nil
	}
	ok = make([]bool, len(groups))
	allowed = make([]string, 0, len(groups))
	for i, g := range groups {
		if b.authorized(r, op, kmsg.ACLResourceTypeGroup, g) {
			ok[i] = true
			allowed = append(allowed, g)
		}
	}
	return allowed, ok
}

// groupOK reports whether authorizedGroups allowed group i.
func groupOK(ok []bool, i int) bool { return ok == nil || ok[i] }

// ParseSuperUsers parses --super-users: principals of the form Type:name
// separated by commas ("User:admin,User:ops") or, as Kafka's super.users,
// semicolons. Spaces around a principal are ignored; an empty string is no
// super user.
func ParseSuperUsers(s string) ([]string, error) {
	var out []string
	for _, p := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ';' }) {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		typ, name, ok := strings.Cut(p, ":")
		if !ok || typ == "" || name == "" {
			return nil, fmt.Errorf("principal %q is not of the form Type:name (User:admin)", p)
		}
		out = append(out, p)
	}
	return out, nil
}
