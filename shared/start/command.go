package start

import (
	"github.com/cloud-agent/control-plane/shared/allocation"
	"github.com/cloud-agent/control-plane/shared/environment"
)

// Command is a start with its caller: the user it is for, the bot it acts
// as, the validated request and its allocation (zero when none was given),
// which has passed checks 1 and 2.
type Command struct {
	UserID     string
	BotID      string
	Request    *Request
	Allocation allocation.Allocation
	// Policy, when set, is the policy the start judges by (the firing
	// judges every trigger of an invocation by one); nil reads the
	// settings.
	Policy *allocation.Policy
	// AnyRequest: the key's ledger row answers whatever the request
	// (ledger.Claim.AnyRequest), as a webhook delivery's key asks.
	AnyRequest bool
	// Delivery: a webhook delivery's start, which takes no default
	// environment.
	Delivery bool
	// Resolved says that the environment is resolved (InEnvironment); the
	// executor resolves it otherwise.
	Resolved bool
	// Environment is the environment the start runs in, nil for none, or
	// EnvironmentRefusal the refusal of a named one the user does not own,
	// which is judged only when a session is created.
	Environment        *environment.Environment
	EnvironmentRefusal error
	// Preferred is the environment's saved allocation as the policy chose
	// it: zero for none, or one that fell back to the effective default.
	// An explicit Allocation goes first.
	Preferred allocation.Allocation
}

// Source is where the command's environment is resolved from.
func (cmd Command) Source() environment.Source {
	return environment.Source{UserID: cmd.UserID, OrgID: cmd.Request.OrgID, Named: cmd.Request.EnvironmentID, Delivery: cmd.Delivery}
}

// InEnvironment is cmd resolved in what found holds
// (environment.Found.Resolve), and the policy's choice of the
// environment's saved allocation: without an explicit allocation, and for
// a kind that takes one (not code-review), a saved value (Policy.Resolve:
// unknown, retired, on a retired provider or failing checks 5 and 6, it
// falls back to the effective default, never an error).
func (cmd Command) InEnvironment(found *environment.Found, policy *allocation.Policy) (Command, allocation.Choice) {
	cmd.Resolved = true
	cmd.Environment, cmd.EnvironmentRefusal = found.Resolve(cmd.Source())
	e := cmd.Environment
	if e == nil || !cmd.Allocation.IsZero() || cmd.Request.Kind == allocation.KindCodeReview {
		return cmd, allocation.Choice{}
	}
	choice, _ := policy.Resolve(e.SavedAllocation, e.SavedRequest, allocation.Owner(cmd.UserID, cmd.Request.OrgID))
	cmd.Preferred = choice.Start
	return cmd, choice
}
