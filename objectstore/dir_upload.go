package objectstore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// NewUpload starts an upload of key: a temporary file beside the object's
// path, written DirUploadBlockBytes at a time (with O_DIRECT where Put uses
// it, from an aligned buffer), fsynced and renamed into place at Commit,
// the directory fsynced after, as Put does. An upload never committed
// leaves nothing visible: Abort removes the file, and one left by a crash
// is a temporary file List skips.
func (d *Dir) NewUpload(ctx context.Context, key string) (Upload, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("upload %s: %w", key, err)
	}
	p, err := d.path(key)
	if err != nil {
		return nil, fmt.Errorf("upload: %w", err)
	}
	dir := filepath.Dir(p)
	if err := d.mkdirAllSync(dir); err != nil {
		return nil, fmt.Errorf("upload %s: %w", key, err)
	}
	u := &dirUpload{d: d, ctx: ctx, key: key, path: p, dir: dir}
	if d.w.direct() {
		u.f, err = openTemp(dir, openDirectFlag)
		if u.direct = !errors.Is(err, errDirectRefused); !u.direct {
			d.w.refuseDirect()
		}
	}
	if !u.direct {
		u.f, err = openTemp(dir, 0)
	}
	if err != nil {
		return nil, fmt.Errorf("upload %s: %w", key, err)
	}
	u.tmp = u.f.Name()
	u.buf = alignedBuf(DirUploadBlockBytes)
	return u, nil
}

var _ Uploader = (*Dir)(nil)

// dirUpload is Dir's Upload.
type dirUpload struct {
	d              *Dir
	ctx            context.Context
	key, path, dir string
	tmp            string
	f              *os.File
	direct         bool   // f was opened with O_DIRECT
	buf            []byte // block-aligned, DirUploadBlockBytes
	n              int    // bytes of buf filled
	off            int64  // bytes written to f
	done           bool
}

func (u *dirUpload) Write(p []byte) (int, error) {
	if u.done {
		return 0, fmt.Errorf("upload %s: %w", u.key, errUploadDone)
	}
	written := 0
	for len(p) > 0 {
		c := copy(u.buf[u.n:], p)
		u.n += c
		p = p[c:]
		written += c
		if u.n == len(u.buf) {
			if err := u.ctx.Err(); err != nil {
				return written, fmt.Errorf("upload %s: %w", u.key, err)
			}
			if err := u.writeBuf(len(u.buf)); err != nil {
				return written, fmt.Errorf("upload %s: %w", u.key, err)
			}
		}
	}
	return written, nil
}

// writeBuf writes buf[:n] at u.off, n a multiple of directBlock unless it
// is the last write, whose padding Commit cuts off; it falls back to
// writes through the page cache if O_DIRECT is refused.
func (u *dirUpload) writeBuf(n int) error {
	b := u.buf[:n]
	if u.direct {
		padded := (n + directBlock - 1) &^ (directBlock - 1)
		clear(u.buf[n:padded])
		err := writeAt(u.f, u.buf[:padded], u.off)
		if !errors.Is(err, errDirectRefused) {
			if err == nil {
				u.off += int64(n)
				u.n = 0
			}
			return err
		}
		// Reopen without O_DIRECT: the bytes written so far stay.
		u.d.w.refuseDirect()
		f, err := os.OpenFile(u.tmp, os.O_WRONLY, 0)
		if err != nil {
			return err
		}
		_ = u.f.Close()
		u.f, u.direct = f, false
	}
	if _, err := u.f.WriteAt(b, u.off); err != nil {
		return err
	}
	u.off += int64(n)
	u.n = 0
	return nil
}

func (u *dirUpload) Commit(ctx context.Context) error {
	if u.done {
		return fmt.Errorf("upload %s: %w", u.key, errUploadDone)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("upload %s: %w", u.key, err)
	}
	if u.n > 0 {
		if err := u.writeBuf(u.n); err != nil {
			return fmt.Errorf("upload %s: %w", u.key, err)
		}
	}
	if u.off%directBlock != 0 {
		if err := u.f.Truncate(u.off); err != nil { // the last block's padding
			return fmt.Errorf("upload %s: %w", u.key, err)
		}
	}
	if err := u.f.Sync(); err != nil {
		return fmt.Errorf("upload %s: %w", u.key, err)
	}
	if err := u.f.Close(); err != nil {
		return fmt.Errorf("upload %s: %w", u.key, err)
	}
	u.f = nil
	if err := os.Rename(u.tmp, u.path); err != nil {
		return fmt.Errorf("upload %s: %w", u.key, err)
	}
	u.done, u.buf = true, nil
	if err := syncDir(u.dir); err != nil {
		return fmt.Errorf("upload %s: %w", u.key, err)
	}
	u.d.files.invalidate(u.key)
	u.d.unstage(u.key)
	return nil
}

func (u *dirUpload) Abort(context.Context) error {
	if u.done {
		return nil
	}
	u.done, u.buf = true, nil
	return u.remove()
}

// remove closes and removes the temporary file.
func (u *dirUpload) remove() error {
	if u.f != nil {
		_ = u.f.Close()
		u.f = nil
	}
	if err := os.Remove(u.tmp); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("upload %s: remove %s: %w", u.key, u.tmp, err)
	}
	return nil
}
