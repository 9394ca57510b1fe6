package main

// The headers each request kind carries, as AWS documents them (PutObject, UploadPart,
// CreateMultipartUpload, CompleteMultipartUpload, DeleteObjects), checked on what a local
// server received: the checksum headers a locked upload needs, checksums that match the bytes
// sent, every x-amz-* header and Content-MD5 signed.

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/md5"
	"encoding/base64"
	"encoding/binary"
	"encoding/xml"
	"fmt"
	"hash/crc32"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// seen is one request as the server received it.
type seen struct {
	method string
	query  map[string]string
	header http.Header
	body   []byte
}

func (s seen) has(name string) bool { _, ok := s.query[name]; return ok }

// recorder is a server that keeps every request and answers as S3 would, or as answer says.
type recorder struct {
	mu       sync.Mutex
	requests []seen
	answer   func(n int, r seen, w http.ResponseWriter) bool // true: answered
}

func (rec *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	query := map[string]string{}
	for name, values := range r.URL.Query() {
		query[name] = values[0]
	}
	got := seen{r.Method, query, r.Header.Clone(), body}
	rec.mu.Lock()
	rec.requests = append(rec.requests, got)
	n := len(rec.requests)
	rec.mu.Unlock()
	if rec.answer != nil && rec.answer(n, got, w) {
		return
	}
	switch {
	case r.Method == http.MethodPost && got.has("uploads"):
		fmt.Fprint(w, "<InitiateMultipartUploadResult><UploadId>up-1</UploadId></InitiateMultipartUploadResult>")
	case r.Method == http.MethodPut && got.has("partNumber"):
		w.Header().Set("ETag", fmt.Sprintf(`"etag-%s"`, query["partNumber"]))
	case r.Method == http.MethodPost && got.has("uploadId"):
		fmt.Fprint(w, "<CompleteMultipartUploadResult><ETag>\"x-2\"</ETag></CompleteMultipartUploadResult>")
	case r.Method == http.MethodPost && got.has("delete"):
		fmt.Fprint(w, "<DeleteResult></DeleteResult>")
	case r.Method == http.MethodPut:
		w.Header().Set("ETag", `"e"`)
	}
}

func (rec *recorder) all() []seen {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return append([]seen(nil), rec.requests...)
}

func crc32cBase64(data []byte) string {
	var sum [4]byte
	binary.BigEndian.PutUint32(sum[:], crc32.Checksum(data, castagnoli))
	return base64.StdEncoding.EncodeToString(sum[:])
}

func md5Base64(data []byte) string {
	sum := md5.Sum(data)
	return base64.StdEncoding.EncodeToString(sum[:])
}

// signedNames: the header names the request's SigV4 signature covers.
func signedNames(t *testing.T, r seen) map[string]bool {
	t.Helper()
	auth := r.header.Get("Authorization")
	_, list, found := strings.Cut(auth, "SignedHeaders=")
	if !found {
		t.Fatalf("no SignedHeaders in %q", auth)
	}
	list, _, _ = strings.Cut(list, ",")
	names := map[string]bool{}
	for _, name := range strings.Split(list, ";") {
		names[name] = true
	}
	return names
}

// checkSigned: every x-amz-* header and Content-MD5 the request carries is signed (S3 refuses
// an unsigned x-amz-* header).
func checkSigned(t *testing.T, r seen) {
	t.Helper()
	signed := signedNames(t, r)
	for name := range r.header {
		lower := strings.ToLower(name)
		if (strings.HasPrefix(lower, "x-amz-") || lower == "content-md5") && !signed[lower] {
			t.Errorf("%s %v: %s is sent but not signed", r.method, r.query, lower)
		}
	}
}

