package main

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"
)

// The "GET Object" example of the AWS SigV4 documentation for S3
// (sig-v4-header-based-auth.html): the signer as the loader calls it gives AWS's signature.
func TestSignatureMatchesAWSExample(t *testing.T) {
	s := NewSigner("AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "", "us-east-1")
	emptyHash := "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
	req, _ := http.NewRequest("GET", "https://examplebucket.s3.amazonaws.com/test.txt", nil)
	req.Header.Set("Range", "bytes=0-9")
	req.Header.Set("X-Amz-Content-Sha256", emptyHash)
	// The example hashes its (empty) payload; the loader sends UNSIGNED-PAYLOAD (sigv4.go).
	err := s.sdk.SignHTTP(context.Background(), s.creds, req, emptyHash, "s3", s.region,
		time.Date(2013, 5, 24, 0, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	want := "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, " +
		"SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, " +
		"Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"
	if got := req.Header.Get("Authorization"); got != want {
		t.Fatalf("authorization %q, want %q", got, want)
	}
}

// The query sent is the one signed: sorted, spaces as %20 and '/' encoded, as SigV4 requires.
func TestSignedQueryIsSortedAndEncoded(t *testing.T) {
	req, _ := http.NewRequest("GET", "http://127.0.0.1:9000/b?"+
		queryString(map[string]string{"prefix": "backupbench/r 1/", "list-type": "2", "delete": ""}), nil)
	if err := NewSigner("AKID", "SECRET", "", "us-east-1").Sign(req, time.Now()); err != nil {
		t.Fatal(err)
	}
	if want := "delete=&list-type=2&prefix=backupbench%2Fr%201%2F"; req.URL.RawQuery != want {
		t.Fatalf("got %q want %q", req.URL.RawQuery, want)
	}
}

func TestSignSetsHeadersAndNeverTheSecret(t *testing.T) {
	s := NewSigner("AKID", "SECRETKEY", "TOKEN", "us-east-1")
	req, _ := http.NewRequest("PUT", "http://127.0.0.1:9000/b/backupbench/r/obj-00000001", nil)
	if err := s.Sign(req, time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)); err != nil {
		t.Fatal(err)
	}
	auth := req.Header.Get("Authorization")
	if !strings.HasPrefix(auth, "AWS4-HMAC-SHA256 Credential=AKID/20240102/us-east-1/s3/aws4_request, SignedHeaders=host;x-amz-content-sha256;x-amz-date;x-amz-security-token, Signature=") {
		t.Fatalf("authorization %q", auth)
	}
	for name, values := range req.Header {
		for _, v := range values {
			if strings.Contains(v, "SECRETKEY") {
				t.Fatalf("secret in header %s", name)
			}
		}
	}
}

func TestKeyListSkips(t *testing.T) {
	got := keyList(5, []int64{1, 3})
	if len(got) != 3 || got[0] != 0 || got[1] != 2 || got[2] != 4 {
		t.Fatalf("got %v", got)
	}
	if keyName("backupbench/r/", 42) != "backupbench/r/obj-00000042" {
		t.Fatal(keyName("backupbench/r/", 42))
	}
}

// What signing costs each request of a measured phase (a PUT with the headers a plain PUT
// carries): `go test -bench Sign -run '^$'`.
func BenchmarkSignPut(b *testing.B) {
	s := NewSigner("AKID", "SECRETKEY", "", "us-east-1")
	now := time.Now()
	for i := 0; i < b.N; i++ {
		req, _ := http.NewRequest("PUT", "http://127.0.0.1:9000/bench/backupbench/r1/obj-00000001", http.NoBody)
		req.ContentLength = 1 << 20
		if err := s.Sign(req, now); err != nil {
			b.Fatal(err)
		}
	}
}
