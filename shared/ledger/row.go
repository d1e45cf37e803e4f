package ledger

import (
	"time"

	"github.com/cloud-agent/control-plane/shared/allocation"
	"github.com/cloud-agent/control-plane/shared/session"
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

// TTL is how long an operation key stays idempotent.
const TTL = 24 * time.Hour

// Row is an operation ledger row: what one operation key of one user
// started. Empty members were not recorded.
type Row struct {
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
	Route             *session.Route
	LeaseUntil        time.Time // zero when none
	CreatedAt         string
	ExpiresAt         time.Time
}

// Provider is the row's provider: the recorded one, else the provider of the
// recorded allocation, else cloudflare for an id of a legacy class, else
// unknown (ok false). No allocation is derived from the id.
func (l *Row) Provider() (p allocation.Provider, ok bool) {
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
func (l *Row) RecordsShared() bool {
	return l.SandboxKind == string(allocation.KindShared) || l.SandboxAllocation == allocation.CloudflareShared ||
		l.Route != nil && l.Route.Kind == string(allocation.KindShared)
}

// Retirement is ledger rules 2 and 3 under the policy, the policy's one
// decision on the sandbox the row records (its allocation, the shared
// kind, its provider as Provider gives it), as a key's row is told it: a
// row on a retired sandbox is never replayed; nil when it is on none.
func (l *Row) Retirement(p *allocation.Policy) error {
	recorded, _ := allocation.ByName(l.SandboxAllocation)
	provider, _ := l.Provider()
	return p.Retirement(recorded, provider, l.SandboxKind == string(allocation.KindShared)).Err(allocation.KeyRow)
}

// Expired reports whether the row counts as absent at now: its expiresAt has
// passed, even if the row is still readable.
func (l *Row) Expired(now time.Time) bool {
	return !l.ExpiresAt.IsZero() && !now.Before(l.ExpiresAt)
}
