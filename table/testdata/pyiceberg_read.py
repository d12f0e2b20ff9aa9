"""Reads a floe table with PyIceberg and prints its rows as JSON lines.

Usage: pyiceberg_read.py METADATA_LOCATION [PROPERTY=VALUE ...]
       pyiceberg_read.py --rest CATALOG_URI NAMESPACE.TABLE [PROPERTY=VALUE ...]

The first form opens the table from its metadata file (StaticTable); the
second through a REST catalog (floe's /iceberg), after printing what the
catalog lists as a {"namespaces": [...], "tables": [...]} line.

The properties are PyIceberg FileIO properties (s3.endpoint, s3.access-key-id,
...), and with --rest catalog properties: auth, as JSON, for floe's HTTP Basic
(node/iceberg_test.go). Each row is printed as one JSON object: partition, offset, timestamp
(ms), key and value (base64, null for null), headers ([key, base64 value or
null] pairs). The table's current snapshot summary comes first, as a
{"summary": {...}} line. readers_test.go's TestReadersNobodyHereWrote and
TestRESTCatalogReaders run it.
"""

import base64
import json
import sys

import pyarrow as pa
from pyiceberg.catalog import load_catalog
from pyiceberg.table import StaticTable


# The fixed columns; any other (typed value columns, _error) is printed in
# "typed", each value JSON-encoded (str() for what JSON lacks).
FIXED = ("partition", "offset", "timestamp", "key", "value", "headers")


def b64(v):
    return None if v is None else base64.b64encode(v).decode()


def main():
    if sys.argv[1] == "--rest":
        uri, ident = sys.argv[2], sys.argv[3]
        props = dict(a.split("=", 1) for a in sys.argv[4:])
        if "auth" in props:
            # PyIceberg's auth manager config is a mapping, given as JSON:
            # auth={"type": "basic", "basic": {"username": ..., "password": ...}}
            props["auth"] = json.loads(props["auth"])
        cat = load_catalog("floe", type="rest", uri=uri, **props)
        ns = ident.rsplit(".", 1)[0]
        print(json.dumps({
            "namespaces": [".".join(n) for n in cat.list_namespaces()],
            "tables": [".".join(t) for t in cat.list_tables(ns)],
        }))
        tbl = cat.load_table(ident)
    else:
        props = dict(a.split("=", 1) for a in sys.argv[2:])
        tbl = StaticTable.from_metadata(sys.argv[1], properties=props)
    snap = tbl.current_snapshot()
    print(json.dumps({"summary": dict(snap.summary.additional_properties) if snap else {}}))
    at = tbl.scan().to_arrow()
    ts = at.column("timestamp").cast(pa.int64()).to_pylist()
    for i, row in enumerate(at.drop_columns(["timestamp"]).to_pylist()):
        typed = {k: v for k, v in row.items() if k not in FIXED}
        print(json.dumps({
            "typed": {k: json.dumps(v, default=str, sort_keys=True) for k, v in typed.items()},
            "partition": row["partition"],
            "offset": row["offset"],
            "timestamp": ts[i] // 1000,
            "key": b64(row["key"]),
            "value": b64(row["value"]),
            "headers": [[h["key"], b64(h["value"])] for h in row["headers"]],
        }))


if __name__ == "__main__":
    main()
