package triggerapi

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/cloud-agent/control-plane/shared/httpapi"
	"github.com/cloud-agent/control-plane/shared/problem"
	"github.com/cloud-agent/control-plane/shared/session"
	"github.com/cloud-agent/control-plane/shared/store"
	"github.com/cloud-agent/control-plane/shared/trigger"
)

// RunView is a run as the API shows it.
type RunView struct {
	Kind       string  `json:"kind"` // scheduled or manual
	Slot       string  `json:"slot"`
	Status     string  `json:"status"`
	SessionID  *string `json:"sessionId"`
	Error      *string `json:"error"`
	RecordedAt string  `json:"recordedAt"`
}

// RunPage is a page of a trigger's runs.
type RunPage struct {
	Items      []RunView `json:"items"`
	NextCursor *string   `json:"nextCursor"`
}

// runCursor is the trigger and the run a page of its runs ended at (its
// slot, and a manual run's id), as the next request sends it back:
// base64url of this JSON.
type runCursor struct {
	Trigger string `json:"trigger"`
	Slot    string `json:"slot"`
	Run     string `json:"run,omitempty"`
}

// runs lists one of the caller's triggers' runs, newest slot first, a page
// at a time. A trigger that is not the caller's, or is deleted, is 404,
// its runs with it.
func (s *Service) runs(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
	id := r.Params["triggerId"]
	if !httpapi.IsPathID(id) {
		return httpapi.Response{}, bad("The trigger id is not valid.")
	}
	limit, err := pageLimit(r)
	if err != nil {
		return httpapi.Response{}, err
	}
	var after trigger.Run
	if v, ok := r.Query("cursor"); ok {
		if after, err = decodeRunCursor(v, id); err != nil {
			return httpapi.Response{}, err
		}
	}
	tr, runs, more, err := s.Table.ListRuns(ctx, id, after, limit, s.now())
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
	if more {
		last := runs[len(runs)-1]
		page.NextCursor = encodeCursor(runCursor{id, last.At.UTC().Format(session.TimeFormat), last.ID})
	}
	return httpapi.Response{Status: http.StatusOK, Body: page}, nil
}

// runView is a run as the API shows it.
func runView(run trigger.Run) RunView {
	kind := run.Kind
	if kind == "" {
		kind = trigger.KindScheduled
	}
	return RunView{
		Kind: kind, Slot: run.At.UTC().Format(session.TimeFormat), Status: run.Status,
		SessionID: nullable(run.SessionID), Error: nullable(run.Error),
		RecordedAt: run.RecordedAt.UTC().Format(session.TimeFormat),
	}
}

// decodeRunCursor reads the cursor of a page of the runs of trigger id:
// the run it ended at. Another trigger's cursor is none.
func decodeRunCursor(s, id string) (trigger.Run, error) {
	var c runCursor
	if err := decodeCursor(s, &c); err != nil || c.Trigger != id || c.Run != "" && !httpapi.IsPathID(c.Run) {
		return trigger.Run{}, errCursor
	}
	slot, err := time.Parse(session.TimeFormat, c.Slot)
	if err != nil {
		return trigger.Run{}, errCursor
	}
	return trigger.Run{At: slot, ID: c.Run}, nil
}
