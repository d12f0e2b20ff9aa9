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

func describeConfigsRequest(resources ...kmsg.DescribeConfigsRequestResource) *kmsg.DescribeConfigsRequest {
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.Resources = resources
	return req
}

func configResource(typ kmsg.ConfigResourceType, name string, names ...string) kmsg.DescribeConfigsRequestResource {
	r := kmsg.NewDescribeConfigsRequestResource()
	r.ResourceType, r.ResourceName, r.ConfigNames = typ, name, names
	return r
}

func configByName(configs []kmsg.DescribeConfigsResponseResourceConfig, name string) (kmsg.DescribeConfigsResponseResourceConfig, bool) {
	i := slices.IndexFunc(configs, func(c kmsg.DescribeConfigsResponseResourceConfig) bool { return c.Name == name })
	if i < 0 {
		return kmsg.DescribeConfigsResponseResourceConfig{}, false
	}
	return configs[i], true
}

func TestDescribeTopicConfigs(t *testing.T) {
	coord := newTestCoordinator(t)
	createTopic(t, coord, "t", 1, map[string]string{"retention.ms": "1000", "cleanup.policy": "compact,delete"})
	b := newAdminBroker(t, coord)
	for _, v := range servedVersions(t, kmsg.DescribeConfigs) {
		for _, extras := range []bool{false, true} {
			t.Run(fmt.Sprintf("v%d/synonyms+docs=%v", v, extras), func(t *testing.T) {
				req := describeConfigsRequest(
					configResource(kmsg.ConfigResourceTypeTopic, "t"),
					configResource(kmsg.ConfigResourceTypeTopic, "nope"),
					configResource(kmsg.ConfigResourceTypeTopic, "t", "retention.ms", "no.such.config", "max.message.bytes"),
					configResource(kmsg.ConfigResourceTypeBrokerLogger, "1"),
					configResource(kmsg.ConfigResourceTypeTopic, "t"),
				)
				req.Resources[4].ConfigNames = []string{} // empty, not null
				req.IncludeSynonyms, req.IncludeDocumentation = extras, extras
				resp := serveVersion[*kmsg.DescribeConfigsResponse](t, b, req, v)
				if len(resp.Resources) != 5 {
					t.Fatalf("got %d resources, want 5", len(resp.Resources))
				}
				if n := len(resp.Resources[4].Configs); n != len(coordapi.TopicConfigDefs) {
					t.Errorf("empty config names: %d configs, want all", n)
				}
				all, unknown, filtered, logger := resp.Resources[0], resp.Resources[1], resp.Resources[2], resp.Resources[3]

				if all.ErrorCode != 0 || all.ResourceName != "t" || all.ResourceType != kmsg.ConfigResourceTypeTopic {
					t.Fatalf("topic t: code %d (%s)", all.ErrorCode, showStr(all.ErrorMessage))
				}
				// Kafka's message on success is "", never null.
				if all.ErrorMessage == nil || *all.ErrorMessage != "" {
					t.Errorf("topic t: error message %s, want empty (not null)", showStr(all.ErrorMessage))
				}
				if len(all.Configs) != len(coordapi.TopicConfigDefs) {
					t.Errorf("topic t: %d configs, want every topic config (%d)", len(all.Configs), len(coordapi.TopicConfigDefs))
				}
				for _, d := range coordapi.TopicConfigDefs {
					c, ok := configByName(all.Configs, d.Name)
					if !ok {
						t.Errorf("topic t: %s missing", d.Name)
						continue
					}
					explicit := d.Name == "retention.ms" || d.Name == "cleanup.policy"
					wantValue := d.Default
					switch d.Name {
					case "retention.ms":
						wantValue = "1000"
					case "cleanup.policy":
						wantValue = "compact,delete"
					}
					if showStr(c.Value) != wantValue || c.ReadOnly || c.IsSensitive {
						t.Errorf("%s: value %s read-only %v sensitive %v; want %s, false, false", d.Name, showStr(c.Value), c.ReadOnly, c.IsSensitive, wantValue)
					}
					if v == 0 && c.IsDefault == explicit {
						t.Errorf("%s: v0 IsDefault %v, want %v", d.Name, c.IsDefault, !explicit)
					}
					if v >= 1 {
						wantSource := kmsg.ConfigSourceDefaultConfig
						if explicit {
							wantSource = kmsg.ConfigSourceDynamicTopicConfig
						}
						if c.Source != wantSource {
							t.Errorf("%s: source %v, want %v", d.Name, c.Source, wantSource)
						}
					}
					if v >= 3 {
						if c.ConfigType != kmsg.ConfigType(d.Type) {
							t.Errorf("%s: type %v, want %v", d.Name, c.ConfigType, d.Type)
						}
						if extras != (c.Documentation != nil) || (extras && *c.Documentation != d.Doc) {
							t.Errorf("%s: documentation %s with IncludeDocumentation=%v", d.Name, showStr(c.Documentation), extras)
						}
					}
					// Synonyms: the topic's own value, then the broker
					// config behind the default (none for floe's own and
					// some newer configs, as in Kafka).
					wantSynonyms := 0
					if v >= 1 && extras && explicit {
						wantSynonyms++
					}
					if v >= 1 && extras && d.BrokerSynonym != "" {
						wantSynonyms++
					}
					if len(c.ConfigSynonyms) != wantSynonyms {
						t.Errorf("%s: synonyms %v, want %d", d.Name, c.ConfigSynonyms, wantSynonyms)
					}
				}
				if c, _ := configByName(all.Configs, "cleanup.policy"); v >= 3 && c.ConfigType != kmsg.ConfigTypeList {
					t.Errorf("cleanup.policy: type %v, want LIST", c.ConfigType)
				}
				if c, _ := configByName(all.Configs, "retention.ms"); v >= 1 && extras {
					want := []string{"retention.ms=1000/DYNAMIC_TOPIC_CONFIG", "log.retention.ms=604800000/DEFAULT_CONFIG"}
					var got []string
					for _, s := range c.ConfigSynonyms {
						got = append(got, fmt.Sprintf("%s=%s/%s", s.Name, showStr(s.Value), s.Source))
					}
					if !slices.Equal(got, want) {
						t.Errorf("retention.ms synonyms %v, want %v", got, want)
					}
				}

				if unknown.ErrorCode != kerr.UnknownTopicOrPartition.Code || len(unknown.Configs) != 0 ||
					showStr(unknown.ErrorMessage) != "The topic 'nope' does not exist." {
					t.Errorf("unknown topic: code %d message %s configs %d", unknown.ErrorCode, showStr(unknown.ErrorMessage), len(unknown.Configs))
				}

				var names []string
				for _, c := range filtered.Configs {
					names = append(names, c.Name)
				}
				if filtered.ErrorCode != 0 || !slices.Equal(names, []string{"max.message.bytes", "retention.ms"}) {
					t.Errorf("filtered: code %d names %v", filtered.ErrorCode, names)
				}

				if logger.ErrorCode != kerr.InvalidRequest.Code || logger.ErrorMessage == nil || logger.ResourceType != kmsg.ConfigResourceTypeBrokerLogger {
					t.Errorf("broker logger: code %d message %s", logger.ErrorCode, showStr(logger.ErrorMessage))
				}
			})
		}
	}
}

