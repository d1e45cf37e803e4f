package environment

import "github.com/cloud-agent/control-plane/shared/problem"

// ErrNotFound is a named environment that the start's user does not own,
// or that does not exist.
var ErrNotFound = problem.New(problem.EnvironmentNotFound, "There is no such environment.")

// Start is what a start knows when it resolves its environment: who
// starts it, the environment it names ("" for none), and what one read
// found: the named environment, or the user's and the org's defaults
// (nil where there is none).
type Start struct {
	UserID, OrgID string
	Named         string
	// Delivery is a webhook delivery's start, which never takes a
	// default: its prompt carries a stranger's text.
	Delivery bool
	Found    *Environment
	// UserDefault and OrgDefault are the default pointers' copies.
	UserDefault, OrgDefault *Environment
}

// Resolve is the environment the start s runs in, nil for none: the named
// one when the user owns it (ErrNotFound otherwise); without a name, the
// user's default, else the org's (with an org), else none; a delivery
// takes no default.
func Resolve(s Start) (*Environment, error) {
	switch {
	case s.Named != "":
		if s.Found == nil || s.Found.ID != s.Named || !s.Found.OwnedBy(s.UserID, s.OrgID) {
			return nil, ErrNotFound
		}
		return s.Found, nil
	case s.Delivery:
		return nil, nil
	case s.UserDefault != nil:
		return s.UserDefault, nil
	case s.OrgID != "" && s.OrgDefault != nil:
		return s.OrgDefault, nil
	}
	return nil, nil
}
