// Package triggerrun is how a trigger starts a session, for each kind of
// run: a scheduled slot (the firing), a start now (POST
// /v1/triggers/{triggerId}/run) and, from contract v6, a webhook
// delivery. It builds the start from the trigger (Command), gives each
// kind its operation key (SlotKey, NowKey; a delivery's is
// webhook.Delivery.OperationKey), says what a run's status is (Status)
// and which refused start records a failed run (Failed), opens a webhook
// trigger's secrets (ClearSecrets) and renders its prompt (Prompt), and
// runs a start now (Runner.StartNow) and a delivery's start
// (Runner.StartDelivery). The start itself is package start's, the
// ledger's and the table's.
package triggerrun

import (
	"context"
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

// Command is the start of a trigger's session, for every kind of run: for
// the trigger's user and org, never a bot, with its repository, agent and
// prompt, created on platform, in its environment as found resolves it (a
// delivery's, on PlatformWebhook, takes no default), and its saved
// allocation as the policy chose it (the effective default when the saved
// one fails checks 3 to 6); without one saved, the environment's, as a
// saved value too; with the operation key its kind gives it (SlotKey,
// NowKey; "" for none). The choice is the trigger's, else the
// environment's: what the run's status says (Status). Without a usable
// default, the start's own placement refuses it (503), after the key's
// ledger row, if any, was judged: a row answers first, as on the start
// route; so does a named environment the user no longer owns
// (environment_not_found). The request is not validated: a stored
// trigger holds what its route validated, by the rules of the release
// that wrote it, and one that does not pass the start's rules now (an
// older writer's, or a hand's) is refused like a bad request
// (docs/decisions.md) by its caller.
func Command(tr *trigger.Trigger, policy *allocation.Policy, found *environment.Found, platform, key string) (start.Command, allocation.Choice) {
	choice, _ := policy.Resolve(tr.SavedAllocation, tr.SavedRequest, allocation.Owner(tr.UserID, tr.OrgID))
	prompt := tr.Prompt
	req := &start.Request{
		OrgID: tr.OrgID, Repository: tr.Repository, Agent: tr.Agent, EnvironmentID: tr.EnvironmentID,
		Prompt: &prompt, CreatedOnPlatform: platform, OperationKey: key,
	}
	cmd := start.Command{UserID: tr.UserID, Request: req, Allocation: choice.Start, Policy: policy, Delivery: platform == start.PlatformWebhook}
	cmd, envChoice := cmd.InEnvironment(found, policy)
	if tr.SavedAllocation != "" || tr.SavedRequest != nil {
		cmd.Preferred = allocation.Allocation{} // the trigger's saved allocation goes first, fallen back or not
		return cmd, choice
	}
	return cmd, envChoice
}

// environments is what the start of tr on platform resolves its
// environment from: found when it covers that start (the firing's read
// of its due triggers), else read now.
func (r *Runner) environments(ctx context.Context, tr *trigger.Trigger, found *environment.Found, platform string) (*environment.Found, error) {
	src := environment.Source{UserID: tr.UserID, OrgID: tr.OrgID, Named: tr.EnvironmentID, Delivery: platform == start.PlatformWebhook}
	if found.Covers(src) {
		return found, nil
	}
	return r.Table.ReadEnvironments(ctx, []environment.Source{src})
}

// Prompt is the prompt a trigger's session starts with: a scheduled
// trigger's as stored; a webhook trigger's its template rendered from in,
// the trigger's own header (verify token) hidden as the other proof
// headers are. A stored template that no longer parses (a hand's edit) is
// refused like a bad request.
func Prompt(tr *trigger.Trigger, in webhook.Input) (string, error) {
	if tr.Webhook == nil {
		return tr.Prompt, nil
	}
	t, err := webhook.ParseTemplate(tr.Prompt)
	if err != nil {
		return "", err
	}
	in.Header = tr.Webhook.Header
	return t.Render(in), nil
}

// Secrets open a webhook trigger's secrets: a generated one derived, an
// imported one opened (secrets.Keys, in the functions that hold webhook
// secrets, so that the others do not link KMS).
type Secrets interface {
	Derive(ctx context.Context, triggerID string, n int) (string, error)
	Open(ctx context.Context, triggerID string, blob []byte) (string, error)
}

// ClearSecrets are a webhook trigger's secrets in clear at now: the
// current one, and the previous one while it is still valid (a generated
// one derived, an imported one opened); none for a scheduled trigger.
func ClearSecrets(ctx context.Context, keys Secrets, tr *trigger.Trigger, now time.Time) ([]string, error) {
	if tr.Webhook == nil {
		return nil, nil
	}
	held := []trigger.Secret{tr.Webhook.Secret}
	if p := tr.Webhook.Previous; p != nil && p.ValidUntil.After(now) {
		held = append(held, *p)
	}
	clear := make([]string, len(held))
	for i, sec := range held {
		var err error
		if sec.Sealed != nil {
			clear[i], err = keys.Open(ctx, tr.ID, sec.Sealed)
		} else {
			clear[i], err = keys.Derive(ctx, tr.ID, sec.Version)
		}
		if err != nil {
			return nil, err
		}
	}
	return clear, nil
}

// SlotKey is the operation key of a trigger's slot.
func SlotKey(triggerID string, slot time.Time) string {
	return start.ReservedKeyPrefix + triggerID + ":" + slot.Format(session.TimeFormat)
}

// NowKey is the operation key of a trigger started now with the
// Idempotency-Key key.
func NowKey(triggerID, key string) string {
	return start.ReservedKeyPrefix + triggerID + ":now:" + key
}

// Status is the status of a trigger's run, whose session is rec, by the
// policy's choice: fired when the session ran as its trigger saved,
// fallback when not. A session not written yet (a new one), gone or
// unreadable (nil) runs as the choice has it now.
func Status(choice allocation.Choice, rec *session.Record) string {
	asSaved := !choice.FellBack()
	if rec != nil {
		asSaved = choice.Ran(rec.Allocation())
	}
	if asSaved {
		return trigger.StatusFired
	}
	return trigger.StatusFallback
}

// Failed says whether a start that came to out records a failed run,
// and its code: only a start judged afresh and refused with a 4xx (checks
// 3 to 6, the start's rules). Neither does an answer its key's ledger row
// decided (a replay's refusal, a start in progress, a mismatch, a
// retirement since): a retried key never adds runs. (A slot's row
// consumes the slot whatever it decided: the firing records the slot's
// run from the row.) A fault is no outcome, and records none.
func Failed(out ledger.Outcome) (problem.Code, bool) {
	code := problem.CodeOf(out.Refusal)
	if out.Kind != ledger.Refused || out.ByRow || code.Status() >= 500 {
		return "", false
	}
	return code, true
}
