package coordapi

import (
	"errors"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// tableConfigCases are table config sets and whether each is valid.
// Package table checks that its parsers agree with this validation
// (TestTableConfigsAgree).
var tableConfigCases = []struct {
	Name    string
	Configs map[string]string
	OK      bool
}{
	{"defaults", map[string]string{ConfigTableEnabled: "true"}, true},
	{"enabled false", map[string]string{ConfigTableEnabled: "false"}, true},
	{"enabled not a boolean", map[string]string{ConfigTableEnabled: "yes"}, false},
	{"format iceberg", map[string]string{ConfigTableFormat: "iceberg"}, true},
	{"format delta", map[string]string{ConfigTableFormat: "delta"}, false},
	{"retention -1", map[string]string{ConfigTableRetentionMs: "-1"}, true},
	{"retention 0", map[string]string{ConfigTableRetentionMs: "0"}, true},
	{"retention -2", map[string]string{ConfigTableRetentionMs: "-2"}, false},
	{"retention not a number", map[string]string{ConfigTableRetentionMs: "1d"}, false},
	{"schema none", map[string]string{ConfigTableValueSchema: "none"}, true},
	{"schema avro", map[string]string{ConfigTableValueSchema: "avro"}, false},
	{"schema json without a definition", map[string]string{ConfigTableValueSchema: "json"}, false},
	{"schema json", map[string]string{ConfigTableValueSchema: "json",
		ConfigTableValueSchemaDefinition: `{"type":"object","properties":{"id":{"type":"integer"},"at":{"type":"string","format":"date-time"},` +
			`"tags":{"type":"array","items":{"type":"string"}},"geo":{"type":"object","properties":{"lat":{"type":"number"}}},"ok":{"type":["boolean","null"]}}}`}, true},
	{"definition not JSON", map[string]string{ConfigTableValueSchema: "json", ConfigTableValueSchemaDefinition: `{"type":`}, false},
	{"definition not an object", map[string]string{ConfigTableValueSchema: "json", ConfigTableValueSchemaDefinition: `{"type":"string"}`}, false},
	{"definition of an unknown type", map[string]string{ConfigTableValueSchema: "json",
		ConfigTableValueSchemaDefinition: `{"type":"object","properties":{"a":{"type":"decimal"}}}`}, false},
	{"definition with two types", map[string]string{ConfigTableValueSchema: "json",
		ConfigTableValueSchemaDefinition: `{"type":"object","properties":{"a":{"type":["string","integer"]}}}`}, false},
	{"definition with an array of no items", map[string]string{ConfigTableValueSchema: "json",
		ConfigTableValueSchemaDefinition: `{"type":"object","properties":{"a":{"type":"array"}}}`}, false},
	{"definition with an empty object", map[string]string{ConfigTableValueSchema: "json",
		ConfigTableValueSchemaDefinition: `{"type":"object","properties":{"a":{"type":"object"}}}`}, false},
	{"partitioning none", map[string]string{ConfigTablePartitioning: "none"}, true},
	{"partitioning hour", map[string]string{ConfigTablePartitioning: "hour(timestamp)"}, true},
	{"partitioning two", map[string]string{ConfigTablePartitioning: "day(timestamp), identity(partition)"}, true},
	{"partitioning bucket", map[string]string{ConfigTablePartitioning: "bucket[16](key)"}, true},
	{"partitioning truncate", map[string]string{ConfigTablePartitioning: "truncate[4](key)"}, true},
	{"partitioning by a typed column", map[string]string{ConfigTablePartitioning: "identity(country)", ConfigTableValueSchema: "json",
		ConfigTableValueSchemaDefinition: `{"type":"object","properties":{"country":{"type":"string"}}}`}, true},
	{"partitioning by a renamed typed column", map[string]string{ConfigTablePartitioning: "identity(value_key)", ConfigTableValueSchema: "json",
		ConfigTableValueSchemaDefinition: `{"type":"object","properties":{"key":{"type":"string"}}}`}, true},
	{"partitioning by a typed column without json", map[string]string{ConfigTablePartitioning: "identity(country)"}, false},
	{"partitioning of an unknown column", map[string]string{ConfigTablePartitioning: "day(ts)"}, false},
	{"partitioning of an unknown transform", map[string]string{ConfigTablePartitioning: "week(timestamp)"}, false},
	{"partitioning day of a key", map[string]string{ConfigTablePartitioning: "day(key)"}, false},
	{"partitioning truncate of a timestamp", map[string]string{ConfigTablePartitioning: "truncate[4](timestamp)"}, false},
	{"partitioning bucket of no width", map[string]string{ConfigTablePartitioning: "bucket[0](key)"}, false},
	{"partitioning not a transform", map[string]string{ConfigTablePartitioning: "timestamp"}, false},
	{"partitioning twice", map[string]string{ConfigTablePartitioning: "day(timestamp),day(timestamp)"}, false},
	{"partitioning by headers", map[string]string{ConfigTablePartitioning: "identity(headers)"}, false},
}

// TestTableConfigsValidated checks every table config case: the valid
// ones pass, the others are INVALID_CONFIG naming the config.
func TestTableConfigsValidated(t *testing.T) {
	for _, tt := range tableConfigCases {
		t.Run(tt.Name, func(t *testing.T) {
			out, err := ValidateTopicConfigs(tt.Configs, false, false)
			switch {
			case tt.OK && err != nil:
				t.Fatalf("%v: %v", tt.Configs, err)
			case !tt.OK && !errors.Is(err, kerr.InvalidConfig):
				t.Fatalf("%v: error %v, want INVALID_CONFIG", tt.Configs, err)
			case !tt.OK && !strings.Contains(err.Error(), "table."):
				t.Fatalf("%v: error %q names no table config", tt.Configs, err)
			case tt.OK && len(out) != len(tt.Configs):
				t.Fatalf("%v: validated to %v", tt.Configs, out)
			}
		})
	}
}

// TestTableConfigDefaults checks the defaults the design gives and that a
// topic without table configs has its table off.
func TestTableConfigDefaults(t *testing.T) {
	want := map[string]string{ConfigTableEnabled: "false", ConfigTableFormat: "iceberg", ConfigTableValueSchema: "none",
		ConfigTableValueSchemaDefinition: "", ConfigTablePartitioning: "day(timestamp)", ConfigTableRetentionMs: "-1"}
	for name, def := range want {
		d, ok := LookupTopicConfig(name)
		if !ok || d.Default != def {
			t.Errorf("%s: default %q (known %v), want %q", name, d.Default, ok, def)
		}
	}
	if IsTableEnabled(nil) || IsTableEnabled(map[string]string{ConfigTableEnabled: "false"}) || !IsTableEnabled(map[string]string{ConfigTableEnabled: "TRUE"}) {
		t.Error("IsTableEnabled")
	}
}

// FuzzTableConfigs: the table configs come from Kafka clients (CreateTopics,
// AlterConfigs): whatever their values, validation must not panic, and what
// it accepts validates again unchanged.
//
//	go test ./coordapi -run '^$' -fuzz FuzzTableConfigs -fuzztime 1m
func FuzzTableConfigs(f *testing.F) {
	for _, tc := range tableConfigCases {
		f.Add(tc.Configs[ConfigTablePartitioning], tc.Configs[ConfigTableValueSchema], tc.Configs[ConfigTableValueSchemaDefinition])
	}
	f.Add("bucket[16](key), identity(n)", "json", `{"type":"object","properties":{"n":{"type":"array","items":{"type":"object","properties":{"x":{"type":"number"}}}}}}`)
	f.Fuzz(func(t *testing.T, partitioning, schema, definition string) {
		cfg := map[string]string{ConfigTableEnabled: "true"}
		for k, v := range map[string]string{ConfigTablePartitioning: partitioning, ConfigTableValueSchema: schema, ConfigTableValueSchemaDefinition: definition} {
			if v != "" {
				cfg[k] = v
			}
		}
		out, err := ValidateTopicConfigs(cfg, false, false)
		if err != nil {
			if !errors.Is(err, kerr.InvalidConfig) {
				t.Fatalf("%v: error %v is not INVALID_CONFIG", cfg, err)
			}
			return
		}
		again, err := ValidateTopicConfigs(out, false, false)
		if err != nil || len(again) != len(out) {
			t.Fatalf("%v validated to %v, which validates to %v, %v", cfg, out, again, err)
		}
	})
}
