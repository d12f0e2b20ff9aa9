package rpc

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-io/floe/coordapi"
)

var (
	testBinding = coordapi.ACLBinding{ResourceType: kmsg.ACLResourceTypeTopic, ResourceName: "orders-", PatternType: kmsg.ACLResourcePatternTypePrefixed,
		Principal: "User:alice", Host: "10.0.0.1", Operation: kmsg.ACLOperationWrite, Permission: kmsg.ACLPermissionTypeAllow}
	testBinding2 = coordapi.ACLBinding{ResourceType: kmsg.ACLResourceTypeCluster, ResourceName: coordapi.ACLClusterName, PatternType: kmsg.ACLResourcePatternTypeLiteral,
		Principal: "User:*", Host: "*", Operation: kmsg.ACLOperationDescribe, Permission: kmsg.ACLPermissionTypeDeny}
	testFilter = coordapi.ACLFilter{ResourceType: kmsg.ACLResourceTypeTopic, ResourceName: strp("orders-eu"), PatternType: kmsg.ACLResourcePatternTypeMatch,
		Principal: strp("User:alice"), Operation: kmsg.ACLOperationAny, Permission: kmsg.ACLPermissionTypeAny}
)

func TestACLCodecRoundTrip(t *testing.T) {
	roundTrip(t, testBinding, encACLBinding, decACLBinding)
	roundTrip(t, []coordapi.ACLBinding{testBinding, testBinding2}, encACLBindings, decACLBindings)
	roundTrip(t, []coordapi.ACLBinding(nil), encACLBindings, decACLBindings)
	roundTrip(t, testFilter, encACLFilter, decACLFilter)
	roundTrip(t, coordapi.ACLFilterAll, encACLFilter, decACLFilter)
	roundTrip(t, []coordapi.ACLFilter{testFilter, coordapi.ACLFilterAll}, encACLFilters, decACLFilters)
	roundTrip(t, deleteACLsResp{Deleted: [][]coordapi.ACLBinding{{testBinding}, nil, {testBinding2, testBinding}}, Truncated: true}, encDeleteACLsResp, decDeleteACLsResp)
	roundTrip(t, describeACLsReq{Filter: testFilter, After: &testBinding}, encDescribeACLsReq, decDescribeACLsReq)
	roundTrip(t, describeACLsReq{Filter: coordapi.ACLFilterAll}, encDescribeACLsReq, decDescribeACLsReq)
	roundTrip(t, describeACLsResp{Bindings: []coordapi.ACLBinding{testBinding}, More: true}, encDescribeACLsResp, decDescribeACLsResp)
	roundTrip(t, uint64(1<<40), encUvarint, decUvarint)

	var e encoder
	encACLNotice(&e, 42)
	if v, err := decACLNotice(e.b); err != nil || v != 42 {
		t.Fatalf("notice: %d, %v", v, err)
	}
	if _, err := decACLNotice([]byte{aclNoticeVersion + 1, 1}); err == nil {
		t.Fatal("a notice of another version decoded")
	}
	if _, err := decACLNotice(append(e.b, 0)); err == nil {
		t.Fatal("a notice with trailing bytes decoded")
	}
}
