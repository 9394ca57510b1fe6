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
//	mixed          a measured phase of PUT, GET, LIST and DELETE in the shares of "mix"
//	lock-check     for a few locked objects: is DELETE of the version refused, and is the
//	               version kept after an overwrite then its DELETE?
//	delete-prefix  delete every object under the prefix, and only those (every version of
//	               them with "versions"; objects under compliance retention are reported)
//
// Anything that writes or deletes objects needs a prefix backupbench/<run-id>/ or
// backupbench/<run-id>/<label>/ (one per agent of a run from several hosts, so the run's own
// prefix covers every agent's objects): this program refuses to touch any other key. Exit codes: 0 done (per-request errors are in the records),
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
	// Retries of a transient answer (retry.go): attempts in all (0: the SDKs' 3), and the
	// longest wait before the first retry (0: 1 s).
	MaxAttempts int     `json:"max_attempts"`
	RetryBaseS  float64 `json:"retry_base_s"`

	// What the objects hold and how big they are (content.go).
	Seed          uint64 `json:"seed"`
	Data          string `json:"data"`
	Compress      int64  `json:"compress"`
	Dedupe        int64  `json:"dedupe"`
	Pattern       int    `json:"pattern"`
	ObjectSizeMax int64  `json:"object_size_max"` // > object_size: uniform sizes between the two
	// Objects over the threshold go up in parts of part_size (multipart.go); 0: never.
	MultipartThreshold int64 `json:"multipart_threshold"`
	PartSize           int64 `json:"part_size"`
	// S3 Object Lock (lock.go): mode GOVERNANCE or COMPLIANCE on every PUT, for retention_s.
	LockMode   string  `json:"lock_mode"`
	RetentionS float64 `json:"retention_s"`
	Checksum   bool    `json:"checksum"`    // x-amz-checksum-crc32c on every PUT (always with a lock)
	ObjectLock bool    `json:"object_lock"` // create-bucket: with object lock; probe: report it
	Versions   bool    `json:"versions"`    // delete-prefix: every version, governance bypassed
	// mixed (mixed.go): shares of put, get, list, delete; new objects from first_new_key on.
	Mix         map[string]int64 `json:"mix"`
	FirstNewKey int64            `json:"first_new_key"`
	Keys        []int64          `json:"keys"` // lock-check: the objects to try
}

func (cfg *Config) content() *Content {
	return &Content{Kind: cfg.Data, Compress: cfg.Compress, Dedupe: cfg.Dedupe, Pattern: byte(cfg.Pattern),
		Seed: cfg.Seed, SizeMin: cfg.ObjectSize, SizeMax: cfg.ObjectSizeMax}
}

var (
	// A part starts with a letter or digit, so never '.', '..' or empty.
	prefixRe = regexp.MustCompile(`^backupbench/[A-Za-z0-9][A-Za-z0-9._-]{0,99}/(?:[A-Za-z0-9][A-Za-z0-9._-]{0,99}/)?$`)
	bucketRe = regexp.MustCompile(`^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$`)
)

func validateConfig(cfg *Config) error {
	if !bucketRe.MatchString(cfg.Bucket) {
		return fmt.Errorf("bucket %q is not a valid S3 bucket name", cfg.Bucket)
	}
	if cfg.Region == "" {
		cfg.Region = "us-east-1"
	}
	if cfg.MaxAttempts < 0 || cfg.MaxAttempts > 10 || cfg.RetryBaseS < 0 {
		return fmt.Errorf("max_attempts must be 0..10 and retry_base_s 0 or more")
	}
	switch cfg.Op {
	case "probe", "create-bucket", "delete-bucket":
		if cfg.Prefix != "" && !prefixRe.MatchString(cfg.Prefix) {
			return fmt.Errorf("prefix %q is not backupbench/<run-id>/ or backupbench/<run-id>/<label>/", cfg.Prefix)
		}
		return nil
	case "put", "get", "delete", "delete-prefix", "mixed", "lock-check":
	default:
		return fmt.Errorf("unknown op %q", cfg.Op)
	}
	// Never write or delete outside backupbench/<run-id>/.
	if !prefixRe.MatchString(cfg.Prefix) {
		return fmt.Errorf("prefix %q is not backupbench/<run-id>/ or backupbench/<run-id>/<label>/: "+
			"refusing to touch other keys", cfg.Prefix)
	}
	if cfg.Op == "delete-prefix" {
		return nil
	}
	if err := validateContent(cfg); err != nil {
		return err
	}
	if cfg.Op == "lock-check" {
		if len(cfg.Keys) == 0 || cfg.LockMode == "" {
			return fmt.Errorf("lock-check needs keys and lock_mode")
		}
		return nil
	}
	if cfg.Concurrency < 1 || cfg.Concurrency > 10000 {
		return fmt.Errorf("concurrency must be 1..10000")
	}
	if cfg.Records == "" {
		return fmt.Errorf("records: a file for the per-operation records is needed")
	}
	if cfg.Op == "mixed" {
		return validateMix(cfg)
	}
	if cfg.Objects <= 0 && (cfg.DurationS <= 0 || cfg.Op != "put") {
		return fmt.Errorf("objects must be given (and duration_s for a timed put)")
	}
	return nil
}

