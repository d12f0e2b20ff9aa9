package record_test

import (
	"fmt"

	"github.com/floe-io/floe/record"
)

// The produce path: frame a partition's records field, validate each batch, and read
// the keys of its records.
func Example() {
	batch, _ := record.Build(record.BuildOptions{
		Codec: record.CodecZstd, BaseTimestamp: 1_700_000_000_000,
		ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, PartitionLeaderEpoch: -1,
	}, []record.Record{
		{Key: []byte("user-1"), Value: []byte(`{"clicks":3}`)},
		{Key: []byte("user-2"), Value: nil, TimestampDelta: 5}, // a tombstone
	})
	produced := batch // a Produce request's records field for one partition

	batches, err := record.Split(produced)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, b := range batches {
		h, err := record.Validate(b)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("%d records, %s, max timestamp %d\n", h.NumRecords, h.Codec(), h.MaxTimestamp)
		err = record.Records(b, func(r *record.Record) error {
			fmt.Printf("offset delta %d: key %s, tombstone %v\n", r.OffsetDelta, r.Key, r.Value == nil)
			return nil
		})
		if err != nil {
			fmt.Println(err)
		}
	}
	// Output:
	// 2 records, zstd, max timestamp 1700000000005
	// offset delta 0: key user-1, tombstone false
	// offset delta 1: key user-2, tombstone true
}

// The fetch path: patch a copy of a stored batch with the offset and log append time
// the coordinator assigned.
func ExampleSetLogAppendTime() {
	stored, _ := record.Build(record.BuildOptions{BaseTimestamp: 1_700_000_000_000, ProducerID: -1},
		[]record.Record{{Value: []byte("v")}})

	wire := append([]byte(nil), stored...)
	record.SetBaseOffset(wire, 42)
	record.SetLogAppendTime(wire, 1_700_000_000_999)

	h, err := record.Validate(wire)
	fmt.Println(h.BaseOffset, h.LogAppendTime(), h.MaxTimestamp, err)
	// Output: 42 true 1700000000999 <nil>
}
