package triggerapi

import (
	"context"
	"encoding/json/jsontext"
	"encoding/json/v2"
	"errors"
	"maps"
	"net/http"
	"reflect"
	"slices"
	"time"

	"github.com/cloud-agent/control-plane/shared/allocation"
	"github.com/cloud-agent/control-plane/shared/commit"
	"github.com/cloud-agent/control-plane/shared/environment"
	"github.com/cloud-agent/control-plane/shared/httpapi"
	"github.com/cloud-agent/control-plane/shared/ids"
	"github.com/cloud-agent/control-plane/shared/jsonbody"
	"github.com/cloud-agent/control-plane/shared/problem"
	"github.com/cloud-agent/control-plane/shared/store"
	"github.com/cloud-agent/control-plane/shared/trigger"
)

// patchBody is a PATCH body: a JSON merge patch (RFC 7396) of the members
// a change may touch, each kept as sent, so that null (remove) is told
// from absent (keep). Any other member is refused.
type patchBody struct {
	Active            jsontext.Value `json:"active"`
	Schedule          jsontext.Value `json:"schedule"`
	Repository        jsontext.Value `json:"repository"`
	Agent             jsontext.Value `json:"agent"`
	Prompt            jsontext.Value `json:"prompt"`
	SandboxAllocation jsontext.Value `json:"sandboxAllocation"`
	Webhook           jsontext.Value `json:"webhook"`
	EnvironmentID     jsontext.Value `json:"environmentId"`
}

// required are the members that a patch may not remove (null), each
// with its nested ones, in the order they are judged; the repository's
// repo or url, required by its type, is judged on the merged trigger.
var required = []struct {
	name   string
	nested []string
}{
	{"active", nil}, {"schedule", []string{"cron"}}, {"repository", []string{"type"}},
	{"agent", []string{"mode", "model"}}, {"prompt", nil}, {"webhook", nil},
}

// members are the members each object of a patch may name, null
// included (removing a member no trigger has is as unknown as setting
// one).
var members = map[string][]string{
	"schedule": {"cron", "timezone"}, "repository": {"type", "repo", "url", "branch"}, "agent": {"mode", "model", "variant"},
	"sandboxAllocation": {"provider", "instanceType"}, "sandboxAllocation.provider": {"id", "account"},
	"webhook": {"events"},
}

// unknownMember is the path of the first member of v, the value at path,
// that the patch may not name; "" when there is none. An object where a
// member that is no object goes (webhook.events) is left to the merged
// body's decoding, whose detail names the type it must be.
func unknownMember(path string, v any) string {
	obj, ok := v.(map[string]any)
	if !ok {
		return ""
	}
	for _, k := range slices.Sorted(maps.Keys(obj)) {
		if !slices.Contains(members[path], k) {
			return path + "." + k
		}
		if _, nested := members[path+"."+k]; !nested {
			continue
		}
		if unknown := unknownMember(path+"."+k, obj[k]); unknown != "" {
			return unknown
		}
	}
	return ""
}

// patch is a parsed PATCH body: the merge patch as a JSON object.
type patch map[string]any

// parsePatch reads a PATCH body: one JSON object of the patchable members
// only (400 for any other, orgId included), none of the required ones
// null.
func parsePatch(r *httpapi.Request) (patch, error) {
	if err := r.MergePatchType(); err != nil {
		return nil, err
	}
	var b patchBody
	if err := jsonbody.Decode(r.Body, &b); err != nil {
		return nil, err
	}
	var p patch
	if err := json.Unmarshal(r.Body, &p); err != nil {
		// Decode took it as one object: what is left is a number no
		// member can hold.
		return nil, bad("The body holds a number out of range.")
	}
	for _, name := range []string{"schedule", "repository", "agent", "webhook"} {
		if unknown := unknownMember(name, p[name]); unknown != "" {
			return nil, bad(jsonbody.MemberName(unknown) + " is not a known member.")
		}
	}
	for _, req := range required {
		v, ok := p[req.name]
		if ok && v == nil {
			return nil, bad(req.name + " cannot be removed.")
		}
		obj, _ := v.(map[string]any)
		for _, n := range req.nested {
			if x, ok := obj[n]; ok && x == nil {
				return nil, bad(req.name + "." + n + " cannot be removed.")
			}
		}
	}
	return p, nil
}

