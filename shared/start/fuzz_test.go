package start_test

import (
	"testing"
	"unicode/utf8"

	"github.com/cloud-agent/control-plane/shared/problem"
	"github.com/cloud-agent/control-plane/shared/start"
)

// FuzzParseRequest: parsing a start body never panics; a refusal is always
// invalid_request; what is accepted keeps the limits.
func FuzzParseRequest(f *testing.F) {
	for _, s := range []string{
		body(nil),
		body(map[string]any{"operationKey": "k", "orgId": "o1", "initialTurn": map[string]any{"prompt": "p"}, "runtime": map[string]any{"sandboxAllocation": "vercel-small", "sandboxKind": "code-review"}, "createdOnPlatform": "cli"}),
		`{"repository":{"type":"gitlab","url":"https://gitlab.com/a/b"},"agent":{"mode":"m","model":"x"}}`,
		`{"repository":null}`, `[]`, `{"a":1,"a":2}`, ``,
	} {
		f.Add([]byte(s), "")
	}
	f.Fuzz(func(t *testing.T, b []byte, key string) {
		var header *string
		if key != "" {
			header = &key
		}
		req, err := start.ParseRequest(b, header)
		if err != nil {
			if c := problem.CodeOf(err); c != problem.InvalidRequest {
				t.Fatalf("code %s", c)
			}
			return
		}
		if req.Agent.Mode == "" || req.Agent.Model == "" || utf8.RuneCountInString(req.Agent.Model) > 200 ||
			req.Repository.Type == "" || (req.Prompt != nil && utf8.RuneCountInString(*req.Prompt) > 100000) {
			t.Fatalf("accepted %+v", req)
		}
	})
}
