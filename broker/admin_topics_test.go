package broker

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-io/floe/coordapi"
)

func createTopicsRequest(topics ...kmsg.CreateTopicsRequestTopic) *kmsg.CreateTopicsRequest {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 5000
	req.Topics = topics
	return req
}

// newTopic is a CreateTopics entry; configs alternate names and values.
func newTopic(name string, partitions int32, rf int16, configs ...string) kmsg.CreateTopicsRequestTopic {
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, partitions, rf
	for i := 0; i+1 < len(configs); i += 2 {
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name, c.Value = configs[i], kmsg.StringPtr(configs[i+1])
		rt.Configs = append(rt.Configs, c)
	}
	return rt
}

func assignment(replicas ...[]int32) []kmsg.CreateTopicsRequestTopicReplicaAssignment {
	var out []kmsg.CreateTopicsRequestTopicReplicaAssignment
	for p, r := range replicas {
		a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		a.Partition, a.Replicas = int32(p), r
		out = append(out, a)
	}
	return out
}

func TestCreateTopics(t *testing.T) {
	for _, v := range servedVersions(t, kmsg.CreateTopics) {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			coord := newTestCoordinator(t)
			b := newAdminBroker(t, coord)
			createTopic(t, coord, "exists", 1, nil)

			withAssignment := newTopic("assigned", -1, -1)
			withAssignment.ReplicaAssignment = assignment([]int32{1}, []int32{1})
			gap := newTopic("gap", -1, -1)
			gap.ReplicaAssignment = assignment([]int32{1}, []int32{1})
			gap.ReplicaAssignment[1].Partition = 2
			unknownBroker := newTopic("unknown-broker", -1, -1)
			unknownBroker.ReplicaAssignment = assignment([]int32{9})
			uneven := newTopic("uneven", -1, -1)
			uneven.ReplicaAssignment = assignment([]int32{1}, []int32{1, 1})
			both := newTopic("both", 2, -1)
			both.ReplicaAssignment = assignment([]int32{1})
			nullConfig := newTopic("null-config", 1, 1)
			nullConfig.Configs = append(nullConfig.Configs, kmsg.CreateTopicsRequestTopicConfig{Name: "retention.ms"})

			req := createTopicsRequest(
				newTopic("a", 3, 1, "retention.ms", "1000"),
				newTopic("defaults", -1, -1),
				newTopic("rf3", 1, 3),
				newTopic("exists", 1, 1),
				newTopic("dup", 1, 1),
				newTopic("dup", 2, 1),
				newTopic("zero", 0, 1),
				newTopic("rf0", 1, 0),
				newTopic("bad-config", 1, 1, "no.such.config", "x"),
				newTopic("", 1, 1),
				withAssignment, gap, unknownBroker, uneven, both, nullConfig,
			)
			resp := serveVersion[*kmsg.CreateTopicsResponse](t, b, req, v)
			if len(resp.Topics) != len(req.Topics) {
				t.Fatalf("got %d results, want one per requested topic (%d)", len(resp.Topics), len(req.Topics))
			}
			want := []struct {
				name       string
				code       int16
				partitions int32
				msg        string // substring of the v1+ message
			}{
				{"a", 0, 3, ""},
				{"defaults", 0, 4, ""},
				{"rf3", 0, 1, ""},
				{"exists", kerr.TopicAlreadyExists.Code, -1, "Topic 'exists' already exists."},
				{"dup", kerr.InvalidRequest.Code, -1, "Duplicate topic name."},
				{"dup", kerr.InvalidRequest.Code, -1, "Duplicate topic name."},
				{"zero", kerr.InvalidPartitions.Code, -1, "partitions"},
				{"rf0", kerr.InvalidReplicationFactor.Code, -1, "Replication factor must be larger than 0"},
				{"bad-config", kerr.InvalidConfig.Code, -1, "Unknown topic config name: no.such.config"},
				{"", kerr.InvalidTopicException.Code, -1, "illegal"},
				{"assigned", 0, 2, ""},
				{"gap", kerr.InvalidReplicaAssignment.Code, -1, "consecutive 0-based"},
				{"unknown-broker", kerr.InvalidReplicaAssignment.Code, -1, "includes broker 9"},
				{"uneven", kerr.InvalidReplicaAssignment.Code, -1, "not consistent"},
				{"both", kerr.InvalidRequest.Code, -1, "Both numPartitions"},
				{"null-config", kerr.InvalidConfig.Code, -1, "Null value not supported for topic configs: retention.ms"},
			}
			for i, w := range want {
				st := resp.Topics[i]
				if st.Topic != w.name || st.ErrorCode != w.code {
					t.Errorf("result %d: got %q code %d (%s), want %q code %d", i, st.Topic, st.ErrorCode, showStr(st.ErrorMessage), w.name, w.code)
					continue
				}
				switch {
				case v >= 1 && w.code != 0 && !strings.Contains(showStr(st.ErrorMessage), w.msg):
					t.Errorf("%s: message %q, want it to contain %q", w.name, showStr(st.ErrorMessage), w.msg)
				case v >= 1 && w.code == 0 && st.ErrorMessage != nil:
					t.Errorf("%s: message %q on success", w.name, *st.ErrorMessage)
				case v == 0 && st.ErrorMessage != nil:
					t.Errorf("%s: v0 carries a message", w.name)
				}
				if v < 5 {
					continue
				}
				if st.NumPartitions != w.partitions {
					t.Errorf("%s: NumPartitions %d, want %d", w.name, st.NumPartitions, w.partitions)
				}
				wantRF := int16(1)
				if w.code != 0 {
					wantRF = -1
				}
				if st.ReplicationFactor != wantRF {
					t.Errorf("%s: ReplicationFactor %d, want %d", w.name, st.ReplicationFactor, wantRF)
				}
				if w.code != 0 {
					// Kafka sends an empty list, not null.
					if st.Configs == nil || len(st.Configs) != 0 {
						t.Errorf("%s: configs %v on error, want an empty list", w.name, st.Configs)
					}
					continue
				}
				if len(st.Configs) != len(coordapi.TopicConfigDefs) {
					t.Errorf("%s: %d configs, want every topic config (%d)", w.name, len(st.Configs), len(coordapi.TopicConfigDefs))
				}
			}

			// The created topics exist, with the asked partitions and configs.
			for name, parts := range map[string]int32{"a": 3, "defaults": 4, "rf3": 1, "assigned": 2} {
				tp, err := coord.Topic(t.Context(), name)
				if err != nil || tp.Partitions != parts {
					t.Errorf("topic %s: %+v, %v; want %d partitions", name, tp, err, parts)
				}
				if v >= 7 && resp.Topics[slices.IndexFunc(resp.Topics, func(st kmsg.CreateTopicsResponseTopic) bool { return st.Topic == name })].TopicID != tp.ID {
					t.Errorf("topic %s: response topic id differs from the coordinator's", name)
				}
			}
			if tp, _ := coord.Topic(t.Context(), "a"); tp.Config("retention.ms") != "1000" {
				t.Errorf("topic a: retention.ms %q, want 1000", tp.Config("retention.ms"))
			}
			if v >= 5 {
				a := resp.Topics[0]
				for _, c := range a.Configs {
					wantSource := int8(kmsg.ConfigSourceDefaultConfig)
					if c.Name == "retention.ms" {
						wantSource = int8(kmsg.ConfigSourceDynamicTopicConfig)
						if showStr(c.Value) != "1000" {
							t.Errorf("retention.ms value %s, want 1000", showStr(c.Value))
						}
					}
					if c.Source != wantSource || c.ReadOnly || c.IsSensitive || c.Value == nil {
						t.Errorf("config %+v: want source %d, writable, not sensitive, with a value", c, wantSource)
					}
				}
			}
		})
	}
}

