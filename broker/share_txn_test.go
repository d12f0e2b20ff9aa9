package broker

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-io/floe/coordinator"
	"github.com/floe-io/floe/objectstore"
)

// newTxnEnv is newACLEnv, without ACLs, on a coordinator that writes
// transaction markers to the env's store.
func newTxnEnv(t *testing.T) *aclEnv {
	t.Helper()
	store := objectstore.NewMemory()
	e := &aclEnv{t: t, store: store, coord: newTestCoordinator(t, func(o *coordinator.Options) { o.Markers = store })}
	e.g = newTestGroups(t, e.coord)
	e.b, e.addr = e.startBroker(1, e.coord, func(o *Options) { o.ACLsEnabled = false })
	return e
}

// setGroupConfig sets a group config through IncrementalAlterConfigs of a
// GROUP resource.
func setGroupConfig(t *testing.T, cl *kgo.Client, group, name, value string) {
	t.Helper()
	alter := kmsg.NewPtrIncrementalAlterConfigsRequest()
	ar := kmsg.NewIncrementalAlterConfigsRequestResource()
	ar.ResourceType, ar.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	ac := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	ac.Name, ac.Value = name, kmsg.StringPtr(value)
	ar.Configs = append(ar.Configs, ac)
	alter.Resources = append(alter.Resources, ar)
	wantCode(t, "alter group config "+name, send[*kmsg.IncrementalAlterConfigsResponse](t, cl, alter).Resources[0].ErrorCode, nil)
}

// produceTxn produces values to topic in one transaction of cl, and
// commits or aborts it.
func produceTxn(t *testing.T, cl *kgo.Client, topic string, commit bool, values ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for _, v := range values {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatalf("produce %s: %v", v, err)
		}
	}
	if err := cl.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
		t.Fatalf("end transaction (commit %v): %v", commit, err)
	}
}

// shareStart is the share-partition start offset and lag of topic's
// partition 0 for group.
func shareStart(t *testing.T, cl *kgo.Client, group, topic string) (start, lag int64) {
	t.Helper()
	d := send[*kmsg.DescribeShareGroupOffsetsResponse](t, cl, describeShareOffsetsReq(group, map[string][]int32{topic: {0}})).Groups[0]
	if d.ErrorCode != 0 || len(d.Topics) != 1 || len(d.Topics[0].Partitions) != 1 {
		t.Fatalf("describe share offsets: %+v", d)
	}
	p := d.Topics[0].Partitions[0]
	return p.StartOffset, p.Lag
}

// shareReadAll reads group's records of topic with a kgo share consumer,
// accepting each, until want distinct values came or ctx ends; it returns
// every value read, with how often.
func shareReadAll(t *testing.T, e *aclEnv, group, topic string, want int, opts ...kgo.Opt) map[string]int {
	t.Helper()
	cl := e.client("share-"+group, append([]kgo.Opt{kgo.ShareGroup(group), kgo.ConsumeTopics(topic), kgo.FetchMaxWait(200 * time.Millisecond)}, opts...)...)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	seen := map[string]int{}
	for len(seen) < want && ctx.Err() == nil {
		pctx, pcancel := context.WithTimeout(ctx, time.Second)
		fs := cl.PollFetches(pctx)
		pcancel()
		for _, r := range fs.Records() {
			seen[string(r.Value)]++
			r.Ack(kgo.AckAccept)
		}
	}
	// Send the last acknowledgements before the test looks at the group.
	if err := cl.FlushAcks(t.Context()); err != nil {
		t.Logf("flush acks: %v", err)
	}
	return seen
}

// TestShareReadCommitted: a share group under read_committed (floe's
// default) never gets an aborted transaction's records, and the broker
// archives them at once, so the share-partition start offset reaches the
// end without waiting for their 30 s lock; transaction markers are
// acquired and acknowledged as gaps by the client. Under read_uncommitted
// every record comes.
func TestShareReadCommitted(t *testing.T) {
	e := newTxnEnv(t)
	e.topic("tq", 1, nil)
	admin := e.client("admin")
	txn := e.client("txn", kgo.TransactionalID("share-txn"), kgo.DefaultProduceTopic("tq"))
	// Offsets: 0-4 aborted, 5 marker, 6-7 committed, 8 marker, 9 plain,
	// 10-12 aborted, 13 marker, 14 plain: 15 offsets.
	produceTxn(t, txn, "tq", false, "a0", "a1", "a2", "a3", "a4")
	produceTxn(t, txn, "tq", true, "c0", "c1")
	produceN(t, admin, "tq", 1) // "0"
	produceTxn(t, txn, "tq", false, "a5", "a6", "a7")
	if err := admin.ProduceSync(t.Context(), &kgo.Record{Topic: "tq", Value: []byte("p1")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	committed := []string{"c0", "c1", "0", "p1"}
	all := append([]string{"a0", "a1", "a2", "a3", "a4", "a5", "a6", "a7"}, committed...)
	for _, tc := range []struct {
		name      string
		isolation string // "": the default
		want      []string
	}{
		{"default is read_committed", "", committed},
		{"read_committed", "read_committed", committed},
		{"read_uncommitted", "read_uncommitted", all},
	} {
		t.Run(tc.name, func(t *testing.T) {
			group := fmt.Sprintf("g-%s", tc.isolation)
			setShareReset(t, admin, group)
			if tc.isolation != "" {
				setGroupConfig(t, admin, group, "share.isolation.level", tc.isolation)
			}
			seen := shareReadAll(t, e, group, "tq", len(tc.want))
			if got := slices.Sorted(maps.Keys(seen)); !slices.Equal(got, slices.Sorted(slices.Values(tc.want))) {
				t.Fatalf("read %v, want %v", got, slices.Sorted(slices.Values(tc.want)))
			}
			for v, n := range seen {
				if n != 1 {
					t.Errorf("%s read %d times", v, n)
				}
			}
			// Every offset completed well within the lock: the aborted
			// records were archived, the markers gapped.
			checkFor(t, 10*time.Second, func() bool {
				start, lag := shareStart(t, admin, group, "tq")
				return start == 15 && lag == 0
			})
		})
	}
}
