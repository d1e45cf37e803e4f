package start

import "github.com/cloud-agent/control-plane/shared/allocation"

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
}
