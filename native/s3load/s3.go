package main

// A minimal S3 client over net/http: path-style requests, SigV4, error codes by kind.

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"os"
	"strings"
	"syscall"
	"time"
)

type Client struct {
	base   *url.URL // scheme://host[:port]
	bucket string
	http   *http.Client
	signer *Signer
	retry  RetryPolicy
}

// OpError is a failed S3 request: Kind is the short name recorded per operation
// (an S3 error code such as SlowDown, or a transport kind such as timeout).
type OpError struct {
	Kind    string
	Status  int
	Message string
	// For a timeout, what was waited for: "connect" (no connection), "tls" (connected, no
	// TLS handshake) or "answer" (connected, the request sent, no answer).
	Stage string
	// An HTTP error answer that carried no S3 error code (in its body or headers): what a
	// web server, a console or a proxy answers, not an S3 server.
	NotS3 bool
}

func (e *OpError) Error() string {
	if e.Status != 0 {
		return fmt.Sprintf("%s (HTTP %d): %s", e.Kind, e.Status, e.Message)
	}
	return fmt.Sprintf("%s: %s", e.Kind, e.Message)
}

func NewClient(cfg *Config, signer *Signer) (*Client, error) {
	base, err := url.Parse(cfg.Endpoint)
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" {
		return nil, fmt.Errorf("endpoint %q is not an http(s)://host[:port] URL", cfg.Endpoint)
	}
	tlsConf := &tls.Config{InsecureSkipVerify: cfg.InsecureTLS} //nolint:gosec // the user asked for it
	if cfg.CAFile != "" {
		pem, err := os.ReadFile(cfg.CAFile)
		if err != nil {
			return nil, fmt.Errorf("cannot read the CA file: %v", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("no PEM certificate in %s", cfg.CAFile)
		}
		tlsConf.RootCAs = pool
	}
	connect := seconds(cfg.ConnectTimeoutS, 5)
	idle := cfg.Concurrency * 2
	if idle < 16 {
		idle = 16
	}
	transport := &http.Transport{
		Proxy:                 nil, // a proxy would be measured instead of the server
		DialContext:           (&net.Dialer{Timeout: connect, KeepAlive: 30 * time.Second}).DialContext,
		TLSClientConfig:       tlsConf,
		TLSHandshakeTimeout:   connect,
		MaxIdleConns:          idle,
		MaxIdleConnsPerHost:   idle,
		IdleConnTimeout:       90 * time.Second,
		DisableCompression:    true,
		WriteBufferSize:       64 << 10,
		ReadBufferSize:        64 << 10,
		ResponseHeaderTimeout: seconds(cfg.RequestTimeoutS, 60),
	}
	return &Client{
		base:   &url.URL{Scheme: base.Scheme, Host: base.Host},
		bucket: cfg.Bucket,
		signer: signer,
		retry:  retryPolicy(cfg),
		http: &http.Client{
			Transport: transport,
			Timeout:   seconds(cfg.RequestTimeoutS, 60),
			// A redirect (wrong region, moved bucket) is an answer to report, not to follow.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
	}, nil
}

func seconds(value, fallback float64) time.Duration {
	if value <= 0 {
		value = fallback
	}
	return time.Duration(value * float64(time.Second))
}

// objectPath is the path-style path of a key ("" for the bucket itself). Keys and bucket
// names are checked by validateConfig to hold only characters that need no encoding, so the
// path sent is exactly the path signed.
func (c *Client) objectPath(key string) string {
	if key == "" {
		return "/" + c.bucket
	}
	return "/" + c.bucket + "/" + key
}

// Timing of one request: first byte of the response (status line) and the end.
type Timing struct {
	FirstByte time.Time
}

// Request builds and signs a request. body may be nil.
func (c *Client) Request(ctx context.Context, method, key string, query map[string]string,
	body io.Reader, size int64, header http.Header) (*http.Request, error) {
	u := *c.base
	u.Path = c.objectPath(key)
	u.RawQuery = queryString(query)
	req, err := http.NewRequestWithContext(ctx, method, u.String(), body)
	if err != nil {
		return nil, err
	}
	for name, values := range header {
		req.Header[name] = values
	}
	if body != nil {
		req.ContentLength = size
	}
	if err := c.signer.Sign(req, time.Now()); err != nil {
		return nil, err
	}
	return req, nil
}

// Do sends req, noting when the first response byte arrived.
func (c *Client) Do(req *http.Request, timing *Timing) (*http.Response, error) {
	if timing != nil {
		trace := &httptrace.ClientTrace{GotFirstResponseByte: func() { timing.FirstByte = time.Now() }}
		req = req.WithContext(httptrace.WithClientTrace(req.Context(), trace))
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, classify(err)
	}
	return resp, nil
}

// Send makes one logical request: build() gives a fresh, signed request for each attempt
// (a retried body is generated again), and a transient answer (retry.go) is retried as the
// policy says, each retry noted in tries (which may be nil). It returns the last answer, its
// body unread, or the transport failure that left no answer.
func (c *Client) Send(ctx context.Context, build func() (*http.Request, error), timing *Timing,
	tries *Tries) (*http.Response, error) {
	for attempt := 1; ; attempt++ {
		req, err := build()
		if err != nil {
			return nil, &OpError{Kind: "client", Message: err.Error()}
		}
		resp, err := c.Do(req, timing)
		if err != nil || !transientStatus(resp.StatusCode) || attempt >= c.retry.Attempts {
			return resp, err
		}
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
		tries.note(responseError(resp, data).Kind)
		if !c.retry.wait(ctx, attempt) {
			return nil, classify(context.Cause(ctx))
		}
	}
}

// Simple sends a request and reads the whole (small) response: for everything but the
// measured data transfers. An answer of 300 or more is an error.
func (c *Client) Simple(ctx context.Context, method, key string, query map[string]string,
	body []byte, header http.Header) (int, []byte, error) {
	status, data, resp, err := c.Exchange(ctx, method, key, query, body, header)
	if err == nil && status >= 300 {
		err = responseError(&http.Response{StatusCode: status, Header: resp}, data)
	}
	return status, data, err
}

// Exchange sends a request and reads the whole (small) response; err only when no answer came.
func (c *Client) Exchange(ctx context.Context, method, key string, query map[string]string,
	body []byte, header http.Header) (int, []byte, http.Header, error) {
	return c.exchange(ctx, method, key, query, body, header, nil)
}

// exchange is Exchange counting its retries in tries. A body held in memory is small (an XML
// document, a 4 KiB overwrite): it carries Content-MD5, which S3 requires on some requests
// (DeleteObjects, any upload to a bucket with a default retention) and checks on all.
func (c *Client) exchange(ctx context.Context, method, key string, query map[string]string,
	body []byte, header http.Header, tries *Tries) (int, []byte, http.Header, error) {
	if len(body) > 0 && header.Get("Content-Md5") == "" {
		header = header.Clone()
		if header == nil {
			header = http.Header{}
		}
		header.Set("Content-MD5", contentMD5(body))
	}
	build := func() (*http.Request, error) {
		var reader io.Reader
		if body != nil {
			reader = bytes.NewReader(body)
		}
		return c.Request(ctx, method, key, query, reader, int64(len(body)), header)
	}
	resp, err := c.Send(ctx, build, nil, tries)
	if err != nil {
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return resp.StatusCode, nil, resp.Header, classify(err)
	}
	return resp.StatusCode, data, resp.Header, nil
}

// contentMD5 is the Content-MD5 header of body (RFC 1864: base64 of the MD5 digest).
func contentMD5(body []byte) string {
	sum := md5.Sum(body)
	return base64.StdEncoding.EncodeToString(sum[:])
}

type s3ErrorBody struct {
	Code    string `xml:"Code"`
	Message string `xml:"Message"`
	Region  string `xml:"Region"`
}

// responseError turns a non-2xx answer into an OpError named by the S3 error code.
func responseError(resp *http.Response, body []byte) *OpError {
	var parsed s3ErrorBody
	if len(body) > 0 && xml.Unmarshal(body, &parsed) == nil && parsed.Code != "" {
		msg := parsed.Message
		if parsed.Region != "" {
			msg += " (region " + parsed.Region + ")"
		}
		return &OpError{Kind: parsed.Code, Status: resp.StatusCode, Message: msg}
	}
	// HEAD-like answers carry no body; MinIO and S3 set these headers on errors.
	if code := resp.Header.Get("X-Minio-Error-Code"); code != "" {
		return &OpError{Kind: code, Status: resp.StatusCode, Message: resp.Header.Get("X-Minio-Error-Desc")}
	}
	kind := fmt.Sprintf("http-%d", resp.StatusCode)
	switch resp.StatusCode {
	case http.StatusNotFound:
		kind = "NotFound"
	case http.StatusForbidden:
		kind = "Forbidden"
	case http.StatusMovedPermanently, http.StatusTemporaryRedirect:
		kind = "Redirect"
	}
	return &OpError{Kind: kind, Status: resp.StatusCode, Message: snippet(body), NotS3: true}
}

// snippet is the start of an answer's body, for a message.
func snippet(body []byte) string {
	text := strings.TrimSpace(string(body))
	if len(text) > 200 {
		text = text[:200]
	}
	return text
}

// timeoutStage says what a timed-out request was waiting for (see OpError.Stage).
func timeoutStage(err error, msg string) string {
	var netOp *net.OpError
	switch {
	case errors.As(err, &netOp) && netOp.Op == "dial":
		return "connect"
	case strings.Contains(msg, "TLS handshake timeout"):
		return "tls"
	}
	return "answer"
}

// classify names a transport failure by kind; the message never holds credentials
// (requests are signed in headers, which errors do not quote).
func classify(err error) *OpError {
	var opErr *OpError
	if errors.As(err, &opErr) {
		return opErr
	}
	msg := err.Error()
	var urlErr *url.Error
	if errors.As(err, &urlErr) {
		msg = urlErr.Err.Error() // without `Get "https://...": `
	}
	var certErr *tls.CertificateVerificationError
	var unknownAuthority x509.UnknownAuthorityError
	var hostnameErr x509.HostnameError
	var invalidErr x509.CertificateInvalidError
	var recordErr tls.RecordHeaderError
	var dnsErr *net.DNSError
	var netErr net.Error
	switch {
	case errors.Is(err, context.Canceled):
		return &OpError{Kind: "canceled", Message: msg}
	case errors.As(err, &certErr), errors.As(err, &unknownAuthority), errors.As(err, &hostnameErr),
		errors.As(err, &invalidErr), errors.As(err, &recordErr),
		strings.Contains(msg, "tls: "), strings.Contains(msg, "x509: "),
		strings.Contains(msg, "server gave HTTP response to HTTPS client"):
		return &OpError{Kind: "tls", Message: msg}
	case errors.Is(err, syscall.ECONNREFUSED):
		return &OpError{Kind: "connection-refused", Message: msg}
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return &OpError{Kind: "connection-reset", Message: msg}
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return &OpError{Kind: "unreachable", Message: msg}
	case errors.As(err, &dnsErr):
		return &OpError{Kind: "dns", Message: msg}
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return &OpError{Kind: "timeout", Message: msg, Stage: timeoutStage(err, msg)}
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return &OpError{Kind: "eof", Message: msg}
	case strings.Contains(msg, "malformed HTTP"):
		return &OpError{Kind: "protocol", Message: msg}
	}
	return &OpError{Kind: "transport", Message: msg}
}

// ---- bucket-level operations ------------------------------------------------------------

type listResult struct {
	XMLName               xml.Name
	KeyCount              int    `xml:"KeyCount"`
	IsTruncated           bool   `xml:"IsTruncated"`
	NextContinuationToken string `xml:"NextContinuationToken"`
	Contents              []struct {
		Key string `xml:"Key"`
	} `xml:"Contents"`
}

// List returns up to maxKeys keys under prefix, and the token for the next page ("" at the end).
func (c *Client) List(ctx context.Context, prefix string, maxKeys int, token string) ([]string, string, error) {
	query := map[string]string{"list-type": "2", "max-keys": fmt.Sprint(maxKeys)}
	if prefix != "" {
		query["prefix"] = prefix
	}
	if token != "" {
		query["continuation-token"] = token
	}
	_, body, err := c.Simple(ctx, http.MethodGet, "", query, nil, nil)
	if err != nil {
		return nil, "", err
	}
	var parsed listResult
	if err := xml.Unmarshal(body, &parsed); err != nil || parsed.XMLName.Local != "ListBucketResult" {
		// Any XML-ish page parses; only S3's own answer names ListBucketResult.
		return nil, "", &OpError{Kind: "not-s3", Status: http.StatusOK, NotS3: true,
			Message: snippet(body)}
	}
	keys := make([]string, 0, len(parsed.Contents))
	for _, item := range parsed.Contents {
		keys = append(keys, item.Key)
	}
	next := ""
	if parsed.IsTruncated {
		next = parsed.NextContinuationToken
	}
	return keys, next, nil
}

// CreateBucket creates the bucket; with lock, with S3 Object Lock enabled (which also turns
// versioning on: a lock protects a version, not a key).
func (c *Client) CreateBucket(ctx context.Context, region string, lock bool) error {
	var body []byte
	if region != "" && region != "us-east-1" {
		body = []byte("<CreateBucketConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">" +
			"<LocationConstraint>" + region + "</LocationConstraint></CreateBucketConfiguration>")
	}
	var header http.Header
	if lock {
		header = http.Header{"X-Amz-Bucket-Object-Lock-Enabled": {"true"}}
	}
	_, _, err := c.Simple(ctx, http.MethodPut, "", nil, body, header)
	return err
}

func (c *Client) DeleteBucket(ctx context.Context) error {
	_, _, err := c.Simple(ctx, http.MethodDelete, "", nil, nil, nil)
	return err
}

type deleteResult struct {
	Errors []struct {
		Key       string `xml:"Key"`
		VersionId string `xml:"VersionId"`
		Code      string `xml:"Code"`
		Message   string `xml:"Message"`
	} `xml:"Error"`
}

// ObjVersion is one version of a key; VersionId "" means the key's current version.
type ObjVersion struct {
	Key       string
	VersionId string
}

func versionsOf(keys []string) []ObjVersion {
	out := make([]ObjVersion, len(keys))
	for i, key := range keys {
		out[i] = ObjVersion{Key: key}
	}
	return out
}

// DeleteKeys removes up to 1000 keys (or versions) in one multi-object delete; bypass
// removes governance-locked versions too. It returns the versions that failed, and the first
// failure as an error.
func (c *Client) DeleteKeys(ctx context.Context, items []ObjVersion, bypass bool) ([]ObjVersion, error) {
	var body bytes.Buffer
	body.WriteString(`<Delete xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Quiet>true</Quiet>`)
	for _, item := range items {
		body.WriteString("<Object><Key>")
		_ = xml.EscapeText(&body, []byte(item.Key))
		body.WriteString("</Key>")
		if item.VersionId != "" {
			body.WriteString("<VersionId>")
			_ = xml.EscapeText(&body, []byte(item.VersionId))
			body.WriteString("</VersionId>")
		}
		body.WriteString("</Object>")
	}
	body.WriteString("</Delete>")
	// Content-MD5 (exchange adds it): AWS requires it, or a checksum, on every DeleteObjects.
	header := http.Header{}
	header.Set("Content-Type", "application/xml")
	if bypass {
		header.Set("X-Amz-Bypass-Governance-Retention", "true")
	}
	_, data, err := c.Simple(ctx, http.MethodPost, "", map[string]string{"delete": ""}, body.Bytes(), header)
	if err != nil {
		return items, err
	}
	var parsed deleteResult
	if err := xml.Unmarshal(data, &parsed); err != nil {
		return items, &OpError{Kind: "protocol", Message: "cannot parse the delete answer: " + err.Error()}
	}
	if len(parsed.Errors) == 0 {
		return nil, nil
	}
	failed := make([]ObjVersion, len(parsed.Errors))
	for i, e := range parsed.Errors {
		failed[i] = ObjVersion{Key: e.Key, VersionId: e.VersionId}
	}
	first := parsed.Errors[0]
	return failed, &OpError{Kind: first.Code, Message: first.Key + ": " + first.Message}
}
