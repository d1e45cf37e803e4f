package hook_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/cloud-agent/control-plane/infra/local/apitest"
	"github.com/cloud-agent/control-plane/infra/local/emftest"
	"github.com/cloud-agent/control-plane/infra/local/faultproxy"
	"github.com/cloud-agent/control-plane/shared/commit"
	"github.com/cloud-agent/control-plane/shared/settings"
	"github.com/cloud-agent/control-plane/shared/trigger"
	"github.com/cloud-agent/control-plane/shared/webhook"
)

// faulty is the harness through a fault proxy, at the clock.
func faulty(t *testing.T) (*apitest.Harness, *faultproxy.Proxy) {
	t.Helper()
	h, p := apitest.Faulty(t)
	h.Hooks.Now = func() time.Time { return clock }
	h.Start.Now = h.Hooks.Now
	return h, p
}

// TestRequests holds the contract's budget: a new delivery costs at most
// 3 DynamoDB requests and no KMS call once the trigger's secret is
// cached, a redelivery at most 4. Measured: a new delivery, keyed or
// not, is one BatchGetItem and one TransactWriteItems; a redelivery one
// BatchGetItem, its key's ledger row and the row's session; a redelivery
// whose row records a retired allocation, the read and the row.
func TestRequests(t *testing.T) {
	h, p := faulty(t)
	hk := newHook(t, h, nil) // its secret is now cached
	token := newHook(t, h, func(tr *trigger.Trigger) { tr.Webhook.Verify = webhook.VerifyToken })
	env := h.CreateEnvironment(t, map[string]string{"sub": "u1"}, `{"name":"Named"}`)
	inEnv := newHook(t, h, func(tr *trigger.Trigger) { tr.EnvironmentID = env })
	body := prBody("opened", "Count")
	kms := h.KMS.Calls.Load()
	rows := []struct {
		rule   string
		send   func() apitest.Result
		status int
		want   map[string]int
	}{
		{"a new keyed delivery", func() apitest.Result {
			return deliver(h, hk.ID, hk.signed(t, "", body, github("pull_request", "d1")), body)
		},
			201, map[string]int{"BatchGetItem": 1, "TransactWriteItems": 1}},
		{"its redelivery", func() apitest.Result {
			return deliver(h, hk.ID, hk.signed(t, "", body, github("pull_request", "d1")), body)
		},
			200, map[string]int{"BatchGetItem": 1, "GetItem": 2}},
		{"its redelivery once its allocation is retired", func() apitest.Result {
			h.SetSettings([]settings.Parameter{{Name: "allocation/retired", Type: "StringList", Value: "cloudflare-containers-standard-4"}})
			defer h.SetSettings(nil)
			return deliver(h, hk.ID, hk.signed(t, "", body, github("pull_request", "d1")), body)
		},
			422, map[string]int{"BatchGetItem": 1, "GetItem": 1}},
		{"a delivery without a key", func() apitest.Result {
			return deliver(h, token.ID, map[string]string{"X-Gitlab-Token": token.secret}, body)
		}, 201, map[string]int{"BatchGetItem": 1, "TransactWriteItems": 1}},
		// One more than the hook's budget: the named environment's read.
		{"a new delivery to a trigger that names an environment", func() apitest.Result {
			return deliver(h, inEnv.ID, inEnv.signed(t, "", body, github("pull_request", "d2")), body)
		}, 201, map[string]int{"BatchGetItem": 2, "TransactWriteItems": 1}},
	}
	for _, r := range rows {
		var res apitest.Result
		if got := p.Requests(func() { res = r.send() }); !maps.Equal(got, r.want) {
			t.Errorf("%s: requests %v, want %v", r.rule, got, r.want)
		}
		if res.Status != r.status {
			t.Fatalf("%s: %d %s", r.rule, res.Status, res.Raw)
		}
	}
	if n := h.KMS.Calls.Load() - kms; n != 0 {
		t.Errorf("%d KMS calls with the secrets cached", n)
	}
}

// TestUnavailable: storage or KMS unreachable is 503 with Retry-After,
// and nothing is written.
func TestUnavailable(t *testing.T) {
	h, p := faulty(t)
	hk := newHook(t, h, nil)
	body := prBody("opened", "Down")
	headers := hk.signed(t, "", body, github("pull_request", "d1"))
	check := func(rule string) {
		t.Helper()
		before := len(h.Items())
		res := deliver(h, hk.ID, headers, body)
		if res.Status != 503 || res.Code() != "service_unavailable" || res.Headers["Retry-After"] == "" {
			t.Errorf("%s: %d %v %s", rule, res.Status, res.Headers, res.Raw)
		}
		if len(h.Items()) != before {
			t.Errorf("%s: written", rule)
		}
	}
	p.InjectEvery("BatchGetItem", 1, faultproxy.DynamoThrottle)
	check("the read throttled")
	p.ClearEvery()
	p.InjectEvery("TransactWriteItems", 1, faultproxy.DynamoInternalError)
	check("the write failing")
	p.ClearEvery()
	// A secret not derived yet, with KMS down.
	h.SetTrigger(hk.ID, "webhook.secret.version", &types.AttributeValueMemberN{Value: "7"})
	h.KMS.Close()
	check("KMS down")
}

