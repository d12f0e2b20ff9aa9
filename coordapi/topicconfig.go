package coordapi

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
)

// ConfigType is a config's type, numbered as DescribeConfigs v3+ reports
// it (config_type), so the broker can copy it into the response.
type ConfigType int8

// Config types, as Kafka numbers them.
const (
	ConfigTypeUnknown  ConfigType = 0
	ConfigTypeBoolean  ConfigType = 1
	ConfigTypeString   ConfigType = 2
	ConfigTypeInt      ConfigType = 3
	ConfigTypeShort    ConfigType = 4
	ConfigTypeLong     ConfigType = 5
	ConfigTypeDouble   ConfigType = 6
	ConfigTypeList     ConfigType = 7
	ConfigTypeClass    ConfigType = 8
	ConfigTypePassword ConfigType = 9
)

// String returns Kafka's name for the type (as in "Not a number of type
// LONG").
func (t ConfigType) String() string {
	switch t {
	case ConfigTypeBoolean:
		return "BOOLEAN"
	case ConfigTypeString:
		return "STRING"
	case ConfigTypeInt:
		return "INT"
	case ConfigTypeShort:
		return "SHORT"
	case ConfigTypeLong:
		return "LONG"
	case ConfigTypeDouble:
		return "DOUBLE"
	case ConfigTypeList:
		return "LIST"
	case ConfigTypeClass:
		return "CLASS"
	case ConfigTypePassword:
		return "PASSWORD"
	}
	return "UNKNOWN"
}

// ConfigSource is where a config value comes from, numbered as
// DescribeConfigs v1+ reports it (config_source).
type ConfigSource int8

// Config sources a topic config can have in floe.
const (
	// ConfigSourceDynamicTopic: set explicitly on the topic.
	ConfigSourceDynamicTopic ConfigSource = 1
	// ConfigSourceDefault: not set; the default applies.
	ConfigSourceDefault ConfigSource = 5
)

// ConfigDef defines one topic config: its default, type and validation.
type ConfigDef struct {
	Name string
	// Default is the value when the topic does not set it, as Kafka formats
	// it in DescribeConfigs.
	Default string
	Type    ConfigType
	Doc     string
	// BrokerSynonym is the broker config that supplies the default in Apache
	// Kafka (for DescribeConfigs synonyms); empty if none.
	BrokerSynonym string
	// Validate checks a trimmed value beyond its type (ranges, allowed
	// values) and says what is wrong in Kafka's words; nil if any value of
	// the type is fine.
	Validate func(value string) error
	// Enforced says floe acts on the value. False: the config is accepted,
	// validated and reported (so that Kafka tools and Terraform providers
	// work) but changes nothing. docs/configuration.md shows it.
	Enforced bool
}

// ConfigEntry is one topic config as DescribeConfigs reports it.
type ConfigEntry struct {
	Name      string
	Value     string
	IsDefault bool
	Source    ConfigSource
	Type      ConfigType
	Sensitive bool
	ReadOnly  bool
	Doc       string
	// BrokerSynonym is the broker config behind the default, if any.
	BrokerSynonym string
}

// Topic config names floe itself looks at.
const (
	ConfigCleanupPolicy          = "cleanup.policy"
	ConfigMessageTimestampType   = "message.timestamp.type"
	ConfigKVIndexEnabled         = "kv.index.enabled"
	ConfigMinCompactionLagMs     = "min.compaction.lag.ms"
	ConfigMaxCompactionLagMs     = "max.compaction.lag.ms"
	ConfigDeleteRetentionMs      = "delete.retention.ms"
	ConfigMinCleanableDirtyRatio = "min.cleanable.dirty.ratio"
	ConfigRetentionMs            = "retention.ms"
	ConfigRetentionBytes         = "retention.bytes"
	ConfigLocalRetentionMs       = "local.retention.ms"
	ConfigLocalRetentionBytes    = "local.retention.bytes"
	ConfigSegmentBytes           = "segment.bytes"
	ConfigSegmentMs              = "segment.ms"
)

