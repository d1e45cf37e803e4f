package hook_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/cloud-agent/control-plane/infra/local/apitest"
	"github.com/cloud-agent/control-plane/shared/settings"
	"github.com/cloud-agent/control-plane/shared/trigger"
	"github.com/cloud-agent/control-plane/shared/webhook"
)

// plain is an imported secret whose every character is one a delivery
// id may hold, so that a header that carries it passes as a delivery's
// id.
const plain = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

// owner is the claims of the triggers' user.
var owner = map[string]string{"sub": "u1", "org_ids": "[o1 o2]"}

// TestSecretNeverRecorded: a token trigger whose own header is one the
// hook reads for something else (X-Gitlab-Event, which the create route
// refuses, planted here in the table) gets its secret as the delivery's
// event, and a delivery header may carry it too: the secret, current or
// previous, is [redacted] in the run item, the answer, the log line and
// the runs view.
func TestSecretNeverRecorded(t *testing.T) {
	for _, which := range []string{"current", "previous"} {
		t.Run(which, func(t *testing.T) {
			h := harness(t)
			hk := newHook(t, h, func(tr *trigger.Trigger) {
				tr.Webhook.Verify, tr.Webhook.Header = webhook.VerifyToken, "X-Gitlab-Event"
				tr.Prompt = "Event {{ event }}, delivery {{ delivery }}"
				if which == "current" {
					sealed(t, h, tr, plain)
					return
				}
				b, err := h.Secrets.Seal(context.Background(), tr.ID, plain)
				if err != nil {
					t.Fatal(err)
				}
				tr.Webhook.Previous = &trigger.Secret{Sealed: b, CreatedAt: clock.Add(-2 * time.Hour), ValidUntil: clock.Add(time.Hour)}
			})
			res := deliver(h, hk.ID, map[string]string{"X-Gitlab-Event": plain, "X-Gitlab-Event-UUID": plain}, `{}`)
			if res.Status != 201 {
				t.Fatalf("%d %s", res.Status, res.Raw)
			}
			if res.Body["delivery"] != "[redacted]" {
				t.Errorf("the answer's delivery: %s", res.Raw)
			}
			key := strings.TrimPrefix(plain, "whsec_")
			places := map[string]string{"the answer": res.Raw, "the log line": h.LastLog()}
			for _, it := range h.Items() {
				if strings.Contains(it, `"RUN#`) {
					places["the run item"] = it
				}
			}
			view := h.Do(apitest.Call{Method: "GET", Path: "/v1/triggers/" + hk.ID + "/runs", Claims: owner})
			places["the runs view"] = view.Raw
			if view.Status != 200 || !strings.Contains(view.Raw, `"event":"[redacted]"`) || !strings.Contains(view.Raw, `"delivery":"[redacted]"`) {
				t.Errorf("runs view: %d %s", view.Status, view.Raw)
			}
			if places["the run item"] == "" {
				t.Fatal("no run item")
			}
			for place, text := range places {
				if strings.Contains(text, key) {
					t.Errorf("%s holds the secret: %s", place, text)
				}
			}
			// Its redelivery is keyed by the whole header: it answers from its run.
			again := deliver(h, hk.ID, map[string]string{"X-Gitlab-Event": plain, "X-Gitlab-Event-UUID": plain}, `{}`)
			if again.Status != 200 || again.Body["sessionId"] != res.Body["sessionId"] || strings.Contains(again.Raw+h.LastLog(), key) {
				t.Errorf("redelivered: %d %s %s", again.Status, again.Raw, h.LastLog())
			}
		})
	}
}

