package main

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// aclFlags are the flags of Kafka's ACL model, shared by acl list, create
// and delete.
type aclFlags struct {
	principals, operations, names, hosts listFlag
	resourceType, patternType            string
	allow, deny                          bool
}

func (a *aclFlags) register(f *flags) {
	f.Var(&a.principals, "principal", "`principal`, as User:alice (a bare name gets User:; repeatable)")
	f.Var(&a.operations, "operation", "`operation`: all, read, write, create, delete, alter, describe, cluster_action, describe_configs, alter_configs, idempotent_write (repeatable)")
	f.StringVar(&a.resourceType, "resource-type", "", "resource `type`: topic, group, cluster, transactional-id, delegation-token")
	f.Var(&a.names, "resource-name", "resource `name` (repeatable; * is every resource of the type)")
	f.StringVar(&a.patternType, "pattern-type", "", "resource name `pattern`: literal or prefixed; for list and delete also any and match")
	f.BoolVar(&a.allow, "allow", false, "allow the operations")
	f.BoolVar(&a.deny, "deny", false, "deny the operations")
	f.Var(&a.hosts, "host", "client `host` the ACL applies to (repeatable; default *, every host)")
}

// builder returns the kadm ACL builder of the flags, for creating
// (create) or as a filter (list, delete: what is not given matches
// anything).
func (a *aclFlags) builder(create bool) (*kadm.ACLBuilder, error) {
	b := kadm.NewACLs()
	rt := strings.ToLower(strings.ReplaceAll(a.resourceType, "_", "-"))
	names := []string(a.names)
	if create && len(names) == 0 && rt != "cluster" {
		return nil, usagef("give --resource-name")
	}
	switch rt {
	case "", "any":
		if create {
			return nil, usagef("give --resource-type")
		}
		b.AnyResource(names...)
	case "topic":
		b.Topics(names...)
	case "group":
		b.Groups(names...)
	case "cluster":
		b.Clusters()
	case "transactional-id", "transactionalid", "txn":
		b.TransactionalIDs(names...)
	case "delegation-token", "delegationtoken":
		b.DelegationTokens(names...)
	default:
		return nil, usagef("--resource-type %q: want topic, group, cluster, transactional-id or delegation-token", a.resourceType)
	}

	var ops []kadm.ACLOperation
	for _, o := range a.operations {
		op, err := kmsg.ParseACLOperation(o)
		if err != nil || op == kmsg.ACLOperationUnknown || create && op == kmsg.ACLOperationAny {
			return nil, usagef("--operation %q is not an operation", o)
		}
		ops = append(ops, op)
	}
	if create && len(ops) == 0 {
		return nil, usagef("give --operation")
	}
	b.Operations(ops...)

	if a.patternType != "" {
		p, err := kmsg.ParseACLResourcePatternType(a.patternType)
		if err != nil || p == kmsg.ACLResourcePatternTypeUnknown ||
			create && p != kmsg.ACLResourcePatternTypeLiteral && p != kmsg.ACLResourcePatternTypePrefixed {
			return nil, usagef("--pattern-type %q: want literal or prefixed (list and delete: also any, match)", a.patternType)
		}
		b.ResourcePatternType(p)
	} else if !create {
		b.ResourcePatternType(kadm.ACLPatternAny)
	}

	var principals []string
	for _, p := range a.principals {
		if !strings.Contains(p, ":") {
			p = "User:" + p
		}
		principals = append(principals, p)
	}
	if create && len(principals) == 0 {
		return nil, usagef("give --principal")
	}
	if create && a.allow == a.deny {
		return nil, usagef("give one of --allow and --deny")
	}
	hosts := []string(a.hosts)
	if create && len(hosts) == 0 {
		hosts = []string{"*"}
	}
	// A filter without --allow or --deny matches both.
	if a.allow || !create && !a.deny {
		b.Allow(principals...).AllowHosts(hosts...)
	}
	if a.deny || !create && !a.allow {
		b.Deny(principals...).DenyHosts(hosts...)
	}
	return b, nil
}

// aclEntry is one ACL as acl commands print it.
type aclEntry struct {
	Principal    string `json:"principal"`
	Host         string `json:"host"`
	ResourceType string `json:"resource_type"`
	ResourceName string `json:"resource_name"`
	PatternType  string `json:"pattern_type"`
	Operation    string `json:"operation"`
	Permission   string `json:"permission"`
	Error        string `json:"error,omitempty"`
}

func newACLEntry(principal, host string, rt kmsg.ACLResourceType, name string, pattern kadm.ACLPattern, op kadm.ACLOperation, perm kmsg.ACLPermissionType, err error) aclEntry {
	return aclEntry{Principal: principal, Host: host, ResourceType: rt.String(), ResourceName: name,
		PatternType: pattern.String(), Operation: op.String(), Permission: perm.String(), Error: errString(err)}
}

