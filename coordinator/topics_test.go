package coordinator

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/floe-io/floe/coordapi"
)

func strp(s string) *string { return &s }

func TestCreateTopic(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.DefaultPartitions = 3 })
	ctx := context.Background()
	e.topic("exists", 1, nil)
	e.topic("a.b", 1, nil)

	tests := []struct {
		name string
		req  coordapi.CreateTopicRequest
		err  *kerr.Error
		msg  string // substring of the error
	}{
		{"empty name", coordapi.CreateTopicRequest{Name: "", Partitions: 1}, kerr.InvalidTopicException, "can't be empty"},
		{"dot", coordapi.CreateTopicRequest{Name: ".", Partitions: 1}, kerr.InvalidTopicException, `"." or ".."`},
		{"dotdot", coordapi.CreateTopicRequest{Name: "..", Partitions: 1}, kerr.InvalidTopicException, `"." or ".."`},
		{"too long", coordapi.CreateTopicRequest{Name: strings.Repeat("x", 250), Partitions: 1}, kerr.InvalidTopicException, "249"},
		{"bad char", coordapi.CreateTopicRequest{Name: "a b", Partitions: 1}, kerr.InvalidTopicException, "ASCII alphanumerics"},
		{"leading slash", coordapi.CreateTopicRequest{Name: "/ab", Partitions: 1}, kerr.InvalidTopicException, "not first or last"},
		{"trailing slash", coordapi.CreateTopicRequest{Name: "ab/", Partitions: 1}, kerr.InvalidTopicException, "not first or last"},
		{"space", coordapi.CreateTopicRequest{Name: "a b", Partitions: 1}, kerr.InvalidTopicException, "ASCII alphanumerics"},
		{"exists", coordapi.CreateTopicRequest{Name: "exists", Partitions: 1}, kerr.TopicAlreadyExists, "already exists"},
		{"collides", coordapi.CreateTopicRequest{Name: "a_b", Partitions: 1}, kerr.InvalidTopicException, "collides"},
		{"zero partitions", coordapi.CreateTopicRequest{Name: "z", Partitions: 0}, kerr.InvalidPartitions, "non-positive"},
		{"negative partitions", coordapi.CreateTopicRequest{Name: "z", Partitions: -2}, kerr.InvalidPartitions, "non-positive"},
		{"huge partitions", coordapi.CreateTopicRequest{Name: "z", Partitions: maxPartitions + 1}, kerr.InvalidPartitions, "maximum"},
		{"rf 0", coordapi.CreateTopicRequest{Name: "z", Partitions: 1, ReplicationFactor: 0}, kerr.InvalidReplicationFactor, "larger than 0"},
		{"rf 4", coordapi.CreateTopicRequest{Name: "z", Partitions: 1, ReplicationFactor: 4}, kerr.InvalidReplicationFactor, "available brokers"},
		{"unknown config", coordapi.CreateTopicRequest{Name: "z", Partitions: 1, ReplicationFactor: 1, Configs: map[string]string{"retention.mss": "1"}},
			kerr.InvalidConfig, "Unknown topic config name: retention.mss"},
		{"bad long", coordapi.CreateTopicRequest{Name: "z", Partitions: 1, ReplicationFactor: 1, Configs: map[string]string{"retention.ms": "soon"}},
			kerr.InvalidConfig, "Invalid value soon for configuration retention.ms: Not a number of type LONG"},
		{"below min", coordapi.CreateTopicRequest{Name: "z", Partitions: 1, ReplicationFactor: 1, Configs: map[string]string{"retention.ms": "-2"}},
			kerr.InvalidConfig, "Value must be at least -1"},
		{"bad enum", coordapi.CreateTopicRequest{Name: "z", Partitions: 1, ReplicationFactor: 1, Configs: map[string]string{"message.timestamp.type": "Now"}},
			kerr.InvalidConfig, "String must be one of: CreateTime, LogAppendTime"},
		{"bad list item", coordapi.CreateTopicRequest{Name: "z", Partitions: 1, ReplicationFactor: 1, Configs: map[string]string{"cleanup.policy": "compact,squash"}},
			kerr.InvalidConfig, "cleanup.policy"},
		{"bad bool", coordapi.CreateTopicRequest{Name: "z", Partitions: 1, ReplicationFactor: 1, Configs: map[string]string{"preallocate": "yes"}},
			kerr.InvalidConfig, "true or false"},
		{"bad double", coordapi.CreateTopicRequest{Name: "z", Partitions: 1, ReplicationFactor: 1, Configs: map[string]string{"min.cleanable.dirty.ratio": "1.5"}},
			kerr.InvalidConfig, "min.cleanable.dirty.ratio"},
		{"lag conflict", coordapi.CreateTopicRequest{Name: "z", Partitions: 1, ReplicationFactor: 1, Configs: map[string]string{"min.compaction.lag.ms": "10", "max.compaction.lag.ms": "5"}},
			kerr.InvalidConfig, "conflict"},
		{"kv without compact", coordapi.CreateTopicRequest{Name: "z", Partitions: 1, ReplicationFactor: 1, Configs: map[string]string{"kv.index.enabled": "true"}},
			kerr.InvalidConfig, "requires cleanup.policy to include compact"},
		{"kv without cluster switch", coordapi.CreateTopicRequest{Name: "z", Partitions: 1, ReplicationFactor: 1, Configs: map[string]string{"kv.index.enabled": "true", "cleanup.policy": "compact"}},
			kerr.InvalidConfig, "--kv-index-enabled"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := e.c.CreateTopic(ctx, tt.req)
			wantKerr(t, err, tt.err)
			var ke *coordapi.KafkaError
			if !errors.As(err, &ke) || !strings.Contains(ke.Message, tt.msg) {
				t.Errorf("message of %v does not contain %q", err, tt.msg)
			}
		})
	}
	if ts, _ := e.c.Topics(ctx); len(ts) != 2 {
		t.Errorf("failed creates left topics: %+v", ts)
	}

	// Defaults, validate-only, trimmed values.
	v, err := e.c.CreateTopic(ctx, coordapi.CreateTopicRequest{Name: "v", Partitions: -1, ReplicationFactor: 3, ValidateOnly: true,
		Configs: map[string]string{"retention.ms": " 1000 "}})
	if err != nil || v.Partitions != 3 || !v.ID.IsZero() || v.Configs["retention.ms"] != "1000" {
		t.Fatalf("validate only: %+v %v", v, err)
	}
	if _, err := e.c.Topic(ctx, "v"); err == nil {
		t.Fatal("validate-only created the topic")
	}
	tp, err := e.c.CreateTopic(ctx, coordapi.CreateTopicRequest{Name: "v", Partitions: -1, ReplicationFactor: -1})
	if err != nil || tp.Partitions != 3 || tp.ID.IsZero() {
		t.Fatalf("create with defaults: %+v %v", tp, err)
	}
	got, err := e.c.Topic(ctx, "v")
	if err != nil || got.ID != tp.ID || got.Partitions != 3 {
		t.Errorf("Topic: %+v %v", got, err)
	}
	if got, err := e.c.TopicByID(ctx, tp.ID); err != nil || got.Name != "v" {
		t.Errorf("TopicByID: %+v %v", got, err)
	}
	_, err = e.c.Topic(ctx, "nope")
	wantKerr(t, err, kerr.UnknownTopicOrPartition)
	_, err = e.c.TopicByID(ctx, coordapi.TopicID{1})
	wantKerr(t, err, kerr.UnknownTopicID)
	ts, _ := e.c.Topics(ctx)
	if len(ts) != 3 || ts[0].Name != "a.b" || ts[1].Name != "exists" || ts[2].Name != "v" {
		t.Errorf("Topics not sorted: %+v", ts)
	}

	// Names at the limits are fine.
	e.topic(strings.Repeat("x", 249), 1, nil)
	e.topic("A-z_0.9", 1, nil)
}

