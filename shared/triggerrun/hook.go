package triggerrun

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"

	"github.com/cloud-agent/control-plane/shared/allocation"
	"github.com/cloud-agent/control-plane/shared/ledger"
	"github.com/cloud-agent/control-plane/shared/problem"
	"github.com/cloud-agent/control-plane/shared/start"
	"github.com/cloud-agent/control-plane/shared/store"
	"github.com/cloud-agent/control-plane/shared/trigger"
	"github.com/cloud-agent/control-plane/shared/webhook"
)

// Delivery is a proven webhook delivery to start a trigger's session
// from.
type Delivery struct {
	webhook.Delivery
	// Input is what the trigger's prompt renders from, the trigger's
	// secrets and header included; its ReceivedAt is the run's slot.
	Input webhook.Input
	// Limit is the most new starts of the trigger in a minute.
	Limit int
	// Now is when the delivery is judged: its run's record and its
	// minute's counter.
	Now time.Time
}

// StartDelivery starts the session of the delivery d to the webhook
// trigger tr, as it was read: created on webhook, with the rendered
// prompt and the delivery's operation key (none when the delivery has no
// key), whose ledger row answers whatever the prompt
// (start.Command.AnyRequest). The new session is written with what
// store.Delivery writes beside it (the run, the minute's counter, the
// key's marker); a refused start that Failed counts records its failed
// run and marker (store.Table.PutFailedDelivery), and the refusal is the
// error, as it is the answer. When a racing start of the same key
// recorded its marker first, Started.Delivered is that marker, which
// answers. Besides a start's errors: store.ErrTriggerMoved (read the
// trigger and judge again) and store.ErrRateLimited.
func (r *Runner) StartDelivery(ctx context.Context, tr *trigger.Trigger, policy *allocation.Policy, d Delivery) (*Started, error) {
	started, err := r.startDelivery(ctx, tr, policy, d)
	if de, ok := errors.AsType[*store.DeliveredError](err); ok {
		return &Started{Delivered: &de.Marker}, nil
	}
	return started, err
}

func (r *Runner) startDelivery(ctx context.Context, tr *trigger.Trigger, policy *allocation.Policy, d Delivery) (*Started, error) {
	key := d.OperationKey(tr.ID)
	found, err := r.environments(ctx, tr, nil, start.PlatformWebhook)
	if err != nil {
		return nil, err
	}
	prompt, err := Prompt(tr, d.Input)
	cmd, choice := Command(tr, policy, found, start.PlatformWebhook, key)
	cmd.Request.Prompt, cmd.AnyRequest = &prompt, true
	excerpt, length := trigger.Excerpt(prompt)
	now := d.Now.UTC()
	beside := &store.Delivery{Seen: tr, Key: key, Limit: d.Limit, Now: now, Run: trigger.Run{
		Kind: trigger.KindWebhook, At: d.Input.ReceivedAt, Status: Status(choice, nil), RecordedAt: now,
		Delivery: d.ID, Event: d.Event, Prompt: excerpt, PromptLength: length,
	}}
	if err == nil {
		err = cmd.Request.Validate()
	}
	out := ledger.RefusedWith(err)
	if err == nil {
		if out, err = r.Start.StartBeside(ctx, cmd, beside); err != nil {
			return nil, redacted(err, d.Input.Secrets)
		}
	}
	switch out.Kind {
	case ledger.Refused:
		return nil, r.refusedDelivery(ctx, beside, out, d.Input.Secrets)
	case ledger.Replayed: // the key's row, met by a racing start: no run of this delivery's
		return &Started{Outcome: out}, nil
	}
	return &Started{Outcome: out, Run: beside.Run.ForSession(out.Record)}, nil
}

// Redelivered is what the ledger row of the redelivered delivery d's
// key says (commit.Executor.Answer, under the trigger's user and org as a
// start of d would claim it): the session, a refusal by ledger rules 1 to
// 3 (or rule 7 finding the session gone), or none when no live row
// stands, and the key's marker answers.
func (r *Runner) Redelivered(ctx context.Context, tr *trigger.Trigger, policy *allocation.Policy, d webhook.Delivery) (ledger.Outcome, error) {
	cmd, _ := Command(tr, policy, nil, start.PlatformWebhook, d.OperationKey(tr.ID)) // the row answers: no environment is read
	cmd.AnyRequest = true
	return r.Start.Answer(ctx, cmd)
}

// refusedDelivery records a delivery's refused start (out) as a failed
// webhook run, with the key's marker, when Failed counts it, and returns
// the refusal, redacted of the trigger's secrets, or what kept it from
// being recorded.
func (r *Runner) refusedDelivery(ctx context.Context, d *store.Delivery, out ledger.Outcome, secrets []string) error {
	err := redacted(out.Refusal, secrets)
	code, failed := Failed(out)
	if !failed {
		return err
	}
	detail := ""
	if pe, ok := errors.AsType[*problem.Error](err); ok {
		detail = pe.Detail
	}
	d.Run.ID, d.Run.Status, d.Run.Error = "run_"+uuid.NewString(), trigger.StatusFailed, string(code)
	if perr := r.Table.PutFailedDelivery(ctx, d, string(code), detail); perr != nil {
		return perr
	}
	return err
}

// redacted is err with its problem's detail redacted of the trigger's
// secrets (webhook.Redact): a refusal's detail is answered, recorded with
// the key's marker and logged.
func redacted(err error, secrets []string) error {
	pe, ok := errors.AsType[*problem.Error](err)
	if !ok {
		return err
	}
	if detail := webhook.Redact(pe.Detail, secrets...); detail != pe.Detail {
		c := *pe
		c.Detail = detail
		return &c
	}
	return err
}
