package objectstore

import (
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"
)

// How Dir.Put writes an object's bytes. On Linux the temporary file of an
// object of directWriteMin bytes or more is opened with O_DIRECT: the
// bytes go from memory to the device without a copy into the page cache.
// BenchmarkDirPutObject measured an 8 MiB object
// at 2.3-2.6 ms of CPU and 727-761 MB/s, against 10-30 ms and 231-533 MB/s
// through the page cache (the copy, and reclaiming a cache full of
// objects nobody reads back: the chunk cache holds the hot ones); at
// saturation the embedded default went from 213-224 to 418-435 MiB/s.
// Redpanda writes its log the same way. A Dir on a file system that
// refuses O_DIRECT (EINVAL or EOPNOTSUPP) writes through the page cache
// from then on. The bytes in the file are the same either way, and so is
// the crash story: the file is fsynced (its length and the device's
// cache) before the rename.
//
// O_DIRECT needs the memory, the file offset and the length of each write
// aligned to the device's logical block (512 B or 4 KiB; directBlock
// covers both). Whole blocks of a block-aligned buffer are written from it
// (Go puts every allocation of 32 KiB or more, such as ingest's object
// buffers, on a page boundary); the rest goes through an aligned scratch
// buffer, its last block padded with zeros, and the file is then cut back
// to the object's length before the fsync.
const (
	directBlock   = 4096
	directScratch = 1 << 20
)

// errDirectRefused is an open or write that O_DIRECT refused (EINVAL or
// EOPNOTSUPP): the file system does not support it or wants a larger
// alignment.
var errDirectRefused = errors.New("objectstore: O_DIRECT refused")

// directWriteMin is the smallest object Put writes with O_DIRECT. What
// O_DIRECT saves, the copy into the page cache and its reclaim, is nothing
// for a small object, and a small object kept in the page cache is read
// back from it: by consolidation, which reads a low-load partition's WAL
// objects soon after, and by a view's exact reads. A direct write of a
// small object also costs more device writes: its padded block waits for
// the device, then the fsync commits the truncate that cuts it back.
// BenchmarkDirPut (1 KiB, each pair of cases run one after the other) had
// the page cache ahead in all 8 pairs of two runs, by 0.08-0.66 ms: p50
// 1.15-1.27 against 1.24-1.49 ms back to back, 2.01-2.27 against
// 2.29-2.42 ms paced at 100/s (an earlier run, each case run twice in a
// row, had them either way round: the device's own latency drifts more
// than that from minute to minute). It is directReadMin, so an object
// too small for direct writes is also read through the page cache.
const directWriteMin = directReadMin

// writer writes Dir's temporary files, with O_DIRECT while the file
// system takes it, for objects of directMin bytes or more.
type writer struct {
	noDirect  atomic.Bool // set once O_DIRECT was refused
	scratch   sync.Pool   // *[]byte of directScratch bytes, block-aligned
	directMin int         // directWriteMin; tests lower it
}

func (w *writer) direct() bool { return openDirectFlag != 0 && !w.noDirect.Load() }

// directFor reports whether an object of n bytes is written with O_DIRECT.
func (w *writer) directFor(n int) bool { return n >= w.directMin && w.direct() }

func (w *writer) refuseDirect() { w.noDirect.Store(true) }

// createTemp creates a new temporary file in dir for writing, with extra
// open flags.
func createTemp(dir string, flags int) (*os.File, error) {
	for range 100 {
		name := filepath.Join(dir, tmpPrefix+strconv.FormatUint(rand.Uint64(), 36))
		f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL|flags, 0o644)
		if errors.Is(err, os.ErrExist) {
			continue
		}
		return f, err
	}
	return nil, &os.PathError{Op: "createtemp", Path: filepath.Join(dir, tmpPrefix+"*"), Err: os.ErrExist}
}

// writeTemp writes data to a new temporary file in dir and fsyncs it. It
// returns the file's path; on error nothing is left behind.
func (w *writer) writeTemp(dir string, data []byte) (string, error) {
	if w.directFor(len(data)) {
		tmp, err := w.writeTempWith(dir, data, openDirectFlag, true)
		if !errors.Is(err, errDirectRefused) {
			return tmp, err
		}
		w.refuseDirect()
	}
	return w.writeTempWith(dir, data, 0, true)
}

// writeTempWith writes data to a new temporary file in dir, opened with
// extra flags, and fsyncs it if sync (Persist syncs its files together).
func (w *writer) writeTempWith(dir string, data []byte, flags int, sync bool) (tmp string, err error) {
	f, err := openTemp(dir, flags)
	if err != nil {
		return "", err
	}
	tmp = f.Name()
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = os.Remove(tmp)
		}
	}()
	if flags != 0 {
		err = w.writeDirect(f, data)
	} else {
		_, err = f.Write(data)
	}
	if err != nil {
		return "", err
	}
	if sync {
		if err := f.Sync(); err != nil {
			return "", err
		}
	}
	return tmp, f.Close()
}

