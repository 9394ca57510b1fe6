package main

// AWS Signature Version 4 for S3, header-based, with an unsigned payload, by the AWS SDK's
// signer: canonicalising a request by hand is where signatures quietly go wrong (header
// folding, query encoding), and the SDK's is the one every S3 server is tested against.
//
// The payload is not hashed (x-amz-content-sha256: UNSIGNED-PAYLOAD): hashing 1 MiB per
// object costs the client CPU that, on a shared host, would be taken from the server under
// test. S3 and MinIO accept it over HTTP and HTTPS; TCP (and TLS) still protect the data.

import (
	"context"
	"net/http"
	"net/url"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

const unsignedPayload = "UNSIGNED-PAYLOAD"

type Signer struct {
	creds  aws.Credentials
	region string
	// One SDK signer for the whole run: it caches the day's signing key.
	sdk *v4.Signer
}

func NewSigner(accessKey, secretKey, sessionToken, region string) *Signer {
	return &Signer{
		creds:  aws.Credentials{AccessKeyID: accessKey, SecretAccessKey: secretKey, SessionToken: sessionToken},
		region: region,
		// S3 signs the path as sent, not escaped a second time (AWS's SigV4 rules for S3).
		sdk: v4.NewSigner(func(o *v4.SignerOptions) { o.DisableURIPathEscaping = true }),
	}
}

// queryString: the request's query in any valid encoding; Sign rewrites it into the
// canonical form it signs, so what is sent is exactly what is signed.
func queryString(params map[string]string) string {
	values := make(url.Values, len(params))
	for k, v := range params {
		values.Set(k, v)
	}
	return values.Encode()
}

// Sign adds x-amz-date, x-amz-content-sha256, the session token if any, and Authorization;
// every header the request carries then is signed (Content-Length, x-amz-*, Content-MD5 ...),
// so headers must be set before. The request's path must already be in its encoded form
// (see objectPath).
func (s *Signer) Sign(req *http.Request, now time.Time) error {
	req.Header.Set("X-Amz-Content-Sha256", unsignedPayload)
	return s.sdk.SignHTTP(context.Background(), s.creds, req, unsignedPayload, "s3", s.region, now)
}
