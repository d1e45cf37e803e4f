package environment

import (
	"errors"
	"fmt"
	"maps"
	"strings"
	"testing"

	"github.com/cloud-agent/control-plane/shared/problem"
)

// valid is an environment that passes every rule.
func valid() *Environment {
	return &Environment{
		ID: "env_1", OwnerUserID: "u1", Name: "Node", Description: "CI-like",
		Variables: map[string]Variable{
			"NODE_ENV":  {Value: "production"},
			"NPM_TOKEN": {Value: "npm_secret", Secret: true},
		},
		SetupCommands: []string{"npm ci"},
	}
}

// TestCheck: each rule of an environment's content, by its member; the
// detail names the member and never quotes a value.
func TestCheck(t *testing.T) {
	many := func(n int) map[string]Variable {
		vars := map[string]Variable{}
		for i := range n {
			vars["V"+strings.Repeat("_", i)] = Variable{Value: "x"}
		}
		return vars
	}
	rows := []struct {
		rule   string
		change func(e *Environment)
		member string // "" when valid
	}{
		{"a valid environment", func(*Environment) {}, ""},
		{"a name of 100 code points", func(e *Environment) { e.Name = strings.Repeat("é", 100) }, ""},
		{"an empty name", func(e *Environment) { e.Name = "" }, "name"},
		{"a name of 101 code points", func(e *Environment) { e.Name = strings.Repeat("é", 101) }, "name"},
		{"a name with a control character", func(e *Environment) { e.Name = "a\tb" }, "name"},
		{"a name with leading white space", func(e *Environment) { e.Name = " a" }, "name"},
		{"a name with trailing white space", func(e *Environment) { e.Name = "a " }, "name"},
		{"a name holding a credential", func(e *Environment) { e.Name = "ghp_abc" }, "name"},
		{"a description of 500 code points", func(e *Environment) { e.Description = strings.Repeat("é", 500) }, ""},
		{"a description of 501", func(e *Environment) { e.Description = strings.Repeat("é", 501) }, "description"},
		{"a description of several lines", func(e *Environment) { e.Description = "Node 22\n\tand npm" }, ""},
		{"a setup command of several lines", func(e *Environment) { e.SetupCommands = []string{"npm ci &&\n\tnpm test"} }, ""},
		{"a description holding a credential", func(e *Environment) { e.Description = "see glpat-x" }, "description"},
		{"50 variables", func(e *Environment) { e.Variables = many(50) }, ""},
		{"51 variables", func(e *Environment) { e.Variables = many(51) }, "variables"},
		{"a name starting with a digit", func(e *Environment) { e.Variables = map[string]Variable{"1A": {Value: "x"}} }, "a variable's name"},
		{"a name with a dash", func(e *Environment) { e.Variables = map[string]Variable{"A-B": {Value: "x"}} }, "a variable's name"},
		{"a name of 128", func(e *Environment) { e.Variables = map[string]Variable{"_" + strings.Repeat("A", 127): {Value: "x"}} }, ""},
		{"a name of 129", func(e *Environment) { e.Variables = map[string]Variable{"_" + strings.Repeat("A", 128): {Value: "x"}} }, "a variable's name"},
		{"HOME is reserved", func(e *Environment) { e.Variables = map[string]Variable{"HOME": {Value: "x"}} }, "variables.HOME"},
		{"PATH is reserved", func(e *Environment) { e.Variables = map[string]Variable{"PATH": {Value: "x"}} }, "variables.PATH"},
		{"SESSION_ID is reserved", func(e *Environment) { e.Variables = map[string]Variable{"SESSION_ID": {Value: "x"}} }, "variables.SESSION_ID"},
		{"SESSION_HOME is reserved", func(e *Environment) { e.Variables = map[string]Variable{"SESSION_HOME": {Value: "x"}} }, "variables.SESSION_HOME"},
		{"AWS_ names are reserved", func(e *Environment) { e.Variables = map[string]Variable{"AWS_REGION": {Value: "x"}} }, "variables.AWS_REGION"},
		{"a name that only holds AWS", func(e *Environment) { e.Variables = map[string]Variable{"MY_AWS_REGION": {Value: "x"}} }, ""},
		{"a plain value of 4096 code points", func(e *Environment) { e.Variables["NODE_ENV"] = Variable{Value: strings.Repeat("é", 4096)} }, ""},
		{"a plain value of 4097", func(e *Environment) { e.Variables["NODE_ENV"] = Variable{Value: strings.Repeat("é", 4097)} }, "variables.NODE_ENV"},
		{"an empty plain value", func(e *Environment) { e.Variables["NODE_ENV"] = Variable{} }, ""},
		{"a credential in a plain value", func(e *Environment) { e.Variables["NODE_ENV"] = Variable{Value: "ghp_123"} }, "variables.NODE_ENV"},
		{"a credential in a secret value", func(e *Environment) { e.Variables["NODE_ENV"] = Variable{Value: "ghp_123", Secret: true} }, ""},
		{"an empty secret", func(e *Environment) { e.Variables["NPM_TOKEN"] = Variable{Secret: true} }, "variables.NPM_TOKEN"},
		{"a secret of 4096 bytes", func(e *Environment) {
			e.Variables["NPM_TOKEN"] = Variable{Value: strings.Repeat("a", 4096), Secret: true}
		}, ""},
		{"a secret of 4097 bytes", func(e *Environment) {
			e.Variables["NPM_TOKEN"] = Variable{Value: strings.Repeat("a", 4095) + "é", Secret: true}
		}, "variables.NPM_TOKEN"},
		{"a sealed secret", func(e *Environment) { e.Variables["NPM_TOKEN"] = Variable{Secret: true, Sealed: []byte{1, 2}} }, ""},
		{"20 setup commands", func(e *Environment) { e.SetupCommands = make([]string, 20); fill(e.SetupCommands) }, ""},
		{"21 setup commands", func(e *Environment) { e.SetupCommands = make([]string, 21); fill(e.SetupCommands) }, "setupCommands"},
		{"an empty setup command", func(e *Environment) { e.SetupCommands = []string{"npm ci", ""} }, "setupCommands[1]"},
		{"a command of 500 code points", func(e *Environment) { e.SetupCommands = []string{strings.Repeat("é", 500)} }, ""},
		{"a command of 501", func(e *Environment) { e.SetupCommands = []string{strings.Repeat("é", 501)} }, "setupCommands[0]"},
		{"a credential in a command", func(e *Environment) { e.SetupCommands = []string{"npm ci", "export T=github_pat_1"} }, "setupCommands[1]"},
		{"a stored form of 200,000 bytes", func(e *Environment) { e.Variables, e.SetupCommands = sized(200_000), nil }, ""},
		{"a stored form of 200,001 bytes", func(e *Environment) { e.Variables, e.SetupCommands = sized(200_001), nil }, "the environment"},
	}
	for _, r := range rows {
		t.Run(r.rule, func(t *testing.T) {
			e := valid()
			e.Variables = maps.Clone(e.Variables)
			r.change(e)
			err := e.Check()
			if r.member == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var pe *problem.Error
			if !errors.As(err, &pe) || pe.Code != problem.InvalidRequest || !strings.HasPrefix(pe.Detail, r.member+" ") {
				t.Fatalf("%v, want invalid_request naming %s", err, r.member)
			}
			for _, v := range e.Variables {
				if len(v.Value) > 3 && strings.Contains(pe.Detail, v.Value) {
					t.Errorf("the detail quotes a value: %s", pe.Detail)
				}
			}
		})
	}
}

