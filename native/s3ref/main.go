// Command backupbench-s3ref is the reference S3 load generator of bench/s3.py: the plainest
// fast client one would write with minio-go, the library warp and mc are built on.
//
//	backupbench-s3ref -endpoint http://127.0.0.1:9000 -bucket B -prefix P/ -op put|get \
//	    -size 1048576 -concurrency 32 -objects 2000
//
// Credentials come from AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY. Keys are P + ref-%08d.
// It prints one JSON line: op, ops, errors, bytes, wall_ns. It is tuned to be a strong
// reference: payload SHA-256 disabled (UNSIGNED-PAYLOAD, as backupbench-s3load does; minio-go
// would otherwise hash every byte over plain HTTP), one shared random buffer, idle
// connections for every worker, and GET bodies read with a large buffer.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand"
	"net/url"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

func main() {
	endpoint := flag.String("endpoint", "", "http(s)://host:port")
	bucket := flag.String("bucket", "", "bucket")
	prefix := flag.String("prefix", "", "key prefix")
	op := flag.String("op", "put", "put or get")
	size := flag.Int64("size", 1<<20, "object size in bytes")
	concurrency := flag.Int("concurrency", 32, "parallel streams")
	objects := flag.Int64("objects", 1000, "objects to put or get")
	flag.Parse()

	u, err := url.Parse(*endpoint)
	if err != nil || u.Host == "" {
		fmt.Fprintln(os.Stderr, "bad -endpoint")
		os.Exit(2)
	}
	transport, _ := minio.DefaultTransport(u.Scheme == "https")
	transport.MaxIdleConns = *concurrency * 2
	transport.MaxIdleConnsPerHost = *concurrency * 2
	transport.DisableCompression = true
	client, err := minio.New(u.Host, &minio.Options{
		Creds:     credentials.NewStaticV4(os.Getenv("AWS_ACCESS_KEY_ID"), os.Getenv("AWS_SECRET_ACCESS_KEY"), ""),
		Secure:    u.Scheme == "https",
		Transport: transport,
		Region:    "us-east-1",
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	payload := make([]byte, *size)
	rand.New(rand.NewSource(time.Now().UnixNano())).Read(payload)

	var next, ops, errs, nbytes atomic.Int64
	var firstErr atomic.Value
	ctx := context.Background()
	start := time.Now()
	var wg sync.WaitGroup
	for w := 0; w < *concurrency; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 256<<10)
			for {
				i := next.Add(1) - 1
				if i >= *objects {
					return
				}
				key := fmt.Sprintf("%sref-%08d", *prefix, i)
				var n int64
				var err error
				if *op == "put" {
					_, err = client.PutObject(ctx, *bucket, key, bytes.NewReader(payload), *size,
						minio.PutObjectOptions{DisableContentSha256: true, ContentType: "application/octet-stream"})
					n = *size
				} else {
					var obj *minio.Object
					obj, err = client.GetObject(ctx, *bucket, key, minio.GetObjectOptions{})
					if err == nil {
						n, err = drain(obj, buf)
						obj.Close()
					}
				}
				if err != nil {
					errs.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
					continue
				}
				ops.Add(1)
				nbytes.Add(n)
			}
		}()
	}
	wg.Wait()
	wall := time.Since(start)
	out := map[string]any{"op": *op, "ops": ops.Load(), "errors": errs.Load(), "bytes": nbytes.Load(),
		"wall_ns": wall.Nanoseconds()}
	if e := firstErr.Load(); e != nil {
		out["first_error"] = e
	}
	data, _ := json.Marshal(out)
	fmt.Println(string(data))
}

// drain reads r to its end into buf, a large buffer, and returns the byte count.
func drain(r io.Reader, buf []byte) (int64, error) {
	var total int64
	for {
		n, err := r.Read(buf)
		total += int64(n)
		if err == io.EOF {
			return total, nil
		}
		if err != nil {
			return total, err
		}
	}
}
