//go:build !notables

package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	itable "github.com/apache/iceberg-go/table"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/record"
	"github.com/floe-io/floe/table"
	"github.com/floe-io/floe/table/catalog"
	"github.com/floe-io/floe/tiered"
	"github.com/floe-io/floe/tlsconfig"
)

// tableRunner runs table jobs with package table (the Iceberg writer,
// +38 MB of the binary; the notables build tag leaves it out, and the
// broker then claims no table job). Tables go under <prefix>/tables of
// the node's store (or Config.TableLocation), as <namespace>.<topic>,
// and their pointers into the coordinator's catalog, or into an external
// REST catalog (Config.TableCatalog).
func (n *Node) tableRunner() (tiered.TableJobRunner, error) {
	opts := table.Options{
		Catalog: n.client.TableCatalog(),
		Store:   n.tables.store,
		Root:    n.tables.root,
		Prefix:  n.tables.prefix,
		Meter:   n.metrics.Meter("floe/table"),
	}
	if c := n.cfg.TableCatalog; c.External() {
		ropts := table.RESTCatalogOptions{URL: c.URL, Warehouse: c.Warehouse, Token: c.Token, Credential: c.Credential, Scope: c.Scope}
		if !c.TLS.IsZero() {
			var err error
			if ropts.TLS, err = tlsconfig.Client(c.TLS); err != nil {
				return nil, fmt.Errorf("table catalog TLS: %w", err)
			}
		}
		ext, err := table.NewRESTCatalog(ropts)
		if err != nil {
			return nil, fmt.Errorf("table catalog: %w", err)
		}
		opts.External = ext // the coordinator's catalog: only read, for tables to register there
	}
	tb, err := table.New(opts)
	if err != nil {
		return nil, fmt.Errorf("table writer: %w", err)
	}
	skipped, err := n.metrics.Meter("floe/table").Int64Counter("floe.table.records.skipped", metric.WithUnit("{record}"),
		metric.WithDescription("Records table jobs did not write, by reason: aborted (an aborted transaction's), deleted (offsets DeleteRecords removed before a job took them)."))
	if err != nil {
		return nil, fmt.Errorf("table metrics: %w", err)
	}
	return &tableJobs{tb: tb, namespace: n.tableNamespace(), log: n.log, skipped: skipped}, nil
}

type tableJobs struct {
	tb        *table.Tables
	namespace string
	log       *slog.Logger
	skipped   metric.Int64Counter
}

var (
	skippedAborted = metric.WithAttributes(attribute.String("reason", "aborted"))
	skippedDeleted = metric.WithAttributes(attribute.String("reason", "deleted"))
)

// moveAside renames id's table to <name>__<topic id> when it belongs to
// another topic id than topicID (a topic deleted and created again under
// its name): its covered offsets are the old topic's and would make the
// new one's records look covered. Its files stay where they are (their
// location has the old topic id in it).
func (j *tableJobs) moveAside(ctx context.Context, id table.Ident, topicID string) error {
	tbl, err := j.tb.Load(ctx, id)
	if errors.Is(err, catalog.ErrNoSuchTable) {
		return nil
	} else if err != nil {
		return fmt.Errorf("load table %s: %w", id, err)
	}
	old := tbl.Properties()[table.PropTopicID]
	if old == "" || old == topicID {
		return nil
	}
	aside := table.Ident{Namespace: id.Namespace, Name: id.Name + "__" + old}
	if err := j.tb.Rename(ctx, id, aside); err != nil {
		return fmt.Errorf("move table aside: %w", err)
	}
	j.log.Info("table of a deleted topic moved aside", "table", id.String(), "to", aside.String(), "old_topic_id", old, "topic_id", topicID)
	return nil
}

