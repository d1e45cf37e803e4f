package session

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/cloud-agent/control-plane/shared/allocation"
	"github.com/cloud-agent/control-plane/shared/problem"
)

// Ledger row statuses. The current writer stores rows completed; the others
// come from older writers.
const (
	StatusCompleted  = "completed"
	StatusInProgress = "in_progress"
	StatusFailed     = "failed"
)

// IntentCreateSession is the only intent of a ledger row.
const IntentCreateSession = "create_session"

// LedgerTTL is how long an operation key stays idempotent.
const LedgerTTL = 24 * time.Hour

const ledgerSortKey = "LEDGER"

// LedgerRow is an operation ledger row: what one operation key of one user
// started. Empty members were not recorded.
type LedgerRow struct {
	UserID       string
	OperationKey string
	Intent       string
	OrgID        string
	BotID        string
	Fingerprint  string
	Status       string
	SessionID    string
	SandboxID    string
	SandboxKind  string
	// SandboxProvider and SandboxAllocation are as recorded, unchecked: the
	// ledger rules judge them.
	SandboxProvider   string
	SandboxAllocation string
	Route             *Route
	LeaseUntil        time.Time // zero when none
	CreatedAt         string
	ExpiresAt         time.Time
}

// LedgerKey returns the primary key of a user's ledger row for a key.
func LedgerKey(userID, operationKey string) Item {
	return Item{"PK": s("OPERATION#" + userID + "#" + operationKey), "SK": s(ledgerSortKey)}
}

// Provider is the row's provider: the recorded one, else the provider of the
// recorded allocation, else cloudflare for an id of a legacy class, else
// unknown (ok false). No allocation is derived from the id.
func (l *LedgerRow) Provider() (p allocation.Provider, ok bool) {
	if l.SandboxProvider != "" {
		return allocation.Provider(l.SandboxProvider), true
	}
	if a, ok := allocation.ByName(l.SandboxAllocation); ok {
		return a.Provider(), true
	}
	switch allocation.Classify(l.SandboxID) {
	case allocation.ClassLegacyIsolated, allocation.ClassLegacyRouteKey, allocation.ClassLegacyOwnerKey:
		return allocation.Cloudflare, true
	}
	return "", false
}

// RecordsShared reports whether the row records a shared sandbox: the
// shared kind, the cloudflare-shared allocation, or a shared route. Only
// what it records counts; nothing is derived from its sandbox id.
func (l *LedgerRow) RecordsShared() bool {
	return l.SandboxKind == string(allocation.KindShared) || l.SandboxAllocation == allocation.CloudflareShared ||
		l.Route != nil && l.Route.Kind == string(allocation.KindShared)
}

// Retirement is ledger rules 2 and 3 under the policy: a row that records
// the shared kind or a retired allocation is sandbox_allocation_retired,
// one whose provider (Provider) is retired is sandbox_runtime_retired, and
// neither is ever replayed; nil when the row is on neither.
func (l *LedgerRow) Retirement(p *allocation.Policy) error {
	recorded, known := allocation.ByName(l.SandboxAllocation)
	retired := known && p.AllocationRetired(recorded)
	if !retired {
		recorded, _ = allocation.ByName(allocation.CloudflareShared) // what the shared kind was
	}
	provider, providerKnown := l.Provider()
	switch {
	case retired || l.SandboxKind == string(allocation.KindShared):
		return problem.New(problem.SandboxAllocationRetired, allocation.AllocationRetiredDetail(recorded))
	case providerKnown && p.ProviderRetired(provider):
		return problem.New(problem.SandboxRuntimeRetired, fmt.Sprintf(
			"The operation key's session runs on the retired %s runtime and cannot be started or resumed. "+
				"Start a new session with another operation key to use the default sandbox.", provider.DisplayName()))
	}
	return nil
}

// Expired reports whether the row counts as absent at now: its expiresAt has
// passed, even if the row is still readable.
func (l *LedgerRow) Expired(now time.Time) bool {
	return !l.ExpiresAt.IsZero() && !now.Before(l.ExpiresAt)
}

// EncodeLedger returns the item of a ledger row.
func EncodeLedger(l *LedgerRow) Item {
	item := LedgerKey(l.UserID, l.OperationKey)
	item["intent"] = s(l.Intent)
	putS(item, "orgId", l.OrgID)
	putS(item, "botId", l.BotID)
	item["fingerprint"] = s(l.Fingerprint)
	item["status"] = s(l.Status)
	item["sessionId"] = s(l.SessionID)
	putS(item, "sandboxId", l.SandboxID)
	putS(item, "sandboxKind", l.SandboxKind)
	putS(item, "sandboxProvider", l.SandboxProvider)
	putS(item, "sandboxAllocation", l.SandboxAllocation)
	if !l.LeaseUntil.IsZero() {
		item["leaseUntil"] = n(l.LeaseUntil.UnixMilli())
	}
	item["createdAt"] = s(l.CreatedAt)
	item["expiresAt"] = n(l.ExpiresAt.Unix())
	return item
}

// InvalidLedgerError is a ledger row that does not decode.
type InvalidLedgerError struct{ Reason string }

func (e *InvalidLedgerError) Error() string { return "ledger row is invalid: " + e.Reason }

// DecodeLedger reads a ledger row. The user and the key come from the
// row's key; attributes of the wrong type make it invalid.
func DecodeLedger(item Item) (*LedgerRow, error) {
	d := &decoder{}
	pk := d.str(item, "", "PK")
	rest, ok := strings.CutPrefix(pk, "OPERATION#")
	user, key, ok2 := strings.Cut(rest, "#")
	if !ok || !ok2 || user == "" || key == "" {
		return nil, &InvalidLedgerError{"the key is not a ledger key"}
	}
	l := &LedgerRow{
		UserID:            user,
		OperationKey:      key,
		Intent:            d.str(item, "", "intent"),
		OrgID:             d.str(item, "", "orgId"),
		BotID:             d.str(item, "", "botId"),
		Fingerprint:       d.str(item, "", "fingerprint"),
		Status:            d.str(item, "", "status"),
		SessionID:         d.str(item, "", "sessionId"),
		SandboxID:         d.str(item, "", "sandboxId"),
		SandboxKind:       d.str(item, "", "sandboxKind"),
		SandboxProvider:   d.str(item, "", "sandboxProvider"),
		SandboxAllocation: d.str(item, "", "sandboxAllocation"),
		LeaseUntil:        d.epochMillis(item, "", "leaseUntil"),
		CreatedAt:         d.str(item, "", "createdAt"),
	}
	if route, ok := d.mapAttr(item, "", "sandboxRoute"); ok {
		l.Route = &Route{d.str(route, "sandboxRoute.", "kind"), d.str(route, "sandboxRoute.", "routeKey"), d.str(route, "sandboxRoute.", "suffix")}
	}
	l.ExpiresAt = d.epochSeconds(item, "expiresAt")
	if l.SessionID == "" {
		d.fail("sessionId is missing")
	}
	if d.err != nil {
		return nil, &InvalidLedgerError{d.err.Error()}
	}
	return l, nil
}

// epochSeconds reads a time in epoch seconds, as TTL attributes are.
func (d *decoder) epochSeconds(item Item, name string) time.Time {
	v, ok := d.num(item, "", name)
	if !ok {
		return time.Time{}
	}
	sec, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		d.fail("%s is not a time in epoch seconds", name)
		return time.Time{}
	}
	return time.Unix(sec, 0).UTC()
}
