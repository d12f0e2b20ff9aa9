package coordinator

import (
	"testing"

	"github.com/floe-io/floe/coordapi"
)

// TestCommitRefusesUnkeyedBatchOnIndexedTopic: a broker that has not yet
// seen kv.index.enabled sends no keys; the commit refuses the batch with a
// retriable error instead of leaving the index without its records.
func TestCommitRefusesUnkeyedBatchOnIndexedTopic(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.KVIndexEnabled = true })
	kv := e.topic("kv", 1, map[string]string{"cleanup.policy": "compact", "kv.index.enabled": "true"})
	res := e.commit("o1", plain(kv.ID, 0, 0))
	if res[0].ErrorCode != codeNotLeader {
		t.Fatalf("unkeyed batch on an indexed topic: code %d, want NOT_LEADER_OR_FOLLOWER", res[0].ErrorCode)
	}
	keyed := plain(kv.ID, 0, 0)
	keyed.Keys = []coordapi.KeyEntry{{Key: []byte("k")}}
	if res := e.commit("o2", keyed); res[0].ErrorCode != 0 || res[0].BaseOffset != 0 {
		t.Fatalf("keyed batch: %+v", res[0])
	}
}
