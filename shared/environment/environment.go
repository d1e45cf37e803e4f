// Package environment holds environments (contract v7), pure: the presets
// that sessions and triggers run in, with variables (a secret one kept
// only as its KMS ciphertext), setup commands and a saved allocation; the
// rules of their content (Check), a PATCH's merge of variables
// (MergeVariables), and the environment a start runs in (Resolve).
package environment

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/cloud-agent/control-plane/shared/allocation"
	"github.com/cloud-agent/control-plane/shared/ids"
	"github.com/cloud-agent/control-plane/shared/problem"
)

// The contract's limits.
const (
	// MaxPerOwner is how many environments an owner keeps.
	MaxPerOwner    = 100
	maxName        = 100
	maxDescription = 500
	maxVariables   = 50
	// maxValue bounds a plain value in code points, a secret one in bytes
	// (what KMS Encrypt takes).
	maxValue        = 4096
	maxVariableName = 128
	maxStored       = 200_000
	maxCommands     = 20
	maxCommand      = 500
)

// reserved are the variable names the execution plane sets itself; any
// name that starts with AWS_ is reserved too.
var reserved = []string{"HOME", "PATH", "SESSION_ID", "SESSION_HOME"}

// Variable is one variable: a plain value, or a secret one, whose clear
// Value exists only on its way to KMS and is kept as Sealed, its
// ciphertext.
type Variable struct {
	Value  string
	Secret bool
	Sealed []byte
}

// Environment is an environment as stored.
type Environment struct {
	ID          string
	OwnerUserID string
	OrgID       string // "" for a user's own
	Name        string
	Description string // "" for none
	Variables   map[string]Variable
	// SetupCommands run, in order, before the session's first turn.
	SetupCommands []string
	// SavedAllocation is the saved name; SavedRequest the saved byoc
	// object; neither when none is saved.
	SavedAllocation      string
	SavedRequest         *allocation.Request
	CreatedAt, UpdatedAt time.Time
	Version              int
	// Triggers counts the triggers that name it: a delete needs none.
	Triggers int
}

// Owner is the owner whose environments e counts among (allocation.Owner):
// its org, or its user.
func (e *Environment) Owner() string { return allocation.Owner(e.OwnerUserID, e.OrgID) }

// OwnedBy reports whether a start of user, in org ("" for none), may run
// in e: e is the user's own, or the org's.
func (e *Environment) OwnedBy(userID, orgID string) bool {
	if e.OrgID == "" {
		return e.OwnerUserID == userID
	}
	return e.OrgID == orgID
}

// Check holds e's content to the contract's rules, in the order of its
// members: the first failure is invalid_request naming the member (a
// variable, or a setup command's index), and no detail quotes a value. A
// secret's size counts as its ciphertext once sealed, as its value before.
func (e *Environment) Check() error {
	var m problem.Members
	checkText(&m, "name", e.Name, 1, maxName)
	switch {
	case strings.IndexFunc(e.Name, unicode.IsControl) >= 0:
		m.Fail("name", "may not hold control characters")
	case e.Name != strings.TrimSpace(e.Name):
		m.Fail("name", "may not start or end with white space")
	}
	checkText(&m, "description", e.Description, 0, maxDescription)
	checkVariables(&m, e.Variables)
	if len(e.SetupCommands) > maxCommands {
		m.Fail("setupCommands", fmt.Sprintf("holds at most %d commands", maxCommands))
	}
	for i, c := range e.SetupCommands {
		checkText(&m, fmt.Sprintf("setupCommands[%d]", i), c, 1, maxCommand)
	}
	if n := e.StoredSize(); n > maxStored {
		m.Fail("the environment", fmt.Sprintf("is %d bytes as stored (names, values, ciphertexts, commands), over %d", n, maxStored))
	}
	return m.Err()
}

// checkText holds a text member to min to max code points and no
// credential. Only the name must be one line: a description or a setup
// command may hold line breaks.
func checkText(m *problem.Members, name, s string, min, max int) {
	switch n := utf8.RuneCountInString(s); {
	case n > max && min == 0:
		m.Fail(name, fmt.Sprintf("must be at most %d characters", max))
	case n < min || n > max:
		m.Fail(name, fmt.Sprintf("must be %d to %d characters", min, max))
	case ids.HasCredential(s):
		m.Fail(name, "holds what looks like a credential; keep credentials in secret variables")
	}
}

// checkVariables holds the variables to their rules, by name.
func checkVariables(m *problem.Members, vars map[string]Variable) {
	if len(vars) > maxVariables {
		m.Fail("variables", fmt.Sprintf("holds at most %d variables", maxVariables))
	}
	for _, name := range slices.Sorted(maps.Keys(vars)) {
		v, member := vars[name], "variables."+name
		switch {
		case !validName(name):
			m.Fail("a variable's name", "must match ^[A-Za-z_][A-Za-z0-9_]{0,127}$")
		case slices.Contains(reserved, name) || strings.HasPrefix(name, "AWS_"):
			m.Fail(member, "is reserved: HOME, PATH, SESSION_ID, SESSION_HOME and AWS_* are set by the execution plane")
		case v.Secret && v.Sealed == nil && (v.Value == "" || len(v.Value) > maxValue):
			m.Fail(member, fmt.Sprintf("is a secret value of 1 to %d bytes", maxValue))
		case !v.Secret && utf8.RuneCountInString(v.Value) > maxValue:
			m.Fail(member, fmt.Sprintf("is a value of at most %d characters", maxValue))
		case !v.Secret && ids.HasCredential(v.Value):
			m.Fail(member, "holds what looks like a credential in a plain value; mark it secret")
		}
	}
}

// validName: ^[A-Za-z_][A-Za-z0-9_]{0,127}$.
func validName(s string) bool {
	return ids.OfChars(s, maxVariableName, "_") && !('0' <= s[0] && s[0] <= '9')
}

// StoredSize is the bytes of e's stored form that the contract bounds:
// its variables' names, plain values and ciphertexts (a secret's value
// while it is not sealed), and its setup commands.
func (e *Environment) StoredSize() int {
	n := 0
	for name, v := range e.Variables {
		value := len(v.Value)
		if v.Sealed != nil {
			value = len(v.Sealed)
		}
		n += len(name) + value
	}
	for _, c := range e.SetupCommands {
		n += len(c)
	}
	return n
}

// FoldName is name as an owner's names are compared, without regard to
// case: each character as the smallest of its simple case folding's
// orbit (strings.EqualFold's rule), so that two names are equal without
// regard to case exactly when their FoldNames are equal.
func FoldName(name string) string {
	return strings.Map(func(r rune) rune {
		least := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			least = min(least, f)
		}
		return least
	}, name)
}
