package record

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"

	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
)

// windowSize is the size of the buffer a compressed batch's records stream through:
// reads from the decompressor fill it, and it grows only for a record larger than
// itself, doubling as that record's bytes arrive.
const windowSize = 64 << 10

// recordStream hands out a batch's records one at a time. An uncompressed batch's
// records (or raw snappy, decoded whole) are all in buf and src is nil; otherwise src
// is a decompressor and buf a window over its output: buf[r:w] has been read and not
// consumed, and only the record being parsed needs to fit.
type recordStream struct {
	src   io.Reader
	codec Codec
	buf   []byte
	r, w  int
	pos   int   // offset in the decompressed records of buf[r]
	n     int   // bytes read from src
	limit int   // the most bytes src may yield
	done  bool  // src returned io.EOF or failed
	err   error // why src failed
}

// fill reads from src until buf[r:w] holds want bytes or src ends. It returns
// ErrTooLarge past the limit and ErrInvalid for data that does not decompress.
func (s *recordStream) fill(want int) error {
	for zeros := 0; s.w-s.r < want && !s.done; {
		if s.r > 0 && s.r+want > len(s.buf) { // slide what is left to the front
			s.w = copy(s.buf, s.buf[s.r:s.w])
			s.r = 0
		}
		if s.w == len(s.buf) { // full with a part of one record: grow, at most doubling
			grown := make([]byte, max(windowSize, min(2*len(s.buf), s.r+want)))
			s.w = copy(grown, s.buf[s.r:s.w])
			s.r = 0
			s.buf = grown
		}
		room := s.buf[s.w:]
		if rem := s.limit + 1 - s.n; len(room) > rem { // one byte past the limit tells
			room = room[:rem]
		}
		k, err := s.src.Read(room)
		s.w += k
		s.n += k
		switch {
		case s.n > s.limit:
			s.fail(errorf(ErrTooLarge, "decompresses past %d bytes", s.limit))
		case err == io.EOF:
			s.done = true
		case err != nil:
			s.fail(decompressError(s.codec, err))
		case k == 0:
			if zeros++; zeros > 100 {
				s.fail(errorf(ErrInvalid, "%s: decompressor makes no progress", s.codec))
			}
		default:
			zeros = 0
		}
	}
	return s.err
}

func (s *recordStream) fail(err error) { s.done, s.err = true, err }

// decompressError wraps a decompressor's error: ErrTooLarge for a zstd window over the
// limit, ErrInvalid for the rest.
func decompressError(codec Codec, err error) error {
	switch {
	case errors.Is(err, ErrTooLarge):
		return err
	case errors.Is(err, zstd.ErrWindowSizeExceeded), errors.Is(err, zstd.ErrDecoderSizeExceeded):
		return errorf(ErrTooLarge, "%s: %v", codec, err)
	}
	return errorf(ErrInvalid, "%s: %v", codec, err)
}

func (s *recordStream) consume(n int) { s.r += n; s.pos += n }

// length reads the length prefix of record i.
func (s *recordStream) length(i int32) (int, error) {
	if s.w-s.r < binary.MaxVarintLen32 && !s.done {
		if err := s.fill(binary.MaxVarintLen32); err != nil {
			return 0, err
		}
	}
	rd := reader{b: s.buf[:s.w], off: s.r}
	length := rd.varint()
	if rd.bad || length < minRecordSize-1 {
		return 0, s.lengthError(i, length)
	}
	s.pos += rd.off - s.r
	s.r = rd.off
	return int(length), nil
}

// lengthError explains a record length that length refused.
func (s *recordStream) lengthError(i int32, length int32) error {
	if s.r == s.w {
		return errorf(ErrInvalid, "the records end after %d records", i)
	}
	return errorf(ErrInvalid, "record %d at byte %d: invalid record length %d", i, s.pos, length)
}

// next returns the bytes of record i after its length prefix, valid until the next
// call on s.
func (s *recordStream) next(i int32) ([]byte, error) {
	length, err := s.length(i)
	if err != nil {
		return nil, err
	}
	if length > s.w-s.r {
		if err := s.fill(length); err != nil {
			return nil, err
		}
		if length > s.w-s.r {
			return nil, errorf(ErrInvalid, "record %d at byte %d: record length %d runs past the end of the records", i, s.pos, length)
		}
	}
	start := s.r
	s.r += length
	s.pos += length
	return s.buf[start:s.r:s.r], nil
}

// skip passes over record i without decoding it.
func (s *recordStream) skip(i int32) error {
	start := s.pos
	length, err := s.length(i)
	if err != nil {
		return err
	}
	for length > 0 {
		if s.r == s.w {
			if err := s.fill(1); err != nil {
				return err
			}
			if s.r == s.w {
				return errorf(ErrInvalid, "record %d at byte %d: record length %d runs past the end of the records", i, start, length)
			}
		}
		k := min(length, s.w-s.r)
		s.consume(k)
		length -= k
	}
	return nil
}

// end checks that nothing follows the last of n records: reading the decompressor to
// its end also checks the codec's own checksums.
func (s *recordStream) end(n int32) error {
	if err := s.fill(1); err != nil {
		return err
	}
	if s.r != s.w {
		more := "at least "
		if s.done {
			more = ""
		}
		return errorf(ErrInvalid, "%s%d bytes remain after the last of %d records", more, s.w-s.r, n)
	}
	return nil
}

