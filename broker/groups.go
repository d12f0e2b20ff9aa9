package broker

import (
	"context"
	"hash/fnv"
	"net"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-io/floe/coordapi"
)

// groupLister is the broker whose ListGroups lists a group: a stable hash
// of the group over the live brokers, so that clients, which ask every
// broker and merge the answers, see each group once.
func groupLister(live []brokerInfo, group string) brokerInfo {
	h := fnv.New32a()
	h.Write([]byte(group))
	return live[h.Sum32()%uint32(len(live))]
}

// groupsError is the code every group request gets when this broker has no
// group coordinator (COORDINATOR_NOT_AVAILABLE); 0 when it has one.
func (b *Broker) groupsError() int16 {
	if b.groups == nil {
		return kerr.CoordinatorNotAvailable.Code
	}
	return 0
}

// heldContext is the context of a group request the coordinator may hold
// in a rebalance: ctx, ended early when the broker starts draining.
func (b *Broker) heldContext(ctx context.Context) (context.Context, context.CancelFunc) {
	hctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(b.drained, cancel)
	return hctx, func() { stop(); cancel() }
}

// heldFailed is the code of a held group request (JoinGroup, SyncGroup)
// the coordinator did not answer: NOT_COORDINATOR when this broker is
// draining (the client finds another broker and rejoins through it; the
// coordinator replaces the member's abandoned join), else as groupsFailed.
func (b *Broker) heldFailed(api string, err error) int16 {
	if b.drained.Err() != nil {
		return kerr.NotCoordinator.Code
	}
	return b.groupsFailed(api, err)
}

// groupsFailed is the code a group request gets when the group coordinator
// did not answer it: COORDINATOR_NOT_AVAILABLE, on which clients find the
// coordinator again and retry.
func (b *Broker) groupsFailed(api string, err error) int16 {
	b.log.Debug("group coordinator did not answer", "api", api, "err", err)
	return kerr.CoordinatorNotAvailable.Code
}

// groupClient identifies r's connection to the group coordinator: its
// client id, and its host as Kafka shows it ("/127.0.0.1").
func groupClient(r *request) coordapi.ClientInfo {
	var c coordapi.ClientInfo
	if r.clientID != nil {
		c.ID = *r.clientID
	}
	if r.conn != nil {
		if host, _, err := net.SplitHostPort(r.conn.nc.RemoteAddr().String()); err == nil {
			c.Host = "/" + host
		}
	}
	return c
}

// knownPartitions checks the partitions of an offset request against the
// topics, as Kafka's request layer does before the group coordinator sees
// them: partitions[i] are the partitions asked of topics[i]. codes holds
// TOPIC_AUTHORIZATION_FAILED for the topics r's principal may not op,
// UNKNOWN_TOPIC_OR_PARTITION (or the lookup's error, COORDINATOR_NOT_AVAILABLE
// when the coordinator did not answer) for the rest, keep[i]
// the indexes into partitions[i] to pass on, and ids[i] the topic's id.
func (b *Broker) knownPartitions(ctx context.Context, r *request, op kmsg.ACLOperation, topics []string, partitions [][]int32) (codes [][]int16, keep [][]int, ids [][16]byte) {
	codes = make([][]int16, len(topics))
	keep = make([][]int, len(topics))
	ids = make([][16]byte, len(topics))
	seen := make(map[string]topicLookup)
	for i, topic := range topics {
		codes[i] = make([]int16, len(partitions[i]))
		tl := b.lookupAuthorized(ctx, r, seen, op, topic)
		ids[i] = tl.t.ID
		for j, p := range partitions[i] {
			switch {
			case tl.err != nil:
				codes[i][j] = coordapi.ErrorCode(tl.err)
				if codes[i][j] == kerr.KafkaStorageError.Code {
					// The coordinator did not answer (a failover): the
					// code group clients retry on, as for the group
					// request itself (groupsFailed).
					codes[i][j] = kerr.CoordinatorNotAvailable.Code
				}
			case p < 0 || p >= tl.t.Partitions:
				codes[i][j] = kerr.UnknownTopicOrPartition.Code
			default:
				keep[i] = append(keep[i], j)
			}
		}
	}
	return codes, keep, ids
}

// keptTopics cuts an offset request's topics to the partitions
// knownPartitions kept (keep[i] indexes topic i's partitions): cut(i, kept)
// returns topic i with only those. from[k] is the request's index of the
// k-th topic returned.
func keptTopics[T any](keep [][]int, cut func(i int, kept []int) T) (out []T, from []int) {
	for i, kept := range keep {
		if len(kept) > 0 {
			out = append(out, cut(i, kept))
			from = append(from, i)
		}
	}
	return out, from
}

// setKept sets code for every partition keep names.
func setKept(codes [][]int16, keep [][]int, code int16) {
	for i, kept := range keep {
		for _, j := range kept {
			codes[i][j] = code
		}
	}
}

// putAnswer records code, the group coordinator's answer for the n-th
// partition of the k-th topic sent (keptTopics), in codes; an answer past
// what was sent is dropped.
func putAnswer(codes [][]int16, keep [][]int, from []int, k, n int, code int16) {
	if k < len(from) && n < len(keep[from[k]]) {
		codes[from[k]][keep[from[k]][n]] = code
	}
}
