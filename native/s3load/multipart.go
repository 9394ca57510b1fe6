package main

// Objects over the multipart threshold go up as backup tools send large files: one
// CreateMultipartUpload, UploadPart for every part_size bytes (in order, on the worker's
// connection: the streams are the parallelism), CompleteMultipartUpload. One record covers
// the whole upload. A failed upload is aborted, so its parts do not linger.

import (
	"context"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

type initiated struct {
	UploadId string `xml:"UploadId"`
}

// The headers each request of a locked (or checksummed) upload carries, as AWS documents them:
//
//	CreateMultipartUpload    x-amz-object-lock-mode, -retain-until-date, x-amz-checksum-algorithm CRC32C
//	UploadPart               x-amz-sdk-checksum-algorithm CRC32C, x-amz-checksum-crc32c (the part's)
//	CompleteMultipartUpload  each part's ChecksumCRC32C in the body; Content-MD5 of the body
//
// (UploadPart: "This checksum algorithm must be the same for all parts and it match the
// checksum value supplied in the CreateMultipartUpload request".)
func (ph *phase) putMultipart(ctx context.Context, name string, key int64, shape Shape, buf []byte, rec *Record) {
	rec.Start = time.Since(ph.start).Nanoseconds()
	header := lockHeader(ph.cfg, http.Header{})
	if needsChecksum(ph.cfg) {
		header.Set("X-Amz-Checksum-Algorithm", "CRC32C")
	}
	status, data, _, err := ph.client.exchange(ctx, http.MethodPost, name, map[string]string{"uploads": ""}, []byte{},
		header, &rec.Tries)
	var started initiated
	if err == nil && status >= 300 {
		err = responseError(&http.Response{StatusCode: status}, data)
	}
	if err == nil && (xml.Unmarshal(data, &started) != nil || started.UploadId == "") {
		err = &OpError{Kind: "protocol", Message: "no UploadId in the answer"}
	}
	if err != nil {
		fail(rec, err, ph.start)
		rec.Status = int32(status)
		return
	}
	var done strings.Builder
	done.WriteString(`<CompleteMultipartUpload xmlns="http://s3.amazonaws.com/doc/2006-03-01/">`)
	part := 1
	for off := int64(0); off < shape.Size; off, part = off+ph.cfg.PartSize, part+1 {
		end := min(off+ph.cfg.PartSize, shape.Size)
		etag, sum, err := ph.uploadPart(ctx, name, key, shape, started.UploadId, part, off, end, buf, &rec.Tries)
		if err != nil {
			ph.client.AbortUpload(context.WithoutCancel(ctx), name, started.UploadId)
			fail(rec, err, ph.start)
			return
		}
		fmt.Fprintf(&done, "<Part><PartNumber>%d</PartNumber><ETag>%s</ETag>", part, etag)
		if sum != "" {
			fmt.Fprintf(&done, "<ChecksumCRC32C>%s</ChecksumCRC32C>", sum)
		}
		done.WriteString("</Part>")
	}
	done.WriteString("</CompleteMultipartUpload>")
	status, err = ph.complete(ctx, name, started.UploadId, []byte(done.String()), &rec.Tries)
	rec.Status = int32(status)
	rec.End = time.Since(ph.start).Nanoseconds()
	if err != nil {
		ph.client.AbortUpload(context.WithoutCancel(ctx), name, started.UploadId)
		fail(rec, err, ph.start)
		return
	}
	rec.Bytes = shape.Size
}

// complete sends CompleteMultipartUpload. It can answer 200 and still fail, the error in the
// body; a transient code there (InternalError, SlowDown) is retried as a 500 or 503 would be.
func (ph *phase) complete(ctx context.Context, name, upload string, body []byte, tries *Tries) (int, error) {
	query := map[string]string{"uploadId": upload}
	header := http.Header{"Content-Type": {"application/xml"}}
	for attempt := 1; ; attempt++ {
		status, data, _, err := ph.client.exchange(ctx, http.MethodPost, name, query, body, header, tries)
		if err != nil {
			return status, err
		}
		if status < 300 && !strings.Contains(string(data), "<Error>") {
			return status, nil
		}
		failed := responseError(&http.Response{StatusCode: max(status, 500)}, data)
		if status >= 300 || !transientCode(failed.Kind) || attempt >= ph.client.retry.Attempts {
			return status, failed
		}
		tries.note(failed.Kind)
		if !ph.client.retry.wait(ctx, attempt) {
			return status, classify(context.Cause(ctx))
		}
	}
}

func (ph *phase) uploadPart(ctx context.Context, name string, key int64, shape Shape, upload string, part int,
	off, end int64, buf []byte, tries *Tries) (string, string, error) {
	header := http.Header{}
	sum := ""
	if needsChecksum(ph.cfg) {
		sum = crc32cOf(ph.content.Body(key, shape, off, end, ph.stamp), buf)
		setChecksum(header, sum)
	}
	query := map[string]string{"partNumber": strconv.Itoa(part), "uploadId": upload}
	resp, err := ph.client.Send(ctx, ph.bodyRequest(ctx, name, query, key, shape, off, end, header), nil, tries)
	if err != nil {
		return "", "", err
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	if err != nil {
		return "", "", classify(err)
	}
	if resp.StatusCode >= 300 {
		return "", "", responseError(resp, data)
	}
	return resp.Header.Get("ETag"), sum, nil
}

func (c *Client) AbortUpload(ctx context.Context, key, upload string) error {
	_, _, err := c.Simple(ctx, http.MethodDelete, key, map[string]string{"uploadId": upload}, nil, nil)
	return err
}