func validateContent(cfg *Config) error {
	switch cfg.Data {
	case "":
		cfg.Data = "incompressible"
	case "incompressible", "compressible", "pattern":
	default:
		return fmt.Errorf("data %q is not incompressible, compressible or pattern", cfg.Data)
	}
	if cfg.Compress < 0 || cfg.Compress > 99 || cfg.Dedupe < 0 || cfg.Dedupe > 100 || cfg.Pattern < 0 || cfg.Pattern > 255 {
		return fmt.Errorf("compress must be 0..99, dedupe 0..100, pattern 0..255")
	}
	if cfg.ObjectSize < 1 || (cfg.ObjectSizeMax != 0 && cfg.ObjectSizeMax < cfg.ObjectSize) {
		return fmt.Errorf("object_size must be at least 1 byte and object_size_max at least object_size")
	}
	if cfg.MultipartThreshold > 0 && (cfg.PartSize < 5<<20 || cfg.PartSize > 5<<30) {
		return fmt.Errorf("part_size must be 5 MiB..5 GiB")
	}
	switch cfg.LockMode {
	case "":
	case "GOVERNANCE", "COMPLIANCE":
		if cfg.RetentionS <= 0 {
			return fmt.Errorf("lock_mode needs retention_s")
		}
	default:
		return fmt.Errorf("lock_mode %q is not GOVERNANCE or COMPLIANCE", cfg.LockMode)
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
	emit(map[string]any{"event": "error", "kind": opErr.Kind, "status": opErr.Status, "message": opErr.Message,
		"stage": opErr.Stage, "not_s3": opErr.NotS3})
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
		err = client.CreateBucket(ctx, cfg.Region, cfg.ObjectLock)
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
		if cfg.Versions {
			err = deleteVersions(ctx, &cfg, client)
		} else {
			err = deletePrefix(ctx, &cfg, client)
		}
	case "lock-check":
		err = lockCheck(ctx, &cfg, client)
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
		if errors.As(err, &opErr) && opErr.NotS3 {
			// The check must prove the server speaks S3: an answer without S3's error body is no proof.
			return &OpError{Kind: "not-s3", Status: opErr.Status, Message: opErr.Message, NotS3: true}
		}
		return err
	}
	result["bucket_empty"] = len(keys) == 0
	if cfg.ObjectLock {
		enabled, err := client.LockEnabled(ctx)
		if err != nil {
			return err
		}
		result["object_lock"] = enabled
	}
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
// request; it checks each key carries the prefix before deleting it. The listing has no
// delimiter, so it is recursive: a run's prefix takes its agents' prefixes below it too.
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
				failures, err := client.DeleteKeys(ctx, versionsOf(mine), false)
				deleted += len(mine) - len(failures)
				failed += len(failures)
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
			aborted, err := abortUploads(ctx, cfg, client)
			if err != nil {
				return err
			}
			emit(map[string]any{"event": "done", "deleted": deleted, "failed": failed, "left": 0, "aborted": aborted})
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
					"ops": counters.ops.Load(), "bytes": counters.bytes.Load(), "errors": counters.errors.Load(),
					"retried": counters.retried.Load()})
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
		"retried": counters.retried.Load(), "retries": counters.retries.Load(),
		"start_unix_ns": result.StartUnixNs, "interrupted": result.Interrupted})
	if result.Interrupted {
		return 130
	}
	return 0
}
