package loadtest

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"
)

// kvCounters are shared by all lookup workers.
type kvCounters struct {
	lookups  atomic.Int64 // answered lookups (hits and misses), warmup included
	hits     atomic.Int64 // 200
	misses   atomic.Int64 // 404
	measured atomic.Int64 // answered lookups started after the warmup
}

// kvLooker runs GET /kv/{topic}/{key} lookups.
type kvLooker struct {
	cfg       *Config
	client    *http.Client
	base      string // KVURL + "/kv/" + escaped topic + "/"
	lim       *rate.Limiter
	hists     []*Histogram // one per worker
	c         *kvCounters
	errs      *ErrorCounts
	warmupEnd time.Time
}

func newKVLooker(cfg *Config, errs *ErrorCounts, warmupEnd time.Time) *kvLooker {
	k := &kvLooker{
		cfg: cfg,
		client: &http.Client{Transport: &http.Transport{
			Proxy:               http.ProxyFromEnvironment,
			MaxIdleConnsPerHost: cfg.KVConcurrency,
			IdleConnTimeout:     30 * time.Second,
		}},
		base:      strings.TrimRight(cfg.KVURL, "/") + "/kv/" + url.PathEscape(cfg.Topic) + "/",
		lim:       newLimiter(cfg.KVLookupsRate),
		c:         &kvCounters{},
		errs:      errs,
		warmupEnd: warmupEnd,
	}
	for range cfg.KVConcurrency {
		k.hists = append(k.hists, NewHistogram())
	}
	return k
}

// worker looks keys up until ctx is done.
func (k *kvLooker) worker(ctx context.Context, hist *Histogram) {
	for ctx.Err() == nil {
		if k.lim != nil && k.lim.Wait(ctx) != nil {
			return
		}
		key := fmt.Sprintf("k-%06d", rand.IntN(k.cfg.KeySpace))
		start := time.Now()
		status, err := k.lookup(ctx, key)
		elapsed := time.Since(start)
		if err != nil {
			if ctx.Err() == nil {
				k.errs.Add("kv", err)
			}
			continue
		}
		switch status {
		case http.StatusOK:
			k.c.hits.Add(1)
		case http.StatusNotFound:
			k.c.misses.Add(1)
		default:
			k.errs.AddKind(fmt.Sprintf("kv: http %d", status))
			continue
		}
		k.c.lookups.Add(1)
		if !start.Before(k.warmupEnd) {
			k.c.measured.Add(1)
			hist.Record(elapsed)
		}
	}
}

// lookup GETs one key and reads the whole answer, so that latency covers
// the value and the connection is reused.
func (k *kvLooker) lookup(ctx context.Context, key string) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, k.cfg.KVTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, k.base+url.PathEscape(key), nil)
	if err != nil {
		return 0, err
	}
	resp, err := k.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return 0, err
	}
	return resp.StatusCode, nil
}