func TestCreateTopicsValidateOnly(t *testing.T) {
	for _, v := range servedVersions(t, kmsg.CreateTopics) {
		if v < 1 {
			continue
		}
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			coord := newTestCoordinator(t)
			b := newAdminBroker(t, coord)
			req := createTopicsRequest(newTopic("a", 5, -1, "cleanup.policy", "compact"), newTopic("b", 0, -1))
			req.ValidateOnly = true
			resp := serveVersion[*kmsg.CreateTopicsResponse](t, b, req, v)
			if len(resp.Topics) != 2 || resp.Topics[0].ErrorCode != 0 || resp.Topics[1].ErrorCode != kerr.InvalidPartitions.Code {
				t.Fatalf("got %+v", resp.Topics)
			}
			if v >= 5 && (resp.Topics[0].NumPartitions != 5 || resp.Topics[0].ReplicationFactor != 1) {
				t.Errorf("validate-only result: %d partitions, rf %d; want 5, 1", resp.Topics[0].NumPartitions, resp.Topics[0].ReplicationFactor)
			}
			if topics, _ := coord.Topics(t.Context()); len(topics) != 0 {
				t.Errorf("validate-only created %d topics", len(topics))
			}
		})
	}
}

// New topics appear in Metadata right away.
func TestCreateTopicsThenMetadata(t *testing.T) {
	coord := newTestCoordinator(t)
	b := newAdminBroker(t, coord)
	resp := serveVersion[*kmsg.CreateTopicsResponse](t, b, createTopicsRequest(newTopic("fresh", 2, 1)), 7)
	if resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("create: code %d", resp.Topics[0].ErrorCode)
	}
	mreq := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr("fresh")
	mreq.Topics = append(mreq.Topics, mt)
	mresp := serveVersion[*kmsg.MetadataResponse](t, b, mreq, 12)
	if len(mresp.Topics) != 1 || mresp.Topics[0].ErrorCode != 0 || len(mresp.Topics[0].Partitions) != 2 || mresp.Topics[0].TopicID != resp.Topics[0].TopicID {
		t.Fatalf("metadata after create: %+v", mresp.Topics)
	}
}

