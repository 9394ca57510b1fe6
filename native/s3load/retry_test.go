package main

// Transient answers are retried as the SDKs do and every retry is counted: in the record of the
// request (retries, retry_error) and in the phase's counters, apart from successes and failures.

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"
)

const slowDown = `<?xml version="1.0" encoding="UTF-8"?><Error><Code>SlowDown</Code>` +
	`<Message>Please reduce your request rate.</Message></Error>`

// throttling answers 503 SlowDown to the first `first` requests, then as S3 would.
func throttling(first int) *recorder {
	return &recorder{answer: func(n int, _ seen, w http.ResponseWriter) bool {
		if n > first {
			return false
		}
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprint(w, slowDown)
		return true
	}}
}

func quickRetries(cfg *Config, attempts int) *Config {
	cfg.MaxAttempts, cfg.RetryBaseS = attempts, 0.001
	return cfg
}

func TestSlowDownIsRetriedAndCounted(t *testing.T) {
	rec := throttling(2)
	records, counters := runAgainst(t, rec, quickRetries(&Config{Op: "put", Objects: 3, ObjectSize: 100}, 3))
	if counters.ops.Load() != 3 || counters.errors.Load() != 0 || counters.retried.Load() != 1 ||
		counters.retries.Load() != 2 {
		t.Fatalf("ops %d errors %d retried %d retries %d", counters.ops.Load(), counters.errors.Load(),
			counters.retried.Load(), counters.retries.Load())
	}
	first := records[0]
	if first["key"] != "0" || first["retries"] != "2" || first["retry_error"] != "SlowDown" || first["error"] != "" {
		t.Errorf("the throttled request's record: %v", first)
	}
	if records[1]["retries"] != "0" || records[1]["retry_error"] != "" {
		t.Errorf("a request answered at once: %v", records[1])
	}
	if len(rec.all()) != 5 {
		t.Errorf("%d requests reached the server, want 3 + 2 retries", len(rec.all()))
	}
}

func TestALastSlowDownIsAFailureWithItsRetriesCounted(t *testing.T) {
	rec := throttling(100)
	records, counters := runAgainst(t, rec, quickRetries(&Config{Op: "get", Objects: 1, ObjectSize: 100}, 3))
	if counters.ops.Load() != 0 || counters.errors.Load() != 1 || counters.retries.Load() != 2 {
		t.Fatalf("ops %d errors %d retries %d", counters.ops.Load(), counters.errors.Load(), counters.retries.Load())
	}
	if r := records[0]; r["error"] != "SlowDown" || r["status"] != "503" || r["retries"] != "2" {
		t.Errorf("record %v", r)
	}
}

func TestOneAttemptMeansNoRetry(t *testing.T) {
	rec := throttling(1)
	records, counters := runAgainst(t, rec, quickRetries(&Config{Op: "delete", Objects: 2, ObjectSize: 1}, 1))
	if counters.errors.Load() != 1 || counters.ops.Load() != 1 || counters.retried.Load() != 0 {
		t.Fatalf("errors %d ops %d retried %d", counters.errors.Load(), counters.ops.Load(), counters.retried.Load())
	}
	if records[0]["error"] != "SlowDown" || len(rec.all()) != 2 {
		t.Errorf("records %v, %d requests", records, len(rec.all()))
	}
}

func TestAMultipartUploadCountsTheRetriesOfEachStep(t *testing.T) {
	// The second part is throttled once, and CompleteMultipartUpload first answers 200 with an
	// error in its body (S3 may): both are retried, both counted in the upload's one record.
	parts, completes := 0, 0
	rec := &recorder{answer: func(_ int, r seen, w http.ResponseWriter) bool {
		if r.method == http.MethodPut && r.query["partNumber"] == "2" {
			if parts++; parts == 1 {
				w.WriteHeader(http.StatusServiceUnavailable)
				fmt.Fprint(w, slowDown)
				return true
			}
		}
		if r.method == http.MethodPost && r.has("uploadId") {
			if completes++; completes == 1 {
				fmt.Fprint(w, `<Error><Code>InternalError</Code><Message>try again</Message></Error>`)
				return true
			}
		}
		return false
	}}
	cfg := &Config{Op: "put", Objects: 1, ObjectSize: 6 << 20, MultipartThreshold: 5 << 20, PartSize: 5 << 20}
	records, counters := runAgainst(t, rec, quickRetries(cfg, 3))
	if r := records[0]; r["error"] != "" || r["retries"] != "2" || r["retry_error"] != "InternalError" {
		t.Errorf("record %v", r)
	}
	if counters.ops.Load() != 1 || counters.retried.Load() != 1 || counters.retries.Load() != 2 {
		t.Errorf("ops %d retried %d retries %d", counters.ops.Load(), counters.retried.Load(), counters.retries.Load())
	}
	if parts != 2 || completes != 2 {
		t.Errorf("part 2 sent %d times, complete %d times", parts, completes)
	}
}

func TestAnAnswerThatNeverCameIsNotRetried(t *testing.T) {
	// A connection closed without an answer is the endpoint failing: shown, not ridden out.
	rec := &recorder{answer: func(_ int, _ seen, w http.ResponseWriter) bool {
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close()
		}
		return true
	}}
	records, counters := runAgainst(t, rec, quickRetries(&Config{Op: "get", Objects: 1, ObjectSize: 100}, 3))
	if counters.errors.Load() != 1 || counters.retried.Load() != 0 || records[0]["retries"] != "0" {
		t.Errorf("errors %d retried %d, record %v", counters.errors.Load(), counters.retried.Load(), records[0])
	}
	if len(rec.all()) != 1 {
		t.Errorf("%d requests, want 1", len(rec.all()))
	}
}

func TestBackoffDoublesUpToItsCap(t *testing.T) {
	policy := RetryPolicy{Attempts: 10, Base: time.Second}
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second,
		20 * time.Second, 20 * time.Second}
	for i, limit := range want {
		if got := policy.backoff(i + 1); got != limit {
			t.Errorf("retry %d waits up to %v, want %v", i+1, got, limit)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if policy.wait(ctx, 1) {
		t.Errorf("a wait went on after its context ended")
	}
}
