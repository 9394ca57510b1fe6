package main

// The measured phases: PUT, GET and DELETE of fixed-size objects by `concurrency` workers.
//
// Each worker takes the next object number from a shared counter, does one request and keeps
// one record in its own slice (no locks, no I/O on the hot path). A full slice (4096
// records) goes to one writer goroutine that appends it, compressed, to the records file, so
// memory stays bounded however long the phase runs; that costs well under 1% of a core.

import (
	"bufio"
	"compress/gzip"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand"
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
}

const recordHeader = "op,key,worker,start_ns,first_byte_ns,end_ns,bytes,status,error\n"

type Counters struct {
	ops, bytes, errors atomic.Int64
}

type PhaseResult struct {
	Records     int64
	WallNs      int64
	Interrupted bool
}

const batchSize = 4096

// keyName is the object name of number i: <prefix>obj-00000042.
func keyName(prefix string, i int64) string {
	return prefix + "obj-" + fmt.Sprintf("%08d", i)
}

// objectBody is the payload of one PUT: 16 bytes unique to the object (so no two objects are
// identical), then a shared random buffer. Nothing is copied per object.
type objectBody struct {
	head [16]byte
	data []byte // shared, read only; data[:16] is replaced by head
	off  int
}

func (b *objectBody) Read(p []byte) (int, error) {
	if b.off >= len(b.data) {
		return 0, io.EOF
	}
	var n int
	if b.off < len(b.head) && b.off < len(b.data) {
		end := len(b.head)
		if end > len(b.data) {
			end = len(b.data)
		}
		n = copy(p, b.head[b.off:end])
	} else {
		n = copy(p, b.data[b.off:])
	}
	b.off += n
	return n, nil
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

func runPhase(ctx context.Context, cfg *Config, client *Client, counters *Counters) (*PhaseResult, error) {
	var keys []int64
	if cfg.Op != "put" {
		keys = keyList(cfg.Objects, cfg.Skip)
		if len(keys) == 0 {
			return nil, fmt.Errorf("no objects to %s", cfg.Op)
		}
	}
	var payload []byte
	if cfg.Op == "put" {
		payload = make([]byte, cfg.ObjectSize)
		rand.New(rand.NewSource(time.Now().UnixNano())).Read(payload)
	}
	duration := time.Duration(cfg.DurationS * float64(time.Second))
	timed := duration > 0 && cfg.Op != "delete"
	// pick maps the n-th request of the phase to an object number, or says the phase is done.
	pick := func(n int64) (int64, bool) {
		switch {
		case cfg.Op == "put":
			return n, cfg.Objects <= 0 || n < cfg.Objects
		case timed:
			return keys[n%int64(len(keys))], true
		default:
			if n >= int64(len(keys)) {
				return 0, false
			}
			return keys[n], true
		}
	}
	sink, err := newRecordSink(cfg.Records, cfg.Op, cfg.Concurrency)
	if err != nil {
		return nil, err
	}
	var next atomic.Int64
	start := time.Now()
	deadline := start.Add(duration)
	var wg sync.WaitGroup
	for w := 0; w < cfg.Concurrency; w++ {
		wg.Add(1)
		go func(worker int) {
			defer wg.Done()
			recs := make([]Record, 0, batchSize)
			buf := make([]byte, 256<<10)
			var body objectBody
			for ctx.Err() == nil {
				if timed && !time.Now().Before(deadline) {
					break
				}
				key, ok := pick(next.Add(1) - 1)
				if !ok {
					break
				}
				rec := Record{Key: key, Worker: int32(worker), FirstByte: -1}
				name := keyName(cfg.Prefix, key)
				switch cfg.Op {
				case "put":
					body = objectBody{data: payload}
					binary.LittleEndian.PutUint64(body.head[0:], uint64(key))
					binary.LittleEndian.PutUint64(body.head[8:], uint64(start.UnixNano()))
					doPut(ctx, client, name, &body, cfg.ObjectSize, start, &rec)
				case "get":
					doGet(ctx, client, name, cfg.ObjectSize, buf, start, &rec)
				case "delete":
					doDelete(ctx, client, name, start, &rec)
				}
				if rec.Error == "" {
					counters.ops.Add(1)
					counters.bytes.Add(rec.Bytes)
				} else {
					counters.errors.Add(1)
				}
				recs = append(recs, rec)
				if len(recs) == batchSize {
					sink.batches <- recs
					recs = make([]Record, 0, batchSize)
				}
			}
			sink.batches <- recs
		}(w)
	}
	wg.Wait()
	wall := time.Since(start).Nanoseconds()
	written, err := sink.close()
	if err != nil {
		return nil, fmt.Errorf("cannot write the records: %v", err)
	}
	return &PhaseResult{Records: written, WallNs: wall, Interrupted: ctx.Err() != nil}, nil
}

func fail(rec *Record, err error, start time.Time) {
	rec.End = time.Since(start).Nanoseconds()
	e := classify(err)
	rec.Error = e.Kind
	if e.Status != 0 {
		rec.Status = int32(e.Status)
	}
}

func doPut(ctx context.Context, client *Client, name string, body *objectBody, size int64, start time.Time, rec *Record) {
	rec.Start = time.Since(start).Nanoseconds()
	req, err := client.Request(ctx, http.MethodPut, name, nil, body, size, nil)
	if err != nil {
		fail(rec, err, start)
		return
	}
	// Lets the transport resend the body on a kept-alive connection the server had closed.
	fresh := *body
	req.GetBody = func() (io.ReadCloser, error) {
		again := fresh
		return io.NopCloser(&again), nil
	}
	var timing Timing
	resp, err := client.Do(req, &timing)
	if err != nil {
		fail(rec, err, start)
		return
	}
	finish(resp, rec, &timing, start, size)
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

func doGet(ctx context.Context, client *Client, name string, size int64, buf []byte, start time.Time, rec *Record) {
	rec.Start = time.Since(start).Nanoseconds()
	req, err := client.Request(ctx, http.MethodGet, name, nil, nil, 0, nil)
	if err != nil {
		fail(rec, err, start)
		return
	}
	var timing Timing
	resp, err := client.Do(req, &timing)
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
	req, err := client.Request(ctx, http.MethodDelete, name, nil, nil, 0, nil)
	if err != nil {
		fail(rec, err, start)
		return
	}
	var timing Timing
	resp, err := client.Do(req, &timing)
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
				line = appendRecord(line[:0], op, &batch[i])
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
	return append(line, '\n')
}