// mergePatch applies a merge patch to a JSON value, as RFC 7396 says:
// an object merges member by member, null removes a member, anything else
// replaces the target.
func mergePatch(target, p any) any {
	obj, ok := p.(map[string]any)
	if !ok {
		return p
	}
	t, ok := target.(map[string]any)
	if !ok {
		t = map[string]any{}
	}
	for k, v := range obj {
		if v == nil {
			delete(t, k)
		} else {
			t[k] = mergePatch(t[k], v)
		}
	}
	return t
}

// createDoc is the trigger tr as a create body would give it: a
// scheduled trigger with its schedule, a webhook one with its verify,
// events and header (never its secret, which a patch cannot change).
func createDoc(tr *trigger.Trigger) (map[string]any, error) {
	var doc map[string]any
	raw, err := json.Marshal(viewOf(tr))
	if err == nil {
		err = json.Unmarshal(raw, &doc)
	}
	if err != nil {
		return nil, err
	}
	for _, name := range []string{"triggerId", "createdAt", "nextRunAt", "lastRunAt", "lastSessionId", "lastRunStatus", "lastError", "lastOutcome", "schedule", "webhook"} {
		delete(doc, name)
	}
	if w := tr.Webhook; w != nil {
		side := map[string]any{"verify": string(w.Verify)}
		if w.Events != nil {
			side["events"] = w.Events
		}
		if w.Header != "" {
			side["header"] = w.Header
		}
		doc["webhook"] = side
	} else {
		doc["schedule"] = map[string]any{"cron": tr.Cron, "timezone": tr.Timezone}
	}
	return doc, nil
}

// apply works out the trigger that the patch makes of tr at now: the
// merged trigger passes every check of a create body (the 400 rules, a
// webhook trigger's template included, and allocation checks 1 and 3 to 6
// when the patch names an allocation). A trigger's mode is fixed: schedule
// on a webhook trigger, or webhook on a scheduled one, is 400. A changed
// schedule, or a resumed scheduled trigger, runs next at its first slot
// strictly after now; otherwise the next run stays (a webhook trigger has
// none).
func (s *Service) apply(ctx context.Context, tr *trigger.Trigger, p patch, now time.Time) (*trigger.Trigger, error) {
	if err := fixedMode(tr, p); err != nil {
		return nil, err
	}
	doc, err := createDoc(tr)
	if err != nil {
		return nil, err
	}
	// The saved allocation is judged only when the patch names one (and
	// merged with it, an object member by member): a saved value that no
	// longer passes falls back at firing, as before.
	_, newAllocation := p["sandboxAllocation"]
	if !newAllocation {
		delete(doc, "sandboxAllocation")
	}
	merged := mergePatch(doc, map[string]any(p))
	body, err := json.Marshal(merged)
	if err != nil {
		return nil, err
	}
	req, err := parseCreate(body, now)
	if err != nil {
		return nil, err
	}
	// Allocation check 1 comes after every 400 invalid_request: any other
	// allocation object, a member removed that no allocation has included.
	if unknown := unknownMember("sandboxAllocation", p["sandboxAllocation"]); unknown != "" {
		return nil, problem.New(problem.InvalidSandboxAllocation, jsonbody.MemberName(unknown)+" is not a member of an allocation.")
	}
	next := *tr
	next.Active, next.Repository, next.Agent, next.Prompt = req.active, req.repository, req.agent, req.prompt
	next.EnvironmentID = req.environmentID
	if tr.Webhook != nil {
		w := *tr.Webhook
		w.Events = req.webhook.Events
		next.Webhook = &w
	} else {
		next.Cron, next.Timezone = req.schedule.Cron(), req.schedule.Timezone()
		if next.Cron != tr.Cron || next.Timezone != tr.Timezone || next.Active && !tr.Active {
			next.NextRunAt = req.schedule.Next(now)
		}
	}
	if newAllocation {
		next.SavedAllocation, next.SavedRequest = "", nil
		if req.allocation != nil {
			if err := s.save(ctx, &next, req.allocation); err != nil {
				return nil, err
			}
		}
	}
	if err := s.checkEnvironment(ctx, tr, &next); err != nil {
		return nil, err
	}
	return &next, nil
}

