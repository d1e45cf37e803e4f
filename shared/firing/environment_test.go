package firing_test

import (
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/cloud-agent/control-plane/infra/local/apitest"
	"github.com/cloud-agent/control-plane/shared/firing"
)

// TestFiringEnvironments: each due trigger's session runs in the
// environment it names, else its owner's default (the user's, then the
// org's); an environment's saved allocation that falls back counts under
// fallbacks; a named environment gone is a failed run with
// environment_not_found. The due triggers' environments are read in one
// BatchGetItem per shard that has due ones.
func TestFiringEnvironments(t *testing.T) {
	f, p := apitest.Faulty(t)
	h := setup(t, f)
	orgDefault := h.CreateEnvironment(t, owner, `{"orgId":"o1","name":"Org","default":true}`)
	named := h.CreateEnvironment(t, owner, `{"orgId":"o1","name":"Named","sandboxAllocation":"vercel-small"}`)
	retired := h.CreateEnvironment(t, owner, `{"orgId":"o1","name":"Retired"}`)
	h.SetItem("ENVIRONMENT#"+retired, "ENVIRONMENT", "sandboxAllocation", &types.AttributeValueMemberS{Value: "cloudflare-shared"})
	ids := map[string]string{
		"named":    newTrigger(t, h, "*/5 * * * *", map[string]any{"environmentId": named}),
		"default":  newTrigger(t, h, "*/5 * * * *", nil),
		"retired":  newTrigger(t, h, "*/5 * * * *", map[string]any{"environmentId": retired}),
		"gone":     newTrigger(t, h, "*/5 * * * *", map[string]any{"environmentId": named}),
		"explicit": newTrigger(t, h, "*/5 * * * *", map[string]any{"environmentId": named, "sandboxAllocation": "vercel-large"}),
	}
	h.SetTrigger(ids["gone"], "environmentId", &types.AttributeValueMemberS{Value: "env_gone"})
	slot := time.Date(2026, 11, 30, 10, 5, 0, 0, time.UTC)
	batches := p.Count("BatchGetItem")
	sum, err := fire(t, h, slot, slot)
	if err != nil || sum != (firing.Summary{Due: 5, Fired: 4, Fallbacks: 1, Failed: 1}) {
		t.Fatalf("%+v %v", sum, err)
	}
	if n := p.Count("BatchGetItem") - batches; n < 1 || n > 5 {
		t.Errorf("%d reads of the environments for 5 triggers", n)
	}
	want := map[string]string{
		"named": named + " vercel-small", "default": orgDefault + " cloudflare-containers-standard-4",
		"retired": retired + " cloudflare-containers-standard-4", "explicit": named + " vercel-large",
	}
	for name, id := range ids {
		tr := read(t, h, id)
		if name == "gone" {
			if tr["lastRunStatus"] != "failed" || tr["lastError"] != "environment_not_found" {
				t.Errorf("gone: %v", tr)
			}
			continue
		}
		look := lookup(t, h, tr["lastSessionId"].(string))
		env, _ := look["environment"].(map[string]any)
		if got := strings.Join([]string{env["environmentId"].(string), look["sandbox"].(map[string]any)["allocation"].(string)}, " "); got != want[name] {
			t.Errorf("%s: %s, want %s", name, got, want[name])
		}
	}
}
