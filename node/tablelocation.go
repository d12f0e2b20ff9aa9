package node

import (
	"context"
	"fmt"
	"net/url"
	"path"
	"path/filepath"
	"strings"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/objectstore"
)

// tableLocation is where the tables' files go (Config.TableLocation): a
// store, the URI of its empty key, and the key prefix under which the
// tables are (table.Options' Store, Root and Prefix).
type tableLocation struct {
	store        objectstore.Store
	root, prefix string
}

// openTableLocation opens Config.TableLocation, or, when it is empty,
// returns the node's own store with the tables under <S3Prefix>/tables.
// s3://bucket/path is another bucket (or the same) through the node's S3
// options and credentials; file:///dir a directory.
func (n *Node) openTableLocation(ctx context.Context) (tableLocation, error) {
	loc := n.cfg.TableLocation
	if loc == "" {
		return tableLocation{store: n.store, root: n.defaultTableRoot(), prefix: path.Join(coordapi.CleanPrefix(n.cfg.S3Prefix), "tables")}, nil
	}
	u, err := url.Parse(loc)
	if err != nil {
		return tableLocation{}, fmt.Errorf("--table-location %q: %w", loc, err)
	}
	keyPath := strings.Trim(u.Path, "/")
	switch u.Scheme {
	case "s3":
		if u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
			return tableLocation{}, fmt.Errorf("--table-location %q: want s3://bucket/path", loc)
		}
		opts := n.cfg.S3
		opts.Bucket = u.Host
		s3, err := objectstore.NewS3(ctx, opts)
		if err != nil {
			return tableLocation{}, fmt.Errorf("--table-location %q: %w", loc, err)
		}
		return tableLocation{store: objectstore.Instrument(s3, n.metrics.Meter("floe/objectstore")), root: "s3://" + u.Host, prefix: keyPath}, nil
	case "file":
		if u.Host != "" || keyPath == "" || u.RawQuery != "" || u.Fragment != "" {
			return tableLocation{}, fmt.Errorf("--table-location %q: want file:///absolute/dir", loc)
		}
		// The directory's parent is the store and its name the prefix,
		// so that the tables' keys start with it, as under the node's
		// own store.
		dir := filepath.Clean("/" + keyPath)
		d, err := objectstore.NewDir(filepath.Dir(dir))
		if err != nil {
			return tableLocation{}, fmt.Errorf("--table-location %q: %w", loc, err)
		}
		return tableLocation{store: d, root: "file://" + d.Root(), prefix: filepath.Base(dir)}, nil
	}
	return tableLocation{}, fmt.Errorf("--table-location %q: the scheme must be s3 or file", loc)
}

// TableStore returns the store the tables' files are in, and TablePrefix
// the key prefix they are under (with TableRoot, table.Options' Store,
// Prefix and Root).
func (n *Node) TableStore() objectstore.Store { return n.tables.store }

// TablePrefix returns the key prefix the tables are under in TableStore.
func (n *Node) TablePrefix() string { return n.tables.prefix }