const maxLongString = "9223372036854775807"

// TopicConfigDefs lists every topic config floe accepts, sorted by name:
// Apache Kafka 3.x's topic configs plus floe's own (kv.index.enabled,
// hierarchical.enabled, the table configs of tableconfig.go). Configs that
// steer Kafka's local log (segments, flushing, replication) are accepted and
// reported so that tools and Terraform providers work, but a diskless log
// has no use for them.
var TopicConfigDefs = sortedDefs(append([]ConfigDef{
	{Name: ConfigCleanupPolicy, Enforced: true, Default: "delete", Type: ConfigTypeList, BrokerSynonym: "log.cleanup.policy",
		Doc:      "A list of \"delete\" (discard old data by retention.ms / retention.bytes) and \"compact\" (keep the latest value per key).",
		Validate: listOf("compact", "delete")},
	{Name: "compression.gzip.level", Default: "-1", Type: ConfigTypeInt, BrokerSynonym: "compression.gzip.level",
		Doc:      "The compression level for gzip when compression.type is gzip; -1 for the codec default.",
		Validate: intIn(-1, 1, 9)},
	{Name: "compression.lz4.level", Default: "9", Type: ConfigTypeInt, BrokerSynonym: "compression.lz4.level",
		Doc:      "The compression level for lz4 when compression.type is lz4.",
		Validate: between(1, 17)},
	{Name: "compression.type", Default: "producer", Type: ConfigTypeString, BrokerSynonym: "compression.type",
		Doc:      "The final compression of the topic's batches; \"producer\" keeps the producer's codec (floe always stores batches as produced).",
		Validate: oneOf("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")},
	{Name: "compression.zstd.level", Default: "3", Type: ConfigTypeInt, BrokerSynonym: "compression.zstd.level",
		Doc:      "The compression level for zstd when compression.type is zstd.",
		Validate: between(-131072, 22)},
	{Name: ConfigDeleteRetentionMs, Enforced: true, Default: "86400000", Type: ConfigTypeLong, BrokerSynonym: "log.cleaner.delete.retention.ms",
		Doc:      "How long tombstones are kept on compacted topics.",
		Validate: atLeast(0)},
	{Name: "file.delete.delay.ms", Default: "60000", Type: ConfigTypeLong, BrokerSynonym: "log.segment.delete.delay.ms",
		Doc:      "How long to wait before deleting a file (accepted for compatibility; no effect in floe).",
		Validate: atLeast(0)},
	{Name: "flush.messages", Default: maxLongString, Type: ConfigTypeLong, BrokerSynonym: "log.flush.interval.messages",
		Doc:      "Messages between forced fsyncs (accepted for compatibility; floe acknowledges only durable data).",
		Validate: atLeast(1)},
	{Name: "flush.ms", Default: maxLongString, Type: ConfigTypeLong, BrokerSynonym: "log.flush.interval.ms",
		Doc:      "Time between forced fsyncs (accepted for compatibility; floe acknowledges only durable data).",
		Validate: atLeast(0)},
	{Name: "follower.replication.throttled.replicas", Default: "", Type: ConfigTypeList, BrokerSynonym: "",
		Doc:      "Replicas to throttle on the follower side (accepted for compatibility; floe has no replicas).",
		Validate: throttledReplicas},
	{Name: "index.interval.bytes", Default: "4096", Type: ConfigTypeInt, BrokerSynonym: "log.index.interval.bytes",
		Doc:      "Bytes between offset index entries (accepted for compatibility).",
		Validate: atLeast(0)},
	{Name: ConfigHierarchicalEnabled, Enforced: true, Default: "false", Type: ConfigTypeBoolean, BrokerSynonym: "",
		Doc: "floe: serve the view \"<topic>/<key>\" of this topic: the records whose key is <key>, with their offsets in this topic."},
	{Name: ConfigKVIndexEnabled, Enforced: true, Default: "false", Type: ConfigTypeBoolean, BrokerSynonym: "",
		Doc: "floe: index each record's key for GET /kv/{topic}/{key}. Allowed only when cleanup.policy includes compact and the cluster runs with --kv-index-enabled."},
	{Name: "leader.replication.throttled.replicas", Default: "", Type: ConfigTypeList, BrokerSynonym: "",
		Doc:      "Replicas to throttle on the leader side (accepted for compatibility; floe has no replicas).",
		Validate: throttledReplicas},
	{Name: ConfigLocalRetentionBytes, Enforced: true, Default: "-2", Type: ConfigTypeLong, BrokerSynonym: "log.local.retention.bytes",
		Doc:      "floe: the most bytes a partition keeps in the WAL tier (multi-partition WAL objects) before its oldest batches are consolidated into segments; -2 for the cluster default (no limit), -1 for none.",
		Validate: atLeast(-2)},
	{Name: ConfigLocalRetentionMs, Enforced: true, Default: "-2", Type: ConfigTypeLong, BrokerSynonym: "log.local.retention.ms",
		Doc:      "floe: how long batches stay in the WAL tier before they are consolidated into per-partition segments; -2 for the cluster default (--wal-retention), -1 for no time limit.",
		Validate: atLeast(-2)},
	{Name: ConfigMaxCompactionLagMs, Enforced: true, Default: maxLongString, Type: ConfigTypeLong, BrokerSynonym: "log.cleaner.max.compaction.lag.ms",
		Doc:      "The longest a message stays ineligible for compaction.",
		Validate: atLeast(1)},
	{Name: "max.message.bytes", Enforced: true, Default: "1048588", Type: ConfigTypeInt, BrokerSynonym: "message.max.bytes",
		Doc:      "The largest record batch size allowed.",
		Validate: atLeast(0)},
	{Name: "message.downconversion.enable", Default: "true", Type: ConfigTypeBoolean, BrokerSynonym: "log.message.downconversion.enable",
		Doc: "Whether old consumers may get down-converted batches (accepted for compatibility)."},
	{Name: "message.format.version", Default: "3.0-IV1", Type: ConfigTypeString, BrokerSynonym: "log.message.format.version",
		Doc:      "Deprecated; floe always writes message format v2.",
		Validate: kafkaVersion},
	{Name: "message.timestamp.after.max.ms", Default: maxLongString, Type: ConfigTypeLong, BrokerSynonym: "log.message.timestamp.after.max.ms",
		Doc:      "How far in the future a CreateTime timestamp may be.",
		Validate: atLeast(0)},
	{Name: "message.timestamp.before.max.ms", Default: maxLongString, Type: ConfigTypeLong, BrokerSynonym: "log.message.timestamp.before.max.ms",
		Doc:      "How far in the past a CreateTime timestamp may be.",
		Validate: atLeast(0)},
	{Name: "message.timestamp.difference.max.ms", Default: maxLongString, Type: ConfigTypeLong, BrokerSynonym: "log.message.timestamp.difference.max.ms",
		Doc:      "Deprecated: the largest difference between a CreateTime timestamp and the broker's time.",
		Validate: atLeast(0)},
	{Name: ConfigMessageTimestampType, Enforced: true, Default: "CreateTime", Type: ConfigTypeString, BrokerSynonym: "log.message.timestamp.type",
		Doc:      "CreateTime keeps the producer's timestamps; LogAppendTime stamps batches with the commit time.",
		Validate: oneOf("CreateTime", "LogAppendTime")},
	{Name: ConfigMinCleanableDirtyRatio, Enforced: true, Default: "0.5", Type: ConfigTypeDouble, BrokerSynonym: "log.cleaner.min.cleanable.ratio",
		Doc:      "The dirty share of the log that makes it eligible for compaction.",
		Validate: doubleBetween(0, 1)},
	{Name: ConfigMinCompactionLagMs, Enforced: true, Default: "0", Type: ConfigTypeLong, BrokerSynonym: "log.cleaner.min.compaction.lag.ms",
		Doc:      "The shortest a message stays uncompacted.",
		Validate: atLeast(0)},
	{Name: "min.insync.replicas", Default: "1", Type: ConfigTypeInt, BrokerSynonym: "min.insync.replicas",
		Doc:      "Accepted for compatibility: object storage makes every acknowledged write durable.",
		Validate: atLeast(1)},
	{Name: "preallocate", Default: "false", Type: ConfigTypeBoolean, BrokerSynonym: "log.preallocate",
		Doc: "Preallocate segment files (accepted for compatibility)."},
	{Name: "remote.log.copy.disable", Default: "false", Type: ConfigTypeBoolean, BrokerSynonym: "",
		Doc: "Stop copying to tiered storage (accepted for compatibility)."},
	{Name: "remote.log.delete.on.disable", Default: "false", Type: ConfigTypeBoolean, BrokerSynonym: "",
		Doc: "Delete tiered data when tiered storage is turned off (accepted for compatibility)."},
	{Name: "remote.storage.enable", Default: "false", Type: ConfigTypeBoolean, BrokerSynonym: "",
		Doc: "Kafka tiered storage switch (accepted for compatibility; floe's data always lives in object storage)."},
	{Name: ConfigRetentionBytes, Enforced: true, Default: "-1", Type: ConfigTypeLong, BrokerSynonym: "log.retention.bytes",
		Doc:      "The most bytes a partition keeps under the delete policy; -1 for no limit.",
		Validate: atLeast(-1)},
	{Name: ConfigRetentionMs, Enforced: true, Default: "604800000", Type: ConfigTypeLong, BrokerSynonym: "log.retention.ms",
		Doc:      "How long data is kept under the delete policy; -1 for no limit.",
		Validate: atLeast(-1)},
	{Name: ConfigSegmentBytes, Enforced: true, Default: "134217728", Type: ConfigTypeInt, BrokerSynonym: "log.segment.bytes",
		Doc:      "The largest data size of a segment object consolidation writes (floe's default 128 MiB; at least 1 MiB).",
		Validate: atLeast(1 << 20)},
	{Name: "segment.index.bytes", Default: "10485760", Type: ConfigTypeInt, BrokerSynonym: "log.index.size.max.bytes",
		Doc:      "Offset index size (accepted for compatibility).",
		Validate: atLeast(4)},
	{Name: "segment.jitter.ms", Default: "0", Type: ConfigTypeLong, BrokerSynonym: "log.roll.jitter.ms",
		Doc:      "Random jitter on segment rolls (accepted for compatibility).",
		Validate: atLeast(0)},
	{Name: ConfigSegmentMs, Enforced: true, Default: "604800000", Type: ConfigTypeLong, BrokerSynonym: "log.roll.ms",
		Doc:      "The longest span of commit times one segment object covers: consolidation starts a new segment at it.",
		Validate: atLeast(1)},
	{Name: "unclean.leader.election.enable", Default: "false", Type: ConfigTypeBoolean, BrokerSynonym: "unclean.leader.election.enable",
		Doc: "Accepted for compatibility: floe has no leaders to elect."},
}, tableConfigDefs...))