// RunTableJob implements tiered.TableJobRunner: it creates the table on
// its first job, adds the value schema's new properties as columns, reads
// and decodes each range's segments (read_committed: no markers, no
// aborted records), and commits the ranges as one snapshot.
func (j *tableJobs) RunTableJob(ctx context.Context, job coordapi.TierJob, read tiered.SegmentBatches) (coordapi.TableResult, error) {
	tj := job.Table
	id := table.Ident{Namespace: []string{j.namespace}, Name: tj.TopicName}
	start := time.Now()
	if err := j.moveAside(ctx, id, job.TopicID.String()); err != nil {
		return coordapi.TableResult{}, err
	}
	if _, err := j.tb.Create(ctx, id, table.Spec{Partitioning: tj.Partitioning, ValueSchema: tj.ValueSchema, TopicID: job.TopicID.String(),
		Compacted: tj.Compacted}); err != nil {
		return coordapi.TableResult{}, fmt.Errorf("create table %s: %w", id, err)
	}
	// A cleanup.policy changed since the table was created (or an
	// earlier build's job) converts it (table/compacted.go).
	if changed, err := j.tb.SetCompacted(ctx, id, tj.Compacted); err != nil {
		return coordapi.TableResult{}, fmt.Errorf("table %s: %w", id, err)
	} else if changed {
		j.log.Info("table follows the topic's cleanup.policy", "table", id.String(), "latest_per_key", tj.Compacted)
	}
	if tj.ValueSchema != "" {
		if _, err := j.tb.EvolveValueSchema(ctx, id, tj.ValueSchema); err != nil {
			return coordapi.TableResult{}, fmt.Errorf("evolve table %s: %w", id, err)
		}
	}
	covered, err := j.tb.Covered(ctx, id)
	if err != nil {
		return coordapi.TableResult{}, fmt.Errorf("covered offsets of %s: %w", id, err)
	}
	setup := time.Since(start)
	var ranges []table.Range
	var readBytes int64
	for _, r := range tj.Ranges {
		tr := table.Range{Partition: r.Partition, From: r.From, To: r.To}
		from := r.From
		if c, ok := covered[r.Partition]; ok {
			from = max(from, c)
			if c < r.From {
				// The log start moved past what the table covers
				// (DeleteRecords, which the table hold does not stop):
				// those records are gone, and the range covers them
				// without rows rather than failing every job with a
				// gap.
				j.log.Warn("table job: records deleted before the table took them", "table", id.String(),
					"partition", r.Partition, "from", c, "to", r.From)
				tr.From = c
				j.skipped.Add(ctx, r.From-c, skippedDeleted)
			}
		}
		for _, seg := range r.Segments {
			if from >= r.To || seg.LastOffset < from {
				continue // covered already: not read again
			}
			readBytes += int64(seg.ByteLength)
			err := read(ctx, seg, func(b []byte) error {
				h, err := record.ParseHeader(b)
				if err != nil || h.BaseOffset+int64(h.LastOffsetDelta) < from || h.BaseOffset >= r.To {
					return err // a batch wholly outside [from, To): skipped
				}
				n := len(tr.Records)
				var dropped int
				if tr.Records, dropped, err = table.Decode(tr.Records, r.Partition, b, r.Aborted); err != nil {
					return err
				}
				if dropped > 0 {
					j.skipped.Add(ctx, int64(dropped), skippedAborted)
				}
				// Keep [r.From, r.To) only: the segments may hold more.
				kept := tr.Records[:n]
				for _, rec := range tr.Records[n:] {
					if rec.Offset >= r.From && rec.Offset < r.To {
						kept = append(kept, rec)
					}
				}
				tr.Records = kept
				return nil
			})
			if err != nil {
				return coordapi.TableResult{}, fmt.Errorf("read %s/%d segment %s: %w", tj.TopicName, r.Partition, seg.ObjectKey, err)
			}
		}
		ranges = append(ranges, tr)
	}
	decoded := time.Since(start) - setup
	res, err := j.tb.Commit(ctx, id, ranges...)
	if err != nil {
		return coordapi.TableResult{}, err
	}
	// Where a job's time goes (docs/benchmarks/2026-12-07-iceberg-tables.md).
	j.log.Info("table job phases", "table", id.String(), "job", job.ID, "ranges", len(tj.Ranges), "segment_bytes", readBytes,
		"rows", res.Rows, "attempts", res.Attempts, "setup", setup, "read_decode", decoded, "write", res.Write, "swap", res.Swap,
		"total", time.Since(start))
	out := coordapi.TableResult{SnapshotID: res.SnapshotID, Rows: int64(res.Rows)}
	for _, r := range tj.Ranges {
		out.Covered = append(out.Covered, coordapi.TableCovered{Partition: r.Partition, Next: max(r.To, covered[r.Partition])})
	}
	return out, nil
}

// MaintainTable implements tiered.TableJobRunner: on the table of the
// job's topic id (a table still of an older topic id is the next table
// job's to move aside, and not touched), it removes the rows older than
// table.retention.ms by the coordinator's clock, expires the snapshots
// older than the table's history.expire.max-snapshot-age-ms (Iceberg's
// default, 5 days) but the history.expire.min-snapshots-to-keep newest
// (1), and deletes the orphan files older than the job's grace. A topic
// whose table does not exist yet has nothing to maintain.
func (j *tableJobs) MaintainTable(ctx context.Context, job coordapi.TierJob) (coordapi.TableResult, error) {
	mj := job.Maintain
	id := table.Ident{Namespace: []string{j.namespace}, Name: mj.TopicName}
	tbl, err := j.tb.Load(ctx, id)
	if errors.Is(err, catalog.ErrNoSuchTable) {
		return coordapi.TableResult{}, nil
	} else if err != nil {
		return coordapi.TableResult{}, fmt.Errorf("load table %s: %w", id, err)
	}
	props := tbl.Properties()
	if owner := props[table.PropTopicID]; owner != "" && owner != job.TopicID.String() {
		return coordapi.TableResult{}, nil
	}
	var out coordapi.TableResult
	if mj.RetentionMs >= 0 {
		res, err := j.tb.ApplyRetention(ctx, id, time.UnixMilli(mj.NowMs-mj.RetentionMs))
		if err != nil {
			return coordapi.TableResult{}, err
		}
		out.SnapshotID, out.Rows = res.SnapshotID, res.Rows
		if res.Files > 0 {
			j.log.Info("table retention", "table", id.String(), "files", res.Files, "rows", res.Rows,
				"older_than", res.Cutoff.UTC(), "snapshot", res.SnapshotID)
		}
	}
	maxAge := propInt(props, itable.MaxSnapshotAgeMsKey, itable.MaxSnapshotAgeMsDefault)
	keep := propInt(props, itable.MinSnapshotsToKeepKey, itable.MinSnapshotsToKeepDefault)
	expired, err := j.tb.ExpireSnapshots(ctx, id, time.Duration(maxAge)*time.Millisecond, int(keep))
	if err != nil {
		return out, err
	}
	orphans, err := j.tb.CollectOrphans(ctx, id, time.Duration(mj.OrphanGraceMs)*time.Millisecond)
	if err != nil {
		return out, err
	}
	j.log.Info("table maintained", "table", id.String(), "rows_removed", out.Rows, "snapshots_expired", expired, "orphans_deleted", len(orphans))
	return out, nil
}

// propInt reads an integer table property, def when unset or not one.
func propInt[T int | int64](props map[string]string, key string, def T) int64 {
	if v, err := strconv.ParseInt(props[key], 10, 64); err == nil && v >= 0 {
		return v
	}
	return int64(def)
}
