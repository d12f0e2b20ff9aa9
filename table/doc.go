// Package table turns a topic's records into an Apache Iceberg table
// (issue 41, docs/design/iceberg-tables.md): Parquet data files written
// with iceberg-go's writer (Arrow's Parquet), snapshots committed by a
// compare-and-swap of the table's metadata pointer in a Catalog, and the
// offsets each snapshot covers kept in its summary, so that a retried or
// duplicated job never adds a row twice.
//
//	a job's ranges, [From, To) of each partition ──▶ Tables.Commit
//	    load current metadata (Catalog.Load → metadata JSON)
//	    skip ranges the summary covers; drop records below each offset
//	    write Parquet data file(s) ──▶ manifest, manifest list (iceberg-go)
//	    write metadata v(n+1) ──▶ Catalog.Swap(v(n) → v(n+1)), or lose and retry
//
// Decode turns a range's Kafka batches into Records with the
// read_committed rule (markers and aborted transactions give no row).
// The package writes through FileIO, iceberg-go's file IO over a floe
// objectstore.Store (S3, a directory, memory), so the broker's own S3
// client, credentials and TLS are the only way to the bucket.
//
// # Table layout
//
// A table lives under <Root>/<Prefix>/<namespace...>/<name>-<topic id>
// (Tables.Location; Prefix defaults to "tables"), in Iceberg's standard
// layout, written only by iceberg-go and this package:
//
//	<location>/metadata/00000-<uuid>.metadata.json   table metadata, one file per commit (format v2)
//	<location>/metadata/snap-<id>-<n>-<uuid>.avro     manifest lists (iceberg-go)
//	<location>/metadata/<uuid>-m<n>.avro              manifests (iceberg-go)
//	<location>/data/<partition path>/<n>-<task>-<write uuid>-<n>.parquet   data files (iceberg-go, zstd)
//
// Nothing under a location is ever rewritten; the Catalog's pointer to the
// current metadata file is the table's only mutable state.
//
// # Columns (table format version 1, property floe.table-version = 1)
//
// Every table has these columns. Iceberg reads columns by field id, so the
// ids are part of the format and never change.
//
//	id  name       type                                       null
//	--  ---------  -----------------------------------------  ----------------
//	 1  partition  int                                        never
//	 2  offset     long                                       never
//	 3  timestamp  timestamptz (µs; Kafka's ms × 1000)        never
//	 4  key        binary                                     null key
//	 5  value      binary                                     null value (tombstone)
//	 6  headers    list<7: struct<8: key string,              never (empty list)
//	                              9: value binary>>           value: null value
//
// Headers are a list, not a map: Kafka headers are ordered and may repeat
// a key. The default Iceberg partitioning is day(timestamp)
// (ParsePartitioning; table.partitioning).
//
// A table with a value schema (table.value.schema=json, Spec.ValueSchema;
// the JSON Schema is kept in the table property
// floe.value-schema.definition) also has, after these:
//
//	id     name      type                                 null
//	-----  --------  -----------------------------------  ------------------------------
//	10     _error    string                               the value gave typed columns
//	1000+  <prop>    from the property's JSON type        absent, null, or _error set
//	       (ValueColumns: string, long, double, boolean, timestamptz, date, struct, list)
//
// one column per top-level property, in name order at creation, a name
// that clashes with a fixed column prefixed "value_". A value that is not
// a JSON object of those types (or lacks a required property) keeps its
// raw columns, nulls in the typed ones, and the reason in _error: no
// record is dropped. EvolveValueSchema adds the new top-level properties
// of a changed schema as columns (ids Iceberg assigns after the last);
// columns are never removed or retyped.
//
// # Snapshot summary (summary version 1)
//
// Every snapshot floe commits carries, besides Iceberg's own summary
// fields:
//
//	floe.summary-version       "1"
//	floe.next-offset.<p>       decimal offset, one per partition with a commit
//
// floe.next-offset.<p> = N says: every committed record of partition p
// below N is in the table as of this snapshot, once, and none at or
// above N. Each snapshot repeats every partition's value (the parent's,
// with the committed partition's moved), so the current snapshot alone
// answers "what is covered", even after older snapshots expire. Commit of
// [From, To) for p therefore: skips when To ≤ N (a retry, or a duplicate
// job); drops the records below N when From < N < To; fails with
// ErrOffsetGap when From > N (records in between would be lost); and
// accepts any From for a partition with no value yet (a table starts at
// the log start, or where table.enabled was turned on). A range with no
// records (markers, aborted records) still commits a snapshot with no
// data files, moving N.
//
// A reader that does not know floe sees an ordinary append-only table;
// the properties are visible to it (PyIceberg's snapshot summary, Spark's
// snapshots metadata table).
//
// # Compacted topics (table property floe.compacted = "true")
//
// The table of a topic whose cleanup.policy includes compact
// (Spec.Compacted) has the same columns but holds one row per
// (partition, key): the latest record of the key, and none once its
// latest record is a tombstone (at once, not after delete.retention.ms).
// Each commit is an Iceberg "overwrite" snapshot instead of an "append":
// of the job's records only each key's latest is written, and the data
// files that hold a key it changed (candidates by partition values and
// the key column's bounds, then read) are replaced by their other rows
// (copy-on-write; no delete files, which not every reader applies). A
// commit with no such file is an "append". The summary and its exactly-once rule are as above:
// the covered offsets say which records the table has taken, not which
// are rows. The property is set at creation and never changes; a build
// that predates it would append every record, so a compacted table must
// only be written by builds that know it.
//
// # Commit and failures
//
// Catalog.Swap is the commit point. Before it, the attempt's data files,
// manifests and metadata file are written but unreferenced: a lost race
// (ErrConflict, iceberg-go's ErrCommitFailed) deletes them and tries again
// on the new current snapshot (at most Options.CommitAttempts times),
// except an append's data files when the new snapshot leaves it the same
// rows to add (another job's commit of other partitions): those are added
// again, so that a lost race re-does only the metadata; a
// crash leaves them as orphans, which orphan collection deletes once
// older than a grace period (no snapshot references them). A Swap whose
// outcome is unknown (the coordinator died mid-call) deletes nothing: the
// next attempt reloads and skips if the range is covered.
//
// # Catalog
//
// Catalog (package catalog) is the pointer store: Load, Swap
// (compare-and-swap), List, Namespaces. Package coordinator/tables
// implements it in the coordinator's replicated state (its doc draws the
// key family); catalog.MemCatalog is the in-process implementation for
// tests. Both pass catalog/catalogtest's contract.
//
// # REST catalog
//
// catalog.NewRESTHandler serves the pointers to engines as the read-only subset of
// the Iceberg REST catalog API they need (config, namespaces, list and load
// tables) under RESTPrefix, /iceberg/v1/..., for the broker's HTTP
// listener: PyIceberg's RestCatalog and DuckDB (tested), Spark and Trino connect to
// http://<broker>/iceberg. A load passes the metadata file's JSON through
// unparsed; writes are refused (only floe's jobs commit). Package catalog
// imports no Iceberg or Arrow library: a broker can serve the catalog
// without linking this package.
package table