func fill(cmds []string) {
	for i := range cmds {
		cmds[i] = "make"
	}
}

// sized is variables whose stored form is n bytes: names and values.
func sized(n int) map[string]Variable {
	vars := map[string]Variable{}
	for i := 0; n > 0; i++ {
		name := "V" + strings.Repeat("_", i%100) + string(rune('A'+i/100))
		size := min(n-len(name), 4096)
		vars[name] = Variable{Value: strings.Repeat("a", size)}
		n -= len(name) + size
	}
	return vars
}

// TestStoredSize: names, plain values, ciphertexts (a secret's value until
// it is sealed) and setup commands count; the name and description do
// not.
func TestStoredSize(t *testing.T) {
	e := &Environment{Name: "long name", Description: "long description",
		Variables:     map[string]Variable{"AB": {Value: "xyz"}, "S": {Secret: true, Sealed: make([]byte, 10)}, "T": {Value: "clear", Secret: true}},
		SetupCommands: []string{"npm ci"}}
	if got, want := e.StoredSize(), 2+3+1+10+1+5+6; got != want {
		t.Errorf("%d, want %d", got, want)
	}
}

// TestMergeVariables: a PATCH's variables, member by member.
func TestMergeVariables(t *testing.T) {
	str := func(s string) *string { return &s }
	yes, no := true, false
	old := map[string]Variable{"PLAIN": {Value: "p"}, "SECRET": {Secret: true, Sealed: []byte{9}}}
	rows := []struct {
		rule   string
		patch  map[string]*Patch
		want   map[string]Variable
		member string
	}{
		{"nothing changes nothing", map[string]*Patch{}, old, ""},
		{"null removes", map[string]*Patch{"PLAIN": nil}, map[string]Variable{"SECRET": old["SECRET"]}, ""},
		{"null on an absent variable", map[string]*Patch{"GONE": nil}, old, ""},
		{"a value replaces a plain one", map[string]*Patch{"PLAIN": {Value: str("q")}},
			map[string]Variable{"PLAIN": {Value: "q"}, "SECRET": old["SECRET"]}, ""},
		{"a value replaces a secret one, still secret", map[string]*Patch{"SECRET": {Value: str("new")}},
			map[string]Variable{"PLAIN": old["PLAIN"], "SECRET": {Value: "new", Secret: true}}, ""},
		{"what a GET answered keeps a secret", map[string]*Patch{"SECRET": {Secret: &yes}}, old, ""},
		{"no value keeps a secret", map[string]*Patch{"SECRET": {}}, old, ""},
		{"a value made secret", map[string]*Patch{"PLAIN": {Value: str("p"), Secret: &yes}},
			map[string]Variable{"PLAIN": {Value: "p", Secret: true}, "SECRET": old["SECRET"]}, ""},
		{"a secret made plain with its value", map[string]*Patch{"SECRET": {Value: str("s"), Secret: &no}},
			map[string]Variable{"PLAIN": old["PLAIN"], "SECRET": {Value: "s"}}, ""},
		{"a new variable", map[string]*Patch{"NEW": {Value: str("n"), Secret: &yes}},
			map[string]Variable{"PLAIN": old["PLAIN"], "SECRET": old["SECRET"], "NEW": {Value: "n", Secret: true}}, ""},
		{"a secret made plain without its value", map[string]*Patch{"SECRET": {Secret: &no}}, nil, "variables.SECRET"},
		{"a plain one made secret without its value", map[string]*Patch{"PLAIN": {Secret: &yes}}, nil, "variables.PLAIN"},
		{"a plain one without its value, as it is", map[string]*Patch{"PLAIN": {}}, old, ""},
		{"a plain one without its value, still plain", map[string]*Patch{"PLAIN": {Secret: &no}}, old, ""},
		{"a new one without its value", map[string]*Patch{"NEW": {Secret: &yes}}, nil, "variables.NEW"},
	}
	for _, r := range rows {
		t.Run(r.rule, func(t *testing.T) {
			before := maps.Clone(old)
			got, err := MergeVariables(old, r.patch)
			if !maps.EqualFunc(old, before, equal) {
				t.Fatal("the old variables changed")
			}
			if r.member != "" {
				if pe, ok := errors.AsType[*problem.Error](err); !ok || pe.Code != problem.InvalidRequest || !strings.HasPrefix(pe.Detail, r.member+" ") {
					t.Fatalf("%v, want invalid_request naming %s", err, r.member)
				}
				return
			}
			if err != nil || !maps.EqualFunc(got, r.want, equal) {
				t.Errorf("%v %v, want %v", got, err, r.want)
			}
		})
	}
}