func TestDescribeBrokerConfigs(t *testing.T) {
	b := newAdminBroker(t, newTestCoordinator(t), func(o *Options) {
		o.NodeID, o.DefaultPartitions, o.AutoCreateTopics, o.KVIndexEnabled = 7, 6, true, true
	})
	wantValues := map[string]string{
		"num.partitions":                   "6",
		"default.replication.factor":       "1",
		"auto.create.topics.enable":        "true",
		"message.max.bytes":                "1048588",
		"kv.index.enabled":                 "true",
		"socket.request.max.bytes":         "104857600",
		"log.cleanup.policy":               "delete",
		"log.retention.ms":                 "604800000",
		"min.insync.replicas":              "1",
		"offsets.topic.replication.factor": "1",
		"transaction.max.timeout.ms":       "900000",
		"broker.id":                        "7",
		"node.id":                          "7",
	}
	wantSources := map[string]kmsg.ConfigSource{
		"num.partitions":             kmsg.ConfigSourceStaticBrokerConfig, // Kafka's default is 1
		"default.replication.factor": kmsg.ConfigSourceDefaultConfig,
		"auto.create.topics.enable":  kmsg.ConfigSourceDefaultConfig,
		"kv.index.enabled":           kmsg.ConfigSourceStaticBrokerConfig,
		"socket.request.max.bytes":   kmsg.ConfigSourceDefaultConfig,
		"broker.id":                  kmsg.ConfigSourceStaticBrokerConfig,
	}
	for _, v := range servedVersions(t, kmsg.DescribeConfigs) {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			req := describeConfigsRequest(
				configResource(kmsg.ConfigResourceTypeBroker, "7"),
				configResource(kmsg.ConfigResourceTypeBroker, ""),
				configResource(kmsg.ConfigResourceTypeBroker, "8"),
				configResource(kmsg.ConfigResourceTypeBroker, "seven"),
				configResource(kmsg.ConfigResourceTypeBroker, "7", "num.partitions"),
			)
			req.IncludeSynonyms, req.IncludeDocumentation = true, true
			resp := serveVersion[*kmsg.DescribeConfigsResponse](t, b, req, v)
			if len(resp.Resources) != 5 {
				t.Fatalf("got %d resources, want 5", len(resp.Resources))
			}
			for _, r := range resp.Resources[:2] {
				if r.ErrorCode != 0 {
					t.Fatalf("broker %q: code %d (%s)", r.ResourceName, r.ErrorCode, showStr(r.ErrorMessage))
				}
				var names []string
				for _, c := range r.Configs {
					names = append(names, c.Name)
					if !c.ReadOnly || c.IsSensitive || c.Value == nil {
						t.Errorf("broker %q %s: read-only %v sensitive %v value %s", r.ResourceName, c.Name, c.ReadOnly, c.IsSensitive, showStr(c.Value))
					}
					if v >= 1 && c.Source != kmsg.ConfigSourceStaticBrokerConfig && c.Source != kmsg.ConfigSourceDefaultConfig {
						t.Errorf("%s: source %v", c.Name, c.Source)
					}
					if v >= 3 && (c.ConfigType == kmsg.ConfigTypeUnknown || c.Documentation == nil) {
						t.Errorf("%s: type %v documentation %s", c.Name, c.ConfigType, showStr(c.Documentation))
					}
				}
				if !slices.IsSorted(names) || len(slices.Compact(slices.Clone(names))) != len(names) {
					t.Errorf("broker config names not sorted and unique: %v", names)
				}
				for name, want := range wantValues {
					c, ok := configByName(r.Configs, name)
					if !ok || showStr(c.Value) != want {
						t.Errorf("broker %q %s: %s, want %s", r.ResourceName, name, showStr(c.Value), want)
					}
				}
				for name, want := range wantSources {
					c, _ := configByName(r.Configs, name)
					if v >= 1 && c.Source != want {
						t.Errorf("%s: source %v, want %v", name, c.Source, want)
					}
					if v == 0 && c.IsDefault != (want == kmsg.ConfigSourceDefaultConfig) {
						t.Errorf("%s: v0 IsDefault %v", name, c.IsDefault)
					}
				}
			}
			for _, r := range resp.Resources[2:4] {
				if r.ErrorCode != kerr.InvalidRequest.Code || r.ErrorMessage == nil || len(r.Configs) != 0 {
					t.Errorf("broker %q: code %d message %s", r.ResourceName, r.ErrorCode, showStr(r.ErrorMessage))
				}
			}
			if r := resp.Resources[4]; len(r.Configs) != 1 || r.Configs[0].Name != "num.partitions" {
				t.Errorf("filtered broker configs: %+v", r.Configs)
			}
		})
	}
}

