package table

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync"

	"github.com/apache/iceberg-go"
	icecatalog "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/rest"
	icebergio "github.com/apache/iceberg-go/io"
	itable "github.com/apache/iceberg-go/table"

	"github.com/floe-io/floe/table/catalog"
)

// ExternalCatalog is the part of an iceberg-go catalog (its
// catalog.Catalog) that Tables commits through when Options.External is
// set: an operator's own Iceberg REST catalog (Polaris, Unity, Nessie,
// Lakekeeper...), so that engines find floe's tables where they find
// their others. The catalog, not floe, writes each metadata file: a
// commit sends iceberg-go's requirements and updates (CommitTable), and a
// lost race (HTTP 409) is itable.ErrCommitFailed, retried like a lost
// pointer swap. floe still writes the data files, manifests and manifest
// lists with its own store, under its own location (Tables.Location),
// which the catalog must accept as the table's location.
type ExternalCatalog interface {
	LoadTable(ctx context.Context, ident itable.Identifier) (*itable.Table, error)
	CommitTable(ctx context.Context, ident itable.Identifier, reqs []itable.Requirement, updates []itable.Update) (itable.Metadata, string, error)
	CreateTable(ctx context.Context, ident itable.Identifier, sc *iceberg.Schema, opts ...icecatalog.CreateTableOpt) (*itable.Table, error)
	CreateNamespace(ctx context.Context, ns itable.Identifier, props iceberg.Properties) error
	RenameTable(ctx context.Context, from, to itable.Identifier) (*itable.Table, error)
	RegisterTable(ctx context.Context, ident itable.Identifier, metadataLoc string) (*itable.Table, error)
}

var _ ExternalCatalog = (*rest.Catalog)(nil)

// RESTCatalogOptions configure an external Iceberg REST catalog
// (NewRESTCatalog).
type RESTCatalogOptions struct {
	// URL is the catalog's base URI, the one engines are given (the
	// client appends /v1/...): http(s)://host[:port][/path]. Required.
	URL string
	// Warehouse is the warehouse to ask the catalog for (its /v1/config
	// ?warehouse=; Polaris and Lakekeeper name their catalogs with it).
	// Default: "", the catalog's default.
	Warehouse string
	// Token is a bearer token sent with every request. Default: "", none.
	Token string
	// Credential is an OAuth2 client credential, "client_id:client_secret"
	// (or the secret alone), exchanged for tokens at the catalog's
	// /v1/oauth/tokens (iceberg-go's rest.WithCredential). Default: "",
	// none. At most one of Token and Credential.
	Credential string
	// Scope is the OAuth2 scope asked for with Credential. Default:
	// "catalog".
	Scope string
	// TLS verifies an https catalog (and presents a client certificate).
	// Default: nil, Go's defaults.
	TLS *tls.Config
}

// Validate reports every problem with o at once.
func (o RESTCatalogOptions) Validate() error {
	var errs []error
	if o.URL == "" {
		errs = append(errs, errors.New("table: external catalog URL is required"))
	} else if u, err := url.Parse(o.URL); err != nil {
		errs = append(errs, fmt.Errorf("table: external catalog URL %q: %w", o.URL, err))
	} else if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		errs = append(errs, fmt.Errorf("table: external catalog URL %q is not http(s)://host[:port][/path]", o.URL))
	} else if u.User != nil {
		errs = append(errs, fmt.Errorf("table: external catalog URL %q carries credentials: give a token or an OAuth2 credential instead", u.Redacted()))
	}
	if o.Token != "" && o.Credential != "" {
		errs = append(errs, errors.New("table: give the external catalog a bearer token or an OAuth2 credential, not both"))
	}
	if o.TLS != nil && strings.HasPrefix(o.URL, "http://") {
		errs = append(errs, fmt.Errorf("table: TLS settings given for a plain http external catalog URL %q", o.URL))
	}
	return errors.Join(errs...)
}

// RESTCatalog is an ExternalCatalog over iceberg-go's REST client
// (catalog/rest) that connects on first use: creating the client asks
// the catalog for its configuration (/v1/config), and a broker should
// start while its catalog is briefly down. A failed connection is tried
// again by the next call. Safe for concurrent use.
type RESTCatalog struct {
	opts RESTCatalogOptions
	mu   struct {
		sync.Mutex
		cat *rest.Catalog
	}
}

