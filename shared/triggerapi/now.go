package triggerapi

import (
	"context"
	"errors"
	"net/http"

	"github.com/google/uuid"

	"github.com/cloud-agent/control-plane/shared/allocation"
	"github.com/cloud-agent/control-plane/shared/firing"
	"github.com/cloud-agent/control-plane/shared/httpapi"
	"github.com/cloud-agent/control-plane/shared/ledger"
	"github.com/cloud-agent/control-plane/shared/problem"
	"github.com/cloud-agent/control-plane/shared/start"
	"github.com/cloud-agent/control-plane/shared/store"
	"github.com/cloud-agent/control-plane/shared/trigger"
)

// NowResponse is the answer of POST /v1/triggers/{triggerId}/run: the
// session as POST /v1/sessions answers it, and the run recorded.
type NowResponse struct {
	Session start.Response `json:"session"`
	Run     RunView        `json:"run"`
}

// runNow starts one of the caller's triggers' session now, paused or not,
// through the firing's start of a trigger's session, created on
// trigger-now; an Idempotency-Key (held to every rule of an operation
// key) makes it idempotent. The new session and its manual run are
// written on the condition that the trigger is as it was read: a trigger
// that moved is read and judged again (settled), so a deleted one is 404
// and a changed one starts with what it says now. The trigger's schedule
// state and version are left as they are. It counts the session as the
// start route does (Starts, Replays).
func (s *Service) runNow(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
	var key string
	if h, ok := r.Header("Idempotency-Key"); ok {
		if err := start.CheckIdempotencyKey(h); err != nil {
			return httpapi.Response{}, err
		}
		key = h
	}
	if len(r.Body) > 0 {
		var empty struct{}
		if err := httpapi.Decode(r.Body, &empty); err != nil {
			return httpapi.Response{}, err
		}
	}
	if !httpapi.IsPathID(r.Params["triggerId"]) {
		return httpapi.Response{}, bad("The trigger id is not valid.")
	}
	policy, err := s.Settings.Policy(ctx)
	if err != nil {
		return httpapi.Response{}, err
	}
	return s.settled(ctx, r, func(tr *trigger.Trigger) (httpapi.Response, error) {
		return s.startNow(ctx, tr, policy, key)
	})
}

// startNow starts the trigger tr's session now, as it was read. A replay
// answers the manual run as it was stored.
func (s *Service) startNow(ctx context.Context, tr *trigger.Trigger, policy *allocation.Policy, key string) (httpapi.Response, error) {
	cmd, choice := firing.Session(tr, policy, start.PlatformNow)
	manual := &store.ManualRun{Seen: tr, Status: firing.RunStatus(choice, nil)}
	var res *start.Result
	err := cmd.Request.Validate()
	if err == nil {
		res, err = s.Start.StartNow(ctx, cmd, manual, key)
	}
	if err != nil {
		return httpapi.Response{}, s.refused(ctx, tr, err)
	}
	start.Count(ctx, res)
	rec := res.Record
	answer := httpapi.Response{Status: http.StatusCreated, Headers: map[string]string{"Location": "/v1/sessions/" + rec.SessionID + "/allocation"}}
	run := manual.Run(rec)
	if res.Replayed {
		answer = httpapi.Response{Status: http.StatusOK}
		switch stored, err := s.Table.GetManualRun(ctx, tr.ID, rec); {
		case err == nil:
			run = stored
		case errors.Is(err, store.ErrNotFound):
			// Written with its session, so never missing but by a hand's
			// edit: the run as the replayed session ran.
			run.Status = firing.RunStatus(choice, rec)
		default:
			return httpapi.Response{}, err
		}
	}
	answer.Body = NowResponse{
		Session: start.Response{SessionID: rec.SessionID, Replayed: res.Replayed, Sandbox: rec.SandboxView()},
		Run:     runView(run),
	}
	return answer, nil
}

// refused records a start now that was judged afresh and refused with a
// 4xx as a failed manual run, on the condition that the trigger is as it
// was read, and returns the refusal, or the fault that kept it from being
// recorded (store.ErrTriggerMoved among them). An answer decided by the
// key's ledger row (a replay's refusal, a start in progress, the key used
// for another payload or request, its allocation retired since) records
// nothing: a retried key never adds runs.
func (s *Service) refused(ctx context.Context, tr *trigger.Trigger, err error) error {
	var byRow *ledger.Refused
	code := problem.CodeOf(err)
	if code.Status() >= 500 || errors.As(err, &byRow) && byRow.ByRow {
		return err
	}
	now := s.now().UTC()
	run := trigger.Run{
		Kind: trigger.KindManual, ID: "run_" + uuid.NewString(), At: now,
		Status: trigger.StatusFailed, Error: string(code), RecordedAt: now,
	}
	if perr := s.Table.PutRun(ctx, tr, run); perr != nil {
		return perr
	}
	return err
}
