package table

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strings"
	"time"

	icebergio "github.com/apache/iceberg-go/io"

	"github.com/floe-io/floe/objectstore"
)

// FileIO is iceberg-go's file IO over a floe object store, so that tables
// are written with the broker's own S3 client, credentials, TLS and
// hedging (or to its directory store), and nothing else reaches the
// bucket. Root is the URI that stands for the store's empty key: a file
// "<Root>/k" is the object k. For S3 it is "s3://<bucket>" and the keys
// are the bucket's; for a directory store it is "file://<dir>", so that
// readers on the same host (PyIceberg, DuckDB) open the same files.
//
// Writes stream to an objectstore Upload (S3 multipart parts, a Dir
// temporary file), so a data file is never held whole unless the store
// cannot stream.
type FileIO struct {
	ctx   context.Context
	store objectstore.Store
	root  string
}

var (
	_ icebergio.IO          = (*FileIO)(nil)
	_ icebergio.ReadFileIO  = (*FileIO)(nil)
	_ icebergio.WriteFileIO = (*FileIO)(nil)
	_ icebergio.ListableIO  = (*FileIO)(nil)
)

// NewFileIO returns the IO for store with root as its URI. Its calls use
// ctx (iceberg-go's IO methods take none).
func NewFileIO(ctx context.Context, store objectstore.Store, root string) *FileIO {
	return &FileIO{ctx: ctx, store: store, root: strings.TrimSuffix(root, "/")}
}

// Root returns the URI that stands for the store's empty key.
func (f *FileIO) Root() string { return f.root }

// Key returns the object key of the file name, a URI under Root.
func (f *FileIO) Key(name string) (string, error) {
	k, ok := strings.CutPrefix(name, f.root+"/")
	if !ok {
		return "", fmt.Errorf("table: file %q is not under the store root %q: %w", name, f.root, fs.ErrInvalid)
	}
	if err := objectstore.CheckKey(k); err != nil {
		return "", fmt.Errorf("table: file %q: %w", name, err)
	}
	return k, nil
}

func pathErr(op, name string, err error) error {
	if errors.Is(err, objectstore.ErrNotFound) {
		err = fmt.Errorf("%w: %w", fs.ErrNotExist, err)
	}
	return &fs.PathError{Op: op, Path: name, Err: err}
}

// Open implements iceberg-go's io.IO: a random-access reader of the
// object, one ranged GET per read.
func (f *FileIO) Open(name string) (icebergio.File, error) {
	k, err := f.Key(name)
	if err != nil {
		return nil, pathErr("open", name, err)
	}
	info, err := f.store.Head(f.ctx, k)
	if err != nil {
		return nil, pathErr("open", name, err)
	}
	return &storeFile{io: f, key: k, name: name, size: info.Size, mod: info.LastModified}, nil
}

// Remove implements iceberg-go's io.IO.
func (f *FileIO) Remove(name string) error {
	k, err := f.Key(name)
	if err != nil {
		return pathErr("remove", name, err)
	}
	if err := f.store.Delete(f.ctx, k); err != nil {
		return pathErr("remove", name, err)
	}
	return nil
}

// ReadFile implements iceberg-go's io.ReadFileIO.
func (f *FileIO) ReadFile(name string) ([]byte, error) {
	k, err := f.Key(name)
	if err != nil {
		return nil, pathErr("read", name, err)
	}
	b, err := f.store.GetRange(f.ctx, k, 0, -1)
	if err != nil {
		return nil, pathErr("read", name, err)
	}
	return b, nil
}

// Create implements iceberg-go's io.WriteFileIO: the object appears
// under its key when the writer is closed, not before.
func (f *FileIO) Create(name string) (icebergio.FileWriter, error) {
	k, err := f.Key(name)
	if err != nil {
		return nil, pathErr("create", name, err)
	}
	up, err := objectstore.NewUpload(f.ctx, f.store, k)
	if err != nil {
		return nil, pathErr("create", name, err)
	}
	return &storeWriter{io: f, up: up, name: name}, nil
}

// WriteFile implements iceberg-go's io.WriteFileIO.
func (f *FileIO) WriteFile(name string, p []byte) error {
	k, err := f.Key(name)
	if err != nil {
		return pathErr("write", name, err)
	}
	if err := f.store.Put(f.ctx, k, p); err != nil {
		return pathErr("write", name, err)
	}
	return nil
}

