package objectstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// tmpPrefix starts the name of every file Dir.Put writes before renaming
// it into place. List skips such files and Dir rejects keys with a segment
// that starts with it, so a half-written object is never visible.
const tmpPrefix = ".floe-tmp-"

// Dir is a Store in a local directory, the embedded default. Each key is a
// file under the root, '/' in keys making subdirectories. Put is atomic and
// durable: data goes to a temporary file in the target directory, is
// fsynced and renamed into place, and the directory is fsynced. Stage
// holds an object in memory, readable, until Persist (or a Put) writes
// it. On Linux
// the data of objects of 256 KiB or more bypasses the page cache
// (O_DIRECT; see dir_write.go).
//
// Because keys are paths, Dir cannot hold both "a" and "a/b"; floe's key
// layouts never need that. Up to 512 recently read objects' files stay
// open (dir_files.go), dropped as their keys are written or deleted.
// Empty directories left by Delete are not
// removed, and temporary files of a Put interrupted by a crash stay on
// disk (invisible to List) until removed by hand.
type Dir struct {
	root string
	w    writer // see dir_write.go: O_DIRECT where the file system takes it
	// files keeps recently read objects' files open (dir_files.go).
	files openFiles
	// staged holds the objects of Stage until Persist or Put writes them.
	staged struct {
		sync.RWMutex
		m map[string]stagedObject
	}
}

var _ Store = (*Dir)(nil)

// NewDir returns a Store rooted at root, creating the directory if needed.
func NewDir(root string) (*Dir, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("object store dir %s: %w", root, err)
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return nil, fmt.Errorf("object store dir: %w", err)
	}
	d := &Dir{root: abs, w: writer{directMin: directWriteMin}}
	d.files.max = dirOpenFiles
	return d, nil
}

// Root returns the absolute directory the store lives in.
func (d *Dir) Root() string { return d.root }

// path returns the file that holds key, after checking that key is valid
// and cannot escape the root.
func (d *Dir) path(key string) (string, error) {
	if err := checkDirKey(key); err != nil {
		return "", err
	}
	return filepath.Join(d.root, filepath.FromSlash(key)), nil
}

// checkDirKey checks that key is valid and names no temporary file.
func checkDirKey(key string) error {
	if err := CheckKey(key); err != nil {
		return err
	}
	for seg := range strings.SplitSeq(key, "/") {
		if strings.HasPrefix(seg, tmpPrefix) {
			return fmt.Errorf("%w: %q has a segment starting with %q", ErrInvalidKey, key, tmpPrefix)
		}
	}
	return nil
}

// Put atomically writes data under key and returns once it is durable.
func (d *Dir) Put(ctx context.Context, key string, data []byte) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("put %s: %w", key, err)
	}
	p, err := d.path(key)
	if err != nil {
		return fmt.Errorf("put: %w", err)
	}
	dir := filepath.Dir(p)
	if err := d.mkdirAllSync(dir); err != nil {
		return fmt.Errorf("put %s: %w", key, err)
	}
	if err := d.writeFileAtomic(dir, p, data); err != nil {
		return fmt.Errorf("put %s: %w", key, err)
	}
	d.files.invalidate(key)
	d.unstage(key)
	return nil
}

// Stage makes data readable under key at once, from memory, without
// writing it: Get, Head and List find it in this Dir (this process: other
// Dirs on the same root do not), until Persist (or a Put of the same key)
// writes it durably and drops the memory copy. After a crash a staged
// object is gone. It is for an object made durable elsewhere first (the
// embedded coordinator keeps a small object's bytes in its own synced
// commit and persists them after; see coordinator.Options.Inline). Staging writes nothing
// because a file create and rename on the hot path contend with the
// fsyncs beside it: a scratch build that staged through files showed 1.08
// ms per Stage on average (its floe_objectstore_request_duration_seconds,
// op "stage") under issue 11's load of 100 produces a second, against 15
// us from memory (Instrumented no longer times Stage). Stage keeps data:
// the caller must not change it.
func (d *Dir) Stage(ctx context.Context, key string, data []byte) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("stage %s: %w", key, err)
	}
	if err := checkDirKey(key); err != nil { // no path: Stage writes nothing
		return fmt.Errorf("stage: %w", err)
	}
	d.staged.Lock()
	if d.staged.m == nil {
		d.staged.m = make(map[string]stagedObject)
	}
	d.staged.m[key] = stagedObject{data: data, at: time.Now()}
	d.staged.Unlock()
	return nil
}