func sortedDefs(defs []ConfigDef) []ConfigDef {
	sort.Slice(defs, func(i, j int) bool { return defs[i].Name < defs[j].Name })
	return defs
}

var configDefsByName = func() map[string]*ConfigDef {
	m := make(map[string]*ConfigDef, len(TopicConfigDefs))
	for i := range TopicConfigDefs {
		m[TopicConfigDefs[i].Name] = &TopicConfigDefs[i]
	}
	return m
}()

// LookupTopicConfig returns the definition of a topic config.
func LookupTopicConfig(name string) (ConfigDef, bool) {
	d, ok := configDefsByName[name]
	if !ok {
		return ConfigDef{}, false
	}
	return *d, true
}

// Config returns the topic's value for a config: the explicit one, else the
// default; "" for an unknown name.
func (t Topic) Config(name string) string {
	if v, ok := t.Configs[name]; ok {
		return v
	}
	if d, ok := configDefsByName[name]; ok {
		return d.Default
	}
	return ""
}

// DescribeTopicConfig lists every topic config of t with its value and
// source, sorted by name, as DescribeConfigs reports them (nothing is
// sensitive or read-only).
func DescribeTopicConfig(t Topic) []ConfigEntry {
	out := make([]ConfigEntry, 0, len(TopicConfigDefs))
	for _, d := range TopicConfigDefs {
		e := ConfigEntry{
			Name: d.Name, Value: d.Default, IsDefault: true, Source: ConfigSourceDefault,
			Type: d.Type, Doc: d.Doc, BrokerSynonym: d.BrokerSynonym,
		}
		if v, ok := t.Configs[d.Name]; ok {
			e.Value, e.IsDefault, e.Source = v, false, ConfigSourceDynamicTopic
		}
		out = append(out, e)
	}
	return out
}