// openTemp creates a temporary file in dir opened with flags, 0644
// whatever the umask, as objects always were; errDirectRefused when flags
// ask for O_DIRECT and the file system refuses it.
func openTemp(dir string, flags int) (*os.File, error) {
	f, err := createTemp(dir, flags)
	if refused(err) && flags != 0 {
		return nil, errDirectRefused
	}
	if err != nil {
		return nil, err
	}
	if err := f.Chmod(0o644); err != nil {
		_ = f.Close()
		_ = os.Remove(f.Name())
		return nil, err
	}
	return f, nil
}

// writeDirect writes data to f, opened with O_DIRECT and empty.
func (w *writer) writeDirect(f *os.File, data []byte) error {
	size := int64(len(data))
	var off int64
	if whole := len(data) &^ (directBlock - 1); whole > 0 && blockAligned(data) {
		if err := writeAt(f, data[:whole], 0); err != nil {
			return err
		}
		data, off = data[whole:], int64(whole)
	}
	if len(data) > 0 {
		bp := w.scratchBuf()
		defer w.scratch.Put(bp)
		buf := *bp
		for len(data) > 0 {
			n := copy(buf, data)
			padded := (n + directBlock - 1) &^ (directBlock - 1)
			clear(buf[n:padded])
			if err := writeAt(f, buf[:padded], off); err != nil {
				return err
			}
			data, off = data[n:], off+int64(n)
		}
	}
	if size%directBlock != 0 {
		return f.Truncate(size)
	}
	return nil
}

func writeAt(f *os.File, b []byte, off int64) error {
	_, err := f.WriteAt(b, off)
	if refused(err) {
		return errDirectRefused
	}
	return err
}

// refused reports whether err is a file system refusing O_DIRECT: EINVAL
// (Linux's answer for an unsupported flag or alignment), or EOPNOTSUPP.
func refused(err error) bool {
	return errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.EOPNOTSUPP)
}

func (w *writer) scratchBuf() *[]byte {
	if bp, ok := w.scratch.Get().(*[]byte); ok {
		return bp
	}
	b := alignedBuf(directScratch)
	return &b
}

// alignedBuf returns n bytes starting on a directBlock boundary.
func alignedBuf(n int) []byte {
	b := make([]byte, n+directBlock)
	skip := (directBlock - int(uintptr(unsafe.Pointer(&b[0]))%directBlock)) % directBlock
	return b[skip : skip+n : skip+n]
}

func blockAligned(b []byte) bool {
	return uintptr(unsafe.Pointer(unsafe.SliceData(b)))%directBlock == 0
}

// directReadMin is the smallest range GetRange reads with O_DIRECT. Put's
// large objects are not in the page cache, so a read goes to the device
// either way; a large one (a cache chunk, consolidation's read of a WAL
// object) costs less CPU read directly, without the page cache's pages and
// copy: BenchmarkDirGetRangeCold measured 2.0 ms of CPU per 4 MiB chunk
// against 3.3-3.6 ms, at about the same rate with the CPU idle. It shows
// at saturation, where consolidation reads WAL objects back while
// producers write: with every range read through the page cache (a
// scratch build, alternating with this one) the saturation produce phase of
// scripts/bench-read.sh's catch-up ran at 176-259 MiB/s against 376-399.
// A consumer catching up past the chunk cache, the page cache dropped,
// read about as fast either way (149-215 MiB/s direct, 185-233 through the
// page cache). A small range (a view's batch, a segment's header) reads
// through the page cache, which keeps it for the next reader.
const directReadMin = 256 << 10

// readDirect reads n bytes of the file at p from offset with O_DIRECT: the
// blocks around the range into an aligned buffer, and returns the range
// (capacity trimmed). errDirectRefused when the file system refuses it.
func readDirect(p string, offset, n int64) ([]byte, error) {
	f, err := os.OpenFile(p, os.O_RDONLY|openDirectFlag, 0)
	if refused(err) {
		return nil, errDirectRefused
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	start := offset &^ (directBlock - 1)
	end := (offset + n + directBlock - 1) &^ (directBlock - 1)
	buf := alignedBuf(int(end - start))
	got, err := f.ReadAt(buf, start)
	if refused(err) {
		return nil, errDirectRefused
	}
	if int64(got) < offset-start+n {
		if err == nil || errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	lo := offset - start
	return buf[lo : lo+n : lo+n], nil
}
