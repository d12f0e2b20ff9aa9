package node

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/floe-io/floe/broker"
	"github.com/floe-io/floe/objectstore"
	"github.com/floe-io/floe/table/catalog"
)

// The Iceberg REST catalog (issue 41, docs/design/iceberg-tables.md) is
// served read-only at /iceberg/v1 on the HTTP listener, over the
// coordinator's table pointers (rpc.Client.TableCatalog), behind the
// listener's security as /kv is: with SASL or mTLS on, a request needs
// HTTP Basic with a SCRAM user's password or a verified client
// certificate (401 otherwise), and with ACLs on, a table is listed only
// with DESCRIBE and loaded only with READ on its topic (403).

// DefaultTableNamespace is the Iceberg namespace of the topics' tables
// when Config.TableNamespace is empty.
const DefaultTableNamespace = "floe"

// tableNamespace is the namespace of the topics' tables.
func (n *Node) tableNamespace() string {
	if n.cfg.TableNamespace != "" {
		return n.cfg.TableNamespace
	}
	return DefaultTableNamespace
}

// TableRoot returns the URI of TableStore's empty key, which the
// locations of the tables' files start with: s3://<bucket> on S3,
// file://<dir> on a directory store, and mem://floe for another store
// given in Config.Store.
func (n *Node) TableRoot() string { return n.tables.root }

// defaultTableRoot is TableRoot without Config.TableLocation: the node's
// own store's.
func (n *Node) defaultTableRoot() string {
	switch {
	case n.cfg.Store != nil:
		if d, ok := n.cfg.Store.(*objectstore.Dir); ok {
			return "file://" + d.Root()
		}
		return "mem://floe"
	case n.cfg.S3.Bucket != "":
		return "s3://" + n.cfg.S3.Bucket
	}
	abs, err := filepath.Abs(filepath.Join(n.cfg.DataDir, "objects"))
	if err != nil {
		abs = filepath.Join(n.cfg.DataDir, "objects")
	}
	return "file://" + abs
}

// tableReaderDefaults are the catalog properties readers get from
// /iceberg/v1/config to open the files: the S3 endpoint, region and
// addressing, never credentials.
func (n *Node) tableReaderDefaults() map[string]string {
	d := map[string]string{}
	if n.cfg.S3.Bucket == "" || n.cfg.Store != nil {
		return d
	}
	if n.cfg.S3.Endpoint != "" {
		d["s3.endpoint"] = n.cfg.S3.Endpoint
	}
	if n.cfg.S3.Region != "" {
		d["s3.region"] = n.cfg.S3.Region
	}
	if n.cfg.S3.PathStyle {
		d["s3.path-style-access"] = "true"         // Java, Spark, Trino
		d["s3.force-virtual-addressing"] = "false" // PyIceberg
	}
	return d
}

type principalKey struct{}

// icebergHandler is the REST catalog behind authentication and ACLs.
func (n *Node) icebergHandler(m metric.Meter) http.Handler {
	// The gate authenticates as /kv's does (the same checks and the same
	// cache of verified passwords per gate); it keeps no quota.
	g := &kvGate{n: n, security: n.securityOn(), verified: map[[32]byte]time.Time{}, logged: map[string]time.Time{},
		authz: n.kvAuthorizer()}
	denied, _ := m.Int64Counter("floe.iceberg.denied", metric.WithUnit("{request}"),
		metric.WithDescription("Iceberg REST catalog requests refused, by reason: unauthenticated (401), forbidden (403 or a table left out of a listing)."))
	ns := n.tableNamespace()
	rest := catalog.NewRESTHandler(n.client.TableCatalog(), n.tables.store, n.TableRoot(), catalog.RESTOptions{
		Defaults: n.tableReaderDefaults(),
		Logger:   n.log,
		Authorize: func(r *http.Request, id catalog.Ident, load bool) error {
			if !slices.Equal(id.Namespace, []string{ns}) {
				return fmt.Errorf("table %s is not in namespace %s", id, ns)
			}
			if g.authz == nil {
				return nil
			}
			principal, _ := r.Context().Value(principalKey{}).(string)
			op := kmsg.ACLOperationDescribe
			if load {
				op = kmsg.ACLOperationRead
			}
			if !g.authz.AuthorizeTopic(principal, remoteHost(r), op, id.Name) {
				denied.Add(r.Context(), 1, metric.WithAttributes(attribute.String("reason", "forbidden")))
				return fmt.Errorf("Principal %s may not %s topic %q", principal, op, id.Name)
			}
			return nil
		},
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		principal := broker.AnonymousPrincipal
		if g.security {
			p, d := g.authenticate(r)
			if d != nil {
				denied.Add(r.Context(), 1, metric.WithAttributes(attribute.String("reason", "unauthenticated")))
				n.log.Debug("iceberg catalog request refused", "principal", p, "path", r.URL.Path, "message", d.Message)
				w.Header().Set("WWW-Authenticate", `Basic realm="floe"`)
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusUnauthorized)
				_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{
					"message": d.Message, "type": "NotAuthorizedException", "code": http.StatusUnauthorized}})
				return
			}
			principal = p
		}
		rest.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), principalKey{}, principal)))
	})
}

// remoteHost is the client address of r without its port.
func remoteHost(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}