func TestKVIndexTopics(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.KVIndexEnabled = true })
	ctx := context.Background()
	tp := e.topic("kv", 1, map[string]string{"cleanup.policy": "compact,delete", "kv.index.enabled": "true"})
	if tp.Config("kv.index.enabled") != "true" {
		t.Fatal(tp.Configs)
	}
	// Removing compact while indexed is refused.
	err := e.c.AlterTopicConfigs(ctx, "kv", []coordapi.ConfigOp{{Name: "cleanup.policy", Op: coordapi.OpSubtract, Value: strp("compact")}}, true, false)
	wantKerr(t, err, kerr.InvalidConfig)
	// Turning it off and the policy back to delete in one request is fine.
	err = e.c.AlterTopicConfigs(ctx, "kv", []coordapi.ConfigOp{
		{Name: "kv.index.enabled", Op: coordapi.OpDelete},
		{Name: "cleanup.policy", Op: coordapi.OpSubtract, Value: strp("compact")},
	}, true, false)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := e.c.Topic(ctx, "kv")
	if got.Config("kv.index.enabled") != "false" || got.Config("cleanup.policy") != "delete" {
		t.Errorf("configs %+v", got.Configs)
	}

	// A topic indexed while the switch was on keeps working after a restart
	// without it, but cannot be turned on anew.
	e.topic("kv2", 1, map[string]string{"cleanup.policy": "compact", "kv.index.enabled": "true"})
	e.opts.KVIndexEnabled = false
	e.reopen()
	if err := e.c.AlterTopicConfigs(ctx, "kv2", []coordapi.ConfigOp{{Name: "retention.ms", Op: coordapi.OpSet, Value: strp("5")}}, true, false); err != nil {
		t.Errorf("alter unrelated config of indexed topic: %v", err)
	}
	err = e.c.AlterTopicConfigs(ctx, "kv", []coordapi.ConfigOp{
		{Name: "cleanup.policy", Op: coordapi.OpSet, Value: strp("compact")},
		{Name: "kv.index.enabled", Op: coordapi.OpSet, Value: strp("true")},
	}, true, false)
	wantKerr(t, err, kerr.InvalidConfig)
}