// ValidateTopicConfigs checks a topic's full set of explicit configs and
// returns it with values trimmed. kvBefore says whether the topic had
// kv.index.enabled on already (turning it on needs the cluster switch,
// keeping it on does not).
func ValidateTopicConfigs(configs map[string]string, kvBefore, kvCluster bool) (map[string]string, error) {
	out := make(map[string]string, len(configs))
	names := make([]string, 0, len(configs))
	for k := range configs {
		names = append(names, k)
	}
	sort.Strings(names) // report the same first error every time
	for _, name := range names {
		d, ok := configDefsByName[name]
		if !ok {
			return nil, Errorf(kerr.InvalidConfig, "Unknown topic config name: %s", name)
		}
		v := strings.TrimSpace(configs[name])
		if err := checkValue(d, v); err != nil {
			return nil, err
		}
		out[name] = v
	}
	get := func(name string) string {
		if v, ok := out[name]; ok {
			return v
		}
		return configDefsByName[name].Default
	}
	minLag, _ := strconv.ParseInt(get(ConfigMinCompactionLagMs), 10, 64)
	maxLag, _ := strconv.ParseInt(get(ConfigMaxCompactionLagMs), 10, 64)
	if minLag > maxLag {
		return nil, Errorf(kerr.InvalidConfig, "conflict topic config setting %s (%d) > %s (%d)",
			ConfigMinCompactionLagMs, minLag, ConfigMaxCompactionLagMs, maxLag)
	}
	// Kafka refuses a local retention above the total one (-1 is none, -2
	// the default: floe's --wal-retention, which retention simply
	// overrides when shorter).
	for _, pair := range [][2]string{{ConfigLocalRetentionMs, ConfigRetentionMs}, {ConfigLocalRetentionBytes, ConfigRetentionBytes}} {
		local, _ := strconv.ParseInt(get(pair[0]), 10, 64)
		total, _ := strconv.ParseInt(get(pair[1]), 10, 64)
		if total >= 0 && (local == -1 || local > total) {
			return nil, Errorf(kerr.InvalidConfig, "Invalid value %d for configuration %s: Value must not be -1 as %s value is set as %d, or more than it",
				local, pair[0], pair[1], total)
		}
	}
	if err := validateTableConfigs(get); err != nil {
		return nil, err
	}
	if strings.EqualFold(get(ConfigKVIndexEnabled), "true") {
		if !slices.Contains(SplitConfigList(get(ConfigCleanupPolicy)), "compact") {
			return nil, Errorf(kerr.InvalidConfig,
				"%s=true requires %s to include compact (it is %q)", ConfigKVIndexEnabled, ConfigCleanupPolicy, get(ConfigCleanupPolicy))
		}
		if !kvBefore && !kvCluster {
			return nil, Errorf(kerr.InvalidConfig,
				"%s=true is not allowed: the cluster runs without --kv-index-enabled", ConfigKVIndexEnabled)
		}
	}
	return out, nil
}

