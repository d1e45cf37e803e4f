// Package audit reports what a table still holds from the shared-sandbox
// era and the retired runtimes (contract section 8), reading only, and
// when asked clears the saved allocation of the triggers and environments
// that fall back at a firing or a start: the rewrite is its one write.
// It classifies with the code the functions use: sessions as the lookup
// shows them, ledger rows by the ledger rules, triggers and environments
// by the fallback rule of a saved allocation, under the settings the
// functions read.
package audit

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/cloud-agent/control-plane/shared/allocation"
	"github.com/cloud-agent/control-plane/shared/commit"
	"github.com/cloud-agent/control-plane/shared/environment"
	"github.com/cloud-agent/control-plane/shared/ledger"
	"github.com/cloud-agent/control-plane/shared/problem"
	"github.com/cloud-agent/control-plane/shared/session"
	"github.com/cloud-agent/control-plane/shared/store"
	"github.com/cloud-agent/control-plane/shared/trigger"
)

// Report is what a table holds, the contract's object (every member a
// count). The members of a group overlap: a flat record with a route
// key's id counts as legacyFlat and as routeKey.
type Report struct {
	Scanned  int      `json:"scanned"`
	Sessions Sessions `json:"sessions"`
	Ledger   Ledger   `json:"ledger"`
	Triggers Triggers `json:"triggers"`
	// Environments (v7) follow the triggers, as in the contract's object.
	Environments Environments `json:"environments"`
	// Items that are not in the contract's object: ledger rows, triggers
	// and environments that do not decode, and items of no kind the
	// contract names (the owners' counts, the triggers' runs, the default
	// pointers).
	Uncounted Uncounted `json:"-"`
	// Fallbacks are the triggers and environments that fall back, as
	// scanned.
	Fallbacks []Fallback `json:"-"`
}

// Sessions counts the session records. current is what the current writer
// produces (record.legacy false); the shape classes follow section 3's id
// table and the stored kind; the retirement classes are the lookup's,
// under the settings: on a retired provider (the record's or its
// allocation's) and on a retired allocation.
type Sessions struct {
	Current              int `json:"current"`
	LegacyFlat           int `json:"legacyFlat"`
	SharedKind           int `json:"sharedKind"`
	RouteKey             int `json:"routeKey"`
	RawOwnerKey          int `json:"rawOwnerKey"`
	LegacyIsolatedPrefix int `json:"legacyIsolatedPrefix"`
	SbxNoKind            int `json:"sbxNoKind"`
	Invalid              int `json:"invalid"`
	OnRetiredProvider    int `json:"onRetiredProvider"`
	OnRetiredAllocation  int `json:"onRetiredAllocation"`
}

// Ledger counts the operation ledger rows, expired ones included (they
// stay readable until the table's TTL deletes them): by status, those that
// record a shared sandbox, and those that ledger rule 2 or 3 refuses under
// the settings.
type Ledger struct {
	Completed      int `json:"completed"`
	InProgress     int `json:"inProgress"`
	Failed         int `json:"failed"`
	RecordsShared  int `json:"recordsShared"`
	RecordsRetired int `json:"recordsRetired"`
}

// Triggers counts the triggers: all, the paused, the webhook ones (of
// both, the rest scheduled), and those whose saved allocation falls back
// to the default, paused ones included (they would when resumed), by the
// class of the firing's rule.
type Triggers struct {
	Total    int       `json:"total"`
	Paused   int       `json:"paused"`
	Webhook  int       `json:"webhook"`
	Fallback Fallbacks `json:"fallback"`
}

// Environments counts the environments (v7): all, and those whose saved
// allocation falls back to the default at a start, by the class of the
// same rule as the triggers'. The owners' default pointers, copies of
// their defaults, are not environments.
type Environments struct {
	Total    int       `json:"total"`
	Fallback Fallbacks `json:"fallback"`
}

// Fallbacks counts triggers, or environments, by fallback class.
type Fallbacks struct {
	Retired         int `json:"retired"`
	ProviderRetired int `json:"providerRetired"`
	Unknown         int `json:"unknown"`
	NotSelectable   int `json:"notSelectable"`
}

// Uncounted counts what the contract's object leaves out: ledger rows,
// triggers and environments that do not decode, and items of no kind it
// names.
type Uncounted struct {
	Ledger       int
	Triggers     int
	Environments int
	Other        int
}

// Fallback is a trigger or an environment (exactly one is set) whose
// saved allocation falls back, as scanned.
type Fallback struct {
	Trigger     *trigger.Trigger
	Environment *environment.Environment
	Class       allocation.FallbackClass
	Reason      string
}

