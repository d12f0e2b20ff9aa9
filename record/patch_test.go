package record

import (
	"bytes"
	"testing"
)

func TestPatch(t *testing.T) {
	for _, codec := range allCodecs {
		t.Run(codec.String(), func(t *testing.T) {
			orig := mustBuild(t, BuildOptions{Codec: codec, BaseTimestamp: 5000, ProducerID: 3, Attributes: AttrTransactional},
				sampleRecords(6, 20, 11))
			b := append([]byte{}, orig...)

			SetBaseOffset(b, 1<<40+7)
			SetPartitionLeaderEpoch(b, 12)
			h, err := Validate(b)
			if err != nil {
				t.Fatalf("after SetBaseOffset/SetPartitionLeaderEpoch: %v", err)
			}
			if h.BaseOffset != 1<<40+7 || h.PartitionLeaderEpoch != 12 {
				t.Fatalf("header %+v", h)
			}
			if !bytes.Equal(b[offCRC:], orig[offCRC:]) {
				t.Fatal("SetBaseOffset/SetPartitionLeaderEpoch changed bytes after the epoch")
			}

			// The append time may be before the base timestamp (a producer clock ahead of
			// the broker's); Validate still accepts the batch.
			for _, ts := range []int64{9_000, 1_000} {
				SetLogAppendTime(b, ts)
				h, err = Validate(b)
				if err != nil {
					t.Fatalf("after SetLogAppendTime(%d): %v", ts, err)
				}
				if !h.LogAppendTime() || h.MaxTimestamp != ts || h.BaseTimestamp != 5000 || !h.Transactional() || h.Codec() != codec {
					t.Fatalf("after SetLogAppendTime(%d): %+v", ts, h)
				}
			}
			crc := h.CRC
			SetLogAppendTime(b, 1_000) // unchanged: no rewrite
			if h2, _ := ParseHeader(b); h2.CRC != crc {
				t.Fatal("SetLogAppendTime with the same time changed the CRC")
			}
			if !bytes.Equal(b[HeaderSize:], orig[HeaderSize:]) {
				t.Fatal("SetLogAppendTime changed the records")
			}
			got, err := collect(b)
			if err != nil {
				t.Fatal(err)
			}
			if err := sameRecords(got, numbered(sampleRecords(6, 20, 11))); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestSetLogAppendTimeUsesBatchLength checks that the CRC covers the batch only, not
// bytes after it in the buffer.
func TestSetLogAppendTimeUsesBatchLength(t *testing.T) {
	b := mustBuild(t, noProducer, sampleRecords(2, 5, 12))
	n := len(b)
	buf := append(append([]byte{}, b...), mustBuild(t, noProducer, sampleRecords(3, 5, 13))...)
	SetLogAppendTime(buf, 77)
	if _, err := Validate(buf[:n]); err != nil {
		t.Fatal(err)
	}
}

// TestSetLogAppendTimeBadLength checks that a batch length that does not fit the
// buffer does not panic, and leaves a CRC that Validate refuses.
func TestSetLogAppendTimeBadLength(t *testing.T) {
	good := mustBuild(t, noProducer, sampleRecords(2, 5, 15))
	for _, length := range []uint32{0, 48, uint32(len(good)), 0x7fffffff, 0xffffffff} {
		b := append([]byte{}, good...)
		be32(b, offBatchLength, length)
		SetLogAppendTime(b, 5)
		if _, err := Validate(b); err == nil {
			t.Fatalf("length %d: Validate accepted the batch", length)
		}
	}
	b := append([]byte{}, good...)
	SetLogAppendTime(b[:len(b)-1], 5) // truncated: the CRC is over what is there
	if _, err := Validate(b); err == nil {
		t.Fatal("truncated: Validate accepted the batch")
	}
}

func TestPatchPanicsOnShortBuffer(t *testing.T) {
	b := mustBuild(t, noProducer, sampleRecords(2, 5, 14))
	cases := map[string]func(){
		"SetBaseOffset":           func() { SetBaseOffset(b[:7], 1) },
		"SetPartitionLeaderEpoch": func() { SetPartitionLeaderEpoch(b[:15], 1) },
		"SetLogAppendTime":        func() { SetLogAppendTime(b[:HeaderSize-1], 1) },
	}
	for name, f := range cases {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Fatal("no panic")
				}
			}()
			f()
		})
	}
}
