package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-io/floe/coordapi"
)

// AlterUserScramCredentials: v0 (flexible). Deletes and sets the
// coordinator's SCRAM users, one result per user with Kafka's errors
// (coordinator.AlterUserScramCredentials): what kafka-configs.sh
// --alter --add-config 'SCRAM-SHA-512=[password=...]' --entity-type users
// and kadm send. It needs CLUSTER ALTER, as in Kafka.
func init() {
	register(kmsg.AlterUserSCRAMCredentials, 0, 0, (*Broker).handleAlterUserSCRAMCredentials)
}

func (b *Broker) handleAlterUserSCRAMCredentials(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.req.(*kmsg.AlterUserSCRAMCredentialsRequest)
	resp := req.ResponseKind().(*kmsg.AlterUserSCRAMCredentialsResponse)
	var dels []coordapi.ScramDeletion
	var ups []coordapi.ScramUpsertion
	for _, d := range req.Deletions {
		dels = append(dels, coordapi.ScramDeletion{User: d.Name, Mechanism: scramMechanism(d.Mechanism)})
	}
	for _, u := range req.Upsertions {
		ups = append(ups, coordapi.ScramUpsertion{User: u.Name, Mechanism: scramMechanism(u.Mechanism), Iterations: u.Iterations,
			Salt: u.Salt, SaltedPassword: u.SaltedPassword})
	}
	var results []coordapi.ScramUserResult
	var err error
	if b.authorizeCluster(r, kmsg.ACLOperationAlter) {
		results, err = b.coord.AlterUserScramCredentials(ctx, dels, ups)
	} else {
		err = coordapi.Errorf(kerr.ClusterAuthorizationFailed, "Principal %s may not ALTER the cluster", r.principal())
	}
	if err != nil {
		// Every user named fails alike.
		code := coordapi.ErrorCode(err)
		msg := err.Error()
		seen := map[string]bool{}
		for _, u := range append(names(req.Deletions, func(d kmsg.AlterUserSCRAMCredentialsRequestDeletion) string { return d.Name }),
			names(req.Upsertions, func(u kmsg.AlterUserSCRAMCredentialsRequestUpsertion) string { return u.Name })...) {
			if !seen[u] {
				seen[u] = true
				res := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
				res.User, res.ErrorCode, res.ErrorMessage = u, code, &msg
				resp.Results = append(resp.Results, res)
			}
		}
		return resp, nil
	}
	for _, rr := range results {
		res := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
		res.User, res.ErrorCode = rr.User, rr.ErrorCode
		if rr.ErrorMessage != "" {
			res.ErrorMessage = &rr.ErrorMessage
		}
		resp.Results = append(resp.Results, res)
	}
	return resp, nil
}

func names[T any](items []T, name func(T) string) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = name(it)
	}
	return out
}