func TestAlterTopicConfigs(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.topic("t", 1, map[string]string{"retention.ms": "1000", "segment.ms": "2000"})
	cfg := func() map[string]string {
		tp, err := e.c.Topic(ctx, "t")
		if err != nil {
			t.Fatal(err)
		}
		return tp.Configs
	}
	alter := func(incremental, validateOnly bool, ops ...coordapi.ConfigOp) error {
		return e.c.AlterTopicConfigs(ctx, "t", ops, incremental, validateOnly)
	}

	steps := []struct {
		name        string
		incremental bool
		ops         []coordapi.ConfigOp
		err         *kerr.Error
		want        string // cleanup.policy / retention.ms / segment.ms after
	}{
		{"append to default", true, []coordapi.ConfigOp{{Name: "cleanup.policy", Op: coordapi.OpAppend, Value: strp("compact")}}, nil, "delete,compact 1000 2000"},
		{"append present", true, []coordapi.ConfigOp{{Name: "cleanup.policy", Op: coordapi.OpAppend, Value: strp("compact")}}, nil, "delete,compact 1000 2000"},
		{"subtract", true, []coordapi.ConfigOp{{Name: "cleanup.policy", Op: coordapi.OpSubtract, Value: strp("delete")}}, nil, "compact 1000 2000"},
		{"subtract all", true, []coordapi.ConfigOp{{Name: "cleanup.policy", Op: coordapi.OpSubtract, Value: strp("compact")}}, nil, " 1000 2000"},
		{"append to non-list", true, []coordapi.ConfigOp{{Name: "retention.ms", Op: coordapi.OpAppend, Value: strp("5")}}, kerr.InvalidConfig, " 1000 2000"},
		{"subtract from non-list", true, []coordapi.ConfigOp{{Name: "retention.ms", Op: coordapi.OpSubtract, Value: strp("5")}}, kerr.InvalidConfig, " 1000 2000"},
		{"set and delete", true, []coordapi.ConfigOp{
			{Name: "retention.ms", Op: coordapi.OpSet, Value: strp("-1")},
			{Name: "segment.ms", Op: coordapi.OpDelete},
			{Name: "cleanup.policy", Op: coordapi.OpDelete},
		}, nil, "delete -1 604800000"},
		{"one bad op fails all", true, []coordapi.ConfigOp{
			{Name: "retention.ms", Op: coordapi.OpSet, Value: strp("7")},
			{Name: "segment.ms", Op: coordapi.OpSet, Value: strp("0")},
		}, kerr.InvalidConfig, "delete -1 604800000"},
		{"unknown name", true, []coordapi.ConfigOp{{Name: "nope", Op: coordapi.OpSet, Value: strp("1")}}, kerr.InvalidConfig, "delete -1 604800000"},
		{"unknown delete", true, []coordapi.ConfigOp{{Name: "nope", Op: coordapi.OpDelete}}, kerr.InvalidConfig, "delete -1 604800000"},
		{"null set", true, []coordapi.ConfigOp{{Name: "retention.ms", Op: coordapi.OpSet}}, kerr.InvalidRequest, "delete -1 604800000"},
		{"duplicate", true, []coordapi.ConfigOp{
			{Name: "retention.ms", Op: coordapi.OpSet, Value: strp("1")},
			{Name: "retention.ms", Op: coordapi.OpSet, Value: strp("2")},
		}, kerr.InvalidRequest, "delete -1 604800000"},
		{"bad op", true, []coordapi.ConfigOp{{Name: "retention.ms", Op: 9, Value: strp("1")}}, kerr.InvalidRequest, "delete -1 604800000"},
		{"legacy replaces the whole set", false, []coordapi.ConfigOp{{Name: "segment.ms", Value: strp("3000")}}, nil, "delete 604800000 3000"},
		{"legacy unknown", false, []coordapi.ConfigOp{{Name: "nope", Value: strp("1")}}, kerr.InvalidConfig, "delete 604800000 3000"},
		{"legacy empty resets", false, nil, nil, "delete 604800000 604800000"},
	}
	for _, s := range steps {
		err := alter(s.incremental, false, s.ops...)
		if s.err != nil {
			wantKerr(t, err, s.err)
		} else if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		tp, _ := e.c.Topic(ctx, "t")
		if got := tp.Config("cleanup.policy") + " " + tp.Config("retention.ms") + " " + tp.Config("segment.ms"); got != s.want {
			t.Fatalf("%s: got %q, want %q (%v)", s.name, got, s.want, tp.Configs)
		}
	}
	if len(cfg()) != 0 {
		t.Errorf("legacy reset left %v", cfg())
	}
	// validateOnly changes nothing.
	if err := alter(true, true, coordapi.ConfigOp{Name: "retention.ms", Op: coordapi.OpSet, Value: strp("5")}); err != nil {
		t.Fatal(err)
	}
	if len(cfg()) != 0 {
		t.Errorf("validateOnly changed %v", cfg())
	}
	err := e.c.AlterTopicConfigs(ctx, "nope", nil, true, false)
	wantKerr(t, err, kerr.UnknownTopicOrPartition)

	// Switching to LogAppendTime applies to the next commits.
	if err := alter(true, false, coordapi.ConfigOp{Name: "message.timestamp.type", Op: coordapi.OpSet, Value: strp("LogAppendTime")}); err != nil {
		t.Fatal(err)
	}
	tp, _ := e.c.Topic(ctx, "t")
	if r := e.commit("o", plain(tp.ID, 0, 0)); r[0].LogAppendTime != e.clock.Now().UnixMilli() {
		t.Errorf("LogAppendTime not applied: %+v", r[0])
	}
}

