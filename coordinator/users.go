package coordinator

import (
	"context"

	"github.com/floe-io/floe/coordapi"
)

// SCRAM users live in package users, in this state's family 'u' (its doc
// draws the rows): cluster-wide, like topics and ACLs.

// UserScramCredential returns user's stored credential for mechanism m,
// ok false when it has none: what a broker checks a SASL exchange against
// (users.Store).
func (c *Coordinator) UserScramCredential(ctx context.Context, user string, m coordapi.ScramMechanism) (coordapi.ScramCredential, bool, error) {
	if err := c.enter(ctx); err != nil {
		return coordapi.ScramCredential{}, false, err
	}
	defer c.leave()
	return c.users.UserScramCredential(ctx, user, m)
}

// DescribeUserScramCredentials describes the named users' credentials, or
// every user's when users is empty (users.Store).
func (c *Coordinator) DescribeUserScramCredentials(ctx context.Context, users []string) ([]coordapi.ScramUserInfo, error) {
	if err := c.enter(ctx); err != nil {
		return nil, err
	}
	defer c.leave()
	return c.users.DescribeUserScramCredentials(ctx, users)
}

// AlterUserScramCredentials deletes and sets users' SCRAM credentials
// (users.Store).
func (c *Coordinator) AlterUserScramCredentials(ctx context.Context, dels []coordapi.ScramDeletion, ups []coordapi.ScramUpsertion) ([]coordapi.ScramUserResult, error) {
	if err := c.enter(ctx); err != nil {
		return nil, err
	}
	defer c.leave()
	return c.users.AlterUserScramCredentials(ctx, dels, ups)
}
