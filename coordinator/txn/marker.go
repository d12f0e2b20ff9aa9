package txn

import (
	"encoding/binary"

	"github.com/floe-io/floe/record"
)

// Control record types of a transaction marker's key (Kafka's
// ControlRecordType).
const (
	// ControlAbort is an abort marker's type.
	ControlAbort int16 = 0
	// ControlCommit is a commit marker's type.
	ControlCommit int16 = 1
)

// MarkerBatch builds the control batch of a transaction marker, as Kafka
// writes it: transactional and control bits, the producer's id and epoch,
// no sequence, one record whose key is version 0 and the marker type and
// whose value is version 0 and the coordinator epoch (0: floe has one
// transaction coordinator). Partitions.WriteTxnMarkers commits one a
// partition.
func MarkerBatch(pid int64, epoch int16, commit bool, nowMs int64) ([]byte, error) {
	typ := ControlAbort
	if commit {
		typ = ControlCommit
	}
	key := binary.BigEndian.AppendUint16(binary.BigEndian.AppendUint16(nil, 0), uint16(typ))
	value := binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint16(nil, 0), 0)
	return record.Build(record.BuildOptions{
		Attributes:    record.AttrTransactional | record.AttrControl,
		BaseTimestamp: nowMs,
		ProducerID:    pid,
		ProducerEpoch: epoch,
		BaseSequence:  -1,
	}, []record.Record{{Key: key, Value: value}})
}