func TestDescribeTopicConfig(t *testing.T) {
	tp := coordapi.Topic{Name: "t", Configs: map[string]string{"retention.ms": "5"}}
	entries := coordapi.DescribeTopicConfig(tp)
	if len(entries) != len(coordapi.TopicConfigDefs) {
		t.Fatalf("%d entries, want %d", len(entries), len(coordapi.TopicConfigDefs))
	}
	seen := map[string]coordapi.ConfigEntry{}
	for i, en := range entries {
		if i > 0 && entries[i-1].Name >= en.Name {
			t.Errorf("not sorted at %s", en.Name)
		}
		if en.Doc == "" || en.Type == coordapi.ConfigTypeUnknown || en.Sensitive {
			t.Errorf("entry %+v", en)
		}
		seen[en.Name] = en
	}
	if r := seen["retention.ms"]; r.Value != "5" || r.IsDefault || r.Source != coordapi.ConfigSourceDynamicTopic || r.Type != coordapi.ConfigTypeLong {
		t.Errorf("retention.ms %+v", r)
	}
	want := map[string]string{
		"cleanup.policy": "delete", "retention.bytes": "-1", "max.message.bytes": "1048588",
		"message.timestamp.type": "CreateTime", "segment.bytes": "134217728", "min.insync.replicas": "1",
		"compression.type": "producer", "kv.index.enabled": "false", "segment.ms": "604800000",
		"message.timestamp.difference.max.ms": "9223372036854775807", "message.timestamp.before.max.ms": "9223372036854775807",
		"message.timestamp.after.max.ms": "9223372036854775807", "delete.retention.ms": "86400000",
		"min.compaction.lag.ms": "0", "max.compaction.lag.ms": "9223372036854775807", "min.cleanable.dirty.ratio": "0.5",
		"unclean.leader.election.enable": "false", "flush.messages": "9223372036854775807", "flush.ms": "9223372036854775807",
		"index.interval.bytes": "4096", "file.delete.delay.ms": "60000", "preallocate": "false",
		"segment.index.bytes": "10485760", "segment.jitter.ms": "0", "message.downconversion.enable": "true",
		"local.retention.ms": "-2", "local.retention.bytes": "-2", "remote.storage.enable": "false",
	}
	for name, v := range want {
		en, ok := seen[name]
		if !ok || en.Value != v || !en.IsDefault || en.Source != coordapi.ConfigSourceDefault {
			t.Errorf("%s: %+v, want default %s", name, en, v)
		}
		if tp.Config(name) != v {
			t.Errorf("Config(%s) = %q", name, tp.Config(name))
		}
		// Every default passes its own validation.
		if _, err := coordapi.ValidateTopicConfigs(map[string]string{name: v}, false, false); err != nil {
			t.Errorf("default of %s invalid: %v", name, err)
		}
	}
	if seen["cleanup.policy"].Type != coordapi.ConfigTypeList || seen["preallocate"].Type != coordapi.ConfigTypeBoolean || seen["min.cleanable.dirty.ratio"].Type != coordapi.ConfigTypeDouble {
		t.Error("types")
	}
	if tp.Config("retention.ms") != "5" || tp.Config("nope") != "" {
		t.Error("Topic.Config")
	}
	for _, d := range coordapi.TopicConfigDefs {
		if _, err := coordapi.ValidateTopicConfigs(map[string]string{d.Name: d.Default}, false, false); err != nil {
			t.Errorf("default of %s invalid: %v", d.Name, err)
		}
	}
}

