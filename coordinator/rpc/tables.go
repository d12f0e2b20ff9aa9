package rpc

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/coordinator"
	"github.com/floe-io/floe/table/catalog"
)

// The table catalog ops (docs/design/iceberg-tables.md): brokers load,
// swap and list the Iceberg tables' metadata pointers, which shard 0
// keeps. An identifier is n (uvarint), n × level (str), name (str).
//
//	table_load        request: ident               reply: outcome(1), location str, message str
//	table_swap        request: ident, prev, next   reply: outcome(1), message str
//	table_list        request: n × level str       reply: n × ident
//	table_namespaces  request: empty               reply: n, n × (m, m × level str)
//
// outcome is 0 (done), 1 (no such table) or 2 (conflict: the pointer was
// not prev); the message is the coordinator's text of the last two,
// which the client wraps around catalog.ErrNoSuchTable or
// catalog.ErrConflict. Any other failure is an error reply.

// Table op outcomes.
const (
	tableOK         = 0
	tableNoSuch     = 1
	tableConflict   = 2
	maxTableOutcome = tableConflict
)

func encIdent(e *encoder, id catalog.Ident) {
	encStrings(e, id.Namespace)
	e.str(id.Name)
}

func decIdent(d *decoder) catalog.Ident {
	return catalog.Ident{Namespace: decStrings(d), Name: d.str()}
}

type tableSwapReq struct {
	ID         catalog.Ident
	Prev, Next string
}

func encTableSwapReq(e *encoder, r tableSwapReq) {
	encIdent(e, r.ID)
	e.str(r.Prev)
	e.str(r.Next)
}

func decTableSwapReq(d *decoder) tableSwapReq {
	return tableSwapReq{ID: decIdent(d), Prev: d.str(), Next: d.str()}
}

// tableResp is the reply of table_load (Location) and table_swap.
type tableResp struct {
	Outcome  byte
	Location string
	Message  string
}

func encTableResp(e *encoder, r tableResp) {
	e.byte(r.Outcome)
	e.str(r.Location)
	e.str(r.Message)
}

func decTableResp(d *decoder) tableResp {
	r := tableResp{Outcome: d.byte(), Location: d.str(), Message: d.str()}
	if r.Outcome > maxTableOutcome {
		d.fail("table outcome %d", r.Outcome)
	}
	return r
}

func encIdents(e *encoder, ids []catalog.Ident) {
	e.uvarint(uint64(len(ids)))
	for _, id := range ids {
		encIdent(e, id)
	}
}

func decIdents(d *decoder) []catalog.Ident {
	n := d.count(2)
	if n == 0 {
		return nil
	}
	out := make([]catalog.Ident, n)
	for i := range out {
		out[i] = decIdent(d)
	}
	return out
}

func encNamespaces(e *encoder, nss [][]string) {
	e.uvarint(uint64(len(nss)))
	for _, ns := range nss {
		encStrings(e, ns)
	}
}

func decNamespaces(d *decoder) [][]string {
	n := d.count(1)
	if n == 0 {
		return nil
	}
	out := make([][]string, n)
	for i := range out {
		out[i] = decStrings(d)
	}
	return out
}

// tableOutcome turns the catalog's two expected failures into an outcome
// and passes any other error on; an invalid identifier is the caller's
// INVALID_REQUEST.
func tableOutcome(err error) (tableResp, error) {
	switch {
	case err == nil:
		return tableResp{}, nil
	case errors.Is(err, catalog.ErrNoSuchTable):
		return tableResp{Outcome: tableNoSuch, Message: err.Error()}, nil
	case errors.Is(err, catalog.ErrConflict):
		return tableResp{Outcome: tableConflict, Message: err.Error()}, nil
	}
	return tableResp{}, err
}

func invalidIdent(id catalog.Ident) error {
	if err := id.Validate(); err != nil {
		return &coordapi.KafkaError{Code: kerr.InvalidRequest, Message: err.Error()}
	}
	return nil
}

func tableLoad(c *coordinator.Coordinator, ctx context.Context, id catalog.Ident) (tableResp, error) {
	if err := invalidIdent(id); err != nil {
		return tableResp{}, err
	}
	loc, err := c.TableLoad(ctx, id)
	r, err := tableOutcome(err)
	r.Location = loc
	return r, err
}

func tableSwap(c *coordinator.Coordinator, ctx context.Context, r tableSwapReq) (tableResp, error) {
	if err := invalidIdent(r.ID); err != nil {
		return tableResp{}, err
	}
	return tableOutcome(c.TableSwap(ctx, r.ID, r.Prev, r.Next))
}

func tableList(c *coordinator.Coordinator, ctx context.Context, ns []string) ([]catalog.Ident, error) {
	return c.TableList(ctx, ns)
}

func tableNamespaces(c *coordinator.Coordinator, ctx context.Context, _ empty) ([][]string, error) {
	return c.TableNamespaces(ctx)
}

// TableCatalog returns the coordinator's Iceberg catalog as a
// catalog.Catalog over this client: every call is a request to the
// coordinator of the client's cluster (shard 0, which keeps the tables'
// pointers). A request that gets no answer fails with ErrUnavailable:
// a swap's outcome is then unknown, and the caller reloads.
func (c *Client) TableCatalog() catalog.Catalog { return tableCatalog{c} }

