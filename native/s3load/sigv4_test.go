package main

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// The "GET Object" example of the AWS SigV4 documentation for S3
// (sig-v4-header-based-auth.html), signed here piece by piece.
func TestSignatureMatchesAWSExample(t *testing.T) {
	s := NewSigner("AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "", "us-east-1")
	emptyHash := "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
	headers := map[string]string{
		"host":                 "examplebucket.s3.amazonaws.com",
		"range":                "bytes=0-9",
		"x-amz-content-sha256": emptyHash,
		"x-amz-date":           "20130524T000000Z",
	}
	sig, signed := s.signature("GET", "/test.txt", "", headers, emptyHash, "20130524T000000Z")
	if signed != "host;range;x-amz-content-sha256;x-amz-date" {
		t.Fatalf("signed headers %q", signed)
	}
	if want := "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"; sig != want {
		t.Fatalf("signature %s, want %s", sig, want)
	}
}

func TestCanonicalQueryIsSortedAndEncoded(t *testing.T) {
	got := canonicalQuery(map[string]string{"prefix": "backupbench/r 1/", "list-type": "2", "delete": ""})
	if want := "delete=&list-type=2&prefix=backupbench%2Fr%201%2F"; got != want {
		t.Fatalf("got %q want %q", got, want)
	}
}

func TestSignSetsHeadersAndNeverTheSecret(t *testing.T) {
	s := NewSigner("AKID", "SECRETKEY", "TOKEN", "us-east-1")
	req, _ := http.NewRequest("PUT", "http://127.0.0.1:9000/b/backupbench/r/obj-00000001", nil)
	s.Sign(req, time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC))
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
