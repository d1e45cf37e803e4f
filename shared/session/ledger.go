package session

import (
	"strings"
	"time"

	"github.com/cloud-agent/control-plane/shared/allocation"
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

// Keys of a ledger row.
const (
	ledgerPrefix  = "OPERATION#"
	ledgerSortKey = "LEDGER"
)

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
	return Item{"PK": S(ledgerPrefix + userID + "#" + operationKey), "SK": S(ledgerSortKey)}
}

// IsLedgerKey reports whether a primary key is a ledger row's.
func IsLedgerKey(pk, sk string) bool {
	return strings.HasPrefix(pk, ledgerPrefix) && sk == ledgerSortKey
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

// Retirement is ledger rules 2 and 3 under the policy, the policy's one
// decision on the sandbox the row records (its allocation, the shared
// kind, its provider as Provider gives it), as a key's row is told it: a
// row on a retired sandbox is never replayed; nil when it is on none.
func (l *LedgerRow) Retirement(p *allocation.Policy) error {
	recorded, _ := allocation.ByName(l.SandboxAllocation)
	provider, _ := l.Provider()
	return p.Retirement(recorded, provider, l.SandboxKind == string(allocation.KindShared)).Err(allocation.KeyRow)
}

// Expired reports whether the row counts as absent at now: its expiresAt has
// passed, even if the row is still readable.
func (l *LedgerRow) Expired(now time.Time) bool {
	return !l.ExpiresAt.IsZero() && !now.Before(l.ExpiresAt)
}

// EncodeLedger returns the item of a ledger row.
func EncodeLedger(l *LedgerRow) Item {
	item := LedgerKey(l.UserID, l.OperationKey)
	item["intent"] = S(l.Intent)
	PutS(item, "orgId", l.OrgID)
	PutS(item, "botId", l.BotID)
	item["fingerprint"] = S(l.Fingerprint)
	item["status"] = S(l.Status)
	item["sessionId"] = S(l.SessionID)
	PutS(item, "sandboxId", l.SandboxID)
	PutS(item, "sandboxKind", l.SandboxKind)
	PutS(item, "sandboxProvider", l.SandboxProvider)
	PutS(item, "sandboxAllocation", l.SandboxAllocation)
	if !l.LeaseUntil.IsZero() {
		item["leaseUntil"] = N(l.LeaseUntil.UnixMilli())
	}
	item["createdAt"] = S(l.CreatedAt)
	item["expiresAt"] = N(l.ExpiresAt.Unix())
	return item
}

// InvalidLedgerError is a ledger row that does not decode.
type InvalidLedgerError struct{ Reason string }

func (e *InvalidLedgerError) Error() string { return "ledger row is invalid: " + e.Reason }

// DecodeLedger reads a ledger row. The user and the key come from the
// row's key; attributes of the wrong type make it invalid.
func DecodeLedger(item Item) (*LedgerRow, error) {
	d := &AttrReader{EmptyIsUnset: true}
	pk := d.Str(item, "", "PK")
	rest, ok := strings.CutPrefix(pk, ledgerPrefix)
	user, key, ok2 := strings.Cut(rest, "#")
	if !ok || !ok2 || user == "" || key == "" {
		return nil, &InvalidLedgerError{"the key is not a ledger key"}
	}
	l := &LedgerRow{
		UserID:            user,
		OperationKey:      key,
		Intent:            d.Str(item, "", "intent"),
		OrgID:             d.Str(item, "", "orgId"),
		BotID:             d.Str(item, "", "botId"),
		Fingerprint:       d.Str(item, "", "fingerprint"),
		Status:            d.Str(item, "", "status"),
		SessionID:         d.Str(item, "", "sessionId"),
		SandboxID:         d.Str(item, "", "sandboxId"),
		SandboxKind:       d.Str(item, "", "sandboxKind"),
		SandboxProvider:   d.Str(item, "", "sandboxProvider"),
		SandboxAllocation: d.Str(item, "", "sandboxAllocation"),
		LeaseUntil:        d.EpochMillis(item, "", "leaseUntil"),
		CreatedAt:         d.Str(item, "", "createdAt"),
	}
	if route, ok := d.Map(item, "", "sandboxRoute"); ok {
		l.Route = &Route{d.Str(route, "sandboxRoute.", "kind"), d.Str(route, "sandboxRoute.", "routeKey"), d.Str(route, "sandboxRoute.", "suffix")}
	}
	l.ExpiresAt = d.EpochSeconds(item, "", "expiresAt")
	if l.SessionID == "" {
		d.Fail("sessionId is missing")
	}
	if d.Err() != nil {
		return nil, &InvalidLedgerError{d.Err().Error()}
	}
	return l, nil
}
