package probe

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

// TestReadiness: outcomes (a Then's too), the cache and the timeout, on a
// fake clock. The
// hung check returns only when the test ends: an answer that waited for it
// would never come.
func TestReadiness(t *testing.T) {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	now := time.Unix(1000, 0)
	var runs atomic.Int32
	failing := atomic.Bool{}
	r := New([]Check{
		{Name: "fine", Run: func(context.Context) error { runs.Add(1); return nil }},
		{Name: "flaky", Run: func(context.Context) error {
			if failing.Load() {
				return errors.New("down")
			}
			return nil
		}},
		{Name: "answers", Then: "listed", Run: func(context.Context) error {
			if failing.Load() {
				return &ThenFailed{Err: errors.New("not listed")}
			}
			return nil
		}},
		{Name: "hung", Run: func(ctx context.Context) error {
			if failing.Load() {
				<-ctx.Done()
				<-release // ignores its context's end
				return errors.New("gave up")
			}
			return nil
		}},
	}, Options{Timeout: 100 * time.Millisecond, MaxAge: time.Second, Now: func() time.Time { return now }})

	for _, step := range []struct {
		name    string
		advance time.Duration
		failing bool
		code    int
		runs    int32
		errs    map[string]string
	}{
		{name: "first", code: 200, runs: 1},
		{name: "cached", advance: 500 * time.Millisecond, failing: true, code: 200, runs: 1},
		{name: "expired", advance: 600 * time.Millisecond, failing: true, code: 503, runs: 2,
			errs: map[string]string{"flaky": "down", "listed": "not listed", "hung": "context deadline exceeded"}},
		{name: "recovered", advance: 2 * time.Second, code: 200, runs: 3},
	} {
		now = now.Add(step.advance)
		failing.Store(step.failing)
		w := httptest.NewRecorder()
		r.ServeHTTP(w, httptest.NewRequest("GET", "/readyz", nil))
		var rep Report
		if err := json.Unmarshal(w.Body.Bytes(), &rep); err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		if w.Code != step.code || rep.Ready != (step.code == 200) || runs.Load() != step.runs {
			t.Errorf("%s: %d %+v after %d runs, want %d after %d", step.name, w.Code, rep, runs.Load(), step.code, step.runs)
		}
		if len(rep.Checks) != 5 {
			t.Errorf("%s: %d outcomes, want 5: %+v", step.name, len(rep.Checks), rep.Checks)
		}
		for _, c := range rep.Checks {
			if want := step.errs[c.Name]; c.Error != want || c.OK != (want == "") {
				t.Errorf("%s: check %+v, want error %q", step.name, c, want)
			}
		}
	}
}