// TestLogLine: a delivery's line names the trigger, the delivery, the
// event, the proof checked and a 401's reason, and counts Deliveries by
// Outcome; it never holds the body, another header's value or a secret.
func TestLogLine(t *testing.T) {
	h := harness(t)
	hk := newHook(t, h, nil)
	body := prBody("opened", "Confidential title")
	rows := []struct {
		rule, outcome, reason string
		headers               map[string]string
		body                  string
	}{
		{"started", "started", "", hk.signed(t, "", body, github("pull_request", "d1")), body},
		{"redelivered", "redelivered", "", hk.signed(t, "", body, github("pull_request", "d1")), body},
		{"a wrong proof", "unauthorized", "wrong_proof", hk.signed(t, "", body+" ", github("pull_request", "d2")), body},
		{"no proof", "unauthorized", "missing_proof", github("pull_request", "d3"), body},
		{"a ping", "ping", "", hk.signed(t, "", `{}`, github("ping", "d4")), `{}`},
		{"too large", "too_large", "", nil, strings.Repeat(" ", 256<<10+1)},
		{"a refused media type", "invalid", "", map[string]string{"Content-Type": "image/png"}, body},
	}
	for _, r := range rows {
		t.Run(r.rule, func(t *testing.T) {
			deliver(h, hk.ID, r.headers, r.body)
			logs := h.Logs()
			raw := logs[len(logs)-1]
			line := emftest.Check(t, raw)
			var m map[string]any
			if err := json.Unmarshal([]byte(raw), &m); err != nil {
				t.Fatal(err)
			}
			if m["outcome"] != r.outcome || line.Dimensions()["Outcome"] != r.outcome {
				t.Errorf("outcome %v, Outcome %v: %s", m["outcome"], line.Dimensions()["Outcome"], raw)
			}
			if v, ok := line.Value("Deliveries"); !ok || v != 1 {
				t.Errorf("Deliveries %v %t", v, ok)
			}
			if v, ok := line.Value("Starts"); (r.outcome == "started") != (ok && v == 1) {
				t.Errorf("Starts %v %t on a delivery %s", v, ok, r.outcome)
			}
			if r.outcome != "too_large" && r.outcome != "invalid" && (m["triggerId"] != hk.ID || m["verify"] != "github") {
				t.Errorf("trigger and proof: %s", raw)
			}
			if m["reason"] != nil && m["reason"] != r.reason || r.reason != "" && m["reason"] != r.reason {
				t.Errorf("reason %v, want %q", m["reason"], r.reason)
			}
			if r.outcome == "started" && (m["delivery"] != "d1" || m["event"] != "pull_request") {
				t.Errorf("delivery and event: %s", raw)
			}
			for _, secret := range []string{"Confidential", hk.secret, r.headers["x-hub-signature-256"]} {
				if secret != "" && strings.Contains(raw, secret) {
					t.Errorf("the line holds %q: %s", secret, raw)
				}
			}
		})
	}
}

// TestTriggerMoved: a trigger that moves between the read and the write
// writes nothing of the old one: the delivery is read and judged again,
// on the trigger as it is then (a new prompt renders; paused, it is 202).
func TestTriggerMoved(t *testing.T) {
	h, p := faulty(t)
	hk := newHook(t, h, func(tr *trigger.Trigger) { tr.Prompt = "Old {{ event }}" })
	move := func(set map[string]types.AttributeValue) {
		p.Inject("TransactWriteItems", 1, faultproxy.Before(func() {
			for path, v := range set {
				if err := h.UpdateTrigger(hk.ID, path, v); err != nil {
					t.Error(err)
				}
			}
		}))
	}
	move(map[string]types.AttributeValue{"version": &types.AttributeValueMemberN{Value: "2"}, "prompt": &types.AttributeValueMemberS{Value: "New {{ event }}"}})
	body := `{"ref":"main"}`
	res := deliver(h, hk.ID, hk.signed(t, "", body, github("push", "d1")), body)
	if rs := runs(t, h, hk.ID); res.Status != 201 || len(rs) != 1 || rs[0].Prompt != "New push" {
		t.Errorf("%d %s, runs %+v", res.Status, res.Raw, rs)
	}
	move(map[string]types.AttributeValue{"version": &types.AttributeValueMemberN{Value: "3"}, "active": &types.AttributeValueMemberBOOL{Value: false}})
	other := `{"ref":"dev"}`
	res = deliver(h, hk.ID, hk.signed(t, "", other, github("push", "d2")), other)
	if res.Status != 202 || res.Body["paused"] != true || len(runs(t, h, hk.ID)) != 1 {
		t.Errorf("paused in between: %d %s", res.Status, res.Raw)
	}
}