// checkValue checks that v parses as d's type and passes d's validator.
func checkValue(d *ConfigDef, v string) error {
	invalid := func(why string) error {
		return Errorf(kerr.InvalidConfig, "Invalid value %s for configuration %s: %s", v, d.Name, why)
	}
	switch d.Type {
	case ConfigTypeBoolean:
		if !strings.EqualFold(v, "true") && !strings.EqualFold(v, "false") {
			return invalid("Expected value to be either true or false")
		}
	case ConfigTypeInt:
		if _, err := strconv.ParseInt(v, 10, 32); err != nil {
			return invalid("Not a number of type INT")
		}
	case ConfigTypeLong:
		if _, err := strconv.ParseInt(v, 10, 64); err != nil {
			return invalid("Not a number of type LONG")
		}
	case ConfigTypeDouble:
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || math.IsNaN(f) {
			return invalid("Not a number of type DOUBLE")
		}
	}
	if d.Validate != nil {
		if err := d.Validate(v); err != nil {
			return invalid(err.Error())
		}
	}
	return nil
}

// SplitConfigList splits a list config value on commas, trimming each item and
// dropping empty ones (Kafka's LIST parsing).
func SplitConfigList(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// IsLogAppendTime reports whether configs set message.timestamp.type to
// LogAppendTime, so that batches are stamped with the broker's time.
func IsLogAppendTime(configs map[string]string) bool {
	return configs[ConfigMessageTimestampType] == "LogAppendTime"
}

// Validators. Each returns the reason in Kafka's words; checkValue adds the
// "Invalid value v for configuration name:" prefix.

func atLeast(min int64) func(string) error {
	return func(v string) error {
		n, _ := strconv.ParseInt(v, 10, 64)
		if n < min {
			return fmt.Errorf("Value must be at least %d", min)
		}
		return nil
	}
}

func between(lo, hi int64) func(string) error {
	return func(v string) error {
		n, _ := strconv.ParseInt(v, 10, 64)
		if n < lo {
			return fmt.Errorf("Value must be at least %d", lo)
		}
		if n > hi {
			return fmt.Errorf("Value must be no more than %d", hi)
		}
		return nil
	}
}

// intIn accepts one special value or a range (compression.gzip.level).
func intIn(special, lo, hi int64) func(string) error {
	return func(v string) error {
		n, _ := strconv.ParseInt(v, 10, 64)
		if n != special && (n < lo || n > hi) {
			return fmt.Errorf("Value must be %d or in [%d,...,%d]", special, lo, hi)
		}
		return nil
	}
}

func doubleBetween(lo, hi float64) func(string) error {
	return func(v string) error {
		f, _ := strconv.ParseFloat(v, 64)
		if f < lo || f > hi {
			return fmt.Errorf("Value must be in [%g,...,%g]", lo, hi)
		}
		return nil
	}
}

func oneOf(allowed ...string) func(string) error {
	return func(v string) error {
		if !slices.Contains(allowed, v) {
			return fmt.Errorf("String must be one of: %s", strings.Join(allowed, ", "))
		}
		return nil
	}
}

func listOf(allowed ...string) func(string) error {
	return func(v string) error {
		for _, item := range SplitConfigList(v) {
			if !slices.Contains(allowed, item) {
				return fmt.Errorf("String must be one of: %s", strings.Join(allowed, ", "))
			}
		}
		return nil
	}
}

var throttledReplicaRE = regexp.MustCompile(`^[0-9]+:[0-9]+$`)

// throttledReplicas accepts "*" or a list of partition:broker pairs.
func throttledReplicas(v string) error {
	items := SplitConfigList(v)
	if len(items) == 1 && items[0] == "*" {
		return nil
	}
	for _, item := range items {
		if !throttledReplicaRE.MatchString(item) {
			return fmt.Errorf("must be the wildcard (*) or a list of the form [partitionId]:[brokerId],[partitionId]:[brokerId],...")
		}
	}
	return nil
}

var kafkaVersionRE = regexp.MustCompile(`^[0-9]+\.[0-9]+(\.[0-9]+)?(-IV[0-9]+)?$`)

func kafkaVersion(v string) error {
	if !kafkaVersionRE.MatchString(v) {
		return fmt.Errorf("Version `%s` is not a valid version", v)
	}
	return nil
}
