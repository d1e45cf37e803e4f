package trigger

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/cloud-agent/control-plane/shared/allocation"
	"github.com/cloud-agent/control-plane/shared/problem"
	"github.com/cloud-agent/control-plane/shared/reqcount"
	"github.com/cloud-agent/control-plane/shared/session"
	"github.com/cloud-agent/control-plane/shared/settings"
	"github.com/cloud-agent/control-plane/shared/start"
	"github.com/cloud-agent/control-plane/shared/store"
)

// Run statuses of a trigger's last slot.
const (
	StatusFired    = "fired"
	StatusFallback = "fallback"
	StatusFailed   = "failed"
)

const (
	// maxAhead is how far ahead of the clock an event may be and still
	// fire anything.
	maxAhead = 5 * time.Minute
	// reserve is the time before the function's timeout in which it takes
	// no new trigger.
	reserve = 10 * time.Second
)

// Summary is what one invocation did; Due = Fired + Duplicates + Failed.
type Summary struct {
	Due        int `json:"due"`
	Fired      int `json:"fired"`
	Duplicates int `json:"duplicates"`
	Skipped    int `json:"skipped"`
	Fallbacks  int `json:"fallbacks"`
	Failed     int `json:"failed"`
}

// Firing starts the sessions of due triggers through the start service,
// once per trigger and slot.
type Firing struct {
	Table    *store.Table
	Settings *settings.Settings
	Start    *start.Service
	Log      *slog.Logger
	// Now defaults to the clock.
	Now func() time.Time
}

// Handle answers one scheduled event. It returns an error, so that Lambda
// retries the event, only when a retry could help: a storage or settings
// fault left a slot due.
func (f *Firing) Handle(ctx context.Context, ev events.EventBridgeEvent) (Summary, error) {
	begun := f.now()
	ctx, requests := reqcount.With(ctx)
	sum, err := f.fire(ctx, ev, begun)
	attrs := []slog.Attr{
		slog.String("requestId", requestID(ctx)), slog.String("event", ev.ID), slog.Time("eventTime", ev.Time),
		slog.Any("summary", sum), slog.Int64("latencyMs", time.Since(begun).Milliseconds()),
		slog.Int("dynamodbRequests", requests.Count()),
	}
	level := slog.LevelInfo
	if err != nil {
		level = slog.LevelError
		attrs = append(attrs, slog.String("error", err.Error()))
	}
	f.Log.LogAttrs(ctx, level, "fire", attrs...)
	return sum, err
}

func (f *Firing) fire(ctx context.Context, ev events.EventBridgeEvent, now time.Time) (Summary, error) {
	var sum Summary
	at := ev.Time
	if at.IsZero() {
		at = now // an event without a time fires as of the clock
	}
	if at.Sub(now) > maxAhead {
		f.Log.WarnContext(ctx, "event ahead of the clock: nothing fired", "eventTime", at, "clock", now)
		return sum, nil
	}
	at = at.UTC().Truncate(time.Minute)
	stop := time.Time{}
	if d, ok := ctx.Deadline(); ok {
		stop = d.Add(-reserve)
	}
	policy, err := f.Settings.Policy(ctx)
	if err != nil {
		return sum, err
	}
	ids, err := f.Table.DueTriggers(ctx, at)
	if err != nil {
		return sum, err
	}
	var faults []error
	for _, id := range ids {
		if !stop.IsZero() && !time.Now().Before(stop) {
			f.Log.WarnContext(ctx, "out of time: the remaining triggers stay due", "left", len(ids))
			break
		}
		if err := f.fireOne(ctx, policy, id, at, &sum); err != nil {
			faults = append(faults, err)
		}
	}
	return sum, errors.Join(faults...)
}

