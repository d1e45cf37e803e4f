package kms

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
)

// TestServer is a stand-in with new keys, served for one test, that
// counts the requests it answers.
type TestServer struct {
	URL   string
	Keys  *Keys
	Calls atomic.Int64
	srv   *httptest.Server
}

// Close stops serving: KMS is down from then on.
func (ts *TestServer) Close() { ts.srv.Close() }

// NewTestServer serves a stand-in with keys made for the test until it
// ends.
func NewTestServer(t testing.TB) *TestServer {
	t.Helper()
	ks, err := Generate()
	if err != nil {
		t.Fatal(err)
	}
	ts := &TestServer{Keys: ks}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ts.Calls.Add(1)
		(&Server{Keys: ks}).ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	ts.URL, ts.srv = srv.URL, srv
	return ts
}