// ledgerRow sets members of the one ledger row in the table.
func ledgerRow(t *testing.T, h *apitest.Harness, set map[string]types.AttributeValue) {
	t.Helper()
	for _, it := range h.Items() {
		if !strings.Contains(it, `"OPERATION#`) {
			continue
		}
		var item map[string]map[string]string
		if err := json.Unmarshal([]byte(it), &item); err != nil {
			t.Fatal(err)
		}
		for name, v := range set {
			if _, err := h.Client.UpdateItem(t.Context(), &dynamodb.UpdateItemInput{TableName: aws.String(h.Table),
				Key: map[string]types.AttributeValue{
					"PK": &types.AttributeValueMemberS{Value: item["PK"]["S"]}, "SK": &types.AttributeValueMemberS{Value: item["SK"]["S"]},
				},
				UpdateExpression:          aws.String("SET #n = :v"),
				ExpressionAttributeNames:  map[string]string{"#n": name},
				ExpressionAttributeValues: map[string]types.AttributeValue{":v": v},
			}); err != nil {
				t.Fatal(err)
			}
		}
		return
	}
	t.Fatal("no ledger row")
}

// TestRedeliveryByTheLedger: a redelivery whose key has a live ledger
// row is judged by ledger rules 1 to 3 and 7, as the start route and a
// trigger's run judge it: a row on a retired allocation or provider (by
// the settings, or the shared kind, retired whatever they say) is 422,
// a row of another org 409, never a replay; a row whose session is gone
// 404; only when no live row stands
// does the run (its marker) answer 200. Nothing is recorded either way.
func TestRedeliveryByTheLedger(t *testing.T) {
	h := harness(t)
	hk := newHook(t, h, nil)
	body := prBody("opened", "Ledger")
	headers := hk.signed(t, "", body, github("pull_request", "d1"))
	first := deliver(h, hk.ID, headers, body)
	if first.Status != 201 {
		t.Fatalf("%d %s", first.Status, first.Raw)
	}
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	rows := []struct {
		rule     string
		settings []settings.Parameter
		row      map[string]types.AttributeValue
		status   int
		code     string
	}{
		{"the row's allocation retired by the settings", []settings.Parameter{{Name: "allocation/retired", Type: "StringList", Value: "cloudflare-containers-standard-4"}},
			nil, 422, "sandbox_allocation_retired"},
		{"the row's provider retired by the settings", []settings.Parameter{{Name: "provider/retired", Type: "StringList", Value: "cloudflare-containers"}},
			nil, 422, "sandbox_runtime_retired"},
		{"nothing retired: the row replays its session", nil, nil, 200, ""},
		{"the row records the shared kind, retired built in", nil, map[string]types.AttributeValue{"sandboxKind": s("shared")}, 422, "sandbox_allocation_retired"},
		{"the row's session is gone (rule 7)", nil, map[string]types.AttributeValue{"sandboxKind": s("isolated"), "sessionId": s("workspace_gone")}, 404, "not_found"},
		{"the row records another org (rule 1)", nil, map[string]types.AttributeValue{"orgId": s("o9")}, 409, "operation_key_reuse_mismatch"},
		{"the row expired: the run answers", nil, map[string]types.AttributeValue{"expiresAt": &types.AttributeValueMemberN{Value: "1"}}, 200, ""},
	}
	for _, r := range rows {
		t.Run(r.rule, func(t *testing.T) {
			h.SetSettings(r.settings)
			if r.row != nil {
				ledgerRow(t, h, r.row)
			}
			before := len(h.Items())
			res := deliver(h, hk.ID, headers, body)
			if res.Status != r.status || res.Code() != r.code {
				t.Fatalf("%d %s, want %d %s", res.Status, res.Raw, r.status, r.code)
			}
			if r.status == 200 && (res.Body["sessionId"] != first.Body["sessionId"] || res.Body["replayed"] != true) {
				t.Errorf("replay %s, first %s", res.Raw, first.Raw)
			}
			if len(h.Items()) != before || len(runs(t, h, hk.ID)) != 1 {
				t.Errorf("recorded: %d items, %d runs", len(h.Items())-before, len(runs(t, h, hk.ID)))
			}
			var line map[string]any
			if err := json.Unmarshal([]byte(h.LastLog()), &line); err != nil || line["outcome"] != "redelivered" {
				t.Errorf("the line: %s", h.LastLog())
			}
		})
	}
}