func TestCreatePartitions(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	tp := e.topic("t", 2, nil)
	e.commit("o", plain(tp.ID, 1, 4))
	err := e.c.CreatePartitions(ctx, "t", 1, false)
	wantKerr(t, err, kerr.InvalidPartitions)
	err = e.c.CreatePartitions(ctx, "t", 2, false)
	wantKerr(t, err, kerr.InvalidPartitions)
	err = e.c.CreatePartitions(ctx, "nope", 3, false)
	wantKerr(t, err, kerr.UnknownTopicOrPartition)
	if err := e.c.CreatePartitions(ctx, "t", 5, true); err != nil {
		t.Fatal(err)
	}
	if got, _ := e.c.Topic(ctx, "t"); got.Partitions != 2 {
		t.Fatalf("validateOnly added partitions: %+v", got)
	}
	if err := e.c.CreatePartitions(ctx, "t", 5, false); err != nil {
		t.Fatal(err)
	}
	if got := baseOffsets(e.commit("o2", plain(tp.ID, 4, 0), plain(tp.ID, 1, 0), plain(tp.ID, 5, 0))); got != "0 5 err3" {
		t.Errorf("commit to new partitions: %s", got)
	}
	e.reopen()
	if got, _ := e.c.Topic(ctx, "t"); got.Partitions != 5 {
		t.Errorf("after restart: %+v", got)
	}
	if st := e.state(tp.ID, 4); st.HighWatermark != 1 {
		t.Errorf("new partition state %+v", st)
	}
}

