package environment

import (
	"errors"
	"strings"
	"testing"

	"github.com/cloud-agent/control-plane/shared/allocation"
	"github.com/cloud-agent/control-plane/shared/problem"
)

// stored is an environment as the table holds it: its secret sealed.
func stored() *Environment {
	return &Environment{
		ID: "env_1", OwnerUserID: "u1", Name: "Node", Description: "CI-like",
		Variables: map[string]Variable{
			"NODE_ENV":  {Value: "production"},
			"NPM_TOKEN": {Secret: true, Sealed: []byte{7}},
		},
		SetupCommands: []string{"npm ci"}, SavedAllocation: allocation.VercelSmall, Version: 3,
	}
}

// TestPatch: a PATCH body merged into a stored environment, member by
// member, and whether its content changed (its version moves on).
func TestPatch(t *testing.T) {
	rows := []struct {
		rule, body string
		check      func(e *Environment) bool
		changed    bool
		member     string // refused, naming it
	}{
		{"{} changes nothing", `{}`, func(e *Environment) bool { return e.Name == "Node" }, false, ""},
		{"a name", `{"name": "Web"}`, func(e *Environment) bool { return e.Name == "Web" }, true, ""},
		{"the same name", `{"name": "Node"}`, func(e *Environment) bool { return e.Name == "Node" }, false, ""},
		{"a null name", `{"name": null}`, nil, false, "name"},
		{"a null default", `{"default": null}`, nil, false, "default"},
		{"a name that breaks a rule", `{"name": " Web"}`, nil, false, "name"},
		{"null removes the description", `{"description": null}`, func(e *Environment) bool { return e.Description == "" }, true, ""},
		{"an empty description", `{"description": ""}`, nil, false, "description"},
		{"a variable removed", `{"variables": {"NODE_ENV": null}}`, func(e *Environment) bool { _, ok := e.Variables["NODE_ENV"]; return !ok }, true, ""},
		{"a secret sent back as a GET answered it", `{"variables": {"NPM_TOKEN": {"value": null, "secret": true}}}`,
			func(e *Environment) bool { return string(e.Variables["NPM_TOKEN"].Sealed) == "\x07" }, false, ""},
		{"a secret given a new value", `{"variables": {"NPM_TOKEN": {"value": "npm_new"}}}`,
			func(e *Environment) bool {
				v := e.Variables["NPM_TOKEN"]
				return v.Secret && v.Value == "npm_new" && v.Sealed == nil
			}, true, ""},
		{"a secret made plain without its value", `{"variables": {"NPM_TOKEN": {"secret": false}}}`, nil, false, "variables.NPM_TOKEN"},
		{"null removes every variable", `{"variables": null}`, func(e *Environment) bool { return len(e.Variables) == 0 }, true, ""},
		{"a reserved variable added", `{"variables": {"PATH": {"value": "/bin"}}}`, nil, false, "variables.PATH"},
		{"setup commands replaced whole", `{"setupCommands": ["make"]}`, func(e *Environment) bool { return len(e.SetupCommands) == 1 && e.SetupCommands[0] == "make" }, true, ""},
		{"null removes the setup commands", `{"setupCommands": null}`, func(e *Environment) bool { return len(e.SetupCommands) == 0 }, true, ""},
		{"null clears the allocation", `{"sandboxAllocation": null}`, func(e *Environment) bool { return e.SavedAllocation == "" }, true, ""},
		{"an allocation is left to the caller", `{"sandboxAllocation": "vercel-large"}`, func(e *Environment) bool { return e.SavedAllocation == allocation.VercelSmall }, false, ""},
		{"an allocation that is a number", `{"sandboxAllocation": 1}`, nil, false, "sandboxAllocation"},
		{"the default flag is not content", `{"default": true}`, func(e *Environment) bool { return true }, false, ""},
		{"an unknown member", `{"version": 4}`, nil, false, "version"},
	}
	for _, r := range rows {
		t.Run(r.rule, func(t *testing.T) {
			old := stored()
			u, err := ParsePatch([]byte(r.body))
			var next *Environment
			if err == nil {
				next, err = u.Apply(old)
			}
			if r.member != "" {
				if pe, ok := errors.AsType[*problem.Error](err); !ok || pe.Code != problem.InvalidRequest || !strings.Contains(pe.Detail, r.member) {
					t.Fatalf("%v, want invalid_request naming %s", err, r.member)
				}
				return
			}
			if err != nil {
				t.Fatalf("refused: %v", err)
			}
			if !r.check(next) || Changed(old, next) != r.changed {
				t.Errorf("%+v, changed %v", next, Changed(old, next))
			}
			if Changed(stored(), old) {
				t.Error("the stored environment changed")
			}
		})
	}
	u, _ := ParsePatch([]byte(`{"sandboxAllocation": "vercel-large", "default": false}`))
	if string(u.Allocation) != `"vercel-large"` || u.ClearsAllocation || u.Default == nil || *u.Default {
		t.Errorf("%+v", u)
	}
	u, _ = ParsePatch([]byte(`{"sandboxAllocation": null}`))
	if u.Allocation != nil || !u.ClearsAllocation || u.Default != nil {
		t.Errorf("%+v", u)
	}
}
