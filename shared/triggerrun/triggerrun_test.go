package triggerrun

import (
	"errors"
	"testing"
	"time"

	"github.com/cloud-agent/control-plane/shared/allocation"
	"github.com/cloud-agent/control-plane/shared/environment"
	"github.com/cloud-agent/control-plane/shared/ledger"
	"github.com/cloud-agent/control-plane/shared/problem"
	"github.com/cloud-agent/control-plane/shared/session"
	"github.com/cloud-agent/control-plane/shared/start"
	"github.com/cloud-agent/control-plane/shared/trigger"
	"github.com/cloud-agent/control-plane/shared/webhook"
)

// TestFailed: which refused start records a failed run, and its code; a
// fault (no outcome) records none.
func TestFailed(t *testing.T) {
	retired := problem.New(problem.SandboxAllocationRetired, "retired")
	for _, r := range []struct {
		rule   string
		out    ledger.Outcome
		code   problem.Code
		failed bool
	}{
		{"a bad stored value, judged afresh", ledger.RefusedWith(problem.New(problem.InvalidRequest, "bad")), problem.InvalidRequest, true},
		{"checks 3 to 6, no row in the way", ledger.Outcome{Kind: ledger.Refused, Refusal: problem.New(problem.SandboxAllocationUnavailable, "no"), RowRead: true}, problem.SandboxAllocationUnavailable, true},
		{"the key's row: its allocation retired since", ledger.Outcome{Kind: ledger.Refused, Refusal: retired, ByRow: true}, "", false},
		{"the key's row: another payload", ledger.Outcome{Kind: ledger.Refused, Refusal: problem.New(problem.OperationKeyPayloadMismatch, "x"), ByRow: true}, "", false},
		{"the key's row: in progress", ledger.Outcome{Kind: ledger.Refused, Refusal: problem.New(problem.CreationInProgress, "x"), ByRow: true}, "", false},
		{"no usable default", ledger.RefusedWith(problem.New(problem.ServiceUnavailable, "none")), "", false},
		{"a fault: the trigger moved, or another", ledger.Outcome{}, "", false},
		{"a start", ledger.Outcome{Kind: ledger.Started}, "", false},
	} {
		t.Run(r.rule, func(t *testing.T) {
			if code, failed := Failed(r.out); code != r.code || failed != r.failed {
				t.Errorf("Failed %q %t, want %q %t", code, failed, r.code, r.failed)
			}
		})
	}
}

// TestCommand: a trigger's start is for its user and org, never a bot,
// with its repository, agent, prompt, the platform and the kind's key, and
// the saved allocation as the policy chose it; each kind's key.
func TestCommand(t *testing.T) {
	tr := &trigger.Trigger{ID: "trg_a", UserID: "u1", OrgID: "o1", Prompt: "Go.", SavedAllocation: allocation.VercelSmall,
		Repository: session.Repository{Type: "github", Repo: "acme/app"}, Agent: session.Agent{Mode: "code", Model: "m"}}
	slot := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	cmd, choice := Command(tr, allocation.DefaultPolicy(), nil, start.PlatformScheduled, SlotKey(tr.ID, slot))
	req := cmd.Request
	if cmd.UserID != "u1" || cmd.BotID != "" || req.OrgID != "o1" || *req.Prompt != "Go." || req.Repository.Repo != "acme/app" ||
		req.CreatedOnPlatform != "scheduled" || req.OperationKey != "trigger:trg_a:2026-11-30T10:00:00Z" || cmd.Allocation.Name() != allocation.VercelSmall {
		t.Errorf("command %+v, request %+v", cmd, req)
	}
	if Status(choice, nil) != trigger.StatusFired {
		t.Error("a saved allocation that runs is fired")
	}
	if k := NowKey("trg_a", "k1"); k != "trigger:trg_a:now:k1" {
		t.Errorf("now key %s", k)
	}
	p, _ := allocation.NewPolicy(allocation.Config{RetiredAllocations: []string{allocation.VercelSmall}})
	cmd, choice = Command(tr, p, nil, start.PlatformNow, "")
	if !cmd.Allocation.IsZero() || Status(choice, nil) != trigger.StatusFallback || cmd.Request.OperationKey != "" {
		t.Errorf("a retired saved allocation falls back: %+v %+v", cmd, choice)
	}
}

