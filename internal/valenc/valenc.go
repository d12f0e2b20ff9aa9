// Package valenc is the value encoding of floe's Pebble state, shared by the
// coordinator and the group coordinator: a format byte (Version1) so that a
// later version can change a layout without a rewrite, then
// encoding/binary varints and length-prefixed bytes.
package valenc

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Format bytes. Every value starts with one; a layout that changes gets a
// new one, so that a decoder never misreads another layout.
const (
	// Version1 is the first format of every value.
	Version1 byte = 1
	// Version2 is a second layout of a value kind whose Version1 layout
	// changed (each kind's doc says which layouts it has).
	Version2 byte = 2
	// Version3 is a third layout, or a second kind of value sharing a key
	// family with a Version2 one (the coordinator's segment rows beside
	// its batch runs).
	Version3 byte = 3
)

// ErrShort is returned (wrapped) for a value that ends early.
var ErrShort = errors.New("valenc: truncated value")

// AppendString appends s with its length as a uvarint.
func AppendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// Decoder reads a value, remembering the first error: callers read every
// field and check Err (or Done) once.
type Decoder struct {
	b   []byte
	err error
}

// New starts decoding value b of kind what ("topic", "group"...), checking
// its format byte.
func New(what string, b []byte) *Decoder { return NewVersion(what, Version1, b) }

// NewVersion starts decoding value b of kind what whose format byte must be
// version.
func NewVersion(what string, version byte, b []byte) *Decoder {
	d := &Decoder{b: b}
	if len(b) == 0 || b[0] != version {
		d.err = fmt.Errorf("%s value: unknown format %x", what, b)
		return d
	}
	d.b = b[1:]
	return d
}

// Fields decodes b, a part of a value after its format byte (a section a
// decoder handed out with Bytes).
func Fields(b []byte) *Decoder { return &Decoder{b: b} }

// Len is the number of bytes not yet read.
func (d *Decoder) Len() int { return len(d.b) }

// Err is the first error met, if any.
func (d *Decoder) Err() error { return d.err }

// Uvarint reads an unsigned varint.
func (d *Decoder) Uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.err = ErrShort
		return 0
	}
	d.b = d.b[n:]
	return v
}

// Varint reads a signed varint.
func (d *Decoder) Varint() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.err = ErrShort
		return 0
	}
	d.b = d.b[n:]
	return v
}

// Byte reads one byte.
func (d *Decoder) Byte() byte {
	if d.err != nil {
		return 0
	}
	if len(d.b) == 0 {
		d.err = ErrShort
		return 0
	}
	v := d.b[0]
	d.b = d.b[1:]
	return v
}

// Bytes reads n bytes; the result aliases the value.
func (d *Decoder) Bytes(n uint64) []byte {
	if d.err != nil {
		return nil
	}
	if uint64(len(d.b)) < n {
		d.err = ErrShort
		return nil
	}
	v := d.b[:n]
	d.b = d.b[n:]
	return v
}

// String reads a string written by AppendString.
func (d *Decoder) String() string { return string(d.Bytes(d.Uvarint())) }

// Done reports the first error, or trailing bytes that no field read.
func (d *Decoder) Done(what string) error {
	if d.err == nil && len(d.b) != 0 {
		d.err = fmt.Errorf("%s value: %d trailing bytes", what, len(d.b))
	}
	if d.err != nil {
		return fmt.Errorf("decode %s value: %w", what, d.err)
	}
	return nil
}
