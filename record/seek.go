package record

// RecordAt calls fn with the record at position index of the batch b (its
// offset delta, for the batches Validate and Records accept, whose deltas
// are exactly 0..n-1). It decompresses as Records does, streaming, but skips
// the records before index by their length prefix without decoding them, and
// stops after the one it wants, so a point read of one record costs no
// per-record work before it and no decompression after it. fn's slices
// alias internal buffers valid only during the call.
func RecordAt(b []byte, index int32, fn func(*Record) error) error {
	h, err := parseWhole(b)
	if err != nil {
		return err
	}
	codec := h.Codec()
	if !codec.valid() {
		return errorf(ErrUnsupportedCodec, "codec id %d", int8(codec))
	}
	if index < 0 || index >= h.NumRecords {
		return errorf(ErrInvalid, "record %d of a batch of %d", index, h.NumRecords)
	}
	st := iterPool.Get().(*iterState)
	defer st.release()
	var s recordStream
	defer st.close(&s)
	if err := st.open(&s, codec, b[HeaderSize:], DefaultMaxDecompressed); err != nil {
		return err
	}
	for i := range index {
		if err := s.skip(i); err != nil {
			return err
		}
	}
	start := s.pos
	body, err := s.next(index)
	if err != nil {
		return err
	}
	if err := st.parse(index, start, body, true); err != nil {
		return err
	}
	if d := st.rec.OffsetDelta; d < 0 || d > h.LastOffsetDelta {
		return errorf(ErrInvalid, "record %d: offset delta %d (last offset delta %d)", index, d, h.LastOffsetDelta)
	}
	return fn(&st.rec)
}

// ParseRecord decodes one record as a batch stores it: its zigzag varint
// length, then that many bytes of fields, which must fill it exactly (as
// Records checks). Its headers are checked but not built (Headers stays
// nil); Key and Value alias b. It serves a reader that located one
// record's bytes in an uncompressed batch and read just those.
func ParseRecord(b []byte) (Record, error) {
	rr := reader{b: b}
	n := rr.varint()
	if rr.bad || n < 0 || int(n) != len(b)-rr.off {
		return Record{}, errorf(ErrInvalid, "record length %d over %d bytes", n, len(b)-rr.off)
	}
	var st iterState
	if err := st.parse(0, 0, b[rr.off:], false); err != nil {
		return Record{}, err
	}
	return st.rec, nil
}
