package catalog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	"github.com/floe-io/floe/objectstore"
)

// RESTOptions configure the REST catalog handler.
type RESTOptions struct {
	// Defaults are the catalog properties GET /v1/config hands readers
	// (the S3 endpoint, region and addressing style they need to open the
	// files; never credentials). Default: none.
	Defaults map[string]string
	// Authorize, when set, is asked before a table is listed or loaded; an
	// error hides the table from the listing and answers 403 to a load.
	// The broker checks the HTTP listener's principal against the topic's
	// DESCRIBE (list) and READ (load) ACLs with it. Default: all allowed.
	Authorize func(r *http.Request, id Ident, load bool) error
	// Logger logs failed requests. Default: slog.Default().
	Logger *slog.Logger
}

// RESTPrefix is where the broker's HTTP listener mounts the REST catalog:
// readers are given http://<broker>/iceberg as the catalog URI.
const RESTPrefix = "/iceberg"

// NewRESTHandler serves the read-only subset of the Iceberg REST catalog
// API that readers need, over cat's pointers, under RESTPrefix:
//
//	GET       /iceberg/v1/config
//	GET       /iceberg/v1/namespaces
//	GET|HEAD  /iceberg/v1/namespaces/{ns}
//	GET       /iceberg/v1/namespaces/{ns}/tables
//	GET|HEAD  /iceberg/v1/namespaces/{ns}/tables/{table}
//
// A load answers the metadata file's JSON as stored, unparsed. Namespace
// levels are joined by the unit separator (0x1F), as the REST spec says.
// Every other path and method, writes included, is an error in the REST
// spec's form: only floe's jobs commit.
// The metadata files are read from store, whose empty key root stands for
// (as table.FileIO's root does).
func NewRESTHandler(cat Catalog, store objectstore.Store, root string, opts RESTOptions) http.Handler {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	h := &restHandler{cat: cat, store: store, root: strings.TrimSuffix(root, "/"), opts: opts}
	mux := http.NewServeMux()
	p := RESTPrefix + "/v1"
	mux.HandleFunc("GET "+p+"/config", h.config)
	mux.HandleFunc("GET "+p+"/namespaces", h.namespaces)
	mux.HandleFunc("GET "+p+"/namespaces/{ns}", h.namespace)
	mux.HandleFunc("HEAD "+p+"/namespaces/{ns}", h.namespace)
	mux.HandleFunc("GET "+p+"/namespaces/{ns}/tables", h.tables)
	mux.HandleFunc("GET "+p+"/namespaces/{ns}/tables/{table}", h.load)
	mux.HandleFunc("HEAD "+p+"/namespaces/{ns}/tables/{table}", h.load)
	mux.HandleFunc(RESTPrefix+"/", func(w http.ResponseWriter, r *http.Request) {
		code := http.StatusNotFound
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			code = http.StatusMethodNotAllowed
		}
		restError(w, code, "NotSupportedException", fmt.Sprintf("%s %s is not served: floe's catalog is read-only", r.Method, r.URL.Path))
	})
	return mux
}

type restHandler struct {
	cat   Catalog
	store objectstore.Store
	root  string // the URI of the store's empty key
	opts  RESTOptions
}

// read reads the file loc, a URI under h.root.
func (h *restHandler) read(ctx context.Context, loc string) ([]byte, error) {
	k, ok := strings.CutPrefix(loc, h.root+"/")
	if !ok {
		return nil, fmt.Errorf("%s is not under the store root %s", loc, h.root)
	}
	if err := objectstore.CheckKey(k); err != nil {
		return nil, fmt.Errorf("%s: %w", loc, err)
	}
	return h.store.GetRange(ctx, k, 0, -1)
}

// restError writes the REST spec's ErrorModel.
func restError(w http.ResponseWriter, code int, typ, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": msg, "type": typ, "code": code}})
}

