package record

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"runtime"
	"slices"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// Decoders are pooled with the bytes.Reader they read from, so a steady stream of
// batches decompresses without allocating.

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
	limit int
}

var (
	gzipDecoders = sync.Pool{New: func() any { return new(gzipDecoder) }}
	lz4Decoders  = sync.Pool{New: func() any { return &lz4Decoder{r: lz4.NewReader(nil)} }}
	zstdDecoders sync.Pool // *zstdDecoder, made by newZstdDecoder
)

func newZstdDecoder(limit int) (*zstdDecoder, error) {
	d, err := zstd.NewReader(nil,
		zstd.WithDecoderConcurrency(1), // DecodeAll on the calling goroutine only
		zstd.WithDecoderLowmem(true),
		zstd.WithDecoderMaxMemory(uint64(limit)),
	)
	if err != nil {
		return nil, err
	}
	zd := &zstdDecoder{d: d, limit: limit}
	runtime.AddCleanup(zd, func(d *zstd.Decoder) { d.Close() }, d)
	return zd, nil
}

// decompress decompresses src, compressed with codec, into st.buf and returns the
// result, refusing more than limit bytes of output.
func (st *iterState) decompress(codec Codec, src []byte, limit int) ([]byte, error) {
	if limit < 0 {
		limit = 0
	}
	var (
		out []byte
		err error
	)
	switch codec {
	case CodecGzip:
		gd := gzipDecoders.Get().(*gzipDecoder)
		gd.src.Reset(src)
		if err = gd.r.Reset(&gd.src); err == nil {
			out, err = readLimited(st.buf[:0], &gd.r, len(src), limit)
		}
		gd.src.Reset(nil)
		gzipDecoders.Put(gd)
	case CodecSnappy:
		out, err = decodeSnappy(st.buf[:0], src, limit)
	case CodecLZ4:
		ld := lz4Decoders.Get().(*lz4Decoder)
		ld.src.Reset(src)
		ld.r.Reset(&ld.src)
		out, err = readLimited(st.buf[:0], ld.r, len(src), limit)
		ld.r.Reset(nil)
		ld.src.Reset(nil)
		lz4Decoders.Put(ld)
	case CodecZstd:
		out, err = decodeZstd(st.buf[:0], src, limit)
	default:
		return nil, errorf(ErrUnsupportedCodec, "codec id %d", int8(codec))
	}
	if out != nil && cap(out) > cap(st.buf) {
		st.buf = out[:0] // keep the grown buffer for next time
	}
	switch {
	case err == nil:
		return out, nil
	case errors.Is(err, ErrTooLarge):
		return nil, err
	default:
		return nil, errorf(ErrInvalid, "%s: %v", codec, err)
	}
}

// readLimited reads r to its end into dst, refusing more than limit bytes. hint is the
// compressed size, from which it guesses the first allocation.
func readLimited(dst []byte, r io.Reader, hint, limit int) ([]byte, error) {
	if want := min(4*hint+512, limit+1); cap(dst) < want {
		dst = make([]byte, 0, want)
	}
	for {
		if len(dst) == cap(dst) {
			if len(dst) > limit {
				return dst[:0], errorf(ErrTooLarge, "decompresses past %d bytes", limit)
			}
			dst = slices.Grow(dst, min(cap(dst), limit+1-len(dst)))
		}
		n, err := r.Read(dst[len(dst):cap(dst)])
		dst = dst[:len(dst)+n]
		if len(dst) > limit {
			return dst[:0], errorf(ErrTooLarge, "decompresses past %d bytes", limit)
		}
		if err == io.EOF {
			return dst, nil
		}
		if err != nil {
			return dst[:0], err
		}
	}
}

func decodeZstd(dst, src []byte, limit int) ([]byte, error) {
	dlimit := max(limit, 1) // the decoder's minimum; the length check below still holds
	zd, _ := zstdDecoders.Get().(*zstdDecoder)
	if zd == nil {
		var err error
		if zd, err = newZstdDecoder(dlimit); err != nil {
			return nil, err
		}
	} else if zd.limit != dlimit {
		if err := zd.d.ResetWithOptions(nil, zstd.WithDecoderMaxMemory(uint64(dlimit))); err != nil {
			return nil, err
		}
		zd.limit = dlimit
	}
	out, err := zd.d.DecodeAll(src, dst)
	zstdDecoders.Put(zd)
	if errors.Is(err, zstd.ErrDecoderSizeExceeded) || errors.Is(err, zstd.ErrWindowSizeExceeded) || len(out) > limit {
		return out[:0], errorf(ErrTooLarge, "decompresses past %d bytes", limit)
	}
	return out, err
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

// decodeSnappy decodes a raw snappy block or xerial framed blocks into dst. Blocks are
// decoded by s2, which reads every valid snappy block (and, like franz-go, also the s2
// extensions).
func decodeSnappy(dst, src []byte, limit int) ([]byte, error) {
	if !bytes.HasPrefix(src, xerialMagic) {
		n, err := s2.DecodedLen(src)
		if err != nil {
			return dst, err
		}
		if n > limit {
			return dst, errorf(ErrTooLarge, "decompresses to %d bytes, past %d", n, limit)
		}
		if cap(dst) < n {
			dst = make([]byte, 0, n)
		}
		return s2.Decode(dst[:n], src)
	}
	// Walk the block lengths first, to bound the total and allocate once.
	total := 0
	for rem := src; len(rem) > 0; {
		if bytes.HasPrefix(rem, xerialMagic) { // a header, first or of a concatenated stream
			if len(rem) < xerialHeaderSize {
				return dst, errXerial
			}
			rem = rem[xerialHeaderSize:]
			continue
		}
		if len(rem) < 4 {
			return dst, errXerial
		}
		size := binary.BigEndian.Uint32(rem)
		rem = rem[4:]
		if uint64(size) > uint64(len(rem)) {
			return dst, errXerial
		}
		n, err := s2.DecodedLen(rem[:size])
		if err != nil {
			return dst, err
		}
		if total += n; total > limit {
			return dst, errorf(ErrTooLarge, "decompresses past %d bytes", limit)
		}
		rem = rem[size:]
	}
	if cap(dst) < total {
		dst = make([]byte, 0, total)
	}
	for rem := src; len(rem) > 0; {
		if bytes.HasPrefix(rem, xerialMagic) {
			rem = rem[xerialHeaderSize:]
			continue
		}
		size := binary.BigEndian.Uint32(rem)
		block := rem[4 : 4+size]
		rem = rem[4+size:]
		n, _ := s2.DecodedLen(block)
		if _, err := s2.Decode(dst[len(dst):len(dst)+n], block); err != nil {
			return dst[:0], err
		}
		dst = dst[:len(dst)+n]
	}
	return dst, nil
}

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
