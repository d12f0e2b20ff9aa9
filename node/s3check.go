package node

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/smithy-go"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/objectstore"
)

// bucketCheckTimeout bounds checkBucket, the SDK's retries included.
const bucketCheckTimeout = 30 * time.Second

// checkBucket lists a key prefix no object has, so that a missing bucket,
// refused credentials or an unreachable endpoint stop the broker at start
// with a plain message rather than fail its first produce.
func checkBucket(ctx context.Context, store *objectstore.S3, opts objectstore.S3Options, prefix string) error {
	ctx, cancel := context.WithTimeout(ctx, bucketCheckTimeout)
	defer cancel()
	_, err := store.List(ctx, coordapi.WALPrefix(prefix)+"floe-start-check")
	if err == nil {
		return nil
	}
	where := "AWS S3"
	if opts.Endpoint != "" {
		where = opts.Endpoint
	}
	var apiErr smithy.APIError
	code := ""
	if errors.As(err, &apiErr) {
		code = apiErr.ErrorCode()
	}
	switch code {
	case "NoSuchBucket", "NotFound":
		return fmt.Errorf("--s3-bucket %s does not exist at %s: create it, or start with --s3-create-bucket (%w)", opts.Bucket, where, err)
	case "AccessDenied", "Forbidden", "InvalidAccessKeyId", "SignatureDoesNotMatch", "InvalidToken", "ExpiredToken", "InvalidClientTokenId":
		return fmt.Errorf("--s3-bucket %s at %s refused this broker's credentials (%s): check AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, ~/.aws/config or the instance role, and that they may list and write the bucket (%w)",
			opts.Bucket, where, code, err)
	}
	return fmt.Errorf("--s3-bucket %s at %s cannot be listed: %w", opts.Bucket, where, err)
}