func TestDeleteTopic(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	a := e.topic("a", 2, nil)
	b := e.topic("b", 1, nil)
	e.commit("shared", idem(a.ID, 0, 4, 1, 0, 0), plain(b.ID, 0, 0), plain(a.ID, 1, 0))
	e.commit("only-a", plain(a.ID, 0, 0))

	id, err := e.c.DeleteTopic(ctx, "a")
	if err != nil || id != a.ID {
		t.Fatalf("DeleteTopic: %v %v", id, err)
	}
	if o := e.object("shared"); o.LiveBytes != batchLen || o.State != ObjectLive {
		t.Errorf("shared object %+v", o)
	}
	if o := e.object("only-a"); o.LiveBytes != 0 || o.State != ObjectGarbage {
		t.Errorf("only-a object %+v", o)
	}
	_, err = e.c.FindBatches(ctx, coordapi.FindBatchesRequest{TopicID: a.ID})
	wantKerr(t, err, kerr.UnknownTopicID)
	_, err = e.c.TopicByID(ctx, a.ID)
	wantKerr(t, err, kerr.UnknownTopicID)
	if got := baseOffsets(e.commit("late", plain(a.ID, 0, 0))); got != "err100" {
		t.Errorf("commit to deleted topic: %s", got)
	}
	_, err = e.c.DeleteTopic(ctx, "a")
	wantKerr(t, err, kerr.UnknownTopicOrPartition)
	_, err = e.c.DeleteTopicByID(ctx, a.ID)
	wantKerr(t, err, kerr.UnknownTopicID)

	// Recreated: a new id, empty partitions, no producer state.
	a2 := e.topic("a", 1, nil)
	if a2.ID == a.ID {
		t.Fatal("recreated topic reused its id")
	}
	if got := baseOffsets(e.commit("new", idem(a2.ID, 0, 0, 1, 0, 7))); got != "0" {
		t.Errorf("commit to recreated topic: %s", got)
	}
	e.reopen()
	if _, err := e.c.Topic(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if o := e.object("only-a"); o.State != ObjectGarbage {
		t.Errorf("after restart: %+v", o)
	}
	name, err := e.c.DeleteTopicByID(ctx, b.ID)
	if err != nil || name != "b" {
		t.Fatalf("DeleteTopicByID: %q %v", name, err)
	}
	if o := e.object("shared"); o.LiveBytes != 0 || o.State != ObjectGarbage {
		t.Errorf("shared object after deleting b %+v", o)
	}
	if ts, _ := e.c.Topics(ctx); len(ts) != 1 || ts[0].ID != a2.ID {
		t.Errorf("topics %+v", ts)
	}
}
