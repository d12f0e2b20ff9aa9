// Package members holds what KIP-848 consumer group members (package
// groups) and KIP-932 share group members (package sharegroups) have in
// common: the set of partitions a member is assigned, gives back or is
// targeted to own (Partitions), the subscribed topic names as a member
// keeps them (Subscription), and the layout of the fields their member
// records share (AppendOptString, AppendStrings, AppendPartitions and
// Decoder). Each package keeps its own member type and record, and writes
// its record's fields in its own order; this package writes the fields.
//
// # Record fields
//
// The records are Pebble values: a KIP-848 member's under its 'c' key
// (package groups' member family, 'c' len(2) group member id) and a share
// group member's under its 'h' key (package sharegroups' smember family,
// 'h' len(2) group member id); each package's doc lists its record's
// fields in order. Both records start with a format byte, 1 today, which
// the caller writes and passes to NewDecoder: the record is versioned
// where the caller versions it, and a change to any layout below changes
// both families' records, so it needs a new format byte in both (the old
// layout still read). The golden tests (record_test.go, and the callers'
// record tests) pin these bytes.
//
// Varints are encoding/binary's (uvarint: unsigned; varint: zig-zag):
//
//	field       bytes
//	----------  -----------------------------------------------------------
//	str         uvarint len, len bytes (valenc.AppendString)
//	opt str     0x00 (nil) | 0x01 str
//	strings     uvarint n, n × str
//	partitions  uvarint n, n × (topic id(16), uvarint m, m × varint partition)
//	            topics in id byte order, partitions ascending, no repeats
//
// For example the partitions {01 02 03 00…00: [0 1]}:
//
//	01  01 02 03 00 00 00 00 00 00 00 00 00 00 00 00 00  02  00  02
//	n   topic id(16)                                     m   0   1
//
// The Decoder checks every count against the bytes left (each element
// takes at least one byte), so that a corrupt record fails instead of
// allocating, and sorts and deduplicates what it reads into Partitions.
package members
