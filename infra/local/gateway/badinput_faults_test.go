package gateway_test

import (
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/cloud-agent/control-plane/infra/local/apitest"
	"github.com/cloud-agent/control-plane/infra/local/faultproxy"
)

// TestBadInputFaults is docs/bad-input.md's rows of a delivery that
// meets DynamoDB or KMS unreachable: 503 service_unavailable with
// Retry-After, and nothing written. The table is reached through a fault
// proxy; the rows run in order, KMS closed last.
func TestBadInputFaults(t *testing.T) {
	h, p := apitest.Faulty(t)
	b := newBadInputOn(t, h)
	ctJSON := "Content-Type: application/json"
	gh := b.webhookTrigger(t, `{"verify":"github"}`)
	path := "/v1/hooks/" + gh.id
	// A new delivery, which would start a session.
	delivery := append(gh.github(hookBody), ctJSON, "X-GitHub-Event: pull_request", "X-GitHub-Delivery: d1")
	rows := []struct {
		name  string
		setup func()
	}{
		{"DynamoDB unreachable on the delivery's read", func() { p.InjectEvery("BatchGetItem", 1, faultproxy.Drop) }},
		{"DynamoDB throttling the delivery's read", func() { p.InjectEvery("BatchGetItem", 1, faultproxy.DynamoThrottle) }},
		{"DynamoDB failing the start's write", func() { p.InjectEvery("TransactWriteItems", 1, faultproxy.DynamoInternalError) }},
		{"DynamoDB unreachable on the start's write", func() { p.InjectEvery("TransactWriteItems", 1, faultproxy.Drop) }},
		{"KMS unreachable", func() {
			// A secret version not derived yet, so not cached, with KMS down.
			h.SetTrigger(gh.id, "webhook.secret.version", &types.AttributeValueMemberN{Value: "7"})
			h.KMS.Close()
		}},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			r.setup()
			defer p.ClearEvery()
			before := b.items(t)
			a := b.raw(t, "POST", path, delivery, hookBody)
			t.Logf("%d %v %s", a.status, a.headers, a.body)
			if a.status != 503 || a.code != "service_unavailable" || a.headers.Get("Retry-After") == "" {
				t.Errorf("%d %q, Retry-After %q, want 503 service_unavailable with Retry-After: %s", a.status, a.code, a.headers.Get("Retry-After"), a.body)
			}
			if after := b.items(t); !slices.Equal(before, after) {
				t.Errorf("the table changed:\nbefore %v\nafter  %v", before, after)
			}
		})
	}
}
