package node

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"

	"github.com/floe-io/floe/tlsconfig"
)

// TableCatalogConfig points the table jobs at an external Iceberg REST
// catalog (Polaris, Unity, Nessie, Lakekeeper, Apache's reference
// server...) instead of the coordinator's own: the broker creates the
// topics' tables there and commits their snapshots through it, so that
// engines find them in the catalog they already use. Every broker of a
// cluster must be given the same catalog. The table's files still go
// where Config.TableLocation says, written with the broker's own store;
// the catalog must accept that location (Polaris: the catalog's allowed
// locations) and its readers must be able to open it.
type TableCatalogConfig struct {
	// URL is the catalog's base URI (--table-catalog-url), the one
	// engines are given: http(s)://host[:port][/path]. Default: "", the
	// coordinator's catalog, served at /iceberg/v1.
	URL string
	// Warehouse is the warehouse asked for (--table-catalog-warehouse):
	// Polaris' catalog name, Lakekeeper's warehouse. Default: "", the
	// catalog's default.
	Warehouse string
	// Token is a bearer token sent with every request
	// (--table-catalog-token). Default: "", none.
	Token string
	// Credential is an OAuth2 client credential, "client_id:secret"
	// (--table-catalog-credential), exchanged for tokens at the
	// catalog's /v1/oauth/tokens. Default: "", none. At most one of Token
	// and Credential.
	Credential string
	// Scope is the OAuth2 scope asked for with Credential
	// (--table-catalog-scope). Default: "catalog".
	Scope string
	// TLS verifies an https catalog (--table-catalog-ca-file) and presents
	// a client certificate to one that asks for it. Default: the system's
	// roots, no certificate.
	TLS tlsconfig.ClientFiles
}

// External reports whether an external catalog is configured.
func (c TableCatalogConfig) External() bool { return c.URL != "" }

// Validate reports every problem with c at once, naming the flags.
func (c TableCatalogConfig) Validate() error {
	var errs []error
	if c.URL == "" {
		for _, f := range []struct{ flag, v string }{{"--table-catalog-warehouse", c.Warehouse}, {"--table-catalog-token", c.Token},
			{"--table-catalog-credential", c.Credential}, {"--table-catalog-scope", c.Scope}, {"--table-catalog-ca-file", c.TLS.CAFile},
			{"--table-catalog-cert", c.TLS.CertFile}, {"--table-catalog-key", c.TLS.KeyFile}} {
			if f.v != "" {
				errs = append(errs, fmt.Errorf("%s is given without --table-catalog-url", f.flag))
			}
		}
		return errors.Join(errs...)
	}
	u, err := url.Parse(c.URL)
	switch {
	case err != nil:
		errs = append(errs, fmt.Errorf("--table-catalog-url %q: %w", c.URL, err))
	case (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		errs = append(errs, fmt.Errorf("--table-catalog-url %q: want http(s)://host[:port][/path]", c.URL))
	case u.User != nil:
		errs = append(errs, fmt.Errorf("--table-catalog-url %q carries credentials: use --table-catalog-token or --table-catalog-credential", u.Redacted()))
	case u.Scheme == "http" && !c.TLS.IsZero():
		errs = append(errs, fmt.Errorf("--table-catalog-url %q is plain http: the --table-catalog-ca-file/-cert/-key settings would not be used", c.URL))
	}
	if c.Token != "" && c.Credential != "" {
		errs = append(errs, errors.New("--table-catalog-token and --table-catalog-credential: give one"))
	}
	if c.Scope != "" && c.Credential == "" {
		errs = append(errs, errors.New("--table-catalog-scope is given without --table-catalog-credential"))
	}
	if (c.TLS.CertFile == "") != (c.TLS.KeyFile == "") {
		errs = append(errs, errors.New("--table-catalog-cert and --table-catalog-key go together"))
	}
	if !c.TLS.IsZero() && (c.TLS.CertFile == "") == (c.TLS.KeyFile == "") {
		if _, err := tlsconfig.Client(c.TLS); err != nil {
			errs = append(errs, fmt.Errorf("--table-catalog TLS: %w", err))
		}
	}
	return errors.Join(errs...)
}

// externalCatalogNotice answers every /iceberg/v1 request of a broker
// whose tables are committed to an external catalog: the coordinator's
// catalog holds none of them, so serving it would show an empty, stale or
// misleading catalog, and proxying the external one would hand readers
// the broker's writing credentials behind floe's ACLs. Readers are told
// to connect to the catalog the operator runs, which the answer does not
// name (it may be an internal address).
func externalCatalogNotice() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{
			"message": "this floe cluster commits its tables to an external Iceberg REST catalog (--table-catalog-url): " +
				"connect your engine to that catalog, not to floe's /iceberg/v1",
			"type": "NoSuchCatalogException", "code": http.StatusNotFound}})
	})
}
