package triggerrun

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"

	"github.com/cloud-agent/control-plane/shared/allocation"
	"github.com/cloud-agent/control-plane/shared/commit"
	"github.com/cloud-agent/control-plane/shared/environment"
	"github.com/cloud-agent/control-plane/shared/ledger"
	"github.com/cloud-agent/control-plane/shared/session"
	"github.com/cloud-agent/control-plane/shared/start"
	"github.com/cloud-agent/control-plane/shared/store"
	"github.com/cloud-agent/control-plane/shared/trigger"
	"github.com/cloud-agent/control-plane/shared/webhook"
)

// RunStore is what a trigger's runs read and record beside the
// executor's writes (store.Table).
type RunStore interface {
	GetLedger(ctx context.Context, userID, operationKey string) (*ledger.Row, error)
	GetSession(ctx context.Context, sessionID string) (*session.Record, error)
	GetManualRun(ctx context.Context, triggerID string, rec *session.Record) (trigger.Run, error)
	PutRun(ctx context.Context, seen *trigger.Trigger, run trigger.Run) error
	RecordRun(ctx context.Context, seen *trigger.Trigger, run trigger.Run, next time.Time) error
	PutFailedDelivery(ctx context.Context, d *store.Delivery, code, detail string) error
	ReadEnvironments(ctx context.Context, sources []environment.Source) (*environment.Found, error)
}

// Runner runs a trigger's starts on the executor and the table. It is
// built once per execution environment; the time of each start is its
// caller's.
type Runner struct {
	Start *commit.Executor
	Table RunStore
	// Secrets opens a webhook trigger's secrets (a start now's prompt
	// redacts them); a scheduled trigger needs none.
	Secrets Secrets
}

// Started is what a trigger's start obtained: the session, new or
// replayed, and its run; or, for a delivery, the marker that a racing
// start of the same key recorded first (Delivered), which answers.
type Started struct {
	ledger.Outcome
	Run       trigger.Run
	Delivered *store.Marker
}

// StartNow starts the session of the trigger tr, as it was read, at now,
// paused or not, created on trigger-now, with the Idempotency-Key key ("":
// none, and every call starts a new session; else the operation key is
// NowKey). A webhook trigger's prompt is its template rendered as for an
// empty delivery (webhook.EmptyInput) received now, or never with a key
// (so that a retry's prompt is the same and replays), its clear secrets
// (the current one and a previous one still valid) rendering [redacted].
// The new session and its manual run are written together on the
// condition that the trigger is as read, and so is a refused start's
// failed run (Failed); a replay writes nothing and answers the run as it
// was stored. The trigger's schedule state and version are left as they
// are. store.ErrTriggerMoved when the trigger moved: read it and start
// again.
func (r *Runner) StartNow(ctx context.Context, tr *trigger.Trigger, policy *allocation.Policy, key string, now time.Time) (*Started, error) {
	if key != "" {
		key = NowKey(tr.ID, key)
	}
	found, err := r.environments(ctx, tr, nil, start.PlatformNow)
	if err != nil {
		return nil, err
	}
	cmd, choice := Command(tr, policy, found, start.PlatformNow, key)
	manual := &store.ManualRun{Seen: tr, Run: trigger.Run{Kind: trigger.KindManual, Status: Status(choice, nil)}}
	now = now.UTC()
	clear, err := ClearSecrets(ctx, r.Secrets, tr, now)
	if err != nil {
		return nil, err
	}
	// A keyed start renders what a retry renders again: the empty
	// delivery of a keyed start has no received time.
	received := now
	if key != "" {
		received = time.Time{}
	}
	in := webhook.EmptyInput(tr.ID, received)
	in.Secrets = clear
	prompt, err := Prompt(tr, in)
	cmd.Request.Prompt = &prompt
	if err == nil {
		err = cmd.Request.Validate()
	}
	out := ledger.RefusedWith(err)
	if err == nil {
		if out, err = r.Start.StartBeside(ctx, cmd, manual); err != nil {
			return nil, err
		}
	}
	if out.Kind == ledger.Refused {
		return nil, r.refusedNow(ctx, tr, out, now)
	}
	run := manual.Run.ForSession(out.Record)
	if out.Kind == ledger.Started {
		return &Started{Outcome: out, Run: run}, nil
	}
	switch stored, err := r.Table.GetManualRun(ctx, tr.ID, out.Record); {
	case err == nil:
		run = stored
	case errors.Is(err, store.ErrNotFound):
		// Written with its session, so never missing but by a hand's
		// edit: the run as the replayed session ran.
		run.Status = Status(choice, out.Record)
	default:
		return nil, err
	}
	return &Started{Outcome: out, Run: run}, nil
}

// refusedNow records a refused start now (out) as a failed manual run at
// now when Failed counts it, on the condition that the trigger is as it was
// read, and returns the refusal, or the fault that kept it from being
// recorded (store.ErrTriggerMoved among them).
func (r *Runner) refusedNow(ctx context.Context, tr *trigger.Trigger, out ledger.Outcome, now time.Time) error {
	err := out.Refusal
	code, failed := Failed(out)
	if !failed {
		return err
	}
	run := trigger.Run{
		Kind: trigger.KindManual, ID: "run_" + uuid.NewString(), At: now,
		Status: trigger.StatusFailed, Error: string(code), RecordedAt: now,
	}
	if perr := r.Table.PutRun(ctx, tr, run); perr != nil {
		return perr
	}
	return err
}
