package record

// RecordAt calls fn with the record at position index of the batch b (its
// offset delta, for the batches Validate and Records accept, whose deltas
// are exactly 0..n-1). It decompresses as Records does, but skips the
// records before index by their length prefix without decoding them, so a
// point read of one record costs no per-record work before it. fn's slices
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
	data := b[HeaderSize:]
	if codec != CodecNone {
		if data, err = st.decompress(codec, data, DefaultMaxDecompressed); err != nil {
			return err
		}
	}
	r := reader{b: data}
	for i := range index {
		start := r.off
		length := r.varint()
		if r.bad || length < minRecordSize-1 || int(length) > len(data)-r.off {
			return errorf(ErrInvalid, "record %d at byte %d: invalid record length %d", i, start, length)
		}
		r.off += int(length)
	}
	// Decode exactly the one record: a header that says so, over the bytes
	// from it to the end of its length.
	start := r.off
	length := r.varint()
	if r.bad || length < minRecordSize-1 || int(length) > len(data)-r.off {
		return errorf(ErrInvalid, "record %d at byte %d: invalid record length %d", index, start, length)
	}
	one := h
	one.NumRecords = 1
	return st.each(&one, data[start:r.off+int(length)], fn)
}
