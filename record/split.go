package record

import (
	"encoding/binary"
	"fmt"
	"iter"
)

// Split frames the records field of a Produce request (or any run of concatenated
// batches) and returns each batch as a sub-slice of b, without copying or checking
// anything past each batch's length: Validate each one.
//
// Framing uses only the base offset and length every magic shares, so a magic 0/1
// message set frames too and is refused later by Validate. Split fails with ErrCorrupt
// when a length field is below the smallest any magic allows or when the last batch is
// cut short; Kafka would drop such a trailer, but a producer never sends one. An empty
// b yields no batches and no error (a Produce v3+ with no batch is the caller's to
// refuse, as is one with more than one: Kafka requires exactly one per partition).
func Split(b []byte) ([][]byte, error) {
	var out [][]byte
	for batch, err := range Batches(b) {
		if err != nil {
			return nil, err
		}
		out = append(out, batch)
	}
	return out, nil
}

// Batches is the iterator form of Split: it yields each batch of b in order, or, on
// misframing, a nil batch with an ErrCorrupt error, after which it stops.
func Batches(b []byte) iter.Seq2[[]byte, error] {
	return func(yield func([]byte, error) bool) {
		for at := 0; at < len(b); {
			n, err := frame(b[at:])
			if err != nil {
				yield(nil, errorf(ErrCorrupt, "batch at byte %d: %v", at, err))
				return
			}
			if !yield(b[at:at+n:at+n], nil) {
				return
			}
			at += n
		}
	}
}

// frame returns the size of the batch at the start of b.
func frame(b []byte) (int, error) {
	if len(b) < lengthOverhead {
		return 0, fmt.Errorf("%d trailing bytes are not a batch", len(b))
	}
	length := int32(binary.BigEndian.Uint32(b[offBatchLength:]))
	if length < minLegacyLength {
		return 0, fmt.Errorf("length %d is below the minimum %d", length, minLegacyLength)
	}
	n := lengthOverhead + int(length)
	if n > len(b) {
		return 0, fmt.Errorf("length %d runs past the end (%d bytes follow it)", length, len(b)-lengthOverhead)
	}
	return n, nil
}
