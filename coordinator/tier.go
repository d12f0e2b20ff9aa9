package coordinator

import (
	"context"
	"errors"

	"github.com/floe-io/floe/coordapi"
)

// ClaimTierJob: in progress (this file is replaced by the job planner).
func (c *Coordinator) ClaimTierJob(ctx context.Context, req coordapi.ClaimTierJobRequest) (coordapi.TierJob, bool, error) {
	return coordapi.TierJob{}, false, errors.ErrUnsupported
}

// CompleteTierJob: in progress.
func (c *Coordinator) CompleteTierJob(ctx context.Context, req coordapi.CompleteTierJobRequest) error {
	return errors.ErrUnsupported
}

// AbandonTierJob: in progress.
func (c *Coordinator) AbandonTierJob(ctx context.Context, jobID uint64, reason string) error {
	return errors.ErrUnsupported
}