// printACLs prints ACLs as a table or JSON, sorted, unless some failed:
// then it returns their errors.
func (c *cli) printACLs(acls []aclEntry, errs []error) error {
	if len(errs) > 0 {
		return errors.Join(dedupe(errs)...)
	}
	sort.Slice(acls, func(i, j int) bool {
		a, b := acls[i], acls[j]
		return fmt.Sprint(a.ResourceType, a.ResourceName, a.PatternType, a.Principal, a.Host, a.Operation, a.Permission) <
			fmt.Sprint(b.ResourceType, b.ResourceName, b.PatternType, b.Principal, b.Host, b.Operation, b.Permission)
	})
	if acls == nil {
		acls = []aclEntry{}
	}
	return c.report(acls, func() {
		tb := newTable(c.stdout, "PRINCIPAL", "HOST", "RESOURCE-TYPE", "RESOURCE-NAME", "PATTERN-TYPE", "OPERATION", "PERMISSION")
		for _, a := range acls {
			tb.row(a.Principal, a.Host, a.ResourceType, a.ResourceName, a.PatternType, a.Operation, a.Permission)
		}
		tb.flush()
	}, nil)
}

func aclList(c *cli, args []string) error {
	f := c.flags("[flags]", `
List the ACLs matching a filter: every flag left out matches anything, so
'floe acl list' lists them all. Needs ACLs on (--acls-enabled) and CLUSTER
DESCRIBE.`)
	var a aclFlags
	a.register(f)
	if err := f.parseNoArgs(args); err != nil {
		return err
	}
	b, err := a.builder(false)
	if err != nil {
		return err
	}
	results, err := request(c, func(ctx context.Context, adm *kadm.Client) (kadm.DescribeACLsResults, error) {
		return adm.DescribeACLs(ctx, b)
	})
	if err != nil {
		return err
	}
	var out []aclEntry
	var errs []error
	seen := map[aclEntry]bool{}
	for _, r := range results {
		if err := kafkaErr(r.Err, r.ErrMessage); err != nil {
			errs = append(errs, err)
			continue
		}
		for _, d := range r.Described {
			e := newACLEntry(d.Principal, d.Host, d.Type, d.Name, d.Pattern, d.Operation, d.Permission, nil)
			if !seen[e] {
				seen[e] = true
				out = append(out, e)
			}
		}
	}
	return c.printACLs(out, errs)
}

func aclCreate(c *cli, args []string) error {
	f := c.flags("--principal P --operation OP --resource-type T [--resource-name N] (--allow | --deny) [flags]", `
Create ACLs: every principal, host, resource and operation given is
combined. --pattern-type prefixed makes a resource name a prefix.`)
	var a aclFlags
	a.register(f)
	if err := f.parseNoArgs(args); err != nil {
		return err
	}
	b, err := a.builder(true)
	if err != nil {
		return err
	}
	results, err := request(c, func(ctx context.Context, adm *kadm.Client) (kadm.CreateACLsResults, error) {
		return adm.CreateACLs(ctx, b)
	})
	if err != nil {
		return err
	}
	var out []aclEntry
	var errs []error
	for _, r := range results {
		err := kafkaErr(r.Err, r.ErrMessage)
		if err != nil {
			errs = append(errs, err)
		}
		out = append(out, newACLEntry(r.Principal, r.Host, r.Type, r.Name, r.Pattern, r.Operation, r.Permission, err))
	}
	return c.printACLs(out, errs)
}

func aclDelete(c *cli, args []string) error {
	f := c.flags("--resource-type T [filter flags]", `
Delete the ACLs matching a filter, as acl list would list them, and print
them. --resource-type is required (any matches every type) so that a bare
'floe acl delete' cannot delete every ACL.`)
	var a aclFlags
	a.register(f)
	if err := f.parseNoArgs(args); err != nil {
		return err
	}
	if a.resourceType == "" {
		return usagef("give --resource-type (any for every type)")
	}
	b, err := a.builder(false)
	if err != nil {
		return err
	}
	results, err := request(c, func(ctx context.Context, adm *kadm.Client) (kadm.DeleteACLsResults, error) {
		return adm.DeleteACLs(ctx, b)
	})
	if err != nil {
		return err
	}
	var out []aclEntry
	var errs []error
	for _, r := range results {
		if err := kafkaErr(r.Err, r.ErrMessage); err != nil {
			errs = append(errs, err)
			continue
		}
		for _, d := range r.Deleted {
			err := kafkaErr(d.Err, d.ErrMessage)
			if err != nil {
				errs = append(errs, err)
			}
			out = append(out, newACLEntry(d.Principal, d.Host, d.Type, d.Name, d.Pattern, d.Operation, d.Permission, err))
		}
	}
	return c.printACLs(out, errs)
}

// dedupe drops repeated errors (a filter per permission fails twice alike).
func dedupe(errs []error) []error {
	seen := map[string]bool{}
	var out []error
	for _, e := range errs {
		if !seen[e.Error()] {
			seen[e.Error()] = true
			out = append(out, e)
		}
	}
	return out
}
