package rpc

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-io/floe/coordapi"
)

// The ACL ops' messages (coordapi.ACLStore):
//
//	binding:       resource type(1), pattern type(1), operation(1), permission(1),
//	               name str, principal str, host str
//	filter:        resource type(1), pattern type(1), operation(1), permission(1),
//	               name optStr, principal optStr, host optStr
//	create_acls:   n × binding                      -> empty
//	delete_acls:   n × filter                       -> n × (m × binding)
//	describe_acls: filter                           -> n × binding
//	acl_version:   empty                            -> version (uvarint)
//	notice:        aclNoticeVersion(1), version (uvarint), on ACLsSubject

// aclNoticeVersion is the version of the ACL change notice message.
const aclNoticeVersion byte = 1

// ACLsSubject returns the subject ACL change notices are published on.
func ACLsSubject(cluster string) string { return cluster + ".acls" }

func encACLBinding(e *encoder, b coordapi.ACLBinding) {
	e.byte(byte(b.ResourceType))
	e.byte(byte(b.PatternType))
	e.byte(byte(b.Operation))
	e.byte(byte(b.Permission))
	e.str(b.ResourceName)
	e.str(b.Principal)
	e.str(b.Host)
}

func decACLBinding(d *decoder) coordapi.ACLBinding {
	var b coordapi.ACLBinding
	b.ResourceType = kmsg.ACLResourceType(d.byte())
	b.PatternType = kmsg.ACLResourcePatternType(d.byte())
	b.Operation = kmsg.ACLOperation(d.byte())
	b.Permission = kmsg.ACLPermissionType(d.byte())
	b.ResourceName = d.str()
	b.Principal = d.str()
	b.Host = d.str()
	return b
}

// aclBindingMinSize is the smallest encoded binding.
const aclBindingMinSize = 7

func encACLBindings(e *encoder, bs []coordapi.ACLBinding) {
	e.uvarint(uint64(len(bs)))
	for _, b := range bs {
		encACLBinding(e, b)
	}
}

// decACLBindings reads a list of bindings; an empty one decodes as nil.
func decACLBindings(d *decoder) []coordapi.ACLBinding {
	n := d.count(aclBindingMinSize)
	if n == 0 {
		return nil
	}
	out := make([]coordapi.ACLBinding, n)
	for i := range out {
		out[i] = decACLBinding(d)
	}
	return out
}

func encACLFilter(e *encoder, f coordapi.ACLFilter) {
	e.byte(byte(f.ResourceType))
	e.byte(byte(f.PatternType))
	e.byte(byte(f.Operation))
	e.byte(byte(f.Permission))
	e.optStr(f.ResourceName)
	e.optStr(f.Principal)
	e.optStr(f.Host)
}

func decACLFilter(d *decoder) coordapi.ACLFilter {
	var f coordapi.ACLFilter
	f.ResourceType = kmsg.ACLResourceType(d.byte())
	f.PatternType = kmsg.ACLResourcePatternType(d.byte())
	f.Operation = kmsg.ACLOperation(d.byte())
	f.Permission = kmsg.ACLPermissionType(d.byte())
	f.ResourceName = d.optStr()
	f.Principal = d.optStr()
	f.Host = d.optStr()
	return f
}

func encACLFilters(e *encoder, fs []coordapi.ACLFilter) {
	e.uvarint(uint64(len(fs)))
	for _, f := range fs {
		encACLFilter(e, f)
	}
}

// decACLFilters reads a list of filters; an empty one decodes as nil.
func decACLFilters(d *decoder) []coordapi.ACLFilter {
	n := d.count(aclBindingMinSize)
	if n == 0 {
		return nil
	}
	out := make([]coordapi.ACLFilter, n)
	for i := range out {
		out[i] = decACLFilter(d)
	}
	return out
}

func encACLBindingLists(e *encoder, ls [][]coordapi.ACLBinding) {
	e.uvarint(uint64(len(ls)))
	for _, l := range ls {
		encACLBindings(e, l)
	}
}

// decACLBindingLists reads DeleteACLs' results: one list per filter, an
// empty list as nil.
func decACLBindingLists(d *decoder) [][]coordapi.ACLBinding {
	n := d.count(1)
	if n == 0 {
		return nil
	}
	out := make([][]coordapi.ACLBinding, n)
	for i := range out {
		out[i] = decACLBindings(d)
	}
	return out
}

func encUvarint(e *encoder, v uint64) { e.uvarint(v) }
func decUvarint(d *decoder) uint64    { return d.uvarint() }

// encACLNotice encodes an ACL change notice.
func encACLNotice(e *encoder, version uint64) {
	e.byte(aclNoticeVersion)
	e.uvarint(version)
}

// decACLNotice decodes a message of encACLNotice.
func decACLNotice(data []byte) (uint64, error) {
	d := decoder{b: data}
	if v := d.byte(); d.err == nil && v != aclNoticeVersion {
		d.fail("acl notice version %d", v)
	}
	version := d.uvarint()
	if d.err == nil && d.left() != 0 {
		d.fail("%d bytes after an acl notice", d.left())
	}
	return version, d.err
}
