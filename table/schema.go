package table

import (
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	itable "github.com/apache/iceberg-go/table"
)

// Record is one committed Kafka record of a topic-partition, decoded: what
// a table row holds in its always-present columns.
type Record struct {
	// Partition is the topic partition.
	Partition int32
	// Offset is the record's offset in the partition.
	Offset int64
	// Timestamp is the record's timestamp in milliseconds since the Unix
	// epoch (its CreateTime, or the LogAppendTime of such a topic).
	Timestamp int64
	// Key and Value are the record's bytes; nil is a null key or value.
	Key, Value []byte
	// Headers are the record's headers in order (duplicates kept).
	Headers []Header
}

// Header is one Kafka record header. A nil Value is a null value.
type Header struct {
	Key   string
	Value []byte
}

// Field ids of the always-present columns. They are part of the table
// format (doc.go): Iceberg resolves columns by id, so they never change.
// Typed value columns (table.value.schema) get ids from 1000 on.
const (
	fieldPartition   = 1
	fieldOffset      = 2
	fieldTimestamp   = 3
	fieldKey         = 4
	fieldValue       = 5
	fieldHeaders     = 6
	fieldHeaderElem  = 7
	fieldHeaderKey   = 8
	fieldHeaderValue = 9
)

// Schema returns the Iceberg schema of a topic's table without typed
// value columns.
func Schema() *iceberg.Schema {
	return iceberg.NewSchema(0, fixedFields()...)
}

// ValueSchema returns the Iceberg schema of a table with a JSON value
// schema: the fixed columns, _error, then ValueColumns(definition).
func ValueSchema(definition string) (*iceberg.Schema, error) {
	cols, err := ValueColumns(definition)
	if err != nil {
		return nil, err
	}
	fields := append(fixedFields(),
		iceberg.NestedField{ID: fieldError, Name: errorColumn, Type: iceberg.PrimitiveTypes.String,
			Doc: "why the value gave no typed columns (not JSON, or not the schema); null when it did"})
	return iceberg.NewSchema(0, append(fields, cols...)...), nil
}

func fixedFields() []iceberg.NestedField {
	header := &iceberg.StructType{FieldList: []iceberg.NestedField{
		{ID: fieldHeaderKey, Name: "key", Type: iceberg.PrimitiveTypes.String, Required: true},
		{ID: fieldHeaderValue, Name: "value", Type: iceberg.PrimitiveTypes.Binary},
	}}
	return []iceberg.NestedField{
		{ID: fieldPartition, Name: "partition", Type: iceberg.PrimitiveTypes.Int32, Required: true,
			Doc: "Kafka partition"},
		{ID: fieldOffset, Name: "offset", Type: iceberg.PrimitiveTypes.Int64, Required: true,
			Doc: "Kafka offset in the partition"},
		{ID: fieldTimestamp, Name: "timestamp", Type: iceberg.PrimitiveTypes.TimestampTz, Required: true,
			Doc: "record timestamp (CreateTime or LogAppendTime), millisecond precision"},
		{ID: fieldKey, Name: "key", Type: iceberg.PrimitiveTypes.Binary, Doc: "record key; null for a null key"},
		{ID: fieldValue, Name: "value", Type: iceberg.PrimitiveTypes.Binary, Doc: "record value; null for a null value"},
		{ID: fieldHeaders, Name: "headers", Required: true,
			Type: &iceberg.ListType{ElementID: fieldHeaderElem, Element: header, ElementRequired: true},
			Doc:  "record headers in order, duplicates kept"},
	}
}

// ParsePartitioning returns the partition spec for a table.partitioning
// value: a comma-separated list of Iceberg transforms of the
// always-present columns, such as "day(timestamp)" (the default, for ""),
// "hour(timestamp)", "month(timestamp)", "identity(partition)" or
// "bucket[16](key)"; "none" is an unpartitioned table.
func ParsePartitioning(s string, sc *iceberg.Schema) (iceberg.PartitionSpec, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		s = "day(timestamp)"
	}
	if s == "none" {
		return *iceberg.UnpartitionedSpec, nil
	}
	var opts []iceberg.PartitionOption
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		open := strings.LastIndexByte(part, '(')
		if open <= 0 || !strings.HasSuffix(part, ")") {
			return iceberg.PartitionSpec{}, fmt.Errorf("table: partitioning %q: %q is not transform(column)", s, part)
		}
		tname, col := part[:open], part[open+1:len(part)-1]
		tr, err := iceberg.ParseTransform(tname)
		if err != nil {
			return iceberg.PartitionSpec{}, fmt.Errorf("table: partitioning %q: %w", s, err)
		}
		f, ok := sc.FindFieldByName(col)
		if !ok {
			return iceberg.PartitionSpec{}, fmt.Errorf("table: partitioning %q: no column %q", s, col)
		}
		name := col
		if tname != "identity" {
			name = col + "_" + strings.NewReplacer("[", "", "]", "").Replace(tname)
		}
		opts = append(opts, iceberg.AddPartitionFieldBySourceID(f.ID, name, tr, sc, nil))
	}
	spec, err := iceberg.NewPartitionSpecOpts(opts...)
	if err != nil {
		return iceberg.PartitionSpec{}, fmt.Errorf("table: partitioning %q: %w", s, err)
	}
	return spec, nil
}

