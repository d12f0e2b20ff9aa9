package broker

import (
	"context"
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-io/floe/coordapi"
)

// AlterConfigs: v0-v2. v1 adds nothing; v2+ flexible. The legacy form:
// the configs given replace the topic's whole explicit config set (anything
// not named returns to its default). Broker configs are static
// (INVALID_REQUEST); other resource types are INVALID_REQUEST too. Each
// resource succeeds or fails on its own. With ACLs a topic needs TOPIC
// ALTER_CONFIGS, a broker CLUSTER ALTER_CONFIGS.
func init() { register(kmsg.AlterConfigs, 0, 2, (*Broker).handleAlterConfigs) }

func (b *Broker) handleAlterConfigs(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.req.(*kmsg.AlterConfigsRequest)
	resp := req.ResponseKind().(*kmsg.AlterConfigsResponse)
	dups := duplicateResources(len(req.Resources), func(i int) (kmsg.ConfigResourceType, string) {
		return req.Resources[i].ResourceType, req.Resources[i].ResourceName
	})
	for i, rr := range req.Resources {
		sr := kmsg.NewAlterConfigsResponseResource()
		sr.ResourceType, sr.ResourceName = rr.ResourceType, rr.ResourceName
		ops := make([]coordapi.ConfigOp, 0, len(rr.Configs))
		var nulls []string
		for _, c := range rr.Configs {
			if c.Value == nil {
				nulls = append(nulls, c.Name)
			}
			ops = append(ops, coordapi.ConfigOp{Name: c.Name, Op: coordapi.OpSet, Value: c.Value})
		}
		var err error
		switch {
		case dups[i]:
			err = errDuplicateResource
		default:
			err = b.configsAuthorized(r, kmsg.ACLOperationAlterConfigs, rr.ResourceType, rr.ResourceName)
		}
		switch {
		case err != nil:
		case len(nulls) > 0:
			err = fmt.Errorf("%w: Null value not supported for : %s", kerr.InvalidRequest, strings.Join(nulls, ", "))
		default:
			err = b.alterConfigs(ctx, rr.ResourceType, rr.ResourceName, ops, false, req.ValidateOnly)
		}
		if err != nil {
			sr.ErrorCode = coordapi.ErrorCode(err)
			sr.ErrorMessage = adminErrorMessage(err)
		}
		resp.Resources = append(resp.Resources, sr)
	}
	return resp, nil
}

var errDuplicateResource = fmt.Errorf("%w: Each resource must appear at most once.", kerr.InvalidRequest)

// duplicateResources marks the resources (of n) named more than once;
// Kafka fails each of them.
func duplicateResources(n int, resource func(int) (kmsg.ConfigResourceType, string)) []bool {
	type key struct {
		typ  kmsg.ConfigResourceType
		name string
	}
	counts := make(map[key]int, n)
	for i := range n {
		t, name := resource(i)
		counts[key{t, name}]++
	}
	out := make([]bool, n)
	for i := range n {
		t, name := resource(i)
		out[i] = counts[key{t, name}] > 1
	}
	return out
}

// alterConfigs applies ops to one resource: a topic through the
// coordinator, which validates every op (unknown names, bad values,
// APPEND/SUBTRACT on non-list keys are INVALID_CONFIG); broker configs are
// static.
func (b *Broker) alterConfigs(ctx context.Context, typ kmsg.ConfigResourceType, name string, ops []coordapi.ConfigOp, incremental, validateOnly bool) error {
	seen := make(map[string]bool, len(ops))
	for _, op := range ops {
		if seen[op.Name] {
			return fmt.Errorf("%w: Error due to duplicate config keys", kerr.InvalidRequest)
		}
		seen[op.Name] = true
	}
	switch typ {
	case kmsg.ConfigResourceTypeTopic:
		if err := b.coord.AlterTopicConfigs(ctx, name, ops, incremental, validateOnly); err != nil {
			return err
		}
		b.topicChanged(coordapi.TopicID{}, name)
		return nil
	case kmsg.ConfigResourceTypeBroker:
		if err := b.checkBrokerResource(name); err != nil {
			return err
		}
		return fmt.Errorf("%w: broker configs are static: set them on the broker's command line", kerr.InvalidRequest)
	default:
		return unsupportedResource(typ)
	}
}
