package node

import (
	"fmt"

	"github.com/floe-io/floe/ingest"
)

// PUT budgets of an S3 store (Config.PutBudget).
const (
	// PutBudgetS3 keeps PUTs within ingest's budget
	// (--ingest-max-put-rate, --ingest-max-puts-per-gib), for a store
	// that bills each request, as AWS S3 does.
	PutBudgetS3 = "s3"
	// PutBudgetNone rolls objects as soon as the uploader can take them,
	// as on the local directory, for a store that bills nothing per
	// request (a MinIO of one's own): produce latency then follows the
	// store's PUT time rather than a budget's.
	PutBudgetNone = "none"
)

// ingestOptions is cfg.Ingest with its per-store defaults filled in, for
// a node on an S3 store of its own (onS3) or on the local directory, whose
// objects may go inline in their commits (inline).
func ingestOptions(cfg Config, onS3, inline bool) (ingest.Options, error) {
	iopts := cfg.Ingest
	billed := onS3 // PUTs cost money
	switch cfg.PutBudget {
	case "":
	case PutBudgetS3, PutBudgetNone:
		if !onS3 {
			return iopts, fmt.Errorf("--ingest-put-budget %s: only for an S3 store (--s3-bucket); the local directory has no PUT budget", cfg.PutBudget)
		}
		billed = cfg.PutBudget == PutBudgetS3
	default:
		return iopts, fmt.Errorf("--ingest-put-budget %q: want %s or %s", cfg.PutBudget, PutBudgetS3, PutBudgetNone)
	}
	if iopts.MaxUploads == 0 && onS3 {
		iopts.MaxUploads = ingest.MaxUploadsS3
	}
	if iopts.MaxPutRate == 0 {
		iopts.MaxPutRate = ingest.PutRateLocal
		if billed {
			iopts.MaxPutRate = ingest.PutRateS3
		}
	}
	switch {
	case iopts.MaxPutsPerGiB == 0 && billed:
		iopts.MaxPutsPerGiB = ingest.PutsPerGiBS3
	case iopts.MaxPutsPerGiB < 0:
		iopts.MaxPutsPerGiB = 0 // none
	}
	switch {
	case iopts.EarlyRollWait == 0 && !onS3:
		// No PUT budget bounds the objects on a local directory.
		iopts.EarlyRollWait = ingest.EarlyRollWaitLocal
	case iopts.EarlyRollWait < 0:
		iopts.EarlyRollWait = 0 // none
	}
	switch {
	case iopts.UploadAheadBytes == 0 && onS3 && !billed:
		// Objects of a loaded broker would otherwise be as large as
		// a PUT's duration of its traffic, and wait for one another.
		iopts.UploadAheadBytes = ingest.UploadAheadFree
	case iopts.UploadAheadBytes < 0:
		iopts.UploadAheadBytes = 0 // never
	}
	switch {
	case iopts.InlineMax == 0 && inline:
		iopts.InlineMax = ingest.InlineLocal
	case iopts.InlineMax < 0 || !inline:
		iopts.InlineMax = 0 // none
	}
	if iopts.Prefix == "" {
		iopts.Prefix = cfg.S3Prefix
	}
	if iopts.BrokerID == 0 {
		iopts.BrokerID = cfg.Broker.NodeID
	}
	if iopts.Logger == nil {
		iopts.Logger = cfg.Logger
	}
	return iopts, nil
}