// TestTriggerKeepsMoving: a trigger that moves under every try of the
// delivery's write (commit.Tries) is 503 with Retry-After, and the
// delivery records nothing: its sender's retry starts it.
func TestTriggerKeepsMoving(t *testing.T) {
	h, p := faulty(t)
	hk := newHook(t, h, nil)
	for v := range commit.Tries {
		p.Inject("TransactWriteItems", 1, faultproxy.Before(func() {
			if err := h.UpdateTrigger(hk.ID, "version", &types.AttributeValueMemberN{Value: fmt.Sprint(10 + v)}); err != nil {
				t.Error(err)
			}
		}))
	}
	body := `{"ref":"main"}`
	before := h.Items()
	res := deliver(h, hk.ID, hk.signed(t, "", body, github("push", "d1")), body)
	if res.Status != 503 || res.Code() != "service_unavailable" || res.Headers["Retry-After"] == "" {
		t.Fatalf("%d %v %s", res.Status, res.Headers, res.Raw)
	}
	if after := h.Items(); len(after) != len(before) {
		t.Errorf("%d items, %d before", len(after), len(before))
	}
	if res := deliver(h, hk.ID, hk.signed(t, "", body, github("push", "d1")), body); res.Status != 201 || len(runs(t, h, hk.ID)) != 1 {
		t.Errorf("the retry: %d %s", res.Status, res.Raw)
	}
}

// TestConflict: real DynamoDB answers concurrent transactions on one item
// with TransactionConflict, which the embedded endpoint never produces:
// the delivery's write that meets one is tried again, and starts one
// session.
func TestConflict(t *testing.T) {
	h, p := faulty(t)
	hk := newHook(t, h, nil)
	body := `{"ref":"main"}`
	p.Inject("TransactWriteItems", 1, faultproxy.DynamoConflict)
	res := deliver(h, hk.ID, hk.signed(t, "", body, github("push", "d1")), body)
	if res.Status != 201 || len(runs(t, h, hk.ID)) != 1 {
		t.Errorf("%d %s, %d runs", res.Status, res.Raw, len(runs(t, h, hk.ID)))
	}
}

// TestRowWithoutMarker: a key whose ledger row stands without its marker
// (only a hand can leave one: they are written together, and the marker
// outlives the row) answers from the row, 200 whatever the prompt renders
// now (ledger rules 1 to 3 judge the row alone), within the redelivery's
// budget of 4 requests.
func TestRowWithoutMarker(t *testing.T) {
	h, p := faulty(t)
	hk := newHook(t, h, nil)
	body := `{"ref":"main"}`
	headers := hk.signed(t, "", body, github("push", "d1"))
	first := deliver(h, hk.ID, headers, body)
	if first.Status != 201 {
		t.Fatalf("%d %s", first.Status, first.Raw)
	}
	for _, it := range h.Items() {
		if strings.Contains(it, `"HOOK#`) {
			var item map[string]map[string]string
			_ = json.Unmarshal([]byte(it), &item)
			if _, err := h.Client.DeleteItem(t.Context(), &dynamodb.DeleteItemInput{TableName: aws.String(h.Table), Key: map[string]types.AttributeValue{
				"PK": &types.AttributeValueMemberS{Value: item["PK"]["S"]}, "SK": &types.AttributeValueMemberS{Value: item["SK"]["S"]},
			}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	h.SetTrigger(hk.ID, "prompt", &types.AttributeValueMemberS{Value: "Another {{ event }}"})
	total := p.Count("")
	again := deliver(h, hk.ID, headers, body)
	// Measured: the read, the refused write, the row's session.
	if n := p.Count("") - total; n != 3 {
		t.Errorf("%d requests, want 3", n)
	}
	if again.Status != 200 || again.Body["sessionId"] != first.Body["sessionId"] || len(runs(t, h, hk.ID)) != 1 {
		t.Errorf("%d %s", again.Status, again.Raw)
	}
}