// TestFormMode: a GitHub delivery in form mode (payload=<json>) matches
// its name.action entry by the payload's action, and renders from it.
func TestFormMode(t *testing.T) {
	h := harness(t)
	hk := newHook(t, h, func(tr *trigger.Trigger) { tr.Webhook.Events = []string{"pull_request.opened"} })
	send := func(action string) apitest.Result {
		body := "payload=" + url.QueryEscape(prBody(action, "Form mode"))
		return deliver(h, hk.ID, hk.signed(t, "", body, map[string]string{
			"X-GitHub-Event": "pull_request", "X-GitHub-Delivery": "f-" + action, "Content-Type": "application/x-www-form-urlencoded",
		}), body)
	}
	if res := send("opened"); res.Status != 201 {
		t.Fatalf("%d %s", res.Status, res.Raw)
	}
	if rs := runs(t, h, hk.ID); len(rs) != 1 || rs[0].Prompt != "Review Form mode (pull_request)" {
		t.Errorf("runs %+v", rs)
	}
	if res := send("closed"); res.Status != 202 || res.Body["ignored"] != true {
		t.Errorf("another action: %d %s", res.Status, res.Raw)
	}
}

// TestHeaderNotUTF8: a proven delivery whose event header is not valid
// UTF-8 is 400 invalid_request, never repaired, and records nothing.
func TestHeaderNotUTF8(t *testing.T) {
	h := harness(t)
	hk := newHook(t, h, nil)
	body := prBody("opened", "Bytes")
	res := deliver(h, hk.ID, hk.signed(t, "", body, github("pull\xffrequest", "d1")), body)
	if res.Status != 400 || res.Code() != "invalid_request" || !strings.Contains(res.Body["detail"].(string), "x-github-event") {
		t.Errorf("%d %s", res.Status, res.Raw)
	}
	if n := len(runs(t, h, hk.ID)); n != 0 {
		t.Errorf("%d runs", n)
	}
}

// TestTooLargeAsArrived: a body over 256 KiB as it arrived is 413 before
// the proof, a form body too, with the limit in the detail;
// a form body at the limit is judged, its payload decoded within it
// (percent and base64 decoding only shrink a body) and its action
// matched.
func TestTooLargeAsArrived(t *testing.T) {
	h := harness(t)
	hk := newHook(t, h, func(tr *trigger.Trigger) { tr.Webhook.Events = []string{"pull_request.opened"} })
	form := func(n int) string {
		head := "payload=" + url.QueryEscape(`{"action":"opened","pad":"`)
		tail := url.QueryEscape(`"}`)
		return head + strings.Repeat("%41", (n-len(head)-len(tail))/3) + tail
	}
	over := form(256<<10 + 3)
	res := deliver(h, hk.ID, map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, over)
	if res.Status != 413 || res.Code() != "payload_too_large" || !strings.Contains(res.Body["detail"].(string), "256 KiB") {
		t.Errorf("over: %d %s", res.Status, res.Raw)
	}
	at := form(256 << 10)
	if len(at) > 256<<10 {
		t.Fatalf("%d bytes", len(at))
	}
	res = deliver(h, hk.ID, hk.signed(t, "", at, map[string]string{"X-GitHub-Event": "pull_request", "Content-Type": "application/x-www-form-urlencoded"}), at)
	if res.Status != 201 {
		t.Errorf("at the limit: %d %s", res.Status, res.Raw)
	}
}