// runAgainst runs a measured phase of cfg against the recorder; the phase's records.
func runAgainst(t *testing.T, rec *recorder, cfg *Config) ([]map[string]string, *Counters) {
	t.Helper()
	server := httptest.NewServer(rec)
	defer server.Close()
	cfg.Endpoint, cfg.Bucket, cfg.Prefix = server.URL, "bench", "backupbench/r1/"
	cfg.Records = filepath.Join(t.TempDir(), "records.csv.gz")
	if cfg.Concurrency == 0 {
		cfg.Concurrency = 1
	}
	if err := validateConfig(cfg); err != nil {
		t.Fatal(err)
	}
	client, err := NewClient(cfg, NewSigner("key", "secret", "", "us-east-1"))
	if err != nil {
		t.Fatal(err)
	}
	var counters Counters
	if _, err := runPhase(context.Background(), cfg, client, &counters); err != nil {
		t.Fatal(err)
	}
	return readRecords(t, cfg.Records), &counters
}

func readRecords(t *testing.T, path string) []map[string]string {
	t.Helper()
	file, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	zr, err := gzip.NewReader(file)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(zr)
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	columns := strings.Split(lines[0], ",")
	var out []map[string]string
	for _, line := range lines[1:] {
		fields := strings.Split(line, ",")
		row := map[string]string{}
		for i, name := range columns {
			row[name] = fields[i]
		}
		out = append(out, row)
	}
	return out
}

func lockedConfig() *Config {
	return &Config{Op: "put", Objects: 2, ObjectSize: 10000, LockMode: "GOVERNANCE", RetentionS: 3600}
}

func TestALockedPutCarriesTheChecksumAWSDocuments(t *testing.T) {
	rec := &recorder{}
	records, _ := runAgainst(t, rec, lockedConfig())
	if len(records) != 2 || records[0]["error"] != "" || records[1]["error"] != "" {
		t.Fatalf("records %v", records)
	}
	for _, r := range rec.all() {
		if r.header.Get("X-Amz-Sdk-Checksum-Algorithm") != "CRC32C" {
			t.Errorf("PUT without x-amz-sdk-checksum-algorithm CRC32C: %v", r.header)
		}
		if got, want := r.header.Get("X-Amz-Checksum-Crc32c"), crc32cBase64(r.body); got != want || len(r.body) != 10000 {
			t.Errorf("x-amz-checksum-crc32c %q, the body's is %q (%d bytes)", got, want, len(r.body))
		}
		if r.header.Get("X-Amz-Object-Lock-Mode") != "GOVERNANCE" {
			t.Errorf("no lock mode: %v", r.header)
		}
		until, err := time.Parse("2006-01-02T15:04:05.000Z", r.header.Get("X-Amz-Object-Lock-Retain-Until-Date"))
		if err != nil || until.Before(time.Now().Add(59*time.Minute)) {
			t.Errorf("retain-until %q (%v)", r.header.Get("X-Amz-Object-Lock-Retain-Until-Date"), err)
		}
		checkSigned(t, r)
	}
}

func TestAnUnlockedPutCarriesNoChecksumToCompute(t *testing.T) {
	rec := &recorder{}
	cfg := lockedConfig()
	cfg.LockMode, cfg.RetentionS = "", 0
	runAgainst(t, rec, cfg)
	for _, r := range rec.all() {
		for _, name := range []string{"X-Amz-Sdk-Checksum-Algorithm", "X-Amz-Checksum-Crc32c", "X-Amz-Object-Lock-Mode"} {
			if r.header.Get(name) != "" {
				t.Errorf("an unlocked PUT carries %s", name)
			}
		}
	}
}

