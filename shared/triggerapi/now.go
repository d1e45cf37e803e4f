package triggerapi

import (
	"context"
	"net/http"

	"github.com/cloud-agent/control-plane/shared/allocation"
	"github.com/cloud-agent/control-plane/shared/httpapi"
	"github.com/cloud-agent/control-plane/shared/ids"
	"github.com/cloud-agent/control-plane/shared/jsonbody"
	"github.com/cloud-agent/control-plane/shared/ledger"
	"github.com/cloud-agent/control-plane/shared/start"
	"github.com/cloud-agent/control-plane/shared/trigger"
)

// NowResponse is the answer of POST /v1/triggers/{triggerId}/run: the
// session as POST /v1/sessions answers it, and the run recorded.
type NowResponse struct {
	Session start.Response `json:"session"`
	Run     RunView        `json:"run"`
}

// runNow starts one of the caller's triggers' session now
// (triggerrun.Runner.StartNow); an Idempotency-Key (held to every rule of
// an operation key) makes it idempotent. A trigger that moved under the
// start is read and judged again (settled), so a deleted one is 404 and a
// changed one starts with what it says now. It counts the session as the
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
		if err := jsonbody.Decode(r.Body, &empty); err != nil {
			return httpapi.Response{}, err
		}
	}
	if !ids.IsPathID(r.Params["triggerId"]) {
		return httpapi.Response{}, bad("The trigger id is not valid.")
	}
	return s.settled(ctx, r, func(tr *trigger.Trigger) (httpapi.Response, error) {
		// The owner first: the settings matter only to a trigger that is
		// the caller's (a 404 never waits on Parameter Store).
		policy, err := s.Settings.Policy(ctx)
		if err != nil {
			return httpapi.Response{}, err
		}
		return s.startNow(ctx, tr, policy, key)
	})
}

// startNow starts the trigger tr's session now, as it was read, and
// answers it as the route does.
func (s *Service) startNow(ctx context.Context, tr *trigger.Trigger, policy *allocation.Policy, key string) (httpapi.Response, error) {
	got, err := s.Runs.StartNow(ctx, tr, policy, key, s.now())
	if err != nil {
		return httpapi.Response{}, err
	}
	start.Count(ctx, got.Outcome)
	rec, replayed := got.Record, got.Kind == ledger.Replayed
	answer := httpapi.Response{Status: http.StatusCreated, Headers: map[string]string{"Location": "/v1/sessions/" + rec.SessionID + "/allocation"}}
	if replayed {
		answer = httpapi.Response{Status: http.StatusOK}
	}
	answer.Body = NowResponse{
		Session: start.ResponseOf(rec, replayed),
		Run:     runView(got.Run),
	}
	return answer, nil
}
