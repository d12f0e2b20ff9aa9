package cache

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// Disk tier file layout: one file per chunk, named by a sequence number so
// that a chunk written again after eviction never races its old file.
//
//	<Dir>/<seq %016x>.chunk = chunk bytes | CRC-32C of the bytes (4 bytes, big endian)
const (
	diskSuffix = ".chunk"
	tmpSuffix  = ".tmp"
	crcLen     = 4
	// diskQueueLen bounds chunks evicted from memory and waiting to be
	// written: memory beyond MaxBytes held for the disk tier is at most
	// diskQueueLen chunks. When the writer falls behind, evictions are not
	// written.
	diskQueueLen = 8
)

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// diskTier holds chunks evicted from memory in files under dir, bounded by
// max bytes, oldest file removed first (FIFO). Reads verify a CRC, so a torn
// or damaged file is a miss, never bad data.
type diskTier struct {
	dir   string
	max   int64
	log   *slog.Logger
	stats *counters
	queue chan diskWrite

	mu struct {
		sync.Mutex
		files map[chunkKey]*diskFile
		order []*diskFile // FIFO: order[head] is the oldest
		head  int
		bytes int64 // bytes of files written or being written
		seq   uint64
	}
}

type diskFile struct {
	key  chunkKey
	path string
	size int64 // chunk bytes, without the CRC
}

type diskWrite struct {
	key  chunkKey
	data []byte
}

// newDiskTier creates dir if needed and removes chunk files left there by a
// previous process: their index was in memory and is gone.
func newDiskTier(dir string, maxBytes int64, log *slog.Logger, stats *counters) (*diskTier, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("cache: disk tier: %w", err)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("cache: disk tier: %w", err)
	}
	for _, de := range ents {
		if n := de.Name(); !de.IsDir() && (strings.HasSuffix(n, diskSuffix) || strings.HasSuffix(n, tmpSuffix)) {
			if err := os.Remove(filepath.Join(dir, n)); err != nil && !errors.Is(err, os.ErrNotExist) {
				return nil, fmt.Errorf("cache: disk tier: %w", err)
			}
		}
	}
	d := &diskTier{dir: dir, max: maxBytes, log: log, stats: stats, queue: make(chan diskWrite, diskQueueLen)}
	d.mu.files = make(map[chunkKey]*diskFile)
	return d, nil
}

// offer queues an evicted chunk for writing without blocking; it is dropped
// when the writer is behind. Safe to call with Cache.mu held: it takes no lock.
func (d *diskTier) offer(k chunkKey, data []byte) {
	select {
	case d.queue <- diskWrite{key: k, data: data}:
	default:
	}
}

// run writes queued chunks until ctx ends.
func (d *diskTier) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case w := <-d.queue:
			if err := d.write(w.key, w.data); err != nil {
				d.log.Warn("cache: disk tier write failed", "key", w.key.key, "chunk", w.key.idx, "err", err)
			}
		}
	}
}

// write stores one chunk, first removing the oldest files until it fits.
func (d *diskTier) write(k chunkKey, data []byte) error {
	size := int64(len(data))
	if size > d.max {
		return nil
	}
	d.mu.Lock()
	if d.mu.files[k] != nil {
		d.mu.Unlock()
		return nil // already on disk: objects never change
	}
	var victims []string
	for d.mu.bytes+size > d.max && d.mu.head < len(d.mu.order) {
		old := d.mu.order[d.mu.head]
		d.mu.order[d.mu.head] = nil
		d.mu.head++
		if d.mu.files[old.key] == old {
			delete(d.mu.files, old.key)
		}
		d.mu.bytes -= old.size
		victims = append(victims, old.path)
	}
	if d.mu.head > 64 && d.mu.head*2 > len(d.mu.order) {
		d.mu.order = append([]*diskFile(nil), d.mu.order[d.mu.head:]...)
		d.mu.head = 0
	}
	if d.mu.bytes+size > d.max { // only files being written remain
		d.mu.Unlock()
		return nil
	}
	d.mu.bytes += size
	d.mu.seq++
	f := &diskFile{key: k, size: size, path: filepath.Join(d.dir, fmt.Sprintf("%016x%s", d.mu.seq, diskSuffix))}
	d.mu.Unlock()

	for _, p := range victims {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			d.log.Warn("cache: disk tier remove failed", "path", p, "err", err)
		}
	}
	if err := writeChunkFile(f.path, data); err != nil {
		d.mu.Lock()
		d.mu.bytes -= size
		d.mu.Unlock()
		return err
	}
	d.mu.Lock()
	d.mu.files[k] = f
	d.mu.order = append(d.mu.order, f)
	d.mu.Unlock()
	d.stats.diskWrites.Add(1)
	return nil
}

// writeChunkFile writes data and its CRC to a temporary file and renames it
// into place, so a reader never sees a partial file under path.
func writeChunkFile(path string, data []byte) error {
	tmp := path + tmpSuffix
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	var sum [crcLen]byte
	binary.BigEndian.PutUint32(sum[:], crc32.Checksum(data, crcTable))
	_, err = f.Write(data)
	if err == nil {
		_, err = f.Write(sum[:])
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}

// read returns chunk k if the disk tier holds it with exactly size bytes and
// a good CRC. A missing, short or damaged file is a miss (and forgotten).
func (d *diskTier) read(k chunkKey, size int64) ([]byte, bool) {
	d.mu.Lock()
	f := d.mu.files[k]
	d.mu.Unlock()
	if f == nil || f.size != size {
		return nil, false
	}
	data, err := readChunkFile(f.path, size)
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) { // not exist: evicted meanwhile
			d.log.Warn("cache: disk tier read failed", "key", k.key, "chunk", k.idx, "err", err)
		}
		d.mu.Lock()
		if d.mu.files[k] == f {
			delete(d.mu.files, k) // its bytes are released when FIFO reaches it
		}
		d.mu.Unlock()
		return nil, false
	}
	return data, true
}

var errBadChunkFile = errors.New("cache: disk tier: bad chunk file")

func readChunkFile(path string, size int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	buf := make([]byte, size+crcLen)
	if _, err := io.ReadFull(f, buf); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", errBadChunkFile, path, err)
	}
	data, sum := buf[:size:size], buf[size:]
	if binary.BigEndian.Uint32(sum) != crc32.Checksum(data, crcTable) {
		return nil, fmt.Errorf("%w: %s: checksum mismatch", errBadChunkFile, path)
	}
	return data, nil
}

// bytes is the disk space the tier holds or is writing.
func (d *diskTier) bytes() int64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.mu.bytes
}
