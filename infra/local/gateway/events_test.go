package gateway_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/cloud-agent/control-plane/infra/local/eventbus"
	"github.com/cloud-agent/control-plane/infra/local/gateway"
)

// TestLocalEvents: the gateway hands /_local/events and the paths under
// it to the event bus, with no token, its errors problem+json with a
// request id; other paths are still routed (here, to none: 404).
func TestLocalEvents(t *testing.T) {
	bus := eventbus.New("SessionsBus", io.Discard)
	srv := httptest.NewServer(&gateway.Gateway{Events: http.HandlerFunc(bus.ServeLocal), Invoke: func(context.Context, string, []byte) ([]byte, error) {
		t.Error("a function was invoked")
		return nil, nil
	}})
	defer srv.Close()
	for _, c := range []struct {
		method, path, body string
		status             int
		want               string // in the body
	}{
		{"GET", "/_local/events", "", 200, `{"events":[]}`},
		{"POST", "/_local/events/faults", `{"refuseNext":1}`, 200, `{"refuseNext":1,"throttleNext":0}`},
		{"GET", "/_local/events/faults", "", 405, `"code":"method_not_allowed"`},
		{"GET", "/_local/events?wait=30", "", 400, `"code":"invalid_request"`},
		{"GET", "/_local/events?after=gone", "", 410, `"oldest":null`},
		{"GET", "/_local/events/other", "", 404, `"code":"not_found"`},
		{"GET", "/_local/eventsx", "", 404, `"code":"not_found"`},
	} {
		req, _ := http.NewRequest(c.method, srv.URL+c.path, strings.NewReader(c.body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.status || !strings.Contains(string(b), c.want) {
			t.Errorf("%s %s: %d %s, want %d with %s", c.method, c.path, resp.StatusCode, b, c.status, c.want)
		}
		if resp.StatusCode >= 400 && resp.StatusCode != 410 {
			var p struct{ RequestID string }
			if json.Unmarshal(b, &p) != nil || p.RequestID == "" || resp.Header.Get("Content-Type") != "application/problem+json" {
				t.Errorf("%s %s: not the gateway's problem: %s %s", c.method, c.path, resp.Header.Get("Content-Type"), b)
			}
		}
	}
}