func TestDeleteTopics(t *testing.T) {
	for _, v := range servedVersions(t, kmsg.DeleteTopics) {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			coord := newTestCoordinator(t)
			b := newAdminBroker(t, coord)
			a := createTopic(t, coord, "a", 1, nil)
			createTopic(t, coord, "dup", 1, nil)
			byID := createTopic(t, coord, "by-id", 1, nil)
			createTopic(t, coord, "both", 1, nil)

			req := kmsg.NewPtrDeleteTopicsRequest()
			req.TimeoutMillis = 5000
			type want struct {
				name string
				id   coordapi.TopicID
				code int16
				msg  string
			}
			var wants []want
			byName := func(name string, code int16, id coordapi.TopicID, msg string) {
				req.TopicNames = append(req.TopicNames, name)
				rt := kmsg.NewDeleteTopicsRequestTopic()
				rt.Topic = kmsg.StringPtr(name)
				req.Topics = append(req.Topics, rt)
				wants = append(wants, want{name, id, code, msg})
			}
			byName("a", 0, a.ID, "")
			byName("nope", kerr.UnknownTopicOrPartition.Code, coordapi.TopicID{}, "")
			byName("dup", kerr.InvalidRequest.Code, coordapi.TopicID{}, "Duplicate topic name.")
			byName("dup", kerr.InvalidRequest.Code, coordapi.TopicID{}, "Duplicate topic name.")
			if v >= 6 {
				rt := kmsg.NewDeleteTopicsRequestTopic()
				rt.TopicID = byID.ID
				req.Topics = append(req.Topics, rt)
				wants = append(wants, want{"by-id", byID.ID, 0, ""})
				rt.TopicID = coordapi.TopicID{1, 2, 3}
				req.Topics = append(req.Topics, rt)
				wants = append(wants, want{"", rt.TopicID, kerr.UnknownTopicID.Code, "010203"})
				rt.Topic, rt.TopicID = kmsg.StringPtr("both"), byID.ID
				req.Topics = append(req.Topics, rt)
				wants = append(wants, want{"both", byID.ID, kerr.InvalidRequest.Code, "both topic name and topic id"})
			}
			resp := serveVersion[*kmsg.DeleteTopicsResponse](t, b, req, v)
			if len(resp.Topics) != len(wants) {
				t.Fatalf("got %d results, want %d", len(resp.Topics), len(wants))
			}
			for i, w := range wants {
				st := resp.Topics[i]
				name := ""
				if st.Topic != nil {
					name = *st.Topic
				}
				if name != w.name || st.ErrorCode != w.code {
					t.Errorf("result %d: got %q code %d, want %q code %d", i, name, st.ErrorCode, w.name, w.code)
				}
				if v >= 6 && st.TopicID != w.id {
					t.Errorf("result %d (%s): topic id %x, want %x", i, w.name, st.TopicID, w.id)
				}
				if v >= 5 && !strings.Contains(showStr(st.ErrorMessage), w.msg) {
					t.Errorf("result %d (%s): message %s, want %q", i, w.name, showStr(st.ErrorMessage), w.msg)
				}
			}
			wantLeft := []string{"both", "by-id", "dup"}
			if v >= 6 {
				wantLeft = []string{"both", "dup"}
			}
			topics, _ := coord.Topics(t.Context())
			var left []string
			for _, tp := range topics {
				left = append(left, tp.Name)
			}
			if !slices.Equal(left, wantLeft) {
				t.Errorf("topics left %v, want %v", left, wantLeft)
			}
		})
	}
}

