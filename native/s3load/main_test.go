package main

import (
	"context"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"
)

func deleteConfig(prefix string) *Config {
	return &Config{Op: "delete-prefix", Bucket: "bench", Prefix: prefix}
}

func TestPrefixIsTheRunsOrOneLabelBelowIt(t *testing.T) {
	accepted := []string{
		"backupbench/r1/",
		"backupbench/20260101T000000-ab12/",
		"backupbench/20260101T000000-ab12/10.0.0.5-7480/",
		"backupbench/r1/fd00__1-7480/",
		"backupbench/r1/" + strings.Repeat("a", 100) + "/",
	}
	for _, prefix := range accepted {
		if err := validateConfig(deleteConfig(prefix)); err != nil {
			t.Errorf("%q refused: %v", prefix, err)
		}
	}
	refused := []string{
		"", "/", "backupbench/", "backupbench//", "backupbench/r1", "backupbench/r1/a", "/backupbench/r1/",
		"other/r1/", "backupbench/a/b/c/", "backupbench/../", "backupbench/../x/", "backupbench/r1/../",
		"backupbench/r1/./", "backupbench/r1//", "backupbench/.hidden/", "backupbench/r1/-x/",
		"backupbench/r 1/", "backupbench/r1/a/b/", "backupbench/r1/" + strings.Repeat("a", 101) + "/",
		"backupbench/r1/\n/", "backupbench/r1/\n",
	}
	for _, prefix := range refused {
		err := validateConfig(deleteConfig(prefix))
		if err == nil {
			t.Errorf("%q accepted", prefix)
		} else if !strings.Contains(err.Error(), "backupbench/<run-id>/<label>/") {
			t.Errorf("%q: the error does not say which prefixes are allowed: %v", prefix, err)
		}
	}
	// A probe may name no prefix, but a wrong one is refused there too.
	probe := &Config{Op: "probe", Bucket: "bench", Prefix: "backupbench/a/b/c/"}
	if validateConfig(probe) == nil {
		t.Errorf("probe with a three-level prefix accepted")
	}
}

// fakeBucket answers the three requests delete-prefix makes (ListObjectsV2, multi-object
// DELETE, ListMultipartUploads) the way S3 does, a delimiter included: with one, keys below
// the next "/" are folded into CommonPrefixes and not listed.
type fakeBucket struct {
	mu   sync.Mutex
	keys map[string]bool
}

func (b *fakeBucket) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b.mu.Lock()
	defer b.mu.Unlock()
	query := r.URL.Query()
	switch {
	case r.Method == http.MethodGet && query.Has("uploads"):
		fmt.Fprint(w, "<ListMultipartUploadsResult></ListMultipartUploadsResult>")
	case r.Method == http.MethodGet:
		b.list(w, query.Get("prefix"), query.Get("delimiter"))
	case r.Method == http.MethodPost && query.Has("delete"):
		body, _ := io.ReadAll(r.Body)
		var request struct {
			Objects []struct {
				Key string `xml:"Key"`
			} `xml:"Object"`
		}
		if err := xml.Unmarshal(body, &request); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		for _, object := range request.Objects {
			delete(b.keys, object.Key)
		}
		fmt.Fprint(w, "<DeleteResult></DeleteResult>")
	default:
		http.Error(w, "unexpected request", http.StatusBadRequest)
	}
}

func (b *fakeBucket) list(w http.ResponseWriter, prefix, delimiter string) {
	var listed []string
	for key := range b.keys {
		rest, found := strings.CutPrefix(key, prefix)
		if found && (delimiter == "" || !strings.Contains(rest, delimiter)) {
			listed = append(listed, key)
		}
	}
	sort.Strings(listed)
	fmt.Fprintf(w, "<ListBucketResult><KeyCount>%d</KeyCount><IsTruncated>false</IsTruncated>", len(listed))
	for _, key := range listed {
		fmt.Fprintf(w, "<Contents><Key>%s</Key></Contents>", key)
	}
	fmt.Fprint(w, "</ListBucketResult>")
}

func (b *fakeBucket) left() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for key := range b.keys {
		out = append(out, key)
	}
	sort.Strings(out)
	return out
}

func TestDeletePrefixTakesTheAgentsPrefixesBelowTheRunsAndNothingElse(t *testing.T) {
	bucket := &fakeBucket{keys: map[string]bool{
		"backupbench/r1/obj-00000000":               true,
		"backupbench/r1/10.0.0.5-7480/obj-00000000": true,
		"backupbench/r1/10.0.0.5-7480/obj-00000001": true,
		"backupbench/r1/10.0.0.6-7480/obj-00000000": true,
		"backupbench/r10/obj-00000000":              true,
		"backupbench/r2/10.0.0.5-7480/obj-00000000": true,
		"other/backupbench/r1/obj-00000000":         true,
	}}
	server := httptest.NewServer(bucket)
	defer server.Close()
	cfg := deleteConfig("backupbench/r1/")
	cfg.Endpoint = server.URL
	if err := validateConfig(cfg); err != nil {
		t.Fatal(err)
	}
	client, err := NewClient(cfg, NewSigner("key", "secret", "", "us-east-1"))
	if err != nil {
		t.Fatal(err)
	}
	if err := deletePrefix(context.Background(), cfg, client); err != nil {
		t.Fatal(err)
	}
	want := []string{"backupbench/r10/obj-00000000", "backupbench/r2/10.0.0.5-7480/obj-00000000",
		"other/backupbench/r1/obj-00000000"}
	if got := bucket.left(); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("left %v, want %v", got, want)
	}
}