var _ ExternalCatalog = (*RESTCatalog)(nil)

// NewRESTCatalog returns the catalog at opts.URL, not yet connected.
func NewRESTCatalog(opts RESTCatalogOptions) (*RESTCatalog, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	return &RESTCatalog{opts: opts}, nil
}

// client returns the connected REST client, connecting first if needed.
func (c *RESTCatalog) client(ctx context.Context) (*rest.Catalog, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mu.cat != nil {
		return c.mu.cat, nil
	}
	var ropts []rest.Option
	if c.opts.Warehouse != "" {
		ropts = append(ropts, rest.WithWarehouseLocation(c.opts.Warehouse))
	}
	if c.opts.Token != "" {
		ropts = append(ropts, rest.WithOAuthToken(c.opts.Token))
	}
	if c.opts.Credential != "" {
		ropts = append(ropts, rest.WithCredential(c.opts.Credential))
		if c.opts.Scope != "" {
			ropts = append(ropts, rest.WithScope(c.opts.Scope))
		}
	}
	if c.opts.TLS != nil {
		ropts = append(ropts, rest.WithTLSConfig(c.opts.TLS))
	}
	cat, err := rest.NewCatalog(ctx, "floe", c.opts.URL, ropts...)
	if err != nil {
		return nil, fmt.Errorf("connect to the external Iceberg REST catalog %s: %w", c.opts.URL, err)
	}
	c.mu.cat = cat
	return cat, nil
}

// Close closes the client's idle connections.
func (c *RESTCatalog) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mu.cat == nil {
		return nil
	}
	err := c.mu.cat.Close()
	c.mu.cat = nil
	return err
}

// LoadTable implements ExternalCatalog.
func (c *RESTCatalog) LoadTable(ctx context.Context, ident itable.Identifier) (*itable.Table, error) {
	cat, err := c.client(ctx)
	if err != nil {
		return nil, err
	}
	return cat.LoadTable(ctx, ident)
}

// CommitTable implements ExternalCatalog.
func (c *RESTCatalog) CommitTable(ctx context.Context, ident itable.Identifier, reqs []itable.Requirement, updates []itable.Update) (itable.Metadata, string, error) {
	cat, err := c.client(ctx)
	if err != nil {
		return nil, "", err
	}
	return cat.CommitTable(ctx, ident, reqs, updates)
}

// CreateTable implements ExternalCatalog.
func (c *RESTCatalog) CreateTable(ctx context.Context, ident itable.Identifier, sc *iceberg.Schema, opts ...icecatalog.CreateTableOpt) (*itable.Table, error) {
	cat, err := c.client(ctx)
	if err != nil {
		return nil, err
	}
	return cat.CreateTable(ctx, ident, sc, opts...)
}

// CreateNamespace implements ExternalCatalog.
func (c *RESTCatalog) CreateNamespace(ctx context.Context, ns itable.Identifier, props iceberg.Properties) error {
	cat, err := c.client(ctx)
	if err != nil {
		return err
	}
	return cat.CreateNamespace(ctx, ns, props)
}

// RegisterTable implements ExternalCatalog.
func (c *RESTCatalog) RegisterTable(ctx context.Context, ident itable.Identifier, metadataLoc string) (*itable.Table, error) {
	cat, err := c.client(ctx)
	if err != nil {
		return nil, err
	}
	return cat.RegisterTable(ctx, ident, metadataLoc)
}

// RenameTable implements ExternalCatalog.
func (c *RESTCatalog) RenameTable(ctx context.Context, from, to itable.Identifier) (*itable.Table, error) {
	cat, err := c.client(ctx)
	if err != nil {
		return nil, err
	}
	return cat.RenameTable(ctx, from, to)
}

func identifier(id Ident) itable.Identifier {
	return itable.Identifier(append(slices.Clone(id.Namespace), id.Name))
}

// noSuchTable makes an external catalog's missing table the package's
// catalog.ErrNoSuchTable too, which callers check.
func noSuchTable(id Ident, err error) error {
	if errors.Is(err, icecatalog.ErrNoSuchTable) && !errors.Is(err, catalog.ErrNoSuchTable) {
		return fmt.Errorf("load %s: %w: %w", id, catalog.ErrNoSuchTable, err)
	}
	return err
}