// Persist writes the staged objects among keys to their files and makes
// them durable, as Put would each, but a large group with one file-system
// sync for all (syncfs(2) on Linux; see syncFS): it costs the device one
// journal commit and one cache flush instead of two each. It then drops
// their memory copies. Keys not staged (put or deleted since) are skipped.
func (d *Dir) Persist(ctx context.Context, keys []string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("persist: %w", err)
	}
	type file struct {
		key string
		at  time.Time
	}
	var (
		files []file
		paths []string
	)
	for _, key := range keys {
		o, ok := d.stagedInfo(key)
		if !ok {
			continue // persisted or deleted since
		}
		p, err := d.path(key)
		if err == nil {
			err = d.writeFileUnsynced(p, o.data)
		}
		if err != nil {
			return fmt.Errorf("persist %s: %w", key, err)
		}
		d.files.invalidate(key)
		files = append(files, file{key, o.at})
		paths = append(paths, p)
	}
	if len(files) == 0 {
		return nil
	}
	root, err := os.Open(d.root)
	if err != nil {
		return fmt.Errorf("persist: %w", err)
	}
	err = syncFS(root, paths)
	if cerr := root.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("persist %d objects: sync: %w", len(files), err)
	}
	d.staged.Lock()
	for _, f := range files {
		// Unless staged again meanwhile.
		if o, ok := d.staged.m[f.key]; ok && o.at.Equal(f.at) {
			delete(d.staged.m, f.key)
		}
	}
	d.staged.Unlock()
	return nil
}

// writeFileUnsynced writes data to a temporary file beside p and renames
// it to p, syncing nothing (but new directories): Persist syncs them all.
func (d *Dir) writeFileUnsynced(p string, data []byte) error {
	dir := filepath.Dir(p)
	if err := d.mkdirAllSync(dir); err != nil {
		return err
	}
	tmp, err := d.w.writeTempWith(dir, data, 0, false)
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, p); err != nil {
		_ = os.Remove(tmp)
		return err
	}
	return nil
}

// stagedObject is an object Stage holds in memory.
type stagedObject struct {
	data []byte
	at   time.Time
}

// stagedInfo returns a staged object, if key is one.
func (d *Dir) stagedInfo(key string) (stagedObject, bool) {
	d.staged.RLock()
	o, ok := d.staged.m[key]
	d.staged.RUnlock()
	return o, ok
}

// unstage drops key's memory copy, once written or deleted.
func (d *Dir) unstage(key string) {
	d.staged.Lock()
	delete(d.staged.m, key)
	d.staged.Unlock()
}

// writeFileAtomic writes data to a temporary file in dir, fsyncs it,
// renames it to p and fsyncs dir, so that p is either absent or complete.
func (d *Dir) writeFileAtomic(dir, p string, data []byte) error {
	tmp, err := d.w.writeTemp(dir, data)
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, p); err != nil {
		_ = os.Remove(tmp)
		return err
	}
	return syncDir(dir)
}

// mkdirAllSync creates dir and any missing parents below the root, and
// fsyncs the parent of each directory it creates so that the new entries
// survive a crash.
func (d *Dir) mkdirAllSync(dir string) error {
	if fi, err := os.Stat(dir); err == nil {
		if !fi.IsDir() {
			return fmt.Errorf("%s is not a directory", dir)
		}
		return nil
	}
	if dir == d.root || len(dir) < len(d.root) {
		return os.MkdirAll(dir, 0o755)
	}
	parent := filepath.Dir(dir)
	if err := d.mkdirAllSync(parent); err != nil {
		return err
	}
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return syncDir(parent)
}

// syncEach makes files and their directories durable with an fsync each.
func syncEach(files []string) error {
	dirs := make(map[string]bool)
	for _, p := range files {
		if err := syncPath(p); err != nil {
			return err
		}
		dirs[filepath.Dir(p)] = true
	}
	for dir := range dirs {
		if err := syncDir(dir); err != nil {
			return err
		}
	}
	return nil
}

// syncDir fsyncs a directory, making renames and creations in it durable.
func syncDir(dir string) error {
	if err := syncPath(dir); err != nil {
		return fmt.Errorf("sync dir %s: %w", dir, err)
	}
	return nil
}

// syncPath fsyncs the file or directory at p.
func syncPath(p string) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// GetRange reads length bytes of key from offset with one ReadAt: with
// O_DIRECT for a large range where Put writes with it (see readDirect).
func (d *Dir) GetRange(ctx context.Context, key string, offset, length int64) ([]byte, error) {
	of, p, n, staged, err := d.openRange(ctx, key, offset, length)
	if err != nil || of == nil {
		return slices.Clone(staged), err
	}
	defer d.files.release(of)
	return d.readOpen(of, p, key, offset, n, nil)
}