// TestOtherFamiliesIgnored: a delivery proven by its trigger's own
// verify while another family's proof headers are also present is
// judged by its own proof alone (the others are ignored, not refused),
// and their values are in no prompt, run, answer or log line.
func TestOtherFamiliesIgnored(t *testing.T) {
	h := harness(t)
	hk := newHook(t, h, func(tr *trigger.Trigger) {
		tr.Prompt = "{{ headers }} {{ headers.x-gitlab-token }} {{ headers.webhook-signature }} {{ headers.authorization }} {{ body }}"
	})
	body := `{"ref":"main"}`
	others := map[string]string{
		"webhook-id": "other-id-1", "webhook-timestamp": "1796000000", "webhook-signature": "v1,b3RoZXItc2lnbmF0dXJl",
		"svix-signature": "v1,c3ZpeC1zaWduYXR1cmU=", "X-Gitlab-Token": "other-gitlab-token", "Authorization": "Bearer other-bearer-token",
	}
	headers := hk.signed(t, "", body, github("push", "d1"))
	for k, v := range others {
		headers[strings.ToLower(k)] = v
	}
	res := deliver(h, hk.ID, headers, body)
	if res.Status != 201 {
		t.Fatalf("%d %s", res.Status, res.Raw)
	}
	view := h.Do(apitest.Call{Method: "GET", Path: "/v1/triggers/" + hk.ID + "/runs", Claims: owner})
	rs := runs(t, h, hk.ID)
	if len(rs) != 1 || !strings.Contains(rs[0].Prompt, `"x-github-event": "push"`) {
		t.Fatalf("runs %+v", rs)
	}
	texts := map[string]string{"the prompt": rs[0].Prompt, "the answer": res.Raw, "the log line": h.LastLog(), "the runs view": view.Raw, "the table": strings.Join(h.Items(), "\n")}
	for place, text := range texts {
		for _, v := range []string{"b3RoZXItc2lnbmF0dXJl", "c3ZpeC1zaWduYXR1cmU", "other-gitlab-token", "other-bearer-token", headers["x-hub-signature-256"]} {
			if strings.Contains(text, v) {
				t.Errorf("%s holds %q", place, v)
			}
		}
	}
}

// TestLargestRunsView: the runs view at limit 50 and at its most, 100,
// of the largest webhook runs the contract allows (prompt the first 1,000
// code points, of 4-byte characters; delivery 128; event 100 code points
// of 4-byte characters) stays under 1 MB.
func TestLargestRunsView(t *testing.T) {
	h := harness(t)
	limit(h, "1000")
	hk := newHook(t, h, func(tr *trigger.Trigger) { tr.Prompt = "{{ body.t }}" })
	event := strings.Repeat("😀", webhook.EventMax)
	for i := range 100 {
		body := fmt.Sprintf(`{"i":%d,"t":"%s"}`, i, strings.Repeat("😀", 1200))
		id := fmt.Sprintf("%03d", i) + strings.Repeat("d", webhook.DeliveryMaxID-3)
		if res := deliver(h, hk.ID, hk.signed(t, "", body, github(event, id)), body); res.Status != 201 {
			t.Fatalf("%d %s", res.Status, res.Raw)
		}
	}
	for _, n := range []int{50, 100} {
		view := h.Do(apitest.Call{Method: "GET", Path: fmt.Sprintf("/v1/triggers/%s/runs?limit=%d", hk.ID, n), Claims: owner})
		items, _ := view.Body["items"].([]any)
		if view.Status != 200 || len(items) != n {
			t.Fatalf("limit %d: %d, %d runs", n, view.Status, len(items))
		}
		if run, _ := items[0].(map[string]any); run["event"] != event || run["promptLength"] != float64(1200) {
			t.Errorf("limit %d: a run %v", n, run["event"])
		}
		if len(view.Raw) >= 1<<20 {
			t.Errorf("limit %d: %d bytes", n, len(view.Raw))
		}
		t.Logf("limit %d: %d bytes", n, len(view.Raw))
	}
	// One code point more is no event: recorded null.
	body := `{"t":"over"}`
	if res := deliver(h, hk.ID, hk.signed(t, "", body, github(event+"a", "over")), body); res.Status != 201 {
		t.Fatalf("%d %s", res.Status, res.Raw)
	}
	for _, r := range runs(t, h, hk.ID) {
		if r.Delivery == "over" && r.Event != "" {
			t.Errorf("an event over 100 code points: %q", r.Event)
		}
	}
}
