package triggerapi

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/cloud-agent/control-plane/shared/httpapi"
	"github.com/cloud-agent/control-plane/shared/problem"
	"github.com/cloud-agent/control-plane/shared/session"
	"github.com/cloud-agent/control-plane/shared/trigger"
	"github.com/cloud-agent/control-plane/shared/webhook"
)

// FuzzPatch: decoding a PATCH body never panics; a body it refuses is a
// 400; a patch it accepts (without an allocation, which needs the
// settings) makes of a scheduled and of a webhook trigger a trigger or a
// 400, and applying it again changes nothing more (a merge patch is
// idempotent).
func FuzzPatch(f *testing.F) {
	for _, seed := range []string{
		`{}`, `{"prompt":"x"}`, `{"active":false}`, `{"active":null}`, `{"orgId":"o"}`,
		`{"schedule":{"cron":"*/5 * * * *","timezone":null}}`, `{"schedule":{"timezone":"Asia/Tokyo"}}`,
		`{"repository":{"type":"gitlab","repo":null,"url":"https://gitlab.com/a/b.git"}}`, `{"repository":{"branch":null}}`,
		`{"agent":{"variant":"v","model":"m2"}}`, `{"agent":{"mode":null}}`, `{"prompt":"a","prompt":"b"}`, `[]`, `{"prompt":"\xff"}`,
		`{"schedule":{"cron":"0 9 * * 1-5","extra":1}}`, `{"repository":{"branch":"ghp_x"}}`, `{"prompt":""}`, `{"active":"yes"}`,
		`{"active":1e400}`, `{"schedule":{"cron":-1e999}}`, `{"prompt":12}`,
		`{"webhook":{"events":["push"]}}`, `{"webhook":{"events":null}}`, `{"webhook":{"events":[]}}`, `{"webhook":null}`,
		`{"webhook":{"verify":"token"}}`, `{"prompt":"{{ body.a }}"}`, `{"prompt":"{{"}`,
	} {
		f.Add([]byte(seed))
	}
	now := time.Date(2026, 11, 30, 10, 0, 30, 0, time.UTC)
	tr := &trigger.Trigger{
		ID: "trg_a", UserID: "u1", Active: true, Cron: "0 9 * * 1-5", Timezone: "Europe/Berlin",
		Repository: session.Repository{Type: "github", Repo: "acme/app"}, Agent: session.Agent{Mode: "code", Model: "m"},
		Prompt: "p", CreatedAt: now, NextRunAt: now.Add(time.Hour), Version: 1,
	}
	hook := *tr
	hook.Cron, hook.Timezone, hook.NextRunAt = "", "", time.Time{}
	hook.Webhook = &trigger.Webhook{Verify: webhook.VerifyToken, Header: "X-Token", Secret: trigger.Secret{Version: 1, CreatedAt: now}}
	s := &Service{}
	f.Fuzz(func(t *testing.T, body []byte) {
		r := &httpapi.Request{Event: &events.APIGatewayV2HTTPRequest{}, Body: body}
		p, err := parsePatch(r)
		if err != nil {
			if problem.CodeOf(err) != problem.InvalidRequest {
				t.Fatalf("refused with %v", err)
			}
			return
		}
		if _, named := p["sandboxAllocation"]; named {
			return
		}
		for _, tr := range []*trigger.Trigger{tr, &hook} {
			next, err := s.apply(context.Background(), tr, p, now)
			if err != nil {
				if problem.CodeOf(err) != problem.InvalidRequest {
					t.Fatalf("applied with %v", err)
				}
				continue
			}
			again, err := s.apply(context.Background(), next, p, now)
			if err != nil || !reflect.DeepEqual(again, next) {
				t.Fatalf("applied twice: %+v, once: %+v: %v", again, next, err)
			}
		}
	})
}

// FuzzCursors: a cursor from outside decodes, or is 400; never a panic.
func FuzzCursors(f *testing.F) {
	for _, seed := range []string{"", "e30", "bm90IGEgY3Vyc29y", *httpapi.EncodeCursor(runCursor{Trigger: "trg_a", After: "RUN#2026-11-30T10:05:00.000Z"}), *httpapi.EncodeCursor(runCursor{Trigger: "trg_a", Slot: "2026-11-30T10:05:00Z", Run: "workspace_x"}),
		*httpapi.Position{ID: "trg_a", CreatedAt: time.Date(2026, 11, 30, 10, 0, 30, 5e8, time.UTC)}.Cursor(), "!!", "eyJzbG90IjoxfQ"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if _, err := decodeRunCursor(s, "trg_a"); err != nil && problem.CodeOf(err) != problem.InvalidRequest {
			t.Fatalf("runs: %v", err)
		}
		r := &httpapi.Request{Event: &events.APIGatewayV2HTTPRequest{QueryStringParameters: map[string]string{"cursor": s}}}
		if _, err := r.After(); err != nil && problem.CodeOf(err) != problem.InvalidRequest {
			t.Fatalf("triggers: %v", err)
		}
	})
}
