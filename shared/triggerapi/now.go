package triggerapi

import (
	"context"
	"net/http"

	"github.com/google/uuid"

	"github.com/cloud-agent/control-plane/shared/firing"
	"github.com/cloud-agent/control-plane/shared/httpapi"
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
// trigger-now; an Idempotency-Key makes it idempotent. The new session's
// manual run is written with it; a refusal (4xx) is answered as the start
// route answers it and recorded as a failed manual run. The trigger's
// schedule state and version are left as they are. It counts the session
// as the start route does (Starts, Replays).
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
	tr, _, err := s.owned(ctx, r)
	if err != nil {
		return httpapi.Response{}, err
	}
	policy, err := s.Settings.Policy(ctx)
	if err != nil {
		return httpapi.Response{}, err
	}
	cmd, choice, err := firing.Session(tr, policy, start.PlatformNow)
	if err != nil {
		return httpapi.Response{}, err
	}
	manual := &store.ManualRun{TriggerID: tr.ID, Status: firing.RunStatus(choice, nil)}
	var res *start.Result
	if err = cmd.Request.Validate(); err == nil {
		res, err = s.Start.StartNow(ctx, cmd, manual, key)
	}
	if err != nil {
		return httpapi.Response{}, s.refused(ctx, tr, err)
	}
	start.Count(ctx, res)
	rec := res.Record
	answer := httpapi.Response{Status: http.StatusCreated, Headers: map[string]string{"Location": "/v1/sessions/" + rec.SessionID + "/allocation"}}
	if res.Replayed {
		answer = httpapi.Response{Status: http.StatusOK}
		manual.Status = firing.RunStatus(choice, rec) // as the replayed session ran
	}
	answer.Body = NowResponse{
		Session: start.Response{SessionID: rec.SessionID, Replayed: res.Replayed, Sandbox: rec.SandboxView()},
		Run:     runView(manual.Run(rec)),
	}
	return answer, nil
}

// refused records a start now refused with a 4xx as a failed manual run,
// and returns the refusal, or the fault that kept it from being recorded.
// An answer about the key's row (a start in progress, the key used for
// another payload or request) refuses no start of the trigger: it records
// nothing, or a start still under way would show as failed.
func (s *Service) refused(ctx context.Context, tr *trigger.Trigger, err error) error {
	switch code := problem.CodeOf(err); {
	case code.Status() >= 500, code == problem.CreationInProgress,
		code == problem.OperationKeyPayloadMismatch, code == problem.OperationKeyReuseMismatch:
		return err
	}
	code := problem.CodeOf(err)
	now := s.now().UTC()
	run := trigger.Run{
		Kind: trigger.KindManual, ID: "run_" + uuid.NewString(), At: now,
		Status: trigger.StatusFailed, Error: string(code), RecordedAt: now,
	}
	if perr := s.Table.PutRun(ctx, tr.ID, run); perr != nil {
		return perr
	}
	return err
}
