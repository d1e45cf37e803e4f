package apitest

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"
)

var (
	docOnce   sync.Once
	docRouter routers.Router
	docErr    error
)

// apiDocument loads docs/openapi.yaml once, with its servers left out so
// that routes match whatever host a test uses.
func apiDocument() (routers.Router, error) {
	docOnce.Do(func() {
		_, file, _, _ := runtime.Caller(0)
		doc, err := openapi3.NewLoader().LoadFromFile(filepath.Join(filepath.Dir(file), "..", "..", "..", "docs", "openapi.yaml"))
		if err != nil {
			docErr = err
			return
		}
		doc.Servers = nil
		docRouter, docErr = legacy.NewRouter(doc)
	})
	return docRouter, docErr
}

// checkDocument holds a call and its result to docs/openapi.yaml: every
// response must be one the document describes for that route and status,
// and a request the handler accepted must be one the document allows, so
// that the document cannot drift from the code.
func checkDocument(t testing.TB, c Call, res Result) {
	t.Helper()
	// The document leaves Cache-Control optional on the 413 and the 500,
	// which API Gateway itself may answer; the harness calls the functions
	// only, and every answer of theirs carries it (contract, Errors).
	if cc := res.Headers["Cache-Control"]; cc != "no-store" {
		t.Errorf("%s %s → %d without Cache-Control: no-store (%q)", c.Method, c.Path, res.Status, cc)
	}
	router, err := apiDocument()
	if err != nil {
		t.Fatalf("docs/openapi.yaml: %v", err)
	}
	req, _ := http.NewRequest(c.Method, "http://api.test"+c.Path, strings.NewReader(c.Body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer token")
	for k, v := range c.Headers {
		if v != "" {
			req.Header.Set(k, v)
		}
	}
	route, params, err := router.FindRoute(req)
	if err != nil {
		if res.Status != http.StatusNotFound && res.Status != http.StatusMethodNotAllowed {
			t.Errorf("docs/openapi.yaml has no route for %s %s, answered %d", c.Method, c.Path, res.Status)
		}
		return
	}
	in := &openapi3filter.RequestValidationInput{
		Request: req, PathParams: params, Route: route,
		Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc, MultiError: false},
	}
	if res.Status < 300 {
		if err := openapi3filter.ValidateRequest(context.Background(), in); err != nil {
			t.Errorf("the handler accepted a request docs/openapi.yaml refuses: %s %s: %v", c.Method, c.Path, err)
		}
	}
	header := http.Header{}
	for k, v := range res.Headers {
		header.Set(k, v)
	}
	err = openapi3filter.ValidateResponse(context.Background(), &openapi3filter.ResponseValidationInput{
		RequestValidationInput: in, Status: res.Status, Header: header, Body: io.NopCloser(bytes.NewReader([]byte(res.Raw))),
		Options: &openapi3filter.Options{IncludeResponseStatus: true},
	})
	if err != nil {
		t.Errorf("a response docs/openapi.yaml does not describe: %s %s → %d %s: %v", c.Method, c.Path, res.Status, res.Raw, err)
	}
}
