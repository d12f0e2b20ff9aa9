package coordapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
)

// The table configs (issue 41, docs/design/iceberg-tables.md): a topic with
// table.enabled=true is also an Iceberg table. Their values are checked
// here without the table writer (package table, which links Iceberg and
// Arrow), by the same rules its ParsePartitioning and ValueColumns apply;
// a test in package table checks that the two agree.
const (
	ConfigTableEnabled               = "table.enabled"
	ConfigTableFormat                = "table.format"
	ConfigTableValueSchema           = "table.value.schema"
	ConfigTableValueSchemaDefinition = "table.value.schema.definition"
	ConfigTablePartitioning          = "table.partitioning"
	ConfigTableRetentionMs           = "table.retention.ms"
)

// IsTableEnabled reports whether configs turn the topic's table on.
func IsTableEnabled(configs map[string]string) bool {
	return strings.EqualFold(configs[ConfigTableEnabled], "true")
}

// tableConfigDefs are the table configs' definitions, part of
// TopicConfigDefs.
var tableConfigDefs = []ConfigDef{
	{Name: ConfigTableEnabled, Enforced: true, Default: "false", Type: ConfigTypeBoolean,
		Doc: "floe: also write the topic's committed records to an Iceberg table <namespace>.<topic>, served by the REST catalog at /iceberg/v1 on the HTTP listener. Turning it off stops the table jobs and keeps the table."},
	{Name: ConfigTableFormat, Enforced: true, Default: "iceberg", Type: ConfigTypeString,
		Doc:      "floe: the table format of a table.enabled topic; iceberg is the only one.",
		Validate: oneOf("iceberg")},
	{Name: ConfigTablePartitioning, Enforced: true, Default: "day(timestamp)", Type: ConfigTypeString,
		Doc:      "floe: the table's Iceberg partitioning: comma-separated transforms of columns, such as day(timestamp), hour(timestamp), identity(partition) or bucket[16](key); none for an unpartitioned table.",
		Validate: validPartitioning},
	{Name: ConfigTableRetentionMs, Enforced: true, Default: "-1", Type: ConfigTypeLong,
		Doc:      "floe: how long the table keeps rows (by their record timestamp); -1 keeps them forever, whatever the topic's retention. The table maintenance job (at most daily, --table-maintain-interval) removes whole data files whose newest row is older, in a delete snapshot; their bytes go when that snapshot's predecessors expire (history.expire.max-snapshot-age-ms, 5 days).",
		Validate: atLeast(-1)},
	{Name: ConfigTableValueSchema, Enforced: true, Default: "none", Type: ConfigTypeString,
		Doc:      "floe: none keeps the value in the table's binary value column only; json also makes the top-level properties of table.value.schema.definition typed columns (values that do not parse keep their raw columns and an _error).",
		Validate: oneOf("none", "json")},
	{Name: ConfigTableValueSchemaDefinition, Enforced: true, Default: "", Type: ConfigTypeString,
		Doc:      "floe: the JSON Schema of the values when table.value.schema is json: an object whose properties have types string (format date-time or date), integer, number, boolean, object or array.",
		Validate: validValueSchema},
}

// validateTableConfigs checks the rules between the table configs; get
// returns a config's value or its default.
func validateTableConfigs(get func(string) string) error {
	if get(ConfigTableValueSchema) == "json" && get(ConfigTableValueSchemaDefinition) == "" {
		return Errorf(kerr.InvalidConfig, "%s=json requires %s", ConfigTableValueSchema, ConfigTableValueSchemaDefinition)
	}
	var props []string
	if get(ConfigTableValueSchema) == "json" {
		props = valueSchemaColumns(get(ConfigTableValueSchemaDefinition))
	}
	if err := checkPartitioning(get(ConfigTablePartitioning), props, false); err != nil {
		return Errorf(kerr.InvalidConfig, "Invalid value %s for configuration %s: %v", get(ConfigTablePartitioning), ConfigTablePartitioning, err)
	}
	return nil
}

// tableFixedColumns are the columns every table has that a partitioning
// may name (headers, a list, cannot be a partition source).
var tableFixedColumns = map[string]string{"partition": "int", "offset": "long", "timestamp": "timestamptz", "key": "binary", "value": "binary"}

var partitionTransform = regexp.MustCompile(`^(identity|void|year|month|day|hour|bucket\[([0-9]+)\]|truncate\[([0-9]+)\])\((.*)\)$`)

// validPartitioning checks a table.partitioning value's transforms, and
// its columns where they are fixed ones; validateTableConfigs checks the
// other columns against the typed value columns.
func validPartitioning(v string) error {
	return checkPartitioning(v, nil, true)
}

