package rpc

import (
	"context"
	"encoding/binary"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
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
//	delete_acls:   n × filter                       -> n × (m × binding), truncated (bool)
//	describe_acls: filter, after (bool, binding)    -> n × binding, more (bool)
//	acl_version:   empty                            -> version (uvarint)
//	notice:        aclNoticeVersion(1), version (uvarint), on ACLsSubject
//
// describe_acls answers one page, as many bindings after After (in the
// coordinator's order) as fit in a message; the client asks for the next
// page while More is set. delete_acls lists what each filter deleted, as
// much as fits in a message: Truncated says some was left out (the
// deletions themselves all happened).

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

type (
	// describeACLsReq asks for a page of the bindings Filter matches:
	// those after After (nil: from the first).
	describeACLsReq struct {
		Filter coordapi.ACLFilter
		After  *coordapi.ACLBinding
	}
	describeACLsResp struct {
		Bindings []coordapi.ACLBinding
		// More says that bindings after the last one remain.
		More bool
	}
	// deleteACLsResp is what each filter deleted; Truncated says that the
	// lists were cut to fit one message.
	deleteACLsResp struct {
		Deleted   [][]coordapi.ACLBinding
		Truncated bool
	}
)

func encDescribeACLsReq(e *encoder, r describeACLsReq) {
	encACLFilter(e, r.Filter)
	e.bool(r.After != nil)
	if r.After != nil {
		encACLBinding(e, *r.After)
	}
}

func decDescribeACLsReq(d *decoder) describeACLsReq {
	r := describeACLsReq{Filter: decACLFilter(d)}
	if d.bool() {
		b := decACLBinding(d)
		r.After = &b
	}
	return r
}

func encDescribeACLsResp(e *encoder, r describeACLsResp) {
	encACLBindings(e, r.Bindings)
	e.bool(r.More)
}

func decDescribeACLsResp(d *decoder) describeACLsResp {
	return describeACLsResp{Bindings: decACLBindings(d), More: d.bool()}
}

func encDeleteACLsResp(e *encoder, r deleteACLsResp) {
	e.uvarint(uint64(len(r.Deleted)))
	for _, l := range r.Deleted {
		encACLBindings(e, l)
	}
	e.bool(r.Truncated)
}

// decDeleteACLsResp reads DeleteACLs' results: one list per filter, an
// empty list as nil.
func decDeleteACLsResp(d *decoder) deleteACLsResp {
	var r deleteACLsResp
	if n := d.count(1); n > 0 {
		r.Deleted = make([][]coordapi.ACLBinding, n)
		for i := range r.Deleted {
			r.Deleted[i] = decACLBindings(d)
		}
	}
	r.Truncated = d.bool()
	return r
}

// aclBindingSize bounds the encoded size of b.
func aclBindingSize(b *coordapi.ACLBinding) int {
	return 4 + 3*binary.MaxVarintLen64 + len(b.ResourceName) + len(b.Principal) + len(b.Host)
}

// handleDescribeACLs answers one page of describe_acls.
func (s *Server) handleDescribeACLs(ctx context.Context, d *decoder, e *encoder) error {
	req := decDescribeACLsReq(d)
	if d.err != nil {
		return &coordapi.KafkaError{Code: kerr.InvalidRequest, Message: d.err.Error()}
	}
	bs, err := s.c.DescribeACLs(ctx, req.Filter)
	if err != nil {
		return err
	}
	i := 0
	if req.After != nil {
		i = sort.Search(len(bs), func(i int) bool { return bs[i].Compare(req.After) > 0 })
	}
	start, size, limit := i, 16, s.payloadLimit()
	for ; i < len(bs); i++ {
		size += aclBindingSize(&bs[i])
		if size > limit && i > start {
			break
		}
	}
	encDescribeACLsResp(e, describeACLsResp{Bindings: bs[start:i], More: i < len(bs)})
	return nil
}

// handleDeleteACLs answers delete_acls, cutting the lists of deleted
// bindings to what fits in one message.
func (s *Server) handleDeleteACLs(ctx context.Context, d *decoder, e *encoder) error {
	filters := decACLFilters(d)
	if d.err != nil {
		return &coordapi.KafkaError{Code: kerr.InvalidRequest, Message: d.err.Error()}
	}
	deleted, err := s.c.DeleteACLs(ctx, filters)
	if err != nil {
		return err
	}
	r := deleteACLsResp{Deleted: deleted}
	size, limit := 16+len(deleted)*binary.MaxVarintLen64, s.payloadLimit()
	for i, l := range deleted {
		for j := range l {
			if size += aclBindingSize(&l[j]); size > limit {
				r.Deleted[i], r.Truncated = l[:j], true
				for k := i + 1; k < len(deleted); k++ {
					r.Deleted[k] = nil
				}
				encDeleteACLsResp(e, r)
				s.log.Warn("delete_acls: the deleted bindings do not fit one reply, listing some", "filters", len(filters))
				return nil
			}
		}
	}
	encDeleteACLsResp(e, r)
	return nil
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
