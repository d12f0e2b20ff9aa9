package table_test

import (
	"context"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/floe-io/floe/objectstore"
	"github.com/floe-io/floe/table"
	"github.com/floe-io/floe/table/catalog"
)

const orderSchema = `{
  "type": "object",
  "required": ["id"],
  "properties": {
    "id":     {"type": "integer"},
    "name":   {"type": ["string", "null"]},
    "price":  {"type": "number"},
    "paid":   {"type": "boolean"},
    "at":     {"type": "string", "format": "date-time"},
    "day":    {"type": "string", "format": "date"},
    "tags":   {"type": "array", "items": {"type": "string"}},
    "addr":   {"type": "object", "properties": {"city": {"type": "string"}, "zip": {"type": "integer"}}},
    "offset": {"type": "integer"}
  }
}`

func TestValueColumns(t *testing.T) {
	for _, tc := range []struct {
		name, def string
		cols      string // name:type, in order
		err       string
	}{
		{name: "every type", def: orderSchema,
			cols: "addr:struct<1001: city: optional string, 1002: zip: optional long> at:timestamptz day:date id:long name:string " +
				"value_offset:long paid:boolean price:double tags:list<string>"},
		{name: "top level not an object", def: `{"type": "string"}`, err: "must be an object"},
		{name: "unsupported type", def: `{"type": "object", "properties": {"x": {"type": "decimal"}}}`, err: `type "decimal" is not supported`},
		{name: "array without items", def: `{"type": "object", "properties": {"x": {"type": "array"}}}`, err: "items: no schema"},
		{name: "two types", def: `{"type": "object", "properties": {"x": {"type": ["string", "integer"]}}}`, err: "one type besides null"},
		{name: "not JSON", def: `{`, err: "value schema"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cols, err := table.ValueColumns(tc.def)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, c := range cols {
				got = append(got, c.Name+":"+c.Type.String())
			}
			if strings.Join(got, " ") != tc.cols {
				t.Fatalf("columns\n got %s\nwant %s", strings.Join(got, " "), tc.cols)
			}
		})
	}
}

// readColumns scans the table and returns, per offset of partition 0,
// each column's value as Arrow prints it ("null" for null).
func readColumns(t *testing.T, tb *table.Tables) map[int64]map[string]string {
	t.Helper()
	ctx := context.Background()
	tbl, err := tb.Load(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	at, err := tbl.Scan().ToArrowTable(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer at.Release()
	rdr := array.NewTableReader(at, 1024)
	defer rdr.Release()
	out := map[int64]map[string]string{}
	for rdr.Next() {
		rec := rdr.RecordBatch()
		off := rec.Column(rec.Schema().FieldIndices("offset")[0]).(*array.Int64)
		for i := 0; i < int(rec.NumRows()); i++ {
			row := map[string]string{}
			for c, f := range rec.Schema().Fields() {
				col := rec.Column(c)
				if col.IsNull(i) {
					row[f.Name] = "null"
				} else {
					row[f.Name] = col.ValueStr(i)
				}
			}
			out[off.Value(i)] = row
		}
	}
	return out
}

// TestValueSchemaColumns: JSON values become typed columns; a value that
// is not JSON, not an object, of the wrong type or without a required
// property keeps its raw value, gets nulls in the typed columns and the
// reason in _error; a schema evolved mid-stream adds a column that old
// rows read as null.
func TestValueSchemaColumns(t *testing.T) {
	ctx := context.Background()
	tb := newTables(t, objectstore.NewMemory(), "mem://floe", &catalog.MemCatalog{})
	if _, err := tb.Create(ctx, topic, table.Spec{ValueSchema: orderSchema}); err != nil {
		t.Fatal(err)
	}
	values := []string{
		`{"id": 1, "name": "a", "price": 2.5, "paid": true, "at": "2026-12-07T01:02:03.5Z", "day": "2026-12-07", "tags": ["x", "y"], "addr": {"city": "Oslo", "zip": 150}, "offset": 9, "unknown": 1}`,
		`{"id": 2}`,
		`not json`,
		`[1, 2]`,
		`{"id": "three"}`,
		`{"name": "no id"}`,
		`{"id": 5, "addr": {"zip": "x"}}`,
		`{"id": 6, "at": "yesterday"}`,
	}
	var recs []table.Record
	for i, v := range append(values, "") {
		r := table.Record{Offset: int64(i), Timestamp: 1_765_000_000_000, Value: []byte(v)}
		if v == "" {
			r.Value = nil
		}
		recs = append(recs, r)
	}
	if _, err := tb.Commit(ctx, topic, table.Range{From: 0, To: int64(len(recs)), Records: recs}); err != nil {
		t.Fatal(err)
	}
	if added, err := tb.EvolveValueSchema(ctx, topic, strings.Replace(orderSchema, `"id":     {"type": "integer"},`,
		`"id": {"type": "integer"}, "extra": {"type": "string"},`, 1)); err != nil || !added {
		t.Fatalf("evolve: %v %v", added, err)
	}
	next := int64(len(recs))
	if _, err := tb.Commit(ctx, topic, table.Range{From: next, To: next + 1, Records: []table.Record{
		{Offset: next, Timestamp: 1_765_000_000_000, Value: []byte(`{"id": 7, "extra": "new"}`)},
	}}); err != nil {
		t.Fatal(err)
	}

	rows := readColumns(t, tb)
	for _, tc := range []struct {
		offset int64
		want   map[string]string
		errHas string
	}{
		{0, map[string]string{"id": "1", "name": "a", "price": "2.5", "paid": "true", "at": "2026-12-07T01:02:03.5Z",
			"day": "2026-12-07", "tags": `["x","y"]`, "addr": `{"city":"Oslo","zip":150}`, "value_offset": "9", "extra": "null", "_error": "null"}, ""},
		{1, map[string]string{"id": "2", "name": "null", "tags": "null", "addr": "null", "_error": "null"}, ""},
		{2, map[string]string{"id": "null"}, "not a JSON object"},
		{3, map[string]string{"id": "null"}, "not a JSON object"},
		{4, map[string]string{"id": "null"}, `property "id": a string is not a long`},
		{5, map[string]string{"id": "null", "name": "null"}, `required property "id" is missing`},
		{6, map[string]string{"id": "null", "addr": "null"}, `property "addr": zip: a string is not a long`},
		{7, map[string]string{"id": "null", "at": "null"}, `"yesterday" is not a date-time`},
		{8, map[string]string{"id": "null"}, "null value"},
		{9, map[string]string{"id": "7", "extra": "new", "_error": "null"}, ""},
	} {
		row := rows[tc.offset]
		if row == nil {
			t.Fatalf("offset %d: no row (%d rows)", tc.offset, len(rows))
		}
		for col, want := range tc.want {
			if row[col] != want {
				t.Errorf("offset %d %s = %s, want %s", tc.offset, col, row[col], want)
			}
		}
		if tc.errHas != "" && !strings.Contains(row["_error"], tc.errHas) {
			t.Errorf("offset %d _error = %s, want it to say %q", tc.offset, row["_error"], tc.errHas)
		}
		if tc.offset < int64(len(values)) && row["value"] == "null" {
			t.Errorf("offset %d lost its raw value", tc.offset)
		}
	}
}
