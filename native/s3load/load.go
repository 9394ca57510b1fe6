package main

// The measured phases: PUT, GET, DELETE (and mixed: mixed.go) of objects by `concurrency`
// workers. Each object's size and bytes are a function of the run's seed and its number
// (content.go), so GET knows what size to expect without being told per object.
//
// Each worker takes the next object number from a shared counter, does one request and keeps
// one record in its own slice (no locks, no I/O on the hot path). A full slice (4096
// records) goes to one writer goroutine that appends it, compressed, to the records file, so
// memory stays bounded however long the phase runs; that costs well under 1% of a core.

import (
	"bufio"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Record is one operation; times are nanoseconds since the phase started (monotonic clock).
type Record struct {
	Key       int64
	Start     int64
	FirstByte int64 // -1: no response arrived
	End       int64
	Bytes     int64
	Status    int32
	Worker    int32
	Error     string // "" when the operation succeeded
	Op        string // put, get, list, delete: a mixed phase has them all
	Tries     Tries  // how often it was sent again, and why (retry.go)
}

const recordHeader = "op,key,worker,start_ns,first_byte_ns,end_ns,bytes,status,error,retries,retry_error\n"

// Counters: requests that succeeded, that failed, and (apart from both) that were retried.
type Counters struct {
	ops, bytes, errors, retried, retries atomic.Int64
}

func (c *Counters) count(rec *Record) {
	if rec.Error == "" {
		c.ops.Add(1)
		c.bytes.Add(rec.Bytes)
	} else {
		c.errors.Add(1)
	}
	if rec.Tries.Retries > 0 {
		c.retried.Add(1)
		c.retries.Add(int64(rec.Tries.Retries))
	}
}

type PhaseResult struct {
	Records     int64
	WallNs      int64
	StartUnixNs int64 // the phase's time 0 by the wall clock: N agents' phases are lined up by it
	Interrupted bool
}

const batchSize = 4096

// keyName is the object name of number i: <prefix>obj-00000042.
func keyName(prefix string, i int64) string {
	return prefix + "obj-" + fmt.Sprintf("%08d", i)
}

// keyList is the object numbers a GET or DELETE phase works on: 0..objects-1 minus skip.
func keyList(objects int64, skip []int64) []int64 {
	skipped := make(map[int64]bool, len(skip))
	for _, k := range skip {
		skipped[k] = true
	}
	keys := make([]int64, 0, objects)
	for i := int64(0); i < objects; i++ {
		if !skipped[i] {
			keys = append(keys, i)
		}
	}
	return keys
}

// picker says what the n-th request of a phase is: its op and object, or that the phase is done.
type picker interface {
	next(n int64, w *worker) (op string, key int64, ok bool)
	done(op string, key int64, ok bool)
}

// onePicker: every request the phase's op, on the next object (put) or the next listed one.
type onePicker struct {
	op    string
	keys  []int64
	limit int64
	timed bool
}

func (p *onePicker) next(n int64, _ *worker) (string, int64, bool) {
	switch {
	case p.op == "put":
		return p.op, n, p.limit <= 0 || n < p.limit
	case p.timed:
		return p.op, p.keys[n%int64(len(p.keys))], true
	case n >= int64(len(p.keys)):
		return p.op, 0, false
	}
	return p.op, p.keys[n], true
}

func (p *onePicker) done(string, int64, bool) {}

// phase is what every worker of a measured phase shares.
type phase struct {
	cfg     *Config
	client  *Client
	content *Content
	start   time.Time
	stamp   uint64 // in every object's unique bytes: no two runs write the same object
}

type worker struct {
	id   int
	buf  []byte
	rand uint64 // the worker's own generator state (mixed: which op next)
}

func newPicker(cfg *Config) (picker, error) {
	timed := cfg.DurationS > 0 && cfg.Op != "delete"
	if cfg.Op == "put" {
		return &onePicker{op: "put", limit: cfg.Objects, timed: timed}, nil
	}
	keys := keyList(cfg.Objects, cfg.Skip)
	if len(keys) == 0 {
		return nil, fmt.Errorf("no objects to %s", cfg.Op)
	}
	if cfg.Op == "mixed" {
		return newMixPicker(cfg, keys), nil
	}
	return &onePicker{op: cfg.Op, keys: keys, timed: timed}, nil
}

func runPhase(ctx context.Context, cfg *Config, client *Client, counters *Counters) (*PhaseResult, error) {
	pick, err := newPicker(cfg)
	if err != nil {
		return nil, err
	}
	sink, err := newRecordSink(cfg.Records, cfg.Op, cfg.Concurrency)
	if err != nil {
		return nil, err
	}
	duration := time.Duration(cfg.DurationS * float64(time.Second))
	timed := duration > 0 && cfg.Op != "delete"
	var next atomic.Int64
	ph := &phase{cfg: cfg, client: client, content: cfg.content(), start: time.Now()}
	ph.stamp = uint64(ph.start.UnixNano())
	deadline := ph.start.Add(duration)
	var wg sync.WaitGroup
	for w := 0; w < cfg.Concurrency; w++ {
		wg.Add(1)
		go func(wk *worker) {
			defer wg.Done()
			recs := make([]Record, 0, batchSize)
			for ctx.Err() == nil {
				if timed && !time.Now().Before(deadline) {
					break
				}
				op, key, ok := pick.next(next.Add(1)-1, wk)
				if !ok {
					break
				}
				rec := Record{Key: key, Worker: int32(wk.id), FirstByte: -1, Op: op}
				ph.do(ctx, op, key, wk, &rec)
				pick.done(op, key, rec.Error == "")
				counters.count(&rec)
				recs = append(recs, rec)
				if len(recs) == batchSize {
					sink.batches <- recs
					recs = make([]Record, 0, batchSize)
				}
			}
			sink.batches <- recs
		}(&worker{id: w, buf: make([]byte, 256<<10), rand: mix64(cfg.Seed ^ uint64(w+1)*gamma)})
	}
	wg.Wait()
	wall := time.Since(ph.start).Nanoseconds()
	written, err := sink.close()
	if err != nil {
		return nil, fmt.Errorf("cannot write the records: %v", err)
	}
	return &PhaseResult{Records: written, WallNs: wall, StartUnixNs: ph.start.UnixNano(), Interrupted: ctx.Err() != nil}, nil
}

// do makes one request of the phase and fills in its record.
func (ph *phase) do(ctx context.Context, op string, key int64, wk *worker, rec *Record) {
	name := keyName(ph.cfg.Prefix, key)
	switch op {
	case "put":
		shape := ph.content.Shape(key)
		if ph.cfg.MultipartThreshold > 0 && shape.Size > ph.cfg.MultipartThreshold {
			ph.putMultipart(ctx, name, key, shape, wk.buf, rec)
		} else {
			ph.put(ctx, name, key, shape, wk.buf, rec)
		}
	case "get":
		doGet(ctx, ph.client, name, ph.content.Shape(key).Size, wk.buf, ph.start, rec)
	case "delete":
		doDelete(ctx, ph.client, name, ph.start, rec)
	case "list":
		ph.list(ctx, rec)
	}
}

func fail(rec *Record, err error, start time.Time) {
	rec.End = time.Since(start).Nanoseconds()
	e := classify(err)
	rec.Error = e.Kind
	if e.Status != 0 {
		rec.Status = int32(e.Status)
	}
}

func (ph *phase) put(ctx context.Context, name string, key int64, shape Shape, buf []byte, rec *Record) {
	rec.Start = time.Since(ph.start).Nanoseconds()
	header := putHeader(ph.cfg, ph.content, key, shape, ph.stamp, buf)
	var timing Timing
	resp, err := ph.client.Send(ctx, ph.bodyRequest(ctx, name, nil, key, shape, 0, shape.Size, header), &timing, &rec.Tries)
	if err != nil {
		fail(rec, err, ph.start)
		return
	}
	finish(resp, rec, &timing, ph.start, shape.Size)
}

// bodyRequest builds, for each attempt, a signed PUT of bytes [off, end) of object key,
// generated afresh (the same bytes every time: content.go).
func (ph *phase) bodyRequest(ctx context.Context, name string, query map[string]string, key int64, shape Shape,
	off, end int64, header http.Header) func() (*http.Request, error) {
	return func() (*http.Request, error) {
		body := ph.content.Body(key, shape, off, end, ph.stamp)
		req, err := ph.client.Request(ctx, http.MethodPut, name, query, body, end-off, header)
		if err != nil {
			return nil, err
		}
		// Lets the transport resend the body on a kept-alive connection the server had closed.
		req.GetBody = func() (io.ReadCloser, error) {
			return io.NopCloser(ph.content.Body(key, shape, off, end, ph.stamp)), nil
		}
		return req, nil
	}
}

// finish reads a small answer (PUT, DELETE) and completes the record.
func finish(resp *http.Response, rec *Record, timing *Timing, start time.Time, okBytes int64) {
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	rec.Status = int32(resp.StatusCode)
	if !timing.FirstByte.IsZero() {
		rec.FirstByte = timing.FirstByte.Sub(start).Nanoseconds()
	}
	if err != nil {
		fail(rec, err, start)
		return
	}
	rec.End = time.Since(start).Nanoseconds()
	if resp.StatusCode >= 300 {
		rec.Error = responseError(resp, data).Kind
		return
	}
	rec.Bytes = okBytes
}

// bodiless builds, for each attempt, a signed request without a body.
func bodiless(ctx context.Context, client *Client, method, name string) func() (*http.Request, error) {
	return func() (*http.Request, error) { return client.Request(ctx, method, name, nil, nil, 0, nil) }
}

func doGet(ctx context.Context, client *Client, name string, size int64, buf []byte, start time.Time, rec *Record) {
	rec.Start = time.Since(start).Nanoseconds()
	var timing Timing
	resp, err := client.Send(ctx, bodiless(ctx, client, http.MethodGet, name), &timing, &rec.Tries)
	if err != nil {
		fail(rec, err, start)
		return
	}
	rec.Status = int32(resp.StatusCode)
	if !timing.FirstByte.IsZero() {
		rec.FirstByte = timing.FirstByte.Sub(start).Nanoseconds()
	}
	if resp.StatusCode >= 300 {
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
		rec.End = time.Since(start).Nanoseconds()
		rec.Error = responseError(resp, data).Kind
		return
	}
	var got int64
	for {
		n, err := resp.Body.Read(buf)
		got += int64(n)
		if err == io.EOF {
			break
		}
		if err != nil {
			resp.Body.Close()
			rec.Bytes = got
			fail(rec, err, start)
			return
		}
	}
	resp.Body.Close()
	rec.End = time.Since(start).Nanoseconds()
	rec.Bytes = got
	if got != size {
		rec.Error = "size-mismatch"
	}
}

func doDelete(ctx context.Context, client *Client, name string, start time.Time, rec *Record) {
	rec.Start = time.Since(start).Nanoseconds()
	var timing Timing
	resp, err := client.Send(ctx, bodiless(ctx, client, http.MethodDelete, name), &timing, &rec.Tries)
	if err != nil {
		fail(rec, err, start)
		return
	}
	finish(resp, rec, &timing, start, 0)
}

// recordSink appends batches of records, as gzip-compressed CSV, to a temporary file that
// close() renames to the records path, so a reader never sees half a file.
type recordSink struct {
	batches chan []Record
	done    chan error
	path    string
	count   int64
}

func newRecordSink(path, op string, workers int) (*recordSink, error) {
	tmp := path + ".part"
	file, err := os.Create(tmp)
	if err != nil {
		return nil, err
	}
	sink := &recordSink{batches: make(chan []Record, workers+1), done: make(chan error, 1), path: path}
	go func() {
		zw, _ := gzip.NewWriterLevel(file, gzip.BestSpeed)
		w := bufio.NewWriterSize(zw, 1<<20)
		w.WriteString(recordHeader)
		line := make([]byte, 0, 128)
		for batch := range sink.batches {
			for i := range batch {
				line = appendRecord(line[:0], batch[i].Op, &batch[i])
				w.Write(line)
			}
			sink.count += int64(len(batch))
		}
		err := w.Flush()
		if cerr := zw.Close(); err == nil {
			err = cerr
		}
		if cerr := file.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = os.Rename(tmp, path)
		}
		sink.done <- err
	}()
	return sink, nil
}

// close waits for every batch sent so far to be written; the senders must have finished.
func (s *recordSink) close() (int64, error) {
	close(s.batches)
	err := <-s.done
	return s.count, err
}

func appendRecord(line []byte, op string, r *Record) []byte {
	line = append(line, op...)
	line = append(line, ',')
	line = strconv.AppendInt(line, r.Key, 10)
	line = append(line, ',')
	line = strconv.AppendInt(line, int64(r.Worker), 10)
	line = append(line, ',')
	line = strconv.AppendInt(line, r.Start, 10)
	line = append(line, ',')
	line = strconv.AppendInt(line, r.FirstByte, 10)
	line = append(line, ',')
	line = strconv.AppendInt(line, r.End, 10)
	line = append(line, ',')
	line = strconv.AppendInt(line, r.Bytes, 10)
	line = append(line, ',')
	line = strconv.AppendInt(line, int64(r.Status), 10)
	line = append(line, ',')
	line = append(line, r.Error...)
	line = append(line, ',')
	line = strconv.AppendInt(line, int64(r.Tries.Retries), 10)
	line = append(line, ',')
	line = append(line, r.Tries.Kind...)
	return append(line, '\n')
}
