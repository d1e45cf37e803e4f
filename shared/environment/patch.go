package environment

import (
	"bytes"
	"encoding/json/jsontext"
	"maps"
	"slices"

	"github.com/cloud-agent/control-plane/shared/jsonbody"
	"github.com/cloud-agent/control-plane/shared/problem"
)

// patchBody is a PATCH /v1/environments/{environmentId} body's values.
type patchBody struct {
	Name              *string           `json:"name"`
	Description       *string           `json:"description"`
	Default           *bool             `json:"default"`
	Variables         map[string]*Patch `json:"variables"`
	SetupCommands     []string          `json:"setupCommands"`
	SandboxAllocation jsontext.Value    `json:"sandboxAllocation"`
}

// sent is which members a PATCH body holds, null included.
type sent struct {
	Name          jsontext.Value `json:"name"`
	Description   jsontext.Value `json:"description"`
	Default       jsontext.Value `json:"default"`
	Variables     jsontext.Value `json:"variables"`
	SetupCommands jsontext.Value `json:"setupCommands"`
	SandboxAlloc  jsontext.Value `json:"sandboxAllocation"`
}

// Update is a PATCH body, a JSON merge patch of an environment: Apply
// merges it; Allocation is a sandboxAllocation sent (nil for none or
// null), to be judged by allocation checks 1 and 3 to 6, and ClearsAllocation
// a null one; Default is the default flag sent, nil when not.
type Update struct {
	body             patchBody
	sent             sent
	Allocation       jsontext.Value
	ClearsAllocation bool
	Default          *bool
}

// ParsePatch reads a PATCH body strictly: each member's type, each fault
// invalid_request naming the member.
func ParsePatch(body []byte) (*Update, error) {
	u := &Update{}
	if err := jsonbody.Decode(body, &u.body); err != nil {
		return nil, err
	}
	if err := jsonbody.Decode(body, &u.sent); err != nil {
		return nil, err
	}
	var m problem.Members
	if u.sent.Name != nil && u.body.Name == nil {
		m.Fail("name", "may not be removed")
	}
	if u.sent.Default != nil && u.body.Default == nil {
		m.Fail("default", "must be true or false")
	}
	if u.body.Description != nil && *u.body.Description == "" {
		m.Fail("description", "may not be empty: null removes it")
	}
	u.Allocation = jsonbody.NameOrObject(&m, "sandboxAllocation", u.body.SandboxAllocation)
	u.ClearsAllocation = u.sent.SandboxAlloc != nil && u.Allocation == nil
	u.Default = u.body.Default
	return u, m.Err()
}

// Apply is e with the patch merged, held to every rule a create is
// (Check): a member left out keeps its value, null removes it (the
// description, the variables, the setup commands, the saved allocation),
// and the variables merge member by member (MergeVariables). A sent
// allocation is not applied: the caller judges it and saves what it
// names. e is not changed.
func (u *Update) Apply(e *Environment) (*Environment, error) {
	next := *e
	next.Variables, next.SetupCommands = maps.Clone(e.Variables), slices.Clone(e.SetupCommands)
	if u.body.Name != nil {
		next.Name = *u.body.Name
	}
	if u.sent.Description != nil {
		next.Description = ""
		if u.body.Description != nil {
			next.Description = *u.body.Description
		}
	}
	if u.sent.Variables != nil {
		vars, err := MergeVariables(e.Variables, u.body.Variables)
		if err != nil {
			return nil, err
		}
		if u.body.Variables == nil { // null: every variable removed
			vars = map[string]Variable{}
		}
		next.Variables = vars
	}
	if u.sent.SetupCommands != nil {
		next.SetupCommands = u.body.SetupCommands
	}
	if u.ClearsAllocation {
		next.SavedAllocation, next.SavedRequest = "", nil
	}
	if err := next.Check(); err != nil {
		return nil, err
	}
	return &next, nil
}

// Changed reports whether next's content differs from e's, which moves
// its version on; being the default is not content. A secret given a value
// again is a change, since only its ciphertext was kept.
func Changed(e, next *Environment) bool {
	sameRequest := e.SavedRequest == next.SavedRequest ||
		e.SavedRequest != nil && next.SavedRequest != nil && *e.SavedRequest == *next.SavedRequest
	return e.Name != next.Name || e.Description != next.Description || !slices.Equal(e.SetupCommands, next.SetupCommands) ||
		e.SavedAllocation != next.SavedAllocation || !sameRequest || !maps.EqualFunc(e.Variables, next.Variables, sameVariable)
}

func sameVariable(a, b Variable) bool {
	return a.Secret == b.Secret && a.Value == b.Value && bytes.Equal(a.Sealed, b.Sealed)
}
