package main

// The mixed phase, as warp's: every request is a PUT, GET, LIST or DELETE, drawn by the
// worker's own generator in the shares of "mix". GETs read the objects the put phase wrote
// (which nothing here deletes, so a GET never misses); PUTs write new objects from
// first_new_key on; DELETEs remove objects this phase PUT (oldest first); a DELETE with none
// to remove yet becomes a PUT. LIST reads one page (up to 1000 keys) of the run's prefix.

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

var mixOps = []string{"put", "get", "list", "delete"}

func validateMix(cfg *Config) error {
	total := int64(0)
	for op, share := range cfg.Mix {
		known := false
		for _, name := range mixOps {
			known = known || name == op
		}
		if !known || share < 0 {
			return fmt.Errorf("mix: %q is not put, get, list or delete with a share of 0 or more", op)
		}
		total += share
	}
	if total <= 0 {
		return fmt.Errorf("mix: the shares add up to nothing")
	}
	if cfg.Objects <= 0 {
		return fmt.Errorf("mixed needs the put phase's objects to GET")
	}
	return nil
}

type mixPicker struct {
	keys      []int64
	limit     int64 // requests in all; 0: until the deadline
	newKey    atomic.Int64
	shares    []int64 // cumulative, in mixOps order
	mu        sync.Mutex
	deletable []int64 // objects this phase PUT, oldest first
}

func newMixPicker(cfg *Config, keys []int64) *mixPicker {
	p := &mixPicker{keys: keys}
	if cfg.DurationS <= 0 {
		p.limit = int64(len(keys))
	}
	p.newKey.Store(cfg.FirstNewKey)
	total := int64(0)
	for _, op := range mixOps {
		total += cfg.Mix[op]
		p.shares = append(p.shares, total)
	}
	return p
}

func (p *mixPicker) next(n int64, w *worker) (string, int64, bool) {
	if p.limit > 0 && n >= p.limit {
		return "", 0, false
	}
	w.rand += gamma
	draw := int64(wyword(w.rand) % uint64(p.shares[len(p.shares)-1]))
	op := mixOps[0]
	for i, bound := range p.shares {
		if draw < bound {
			op = mixOps[i]
			break
		}
	}
	switch op {
	case "get":
		return op, p.keys[int64(wyword(w.rand^0x77)%uint64(len(p.keys)))], true
	case "list":
		return op, -1, true
	case "delete":
		p.mu.Lock()
		defer p.mu.Unlock()
		if len(p.deletable) > 0 {
			key := p.deletable[0]
			p.deletable = p.deletable[1:]
			return op, key, true
		}
	}
	return "put", p.newKey.Add(1) - 1, true
}

func (p *mixPicker) done(op string, key int64, ok bool) {
	if op == "put" && ok {
		p.mu.Lock()
		p.deletable = append(p.deletable, key)
		p.mu.Unlock()
	}
}

func (ph *phase) list(ctx context.Context, rec *Record) {
	rec.Start = time.Since(ph.start).Nanoseconds()
	query := map[string]string{"list-type": "2", "max-keys": "1000", "prefix": ph.cfg.Prefix}
	status, data, _, err := ph.client.exchange(ctx, http.MethodGet, "", query, nil, nil, &rec.Tries)
	rec.Status = int32(status)
	if err == nil && status >= 300 {
		err = responseError(&http.Response{StatusCode: status}, data)
	}
	if err != nil {
		fail(rec, err, ph.start)
		return
	}
	rec.End = time.Since(ph.start).Nanoseconds()
}
