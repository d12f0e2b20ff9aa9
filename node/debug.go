package node

import (
	"net/http"
	"net/http/pprof"
	"slices"
	"time"
)

// registerPprof serves /debug/pprof on mux. Profiles show the broker's
// internals, and a CPU profile or a trace costs the broker while it runs,
// so they are open to anyone only when security is off:
//
//   - with SASL or client certificates (securityOn), only to a request /kv
//     would authenticate: a verified client certificate, or HTTP Basic
//     with a SCRAM user's password (401 otherwise); with ACLs on, only to
//     a super user (403 otherwise);
//   - with TLS alone, which names no one, not at all (404).
func (n *Node) registerPprof(mux *http.ServeMux) {
	handlers := map[string]http.HandlerFunc{
		"/debug/pprof/":        pprof.Index,
		"/debug/pprof/profile": pprof.Profile,
		"/debug/pprof/trace":   pprof.Trace,
	}
	switch {
	case n.securityOn():
		// One gate for the three: one cache of checked passwords.
		g := &kvGate{n: n, security: true, verified: map[[32]byte]time.Time{}, logged: map[string]time.Time{}}
		for path, h := range handlers {
			mux.Handle(path, n.pprofGate(g, h))
		}
	case n.cfg.TLS.enabled():
		n.log.Info("/debug/pprof is off: with TLS and neither SASL nor client certificates, no request can authenticate")
	default:
		for path, h := range handlers {
			mux.Handle(path, h)
		}
	}
}

// pprofGate lets through to h only the requests registerPprof allows,
// authenticated by g as /kv authenticates them.
func (n *Node) pprofGate(g *kvGate, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		principal, d := g.authenticate(r)
		if d != nil {
			w.Header().Set("WWW-Authenticate", `Basic realm="floe"`)
			http.Error(w, d.Message, http.StatusUnauthorized)
			return
		}
		if n.broker.ACLsEnabled() && !slices.Contains(n.cfg.Broker.SuperUsers, principal) {
			http.Error(w, "Principal "+principal+" is not a super user: with ACLs on, /debug/pprof is theirs only", http.StatusForbidden)
			return
		}
		h.ServeHTTP(w, r)
	})
}
