package table_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/floe-io/floe/internal/testkit/miniotest"
	"github.com/floe-io/floe/objectstore"
	"github.com/floe-io/floe/table"
)

// reader is an Iceberg reader nobody here wrote, run as a Python script
// that prints the table's rows as JSON lines (testdata/*_read.py).
type reader struct {
	name    string
	env     string // names the interpreter that has the reader
	imports string // what the interpreter must import
	script  string
	install string
	summary bool // the script prints the snapshot summary first
}

var readers = []reader{
	{name: "pyiceberg", env: "FLOE_PYTHON", imports: "pyiceberg, pyarrow", script: "testdata/pyiceberg_read.py",
		install: "python3 -m venv /tmp/pyice && /tmp/pyice/bin/pip install 'pyiceberg[pyarrow]'", summary: true},
	{name: "duckdb", env: "FLOE_DUCKDB_PYTHON", imports: "duckdb, duckdb_ext", script: "testdata/duckdb_read.py",
		install: "python3 -m venv /tmp/duckice && /tmp/duckice/bin/pip install duckdb==1.4.4 duckdb-ext-iceberg==1.4.4.20260205 duckdb-ext-avro==1.4.4.20260205 duckdb-ext-httpfs==1.4.4.20260205"},
}

// python returns the interpreter for rd: $<rd.env>, else python3. Without
// one that imports the reader the test is skipped, saying how to get one.
func (rd reader) python(t *testing.T) string {
	t.Helper()
	py := os.Getenv(rd.env)
	if py == "" {
		py = "python3"
	}
	if out, err := exec.Command(py, "-c", "import "+rd.imports).CombinedOutput(); err != nil {
		t.Skipf("no %s for %s (%v: %s); install it with `%s` and set %s to that venv's python",
			rd.name, py, err, bytes.TrimSpace(out), rd.install, rd.env)
	}
	return py
}

type pyRow struct {
	Summary   map[string]string `json:"summary"`
	Partition int32             `json:"partition"`
	Offset    int64             `json:"offset"`
	Timestamp int64             `json:"timestamp"`
	Key       *string           `json:"key"`
	Value     *string           `json:"value"`
	Headers   [][2]*string      `json:"headers"`
}

func unb64(t *testing.T, s *string) []byte {
	t.Helper()
	if s == nil {
		return nil
	}
	b, err := base64.StdEncoding.DecodeString(*s)
	if err != nil {
		t.Fatal(err)
	}
	if b == nil {
		b = []byte{}
	}
	return b
}

// TestReadersNobodyHereWrote writes a table and reads it with PyIceberg
// and with DuckDB's iceberg extension, from its metadata file (no catalog
// yet): every row once, values byte-equal, and (PyIceberg) the covered
// offsets in the snapshot summary.
func TestReadersNobodyHereWrote(t *testing.T) {
	for _, tc := range []struct {
		name string
		open func(t *testing.T) (objectstore.Store, string, []string)
	}{
		{name: "dir", open: func(t *testing.T) (objectstore.Store, string, []string) {
			d, err := objectstore.NewDir(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			return d, "file://" + d.Root(), nil
		}},
		{name: "minio", open: func(t *testing.T) (objectstore.Store, string, []string) {
			srv := miniotest.Start(t)
			return srv.Store(t), "s3://" + srv.Bucket, []string{
				"s3.endpoint=" + srv.Endpoint, "s3.access-key-id=" + srv.AccessKey,
				"s3.secret-access-key=" + srv.SecretKey, "s3.region=" + srv.Region,
				"s3.force-virtual-addressing=false",
			}
		}},
	} {
		for _, rd := range readers {
			t.Run(rd.name+"/"+tc.name, func(t *testing.T) {
				py := rd.python(t)
				ctx := context.Background()
				store, root, props := tc.open(t)
				tb := newTables(t, store, root, &table.MemCatalog{})
				if _, err := tb.Create(ctx, topic, table.Spec{}); err != nil {
					t.Fatal(err)
				}
				want := append(records(0, 0, 40, 1), records(2, 7, 30, 3)...)
				for _, r := range []table.Range{
					{Partition: 0, From: 0, To: 40, Records: records(0, 0, 40, 1)},
					{Partition: 2, From: 7, To: 31, Records: records(2, 7, 30, 3)},
				} {
					if _, err := tb.Commit(ctx, topic, r); err != nil {
						t.Fatal(err)
					}
				}
				tbl, err := tb.Load(ctx, topic)
				if err != nil {
					t.Fatal(err)
				}
				cmd := exec.Command(py, append([]string{rd.script, tbl.MetadataLocation()}, props...)...)
				var stderr bytes.Buffer
				cmd.Stderr = &stderr
				out, err := cmd.Output()
				if err != nil {
					t.Fatalf("%s: %v\n%s", rd.name, err, stderr.String())
				}
				sc := bufio.NewScanner(bytes.NewReader(out))
				sc.Buffer(nil, 1<<20)
				var got []table.Record
				var summary map[string]string
				for sc.Scan() {
					var r pyRow
					if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
						t.Fatalf("%v: %s", err, sc.Text())
					}
					if r.Summary != nil {
						summary = r.Summary
						continue
					}
					rec := table.Record{Partition: r.Partition, Offset: r.Offset, Timestamp: r.Timestamp,
						Key: unb64(t, r.Key), Value: unb64(t, r.Value)}
					for _, h := range r.Headers {
						rec.Headers = append(rec.Headers, table.Header{Key: *h[0], Value: unb64(t, h[1])})
					}
					got = append(got, rec)
				}
				slices.SortFunc(got, func(a, b table.Record) int {
					if a.Partition != b.Partition {
						return int(a.Partition - b.Partition)
					}
					return int(a.Offset - b.Offset)
				})
				equalRecords(t, got, want)
				if rd.summary && (summary[table.SummaryNextOffsetPrefix+"0"] != "40" || summary[table.SummaryNextOffsetPrefix+"2"] != "31" ||
					summary[table.SummaryVersion] != table.SummaryFormatVersion) {
					t.Fatalf("summary as %s sees it: %v", rd.name, summary)
				}
				if !strings.HasPrefix(tbl.MetadataLocation(), root+"/tables/floe/orders/metadata/") {
					t.Fatalf("metadata at %s", tbl.MetadataLocation())
				}
			})
		}
	}
}
