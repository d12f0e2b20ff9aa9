package broker

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-io/floe/coordapi"
)

// DescribeConfigs: v0-v4. v1+ config sources and synonyms; v3+ config types
// and documentation; v4+ flexible.
//
// Topic resources list every topic config (explicit ones with source
// DYNAMIC_TOPIC_CONFIG, the rest DEFAULT_CONFIG). Broker resources (this
// broker's node id, or "" for the cluster default) list the broker keys
// clients and tools look at, with the values this broker runs with: they
// are static (read-only) and their source is STATIC_BROKER_CONFIG when the
// value differs from Apache Kafka's default, else DEFAULT_CONFIG. Group
// resources go to the group coordinator (group_configs.go). Other
// resource types are INVALID_REQUEST, each on its own resource. A described
// resource's error message is "", as Kafka's (never null). With ACLs a
// topic needs TOPIC DESCRIBE_CONFIGS (TOPIC_AUTHORIZATION_FAILED), a broker
// CLUSTER DESCRIBE_CONFIGS (CLUSTER_AUTHORIZATION_FAILED), a group GROUP
// DESCRIBE_CONFIGS (GROUP_AUTHORIZATION_FAILED).
func init() { register(kmsg.DescribeConfigs, 0, 4, (*Broker).handleDescribeConfigs) }

func (b *Broker) handleDescribeConfigs(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.req.(*kmsg.DescribeConfigsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeConfigsResponse)
	for _, rr := range req.Resources {
		sr := kmsg.NewDescribeConfigsResponseResource()
		sr.ResourceType, sr.ResourceName = rr.ResourceType, rr.ResourceName
		sr.ErrorMessage = kmsg.StringPtr("")
		var (
			entries []configEntry
			err     error
		)
		switch rr.ResourceType {
		case kmsg.ConfigResourceTypeTopic:
			if !b.authorizedTopic(r, kmsg.ACLOperationDescribeConfigs, rr.ResourceName) {
				err = kerr.TopicAuthorizationFailed
				break
			}
			entries, err = b.topicConfigEntries(ctx, rr.ResourceName)
		case kmsg.ConfigResourceTypeGroupConfig:
			if err = b.groupConfigsAuthorized(r, kmsg.ACLOperationDescribeConfigs, rr.ResourceName); err == nil {
				resp.Resources = append(resp.Resources, b.describeGroupConfigs(ctx, req, rr))
				continue
			}
		case kmsg.ConfigResourceTypeBroker:
			if !b.authorizeCluster(r, kmsg.ACLOperationDescribeConfigs) {
				err = kerr.ClusterAuthorizationFailed
				break
			}
			if err = b.checkBrokerResource(rr.ResourceName); err == nil {
				entries = b.brokerConfigEntries()
			}
		default:
			err = unsupportedResource(rr.ResourceType)
		}
		if err != nil {
			sr.ErrorCode = coordapi.ErrorCode(err)
			sr.ErrorMessage = adminErrorMessage(err)
			resp.Resources = append(resp.Resources, sr)
			continue
		}
		for _, e := range entries {
			// No names (null or, as newer Kafka also reads it, empty)
			// means every config.
			if len(rr.ConfigNames) > 0 && !slices.Contains(rr.ConfigNames, e.name) {
				continue
			}
			sr.Configs = append(sr.Configs, e.describe(req))
		}
		resp.Resources = append(resp.Resources, sr)
	}
	return resp, nil
}

// configEntry is one config as DescribeConfigs reports it.
type configEntry struct {
	name     string
	value    string
	source   kmsg.ConfigSource
	readOnly bool
	// sensitive values are never shown (a null value, as Kafka does).
	sensitive bool
	typ       kmsg.ConfigType
	doc       string
	// synonyms, most specific first, for IncludeSynonyms; the entry itself
	// leads when it is not a default.
	synonyms []configSynonym
}

