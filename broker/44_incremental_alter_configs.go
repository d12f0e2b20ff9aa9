package broker

import (
	"context"
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-io/floe/coordapi"
)

// IncrementalAlterConfigs: v0-v1. v1+ flexible. Each op (SET, DELETE,
// APPEND, SUBTRACT) changes one topic config and leaves the others alone;
// APPEND and SUBTRACT apply only to list-type keys (else INVALID_CONFIG,
// with the coordinator's message). Each resource succeeds or fails on its
// own: a bad one never poisons the others. Broker configs are static
// (INVALID_REQUEST). Group configs (GROUP) go to the group coordinator
// (group_configs.go). With ACLs a topic needs TOPIC ALTER_CONFIGS, a
// broker CLUSTER ALTER_CONFIGS, a group GROUP ALTER_CONFIGS.
func init() {
	register(kmsg.IncrementalAlterConfigs, 0, 1, (*Broker).handleIncrementalAlterConfigs)
}

func (b *Broker) handleIncrementalAlterConfigs(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.req.(*kmsg.IncrementalAlterConfigsRequest)
	resp := req.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
	dups := duplicateResources(len(req.Resources), func(i int) (kmsg.ConfigResourceType, string) {
		return req.Resources[i].ResourceType, req.Resources[i].ResourceName
	})
	for i, rr := range req.Resources {
		sr := kmsg.NewIncrementalAlterConfigsResponseResource()
		sr.ResourceType, sr.ResourceName = rr.ResourceType, rr.ResourceName
		var err error
		if dups[i] {
			err = errDuplicateResource
		} else if aerr := b.configsAuthorized(r, kmsg.ACLOperationAlterConfigs, rr.ResourceType, rr.ResourceName); aerr != nil {
			err = aerr
		} else if rr.ResourceType == kmsg.ConfigResourceTypeGroupConfig {
			resp.Resources = append(resp.Resources, b.alterGroupConfigs(ctx, req, rr))
			continue
		} else {
			err = b.incrementalAlterConfigs(ctx, rr, req.ValidateOnly)
		}
		if err != nil {
			sr.ErrorCode = coordapi.ErrorCode(err)
			sr.ErrorMessage = adminErrorMessage(err)
		}
		resp.Resources = append(resp.Resources, sr)
	}
	return resp, nil
}

func (b *Broker) incrementalAlterConfigs(ctx context.Context, rr kmsg.IncrementalAlterConfigsRequestResource, validateOnly bool) error {
	ops := make([]coordapi.ConfigOp, 0, len(rr.Configs))
	var nulls []string
	for _, c := range rr.Configs {
		op := int8(c.Op)
		switch op {
		case coordapi.OpSet, coordapi.OpAppend, coordapi.OpSubtract:
			if c.Value == nil {
				nulls = append(nulls, c.Name)
			}
		case coordapi.OpDelete:
		default:
			return fmt.Errorf("%w: Unknown alter config operation %d for config %s", kerr.InvalidRequest, op, c.Name)
		}
		ops = append(ops, coordapi.ConfigOp{Name: c.Name, Op: op, Value: c.Value})
	}
	if len(nulls) > 0 {
		return fmt.Errorf("%w: Null value not supported for : %s", kerr.InvalidRequest, strings.Join(nulls, ", "))
	}
	return b.alterConfigs(ctx, rr.ResourceType, rr.ResourceName, ops, true, validateOnly)
}
