package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-io/floe/coordapi"
)

// DescribeUserScramCredentials: v0 (flexible). The coordinator's SCRAM
// users: their mechanisms and iterations, never a key or salt. No users
// named means all of them. It needs CLUSTER DESCRIBE, as in Kafka.
func init() {
	register(kmsg.DescribeUserSCRAMCredentials, 0, 0, (*Broker).handleDescribeUserSCRAMCredentials)
}

func (b *Broker) handleDescribeUserSCRAMCredentials(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.req.(*kmsg.DescribeUserSCRAMCredentialsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeUserSCRAMCredentialsResponse)
	if !b.authorizeCluster(r, kmsg.ACLOperationDescribe) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp, nil
	}
	var users []string
	for _, u := range req.Users {
		users = append(users, u.Name)
	}
	infos, err := b.coord.DescribeUserScramCredentials(ctx, users)
	if err != nil {
		resp.ErrorCode = coordapi.ErrorCode(err)
		msg := err.Error()
		resp.ErrorMessage = &msg
		return resp, nil
	}
	for _, in := range infos {
		res := kmsg.NewDescribeUserSCRAMCredentialsResponseResult()
		res.User, res.ErrorCode = in.User, in.ErrorCode
		if in.ErrorMessage != "" {
			res.ErrorMessage = &in.ErrorMessage
		}
		for _, c := range in.Credentials {
			ci := kmsg.NewDescribeUserSCRAMCredentialsResponseResultCredentialInfo()
			ci.Mechanism, ci.Iterations = int8(c.Mechanism), c.Iterations
			res.CredentialInfos = append(res.CredentialInfos, ci)
		}
		resp.Results = append(resp.Results, res)
	}
	return resp, nil
}

// scramMechanism converts Kafka's mechanism number.
func scramMechanism(m int8) coordapi.ScramMechanism { return coordapi.ScramMechanism(m) }
