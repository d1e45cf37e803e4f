package store

import (
	"errors"
	"strings"
	"time"

	"github.com/cloud-agent/control-plane/shared/session"
	"github.com/cloud-agent/control-plane/shared/trigger"
)

// InvalidTriggerError is a stored trigger item that does not decode. Its
// owner is there when it can still be read ("" otherwise), so that only
// its owner learns of it.
type InvalidTriggerError struct {
	ID     string
	UserID string
	OrgID  string
	Cause  error
}

func (e *InvalidTriggerError) Error() string {
	return "trigger " + e.ID + " does not decode: " + e.Cause.Error()
}

func (e *InvalidTriggerError) Unwrap() error { return e.Cause }

// Trigger is the part of the invalid item that is still readable: its
// id and owner, enough to judge ownership and to delete it.
func (e *InvalidTriggerError) Trigger() *trigger.Trigger {
	return &trigger.Trigger{ID: e.ID, UserID: e.UserID, OrgID: e.OrgID}
}

// listedAtFormat writes an instant to the nanosecond in fixed width, so
// that the order of the strings is the order of the instants.
const listedAtFormat = "2006-01-02T15:04:05.000000000Z"

func listedAt(t time.Time) string { return t.UTC().Format(listedAtFormat) }

// putCreated puts an item's creation: createdAt, and listedAt, to the
// nanosecond, which lists sort on.
func putCreated(item Item, t time.Time) {
	item["createdAt"] = S(formatTime(t))
	item["listedAt"] = S(listedAt(t))
}

func formatTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(session.TimeFormat)
}

// encodeTrigger returns a trigger's item: PK, SK, triggerId, ownerUserId,
// orgId?, active (BOOL), a scheduled trigger's dueShard? (only while the
// trigger is active, which keeps inactive triggers out of the due index),
// cron, timezone and nextRunAt, or a webhook trigger's webhook (M,
// encodeWebhook), repository {type, repo?, url?, branch?}, agent {mode,
// model, variant?}, prompt, sandboxAllocation? or
// sandboxAllocationRequest? {provider {id, account}, instanceType},
// environmentId?,
// createdAt, listedAt (the creation instant to the nanosecond),
// lastRunAt?, lastSessionId?, lastRunStatus?, lastError? and version?
// (N). A "?" attribute is left out when unset; the others are written
// even when empty.
func encodeTrigger(tr *trigger.Trigger) Item {
	item := triggerKey(tr.ID)
	item["triggerId"] = S(tr.ID)
	item["ownerUserId"] = S(tr.UserID)
	PutS(item, "orgId", tr.OrgID)
	item["active"] = Bool(tr.Active)
	if tr.Webhook != nil {
		item["webhook"] = encodeWebhook(tr.Webhook)
	} else {
		if tr.Active {
			item["dueShard"] = S(shardOf(dueShardPrefix, tr.ID))
		}
		item["cron"] = S(tr.Cron)
		item["timezone"] = S(tr.Timezone)
		item["nextRunAt"] = S(formatTime(tr.NextRunAt))
	}
	repo := Item{"type": S(tr.Repository.Type)}
	PutS(repo, "repo", tr.Repository.Repo)
	PutS(repo, "url", tr.Repository.URL)
	PutS(repo, "branch", tr.Repository.Branch)
	item["repository"] = M(repo)
	agent := Item{"mode": S(tr.Agent.Mode), "model": S(tr.Agent.Model)}
	PutS(agent, "variant", tr.Agent.Variant)
	item["agent"] = M(agent)
	item["prompt"] = S(tr.Prompt)
	putSaved(item, tr.SavedAllocation, tr.SavedRequest)
	PutS(item, "environmentId", tr.EnvironmentID)
	putCreated(item, tr.CreatedAt)
	PutS(item, "lastRunAt", formatTime(tr.LastRun.At))
	PutS(item, "lastSessionId", tr.LastRun.SessionID)
	PutS(item, "lastRunStatus", tr.LastRun.Status)
	PutS(item, "lastError", tr.LastRun.Error)
	if tr.Version != 0 {
		item["version"] = N(tr.Version)
	}
	return item
}

// decodeTrigger reads a trigger item; its id is the key's. Absent and
// NULL attributes are unset, as is an empty string; an empty string
// where a flag, a number or a map belongs is of the wrong type.
func decodeTrigger(item Item) (*trigger.Trigger, error) {
	var r AttrReader
	pk := r.Str(item, "", "PK")
	id := strings.TrimPrefix(pk, triggerPrefix)
	r.Str(item, "", "SK")
	storedID := r.Str(item, "", "triggerId")
	tr := &trigger.Trigger{
		ID: id, UserID: r.Str(item, "", "ownerUserId"), OrgID: r.Str(item, "", "orgId"), Active: r.Bool(item, "", "active"),
	}
	r.Str(item, "", "dueShard")
	tr.Cron, tr.Timezone = r.Str(item, "", "cron"), r.Str(item, "", "timezone")
	if m, ok := r.Map(item, "", "webhook"); ok {
		tr.Webhook = decodeWebhook(&r, m)
	}
	if repo, ok := r.Map(item, "", "repository"); ok {
		tr.Repository = r.Repository(repo, "repository.")
	}
	if agent, ok := r.Map(item, "", "agent"); ok {
		tr.Agent = r.Agent(agent, "agent.")
	}
	tr.Prompt = r.Str(item, "", "prompt")
	tr.SavedAllocation = r.Str(item, "", "sandboxAllocation")
	tr.EnvironmentID = r.Str(item, "", "environmentId")
	tr.SavedRequest = decodeSavedRequest(&r, item)
	tr.CreatedAt = r.Time(item, "", "createdAt", session.TimeFormat)
	if r.Str(item, "", "listedAt") != "" {
		tr.CreatedAt = r.Time(item, "", "listedAt", listedAtFormat) // to the nanosecond
	}
	tr.NextRunAt = r.Time(item, "", "nextRunAt", session.TimeFormat)
	tr.LastRun = trigger.Run{
		At: r.Time(item, "", "lastRunAt", session.TimeFormat), SessionID: r.Str(item, "", "lastSessionId"),
		Status: r.Str(item, "", "lastRunStatus"), Error: r.Str(item, "", "lastError"),
	}
	tr.Version = r.Int(item, "", "version")
	invalid := func(cause error) error {
		var owner AttrReader // as far as it can still be read
		return &InvalidTriggerError{ID: id, UserID: owner.Str(item, "", "ownerUserId"), OrgID: owner.Str(item, "", "orgId"), Cause: cause}
	}
	switch {
	case r.Err() != nil:
		return nil, invalid(r.Err())
	case storedID != id || tr.UserID == "":
		return nil, invalid(errors.New("triggerId differs from the key, or ownerUserId is missing"))
	case tr.Webhook != nil && (tr.Cron != "" || !tr.NextRunAt.IsZero() || item["dueShard"] != nil):
		return nil, invalid(errors.New("a webhook trigger has cron, nextRunAt or dueShard"))
	}
	return tr, nil
}