// fixedMode refuses a patch that would change a trigger's mode, fixed at
// create: schedule on a webhook trigger, webhook on a scheduled one.
func fixedMode(tr *trigger.Trigger, p patch) error {
	_, schedule := p["schedule"]
	_, hook := p["webhook"]
	switch {
	case schedule && tr.Webhook != nil:
		return bad("schedule cannot be set on a webhook trigger: a trigger's mode is fixed when it is created.")
	case hook && tr.Webhook == nil:
		return bad("webhook cannot be set on a scheduled trigger: a trigger's mode is fixed when it is created.")
	}
	return nil
}

// save runs allocation checks 1 and 3 to 6 on an allocation a trigger is
// to save, and saves it: a kilo object by its name, a byoc one as its
// request.
func (s *Service) save(ctx context.Context, tr *trigger.Trigger, raw jsontext.Value) (err error) {
	tr.SavedAllocation, tr.SavedRequest, err = s.Settings.Saved(ctx, raw, allocation.Owner(tr.UserID, tr.OrgID))
	return err
}

// patch changes one of the caller's triggers. The change is written on
// the condition that the trigger is still as it was read; when it moved
// (a firing, another change), the patch is applied again to the trigger
// as it is now, at most commit.Tries times, then 503. A patch that changes
// nothing writes nothing.
func (s *Service) patch(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
	if !ids.IsPathID(r.Params["triggerId"]) {
		return httpapi.Response{}, bad("The trigger id is not valid.")
	}
	p, err := parsePatch(r)
	if err != nil {
		return httpapi.Response{}, err
	}
	return s.settled(ctx, r, func(tr *trigger.Trigger) (httpapi.Response, error) {
		next, err := s.apply(ctx, tr, p, s.now())
		if err != nil {
			return httpapi.Response{}, err
		}
		if reflect.DeepEqual(next, tr) {
			return s.answer(ctx, tr)
		}
		switch err := s.Table.UpdateTrigger(ctx, tr, next); {
		case errors.Is(err, store.ErrEnvironmentGone):
			return httpapi.Response{}, environment.ErrNotFound
		case err != nil:
			return httpapi.Response{}, err
		}
		return httpapi.Response{Status: http.StatusOK, Body: s.written(ctx, next)}, nil
	})
}

// settled reads the caller's trigger and does with it what write does,
// which writes on the condition that the trigger is as it was read: while
// write finds it moved (store.ErrTriggerMoved: a firing or another
// change came first, or is under way), it reads the trigger again and
// does it again (commit.Again), then 503.
func (s *Service) settled(ctx context.Context, r *httpapi.Request, write func(*trigger.Trigger) (httpapi.Response, error)) (httpapi.Response, error) {
	return commit.Again(ctx, store.ErrTriggerMoved, errChanging, func() (httpapi.Response, error) {
		tr, _, err := s.owned(ctx, r)
		if err != nil {
			return httpapi.Response{}, err
		}
		return write(tr)
	})
}

// errChanging is a change to a trigger that kept changing under it.
var errChanging = &problem.Error{Code: problem.ServiceUnavailable, Detail: "The trigger kept changing. Try again shortly.", RetryAfter: time.Second}