// open makes s read the records of a batch, data being what follows its header,
// compressed with codec; a compressed batch may decompress to at most limit bytes.
// close must follow.
func (st *iterState) open(s *recordStream, codec Codec, data []byte, limit int) error {
	*s = recordStream{codec: codec, limit: max(limit, 0)}
	switch codec {
	case CodecNone:
		s.buf, s.w, s.done = data, len(data), true
		return nil
	case CodecSnappy:
		if !bytes.HasPrefix(data, xerialMagic) {
			return st.openRawSnappy(s, data)
		}
		xr := &st.xerial
		xr.reset(data, s.limit)
		s.src = xr
	case CodecGzip:
		gd := gzipDecoders.Get().(*gzipDecoder)
		gd.src.Reset(data)
		st.gzip = gd
		if err := gd.r.Reset(&gd.src); err != nil {
			return decompressError(codec, err)
		}
		s.src = &gd.r
	case CodecLZ4:
		ld := lz4Decoders.Get().(*lz4Decoder)
		ld.src.Reset(data)
		ld.r.Reset(&ld.src)
		st.lz4 = ld
		s.src = ld.r
	case CodecZstd:
		zd, err := getZstdDecoder(max(s.limit, 1)) // the decoder's minimum; s's count still holds
		if err != nil {
			return errorf(ErrInvalid, "zstd: %v", err)
		}
		st.zstd = zd
		zd.src.Reset(data)
		if err := zd.d.Reset(&zd.src); err != nil {
			return decompressError(codec, err)
		}
		s.src = zd.d
	default:
		return errorf(ErrUnsupportedCodec, "codec id %d", int8(codec))
	}
	if cap(st.window) < windowSize {
		st.window = make([]byte, windowSize)
	}
	s.buf = st.window[:cap(st.window)]
	return nil
}

// openRawSnappy decodes a raw snappy block whole into st.buf: its copies may reach back
// anywhere in the block, so it cannot stream through a smaller window. Its size, which
// it declares up front, is checked against the limit before anything is allocated.
func (st *iterState) openRawSnappy(s *recordStream, data []byte) error {
	n, err := s2.DecodedLen(data)
	if err != nil {
		return decompressError(CodecSnappy, err)
	}
	if n > s.limit {
		return errorf(ErrTooLarge, "decompresses to %d bytes, past %d", n, s.limit)
	}
	if cap(st.buf) < n {
		st.buf = make([]byte, n)
	}
	out, err := s2.Decode(st.buf[:n], data)
	if err != nil {
		return decompressError(CodecSnappy, err)
	}
	s.buf, s.w, s.done = out, len(out), true
	return nil
}

// close returns the decompressors open took to their pools, dropping their references
// to the batch, and keeps s's window for the next batch if it is not too large.
func (st *iterState) close(s *recordStream) {
	if s.src != nil && cap(s.buf) <= maxPooledBuffer {
		st.window = s.buf[:0]
	}
	if gd := st.gzip; gd != nil {
		gd.src.Reset(nil)
		gzipDecoders.Put(gd)
		st.gzip = nil
	}
	if ld := st.lz4; ld != nil {
		ld.r.Reset(nil)
		ld.src.Reset(nil)
		lz4Decoders.Put(ld)
		st.lz4 = nil
	}
	if zd := st.zstd; zd != nil {
		_ = zd.d.Reset(nil)
		zd.src.Reset(nil)
		zstdDecoders.Put(zd)
		st.zstd = nil
	}
	st.xerial.reset(nil, 0)
	*s = recordStream{}
}

// xerialReader decodes snappy data in xerial framing (see xerialMagic) block by block:
// into the caller's buffer when the block fits, else into its own and copied out.
type xerialReader struct {
	src   []byte
	blk   []byte // decoded, not yet read
	own   []byte // the buffer blk is in
	left  int    // how many more decoded bytes the limit allows
	limit int
}

func (x *xerialReader) reset(src []byte, limit int) {
	x.src, x.blk, x.left, x.limit = src, nil, limit, limit
	if cap(x.own) > maxPooledBuffer {
		x.own = nil
	}
}

func (x *xerialReader) Read(p []byte) (int, error) {
	for len(x.blk) == 0 {
		if len(x.src) == 0 {
			return 0, io.EOF
		}
		if bytes.HasPrefix(x.src, xerialMagic) { // a header, first or of a concatenated stream
			if len(x.src) < xerialHeaderSize {
				return 0, errXerial
			}
			x.src = x.src[xerialHeaderSize:]
			continue
		}
		if len(x.src) < 4 {
			return 0, errXerial
		}
		size := binary.BigEndian.Uint32(x.src)
		if uint64(size) > uint64(len(x.src)-4) {
			return 0, errXerial
		}
		block := x.src[4 : 4+size]
		x.src = x.src[4+size:]
		n, err := s2.DecodedLen(block)
		if err != nil {
			return 0, err
		}
		if n > x.left {
			return 0, errorf(ErrTooLarge, "decompresses past %d bytes", x.limit)
		}
		x.left -= n
		if n == 0 {
			continue
		}
		if n <= len(p) {
			if _, err := s2.Decode(p[:n], block); err != nil {
				return 0, err
			}
			return n, nil
		}
		if cap(x.own) < n {
			x.own = make([]byte, n)
		}
		if x.blk, err = s2.Decode(x.own[:n], block); err != nil {
			return 0, err
		}
	}
	k := copy(p, x.blk)
	x.blk = x.blk[k:]
	return k, nil
}