func restJSON(w http.ResponseWriter, r *http.Request, v any) {
	w.Header().Set("Content-Type", "application/json")
	if r.Method == http.MethodHead {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	_ = json.NewEncoder(w).Encode(v)
}

func (h *restHandler) internal(w http.ResponseWriter, r *http.Request, err error) {
	h.opts.Logger.Warn("catalog: rest", "method", r.Method, "path", r.URL.Path, "err", err)
	restError(w, http.StatusInternalServerError, "InternalServerError", err.Error())
}

func (h *restHandler) config(w http.ResponseWriter, r *http.Request) {
	defaults := h.opts.Defaults
	if defaults == nil {
		defaults = map[string]string{}
	}
	restJSON(w, r, map[string]any{"defaults": defaults, "overrides": map[string]string{}})
}

func (h *restHandler) namespaces(w http.ResponseWriter, r *http.Request) {
	nss, err := h.cat.Namespaces(r.Context())
	if err != nil {
		h.internal(w, r, err)
		return
	}
	if parent := r.URL.Query().Get("parent"); parent != "" {
		// One level of namespaces is all floe makes: children of a
		// parent are the namespaces one level below it.
		pl := strings.Split(parent, "\x1f")
		var kids [][]string
		for _, ns := range nss {
			if len(ns) == len(pl)+1 && strings.Join(ns[:len(pl)], "\x1f") == parent {
				kids = append(kids, ns)
			}
		}
		nss = kids
	}
	if nss == nil {
		nss = [][]string{}
	}
	restJSON(w, r, map[string]any{"namespaces": nss})
}

// namespaceOf returns the request's namespace if it holds a table, or
// answers 404.
func (h *restHandler) namespaceOf(w http.ResponseWriter, r *http.Request) ([]string, bool) {
	ns := strings.Split(r.PathValue("ns"), "\x1f")
	nss, err := h.cat.Namespaces(r.Context())
	if err != nil {
		h.internal(w, r, err)
		return nil, false
	}
	for _, have := range nss {
		if strings.Join(have, "\x1f") == strings.Join(ns, "\x1f") {
			return ns, true
		}
	}
	restError(w, http.StatusNotFound, "NoSuchNamespaceException", fmt.Sprintf("Namespace does not exist: %s", strings.Join(ns, ".")))
	return nil, false
}

func (h *restHandler) namespace(w http.ResponseWriter, r *http.Request) {
	ns, ok := h.namespaceOf(w, r)
	if !ok {
		return
	}
	restJSON(w, r, map[string]any{"namespace": ns, "properties": map[string]string{}})
}

func (h *restHandler) tables(w http.ResponseWriter, r *http.Request) {
	ns, ok := h.namespaceOf(w, r)
	if !ok {
		return
	}
	ids, err := h.cat.List(r.Context(), ns)
	if err != nil {
		h.internal(w, r, err)
		return
	}
	type ident struct {
		Namespace []string `json:"namespace"`
		Name      string   `json:"name"`
	}
	out := []ident{}
	for _, id := range ids {
		if h.opts.Authorize != nil && h.opts.Authorize(r, id, false) != nil {
			continue
		}
		out = append(out, ident{Namespace: id.Namespace, Name: id.Name})
	}
	restJSON(w, r, map[string]any{"identifiers": out})
}

func (h *restHandler) load(w http.ResponseWriter, r *http.Request) {
	id := Ident{Namespace: strings.Split(r.PathValue("ns"), "\x1f"), Name: r.PathValue("table")}
	if h.opts.Authorize != nil {
		if err := h.opts.Authorize(r, id, true); err != nil {
			restError(w, http.StatusForbidden, "ForbiddenException", err.Error())
			return
		}
	}
	loc, err := h.cat.Load(r.Context(), id)
	if errors.Is(err, ErrNoSuchTable) {
		restError(w, http.StatusNotFound, "NoSuchTableException", fmt.Sprintf("Table does not exist: %s", id))
		return
	} else if err != nil {
		h.internal(w, r, err)
		return
	}
	if r.Method == http.MethodHead {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	meta, err := h.read(r.Context(), loc)
	if err != nil {
		h.internal(w, r, fmt.Errorf("read metadata of %s: %w", id, err))
		return
	}
	if !json.Valid(meta) {
		h.internal(w, r, fmt.Errorf("metadata of %s at %s is not JSON", id, loc))
		return
	}
	restJSON(w, r, map[string]any{
		"metadata-location": loc,
		"metadata":          json.RawMessage(meta),
		"config":            map[string]string{},
	})
}
