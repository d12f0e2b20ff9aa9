// Package probe serves /readyz: a list of named checks (the coordinator
// answers, the object store answers, the broker is registered...), run
// concurrently, each bounded by a timeout, their outcome cached for a moment
// so that kubelet's probes, every few seconds from every node, cost little.
//
//	GET /readyz ──► cached < MaxAge? ──yes──► 200 / 503 + JSON
//	                    │ no
//	                    └─► every check at once, each within Timeout ──► cache
//
// The answer is 200 when every check passed, 503 when any failed, with a JSON
// body naming each check and its outcome:
//
//	{"ready":false,"checks":[
//	  {"name":"coordinator","ok":true,"took_ms":0.41},
//	  {"name":"object_store","ok":false,"took_ms":800,"error":"context deadline exceeded"}]}
package probe

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sync"
	"time"
)

// Defaults of Options.
const (
	// DefaultTimeout bounds one check: the checks run at once, so that
	// an answer fits in kubelet's default probe timeout of 1s.
	DefaultTimeout = 800 * time.Millisecond
	// DefaultMaxAge is how long an outcome is served again.
	DefaultMaxAge = time.Second
)

// Check is one readiness check: Run returns nil when the part it checks is
// ready. Run is called with a context bounded by Options.Timeout and must
// honour it.
//
// A Check may settle a second outcome with the same call, reported under
// the name Then (one request answering two questions: the coordinator
// answers, and its answer names this broker). Run then returns nil when
// both hold, a *ThenFailed when the first holds and the second does not,
// and any other error (a timeout included) fails both.
type Check struct {
	Name string
	Run  func(ctx context.Context) error
	// Then names the second outcome, "" for none.
	Then string
}

// ThenFailed is what a Check's Run returns when its own part is ready but
// the part named Then is not: Err says why.
type ThenFailed struct{ Err error }

func (e *ThenFailed) Error() string { return e.Err.Error() }
func (e *ThenFailed) Unwrap() error { return e.Err }

// Options configure a Readiness.
type Options struct {
	// Timeout bounds each check. Default: DefaultTimeout (800ms).
	Timeout time.Duration
	// MaxAge is how long an outcome is answered again without running the
	// checks. Default: DefaultMaxAge (1s).
	MaxAge time.Duration
	// Now is the clock (tests). Default: time.Now.
	Now func() time.Time
}

// Result is one check's outcome.
type Result struct {
	Name string `json:"name"`
	OK   bool   `json:"ok"`
	// TookMs is how long the check ran, in milliseconds.
	TookMs float64 `json:"took_ms"`
	// Error says why it failed, empty when OK.
	Error string `json:"error,omitempty"`
}

// Report is the outcome of every check, as /readyz answers it.
type Report struct {
	Ready  bool     `json:"ready"`
	Checks []Result `json:"checks"`
}

// Readiness runs checks and serves their outcome (an http.Handler).
type Readiness struct {
	checks []Check
	opts   Options

	// mu is held while the checks run: probes arriving meanwhile wait for
	// that outcome rather than start their own.
	mu struct {
		sync.Mutex
		report Report
		at     time.Time // zero: never run
	}
}

// New returns a Readiness over checks.
func New(checks []Check, opts Options) *Readiness {
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.MaxAge <= 0 {
		opts.MaxAge = DefaultMaxAge
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Readiness{checks: checks, opts: opts}
}

// Check returns the outcome of the checks: the cached one while it is
// younger than MaxAge, else a new one.
func (r *Readiness) Check(ctx context.Context) Report {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.mu.at.IsZero() && r.opts.Now().Sub(r.mu.at) < r.opts.MaxAge {
		return r.mu.report
	}
	var results []Result
	at := make([]int, len(r.checks)) // where each check's outcomes go
	for i, c := range r.checks {
		at[i] = len(results)
		results = append(results, Result{Name: c.Name})
		if c.Then != "" {
			results = append(results, Result{Name: c.Then})
		}
	}
	var wg sync.WaitGroup
	for i, c := range r.checks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.run(ctx, c, results[at[i]:])
		}()
	}
	wg.Wait()
	rep := Report{Ready: true, Checks: results}
	for _, res := range results {
		rep.Ready = rep.Ready && res.OK
	}
	r.mu.report, r.mu.at = rep, r.opts.Now()
	return rep
}

// run runs one check within the timeout, and writes its outcome, and its
// Then's, at out[0] and out[1]. A check that does not return by then is
// reported failed and left to finish on its own.
func (r *Readiness) run(ctx context.Context, c Check, out []Result) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.opts.Timeout)
	defer cancel()
	start := time.Now()
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	var err error
	select {
	case err = <-done:
	case <-ctx.Done():
		err = ctx.Err()
	}
	took := float64(time.Since(start).Microseconds()) / 1000
	var then *ThenFailed
	if c.Then != "" {
		out[1].TookMs = took
		out[1].set(err)
		if errors.As(err, &then) {
			err = nil // only Then failed
		}
	}
	out[0].TookMs = took
	out[0].set(err)
}

// set records err, nil for success, as res's outcome.
func (res *Result) set(err error) {
	res.OK = err == nil
	if err != nil {
		res.Error = err.Error()
	}
}

// ServeHTTP answers 200 when every check passed, else 503, with the Report
// as JSON.
func (r *Readiness) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	rep := r.Check(req.Context())
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	if !rep.Ready {
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	json.NewEncoder(w).Encode(rep)
}
