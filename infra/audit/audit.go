// Package audit reports what a table still holds from the shared-sandbox
// era and the retired runtimes (contract section 8), reading only, and
// when asked clears the saved allocation of the triggers that fall back
// at firing: the rewrite is its one write.
// It classifies with the code the functions use: sessions as the lookup
// shows them, ledger rows by the ledger rules, triggers by the firing's
// fallback rule, under the settings the functions read.
package audit

import (
	"context"
	"errors"
	"sync"

	"github.com/cloud-agent/control-plane/shared/allocation"
	"github.com/cloud-agent/control-plane/shared/commit"
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
	// Items that are not in the contract's object: ledger rows and
	// triggers that do not decode, and items of no kind the contract
	// names (the owners' trigger counts, the triggers' runs).
	Uncounted Uncounted `json:"-"`
	// Fallbacks are the triggers that fall back, as scanned.
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

// Fallbacks counts triggers by fallback class.
type Fallbacks struct {
	Retired         int `json:"retired"`
	ProviderRetired int `json:"providerRetired"`
	Unknown         int `json:"unknown"`
	NotSelectable   int `json:"notSelectable"`
}

// Uncounted counts what the contract's object leaves out: ledger rows and
// triggers that do not decode, and items of no kind it names.
type Uncounted struct {
	Ledger   int
	Triggers int
	Other    int
}

// Fallback is a trigger whose saved allocation falls back, as scanned.
type Fallback struct {
	Trigger *trigger.Trigger
	Class   allocation.FallbackClass
	Reason  string
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
	fb := fallback(p, tr)
	f := &r.Triggers.Fallback
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
	r.Fallbacks = append(r.Fallbacks, Fallback{tr, fb.Class, fb.Reason})
}

// fallback is the firing's rule for a trigger's saved allocation.
func fallback(p *allocation.Policy, tr *trigger.Trigger) allocation.Fallback {
	_, fb, _ := p.Saved(tr.SavedAllocation, tr.SavedRequest, allocation.Owner(tr.UserID, tr.OrgID))
	return fb
}

// Outcome is what the rewrite did, or would do, to one trigger.
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

// Rewrite clears the saved allocation of each trigger that falls back, so
// that the default applies, as it already does at firing. Each write is
// conditioned on the trigger being unchanged since it was read; a trigger
// that changed is read again (strongly consistent) and judged again. A dry
// run writes nothing and says what it would clear. A run cut short leaves
// every trigger either cleared or as it was: run it again.
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
	o, err := commit.Again(ctx, store.ErrTriggerMoved, errChanging, func() (Outcome, error) {
		if again { // a firing or a change came first, or is under way
			tr, err := tbl.GetTrigger(ctx, fb.Trigger.ID)
			switch {
			case errors.Is(err, store.ErrNotFound):
				return Outcome{Fallback: fb, Result: Gone}, nil
			case err != nil:
				return Outcome{Fallback: fb, Result: Failed, Err: err}, nil
			}
			now := fallback(p, tr)
			if now.Class == "" {
				return Outcome{Fallback: fb, Result: Kept}, nil
			}
			fb = Fallback{tr, now.Class, now.Reason}
		}
		again = true
		err := tbl.ClearSavedAllocation(ctx, fb.Trigger)
		switch {
		case errors.Is(err, store.ErrTriggerMoved):
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

// errChanging is a trigger that kept changing under the rewrite.
var errChanging = problem.New(problem.ServiceUnavailable, "the trigger kept changing")
