package valenc

import (
	"encoding/binary"
	"errors"
	"testing"
)

func TestRoundTrip(t *testing.T) {
	b := []byte{Version1}
	b = binary.AppendUvarint(b, 300)
	b = binary.AppendVarint(b, -7)
	b = append(b, 9)
	b = AppendString(b, "héllo")
	d := New("test", b)
	if u, v, c, s := d.Uvarint(), d.Varint(), d.Byte(), d.String(); u != 300 || v != -7 || c != 9 || s != "héllo" {
		t.Fatalf("got %d %d %d %q", u, v, c, s)
	}
	if err := d.Done("test"); err != nil {
		t.Fatal(err)
	}
}

func TestErrors(t *testing.T) {
	tests := []struct {
		name  string
		value []byte
		read  func(*Decoder)
		want  error
	}{
		{"unknown format", []byte{2, 1}, func(d *Decoder) { d.Uvarint() }, nil},
		{"empty", nil, func(d *Decoder) {}, nil},
		{"truncated varint", []byte{Version1, 0x80}, func(d *Decoder) { d.Varint() }, ErrShort},
		{"string longer than the value", []byte{Version1, 5, 'a'}, func(d *Decoder) { _ = d.String() }, ErrShort},
		{"trailing bytes", []byte{Version1, 1, 2}, func(d *Decoder) { d.Byte() }, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := New("test", tt.value)
			tt.read(d)
			err := d.Done("test")
			if err == nil {
				t.Fatal("no error")
			}
			if tt.want != nil && !errors.Is(err, tt.want) {
				t.Fatalf("err %v, want %v", err, tt.want)
			}
		})
	}
}

func TestNewVersion(t *testing.T) {
	b := binary.AppendUvarint([]byte{Version2}, 7)
	d := NewVersion("test", Version2, b)
	if d.Len() != 1 {
		t.Fatalf("Len %d, want 1", d.Len())
	}
	if v := d.Uvarint(); v != 7 || d.Done("test") != nil {
		t.Fatalf("got %d, %v", v, d.Err())
	}
	if v := Fields(b[1:]).Uvarint(); v != 7 {
		t.Fatalf("Fields read %d", v)
	}
	if err := New("test", b).Done("test"); err == nil {
		t.Fatal("Version2 value decoded as Version1")
	}
}
