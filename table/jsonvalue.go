package table

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"

	"github.com/floe-io/floe/coordapi"
)

// fieldError is the field id of the _error column, which a table with a
// value schema (table.value.schema=json) has: why a record's value gave no
// typed columns, or null.
const fieldError = 10

// errorColumn is the _error column's name.
const errorColumn = "_error"

// valueFieldBase is the first field id of the typed value columns.
const valueFieldBase = 1000

// fixedColumns are the names typed value columns may not take: a JSON
// property of one of these names becomes "value_<name>".
var fixedColumns = []string{"partition", "offset", "timestamp", "key", "value", "headers", errorColumn}

// jsonSchema is the part of a JSON Schema that typed columns come from.
type jsonSchema struct {
	Type       any                    `json:"type"` // a name, or [name, "null"]
	Format     string                 `json:"format"`
	Properties map[string]*jsonSchema `json:"properties"`
	Items      *jsonSchema            `json:"items"`
	Required   []string               `json:"required"`
}

// typeName is the schema's type without "null".
func (s *jsonSchema) typeName() (string, error) { return coordapi.SchemaTypeName(s.Type) }

// ValueColumns returns the typed columns a JSON Schema (the
// table.value.schema.definition of a table.value.schema=json topic) gives:
// one optional column per property of the top-level object, in name
// order, string → string (format date-time → timestamptz, date → date),
// integer → long, number → double, boolean → boolean, object → struct,
// array → list. A property named like a fixed column becomes
// "value_<name>". Field ids count from 1000.
func ValueColumns(definition string) ([]iceberg.NestedField, error) {
	var s jsonSchema
	if err := json.Unmarshal([]byte(definition), &s); err != nil {
		return nil, fmt.Errorf("table: value schema: %w", err)
	}
	if t, err := s.typeName(); err != nil || t != "object" {
		return nil, fmt.Errorf("table: value schema: the top level must be an object (%v)", cmpErr(err, t))
	}
	next := valueFieldBase
	fields, err := objectFields(&s, &next)
	if err != nil {
		return nil, fmt.Errorf("table: value schema: %w", err)
	}
	for i := range fields {
		if slices.Contains(fixedColumns, fields[i].Name) {
			fields[i].Name = "value_" + fields[i].Name
		}
	}
	return fields, nil
}

func cmpErr(err error, t string) string {
	if err != nil {
		return err.Error()
	}
	return "type " + t
}

func objectFields(s *jsonSchema, next *int) ([]iceberg.NestedField, error) {
	names := make([]string, 0, len(s.Properties))
	for n := range s.Properties {
		names = append(names, n)
	}
	slices.Sort(names)
	var out []iceberg.NestedField
	for _, n := range names {
		id := *next
		*next++
		t, err := icebergType(s.Properties[n], next)
		if err != nil {
			return nil, fmt.Errorf("property %q: %w", n, err)
		}
		out = append(out, iceberg.NestedField{ID: id, Name: n, Type: t})
	}
	return out, nil
}

func icebergType(s *jsonSchema, next *int) (iceberg.Type, error) {
	if s == nil {
		return nil, errors.New("no schema")
	}
	name, err := s.typeName()
	if err != nil {
		return nil, err
	}
	switch name {
	case "string":
		switch s.Format {
		case "date-time":
			return iceberg.PrimitiveTypes.TimestampTz, nil
		case "date":
			return iceberg.PrimitiveTypes.Date, nil
		}
		return iceberg.PrimitiveTypes.String, nil
	case "integer":
		return iceberg.PrimitiveTypes.Int64, nil
	case "number":
		return iceberg.PrimitiveTypes.Float64, nil
	case "boolean":
		return iceberg.PrimitiveTypes.Bool, nil
	case "object":
		fields, err := objectFields(s, next)
		if err != nil {
			return nil, err
		}
		if len(fields) == 0 {
			return nil, errors.New("an object without properties")
		}
		return &iceberg.StructType{FieldList: fields}, nil
	case "array":
		id := *next
		*next++
		elem, err := icebergType(s.Items, next)
		if err != nil {
			return nil, fmt.Errorf("items: %w", err)
		}
		return &iceberg.ListType{ElementID: id, Element: elem}, nil
	}
	return nil, fmt.Errorf("type %q is not supported", name)
}

// requiredProps returns the top-level required properties of a JSON
// Schema, by column name.
func requiredProps(definition string) []string {
	var s jsonSchema
	if json.Unmarshal([]byte(definition), &s) != nil {
		return nil
	}
	return s.Required
}

// jsonColumns appends records' typed value columns: every top-level
// field of the Arrow schema after the fixed ones. A value that is not a
// JSON object matching the columns' types gets nulls in all of them and
// the reason in _error; it is never dropped.
type jsonColumns struct {
	fields   []iceberg.NestedField // typed columns, table order
	builders []array.Builder
	errB     *array.StringBuilder
	required []string // JSON names
}