type configSynonym struct {
	name   string
	value  string
	source kmsg.ConfigSource
}

func (e configEntry) describe(req *kmsg.DescribeConfigsRequest) kmsg.DescribeConfigsResponseResourceConfig {
	c := kmsg.NewDescribeConfigsResponseResourceConfig()
	c.Name = e.name
	c.Value = kmsg.StringPtr(e.value)
	if e.sensitive {
		c.Value = nil
	}
	c.ReadOnly = e.readOnly
	c.IsSensitive = e.sensitive
	c.IsDefault = e.source == kmsg.ConfigSourceDefaultConfig
	c.Source = e.source
	c.ConfigType = e.typ
	if req.IncludeDocumentation {
		c.Documentation = kmsg.StringPtr(e.doc)
	}
	if req.IncludeSynonyms {
		c.ConfigSynonyms = []kmsg.DescribeConfigsResponseResourceConfigConfigSynonym{}
		for _, s := range e.synonyms {
			cs := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
			cs.Name, cs.Value, cs.Source = s.name, kmsg.StringPtr(s.value), s.source
			if e.sensitive {
				cs.Value = nil
			}
			c.ConfigSynonyms = append(c.ConfigSynonyms, cs)
		}
	}
	return c
}

// topicConfigEntries lists every config of the named topic.
func (b *Broker) topicConfigEntries(ctx context.Context, name string) ([]configEntry, error) {
	t, err := b.coord.Topic(ctx, name)
	if errors.Is(err, kerr.UnknownTopicOrPartition) {
		return nil, fmt.Errorf("%w: The topic '%s' does not exist.", kerr.UnknownTopicOrPartition, name)
	}
	if err != nil {
		return nil, err
	}
	described := coordapi.DescribeTopicConfig(t)
	out := make([]configEntry, 0, len(described))
	for _, d := range described {
		e := configEntry{
			name:      d.Name,
			value:     d.Value,
			source:    kmsg.ConfigSource(d.Source),
			readOnly:  d.ReadOnly,
			sensitive: d.Sensitive,
			typ:       kmsg.ConfigType(d.Type),
			doc:       d.Doc,
		}
		if e.source != kmsg.ConfigSourceDefaultConfig {
			e.synonyms = append(e.synonyms, configSynonym{d.Name, d.Value, e.source})
		}
		if d.BrokerSynonym != "" {
			def, _ := coordapi.LookupTopicConfig(d.Name)
			e.synonyms = append(e.synonyms, configSynonym{d.BrokerSynonym, def.Default, kmsg.ConfigSourceDefaultConfig})
		}
		out = append(out, e)
	}
	return out, nil
}

// checkBrokerResource accepts this broker's node id or "" (the cluster
// default), as a Kafka broker does.
func (b *Broker) checkBrokerResource(name string) error {
	if name == "" {
		return nil
	}
	id, err := strconv.ParseInt(name, 10, 32)
	if err != nil {
		return fmt.Errorf("%w: Broker id must be an integer, but it is: %s", kerr.InvalidRequest, name)
	}
	if int32(id) != b.opts.NodeID {
		return fmt.Errorf("%w: Unexpected broker id, expected %d or empty string, but received %s", kerr.InvalidRequest, b.opts.NodeID, name)
	}
	return nil
}

func unsupportedResource(typ kmsg.ConfigResourceType) error {
	return fmt.Errorf("%w: Unsupported resource type %s (%d)", kerr.InvalidRequest, typ, int8(typ))
}

// Apache Kafka's defaults of the broker keys floe reports.
const (
	kafkaDefaultSocketRequestMaxBytes = 104857600
	// transactionMaxTimeoutMs is transaction.max.timeout.ms, the largest
	// transaction timeout InitProducerId accepts (Kafka's default).
	transactionMaxTimeoutMs = 900000
)

