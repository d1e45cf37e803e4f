package environment

import (
	"errors"
	"strings"
	"testing"

	"github.com/cloud-agent/control-plane/shared/problem"
)

// TestParseCreate: a POST /v1/environments body, member by member; every
// refusal is invalid_request naming its member, never quoting a value.
func TestParseCreate(t *testing.T) {
	rows := []struct {
		rule, body string
		member     string // "" when accepted
	}{
		{"a whole body", `{"orgId": "o1", "name": "Node", "description": "CI-like", "variables": {"NODE_ENV": {"value": "production"}, "NPM_TOKEN": {"value": "npm_x", "secret": true}}, "setupCommands": ["npm ci"], "sandboxAllocation": "vercel-large", "default": true}`, ""},
		{"a name alone", `{"name": "Node"}`, ""},
		{"an allocation object", `{"name": "Node", "sandboxAllocation": {"provider": {"id": "vercel", "account": "byoc"}, "instanceType": "small"}}`, ""},
		{"null members are left out", `{"name": "Node", "orgId": null, "description": null, "variables": null, "setupCommands": null, "sandboxAllocation": null, "default": null}`, ""},
		{"no name", `{}`, "name"},
		{"a null name", `{"name": null}`, "name"},
		{"a name of the wrong type", `{"name": 1}`, "name"},
		{"an empty orgId", `{"name": "Node", "orgId": ""}`, "orgId"},
		{"an orgId that is no id", `{"name": "Node", "orgId": "o 1"}`, "orgId"},
		{"an empty description", `{"name": "Node", "description": ""}`, "description"},
		{"a variable without its value", `{"name": "Node", "variables": {"A": {"secret": true}}}`, "variables.A"},
		{"a null variable", `{"name": "Node", "variables": {"A": null}}`, "variables.A"},
		{"a value of the wrong type", `{"name": "Node", "variables": {"A": {"value": 1}}}`, "variables.A.value"},
		{"an unknown member of a variable", `{"name": "Node", "variables": {"A": {"value": "x", "hidden": true}}}`, "variables.A.hidden"},
		{"variables that are not an object", `{"name": "Node", "variables": ["A"]}`, "variables"},
		{"a reserved name", `{"name": "Node", "variables": {"HOME": {"value": "/tmp"}}}`, "variables.HOME"},
		{"a credential in a plain value", `{"name": "Node", "variables": {"TOKEN": {"value": "ghp_abcdef"}}}`, "variables.TOKEN"},
		{"a credential in a secret", `{"name": "Node", "variables": {"TOKEN": {"value": "ghp_abcdef", "secret": true}}}`, ""},
		{"setup commands that are not an array", `{"name": "Node", "setupCommands": "npm ci"}`, "setupCommands"},
		{"a setup command of the wrong type", `{"name": "Node", "setupCommands": [1]}`, "setupCommands"},
		{"an allocation that is a number", `{"name": "Node", "sandboxAllocation": 1}`, "sandboxAllocation"},
		{"default of the wrong type", `{"name": "Node", "default": "yes"}`, "default"},
		{"an unknown member", `{"name": "Node", "env": {}}`, "env"},
	}
	for _, r := range rows {
		t.Run(r.rule, func(t *testing.T) {
			c, err := ParseCreate([]byte(r.body))
			if r.member == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			pe, ok := errors.AsType[*problem.Error](err)
			if !ok || pe.Code != problem.InvalidRequest || !strings.Contains(pe.Detail, r.member) {
				t.Fatalf("%v %v, want invalid_request naming %s", c, err, r.member)
			}
			for _, v := range []string{"ghp_abcdef", "/tmp", "npm_x"} {
				if strings.Contains(pe.Detail, v) {
					t.Errorf("the detail quotes a value: %s", pe.Detail)
				}
			}
		})
	}
	c, err := ParseCreate([]byte(`{"orgId": "o1", "name": "Node", "variables": {"NPM_TOKEN": {"value": "npm_x", "secret": true}, "NODE_ENV": {"value": ""}}, "setupCommands": ["npm ci"], "sandboxAllocation": "vercel-large", "default": true}`))
	if err != nil || c.OrgID != "o1" || c.Name != "Node" || !c.Default || string(c.Allocation) != `"vercel-large"` ||
		!equal(c.Variables["NPM_TOKEN"], Variable{Value: "npm_x", Secret: true}) || !equal(c.Variables["NODE_ENV"], Variable{}) || len(c.SetupCommands) != 1 {
		t.Errorf("%+v %v", c, err)
	}
}
