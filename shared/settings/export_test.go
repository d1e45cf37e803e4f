package settings

import "time"

// The parameters, for the tests outside the package (which may import the
// local stack's stand-in, itself reading settings files through ReadFile).
const (
	ParamDefault            = paramDefault
	ParamSelectable         = paramSelectable
	ParamRetiredAllocations = paramRetiredAllocations
	ParamRetiredProviders   = paramRetiredProviders
	ParamSelectionOwners    = paramSelectionOwners
	ParamDeliveries         = paramDeliveries
	ParamOutcomeTimeout     = paramOutcomeTimeout
)

// SetClock makes s tell the time by now.
func (s *Settings) SetClock(now func() time.Time) { s.now = now }

// RefreshAt is when s reads the parameters again.
func (s *Settings) RefreshAt() time.Time { return s.refresh }
