package coordapi

// Transactions (KIP-98): the transaction coordinator's API. A transactional
// producer gets its producer id and epoch from InitProducerID with its
// transactional id, adds the partitions it writes to (AddPartitionsToTxn)
// and the groups whose offsets it commits (AddOffsetsToTxn) before it
// writes there, and ends the transaction with EndTxn: the coordinator
// writes a commit or abort marker (a control batch) into every partition
// of the transaction through the object path, and commits or drops the
// groups' transactional offsets. Until its marker, a transaction's records
// are above its partitions' last stable offset, which read_committed
// consumers do not read past.

// TxnState is a transaction's state, with Apache Kafka's names.
type TxnState int8

// The transaction states.
const (
	TxnEmpty TxnState = iota
	TxnOngoing
	TxnPrepareCommit
	TxnPrepareAbort
	TxnCompleteCommit
	TxnCompleteAbort
	TxnDead
)

// String returns the state's name as Kafka's tools show it ("Ongoing").
func (s TxnState) String() string {
	switch s {
	case TxnEmpty:
		return "Empty"
	case TxnOngoing:
		return "Ongoing"
	case TxnPrepareCommit:
		return "PrepareCommit"
	case TxnPrepareAbort:
		return "PrepareAbort"
	case TxnCompleteCommit:
		return "CompleteCommit"
	case TxnCompleteAbort:
		return "CompleteAbort"
	case TxnDead:
		return "Dead"
	}
	return "Unknown"
}

// TxnStateNamed returns the state of a name, ok false for none.
func TxnStateNamed(name string) (TxnState, bool) {
	for s := TxnEmpty; s <= TxnDead; s++ {
		if s.String() == name {
			return s, true
		}
	}
	return 0, false
}

// TxnProducer names a transactional producer in a transaction request.
type TxnProducer struct {
	TransactionalID string
	ProducerID      int64
	ProducerEpoch   int16
}

// TopicPartition names one partition of a topic by id.
type TopicPartition struct {
	TopicID   TopicID
	Partition int32
}

// AddPartitionsRequest adds partitions to a producer's transaction.
type AddPartitionsRequest struct {
	TxnProducer
	Partitions []TopicPartition
	// VerifyOnly checks that the partitions are in the transaction without
	// adding them (AddPartitionsToTxn v4+ from brokers, KIP-890).
	VerifyOnly bool
}

// EndTxnRequest ends a producer's transaction.
type EndTxnRequest struct {
	TxnProducer
	Commit bool
}

// AbortedTxn is one aborted transaction in a partition, as Fetch lists
// it for read_committed consumers: its producer and its first offset
// there. LastOffset is its abort marker's offset.
type AbortedTxn struct {
	ProducerID  int64
	FirstOffset int64
	LastOffset  int64
}

// TxnDescription describes one transaction (DescribeTransactions).
type TxnDescription struct {
	TransactionalID string
	// ErrorCode is TRANSACTIONAL_ID_NOT_FOUND for an unknown id.
	ErrorCode     int16
	State         TxnState
	ProducerID    int64
	ProducerEpoch int16
	TimeoutMs     int32
	// StartMs is when the ongoing transaction began, -1 when none is.
	StartMs    int64
	Partitions []TopicPartition
}

// TxnListing is one transaction as ListTransactions names it.
type TxnListing struct {
	TransactionalID string
	ProducerID      int64
	State           TxnState
}

// ProducerDescription is one producer with state on a partition
// (DescribeProducers).
type ProducerDescription struct {
	ProducerID    int64
	ProducerEpoch int16
	LastSequence  int32
	// LastTimestamp is the max timestamp of its last batch, -1 for none.
	LastTimestamp int64
	// CoordinatorEpoch is -1: floe has one transaction coordinator.
	CoordinatorEpoch int32
	// CurrentTxnStartOffset is the first offset of its open transaction
	// in the partition, -1 when it has none.
	CurrentTxnStartOffset int64
}

// TxnView is what a partition checks a transactional batch against (KIP-890:
// the batch's partition must be in its producer's ongoing transaction): the
// producer's transactional id and epoch, whether its transaction is
// ongoing, and the partitions it holds, sorted. The transaction
// coordinator gives the partitions a producer's view with every step of
// its transaction.
type TxnView struct {
	TransactionalID string
	Epoch           int16
	Ongoing         bool
	Partitions      []TopicPartition
}
