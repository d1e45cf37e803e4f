package start_test

import (
	"testing"

	"github.com/cloud-agent/control-plane/infra/local/apitest"
	"github.com/cloud-agent/control-plane/shared/allocation"
	"github.com/cloud-agent/control-plane/shared/start"
)

// BenchmarkParseAndFingerprint: a start body validated and fingerprinted.
func BenchmarkParseAndFingerprint(b *testing.B) {
	raw := []byte(body(map[string]any{"operationKey": "k", "initialTurn": map[string]any{"prompt": "Fix the failing test in the parser."},
		"runtime": map[string]any{"sandboxAllocation": "vercel-small"}}))
	b.ReportAllocs()
	for b.Loop() {
		req, err := start.ParseRequest(raw, nil)
		if err != nil {
			b.Fatal(err)
		}
		a, err := allocation.Parse(req.Allocation)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := start.Fingerprint(req, a); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStartRoute: POST /v1/sessions from the event to the response,
// on the embedded endpoint (settings are reread at every call here), a new
// session each time, and a replay.
func BenchmarkStartRoute(b *testing.B) {
	handle := func(b *testing.B, h *apitest.Harness, raw string, want int) {
		resp, err := h.API.Handle(b.Context(), apitest.Event(apitest.Call{Method: "POST", Path: "/v1/sessions", Claims: user, Body: raw}))
		if err != nil || resp.StatusCode != want {
			b.Fatalf("%d %s %v", resp.StatusCode, resp.Body, err)
		}
	}
	b.Run("new", func(b *testing.B) {
		h := apitest.New(b, nil)
		raw := body(nil)
		b.ReportAllocs()
		for b.Loop() {
			handle(b, h, raw, 201)
		}
	})
	b.Run("replay", func(b *testing.B) {
		h := apitest.New(b, nil)
		raw := body(map[string]any{"operationKey": "k"})
		handle(b, h, raw, 201)
		b.ReportAllocs()
		for b.Loop() {
			handle(b, h, raw, 200)
		}
	})
}
