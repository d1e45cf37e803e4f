package start_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/cloud-agent/control-plane/infra/local/apitest"
	"github.com/cloud-agent/control-plane/infra/local/emftest"
)

// lastLine is the harness's last log line, checked as EMF.
func lastLine(t *testing.T, h *apitest.Harness) *emftest.Line {
	t.Helper()
	logs := h.Logs()
	return emftest.Check(t, logs[len(logs)-1])
}

// TestStartMetrics: a new session logs Starts 1 and a replay Replays 1,
// each by [Function] and by [Function, Provider, Allocation] with the
// sandbox's provider and allocation: the allocation's name,
// vercel/byoc/<instanceType> for a byoc object, none for code-review
// (which has no allocation). A refused start logs neither, but Refusals by
// its code. No dimension holds the session's, user's or org's id.
func TestStartMetrics(t *testing.T) {
	h := apitest.New(t, nil)
	byoc := map[string]any{"provider": map[string]any{"id": "vercel", "account": "byoc"}, "instanceType": "small"}
	rows := []struct {
		rule                 string
		body                 string
		status               int
		metric               string
		provider, allocation string
	}{
		{"the default", body(nil), 201, "Starts", "cloudflare-containers", "cloudflare-containers-standard-4"},
		{"a named allocation", body(map[string]any{"runtime": map[string]any{"sandboxAllocation": "vercel-small"}}), 201, "Starts", "vercel", "vercel-small"},
		{"a kilo object, by its name", body(map[string]any{"runtime": map[string]any{"sandboxAllocation": map[string]any{
			"provider": map[string]any{"id": "vercel", "account": "kilo"}, "instanceType": "large"}}}), 201, "Starts", "vercel", "vercel-large"},
		{"a byoc object", body(map[string]any{"operationKey": "byoc-1", "runtime": map[string]any{"sandboxAllocation": byoc}}), 201, "Starts", "vercel", "vercel/byoc/small"},
		{"a byoc object replayed", body(map[string]any{"operationKey": "byoc-1", "runtime": map[string]any{"sandboxAllocation": byoc}}), 200, "Replays", "vercel", "vercel/byoc/small"},
		{"code-review", body(map[string]any{"operationKey": "cr-1", "orgId": "o1", "runtime": map[string]any{"sandboxKind": "code-review"}}), 201, "Starts", "cloudflare-containers", "none"},
		{"code-review replayed", body(map[string]any{"operationKey": "cr-1", "orgId": "o1", "runtime": map[string]any{"sandboxKind": "code-review"}}), 200, "Replays", "cloudflare-containers", "none"},
		{"a retired allocation", body(map[string]any{"runtime": map[string]any{"sandboxAllocation": "cloudflare-shared"}}), 422, "Refusals", "", ""},
	}
	for i, r := range rows {
		t.Run(r.rule, func(t *testing.T) {
			res := post(h, user, r.body)
			if res.Status != r.status {
				t.Fatalf("%d %s", res.Status, res.Raw)
			}
			line := lastLine(t, h)
			for _, m := range []string{"Starts", "Replays", "Refusals", "Faults"} {
				if _, ok := line.Value(m); ok != (m == r.metric) {
					t.Errorf("%s on the line: %v", m, ok)
				}
			}
			v, _ := line.Value(r.metric)
			dims := line.Dimensions()
			switch r.metric {
			case "Refusals":
				if v != 1 || dims["Code"] != "sandbox_allocation_retired" || dims["Provider"] != "" || dims["Allocation"] != "" {
					t.Errorf("Refusals %v by %v", v, dims)
				}
			default:
				if v != 1 || dims["Provider"] != r.provider || dims["Allocation"] != r.allocation ||
					!slices.Equal(line.Sets(r.metric), []string{"Function", "Function,Provider,Allocation"}) {
					t.Errorf("%s %v by %v, sets %v", r.metric, v, dims, line.Sets(r.metric))
				}
			}
			if dims["Function"] != apitest.APIFunction {
				t.Errorf("Function %q", dims["Function"])
			}
			if n, _ := line.Value("DynamoDBRequests"); n != float64(res.Requests) || line.Members["dynamodbRequests"] != n {
				t.Errorf("DynamoDBRequests %v, the line's dynamodbRequests %v", n, line.Members["dynamodbRequests"])
			}
			if c, _ := line.Value("ColdStart"); c != map[bool]float64{true: 1, false: 0}[i == 0] {
				t.Errorf("ColdStart %v on the harness's invocation %d", c, i+1)
			}
			sid, _ := res.Body["sessionId"].(string)
			for name, v := range dims {
				for _, id := range []string{sid, "u1", "o1"} {
					if id != "" && strings.Contains(v, id) {
						t.Errorf("dimension %s=%s holds the id %s", name, v, id)
					}
				}
			}
		})
	}
}
