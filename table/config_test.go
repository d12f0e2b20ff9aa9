package table

import (
	"testing"

	"github.com/floe-io/floe/coordapi"
)

// TestTableConfigsAgree checks that what coordapi accepts as
// table.partitioning and table.value.schema.definition (which it checks
// without this package) the table writer takes, and that what it refuses
// the writer refuses too, but for rules coordapi keeps stricter.
func TestTableConfigsAgree(t *testing.T) {
	const def = `{"type":"object","properties":{"country":{"type":"string"},"key":{"type":"string"},"n":{"type":"integer"}}}`
	tests := []struct {
		partitioning, definition string
		// stricter: coordapi refuses what iceberg-go v0.7.0 takes when
		// it builds the spec, though the Iceberg spec does not allow it
		// (an unknown transform, a time transform of binary, a list as a
		// source, a zero width, a field twice).
		stricter bool
	}{
		{partitioning: "day(timestamp)"},
		{partitioning: "none"},
		{partitioning: "hour(timestamp)"},
		{partitioning: "month(timestamp), identity(partition)"},
		{partitioning: "year(timestamp)"},
		{partitioning: "bucket[16](key)"},
		{partitioning: "truncate[4](key)"},
		{partitioning: "identity(offset)"},
		{partitioning: "void(partition)"},
		{partitioning: "identity(country)", definition: def},
		{partitioning: "identity(value_key)", definition: def},
		{partitioning: "bucket[8](n)", definition: def},
		{partitioning: "identity(country)"},
		{partitioning: "day(ts)"},
		{partitioning: "week(timestamp)", stricter: true},
		{partitioning: "day(key)", stricter: true},
		{partitioning: "timestamp"},
		{partitioning: "identity(headers)", stricter: true},
		{partitioning: "bucket[0](key)", stricter: true},
		{partitioning: "day(timestamp),day(timestamp)", stricter: true},
		{partitioning: "truncate[4](timestamp)", stricter: true},
		{definition: `{"type":"object","properties":{"a":{"type":"decimal"}}}`},
		{definition: `{"type":"object","properties":{"a":{"type":"array"}}}`},
		{definition: `{"type":"object","properties":{"a":{"type":"object"}}}`},
		{definition: `{"type":"string"}`},
		{definition: `{"type":["object","null"],"properties":{"a":{"type":["integer","null"]},"t":{"type":"string","format":"date"}}}`},
	}
	for _, tt := range tests {
		cfg := map[string]string{coordapi.ConfigTableEnabled: "true"}
		if tt.partitioning != "" {
			cfg[coordapi.ConfigTablePartitioning] = tt.partitioning
		}
		if tt.definition != "" {
			cfg[coordapi.ConfigTableValueSchema] = "json"
			cfg[coordapi.ConfigTableValueSchemaDefinition] = tt.definition
		}
		_, cerr := coordapi.ValidateTopicConfigs(cfg, false, false)
		sc, terr := Schema(), error(nil)
		if tt.definition != "" {
			sc, terr = ValueSchema(tt.definition)
		}
		if terr == nil {
			_, terr = ParsePartitioning(tt.partitioning, sc)
		}
		switch {
		case cerr == nil && terr != nil:
			t.Errorf("%q %q: coordapi accepts, the writer refuses: %v", tt.partitioning, tt.definition, terr)
		case cerr != nil && terr == nil && !tt.stricter:
			t.Errorf("%q %q: the writer accepts, coordapi refuses: %v", tt.partitioning, tt.definition, cerr)
		case cerr == nil && tt.stricter:
			t.Errorf("%q %q: coordapi accepts a case marked stricter", tt.partitioning, tt.definition)
		}
	}
}