func TestCreatePartitions(t *testing.T) {
	for _, v := range servedVersions(t, kmsg.CreatePartitions) {
		for _, validateOnly := range []bool{false, true} {
			t.Run(fmt.Sprintf("v%d/validateOnly=%v", v, validateOnly), func(t *testing.T) {
				coord := newTestCoordinator(t)
				b := newAdminBroker(t, coord)
				for _, name := range []string{"grow", "shrink", "dup", "assigned", "bad-assignment", "assigned-unknown"} {
					createTopic(t, coord, name, 2, nil)
				}
				req := kmsg.NewPtrCreatePartitionsRequest()
				req.TimeoutMillis, req.ValidateOnly = 5000, validateOnly
				add := func(name string, count int32, replicas ...[]int32) {
					rt := kmsg.NewCreatePartitionsRequestTopic()
					rt.Topic, rt.Count = name, count
					for _, r := range replicas {
						a := kmsg.NewCreatePartitionsRequestTopicAssignment()
						a.Replicas = r
						rt.Assignment = append(rt.Assignment, a)
					}
					req.Topics = append(req.Topics, rt)
				}
				add("grow", 5)
				add("shrink", 1)
				add("nope", 3)
				add("dup", 3)
				add("dup", 4)
				add("assigned", 4, []int32{1}, []int32{1})
				add("bad-assignment", 4, []int32{1})
				add("assigned-unknown", 3, []int32{7})
				resp := serveVersion[*kmsg.CreatePartitionsResponse](t, b, req, v)
				want := []struct {
					name string
					code int16
					msg  string
				}{
					{"grow", 0, ""},
					{"shrink", kerr.InvalidPartitions.Code, "Topic currently has 2 partitions, which is higher than the requested 1."},
					{"nope", kerr.UnknownTopicOrPartition.Code, ""},
					{"dup", kerr.InvalidRequest.Code, "Duplicate topic name."},
					{"dup", kerr.InvalidRequest.Code, "Duplicate topic name."},
					{"assigned", 0, ""},
					{"bad-assignment", kerr.InvalidReplicaAssignment.Code, "Attempted to add 2 additional partition(s), but only 1 assignment(s) were specified."},
					{"assigned-unknown", kerr.InvalidReplicaAssignment.Code, "includes broker 7"},
				}
				if len(resp.Topics) != len(want) {
					t.Fatalf("got %d results, want %d", len(resp.Topics), len(want))
				}
				for i, w := range want {
					st := resp.Topics[i]
					if st.Topic != w.name || st.ErrorCode != w.code || !strings.Contains(showStr(st.ErrorMessage), w.msg) {
						t.Errorf("result %d: got %q code %d message %s, want %q code %d message ~%q", i, st.Topic, st.ErrorCode, showStr(st.ErrorMessage), w.name, w.code, w.msg)
					}
					if w.code == 0 && st.ErrorMessage != nil {
						t.Errorf("%s: message on success: %s", w.name, *st.ErrorMessage)
					}
				}
				wantGrow, wantAssigned := int32(5), int32(4)
				if validateOnly {
					wantGrow, wantAssigned = 2, 2
				}
				if tp, _ := coord.Topic(t.Context(), "grow"); tp.Partitions != wantGrow {
					t.Errorf("grow: %d partitions, want %d", tp.Partitions, wantGrow)
				}
				if tp, _ := coord.Topic(t.Context(), "assigned"); tp.Partitions != wantAssigned {
					t.Errorf("assigned: %d partitions, want %d", tp.Partitions, wantAssigned)
				}
			})
		}
	}
}

