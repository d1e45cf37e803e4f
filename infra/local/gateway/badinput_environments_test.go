package gateway_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// credential is a plain value that holds a credential marker: no answer
// may quote it.
const credential = "ghp_abcdefghijklmnopqrstuvwxyz0123456789"

// TestBadInputEnvironmentBodies is docs/bad-input.md's rows of an
// environment's body ("Environment bodies"), row by row, through the
// gateway: each refused body gets invalid_request with a detail that names
// the member and quotes no value, and changes nothing in the table; each
// near miss is created (201) or changed (200).
func TestBadInputEnvironmentBodies(t *testing.T) {
	b := newBadInput(t)
	created := b.raw(t, "POST", "/v1/environments", []string{bearer(biUser), "Content-Type: application/json"}, `{"name":"Patched","variables":{"TOKEN":{"value":"x","secret":true},"PLAIN":{"value":"p"}}}`)
	if created.status != 201 {
		t.Fatalf("%d %s", created.status, created.body)
	}
	var env struct{ EnvironmentID string }
	_ = jsonUnmarshal(created.body, &env)
	vars := func(n int, value string) string {
		var members []string
		for i := range n {
			members = append(members, fmt.Sprintf(`"V%d":{"value":%q}`, i, value))
		}
		return `{"name":"Many","variables":{` + strings.Join(members, ",") + `}}`
	}
	commands := func(n int, c string) string {
		return `{"name":"Commands","setupCommands":[` + strings.TrimSuffix(strings.Repeat(fmt.Sprintf("%q,", c), n), ",") + `]}`
	}
	variable := func(name, v string) string { return `{"name":"Vars","variables":{"` + name + `":` + v + `}}` }
	long, longSecret := strings.Repeat("é", 4097), strings.Repeat("x", 4097)
	rows := []bodyRow{
		{"no name", "POST", `{}`, 400, "name is required."},
		{"an empty name", "POST", `{"name":""}`, 400, "name must be 1 to 100 characters"},
		{"a name of 101", "POST", `{"name":"` + strings.Repeat("n", 101) + `"}`, 400, "name must be 1 to 100 characters"},
		{"a name with a tab", "POST", `{"name":"a\tb"}`, 400, "name may not hold control characters"},
		{"a name with a space first", "POST", `{"name":" a"}`, 400, "name may not start or end with white space"},
		{"a name with a credential", "POST", `{"name":"` + credential + `"}`, 400, "name holds what looks like a credential"},
		{"a description of 501", "POST", `{"name":"D","description":"` + strings.Repeat("d", 501) + `"}`, 400, "description must be at most 500 characters"},
		{"an empty description", "POST", `{"name":"D","description":""}`, 400, "description may not be empty"},
		{"51 variables", "POST", vars(51, "v"), 400, "variables holds at most 50 variables"},
		{"a variable name starting with a digit", "POST", variable("1X", `{"value":"v"}`), 400, "a variable's name must match"},
		{"a variable name of 129", "POST", variable("V"+strings.Repeat("x", 128), `{"value":"v"}`), 400, "a variable's name must match"},
		{"a variable name with a dash", "POST", variable("A-B", `{"value":"v"}`), 400, "a variable's name must match"},
		{"the reserved HOME", "POST", variable("HOME", `{"value":"/tmp"}`), 400, "variables.HOME is reserved"},
		{"the reserved SESSION_ID", "POST", variable("SESSION_ID", `{"value":"x"}`), 400, "variables.SESSION_ID is reserved"},
		{"the reserved AWS_REGION", "POST", variable("AWS_REGION", `{"value":"eu-west-1"}`), 400, "variables.AWS_REGION is reserved"},
		{"a plain value of 4,097 characters", "POST", variable("V", `{"value":"`+long+`"}`), 400, "variables.V is a value of at most 4096 characters"},
		{"an empty secret", "POST", variable("S", `{"value":"","secret":true}`), 400, "variables.S is a secret value of 1 to 4096 bytes"},
		{"a secret of 4,097 bytes", "POST", variable("S", `{"value":"`+longSecret+`","secret":true}`), 400, "variables.S is a secret value of 1 to 4096 bytes"},
		{"a plain value with a credential", "POST", variable("GH_TOKEN", `{"value":"`+credential+`"}`), 400, "variables.GH_TOKEN holds what looks like a credential in a plain value; mark it secret"},
		{"a variable without its value", "POST", variable("V", `{"secret":false}`), 400, "variables.V needs its value"},
		{"a value as a number", "POST", variable("V", `{"value":1}`), 400, "variables.V.value must be a string"},
		{"secret as a string", "POST", variable("V", `{"value":"v","secret":"yes"}`), 400, "variables.V.secret must be true or false"},
		{"an unknown member of a variable", "POST", variable("V", `{"value":"v","note":"x"}`), 400, "variables.V.note is not a known member"},
		{"21 setup commands", "POST", commands(21, "make"), 400, "setupCommands holds at most 20 commands"},
		{"an empty setup command", "POST", commands(1, ""), 400, "setupCommands[0] must be 1 to 500 characters"},
		{"a setup command of 501", "POST", commands(1, strings.Repeat("c", 501)), 400, "setupCommands[0] must be 1 to 500 characters"},
		{"a setup command with a credential", "POST", commands(2, "echo "+credential), 400, "setupCommands[0] holds what looks like a credential"},
		{"a stored form over 200,000 bytes", "POST", vars(49, strings.Repeat("v", 4096)), 400, "the environment is 200"},
		{"an unknown member", "POST", `{"name":"U","operationKey":"k"}`, 400, "operationKey is not a known member"},
		{"a name null, patched", "PATCH", `{"name":null}`, 400, "name may not be removed"},
		{"a secret made plain without its value, patched", "PATCH", `{"variables":{"TOKEN":{"secret":false}}}`, 400, "variables.TOKEN needs its value to stop being secret"},
		{"a new variable without its value, patched", "PATCH", `{"variables":{"NEW":{"value":null}}}`, 400, "variables.NEW needs its value"},
		{"orgId, patched", "PATCH", `{"orgId":"o1"}`, 400, "orgId is not a known member"},
		{"default null, patched", "PATCH", `{"default":null}`, 400, "default must be true or false"},
		{"a name of 100", "POST", `{"name":"` + strings.Repeat("n", 100) + `"}`, 201, `"version":1`},
		{"a plain value of 4,096 characters", "POST", variable("V", `{"value":"`+strings.Repeat("é", 4096)+`"}`), 201, `"V":{"value":"é`},
		{"a secret with a credential", "POST", `{"name":"Secrets","variables":{"GH_TOKEN":{"value":"` + credential + `","secret":true}}}`, 201, `"GH_TOKEN":{"value":null,"secret":true}`},
		{"a secret sent back as shown, patched", "PATCH", `{"variables":{"TOKEN":{"value":null,"secret":true}}}`, 200, `"version":1`},
		{"a plain one's flag unchanged, patched", "PATCH", `{"variables":{"PLAIN":{"secret":false}}}`, 200, `"version":1`},
	}
	b.checkBodies(t, "/v1/environments", "/v1/environments/"+env.EnvironmentID, rows)
	t.Run("a patch of another Content-Type", func(t *testing.T) {
		for _, ct := range []string{"text/plain", "application/x-www-form-urlencoded"} {
			before := b.items(t)
			a := b.raw(t, "PATCH", "/v1/environments/"+env.EnvironmentID, []string{bearer(biUser), "Content-Type: " + ct}, `{"name":"Typed"}`)
			if a.status != 400 || !strings.Contains(a.body, "Content-Type must be application/merge-patch+json or application/json.") {
				t.Errorf("%s: %d %s", ct, a.status, a.body)
			}
			if !slices.Equal(before, b.items(t)) {
				t.Errorf("%s: the table changed", ct)
			}
		}
	})
}
