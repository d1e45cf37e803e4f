// Package session owns the session record: its fields and its sandbox,
// the view the API shows of it, and the repository and agent of a request
// body, read into the record's types. It knows nothing of DynamoDB: the
// record's items, the current version 2 shape and every legacy shape still
// in the table, are the store's (store.EncodeSession, store.DecodeSession).
package session

import (
	"time"

	"github.com/cloud-agent/control-plane/shared/allocation"
)

// Record is a stored session, current or legacy.
type Record struct {
	SessionID string
	// SchemaVersion is 2 for the nested metadata shape, 1 for the legacy
	// flat one.
	SchemaVersion     int
	UserID            string
	OrgID             string // "" when none
	BotID             string // "" when none
	CreatedOnPlatform string
	Repository        Repository
	Agent             Agent
	// CreatedAt is zero when the record does not say.
	CreatedAt time.Time
	Sandbox   Sandbox
}

// Repository is what the session works on.
type Repository struct {
	Type   string // github, gitlab or git
	Repo   string // owner/name, github only
	URL    string // gitlab and git
	Branch string
}

// Agent is the agent the session runs.
type Agent struct {
	Mode    string
	Model   string
	Variant string
}

// Sandbox is a record's sandbox as stored: an empty member was not stored.
type Sandbox struct {
	ID   string
	Kind allocation.Kind
	// Provider is the stored provider, or cloudflare when none is stored
	// (ProviderStored is then false).
	Provider       allocation.Provider
	ProviderStored bool
	// Allocation is the stored allocation (a name, or a request object);
	// zero when none is stored.
	Allocation allocation.Allocation
	Route      *Route
}

// Route is a legacy shared sandbox's route.
type Route struct {
	Kind     string
	RouteKey string
	Suffix   string
}

// Allocation is the record's allocation: the stored one, or
// cloudflare-shared for a shared kind or a legacy shared id.
func (r *Record) Allocation() allocation.Allocation {
	return allocation.RecordAllocation(r.Sandbox.Allocation, r.Sandbox.Kind, r.Sandbox.ID)
}

// Legacy reports whether the record is anything but what the current writer
// produces: version 2, kind isolated or code-review, a stored provider, an
// sbx- id, no route; and, as only legacy records hold it, not the
// cloudflare-shared allocation.
func (r *Record) Legacy() bool {
	s := r.Sandbox
	current := r.SchemaVersion == 2 &&
		(s.Kind == allocation.KindIsolated || s.Kind == allocation.KindCodeReview) &&
		s.ProviderStored &&
		allocation.Classify(s.ID) == allocation.ClassSandbox &&
		s.Route == nil &&
		s.Allocation.Name() != allocation.CloudflareShared
	return !current
}
