package record

import (
	"bytes"
	"encoding/binary"
	"errors"
	"runtime"
	"slices"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// Decoders are pooled with the bytes.Reader they read from, so a steady stream of
// batches decompresses without allocating. Each streams: it holds its codec's window
// (gzip 32 KiB, lz4 one block of at most 4 MiB, zstd the frame's window), never the
// whole output.

type gzipDecoder struct {
	r   gzip.Reader
	src bytes.Reader
}

type lz4Decoder struct {
	r   *lz4.Reader
	src bytes.Reader
}

// zstdDecoder remembers the limit its decoder was built with, to reset it only when a
// call asks for another.
type zstdDecoder struct {
	d     *zstd.Decoder
	src   bytes.Reader
	limit int
}

var (
	gzipDecoders = sync.Pool{New: func() any { return new(gzipDecoder) }}
	lz4Decoders  = sync.Pool{New: func() any { return &lz4Decoder{r: lz4.NewReader(nil)} }}
	zstdDecoders sync.Pool // *zstdDecoder, made by getZstdDecoder
)

// getZstdDecoder takes a decoder from the pool, or makes one, that refuses frames whose
// window is over limit bytes. Put it back in zstdDecoders after use.
func getZstdDecoder(limit int) (*zstdDecoder, error) {
	if zd, _ := zstdDecoders.Get().(*zstdDecoder); zd != nil {
		if zd.limit != limit {
			if err := zd.d.ResetWithOptions(nil, zstd.WithDecoderMaxMemory(uint64(limit))); err != nil {
				return nil, err
			}
			zd.limit = limit
		}
		return zd, nil
	}
	d, err := zstd.NewReader(nil,
		zstd.WithDecoderConcurrency(1), // decodes on the reading goroutine only
		zstd.WithDecoderLowmem(true),
		zstd.WithDecoderMaxMemory(uint64(limit)), // when streaming: the largest window
	)
	if err != nil {
		return nil, err
	}
	zd := &zstdDecoder{d: d, limit: limit}
	runtime.AddCleanup(zd, func(d *zstd.Decoder) { d.Close() }, d)
	return zd, nil
}

// xerialMagic starts snappy data framed by the Java client's xerial snappy-java stream:
// the magic, a big-endian version and minimum compatible version (both 1), then blocks,
// each a big-endian int32 length and a raw snappy block.
var xerialMagic = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

const (
	xerialHeaderSize = 16
	xerialBlockSize  = 32 << 10 // what snappy-java writes
)

var errXerial = errors.New("malformed xerial framing")

// Encoders, for Build.

type gzipEncoder struct{ w *gzip.Writer }

var (
	gzipEncoders = sync.Pool{New: func() any { return &gzipEncoder{w: gzip.NewWriter(nil)} }}
	lz4Encoders  = sync.Pool{New: func() any {
		w := lz4.NewWriter(nil)
		// 64 KiB blocks, as the Java client writes, keep consumers' buffers small.
		_ = w.Apply(lz4.BlockSizeOption(lz4.Block64Kb))
		return w
	}}
	zstdEncoders = sync.Pool{New: func() any {
		e, _ := zstd.NewWriter(nil,
			zstd.WithEncoderConcurrency(1),
			zstd.WithWindowSize(64<<10), // as franz-go: small windows for consumers
			zstd.WithZeroFrames(true),
		)
		ze := &zstdEncoder{e: e}
		runtime.AddCleanup(ze, func(e *zstd.Encoder) { e.Close() }, e)
		return ze
	}}
)

type zstdEncoder struct{ e *zstd.Encoder }

// appendSnappy appends src encoded as one raw snappy block.
func appendSnappy(dst, src []byte) ([]byte, error) {
	n := s2.MaxEncodedLen(len(src))
	if n < 0 {
		return nil, errors.New("too large for one snappy block")
	}
	dst = slices.Grow(dst, n)
	at := len(dst)
	block := s2.EncodeSnappy(dst[at:at+n], src) // encodes in place, given the room
	return dst[:at+len(block)], nil
}

// appendWriter is an io.Writer appending to a slice.
type appendWriter struct{ b []byte }

func (w *appendWriter) Write(p []byte) (int, error) { w.b = append(w.b, p...); return len(p), nil }

// compress appends src compressed with codec to dst.
func compress(dst []byte, codec Codec, src []byte, xerial bool) ([]byte, error) {
	switch codec {
	case CodecGzip:
		ge := gzipEncoders.Get().(*gzipEncoder)
		defer gzipEncoders.Put(ge)
		w := &appendWriter{b: dst}
		ge.w.Reset(w)
		if _, err := ge.w.Write(src); err != nil {
			return nil, err
		}
		if err := ge.w.Close(); err != nil {
			return nil, err
		}
		ge.w.Reset(nil)
		return w.b, nil
	case CodecSnappy:
		if !xerial {
			return appendSnappy(dst, src)
		}
		dst = append(dst, xerialMagic...)
		dst = binary.BigEndian.AppendUint32(dst, 1) // version
		dst = binary.BigEndian.AppendUint32(dst, 1) // minimum compatible version
		for len(src) > 0 {
			n := min(len(src), xerialBlockSize)
			at := len(dst)
			dst, _ = appendSnappy(append(dst, 0, 0, 0, 0), src[:n]) // a block this small always fits
			binary.BigEndian.PutUint32(dst[at:], uint32(len(dst)-at-4))
			src = src[n:]
		}
		return dst, nil
	case CodecLZ4:
		lw := lz4Encoders.Get().(*lz4.Writer)
		defer lz4Encoders.Put(lw)
		w := &appendWriter{b: dst}
		lw.Reset(w)
		if _, err := lw.Write(src); err != nil {
			return nil, err
		}
		if err := lw.Close(); err != nil {
			return nil, err
		}
		lw.Reset(nil)
		return w.b, nil
	case CodecZstd:
		ze := zstdEncoders.Get().(*zstdEncoder)
		defer zstdEncoders.Put(ze)
		return ze.e.EncodeAll(src, dst), nil
	}
	return nil, errorf(ErrUnsupportedCodec, "codec id %d", int8(codec))
}