func alterConfigsRequest(validateOnly bool, resources ...kmsg.AlterConfigsRequestResource) *kmsg.AlterConfigsRequest {
	req := kmsg.NewPtrAlterConfigsRequest()
	req.ValidateOnly, req.Resources = validateOnly, resources
	return req
}

// alterResource: configs alternate names and values; "<nil>" is a null value.
func alterResource(typ kmsg.ConfigResourceType, name string, configs ...string) kmsg.AlterConfigsRequestResource {
	r := kmsg.NewAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName = typ, name
	for i := 0; i+1 < len(configs); i += 2 {
		c := kmsg.NewAlterConfigsRequestResourceConfig()
		c.Name, c.Value = configs[i], kmsg.StringPtr(configs[i+1])
		if configs[i+1] == "<nil>" {
			c.Value = nil
		}
		r.Configs = append(r.Configs, c)
	}
	return r
}

func TestAlterConfigs(t *testing.T) {
	for _, v := range servedVersions(t, kmsg.AlterConfigs) {
		for _, validateOnly := range []bool{false, true} {
			t.Run(fmt.Sprintf("v%d/validateOnly=%v", v, validateOnly), func(t *testing.T) {
				coord := newTestCoordinator(t)
				b := newAdminBroker(t, coord)
				for _, name := range []string{"a", "bad", "dup", "nulls"} {
					createTopic(t, coord, name, 1, map[string]string{"retention.ms": "1000"})
				}
				topic := kmsg.ConfigResourceTypeTopic
				req := alterConfigsRequest(validateOnly,
					alterResource(topic, "bad", "retention.ms", "5", "no.such.config", "1"),
					alterResource(topic, "a", "cleanup.policy", "compact"),
					alterResource(topic, "nope", "cleanup.policy", "compact"),
					alterResource(topic, "dup", "cleanup.policy", "compact"),
					alterResource(topic, "dup", "cleanup.policy", "delete"),
					alterResource(topic, "nulls", "cleanup.policy", "<nil>"),
					alterResource(topic, "a2", "cleanup.policy", "compact", "cleanup.policy", "delete"),
					alterResource(kmsg.ConfigResourceTypeBroker, "1", "num.partitions", "3"),
					alterResource(kmsg.ConfigResourceTypeBrokerLogger, "1", "kafka", "DEBUG"),
				)
				resp := serveVersion[*kmsg.AlterConfigsResponse](t, b, req, v)
				want := []struct {
					name string
					code int16
					msg  string
				}{
					{"bad", kerr.InvalidConfig.Code, "Unknown topic config name: no.such.config"},
					{"a", 0, ""},
					{"nope", kerr.UnknownTopicOrPartition.Code, ""},
					{"dup", kerr.InvalidRequest.Code, "Each resource must appear at most once."},
					{"dup", kerr.InvalidRequest.Code, "Each resource must appear at most once."},
					{"nulls", kerr.InvalidRequest.Code, "Null value not supported for : cleanup.policy"},
					{"a2", kerr.InvalidRequest.Code, "duplicate config keys"},
					{"1", kerr.InvalidRequest.Code, "static"},
					{"1", kerr.InvalidRequest.Code, "BROKER_LOGGER"},
				}
				if len(resp.Resources) != len(want) {
					t.Fatalf("got %d results, want %d", len(resp.Resources), len(want))
				}
				for i, w := range want {
					r := resp.Resources[i]
					if r.ResourceName != w.name || r.ErrorCode != w.code || !strings.Contains(showStr(r.ErrorMessage), w.msg) {
						t.Errorf("result %d: got %q code %d message %s, want %q code %d message ~%q", i, r.ResourceName, r.ErrorCode, showStr(r.ErrorMessage), w.name, w.code, w.msg)
					}
					if w.code == 0 && r.ErrorMessage != nil {
						t.Errorf("%s: message on success", w.name)
					}
				}
				// Legacy AlterConfigs replaces the whole set: retention.ms
				// reverts to its default.
				a, _ := coord.Topic(t.Context(), "a")
				wantConfigs := map[string]string{"cleanup.policy": "compact"}
				if validateOnly {
					wantConfigs = map[string]string{"retention.ms": "1000"}
				}
				if fmt.Sprint(a.Configs) != fmt.Sprint(wantConfigs) {
					t.Errorf("topic a configs %v, want %v", a.Configs, wantConfigs)
				}
				if bad, _ := coord.Topic(t.Context(), "bad"); bad.Config("retention.ms") != "1000" {
					t.Errorf("a failed resource changed: %v", bad.Configs)
				}
			})
		}
	}
}

