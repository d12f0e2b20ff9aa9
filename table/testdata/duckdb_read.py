"""Reads a floe table with DuckDB's iceberg extension and prints its rows as JSON lines.

Usage: duckdb_read.py METADATA_LOCATION [PROPERTY=VALUE ...]

The properties are PyIceberg-style S3 properties (s3.endpoint,
s3.access-key-id, s3.secret-access-key, s3.region), turned into a DuckDB S3
secret. The extensions come from the duckdb-ext-iceberg, duckdb-ext-avro and
duckdb-ext-httpfs packages (PyPI), loaded by path: DuckDB's own INSTALL
downloads from a host this machine cannot reach. Rows are printed as
pyiceberg_read.py prints them, without the summary line.
table_test.go's TestReadersNobodyHereWrote runs it.
"""

import base64
import glob
import json
import os
import sys
from urllib.parse import urlparse

import duckdb
import duckdb_ext


def b64(v):
    return None if v is None else base64.b64encode(bytes(v)).decode()


def main():
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
    rows = con.execute(
        'SELECT "partition", "offset", epoch_ms("timestamp"), "key", "value", "headers" FROM iceberg_scan(?)', [loc]
    ).fetchall()
    for p, o, ts, k, v, hs in rows:
        print(json.dumps({
            "partition": p,
            "offset": o,
            "timestamp": ts,
            "key": b64(k),
            "value": b64(v),
            "headers": [[h["key"], b64(h["value"])] for h in hs],
        }))


if __name__ == "__main__":
    main()
