package cache

import (
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// Defaults applied by New to zero-valued Options fields.
const (
	DefaultChunkBytes           = 4 << 20
	DefaultMaxBytes             = 512 << 20
	DefaultDiskBytes            = 4 << 30
	DefaultReadAhead            = 1
	DefaultReadAheadConcurrency = 4
	// ReadAheadS3 and ReadAheadConcurrencyS3 are node's defaults on S3,
	// where a GET's first byte takes about 15 ms (p99 60) and a connection
	// streams 80-100 MiB/s: a 4 MiB chunk takes about 60 ms, so a reader
	// with one chunk ahead catches up at about 60 MiB/s. On the
	// s3-standard profile (BenchmarkTieredCatchUp, 2026-12-06) one
	// partition read from segments went from 58 to 111-149 MiB/s (eight
	// ahead did no better: a fetch returns 1 MiB of a partition, and its
	// round trip bounds one partition), and a consumer of the whole
	// 8-partition topic reads 243-259 MiB/s at 272-284 GETs per GiB.
	ReadAheadS3            = 4
	ReadAheadConcurrencyS3 = 16
	DefaultLoadTimeout     = 30 * time.Second
)

// Options configure a Cache. The zero value is usable: every zero field takes
// its default.
type Options struct {
	// ChunkBytes is the size of one aligned chunk, the unit of loading and
	// eviction (--cache-chunk-bytes). Larger chunks mean fewer GETs per byte
	// (cheaper on S3) but more bytes loaded for a small read.
	// Default: 4 MiB.
	ChunkBytes int64
	// MaxBytes bounds the memory held by cached chunks, including chunks
	// being loaded (--cache-bytes). Must be at least ChunkBytes.
	// Default: 512 MiB.
	MaxBytes int64
	// Dir enables a disk tier under this directory (--cache-dir): chunks
	// evicted from memory are written there and read back on a memory miss
	// before going to the store. The tier does not survive a restart: New
	// removes chunk files left in Dir. Default: "" (memory only).
	Dir string
	// DiskBytes bounds the disk tier; its oldest chunk files are removed
	// first. Only used when Dir is set. Default: 4 GiB.
	DiskBytes int64
	// ReadAhead is how many chunks past the current one are prefetched
	// for a sequential reader (--cache-read-ahead). Negative disables
	// read-ahead. Default: 1 (node: ReadAheadS3 on S3).
	ReadAhead int
	// ReadAheadConcurrency bounds the read-ahead loads in flight at once
	// (--cache-read-ahead-concurrency); a read-ahead that finds no free
	// slot is skipped. Default: 4 (node: ReadAheadConcurrencyS3 on S3).
	ReadAheadConcurrency int
	// LoadTimeout bounds one chunk load (disk read or GET), independent of
	// the readers waiting for it. Default: 30s.
	LoadTimeout time.Duration
	// Observer, if set, is told about every chunk load (for latency
	// histograms). Default: nil.
	Observer Observer
	// Logger receives load and disk-tier errors. Default: discard.
	Logger *slog.Logger
}

// withDefaults returns o with every zero field set to its default.
func (o Options) withDefaults() Options {
	if o.ChunkBytes == 0 {
		o.ChunkBytes = DefaultChunkBytes
	}
	if o.MaxBytes == 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.Dir != "" && o.DiskBytes == 0 {
		o.DiskBytes = DefaultDiskBytes
	}
	if o.ReadAhead == 0 {
		o.ReadAhead = DefaultReadAhead
	}
	if o.ReadAheadConcurrency == 0 {
		o.ReadAheadConcurrency = DefaultReadAheadConcurrency
	}
	if o.LoadTimeout == 0 {
		o.LoadTimeout = DefaultLoadTimeout
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

// Validate reports every invalid setting at once. Zero fields are valid:
// they take their defaults.
func (o Options) Validate() error {
	o = o.withDefaults()
	var errs []error
	if o.ChunkBytes < 0 {
		errs = append(errs, fmt.Errorf("cache: chunk bytes %d is negative", o.ChunkBytes))
	}
	if o.MaxBytes < 0 {
		errs = append(errs, fmt.Errorf("cache: max bytes %d is negative", o.MaxBytes))
	}
	if o.ChunkBytes > 0 && o.MaxBytes > 0 && o.MaxBytes < o.ChunkBytes {
		errs = append(errs, fmt.Errorf("cache: max bytes %d is less than one chunk (%d)", o.MaxBytes, o.ChunkBytes))
	}
	if o.Dir != "" && o.DiskBytes < o.ChunkBytes {
		errs = append(errs, fmt.Errorf("cache: disk bytes %d is less than one chunk (%d)", o.DiskBytes, o.ChunkBytes))
	}
	if o.ReadAheadConcurrency < 0 {
		errs = append(errs, fmt.Errorf("cache: read-ahead concurrency %d is negative", o.ReadAheadConcurrency))
	}
	if o.LoadTimeout < 0 {
		errs = append(errs, fmt.Errorf("cache: load timeout %v is negative", o.LoadTimeout))
	}
	return errors.Join(errs...)
}
