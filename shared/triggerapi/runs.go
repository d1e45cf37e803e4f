package triggerapi

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/cloud-agent/control-plane/shared/httpapi"
	"github.com/cloud-agent/control-plane/shared/ids"
	"github.com/cloud-agent/control-plane/shared/problem"
	"github.com/cloud-agent/control-plane/shared/session"
	"github.com/cloud-agent/control-plane/shared/store"
	"github.com/cloud-agent/control-plane/shared/trigger"
)

// RunView is a run as the API shows it.
type RunView struct {
	Kind       string  `json:"kind"` // scheduled, manual or webhook
	Slot       string  `json:"slot"`
	Status     string  `json:"status"`
	SessionID  *string `json:"sessionId"`
	Error      *string `json:"error"`
	RecordedAt string  `json:"recordedAt"`
	// Outcome is how the run's session ended, null until it is reported
	// (and for a run that started nothing or was recorded before v7).
	Outcome *session.OutcomeView `json:"outcome"`
	// A webhook run's members; the others have none.
	*WebhookRunView `json:",inline"`
}

// WebhookRunView is what a webhook run adds: the sender's delivery id and
// the event (or null), the first trigger.RunPromptMax code points of the
// rendered prompt and its full length.
type WebhookRunView struct {
	Delivery     *string `json:"delivery"`
	Event        *string `json:"event"`
	Prompt       string  `json:"prompt"`
	PromptLength int     `json:"promptLength"`
}

// RunPage is a page of a trigger's runs.
type RunPage struct {
	Items      []RunView `json:"items"`
	NextCursor *string   `json:"nextCursor"`
}

// runCursor is the trigger and the place in its runs a page ended at, as
// the next request sends it back: base64url of this JSON. An earlier
// release wrote the place as the last run's slot and a manual run's id
// (Slot, Run): such a cursor, from a page that release served before or
// during a deploy, still reads as the key it named.
type runCursor struct {
	Trigger string `json:"trigger"`
	After   string `json:"after,omitempty"`
	Slot    string `json:"slot,omitempty"`
	Run     string `json:"run,omitempty"`
}

// runs lists one of the caller's triggers' runs, newest slot first, a page
// at a time; with outcome, only those it names, a page reading at most
// store.FilteredReads × limit runs. A trigger that is not the caller's,
// or is deleted, is 404, its runs with it.
func (s *Service) runs(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
	id := r.Params["triggerId"]
	if !ids.IsPathID(id) {
		return httpapi.Response{}, bad("The trigger id is not valid.")
	}
	limit, err := r.PageLimit()
	if err != nil {
		return httpapi.Response{}, err
	}
	keep, err := outcomeFilter(r)
	if err != nil {
		return httpapi.Response{}, err
	}
	var after store.RunPosition
	if v, ok := r.Query("cursor"); ok {
		if after, err = decodeRunCursor(v, id); err != nil {
			return httpapi.Response{}, err
		}
	}
	tr, runs, next, err := s.Table.ListRuns(ctx, id, after, limit, keep, s.now())
	// The owner first: anything not the caller's does not exist for them,
	// whatever else is wrong with it.
	var broken *store.InvalidTriggerError
	if errors.As(err, &broken) {
		tr = broken.Trigger()
		err = problem.Wrap(problem.InternalError, "The stored trigger is invalid.", err)
	}
	switch {
	case errors.Is(err, store.ErrNotFound):
		return httpapi.Response{}, errNotFound
	case tr != nil && !r.Caller.Owns(tr.UserID, tr.OrgID):
		return httpapi.Response{}, errNotFound
	case err != nil:
		return httpapi.Response{}, err
	}
	page := RunPage{Items: make([]RunView, len(runs))}
	for i, run := range runs {
		page.Items[i] = runView(run)
	}
	if next != "" {
		page.NextCursor = httpapi.EncodeCursor(runCursor{Trigger: id, After: string(next)})
	}
	return httpapi.Response{Status: http.StatusOK, Body: page}, nil
}

// runView is a run as the API shows it.
func runView(run trigger.Run) RunView {
	kind := run.Kind
	if kind == "" {
		kind = trigger.KindScheduled
	}
	v := RunView{
		Kind: kind, Slot: run.At.UTC().Format(session.TimeFormat), Status: run.Status,
		SessionID: httpapi.Nullable(run.SessionID), Error: httpapi.Nullable(run.Error),
		RecordedAt: run.RecordedAt.UTC().Format(session.TimeFormat), Outcome: session.OutcomeOf(run.Outcome),
	}
	if kind == trigger.KindWebhook {
		v.WebhookRunView = &WebhookRunView{Delivery: httpapi.Nullable(run.Delivery), Event: httpapi.Nullable(run.Event), Prompt: run.Prompt, PromptLength: run.PromptLength}
	}
	return v
}

// outcomeFilter reads the runs' outcome filter: nil when none is given;
// running or an outcome's status, else 400 (a repeated one too, which
// API Gateway joins with a comma).
func outcomeFilter(r *httpapi.Request) (func(trigger.Run) bool, error) {
	f, ok := r.Query("outcome")
	switch {
	case !ok:
		return nil, nil
	case !trigger.ValidOutcomeFilter(f):
		return nil, bad("outcome must be running, completed, failed, interrupted or timed_out.")
	}
	return func(run trigger.Run) bool { return run.InOutcome(f) }, nil
}

// decodeRunCursor reads the cursor of a page of the runs of trigger id:
// the place it ended at. Another trigger's cursor is none.
func decodeRunCursor(s, id string) (store.RunPosition, error) {
	var c runCursor
	if err := httpapi.DecodeCursor(s, &c); err != nil || c.Trigger != id {
		return "", httpapi.ErrCursor
	}
	if c.After == "" && c.Slot != "" { // an earlier release's: its key, RUN#<slot>[#<run>]
		if _, err := time.Parse(session.TimeFormat, c.Slot); err != nil || c.Run != "" && !ids.IsPathID(c.Run) {
			return "", httpapi.ErrCursor
		}
		c.After = "RUN#" + c.Slot
		if c.Run != "" {
			c.After += "#" + c.Run
		}
	} else if c.Slot != "" || c.Run != "" {
		return "", httpapi.ErrCursor
	}
	if c.After == "" || !store.RunPosition(c.After).Valid() {
		return "", httpapi.ErrCursor
	}
	return store.RunPosition(c.After), nil
}
