package gateway_test

import (
	"slices"
	"strings"
	"testing"
)

// TestBadInputTriggerBodies is docs/bad-input.md's rows of a webhook
// trigger's body ("Trigger bodies"), row by row, through the gateway: each
// refused body gets its answer, with a detail that says why, and changes
// nothing in the table; each near miss is created (201) or changed (200).
func TestBadInputTriggerBodies(t *testing.T) {
	b := newBadInput(t)
	tok := b.webhookTrigger(t, `{"verify":"token","header":"X-Webhook-Secret"}`)
	hookTrigger := func(webhook string) string {
		return strings.Replace(triggerBody, `"schedule":{"cron":"0 9 * * 1-5","timezone":"Europe/Berlin"}`, `"webhook":`+webhook, 1)
	}
	type row = bodyRow
	var rows []row
	for _, h := range []string{
		"X-Gitlab-Event", "x-github-event", "X-GitHub-Delivery", "X-Gitlab-Event-UUID", "Idempotency-Key",
		"X-Gitlab-Token", "X-Hub-Signature-256", "svix-timestamp", "webhook-id", "Proxy-Authorization", "Cookie",
		"Connection", "TE", "Upgrade", "Forwarded", "X-Forwarded-For", "x-amzn-trace-id", "Content-Length",
	} {
		rows = append(rows, row{"a token trigger's header " + h, "POST", hookTrigger(`{"verify":"token","header":"` + h + `"}`), 400, "webhook.header may not be " + h + ": "})
	}
	for _, e := range []string{" Push Hook", "Push Hook ", "Push  Hook", `Push\tHook`} {
		rows = append(rows, row{"an event " + e, "POST", hookTrigger(`{"verify":"token","events":["` + e + `"]}`), 400, "webhook.events holds an event that is not 1 to 100"})
	}
	rows = append(rows,
		row{"events as a string", "POST", hookTrigger(`{"events":"push"}`), 400, "webhook.events must be an array of strings."},
		row{"events as a string, patched", "PATCH", `{"webhook":{"events":"push"}}`, 400, "webhook.events must be an array of strings."},
		row{"events as an object, patched", "PATCH", `{"webhook":{"events":{"push":true}}}`, 400, "webhook.events must be an array of strings."},
		row{"an event of another type", "POST", hookTrigger(`{"events":["push",1]}`), 400, "webhook.events.1 must be a string."},
		row{"a header, patched", "PATCH", `{"webhook":{"header":"X-Other"}}`, 400, "webhook.header is not a known member."},
		row{"a token trigger's header X-Custom-Token", "POST", hookTrigger(`{"verify":"token","header":"X-Custom-Token"}`), 201, `"header":"X-Custom-Token"`},
		row{"GitLab's event names", "POST", hookTrigger(`{"verify":"token","events":["Push Hook","Merge Request Hook"]}`), 201, `"events":["Push Hook","Merge Request Hook"]`},
		row{"GitLab's event names, patched", "PATCH", `{"webhook":{"events":["Note Hook","Merge Request Hook.merge"]}}`, 200, `"events":["Note Hook","Merge Request Hook.merge"]`},
	)
	b.checkBodies(t, "/v1/triggers", "/v1/triggers/"+tok.id, rows)
}

// bodyRow is a row of a table of bodies: a POST to a collection or a
// PATCH of one of its items, the status it gets, and what a 400's detail
// starts with, or what a 2xx answer shows.
type bodyRow struct {
	name, method, body string
	status             int
	want               string
}

// checkBodies sends each row's body, as the bad-input user, to create (a
// POST) or item (a PATCH): a 400 is invalid_request with the row's detail
// and changes nothing in the table; another status shows the row's text.
// No answer quotes credential.
func (b *badInput) checkBodies(t *testing.T, create, item string, rows []bodyRow) {
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			target := create
			if r.method == "PATCH" {
				target = item
			}
			before := b.items(t)
			a := b.raw(t, r.method, target, []string{bearer(biUser), "Content-Type: application/json"}, r.body)
			if a.status != r.status {
				t.Fatalf("%d %s, want %d", a.status, a.body, r.status)
			}
			if strings.Contains(a.body, credential) {
				t.Errorf("the answer quotes the value: %s", a.body)
			}
			if r.status != 400 {
				if !strings.Contains(a.body, r.want) {
					t.Errorf("the answer does not show %s: %s", r.want, a.body)
				}
				return
			}
			var p struct{ Code, Detail string }
			_ = jsonUnmarshal(a.body, &p)
			if p.Code != "invalid_request" || !strings.HasPrefix(p.Detail, r.want) {
				t.Errorf("%s %q, want invalid_request %q…", p.Code, p.Detail, r.want)
			}
			if after := b.items(t); !slices.Equal(before, after) {
				t.Errorf("the table changed:\nbefore %v\nafter  %v", before, after)
			}
		})
	}
}