// Batch bounds of recordReader: a batch ends after batchRows records or
// once its keys, values and headers pass batchBytes.
const (
	batchRows  = 8192
	batchBytes = 8 << 20
)

// recordReader hands iceberg-go's writer the records as Arrow record
// batches of the table schema, built one at a time as it asks, so that a
// commit holds its records and one batch, not a second copy of them all.
type recordReader struct {
	refs     atomic.Int64
	sc       *iceberg.Schema
	asc      *arrow.Schema
	recs     []Record
	required []string
	cur      arrow.RecordBatch
	err      error
}

var _ array.RecordReader = (*recordReader)(nil)

// newRecordReader returns a reader of recs in table schema sc; required
// are the value schema's required properties when sc has typed value
// columns. The caller releases it.
func newRecordReader(sc *iceberg.Schema, recs []Record, required []string) (*recordReader, error) {
	asc, err := itable.SchemaToArrowSchema(sc, nil, true, false)
	if err != nil {
		return nil, fmt.Errorf("table: arrow schema: %w", err)
	}
	r := &recordReader{sc: sc, asc: asc, recs: recs, required: required}
	r.refs.Store(1)
	return r, nil
}

func (r *recordReader) Retain() { r.refs.Add(1) }

func (r *recordReader) Release() {
	if r.refs.Add(-1) == 0 && r.cur != nil {
		r.cur.Release()
		r.cur = nil
	}
}

func (r *recordReader) Schema() *arrow.Schema { return r.asc }

func (r *recordReader) Next() bool {
	if r.cur != nil {
		r.cur.Release()
		r.cur = nil
	}
	if len(r.recs) == 0 || r.err != nil {
		return false
	}
	n, size := 0, 0
	for n < len(r.recs) && n < batchRows && size < batchBytes {
		rec := &r.recs[n]
		size += len(rec.Key) + len(rec.Value)
		for _, h := range rec.Headers {
			size += len(h.Key) + len(h.Value)
		}
		n++
	}
	r.cur, r.err = buildBatch(r.sc, r.asc, r.recs[:n], r.required)
	r.recs = r.recs[n:]
	return r.err == nil
}

func (r *recordReader) RecordBatch() arrow.RecordBatch { return r.cur }

// Record is RecordBatch (array.RecordReader's deprecated name).
func (r *recordReader) Record() arrow.RecordBatch { return r.cur }

func (r *recordReader) Err() error { return r.err }

// buildBatch builds one Arrow record batch of recs in the table schema sc
// (asc its Arrow form). The caller releases it.
func buildBatch(sc *iceberg.Schema, asc *arrow.Schema, recs []Record, required []string) (arrow.RecordBatch, error) {
	b := array.NewRecordBuilder(memory.DefaultAllocator, asc)
	defer b.Release()
	var jc *jsonColumns
	if _, ok := sc.FindFieldByName(errorColumn); ok {
		jc = &jsonColumns{required: required}
		for i, f := range sc.Fields() {
			switch {
			case f.ID == fieldError:
				jc.errB = b.Field(i).(*array.StringBuilder)
			case i >= 6:
				jc.fields = append(jc.fields, f)
				jc.builders = append(jc.builders, b.Field(i))
			}
		}
		if jc.errB == nil {
			return nil, fmt.Errorf("table: schema has %s but not as field %d", errorColumn, fieldError)
		}
	}
	part := b.Field(0).(*array.Int32Builder)
	off := b.Field(1).(*array.Int64Builder)
	ts := b.Field(2).(*array.TimestampBuilder)
	key := b.Field(3).(*array.BinaryBuilder)
	val := b.Field(4).(*array.BinaryBuilder)
	hdrs := b.Field(5).(*array.ListBuilder)
	hdr := hdrs.ValueBuilder().(*array.StructBuilder)
	hkey := hdr.FieldBuilder(0).(*array.StringBuilder)
	hval := hdr.FieldBuilder(1).(*array.BinaryBuilder)
	unit := asc.Field(2).Type.(*arrow.TimestampType).Unit
	for _, r := range recs {
		part.Append(r.Partition)
		off.Append(r.Offset)
		switch unit {
		case arrow.Microsecond:
			ts.Append(arrow.Timestamp(r.Timestamp * 1000))
		case arrow.Nanosecond:
			ts.Append(arrow.Timestamp(r.Timestamp * 1_000_000))
		default:
			return nil, fmt.Errorf("table: timestamp column unit %v", unit)
		}
		appendBinary(key, r.Key)
		appendBinary(val, r.Value)
		hdrs.Append(true)
		for _, h := range r.Headers {
			hdr.Append(true)
			hkey.Append(h.Key)
			appendBinary(hval, h.Value)
		}
		if jc != nil {
			jc.appendRecord(r.Value)
		}
	}
	return b.NewRecordBatch(), nil
}

func appendBinary(b *array.BinaryBuilder, v []byte) {
	if v == nil {
		b.AppendNull()
		return
	}
	b.Append(v)
}