// brokerConfigEntries lists the broker keys with this broker's values,
// sorted by name: the broker synonyms of every topic config (at the topic
// defaults, which floe's brokers do not override) and the keys clients and
// tools read.
func (b *Broker) brokerConfigEntries() []configEntry {
	var out []configEntry
	add := func(name, value, kafkaDefault string, typ coordapi.ConfigType, doc string) {
		source := kmsg.ConfigSourceStaticBrokerConfig
		if value == kafkaDefault {
			source = kmsg.ConfigSourceDefaultConfig
		}
		e := configEntry{name: name, value: value, source: source, readOnly: true, typ: kmsg.ConfigType(typ), doc: doc}
		e.synonyms = append(e.synonyms, configSynonym{name, value, source})
		if source == kmsg.ConfigSourceStaticBrokerConfig && kafkaDefault != "" {
			e.synonyms = append(e.synonyms, configSynonym{name, kafkaDefault, kmsg.ConfigSourceDefaultConfig})
		}
		out = append(out, e)
	}
	seen := make(map[string]bool)
	for _, d := range coordapi.TopicConfigDefs {
		if d.BrokerSynonym == "" || seen[d.BrokerSynonym] {
			continue
		}
		seen[d.BrokerSynonym] = true
		add(d.BrokerSynonym, d.Default, d.Default, d.Type, "The default of the topic config "+d.Name+": "+d.Doc)
	}
	nodeID := strconv.Itoa(int(b.opts.NodeID))
	i32 := func(v int32) string { return strconv.Itoa(int(v)) }
	add("auto.create.topics.enable", strconv.FormatBool(b.opts.AutoCreateTopics), "true", coordapi.ConfigTypeBoolean,
		"Whether Metadata creates a missing topic when the client allows it.")
	add("broker.id", nodeID, "-1", coordapi.ConfigTypeInt, "This broker's node id.")
	if b.opts.Rack != "" {
		add("broker.rack", b.opts.Rack, "", coordapi.ConfigTypeString, "This broker's rack.")
	}
	add("default.replication.factor", "1", "1", coordapi.ConfigTypeInt,
		"The replication factor of new topics; object storage replicates the data, so every partition has one replica.")
	add("delete.topic.enable", "true", "true", coordapi.ConfigTypeBoolean, "Topics can be deleted.")
	add(coordapi.ConfigKVIndexEnabled, strconv.FormatBool(b.opts.KVIndexEnabled), "false", coordapi.ConfigTypeBoolean,
		"floe: the cluster switch (--kv-index-enabled) without which no topic may turn kv.index.enabled on.")
	add("node.id", nodeID, "-1", coordapi.ConfigTypeInt, "This broker's node id.")
	add("num.partitions", i32(b.opts.DefaultPartitions), "1", coordapi.ConfigTypeInt,
		"The partition count of topics created without one.")
	add("offsets.topic.replication.factor", "1", "3", coordapi.ConfigTypeShort,
		"Committed offsets live in the batch coordinator, which object storage and its log make durable.")
	add("socket.request.max.bytes", i32(b.opts.MaxRequestBytes), strconv.Itoa(kafkaDefaultSocketRequestMaxBytes), coordapi.ConfigTypeInt,
		"The largest request frame the broker reads; a larger one closes the connection.")
	add("transaction.max.timeout.ms", strconv.Itoa(transactionMaxTimeoutMs), strconv.Itoa(transactionMaxTimeoutMs), coordapi.ConfigTypeInt,
		"The largest transaction timeout InitProducerId accepts.")
	add("transaction.state.log.min.isr", "1", "2", coordapi.ConfigTypeInt,
		"Producer state lives in the batch coordinator, which object storage and its log make durable.")
	add("transaction.state.log.replication.factor", "1", "3", coordapi.ConfigTypeShort,
		"Producer state lives in the batch coordinator, which object storage and its log make durable.")
	slices.SortFunc(out, func(a, b configEntry) int { return strings.Compare(a.name, b.name) })
	return out
}