// decode parses value into the columns' values, or says why it cannot.
func (j *jsonColumns) decode(value []byte) ([]any, error) {
	if value == nil {
		return nil, errors.New("null value")
	}
	d := json.NewDecoder(bytes.NewReader(value))
	d.UseNumber()
	var m map[string]any
	if err := d.Decode(&m); err != nil {
		return nil, fmt.Errorf("not a JSON object: %w", err)
	}
	if d.More() {
		return nil, errors.New("not a JSON object: data after it")
	}
	for _, r := range j.required {
		if _, ok := m[r]; !ok {
			return nil, fmt.Errorf("required property %q is missing", r)
		}
	}
	vals := make([]any, len(j.fields))
	for i, f := range j.fields {
		name := strings.TrimPrefix(f.Name, "value_")
		if name == f.Name || !slices.Contains(fixedColumns, name) {
			name = f.Name
		}
		v, ok := m[name]
		if !ok || v == nil {
			continue
		}
		cv, err := convert(f.Type, v)
		if err != nil {
			return nil, fmt.Errorf("property %q: %w", name, err)
		}
		vals[i] = cv
	}
	return vals, nil
}

// convert checks v against t and returns it in the form appendValue
// takes.
func convert(t iceberg.Type, v any) (any, error) {
	if v == nil {
		return nil, nil
	}
	switch t := t.(type) {
	case iceberg.StringType:
		if s, ok := v.(string); ok {
			return s, nil
		}
	case iceberg.Int64Type:
		if n, ok := v.(json.Number); ok {
			i, err := n.Int64()
			if err != nil {
				return nil, fmt.Errorf("%s is not a 64-bit integer", n)
			}
			return i, nil
		}
	case iceberg.Float64Type:
		if n, ok := v.(json.Number); ok {
			f, err := n.Float64()
			if err != nil || math.IsInf(f, 0) {
				return nil, fmt.Errorf("%s is not a double", n)
			}
			return f, nil
		}
	case iceberg.BooleanType:
		if b, ok := v.(bool); ok {
			return b, nil
		}
	case iceberg.TimestampTzType:
		if s, ok := v.(string); ok {
			ts, err := time.Parse(time.RFC3339Nano, s)
			if err != nil {
				return nil, fmt.Errorf("%q is not a date-time: %w", s, err)
			}
			return ts, nil
		}
	case iceberg.DateType:
		if s, ok := v.(string); ok {
			d, err := time.Parse(time.DateOnly, s)
			if err != nil {
				return nil, fmt.Errorf("%q is not a date: %w", s, err)
			}
			return d, nil
		}
	case *iceberg.StructType:
		if m, ok := v.(map[string]any); ok {
			vals := make([]any, len(t.FieldList))
			for i, f := range t.FieldList {
				cv, err := convert(f.Type, m[f.Name])
				if err != nil {
					return nil, fmt.Errorf("%s: %w", f.Name, err)
				}
				vals[i] = cv
			}
			return vals, nil
		}
	case *iceberg.ListType:
		if a, ok := v.([]any); ok {
			vals := make([]any, len(a))
			for i, e := range a {
				cv, err := convert(t.Element, e)
				if err != nil {
					return nil, fmt.Errorf("[%d]: %w", i, err)
				}
				vals[i] = cv
			}
			return vals, nil
		}
	default:
		return nil, fmt.Errorf("column type %s is not supported", t)
	}
	return nil, fmt.Errorf("%s is not a %s", jsonKind(v), t)
}

func jsonKind(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case bool:
		return "a boolean"
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	}
	return fmt.Sprintf("%T", v)
}

// appendValue appends a converted value (or null) to b.
func appendValue(b array.Builder, v any) {
	if v == nil {
		b.AppendNull()
		return
	}
	switch b := b.(type) {
	case *array.StringBuilder:
		b.Append(v.(string))
	case *array.Int64Builder:
		b.Append(v.(int64))
	case *array.Float64Builder:
		b.Append(v.(float64))
	case *array.BooleanBuilder:
		b.Append(v.(bool))
	case *array.TimestampBuilder:
		ts := v.(time.Time)
		switch b.Type().(*arrow.TimestampType).Unit {
		case arrow.Nanosecond:
			b.Append(arrow.Timestamp(ts.UnixNano()))
		default:
			b.Append(arrow.Timestamp(ts.UnixMicro()))
		}
	case *array.Date32Builder:
		b.Append(arrow.Date32FromTime(v.(time.Time)))
	case *array.StructBuilder:
		vals := v.([]any)
		b.Append(true)
		for i, fv := range vals {
			appendValue(b.FieldBuilder(i), fv)
		}
	case *array.ListBuilder:
		vals := v.([]any)
		b.Append(true)
		for _, ev := range vals {
			appendValue(b.ValueBuilder(), ev)
		}
	default:
		b.AppendNull()
	}
}

// appendRecord appends one record's typed columns and _error.
func (j *jsonColumns) appendRecord(value []byte) {
	vals, err := j.decode(value)
	if err != nil {
		for _, b := range j.builders {
			b.AppendNull()
		}
		j.errB.Append(err.Error())
		return
	}
	for i, b := range j.builders {
		appendValue(b, vals[i])
	}
	j.errB.AppendNull()
}
