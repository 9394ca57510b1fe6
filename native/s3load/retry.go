package main

// Retries, as the AWS SDKs' standard retry mode makes them: an answer of 429, 500, 502, 503 or
// 504 (S3's SlowDown, InternalError, ServiceUnavailable, a gateway's timeout) is sent again, up
// to max_attempts attempts in all (default 3, the SDKs' default), after a wait drawn at random
// between 0 and retry_base_s * 2^(retry-1) seconds, at most 20 s ("full jitter" exponential
// backoff). A request that got no answer at all (refused, reset, timed out) is not retried: that
// is the endpoint or the network failing, which a benchmark must show rather than ride out.
//
// Nothing is retried silently: a measured request's record says how many times it was sent
// again and what answer made it (retries, retry_error), and the progress and done events count
// retried requests apart from the ones that succeeded and failed. A request still answered 503
// after its last attempt is a failure like any other, recorded with its code.

import (
	"context"
	"math/rand/v2"
	"net/http"
	"time"
)

const (
	defaultAttempts = 3
	defaultBackoff  = time.Second
	maxBackoff      = 20 * time.Second
)

// RetryPolicy is how often and how patiently a transient answer is retried.
type RetryPolicy struct {
	Attempts int           // requests in all, the first included; 1: never retry
	Base     time.Duration // the first retry waits up to Base, each further one up to twice as long
}

func retryPolicy(cfg *Config) RetryPolicy {
	policy := RetryPolicy{Attempts: cfg.MaxAttempts, Base: seconds(cfg.RetryBaseS, defaultBackoff.Seconds())}
	if policy.Attempts <= 0 {
		policy.Attempts = defaultAttempts
	}
	return policy
}

// transientStatus: an answer the SDKs retry, whatever its S3 code (SlowDown and
// ServiceUnavailable come as 503, InternalError as 500, throttling elsewhere as 429).
func transientStatus(status int) bool {
	switch status {
	case http.StatusTooManyRequests, http.StatusInternalServerError, http.StatusBadGateway,
		http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}

// transientCode: an error code S3 may put in a 200 answer to CompleteMultipartUpload, which
// the SDKs retry as they would the same code with its own status.
func transientCode(code string) bool {
	switch code {
	case "SlowDown", "InternalError", "ServiceUnavailable", "RequestTimeout", "Throttling", "ThrottlingException":
		return true
	}
	return false
}

// backoff is the longest wait before retry n (1 for the first).
func (p RetryPolicy) backoff(n int) time.Duration {
	limit := p.Base
	for i := 1; i < n && limit < maxBackoff; i++ {
		limit *= 2
	}
	return min(limit, maxBackoff)
}

// wait sleeps before retry n; false when ctx ended first.
func (p RetryPolicy) wait(ctx context.Context, n int) bool {
	limit := p.backoff(n)
	if limit <= 0 {
		return ctx.Err() == nil
	}
	timer := time.NewTimer(time.Duration(rand.Int64N(int64(limit) + 1)))
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-timer.C:
		return true
	}
}

// Tries is what one logical request (a PUT, a GET, a whole multipart upload) was retried for.
type Tries struct {
	Retries int32
	Kind    string // the answer that made the last retry: an S3 code (SlowDown) or http-503
}

func (t *Tries) note(kind string) {
	if t != nil {
		t.Retries++
		t.Kind = kind
	}
}