func TestDescribeCluster(t *testing.T) {
	for _, v := range servedVersions(t, kmsg.DescribeCluster) {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			b := newAdminBroker(t, newTestCoordinator(t), func(o *Options) {
				o.NodeID, o.AdvertisedAddr, o.Rack = 3, "10.1.2.3:19092", "rack-a"
			})
			req := kmsg.NewPtrDescribeClusterRequest()
			resp := serveVersion[*kmsg.DescribeClusterResponse](t, b, req, v)
			if resp.ErrorCode != 0 || resp.ClusterID != "floe-test" || resp.ControllerID != 3 || len(resp.Brokers) != 1 {
				t.Fatalf("got %+v", resp)
			}
			if br := resp.Brokers[0]; br.NodeID != 3 || br.Host != "10.1.2.3" || br.Port != 19092 || showStr(br.Rack) != "rack-a" {
				t.Errorf("broker %+v", br)
			}
			if resp.ClusterAuthorizedOperations != -2147483648 {
				t.Errorf("authorized operations %d without asking", resp.ClusterAuthorizedOperations)
			}
			if v >= 1 && resp.EndpointType != 1 {
				t.Errorf("endpoint type %d, want 1", resp.EndpointType)
			}

			req.IncludeClusterAuthorizedOperations = true
			resp = serveVersion[*kmsg.DescribeClusterResponse](t, b, req, v)
			if ops := resp.ClusterAuthorizedOperations; ops&(1<<8) == 0 || ops&(1<<10) == 0 || ops < 0 {
				t.Errorf("authorized operations %b: want DESCRIBE and DESCRIBE_CONFIGS", ops)
			}

			if v >= 1 {
				req.EndpointType = 2 // controllers
				resp = serveVersion[*kmsg.DescribeClusterResponse](t, b, req, v)
				if resp.ErrorCode != kerr.UnsupportedEndpointType.Code || resp.ErrorMessage == nil || len(resp.Brokers) != 0 {
					t.Errorf("controllers endpoint: got code %d message %s brokers %d", resp.ErrorCode, showStr(resp.ErrorMessage), len(resp.Brokers))
				}
			}
		})
	}
}

// ApiVersions advertises exactly the versions these handlers serve.
func TestAdminAPIVersions(t *testing.T) {
	want := map[kmsg.Key][2]int16{
		kmsg.ListOffsets:             {1, 8},
		kmsg.CreateTopics:            {0, 7},
		kmsg.DeleteTopics:            {0, 6},
		kmsg.DeleteRecords:           {0, 2},
		kmsg.InitProducerID:          {0, 4},
		kmsg.OffsetForLeaderEpoch:    {0, 4},
		kmsg.DescribeConfigs:         {0, 4},
		kmsg.AlterConfigs:            {0, 2},
		kmsg.CreatePartitions:        {0, 3},
		kmsg.IncrementalAlterConfigs: {0, 1},
		kmsg.DescribeCluster:         {0, 1},
	}
	resp := kmsg.NewPtrApiVersionsResponse()
	fillAPIVersions(resp)
	got := map[kmsg.Key][2]int16{}
	for _, k := range resp.ApiKeys {
		got[kmsg.Key(k.ApiKey)] = [2]int16{k.MinVersion, k.MaxVersion}
	}
	for key, w := range want {
		if got[key] != w {
			t.Errorf("%s: advertised %v, want %v", kmsg.NameForKey(int16(key)), got[key], w)
		}
		// kmsg must know every advertised version.
		if w[1] > kmsg.RequestForKey(int16(key)).MaxVersion() {
			t.Errorf("%s: v%d is beyond kmsg", kmsg.NameForKey(int16(key)), w[1])
		}
	}
}
