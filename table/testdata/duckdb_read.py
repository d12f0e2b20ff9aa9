"""Reads a floe table with DuckDB's iceberg extension and prints its rows as JSON lines.

Usage: duckdb_read.py METADATA_LOCATION [PROPERTY=VALUE ...]
       duckdb_read.py --rest CATALOG_URI NAMESPACE.TABLE [PROPERTY=VALUE ...]

The first form scans the table's metadata file (iceberg_scan); the second
attaches the REST catalog (floe's /iceberg) and lists its tables first, as
pyiceberg_read.py does.

The properties are PyIceberg-style S3 properties (s3.endpoint,
s3.access-key-id, s3.secret-access-key, s3.region), turned into a DuckDB S3
secret. The extensions come from the duckdb-ext-iceberg, duckdb-ext-avro and
duckdb-ext-httpfs packages (PyPI), loaded by path: DuckDB's own INSTALL
downloads from a host this machine cannot reach. Rows are printed as
pyiceberg_read.py prints them, without the summary line.
readers_test.go's TestReadersNobodyHereWrote and TestRESTCatalogReaders run it.
"""

import base64
import glob
import json
import os
import sys
from urllib.parse import urlparse

import duckdb
import duckdb_ext


# The fixed columns; any other (typed value columns, _error) is printed in
# "typed", each value JSON-encoded (str() for what JSON lacks).
FIXED = ("partition", "offset", "timestamp", "key", "value", "headers")


def b64(v):
    return None if v is None else base64.b64encode(bytes(v)).decode()


def main():
    rest = sys.argv[1] == "--rest"
    if rest:
        uri, ident = sys.argv[2], sys.argv[3]
        props = dict(a.split("=", 1) for a in sys.argv[4:])
    else:
        loc = sys.argv[1]
        props = dict(a.split("=", 1) for a in sys.argv[2:])
    con = duckdb.connect()
    root = os.path.join(list(duckdb_ext.__path__)[0], "extensions", "v" + duckdb.__version__)
    for ext in ("avro", "httpfs", "iceberg"):
        paths = glob.glob(os.path.join(root, "*", ext + ".duckdb_extension"))
        if not paths:
            sys.exit("no %s extension under %s" % (ext, root))
        con.execute("LOAD '%s'" % paths[0])
    if "s3.endpoint" in props:
        ep = urlparse(props["s3.endpoint"])
        con.execute(
            "CREATE SECRET floe (TYPE s3, KEY_ID ?, SECRET ?, REGION ?, ENDPOINT ?, URL_STYLE 'path', USE_SSL ?)",
            [props["s3.access-key-id"], props["s3.secret-access-key"], props.get("s3.region", "us-east-1"),
             ep.netloc, ep.scheme == "https"],
        )
    cols = 'epoch_ms("timestamp") AS __floe_ms, * EXCLUDE ("timestamp")'
    if rest:
        con.execute("ATTACH 'floe' AS floe_cat (TYPE iceberg, ENDPOINT ?, AUTHORIZATION_TYPE 'none')", [uri])
        tables = con.execute(
            "SELECT schema_name, table_name FROM duckdb_tables() WHERE database_name = 'floe_cat' ORDER BY 1, 2"
        ).fetchall()
        print(json.dumps({
            "namespaces": sorted({s for s, _ in tables}),
            "tables": ["%s.%s" % t for t in tables],
        }))
        ns, name = ident.rsplit(".", 1)
        cur = con.execute('SELECT %s FROM floe_cat."%s"."%s"' % (cols, ns, name))
    else:
        cur = con.execute("SELECT %s FROM iceberg_scan(?)" % cols, [loc])
    names = [d[0] for d in cur.description]
    for values in cur.fetchall():
        row = dict(zip(names, values))
        print(json.dumps({
            "typed": {n: json.dumps(x, default=str, sort_keys=True)
                      for n, x in row.items() if n not in FIXED and n != "__floe_ms"},
            "partition": row["partition"],
            "offset": row["offset"],
            "timestamp": row["__floe_ms"],
            "key": b64(row["key"]),
            "value": b64(row["value"]),
            "headers": [[h["key"], b64(h["value"])] for h in row["headers"]],
        }))


if __name__ == "__main__":
    main()