// fireOne fires one trigger found due at the minute at, if it still is.
// The error is a fault that leaves its slot due.
func (f *Firing) fireOne(ctx context.Context, policy *allocation.Policy, id string, at time.Time, sum *Summary) error {
	tr, err := f.Table.GetTrigger(ctx, id) // the index may be stale
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil
	case err != nil:
		sum.Due++
		sum.Failed++
		return err
	case !tr.Active || tr.NextRunAt.After(at):
		return nil
	}
	log := f.Log.With("trigger", tr.ID)
	sched, err := ParseSchedule(tr.Cron, tr.Timezone, at)
	if err != nil {
		// Stored schedules were valid when stored; a retry cannot mend one.
		log.ErrorContext(ctx, "stored schedule does not parse", "error", err.Error())
		sum.Due++
		sum.Failed++
		return nil
	}
	slot, count := sched.Latest(tr.NextRunAt, at)
	if slot.IsZero() {
		slot, count = tr.NextRunAt, 1
	}
	sum.Due++
	sum.Skipped += count - 1
	// A stored trigger holds what its route validated; one that no longer
	// passes (an older writer's) is refused like a bad request.
	if err := validStored(tr); err != nil {
		sum.Failed++
		log.WarnContext(ctx, "slot refused", "code", string(problem.CodeOf(err)))
		return f.record(ctx, tr.ID, store.Run{At: slot, Status: StatusFailed, Error: string(problem.CodeOf(err))}, sched.Next(slot))
	}

	owner := tr.UserID
	if tr.OrgID != "" {
		owner = tr.OrgID
	}
	saved, reason, err := policy.Saved(tr.SavedAllocation, tr.SavedRequest, owner)
	if err != nil {
		sum.Failed++
		return err
	}
	fallback := reason != ""
	if fallback || (tr.SavedAllocation == "" && tr.SavedRequest == nil) {
		saved = allocation.Allocation{} // the effective default
	}
	if fallback {
		log.WarnContext(ctx, "saved allocation falls back to the default", "reason", reason)
	}
	key := fmt.Sprintf("%s%s:%s", start.ReservedKeyPrefix, tr.ID, slot.Format(session.TimeFormat))
	prompt := tr.Prompt
	res, err := f.Start.Start(ctx, start.Command{
		UserID: tr.UserID, // the trigger's user and org, never a bot
		Request: &start.Request{
			OperationKey: key, OrgID: tr.OrgID, Repository: tr.Repository, Agent: tr.Agent,
			Prompt: &prompt, InitialTurn: true, CreatedOnPlatform: start.PlatformScheduled,
		},
		Allocation: saved,
	})
	run := store.Run{At: slot, Status: StatusFired}
	if fallback {
		run.Status = StatusFallback
	}
	switch code := problem.CodeOf(err); {
	case err == nil && res.Replayed:
		sum.Duplicates++
		run.SessionID = res.Record.SessionID
	case err == nil:
		sum.Fired++
		if fallback {
			sum.Fallbacks++
		}
		run.SessionID = res.Record.SessionID
	case code.Status() >= 500:
		sum.Failed++
		return err
	default:
		// Any ledger row for the slot consumes it, whatever it records.
		row, rerr := f.Table.GetLedger(ctx, tr.UserID, key)
		switch {
		case rerr == nil && !row.Expired(f.now()):
			sum.Duplicates++
			run.SessionID = row.SessionID
		case rerr != nil && !errors.Is(rerr, store.ErrNotFound):
			sum.Failed++
			return rerr
		default:
			sum.Failed++
			run = store.Run{At: slot, Status: StatusFailed, Error: string(code)}
			log.WarnContext(ctx, "slot refused", "code", string(code))
		}
	}
	return f.record(ctx, tr.ID, run, sched.Next(slot))
}

// record writes a slot's run; a trigger that has moved on (another
// invocation recorded the slot, or it was deleted) is left as it is.
func (f *Firing) record(ctx context.Context, id string, run store.Run, next time.Time) error {
	if err := f.Table.RecordRun(ctx, id, run, next); err != nil && !errors.Is(err, store.ErrTriggerMoved) {
		return err
	}
	return nil
}

func validStored(tr *store.Trigger) error {
	if err := start.ValidateRepository(tr.Repository); err != nil {
		return err
	}
	return start.ValidateAgent(tr.Agent)
}

func (f *Firing) now() time.Time {
	if f.Now != nil {
		return f.Now()
	}
	return time.Now()
}

// requestID is the invocation's request id, or "" outside Lambda.
func requestID(ctx context.Context) string {
	if lc, ok := lambdacontext.FromContext(ctx); ok {
		return lc.AwsRequestID
	}
	return ""
}