func incrementalResource(typ kmsg.ConfigResourceType, name string, ops ...kmsg.IncrementalAlterConfigsRequestResourceConfig) kmsg.IncrementalAlterConfigsRequestResource {
	r := kmsg.NewIncrementalAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName, r.Configs = typ, name, ops
	return r
}

func incrementalOp(name string, op kmsg.IncrementalAlterConfigOp, value *string) kmsg.IncrementalAlterConfigsRequestResourceConfig {
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name, c.Op, c.Value = name, op, value
	return c
}

func TestIncrementalAlterConfigs(t *testing.T) {
	set, del := kmsg.IncrementalAlterConfigOpSet, kmsg.IncrementalAlterConfigOpDelete
	app, sub := kmsg.IncrementalAlterConfigOpAppend, kmsg.IncrementalAlterConfigOpSubtract
	s := kmsg.StringPtr
	topic := kmsg.ConfigResourceTypeTopic
	for _, v := range servedVersions(t, kmsg.IncrementalAlterConfigs) {
		for _, validateOnly := range []bool{false, true} {
			t.Run(fmt.Sprintf("v%d/validateOnly=%v", v, validateOnly), func(t *testing.T) {
				coord := newTestCoordinator(t)
				b := newAdminBroker(t, coord)
				for _, name := range []string{"a", "b", "c", "bad", "dup"} {
					createTopic(t, coord, name, 1, map[string]string{"retention.ms": "1000", "max.message.bytes": "2000"})
				}
				req := kmsg.NewPtrIncrementalAlterConfigsRequest()
				req.ValidateOnly = validateOnly
				req.Resources = []kmsg.IncrementalAlterConfigsRequestResource{
					// A bad resource first: it must not poison the rest.
					incrementalResource(topic, "bad", incrementalOp("segment.ms", set, s("5")), incrementalOp("retention.ms", app, s("5"))),
					incrementalResource(topic, "a", incrementalOp("retention.ms", set, s("2000")), incrementalOp("max.message.bytes", del, nil),
						incrementalOp("cleanup.policy", app, s("compact"))),
					incrementalResource(topic, "b", incrementalOp("cleanup.policy", sub, s("delete"))),
					incrementalResource(topic, "c", incrementalOp("retention.ms", 9, s("1"))),
					incrementalResource(topic, "c", incrementalOp("retention.ms", set, nil)),
					incrementalResource(topic, "dup", incrementalOp("retention.ms", set, s("1")), incrementalOp("retention.ms", del, nil)),
					incrementalResource(topic, "nope", incrementalOp("retention.ms", set, s("1"))),
					incrementalResource(kmsg.ConfigResourceTypeBroker, "", incrementalOp("num.partitions", set, s("3"))),
					incrementalResource(kmsg.ConfigResourceTypeBroker, "2", incrementalOp("num.partitions", set, s("3"))),
				}
				// The two "c" resources are duplicates; make them distinct.
				req.Resources[4].ResourceName = "c2"
				createTopic(t, coord, "c2", 1, nil)
				resp := serveVersion[*kmsg.IncrementalAlterConfigsResponse](t, b, req, v)
				want := []struct {
					name string
					code int16
					msg  string
				}{
					{"bad", kerr.InvalidConfig.Code, "append is not allowed for config key: retention.ms"},
					{"a", 0, ""},
					{"b", 0, ""},
					{"c", kerr.InvalidRequest.Code, "Unknown alter config operation 9"},
					{"c2", kerr.InvalidRequest.Code, "Null value not supported for : retention.ms"},
					{"dup", kerr.InvalidRequest.Code, "duplicate config keys"},
					{"nope", kerr.UnknownTopicOrPartition.Code, ""},
					{"", kerr.InvalidRequest.Code, "static"},
					{"2", kerr.InvalidRequest.Code, "Unexpected broker id"},
				}
				if len(resp.Resources) != len(want) {
					t.Fatalf("got %d results, want %d", len(resp.Resources), len(want))
				}
				for i, w := range want {
					r := resp.Resources[i]
					if r.ResourceName != w.name || r.ErrorCode != w.code || !strings.Contains(showStr(r.ErrorMessage), w.msg) {
						t.Errorf("result %d: got %q code %d message %s, want %q code %d message ~%q", i, r.ResourceName, r.ErrorCode, showStr(r.ErrorMessage), w.name, w.code, w.msg)
					}
					if w.code == 0 && r.ErrorMessage != nil {
						t.Errorf("%s: message on success", w.name)
					}
				}
				wantA := map[string]string{"retention.ms": "2000", "cleanup.policy": "delete,compact"}
				wantB := map[string]string{"retention.ms": "1000", "max.message.bytes": "2000", "cleanup.policy": ""}
				if validateOnly {
					wantA = map[string]string{"retention.ms": "1000", "max.message.bytes": "2000"}
					wantB = wantA
				}
				for name, want := range map[string]map[string]string{"a": wantA, "b": wantB} {
					tp, _ := coord.Topic(t.Context(), name)
					if fmt.Sprint(tp.Configs) != fmt.Sprint(want) {
						t.Errorf("topic %s configs %v, want %v", name, tp.Configs, want)
					}
				}
				if bad, _ := coord.Topic(t.Context(), "bad"); bad.Config("segment.ms") != coordinatorDefault(t, "segment.ms") {
					t.Errorf("the failed resource was partly applied: %v", bad.Configs)
				}
			})
		}
	}
}

func coordinatorDefault(t *testing.T, name string) string {
	t.Helper()
	d, ok := coordapi.LookupTopicConfig(name)
	if !ok {
		t.Fatalf("no topic config %s", name)
	}
	return d.Default
}