// WalkDir implements iceberg-go's io.ListableIO (orphan-file cleanup
// lists a table's files with it). Object stores have no directories: fn
// sees root as a directory and then every object under it, in key order.
func (f *FileIO) WalkDir(root string, fn fs.WalkDirFunc) error {
	root = strings.TrimSuffix(root, "/")
	prefix := ""
	if root != f.root {
		k, err := f.Key(root)
		if err != nil {
			return fn(root, nil, err)
		}
		prefix = k + "/"
	}
	objs, err := f.store.List(f.ctx, prefix)
	if err != nil {
		return fn(root, nil, pathErr("walk", root, err))
	}
	if err := fn(root, dirEntry{fileInfo{name: path.Base(root), dir: true}}, nil); err != nil {
		if errors.Is(err, fs.SkipDir) || errors.Is(err, fs.SkipAll) {
			return nil
		}
		return err
	}
	for _, o := range objs {
		fi := fileInfo{name: path.Base(o.Key), size: o.Size, mod: o.LastModified}
		if err := fn(f.root+"/"+o.Key, dirEntry{fi}, nil); err != nil {
			if errors.Is(err, fs.SkipAll) {
				return nil
			}
			return err
		}
	}
	return nil
}

// storeFile reads an object by ranged GETs.
type storeFile struct {
	io   *FileIO
	key  string
	name string
	size int64
	mod  time.Time
	pos  int64
}

func (s *storeFile) Stat() (fs.FileInfo, error) {
	return fileInfo{name: path.Base(s.key), size: s.size, mod: s.mod}, nil
}

func (s *storeFile) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, pathErr("read", s.name, fs.ErrInvalid)
	}
	if off >= s.size {
		return 0, io.EOF
	}
	n := min(int64(len(p)), s.size-off)
	b, err := s.io.store.GetRange(s.io.ctx, s.key, off, n)
	if err != nil {
		return 0, pathErr("read", s.name, err)
	}
	c := copy(p, b)
	if c < len(p) {
		return c, io.EOF
	}
	return c, nil
}

func (s *storeFile) Read(p []byte) (int, error) {
	n, err := s.ReadAt(p, s.pos)
	s.pos += int64(n)
	if err == io.EOF && n > 0 {
		err = nil
	}
	return n, err
}

func (s *storeFile) Seek(offset int64, whence int) (int64, error) {
	switch whence {
	case io.SeekStart:
	case io.SeekCurrent:
		offset += s.pos
	case io.SeekEnd:
		offset += s.size
	default:
		return 0, pathErr("seek", s.name, fs.ErrInvalid)
	}
	if offset < 0 {
		return 0, pathErr("seek", s.name, fs.ErrInvalid)
	}
	s.pos = offset
	return offset, nil
}

func (s *storeFile) Close() error { return nil }

// storeWriter streams a file to an objectstore Upload.
type storeWriter struct {
	io     *FileIO
	up     objectstore.Upload
	name   string
	n      int64 // bytes written
	failed bool
	done   bool
}

func (w *storeWriter) Write(p []byte) (int, error) {
	n, err := w.up.Write(p)
	w.n += int64(n)
	if err != nil {
		w.failed = true
		return n, pathErr("write", w.name, err)
	}
	return n, nil
}

func (w *storeWriter) ReadFrom(r io.Reader) (int64, error) {
	return io.Copy(struct{ io.Writer }{w}, r)
}

// Close commits the upload, or aborts it after a failed write.
func (w *storeWriter) Close() error {
	if w.done {
		return nil
	}
	w.done = true
	if w.failed {
		return errors.Join(pathErr("close", w.name, errors.New("an earlier write failed")), w.up.Abort(w.io.ctx))
	}
	if err := w.up.Commit(w.io.ctx); err != nil {
		return errors.Join(pathErr("close", w.name, err), w.up.Abort(w.io.ctx))
	}
	return nil
}

type fileInfo struct {
	name string
	size int64
	mod  time.Time
	dir  bool
}

func (fi fileInfo) Name() string       { return fi.name }
func (fi fileInfo) Size() int64        { return fi.size }
func (fi fileInfo) ModTime() time.Time { return fi.mod }
func (fi fileInfo) IsDir() bool        { return fi.dir }
func (fi fileInfo) Sys() any           { return nil }
func (fi fileInfo) Mode() fs.FileMode {
	if fi.dir {
		return fs.ModeDir | 0o755
	}
	return 0o644
}

type dirEntry struct{ fi fileInfo }

func (d dirEntry) Name() string               { return d.fi.name }
func (d dirEntry) IsDir() bool                { return d.fi.dir }
func (d dirEntry) Type() fs.FileMode          { return d.fi.Mode().Type() }
func (d dirEntry) Info() (fs.FileInfo, error) { return d.fi, nil }