func equal(a, b Variable) bool {
	return a.Value == b.Value && a.Secret == b.Secret && string(a.Sealed) == string(b.Sealed)
}

// TestResolve: the environment a start runs in, in the contract's order,
// from what one read found; what a start needs read.
func TestResolve(t *testing.T) {
	own := &Environment{ID: "env_own", OwnerUserID: "u1"}
	orgs := &Environment{ID: "env_org", OwnerUserID: "u2", OrgID: "o1"}
	others := &Environment{ID: "env_other", OwnerUserID: "u2"}
	userDefault := &Environment{ID: "env_ud", OwnerUserID: "u1"}
	orgDefault := &Environment{ID: "env_od", OwnerUserID: "u2", OrgID: "o1"}
	found := &Found{
		ByID:     map[string]*Environment{"env_own": own, "env_org": orgs, "env_other": others},
		Defaults: map[Owner]*Environment{userDefault.DefaultOwner(): userDefault, orgDefault.DefaultOwner(): orgDefault},
	}
	onlyOrg := &Found{Defaults: map[Owner]*Environment{orgDefault.DefaultOwner(): orgDefault}}
	rows := []struct {
		rule  string
		found *Found
		s     Source
		want  *Environment
		err   error
	}{
		{"the named one, the user's own", found, Source{UserID: "u1", Named: "env_own"}, own, nil},
		{"the named one, the session's org's", found, Source{UserID: "u1", OrgID: "o1", Named: "env_org"}, orgs, nil},
		{"an org's, without the org", found, Source{UserID: "u1", Named: "env_org"}, nil, ErrNotFound},
		{"an org's, in another org", found, Source{UserID: "u1", OrgID: "o2", Named: "env_org"}, nil, ErrNotFound},
		{"another user's", found, Source{UserID: "u1", Named: "env_other"}, nil, ErrNotFound},
		{"the user's own, started in an org", found, Source{UserID: "u1", OrgID: "o1", Named: "env_own"}, own, nil},
		{"none found", found, Source{UserID: "u1", Named: "env_gone"}, nil, ErrNotFound},
		{"nothing read", nil, Source{UserID: "u1", Named: "env_own"}, nil, ErrNotFound},
		{"a delivery's named one", found, Source{UserID: "u1", Named: "env_own", Delivery: true}, own, nil},
		{"the user's default", found, Source{UserID: "u1", OrgID: "o1"}, userDefault, nil},
		{"the org's default", onlyOrg, Source{UserID: "u1", OrgID: "o1"}, orgDefault, nil},
		{"no org, no org default", onlyOrg, Source{UserID: "u1"}, nil, nil},
		{"another user's default", found, Source{UserID: "u2"}, nil, nil},
		{"no default", nil, Source{UserID: "u1", OrgID: "o1"}, nil, nil},
		{"a delivery takes no default", found, Source{UserID: "u1", OrgID: "o1", Delivery: true}, nil, nil},
	}
	for _, r := range rows {
		got, err := r.found.Resolve(r.s)
		if got != r.want || err != r.err {
			t.Errorf("%s: %v %v, want %v %v", r.rule, got, err, r.want, r.err)
		}
	}
	for _, r := range []struct {
		s        Source
		named    string
		defaults []Owner
	}{
		{Source{UserID: "u1", OrgID: "o1", Named: "env_a"}, "env_a", nil},
		{Source{UserID: "u1", OrgID: "o1"}, "", []Owner{{UserID: "u1"}, {OrgID: "o1"}}},
		{Source{UserID: "u1"}, "", []Owner{{UserID: "u1"}}},
		{Source{UserID: "u1", OrgID: "o1", Delivery: true}, "", nil},
	} {
		if named, defaults := r.s.Reads(); named != r.named || fmt.Sprint(defaults) != fmt.Sprint(r.defaults) {
			t.Errorf("%+v reads %q %v, want %q %v", r.s, named, defaults, r.named, r.defaults)
		}
	}
	if ErrNotFound.Code.Status() != 422 {
		t.Errorf("environment_not_found is %d", ErrNotFound.Code.Status())
	}
}

// TestCovers: a read covers the sources it was made for, found or not,
// and no other.
func TestCovers(t *testing.T) {
	var f Found
	read := Source{UserID: "u1", OrgID: "o1", Named: "env_a"}
	f.Reading(read)
	if !f.Covers(read) || f.Covers(Source{UserID: "u1", OrgID: "o1"}) || f.Covers(Source{UserID: "u1", OrgID: "o1", Named: "env_b"}) {
		t.Error("covers what it did not read, or not what it read")
	}
	var none *Found
	if none.Covers(read) {
		t.Error("nothing read covers a start")
	}
}
