// Command backupbench-s3load is the S3 load generator behind backupbench's s3 workload.
//
//	backupbench-s3load CONFIG.json
//	backupbench-s3load --version
//
// backupbench (Python) decides what to do and why; this program only does S3 requests fast
// and records each one. The config file is JSON without secrets; credentials come only from
// the environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN) and are
// never printed. Events are JSON lines on stdout. Ops:
//
//	probe          is the endpoint reachable, the bucket there (and empty), our prefix unused?
//	create-bucket  create the bucket
//	delete-bucket  delete the bucket (S3 refuses when it holds any object)
//	put, get, delete  a measured phase over keys <prefix>obj-%08d; one record per request
//	               goes to the gzip CSV named by "records"
//	delete-prefix  delete every object under the prefix, and only those
//
// Anything that writes or deletes objects needs a prefix backupbench/<run-id>/: this program
// refuses to touch any other key. Exit codes: 0 done (per-request errors are in the records),
// 2 bad config, 3 an S3 or network error ended the op (an "error" event names it),
// 130 interrupted (SIGINT/SIGTERM; the records so far are still written).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"regexp"
	"syscall"
	"time"
)

const version = "0.1.0"

type Config struct {
	Op              string  `json:"op"`
	Endpoint        string  `json:"endpoint"`
	Bucket          string  `json:"bucket"`
	Region          string  `json:"region"`
	Prefix          string  `json:"prefix"`
	InsecureTLS     bool    `json:"insecure_tls"`
	CAFile          string  `json:"ca_file"`
	ObjectSize      int64   `json:"object_size"`
	Concurrency     int     `json:"concurrency"`
	Objects         int64   `json:"objects"`
	DurationS       float64 `json:"duration_s"`
	Skip            []int64 `json:"skip"`
	Records         string  `json:"records"`
	RequestTimeoutS float64 `json:"request_timeout_s"`
	ConnectTimeoutS float64 `json:"connect_timeout_s"`
	ProgressS       float64 `json:"progress_interval_s"`
}

var (
	prefixRe = regexp.MustCompile(`^backupbench/[A-Za-z0-9][A-Za-z0-9._-]{0,99}/$`)
	bucketRe = regexp.MustCompile(`^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$`)
)

func validateConfig(cfg *Config) error {
	if !bucketRe.MatchString(cfg.Bucket) {
		return fmt.Errorf("bucket %q is not a valid S3 bucket name", cfg.Bucket)
	}
	if cfg.Region == "" {
		cfg.Region = "us-east-1"
	}
	switch cfg.Op {
	case "probe", "create-bucket", "delete-bucket":
		if cfg.Prefix != "" && !prefixRe.MatchString(cfg.Prefix) {
			return fmt.Errorf("prefix %q is not backupbench/<run-id>/", cfg.Prefix)
		}
		return nil
	case "put", "get", "delete", "delete-prefix":
	default:
		return fmt.Errorf("unknown op %q", cfg.Op)
	}
	// Never write or delete outside backupbench/<run-id>/.
	if !prefixRe.MatchString(cfg.Prefix) {
		return fmt.Errorf("prefix %q is not backupbench/<run-id>/: refusing to touch other keys", cfg.Prefix)
	}
	if cfg.Op == "delete-prefix" {
		return nil
	}
	if cfg.Concurrency < 1 || cfg.Concurrency > 10000 {
		return fmt.Errorf("concurrency must be 1..10000")
	}
	if cfg.Records == "" {
		return fmt.Errorf("records: a file for the per-operation records is needed")
	}
	if cfg.Op == "put" && cfg.ObjectSize < 1 {
		return fmt.Errorf("object_size must be at least 1 byte")
	}
	if cfg.Objects <= 0 && (cfg.DurationS <= 0 || cfg.Op != "put") {
		return fmt.Errorf("objects must be given (and duration_s for a timed put)")
	}
	return nil
}

func emit(event map[string]any) {
	data, _ := json.Marshal(event)
	os.Stdout.Write(append(data, '\n'))
}

func emitError(err error) {
	var opErr *OpError
	if !errors.As(err, &opErr) {
		opErr = classify(err)
	}
	emit(map[string]any{"event": "error", "kind": opErr.Kind, "status": opErr.Status, "message": opErr.Message})
}

func main() {
	if len(os.Args) == 2 && os.Args[1] == "--version" {
		fmt.Println("backupbench-s3load", version)
		return
	}
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: backupbench-s3load CONFIG.json (credentials in AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY)")
		os.Exit(2)
	}
	os.Exit(run(os.Args[1]))
}