func TestALockedMultipartUploadCarriesTheHeadersOfEachStep(t *testing.T) {
	rec := &recorder{}
	cfg := lockedConfig()
	cfg.Objects, cfg.ObjectSize, cfg.MultipartThreshold, cfg.PartSize = 1, 11<<20, 5<<20, 5<<20
	records, _ := runAgainst(t, rec, cfg)
	if len(records) != 1 || records[0]["error"] != "" {
		t.Fatalf("records %v", records)
	}
	requests := rec.all()
	if len(requests) != 5 { // create, three parts, complete
		t.Fatalf("%d requests, want 5", len(requests))
	}
	create, parts, complete := requests[0], requests[1:4], requests[4]
	if !create.has("uploads") || create.header.Get("X-Amz-Checksum-Algorithm") != "CRC32C" ||
		create.header.Get("X-Amz-Object-Lock-Mode") != "GOVERNANCE" ||
		create.header.Get("X-Amz-Object-Lock-Retain-Until-Date") == "" {
		t.Errorf("CreateMultipartUpload: %v %v", create.query, create.header)
	}
	var sums []string
	for i, part := range parts {
		if part.query["partNumber"] != fmt.Sprint(i+1) || part.query["uploadId"] != "up-1" {
			t.Errorf("part %d: %v", i+1, part.query)
		}
		if part.header.Get("X-Amz-Sdk-Checksum-Algorithm") != "CRC32C" {
			t.Errorf("part %d without x-amz-sdk-checksum-algorithm", i+1)
		}
		sum := part.header.Get("X-Amz-Checksum-Crc32c")
		if sum != crc32cBase64(part.body) {
			t.Errorf("part %d: checksum %q, its bytes' %q", i+1, sum, crc32cBase64(part.body))
		}
		sums = append(sums, sum)
	}
	if got := len(parts[0].body) + len(parts[1].body) + len(parts[2].body); got != 11<<20 {
		t.Errorf("parts hold %d bytes", got)
	}
	var body struct {
		Parts []struct {
			Number int    `xml:"PartNumber"`
			ETag   string `xml:"ETag"`
			CRC32C string `xml:"ChecksumCRC32C"`
		} `xml:"Part"`
	}
	if err := xml.Unmarshal(complete.body, &body); err != nil || len(body.Parts) != 3 {
		t.Fatalf("CompleteMultipartUpload body %q: %v", complete.body, err)
	}
	for i, part := range body.Parts {
		if part.Number != i+1 || part.CRC32C != sums[i] || part.ETag != fmt.Sprintf(`"etag-%d"`, i+1) {
			t.Errorf("completed part %d: %+v", i+1, part)
		}
	}
	if complete.header.Get("Content-Md5") != md5Base64(complete.body) {
		t.Errorf("CompleteMultipartUpload Content-MD5 %q", complete.header.Get("Content-Md5"))
	}
	for _, r := range requests {
		checkSigned(t, r)
	}
}

func TestRemovingLockedVersionsBypassesGovernanceWithContentMD5(t *testing.T) {
	rec := &recorder{}
	server := httptest.NewServer(rec)
	defer server.Close()
	cfg := &Config{Op: "delete-prefix", Endpoint: server.URL, Bucket: "bench", Prefix: "backupbench/r1/", Versions: true}
	if err := validateConfig(cfg); err != nil {
		t.Fatal(err)
	}
	client, _ := NewClient(cfg, NewSigner("key", "secret", "", "us-east-1"))
	items := []ObjVersion{{Key: "backupbench/r1/obj-00000000", VersionId: "v1"}}
	if _, err := client.DeleteKeys(context.Background(), items, true); err != nil {
		t.Fatal(err)
	}
	r := rec.all()[0]
	if !r.has("delete") || r.header.Get("X-Amz-Bypass-Governance-Retention") != "true" {
		t.Errorf("DeleteObjects: %v %v", r.query, r.header)
	}
	if r.header.Get("Content-Md5") != md5Base64(r.body) || !bytes.Contains(r.body, []byte("<VersionId>v1</VersionId>")) {
		t.Errorf("DeleteObjects Content-MD5 %q for %q", r.header.Get("Content-Md5"), r.body)
	}
	checkSigned(t, r)
}

