package environment

import (
	"maps"
	"slices"

	"github.com/cloud-agent/control-plane/shared/problem"
)

// Patch is one variable as a PATCH sends it (a JSON merge patch, member by
// member); a nil *Patch, JSON null, removes the variable.
type Patch struct {
	Value  *string `json:"value"`  // nil when null or not sent
	Secret *bool   `json:"secret"` // nil when not sent
}

// MergeVariables is vars with the PATCH's variables applied: null removes
// a variable; a value replaces it, secret as it was unless secret is sent;
// no value (null, as a GET answers a secret) keeps a variable as it is.
// Changing whether a variable is secret needs its value in the same patch,
// and so does a new variable: invalid_request naming the variable
// otherwise. vars is not changed; a replaced secret is in clear
// until it is sealed.
func MergeVariables(vars map[string]Variable, patch map[string]*Patch) (map[string]Variable, error) {
	merged := maps.Clone(vars)
	if merged == nil {
		merged = map[string]Variable{}
	}
	var m problem.Members
	for _, name := range slices.Sorted(maps.Keys(patch)) {
		p, member := patch[name], "variables."+name
		was, exists := vars[name]
		switch {
		case p == nil:
			delete(merged, name)
		case p.Value != nil:
			secret := was.Secret
			if p.Secret != nil {
				secret = *p.Secret
			}
			merged[name] = Variable{Value: *p.Value, Secret: secret}
		case !exists:
			m.Fail(member, "needs its value")
		case p.Secret != nil && *p.Secret != was.Secret && was.Secret:
			m.Fail(member, "needs its value to stop being secret")
		case p.Secret != nil && *p.Secret != was.Secret:
			m.Fail(member, "needs its value to become secret")
		}
	}
	return merged, m.Err()
}