func run(configPath string) int {
	var cfg Config
	data, err := os.ReadFile(configPath)
	if err == nil {
		err = json.Unmarshal(data, &cfg)
	}
	if err == nil {
		err = validateConfig(&cfg)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bad config:", err)
		return 2
	}
	access, secret := os.Getenv("AWS_ACCESS_KEY_ID"), os.Getenv("AWS_SECRET_ACCESS_KEY")
	if access == "" || secret == "" {
		fmt.Fprintln(os.Stderr, "bad config: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY must be set in the environment")
		return 2
	}
	signer := NewSigner(access, secret, os.Getenv("AWS_SESSION_TOKEN"), cfg.Region)
	client, err := NewClient(&cfg, signer)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bad config:", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	switch cfg.Op {
	case "probe":
		err = probe(ctx, &cfg, client)
	case "create-bucket":
		err = client.CreateBucket(ctx, cfg.Region)
		if err == nil {
			emit(map[string]any{"event": "done", "created": true})
		} else if opErr, ok := err.(*OpError); ok && opErr.Kind == "BucketAlreadyOwnedByYou" {
			emit(map[string]any{"event": "done", "created": false})
			err = nil
		}
	case "delete-bucket":
		err = client.DeleteBucket(ctx)
		if err == nil {
			emit(map[string]any{"event": "done"})
		}
	case "delete-prefix":
		err = deletePrefix(ctx, &cfg, client)
	default:
		return measure(ctx, &cfg, client)
	}
	if err != nil {
		emitError(err)
		if ctx.Err() != nil {
			return 130
		}
		return 3
	}
	return 0
}

// probe answers, within the connect and request timeouts: can we reach the endpoint and
// sign requests it accepts; does the bucket exist; does it hold any object; does it hold any
// under our prefix. Listing one key is the cheapest request whose error names the cause
// (a HEAD answer has no body to say InvalidAccessKeyId from SignatureDoesNotMatch).
func probe(ctx context.Context, cfg *Config, client *Client) error {
	started := time.Now()
	result := map[string]any{"event": "probe", "bucket_exists": true}
	keys, _, err := client.List(ctx, "", 1, "")
	if err != nil {
		var opErr *OpError
		if errors.As(err, &opErr) && opErr.Kind == "NoSuchBucket" {
			result["bucket_exists"] = false
			result["seconds"] = time.Since(started).Seconds()
			emit(result)
			return nil
		}
		return err
	}
	result["bucket_empty"] = len(keys) == 0
	if cfg.Prefix != "" {
		mine, _, err := client.List(ctx, cfg.Prefix, 1, "")
		if err != nil {
			return err
		}
		result["prefix_empty"] = len(mine) == 0
	}
	result["seconds"] = time.Since(started).Seconds()
	emit(result)
	return nil
}

// deletePrefix lists the prefix page by page and deletes what it lists, 1000 keys per
// request; it checks each key carries the prefix before deleting it.
func deletePrefix(ctx context.Context, cfg *Config, client *Client) error {
	deleted, failed := 0, 0
	var firstErr error
	for round := 0; round < 3; round++ {
		token := ""
		for {
			keys, next, err := client.List(ctx, cfg.Prefix, 1000, token)
			if err != nil {
				return err
			}
			mine := keys[:0]
			for _, key := range keys {
				if len(key) > len(cfg.Prefix) && key[:len(cfg.Prefix)] == cfg.Prefix {
					mine = append(mine, key)
				}
			}
			if len(mine) > 0 {
				n, err := client.DeleteKeys(ctx, mine)
				deleted += len(mine) - n
				failed += n
				if err != nil && firstErr == nil {
					firstErr = err
				}
			}
			if next == "" {
				break
			}
			token = next
		}
		// Listing is eventually consistent on some stores: look again until nothing is left.
		left, _, err := client.List(ctx, cfg.Prefix, 1, "")
		if err != nil {
			return err
		}
		if len(left) == 0 {
			emit(map[string]any{"event": "done", "deleted": deleted, "failed": failed, "left": 0})
			return nil
		}
	}
	if firstErr != nil {
		return firstErr
	}
	emit(map[string]any{"event": "done", "deleted": deleted, "failed": failed, "left": 1})
	return nil
}

func measure(ctx context.Context, cfg *Config, client *Client) int {
	var counters Counters
	interval := seconds(cfg.ProgressS, 0.5)
	done := make(chan struct{})
	started := time.Now()
	go func() {
		ticker := time.NewTicker(interval)
		defer ticker.Stop()
		for {
			select {
			case <-done:
				return
			case <-ticker.C:
				emit(map[string]any{"event": "progress", "elapsed_s": time.Since(started).Seconds(),
					"ops": counters.ops.Load(), "bytes": counters.bytes.Load(), "errors": counters.errors.Load()})
			}
		}
	}()
	result, err := runPhase(ctx, cfg, client, &counters)
	close(done)
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		return 1
	}
	emit(map[string]any{"event": "done", "op": cfg.Op, "wall_ns": result.WallNs, "records": result.Records,
		"ops": counters.ops.Load(), "bytes": counters.bytes.Load(), "errors": counters.errors.Load(),
		"interrupted": result.Interrupted})
	if result.Interrupted {
		return 130
	}
	return 0
}