// Kind is "trigger" or "environment".
func (fb Fallback) Kind() string {
	if fb.Environment != nil {
		return "environment"
	}
	return "trigger"
}

// ID is the trigger's or the environment's id.
func (fb Fallback) ID() string {
	if fb.Environment != nil {
		return fb.Environment.ID
	}
	return fb.Trigger.ID
}

// Saved is the saved allocation: the stored name, or the request object.
func (fb Fallback) Saved() (string, *allocation.Request) {
	if fb.Environment != nil {
		return fb.Environment.SavedAllocation, fb.Environment.SavedRequest
	}
	return fb.Trigger.SavedAllocation, fb.Trigger.SavedRequest
}

// owner is the owner the saved allocation is judged for.
func (fb Fallback) owner() string {
	if fb.Environment != nil {
		return fb.Environment.Owner()
	}
	return allocation.Owner(fb.Trigger.UserID, fb.Trigger.OrgID)
}

// judged is fb judged under the policy by the rule of a saved
// allocation (the firing's for a trigger, a start's for an environment):
// its class is "" when it does not fall back.
func (fb Fallback) judged(p *allocation.Policy) Fallback {
	name, req := fb.Saved()
	_, why, _ := p.Saved(name, req, fb.owner())
	fb.Class, fb.Reason = why.Class, why.Reason
	return fb
}