// readOpen reads n bytes at offset of key's open file of, at path p: with
// O_DIRECT, into a buffer of its own, for a large range where Put writes
// with it (see readDirect); else into dst, made if nil.
func (d *Dir) readOpen(of *openFile, p, key string, offset, n int64, dst []byte) ([]byte, error) {
	if n >= directReadMin && d.w.direct() {
		buf, err := readDirect(p, offset, n)
		if !errors.Is(err, errDirectRefused) {
			if err != nil {
				return nil, fmt.Errorf("get %s [%d, +%d): %w", key, offset, n, err)
			}
			return buf, nil
		}
	}
	if dst == nil {
		dst = make([]byte, n)
	}
	got, err := readFull(of.f, key, dst[:n], offset)
	if err != nil {
		return nil, err
	}
	return dst[:got], nil
}

// openRange opens key for a read of length bytes (to the end if length <
// 0) at offset and returns the file (held: the caller releases it), its
// path, and the length that exists there; or, for a staged object, no file
// and the staged bytes of the range.
func (d *Dir) openRange(ctx context.Context, key string, offset, length int64) (of *openFile, p string, n int64, staged []byte, err error) {
	if err := ctx.Err(); err != nil {
		return nil, "", 0, nil, fmt.Errorf("get %s: %w", key, err)
	}
	if p, err = d.path(key); err != nil {
		return nil, "", 0, nil, fmt.Errorf("get: %w", err)
	}
	if o, ok := d.stagedInfo(key); ok {
		n, err := checkRange(key, int64(len(o.data)), offset, length)
		if err != nil {
			return nil, "", 0, nil, err
		}
		return nil, p, n, o.data[offset : offset+n : offset+n], nil
	}
	if of, err = d.files.acquire(key, p); err != nil {
		return nil, "", 0, nil, fmt.Errorf("get %s: %w", key, mapNotExist(err))
	}
	if n, err = checkRange(key, of.size, offset, length); err != nil {
		d.files.release(of)
		return nil, "", 0, nil, err
	}
	return of, p, n, nil, nil
}

// readFull reads len(buf) bytes of f at offset, an end of file right after
// them being no error.
func readFull(f *os.File, key string, buf []byte, offset int64) (int, error) {
	got, err := f.ReadAt(buf, offset)
	if err != nil && !(errors.Is(err, io.EOF) && got == len(buf)) {
		return 0, fmt.Errorf("get %s [%d, +%d): %w", key, offset, len(buf), err)
	}
	return got, nil
}

// ReadRangeAt reads key's bytes from offset into dst, as GetRange of
// len(dst) bytes does but into the caller's buffer, and returns how many it
// read: fewer than len(dst) only where the object ends. A range of
// directReadMin or more is read with O_DIRECT, as GetRange reads it, and
// copied. The tier jobs read their WAL ranges this way, into buffers they
// reuse (a third of the lifecycle soak's allocations were these reads).
func (d *Dir) ReadRangeAt(ctx context.Context, key string, offset int64, dst []byte) (int, error) {
	of, p, n, staged, err := d.openRange(ctx, key, offset, int64(len(dst)))
	if err != nil || of == nil {
		return copy(dst, staged), err
	}
	defer d.files.release(of)
	b, err := d.readOpen(of, p, key, offset, n, dst)
	if err != nil {
		return 0, err
	}
	if len(b) > 0 && &b[0] != &dst[0] {
		copy(dst, b) // read with O_DIRECT into its own aligned buffer
	}
	return len(b), nil
}

// Delete removes key; a missing key is not an error. The removal is not
// fsynced: a delete lost in a crash is found again by garbage collection.
func (d *Dir) Delete(ctx context.Context, key string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("delete %s: %w", key, err)
	}
	p, err := d.path(key)
	if err != nil {
		return fmt.Errorf("delete: %w", err)
	}
	d.unstage(key)
	fi, err := os.Lstat(p)
	if err != nil {
		if isNotExist(err) {
			return nil
		}
		return fmt.Errorf("delete %s: %w", key, err)
	}
	if fi.IsDir() {
		return nil // a directory is not an object
	}
	err = os.Remove(p)
	d.files.invalidate(key)
	if err != nil && !isNotExist(err) {
		return fmt.Errorf("delete %s: %w", key, err)
	}
	return nil
}

// List walks only the directories that can hold keys starting with prefix
// and returns the objects found, in key order.
func (d *Dir) List(ctx context.Context, prefix string) ([]ObjectInfo, error) {
	return d.list(ctx, prefix, true)
}

