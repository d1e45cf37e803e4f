package kms

import (
	"bytes"
	"encoding/json/v2"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// TestServer is a stand-in with new keys, served for one test, that
// counts the requests it answers and records what each asked of which
// key.
type TestServer struct {
	URL   string
	Keys  *Keys
	Calls atomic.Int64
	srv   *httptest.Server
	mu    sync.Mutex
	used  map[string]bool
}

// NewTestServer serves a stand-in with the keys ks (nil: keys made for
// the test) until the test ends.
func NewTestServer(t testing.TB, ks *Keys) *TestServer {
	t.Helper()
	if ks == nil {
		var err error
		if ks, err = Generate(); err != nil {
			t.Fatal(err)
		}
	}
	ts := &TestServer{Keys: ks, used: map[string]bool{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ts.Calls.Add(1)
		body, _ := io.ReadAll(r.Body)
		var in struct{ KeyId string }
		_ = json.Unmarshal(body, &in)
		ts.mu.Lock()
		ts.used[strings.TrimPrefix(r.Header.Get("X-Amz-Target"), "TrentService.")+" "+in.KeyId] = true
		ts.mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(body))
		(&Server{Keys: ks}).ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	ts.URL, ts.srv = srv.URL, srv
	return ts
}

// Used is what the requests asked, sorted, once each: the operation and
// the key as the request named it ("GenerateMac alias/WebhookKey"); a
// Decrypt that names no key has "" for it.
func (ts *TestServer) Used() []string {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	out := make([]string, 0, len(ts.used))
	for k := range ts.used {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// Close stops serving: KMS is down from then on.
func (ts *TestServer) Close() { ts.srv.Close() }
