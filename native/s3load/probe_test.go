package main

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
)

func probeAt(t *testing.T, endpoint string, requestTimeout float64) error {
	t.Helper()
	cfg := &Config{Op: "probe", Bucket: "bench", Endpoint: endpoint, ConnectTimeoutS: 1,
		RequestTimeoutS: requestTimeout}
	if err := validateConfig(cfg); err != nil {
		t.Fatal(err)
	}
	client, err := NewClient(cfg, NewSigner("key", "secret", "", "us-east-1"))
	if err != nil {
		t.Fatal(err)
	}
	return probe(context.Background(), cfg, client)
}

func TestProbeRefusesAServerThatDoesNotAnswerAsS3(t *testing.T) {
	pages := map[string]func(http.ResponseWriter){
		"html 404": func(w http.ResponseWriter) { w.WriteHeader(http.StatusNotFound); w.Write([]byte("<html>no</html>")) },
		"html 200": func(w http.ResponseWriter) { w.Write([]byte("<!DOCTYPE html><html><body>hi</body></html>")) },
		"xml 200":  func(w http.ResponseWriter) { w.Write([]byte("<Other><KeyCount>0</KeyCount></Other>")) },
		"redirect": func(w http.ResponseWriter) { w.Header().Set("Location", "https://x/"); w.WriteHeader(301) },
	}
	for name, answer := range pages {
		answer := answer
		server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { answer(w) }))
		err := probeAt(t, server.URL, 5)
		server.Close()
		var opErr *OpError
		if !errors.As(err, &opErr) || opErr.Kind != "not-s3" || !opErr.NotS3 {
			t.Errorf("%s: probe gave %v, want a not-s3 error", name, err)
		}
	}
}

func TestProbeAcceptsS3sOwnAnswers(t *testing.T) {
	answers := map[string]func(http.ResponseWriter){
		"listing": func(w http.ResponseWriter) {
			w.Write([]byte("<ListBucketResult><KeyCount>0</KeyCount><IsTruncated>false</IsTruncated></ListBucketResult>"))
		},
		"no such bucket": func(w http.ResponseWriter) {
			w.WriteHeader(http.StatusNotFound)
			w.Write([]byte("<Error><Code>NoSuchBucket</Code><Message>gone</Message></Error>"))
		},
	}
	for name, answer := range answers {
		answer := answer
		server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { answer(w) }))
		err := probeAt(t, server.URL, 5)
		server.Close()
		if err != nil {
			t.Errorf("%s: probe gave %v", name, err)
		}
	}
}

func TestATimeoutSaysWhatItWaitedFor(t *testing.T) {
	// Accepts connections and never answers: the connection was made, the answer never came.
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer listener.Close()
	go func() {
		var held []net.Conn
		for {
			conn, err := listener.Accept()
			if err != nil {
				for _, c := range held {
					c.Close()
				}
				return
			}
			held = append(held, conn)
		}
	}()
	address := listener.Addr().String()
	for scheme, stage := range map[string]string{"http": "answer", "https": "tls"} {
		err := probeAt(t, scheme+"://"+address, 3)
		var opErr *OpError
		if !errors.As(err, &opErr) {
			opErr = classify(err)
		}
		if opErr.Kind != "timeout" || opErr.Stage != stage {
			t.Errorf("%s: %v (stage %q), want a timeout waiting for the %s", scheme, err, opErr.Stage, stage)
		}
	}
}