func TestTheLockChecksOverwriteCarriesContentMD5(t *testing.T) {
	// A bucket with a default retention wants a checksum on every upload, the attacker's too.
	rec := &recorder{answer: func(_ int, r seen, w http.ResponseWriter) bool {
		if r.method == http.MethodHead {
			w.Header().Set("X-Amz-Version-Id", "v1")
			w.Header().Set("X-Amz-Object-Lock-Mode", "GOVERNANCE")
			return true
		}
		if r.method == http.MethodDelete {
			w.WriteHeader(http.StatusForbidden)
			return true
		}
		return false
	}}
	server := httptest.NewServer(rec)
	defer server.Close()
	cfg := &Config{Op: "lock-check", Endpoint: server.URL, Bucket: "bench", Prefix: "backupbench/r1/", Keys: []int64{3},
		LockMode: "GOVERNANCE", RetentionS: 1, ObjectSize: 1, Concurrency: 1}
	if err := validateConfig(cfg); err != nil {
		t.Fatal(err)
	}
	client, _ := NewClient(cfg, NewSigner("key", "secret", "", "us-east-1"))
	if err := lockCheck(context.Background(), cfg, client); err != nil {
		t.Fatal(err)
	}
	puts := 0
	for _, r := range rec.all() {
		if r.method == http.MethodPut {
			puts++
			if len(r.body) != 4096 || r.header.Get("Content-Md5") != md5Base64(r.body) {
				t.Errorf("overwrite of %d bytes, Content-MD5 %q", len(r.body), r.header.Get("Content-Md5"))
			}
			checkSigned(t, r)
		}
	}
	if puts != 1 {
		t.Errorf("%d overwrites, want 1", puts)
	}
}

// TestRecordedErrorBodiesAreReadByTheirCode: the error bodies MinIO and moto really answered
// (tests/fixtures/s3-errors/<server>-<Code>.xml) are each named by their S3 code, which is what
// the records keep and backupbench's hints are keyed by.
func TestRecordedErrorBodiesAreReadByTheirCode(t *testing.T) {
	paths, _ := filepath.Glob("../../tests/fixtures/s3-errors/*.xml")
	if len(paths) < 10 {
		t.Fatalf("only %d recorded error bodies", len(paths))
	}
	for _, path := range paths {
		body, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		_, code, _ := strings.Cut(strings.TrimSuffix(filepath.Base(path), ".xml"), "-")
		got := responseError(&http.Response{StatusCode: 400, Header: http.Header{}}, body)
		if got.Kind != code || got.NotS3 || got.Message == "" {
			t.Errorf("%s: read as %+v", filepath.Base(path), got)
		}
	}
}

func TestAVersionsRetentionIsReadFromAHeadWhereTheServerHasNoGetObjectRetention(t *testing.T) {
	// moto answers GET ?retention with the object's bytes; its HEAD says the lock.
	rec := &recorder{answer: func(_ int, r seen, w http.ResponseWriter) bool {
		switch {
		case r.method == http.MethodGet && r.has("retention"):
			fmt.Fprint(w, "the object's own bytes")
		case r.method == http.MethodHead && r.query["versionId"] == "v1":
			w.Header().Set("X-Amz-Object-Lock-Mode", "COMPLIANCE")
			w.Header().Set("X-Amz-Object-Lock-Retain-Until-Date", "2099-01-01T00:00:00.000Z")
		default:
			w.WriteHeader(http.StatusNotFound)
		}
		return true
	}}
	server := httptest.NewServer(rec)
	defer server.Close()
	cfg := &Config{Op: "delete-prefix", Endpoint: server.URL, Bucket: "bench", Prefix: "backupbench/r1/"}
	if err := validateConfig(cfg); err != nil {
		t.Fatal(err)
	}
	client, _ := NewClient(cfg, NewSigner("key", "secret", "", "us-east-1"))
	got, err := client.Retention(context.Background(), ObjVersion{Key: "backupbench/r1/obj-00000000", VersionId: "v1"})
	if err != nil || got.Mode != "COMPLIANCE" || !later(got.Until) {
		t.Fatalf("retention %+v, %v", got, err)
	}
	if _, err := client.Retention(context.Background(), ObjVersion{Key: "backupbench/r1/x", VersionId: "v2"}); err == nil {
		t.Errorf("a version with no lock anywhere was given one")
	}
}
