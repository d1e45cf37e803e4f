package environment

import "github.com/cloud-agent/control-plane/shared/problem"

// ErrNotFound is a named environment that the start's user does not own,
// or that does not exist.
var ErrNotFound = problem.New(problem.EnvironmentNotFound, "There is no such environment.")

// Source is what a start resolves its environment from: who starts it, in
// which org ("" for none), and the environment it names ("" for none).
type Source struct {
	UserID, OrgID string
	Named         string
	// Delivery is a webhook delivery's start, which never takes a
	// default: its prompt carries a stranger's text.
	Delivery bool
}

// Owner is an owner of environments: a user, for their own (OrgID ""), or
// an org (UserID "").
type Owner struct{ UserID, OrgID string }

// DefaultOwner is the owner whose default pointer holds e when it is a
// default: its org, or its user.
func (e *Environment) DefaultOwner() Owner {
	if e.OrgID != "" {
		return Owner{OrgID: e.OrgID}
	}
	return Owner{UserID: e.OwnerUserID}
}

// Reads are what s needs read: the named environment, or the owners
// whose defaults apply (the user's, then the org's); nothing for a
// delivery that names none.
func (s Source) Reads() (named string, defaults []Owner) {
	switch {
	case s.Named != "":
		return s.Named, nil
	case s.Delivery:
		return "", nil
	case s.OrgID != "":
		return "", []Owner{{UserID: s.UserID}, {OrgID: s.OrgID}}
	}
	return "", []Owner{{UserID: s.UserID}}
}

// Found is what a read found for some starts: environments by id, and
// the owners' defaults (their pointers' copies) by owner; and what was
// read, found or not.
type Found struct {
	ByID     map[string]*Environment
	Defaults map[Owner]*Environment
	read     map[Source]bool
}

// Reading notes that what s needs was read, found or not (Covers).
func (f *Found) Reading(s Source) {
	if f.read == nil {
		f.read = map[Source]bool{}
	}
	f.read[s] = true
}

// Covers reports whether f holds what s needs: a read for other starts
// (a firing's, for its due triggers as the index showed them) does not
// cover a trigger that changed since.
func (f *Found) Covers(s Source) bool { return f != nil && f.read[s] }

// Resolve is the environment the start s runs in, nil for none: the named
// one when the user owns it (ErrNotFound otherwise); without a name, the
// user's default, else the org's (with an org), else none; a delivery
// takes no default. A nil f found nothing.
func (f *Found) Resolve(s Source) (*Environment, error) {
	if f == nil {
		f = &Found{}
	}
	named, defaults := s.Reads()
	if named != "" {
		e := f.ByID[named]
		if e == nil || !e.OwnedBy(s.UserID, s.OrgID) {
			return nil, ErrNotFound
		}
		return e, nil
	}
	for _, o := range defaults {
		if e := f.Defaults[o]; e != nil {
			return e, nil
		}
	}
	return nil, nil
}