// ListKeys returns the keys of the objects whose keys start with prefix, in
// key order, as List does but without a stat of each file for its size and
// time: the collector lists every WAL object of the grace period (over
// 100,000 at 20 MiB/s and the default 10 minutes) each round, and asks the
// size and time only of the few its coordinator does not know.
func (d *Dir) ListKeys(ctx context.Context, prefix string) ([]string, error) {
	infos, err := d.list(ctx, prefix, false)
	if err != nil {
		return nil, err
	}
	keys := make([]string, len(infos))
	for i, o := range infos {
		keys[i] = o.Key
	}
	return keys, nil
}

// list is List, with sizes and times only if stat.
func (d *Dir) list(ctx context.Context, prefix string, stat bool) ([]ObjectInfo, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("list %s: %w", prefix, err)
	}
	base := prefix[:strings.LastIndex(prefix, "/")+1] // "" or ends in '/'
	if base != "" && CheckKey(strings.TrimSuffix(base, "/")) != nil {
		return nil, nil // no valid key lives under such a prefix
	}
	start := filepath.Join(d.root, filepath.FromSlash(base))
	var out []ObjectInfo
	err := filepath.WalkDir(start, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			if isNotExist(err) {
				return nil // removed while we walked, or no such prefix
			}
			return err
		}
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		if p == d.root {
			return nil
		}
		rel, err := filepath.Rel(d.root, p)
		if err != nil {
			return err
		}
		key := filepath.ToSlash(rel)
		if e.IsDir() {
			if p == start || strings.HasPrefix(key+"/", prefix) || strings.HasPrefix(prefix, key+"/") {
				return nil
			}
			return filepath.SkipDir
		}
		if !e.Type().IsRegular() || strings.HasPrefix(e.Name(), tmpPrefix) || !strings.HasPrefix(key, prefix) {
			return nil
		}
		if !stat {
			out = append(out, ObjectInfo{Key: key})
			return nil
		}
		fi, err := e.Info()
		if err != nil {
			if isNotExist(err) {
				return nil
			}
			return err
		}
		out = append(out, ObjectInfo{Key: key, Size: fi.Size(), LastModified: fi.ModTime()})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", prefix, err)
	}
	// Staged objects not yet on disk, merged outside the lock: Stage is on
	// the produce path.
	var staged []ObjectInfo
	d.staged.RLock()
	for key, o := range d.staged.m {
		if strings.HasPrefix(key, prefix) {
			staged = append(staged, ObjectInfo{Key: key, Size: int64(len(o.data)), LastModified: o.at})
		}
	}
	d.staged.RUnlock()
	if len(staged) > 0 {
		onDisk := make(map[string]bool, len(out))
		for _, i := range out {
			onDisk[i.Key] = true
		}
		for _, i := range staged {
			if !onDisk[i.Key] {
				out = append(out, i)
			}
		}
	}
	// Walk order is per directory; key order differs when a name sorts
	// before '/' (e.g. "a.b" < "a/b"), so sort the full keys.
	slices.SortFunc(out, func(a, b ObjectInfo) int { return strings.Compare(a.Key, b.Key) })
	return out, nil
}

// Head returns the size and modification time of key.
func (d *Dir) Head(ctx context.Context, key string) (ObjectInfo, error) {
	if err := ctx.Err(); err != nil {
		return ObjectInfo{}, fmt.Errorf("head %s: %w", key, err)
	}
	p, err := d.path(key)
	if err != nil {
		return ObjectInfo{}, fmt.Errorf("head: %w", err)
	}
	if o, ok := d.stagedInfo(key); ok {
		return ObjectInfo{Key: key, Size: int64(len(o.data)), LastModified: o.at}, nil
	}
	fi, err := os.Stat(p)
	if err != nil {
		return ObjectInfo{}, fmt.Errorf("head %s: %w", key, mapNotExist(err))
	}
	if !fi.Mode().IsRegular() {
		return ObjectInfo{}, fmt.Errorf("head %s: %w", key, ErrNotFound)
	}
	return ObjectInfo{Key: key, Size: fi.Size(), LastModified: fi.ModTime()}, nil
}

// isNotExist reports whether err means the path does not exist, including
// ENOTDIR: a path through a regular file, which is no object either.
func isNotExist(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)
}

// mapNotExist turns a does-not-exist error into ErrNotFound and returns
// other errors unchanged.
func mapNotExist(err error) error {
	if isNotExist(err) {
		return ErrNotFound
	}
	return err
}