// TestCommandEnvironment: a trigger's start runs in its named
// environment, else its owner's default (a delivery takes none); the
// environment's saved allocation applies only when the trigger saved
// none, as a saved value whose fallback is the run's status; a named
// environment gone is the start's refusal, judged after the ledger.
func TestCommandEnvironment(t *testing.T) {
	node := &environment.Environment{ID: "env_node", OwnerUserID: "u1", OrgID: "o1", Name: "Node", Version: 3, SavedAllocation: allocation.VercelSmall}
	def := &environment.Environment{ID: "env_def", OwnerUserID: "u1", Name: "Default", SavedAllocation: allocation.CloudflareShared}
	found := &environment.Found{ByID: map[string]*environment.Environment{"env_node": node}, Defaults: map[environment.Owner]*environment.Environment{{UserID: "u1"}: def}}
	base := trigger.Trigger{ID: "trg_a", UserID: "u1", OrgID: "o1", Prompt: "Go.", Repository: session.Repository{Type: "github", Repo: "acme/app"}, Agent: session.Agent{Mode: "code", Model: "m"}}
	named, saved, gone := base, base, base
	named.EnvironmentID, saved.EnvironmentID, gone.EnvironmentID = "env_node", "env_node", "env_gone"
	saved.SavedAllocation = allocation.VercelLarge
	policy := allocation.DefaultPolicy()
	for _, r := range []struct {
		rule      string
		tr        *trigger.Trigger
		platform  string
		env       *environment.Environment
		preferred string
		status    string
	}{
		{"its named environment, with its allocation", &named, start.PlatformScheduled, node, allocation.VercelSmall, trigger.StatusFired},
		{"its saved allocation goes first", &saved, start.PlatformNow, node, "", trigger.StatusFired},
		{"its owner's default, whose retired allocation falls back", &base, start.PlatformScheduled, def, "", trigger.StatusFallback},
		{"a delivery takes no default", &base, start.PlatformWebhook, nil, "", trigger.StatusFired},
		{"a delivery's named environment", &named, start.PlatformWebhook, node, allocation.VercelSmall, trigger.StatusFired},
	} {
		cmd, choice := Command(r.tr, policy, found, r.platform, "")
		preferred := ""
		if !cmd.Preferred.IsZero() {
			preferred = cmd.Preferred.Name()
		}
		if cmd.Environment != r.env || cmd.EnvironmentRefusal != nil || !cmd.Resolved || preferred != r.preferred || Status(choice, nil) != r.status {
			t.Errorf("%s: %+v, choice %+v", r.rule, cmd, choice)
		}
	}
	if cmd, _ := Command(&gone, policy, found, start.PlatformScheduled, ""); cmd.EnvironmentRefusal != environment.ErrNotFound {
		t.Errorf("a named environment gone: %v", cmd.EnvironmentRefusal)
	}
}

// TestPrompt: a scheduled trigger's prompt is as stored; a webhook
// trigger's is its template rendered, its own header hidden like the
// other proof headers and its secrets [redacted]; a stored template that
// no longer parses is a bad request.
func TestPrompt(t *testing.T) {
	at := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	hook := &trigger.Webhook{Verify: webhook.VerifyToken, Header: "X-Token"}
	in := webhook.EmptyInput("trg_a", at)
	in.Headers = map[string]string{"x-token": "s3cret", "x-other": "seen"}
	in.Secrets = []string{"s3cret"}
	for _, r := range []struct {
		rule   string
		tr     *trigger.Trigger
		want   string
		failed bool
	}{
		{"a scheduled trigger's prompt is not a template", &trigger.Trigger{Prompt: "{{ method }}"}, "{{ method }}", false},
		{"the empty delivery", &trigger.Trigger{Prompt: "{{method}} {{path}} {{body}} {{timestamp}}", Webhook: hook}, "POST /v1/hooks/trg_a {} 2026-11-30T10:00:00Z", false},
		{"the trigger's own header is hidden", &trigger.Trigger{Prompt: "[{{ headers.x-token }}] {{ headers.x-other }}", Webhook: hook}, "[] seen", false},
		{"its secret is redacted", &trigger.Trigger{Prompt: "s3cret", Webhook: hook}, "[redacted]", false},
		{"a template that no longer parses", &trigger.Trigger{Prompt: "{{ nope }}", Webhook: hook}, "", true},
	} {
		t.Run(r.rule, func(t *testing.T) {
			got, err := Prompt(r.tr, in)
			if got != r.want || (err != nil) != r.failed || r.failed && problem.CodeOf(err) != problem.InvalidRequest {
				t.Errorf("%q %v, want %q", got, err, r.want)
			}
		})
	}
}

// TestRedacted: a refusal's detail, answered and recorded with the
// delivery's marker, holds no secret of the trigger; a detail without
// one is the error as it came.
func TestRedacted(t *testing.T) {
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	err := redacted(problem.New(problem.InvalidRequest, "prompt holds "+secret+"."), []string{secret, ""})
	if pe, ok := errors.AsType[*problem.Error](err); !ok || pe.Detail != "prompt holds [redacted]." || pe.Code != problem.InvalidRequest {
		t.Errorf("%v", err)
	}
	plain := problem.New(problem.InvalidRequest, "prompt is bad.")
	if got := redacted(plain, []string{secret}); got != plain {
		t.Errorf("%v", got)
	}
}
