package objectstore

import (
	"bytes"
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// NewUpload starts an upload of key: bytes are buffered up to S3PartBytes,
// and each full buffer is sent as one part of a multipart upload, created
// with the first part; Commit sends the rest as the last part and
// completes the upload. An object smaller than one part never becomes a
// multipart upload: Commit sends it with Put's one PutObject. Parts go as
// Put's body does (unsigned, with a CRC32C the store checks), and the
// completed object's checksum is the composite of the parts'. Abort, and a
// failed Commit, abort the multipart upload so that its parts are not kept
// (and billed); parts of an upload a crash left behind are the bucket
// lifecycle's to expire (AbortIncompleteMultipartUpload).
func (s *S3) NewUpload(ctx context.Context, key string) (Upload, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("upload %s: %w", key, err)
	}
	if err := CheckKey(key); err != nil {
		return nil, fmt.Errorf("upload: %w", err)
	}
	return &s3Upload{s: s, ctx: ctx, key: key, buf: make([]byte, 0, S3PartBytes)}, nil
}

var _ Uploader = (*S3)(nil)

// s3Upload is S3's Upload.
type s3Upload struct {
	s     *S3
	ctx   context.Context
	key   string
	buf   []byte // the next part, up to S3PartBytes
	id    string // the multipart upload's id, once created
	parts []types.CompletedPart
	done  bool
}

func (u *s3Upload) Write(p []byte) (int, error) {
	if u.done {
		return 0, fmt.Errorf("upload %s: %w", u.key, errUploadDone)
	}
	written := 0
	for len(p) > 0 {
		c := min(len(p), cap(u.buf)-len(u.buf))
		u.buf = append(u.buf, p[:c]...)
		p = p[c:]
		written += c
		if len(u.buf) == cap(u.buf) {
			if err := u.sendPart(u.ctx); err != nil {
				return written, err
			}
		}
	}
	return written, nil
}

// sendPart sends u.buf as the next part, creating the multipart upload
// first if it is the first, and empties u.buf.
func (u *s3Upload) sendPart(ctx context.Context) error {
	s := u.s
	if u.id == "" {
		out, err := s.client.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{
			Bucket:            aws.String(s.bucket),
			Key:               aws.String(u.key),
			ContentType:       aws.String("application/octet-stream"),
			ChecksumAlgorithm: types.ChecksumAlgorithmCrc32c,
		})
		if err != nil {
			return fmt.Errorf("upload %s: create multipart upload: %w", u.key, err)
		}
		u.id = aws.ToString(out.UploadId)
	}
	n := int32(len(u.parts) + 1)
	sum := crc32cBase64(u.buf)
	// Fenced as Put's body: the buffer is reused for the next part once
	// UploadPart returns. Parts keep the SDK's retries: sending a part
	// again under its number replaces it.
	body := &fencedReader{r: bytes.NewReader(u.buf)}
	out, err := s.client.UploadPart(ctx, &s3.UploadPartInput{
		Bucket:         aws.String(s.bucket),
		Key:            aws.String(u.key),
		UploadId:       aws.String(u.id),
		PartNumber:     aws.Int32(n),
		Body:           body,
		ContentLength:  aws.Int64(int64(len(u.buf))),
		ChecksumCRC32C: aws.String(sum),
	}, func(o *s3.Options) {
		o.APIOptions = append(o.APIOptions, v4.SwapComputePayloadSHA256ForUnsignedPayloadMiddleware)
	})
	body.fence()
	if err != nil {
		return fmt.Errorf("upload %s: part %d: %w", u.key, n, err)
	}
	u.parts = append(u.parts, types.CompletedPart{ETag: out.ETag, PartNumber: aws.Int32(n), ChecksumCRC32C: aws.String(sum)})
	u.buf = u.buf[:0]
	return nil
}

func (u *s3Upload) Commit(ctx context.Context) error {
	if u.done {
		return fmt.Errorf("upload %s: %w", u.key, errUploadDone)
	}
	if u.id == "" {
		if err := u.s.Put(ctx, u.key, u.buf); err != nil {
			return fmt.Errorf("upload: %w", err)
		}
		u.done, u.buf = true, nil
		return nil
	}
	if len(u.buf) > 0 {
		if err := u.sendPart(ctx); err != nil {
			return err
		}
	}
	_, err := u.s.client.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{
		Bucket:          aws.String(u.s.bucket),
		Key:             aws.String(u.key),
		UploadId:        aws.String(u.id),
		MultipartUpload: &types.CompletedMultipartUpload{Parts: u.parts},
	})
	if err != nil {
		return fmt.Errorf("upload %s: complete multipart upload of %d parts: %w", u.key, len(u.parts), err)
	}
	u.done, u.buf = true, nil
	return nil
}

func (u *s3Upload) Abort(ctx context.Context) error {
	if u.done {
		return nil
	}
	u.done, u.buf = true, nil
	if u.id == "" {
		return nil
	}
	_, err := u.s.client.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{
		Bucket:   aws.String(u.s.bucket),
		Key:      aws.String(u.key),
		UploadId: aws.String(u.id),
	})
	if err != nil && !isCode(err, "NoSuchUpload") {
		return fmt.Errorf("upload %s: abort multipart upload: %w", u.key, err)
	}
	return nil
}
