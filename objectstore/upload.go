package objectstore

import (
	"context"
	"errors"
	"fmt"
)

// UploadBufferBytes is the most an Upload of the S3 or Dir store holds in
// memory, whatever the size of the object: S3 sends it in parts of this
// size (a multipart upload), Dir writes it to its temporary file in blocks
// of DirUploadBlockBytes. Memory's upload, and NewUpload's fallback for a
// Store that cannot stream, hold the whole object instead. Callers that
// bound their memory (the tier jobs' budget) count an upload as this much.
const UploadBufferBytes = S3PartBytes

// S3PartBytes is the size of the parts of an S3 multipart upload (the last
// part may be smaller). S3 wants at least 5 MiB a part but the last, and
// at most 10,000 parts: 8 MiB parts allow objects of up to 78 GiB. An
// object smaller than one part goes as one PutObject, as Put sends it.
const S3PartBytes = 8 << 20

// DirUploadBlockBytes is what a Dir upload buffers before it writes to its
// temporary file: with O_DIRECT the bytes go to the device from this
// buffer, aligned, in writes of this size. Small enough that a produce's
// fsync queued behind one such write waits little (a segment written in
// one write held the device for the whole of it), large enough that a
// direct write costs little CPU per byte.
const DirUploadBlockBytes = 1 << 20

// Upload is one object written as a stream: Write appends bytes, Commit
// makes the object durable and readable under its key, as Put does, and
// Abort drops what was written. Nothing is readable under the key before
// Commit returns nil. A Write or Commit that fails leaves the Upload to be
// aborted; after Commit or Abort the Upload is done, and Abort after
// Commit does nothing. An Upload is for one goroutine. Writes use the
// context the upload was started with; Commit and Abort take their own.
//
// An Upload exists so that an object larger than the memory a caller
// wants to spend on it (a segment of segment.bytes) is never held whole:
// S3 sends it as a multipart upload, Dir writes a temporary file renamed
// at Commit.
type Upload interface {
	// Write appends p to the object. It does not keep p.
	Write(p []byte) (int, error)
	// Commit finishes the object and returns once it is durable and
	// readable; on failure the upload is left to Abort.
	Commit(ctx context.Context) error
	// Abort drops the object's bytes written so far (a multipart upload's
	// parts, a temporary file). It does nothing after a successful Commit.
	Abort(ctx context.Context) error
}

// Uploader is a Store that writes an object as a stream (Upload).
type Uploader interface {
	// NewUpload starts an upload of key. The key is checked as Put
	// checks it.
	NewUpload(ctx context.Context, key string) (Upload, error)
}

// Putter is the part of a Store that NewUpload's fallback needs.
type Putter interface {
	Put(ctx context.Context, key string, data []byte) error
}

// NewUpload starts an upload of key on s: s's own if s is an Uploader,
// else one that holds the object in memory and Puts it at Commit.
func NewUpload(ctx context.Context, s Putter, key string) (Upload, error) {
	if u, ok := s.(Uploader); ok {
		return u.NewUpload(ctx, key)
	}
	if err := CheckKey(key); err != nil {
		return nil, fmt.Errorf("upload: %w", err)
	}
	return &bufferUpload{s: s, key: key}, nil
}

// errUploadDone fails a Write or Commit after Commit or Abort.
var errUploadDone = errors.New("objectstore: upload already committed or aborted")

// bufferUpload holds the whole object and Puts it at Commit: NewUpload's
// for a Store that cannot stream (Memory among them).
type bufferUpload struct {
	s    Putter
	key  string
	buf  []byte
	done bool
}

func (u *bufferUpload) Write(p []byte) (int, error) {
	if u.done {
		return 0, fmt.Errorf("upload %s: %w", u.key, errUploadDone)
	}
	u.buf = append(u.buf, p...)
	return len(p), nil
}

func (u *bufferUpload) Commit(ctx context.Context) error {
	if u.done {
		return fmt.Errorf("upload %s: %w", u.key, errUploadDone)
	}
	if err := u.s.Put(ctx, u.key, u.buf); err != nil {
		return err
	}
	u.done, u.buf = true, nil
	return nil
}

func (u *bufferUpload) Abort(context.Context) error {
	u.done, u.buf = true, nil
	return nil
}