type tableCatalog struct{ c *Client }

// Load implements catalog.Catalog over table_load.
func (t tableCatalog) Load(ctx context.Context, id catalog.Ident) (string, error) {
	r, err := call(t.c, ctx, opTableLoad, func(e *encoder) { encIdent(e, id) }, decTableResp)
	if err != nil {
		return "", err
	}
	return r.Location, r.err(opTableLoad)
}

// Swap implements catalog.Catalog over table_swap.
func (t tableCatalog) Swap(ctx context.Context, id catalog.Ident, prev, next string) error {
	r, err := call(t.c, ctx, opTableSwap, func(e *encoder) { encTableSwapReq(e, tableSwapReq{ID: id, Prev: prev, Next: next}) }, decTableResp)
	if err != nil {
		return err
	}
	return r.err(opTableSwap)
}

// List implements catalog.Catalog over table_list.
func (t tableCatalog) List(ctx context.Context, namespace []string) ([]catalog.Ident, error) {
	return call(t.c, ctx, opTableList, func(e *encoder) { encStrings(e, namespace) }, decIdents)
}

// Namespaces implements catalog.Catalog over table_namespaces.
func (t tableCatalog) Namespaces(ctx context.Context) ([][]string, error) {
	return call(t.c, ctx, opTableNamespaces, func(*encoder) {}, decNamespaces)
}

// err rebuilds the catalog's sentinel of an outcome.
func (r tableResp) err(op string) error {
	switch r.Outcome {
	case tableNoSuch:
		return fmt.Errorf("coordinator %s: %s: %w", op, r.Message, catalog.ErrNoSuchTable)
	case tableConflict:
		return fmt.Errorf("coordinator %s: %s: %w", op, r.Message, catalog.ErrConflict)
	}
	return nil
}

// A table job in a claim_tier_job reply (kind TierJobTable): topic name,
// partitioning, value schema (str each), n ranges, each partition, from,
// to - from (varints), its segments (as find_batches answers them) and
// aborted transactions, then, only when set, compacted (bool; a broker
// of an earlier build ignores it and writes every record, which the
// first job a later build runs converts: table.Tables.ConvertCompacted).
func encTableJob(e *encoder, tj *coordapi.TableJob) {
	if tj == nil {
		tj = &coordapi.TableJob{}
	}
	e.str(tj.TopicName)
	e.str(tj.Partitioning)
	e.str(tj.ValueSchema)
	e.uvarint(uint64(len(tj.Ranges)))
	for _, r := range tj.Ranges {
		e.varint(int64(r.Partition))
		e.varint(r.From)
		e.varint(r.To - r.From)
		encFindBatchesResp(e, coordapi.FindBatchesResponse{Batches: r.Segments})
		encAborted(e, r.Aborted)
	}
	if tj.Compacted {
		e.bool(true)
	}
}

func decTableJob(d *decoder) *coordapi.TableJob {
	tj := &coordapi.TableJob{TopicName: d.str(), Partitioning: d.str(), ValueSchema: d.str()}
	if n := d.count(5); n > 0 {
		tj.Ranges = make([]coordapi.TableRange, n)
		for i := range tj.Ranges {
			r := coordapi.TableRange{Partition: d.int32(), From: d.varint()}
			r.To = r.From + d.varint()
			r.Segments = decFindBatchesResp(d).Batches
			r.Aborted = decAborted(d)
			tj.Ranges[i] = r
		}
	}
	if d.left() > 0 {
		tj.Compacted = d.bool()
	}
	return tj
}

// A table maintenance job in a claim_tier_job reply (kind
// TierJobTableMaintain): topic name (str), now ms, retention ms, orphan
// grace ms (varints). Its report is a TableResult.
func encTableMaintainJob(e *encoder, mj *coordapi.TableMaintainJob) {
	if mj == nil {
		mj = &coordapi.TableMaintainJob{}
	}
	e.str(mj.TopicName)
	e.varint(mj.NowMs)
	e.varint(mj.RetentionMs)
	e.varint(mj.OrphanGraceMs)
}

func decTableMaintainJob(d *decoder) *coordapi.TableMaintainJob {
	return &coordapi.TableMaintainJob{TopicName: d.str(), NowMs: d.varint(), RetentionMs: d.varint(), OrphanGraceMs: d.varint()}
}

// A table job's report in complete_tier_job: snapshot id, rows
// (varints), n covered offsets, each partition and next (varints).
func encTableResult(e *encoder, r *coordapi.TableResult) {
	e.varint(r.SnapshotID)
	e.varint(r.Rows)
	e.uvarint(uint64(len(r.Covered)))
	for _, c := range r.Covered {
		e.varint(int64(c.Partition))
		e.varint(c.Next)
	}
}

func decTableResult(d *decoder) *coordapi.TableResult {
	r := &coordapi.TableResult{SnapshotID: d.varint(), Rows: d.varint()}
	if n := d.count(2); n > 0 {
		r.Covered = make([]coordapi.TableCovered, n)
		for i := range r.Covered {
			r.Covered[i] = coordapi.TableCovered{Partition: d.int32(), Next: d.varint()}
		}
	}
	return r
}