// Scan reads the whole table in segments and classifies every item under
// the policy. progress, when not nil, is told how many items each page
// held, from one goroutine at a time.
func Scan(ctx context.Context, tbl *store.Table, p *allocation.Policy, segments int, progress func(items int)) (*Report, error) {
	var mu sync.Mutex
	r := &Report{}
	err := tbl.Scan(ctx, segments, func(items []store.Scanned) error {
		mu.Lock()
		defer mu.Unlock()
		for _, it := range items {
			r.add(p, it)
		}
		if progress != nil {
			progress(len(items))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return r, nil
}

func (r *Report) add(p *allocation.Policy, it store.Scanned) {
	r.Scanned++
	switch it.Kind {
	case store.KindSession:
		r.Sessions.add(p, it.Session)
	case store.KindLedger:
		if it.Err != nil {
			r.Uncounted.Ledger++
			return
		}
		r.Ledger.add(p, it.Ledger)
	case store.KindTrigger:
		r.Triggers.Total++
		if it.Err != nil {
			r.Uncounted.Triggers++
			return
		}
		r.addTrigger(p, it.Trigger)
	case store.KindEnvironment:
		r.Environments.Total++
		if it.Err != nil {
			r.Uncounted.Environments++
			return
		}
		r.addFallback(&r.Environments.Fallback, Fallback{Environment: it.Environment}.judged(p))
	default:
		r.Uncounted.Other++
	}
}

// add counts a session record; nil is one that does not decode.
func (s *Sessions) add(p *allocation.Policy, rec *session.Record) {
	if rec == nil {
		s.Invalid++
		return
	}
	count := func(n *int, yes bool) {
		if yes {
			*n++
		}
	}
	sb := rec.Sandbox
	class := allocation.Classify(sb.ID)
	count(&s.Current, !rec.Legacy())
	count(&s.LegacyFlat, rec.SchemaVersion == 1)
	count(&s.SharedKind, sb.Kind == allocation.KindShared)
	count(&s.RouteKey, class == allocation.ClassLegacyRouteKey)
	count(&s.RawOwnerKey, class == allocation.ClassLegacyOwnerKey)
	count(&s.LegacyIsolatedPrefix, class == allocation.ClassLegacyIsolated)
	count(&s.SbxNoKind, class == allocation.ClassSandbox && sb.Kind == "")
	retired := p.Retirement(rec.Allocation(), sb.Provider, false)
	count(&s.OnRetiredProvider, retired.Provider)
	count(&s.OnRetiredAllocation, retired.Allocation)
}

func (l *Ledger) add(p *allocation.Policy, row *ledger.Row) {
	switch row.Status {
	case ledger.StatusCompleted:
		l.Completed++
	case ledger.StatusInProgress:
		l.InProgress++
	case ledger.StatusFailed:
		l.Failed++
	}
	if row.RecordsShared() {
		l.RecordsShared++
	}
	if row.Retirement(p) != nil {
		l.RecordsRetired++
	}
}

func (r *Report) addTrigger(p *allocation.Policy, tr *trigger.Trigger) {
	if !tr.Active {
		r.Triggers.Paused++
	}
	if tr.Webhook != nil {
		r.Triggers.Webhook++
	}
	r.addFallback(&r.Triggers.Fallback, Fallback{Trigger: tr}.judged(p))
}

// addFallback counts fb in f by its class, and lists it, when it falls
// back.
func (r *Report) addFallback(f *Fallbacks, fb Fallback) {
	switch fb.Class {
	case "":
		return
	case allocation.FallbackRetired:
		f.Retired++
	case allocation.FallbackProviderRetired:
		f.ProviderRetired++
	case allocation.FallbackUnknown:
		f.Unknown++
	case allocation.FallbackNotSelectable:
		f.NotSelectable++
	}
	r.Fallbacks = append(r.Fallbacks, fb)
}

// Outcome is what the rewrite did, or would do, to one trigger or
// environment.
type Outcome struct {
	Fallback
	// Result is cleared (or would be, in a dry run), gone (deleted since
	// the scan), kept (no longer falls back: changed since the scan),
	// changing (it kept changing under the write) or failed (a fault,
	// Err): run again for the last two.
	Result string
	Err    error
}

// The results of a rewrite.
const (
	Cleared  = "cleared"
	Gone     = "gone"
	Kept     = "kept"
	Changing = "changing"
	Failed   = "failed"
)

// Rewrite clears the saved allocation of each trigger and environment
// that falls back, so that the default applies, as it already does at a
// firing or a start. Each write is conditioned on the trigger or the
// environment being unchanged since it was read (an environment's goes
// with its owner's default pointer when it is the default); one that
// changed is read again (strongly consistent) and judged again. A dry run
// writes nothing and says what it would clear. A run cut short leaves
// each either cleared or as it was: run it again.
func Rewrite(ctx context.Context, tbl *store.Table, p *allocation.Policy, fallbacks []Fallback, dryRun bool) []Outcome {
	out := make([]Outcome, 0, len(fallbacks))
	for _, fb := range fallbacks {
		out = append(out, rewriteOne(ctx, tbl, p, fb, dryRun))
	}
	return out
}

func rewriteOne(ctx context.Context, tbl *store.Table, p *allocation.Policy, fb Fallback, dryRun bool) Outcome {
	if dryRun {
		return Outcome{Fallback: fb, Result: Cleared}
	}
	again := false
	o, err := commit.Again(ctx, errMoved, errChanging, func() (Outcome, error) {
		if again { // a firing, a start or a change came first, or is under way
			now, err := fb.reread(ctx, tbl)
			switch {
			case errors.Is(err, store.ErrNotFound):
				return Outcome{Fallback: fb, Result: Gone}, nil
			case err != nil:
				return Outcome{Fallback: fb, Result: Failed, Err: err}, nil
			}
			if now = now.judged(p); now.Class == "" {
				return Outcome{Fallback: fb, Result: Kept}, nil
			}
			fb = now
		}
		again = true
		err := fb.clear(ctx, tbl)
		switch {
		case errors.Is(err, errMoved):
			return Outcome{}, err
		case err != nil:
			return Outcome{Fallback: fb, Result: Failed, Err: err}, nil
		}
		return Outcome{Fallback: fb, Result: Cleared}, nil
	})
	switch {
	case err == nil:
		return o
	case ctx.Err() != nil: // stopped during a pause
		return Outcome{Fallback: fb, Result: Failed, Err: err}
	}
	return Outcome{Fallback: fb, Result: Changing}
}

// reread is fb's trigger or environment read again, strongly consistent,
// not yet judged; store.ErrNotFound when it was deleted.
func (fb Fallback) reread(ctx context.Context, tbl *store.Table) (Fallback, error) {
	if fb.Environment != nil {
		e, err := tbl.GetEnvironment(ctx, fb.Environment.ID)
		return Fallback{Environment: e}, err
	}
	tr, err := tbl.GetTrigger(ctx, fb.Trigger.ID)
	return Fallback{Trigger: tr}, err
}

// clear clears fb's saved allocation on the condition that it is as
// read: errMoved when it is not.
func (fb Fallback) clear(ctx context.Context, tbl *store.Table) error {
	var err error
	if fb.Environment != nil {
		err = tbl.ClearEnvironmentAllocation(ctx, fb.Environment, time.Now())
	} else {
		err = tbl.ClearSavedAllocation(ctx, fb.Trigger)
	}
	if errors.Is(err, store.ErrTriggerMoved) || errors.Is(err, store.ErrEnvironmentMoved) {
		return errMoved
	}
	return err
}

// errMoved is a trigger or an environment that is no longer as read.
var errMoved = errors.New("audit: moved on since it was read")

// errChanging is a trigger or an environment that kept changing under
// the rewrite.
var errChanging = problem.New(problem.ServiceUnavailable, "it kept changing")