// checkPartitioning checks a partitioning as table.ParsePartitioning
// parses it: "none", or transform(column), ... with Iceberg's transforms,
// over the fixed columns or, with valueColumns, the typed ones (whose
// types are not known here: only the time transforms' need of a timestamp
// is checked, and only for the fixed columns). anyColumn accepts any
// column that is not a fixed one.
func checkPartitioning(v string, valueColumns []string, anyColumn bool) error {
	v = strings.TrimSpace(v)
	if v == "none" || v == "" {
		return nil
	}
	seen := map[string]bool{}
	for part := range strings.SplitSeq(v, ",") {
		part = strings.TrimSpace(part)
		m := partitionTransform.FindStringSubmatch(part)
		if m == nil {
			return fmt.Errorf("%q is not transform(column) with an Iceberg transform (identity, year, month, day, hour, bucket[N], truncate[N], void)", part)
		}
		for _, n := range m[2:4] {
			if n == "" {
				continue
			}
			if w, err := strconv.Atoi(n); err != nil || w <= 0 || w > 1<<20 {
				return fmt.Errorf("%q: the width must be between 1 and %d", part, 1<<20)
			}
		}
		tr, col := m[1], m[4]
		typ, fixed := tableFixedColumns[col]
		if !fixed && !anyColumn && !slices.Contains(valueColumns, col) {
			return fmt.Errorf("%q: no column %q to partition by (partition, offset, timestamp, key, value, or a typed value column)", part, col)
		}
		if fixed {
			switch tr {
			case "year", "month", "day", "hour":
				if typ != "timestamptz" {
					return fmt.Errorf("%q: %s applies to timestamp only", part, tr)
				}
			}
			if strings.HasPrefix(tr, "truncate") && typ == "timestamptz" {
				return fmt.Errorf("%q: truncate does not apply to timestamp", part)
			}
		}
		if seen[part] {
			return fmt.Errorf("%q appears twice", part)
		}
		seen[part] = true
	}
	return nil
}

// valueSchema is the part of a JSON Schema table.value.schema.definition
// is read for (package table reads the same).
type valueSchema struct {
	Type       any                     `json:"type"`
	Format     string                  `json:"format"`
	Properties map[string]*valueSchema `json:"properties"`
	Items      *valueSchema            `json:"items"`
	Required   []string                `json:"required"`
}

// validValueSchema checks a table.value.schema.definition: empty, or a
// JSON Schema object whose properties have supported types.
func validValueSchema(v string) error {
	if v == "" {
		return nil
	}
	var s valueSchema
	if err := json.Unmarshal([]byte(v), &s); err != nil {
		return fmt.Errorf("not a JSON Schema: %v", err)
	}
	if t, err := s.typeName(); err != nil || t != "object" {
		return errors.New("the top level must be of type object")
	}
	return s.check("")
}

func (s *valueSchema) typeName() (string, error) { return SchemaTypeName(s.Type) }

// SchemaTypeName reads a JSON Schema "type" of table.value.schema.definition
// without "null": a name, or a list of one name and "null" (a nullable
// column). package table's writer reads the schema with it too, so that
// what this accepts is what it writes.
func SchemaTypeName(typ any) (string, error) {
	switch t := typ.(type) {
	case string:
		return t, nil
	case []any:
		var names []string
		for _, n := range t {
			if n, ok := n.(string); ok && n != "null" {
				names = append(names, n)
			}
		}
		if len(names) == 1 {
			return names[0], nil
		}
		return "", fmt.Errorf("type %v: one type besides null is supported", t)
	case nil:
		return "", errors.New("no type")
	}
	return "", fmt.Errorf("type %v is not a name", typ)
}

// check checks s's type and what it holds; at names where s is.
func (s *valueSchema) check(at string) error {
	t, err := s.typeName()
	if err != nil {
		return fmt.Errorf("%s: %v", at, err)
	}
	switch t {
	case "string", "integer", "number", "boolean":
		return nil
	case "object":
		for n, p := range s.Properties {
			if p == nil {
				return fmt.Errorf("property %s%s has no schema", at, n)
			}
			if err := p.check(at + n + "."); err != nil {
				return err
			}
		}
		if at != "" && len(s.Properties) == 0 {
			return fmt.Errorf("object %s has no properties", strings.TrimSuffix(at, "."))
		}
		return nil
	case "array":
		if s.Items == nil {
			return fmt.Errorf("array %s has no items", strings.TrimSuffix(at, "."))
		}
		return s.Items.check(at + "[].")
	}
	return fmt.Errorf("%s: type %q is not one of string, integer, number, boolean, object, array", strings.TrimSuffix(at, "."), t)
}

// valueSchemaColumns returns the typed value columns' names a valid
// definition gives (a property named like a fixed column is
// value_<name>), nil for an invalid one.
func valueSchemaColumns(v string) []string {
	var s valueSchema
	if json.Unmarshal([]byte(v), &s) != nil {
		return nil
	}
	var out []string
	for n := range s.Properties {
		if _, fixed := tableFixedColumns[n]; fixed || n == "headers" || n == "_error" {
			n = "value_" + n
		}
		out = append(out, n)
	}
	return out
}