// createExternal creates table id in the external catalog with the
// schema, partition spec, location and properties given (the catalog
// assigns the ids and writes the first metadata file), creating its
// namespace first when the catalog lacks it. A table that Options.Catalog
// holds is registered from its current metadata file instead, keeping
// its rows, history and covered offsets: a cluster switched to an
// external catalog goes on where its own catalog left off (and the
// table's orphan collection never takes the earlier files, which a new
// table at the same location would not reference). It reports whether
// it created or registered the table: false when it exists already,
// created meanwhile by another job. A table of another topic id (a topic
// deleted and created again) is not registered: the new topic's table is
// created.
func (t *Tables) createExternal(ctx context.Context, id Ident, sc *iceberg.Schema, ps iceberg.PartitionSpec, loc string, props iceberg.Properties) (bool, error) {
	ext := t.opts.External
	ident := identifier(id)
	create := func() error {
		_, err := ext.CreateTable(ctx, ident, sc, icecatalog.WithLocation(loc), icecatalog.WithPartitionSpec(&ps),
			icecatalog.WithProperties(props))
		return err
	}
	if t.opts.Catalog != nil {
		mloc, err := t.opts.Catalog.Load(ctx, id)
		var owner string
		if err == nil {
			fio := NewFileIO(ctx, t.opts.Store, t.opts.Root)
			var old *itable.Table
			old, err = itable.NewFromLocation(ctx, ident, mloc, func(context.Context) (icebergio.IO, error) { return fio, nil }, nil)
			if err != nil {
				return false, fmt.Errorf("read %s's metadata %s from floe's catalog: %w", id, mloc, err)
			}
			owner = old.Properties()[PropTopicID]
		}
		switch {
		case err == nil && (owner == "" || owner == props[PropTopicID]):
			create = func() error {
				_, err := ext.RegisterTable(ctx, ident, mloc)
				if err != nil {
					return fmt.Errorf("register %s from %s: %w", id, mloc, err)
				}
				return nil
			}
		case err != nil && !errors.Is(err, catalog.ErrNoSuchTable):
			return false, fmt.Errorf("look for %s in floe's catalog: %w", id, err)
		}
	}
	err := create()
	if errors.Is(err, icecatalog.ErrNoSuchNamespace) {
		if err := ext.CreateNamespace(ctx, itable.Identifier(slices.Clone(id.Namespace)), nil); err != nil &&
			!errors.Is(err, icecatalog.ErrNamespaceAlreadyExists) {
			return false, fmt.Errorf("create namespace %s: %w", strings.Join(id.Namespace, "."), err)
		}
		err = create()
	}
	switch {
	case errors.Is(err, icecatalog.ErrTableAlreadyExists):
		return false, nil
	case err != nil:
		return false, err
	}
	return true, nil
}

// Rename moves table from to the name to (which must not exist): in an
// external catalog by its rename, in a pointer catalog by creating to's
// pointer and then dropping from's. The table's files stay where they
// are. A table another job renamed meanwhile is not an error.
func (t *Tables) Rename(ctx context.Context, from, to Ident) error {
	if t.opts.External != nil {
		_, err := t.opts.External.RenameTable(ctx, identifier(from), identifier(to))
		if err != nil && !errors.Is(err, icecatalog.ErrNoSuchTable) && !errors.Is(err, icecatalog.ErrTableAlreadyExists) {
			return fmt.Errorf("rename table %s to %s: %w", from, to, err)
		}
		return nil
	}
	loc, err := t.opts.Catalog.Load(ctx, from)
	if errors.Is(err, catalog.ErrNoSuchTable) {
		return nil
	} else if err != nil {
		return fmt.Errorf("rename table %s to %s: %w", from, to, err)
	}
	if err := t.opts.Catalog.Swap(ctx, to, "", loc); err != nil && !errors.Is(err, catalog.ErrConflict) {
		return fmt.Errorf("rename table %s to %s: %w", from, to, err)
	}
	if err := t.opts.Catalog.Swap(ctx, from, loc, ""); err != nil && !errors.Is(err, catalog.ErrConflict) {
		return fmt.Errorf("rename table %s to %s: %w", from, to, err)
	}
	return nil
}
