package start

import (
	"time"

	"github.com/cloud-agent/control-plane/shared/allocation"
	"github.com/cloud-agent/control-plane/shared/ledger"
	"github.com/cloud-agent/control-plane/shared/session"
)

// Plan is a start decided, before anything is read or written: the claim
// its key's ledger row is judged by, and the placement that checks 3 to 6
// gave it or their refusal.
type Plan struct {
	Command   Command
	Claim     ledger.Claim
	Placement allocation.Placement
	// Refusal is the placement's error: answered only when no ledger row
	// judges the start first.
	Refusal error
}

// NewPlan decides the start of cmd by the policy at now: a named
// environment the user does not own (cmd.EnvironmentRefusal), else the
// isolated kind unless the request names one and checks 3 to 6
// (Policy.Place) on the explicit allocation, else the environment's
// (cmd.Preferred), else the effective default; and, with an operation key,
// the request's fingerprint.
func NewPlan(cmd Command, policy *allocation.Policy, now time.Time) (*Plan, error) {
	req := cmd.Request
	kind := req.Kind
	if kind == "" {
		kind = allocation.KindIsolated
	}
	p := &Plan{Command: cmd, Claim: ledger.Claim{
		UserID: cmd.UserID, OrgID: req.OrgID, BotID: cmd.BotID, Policy: policy, Now: now, AnyRequest: cmd.AnyRequest,
	}}
	a := cmd.Allocation
	if a.IsZero() {
		a = cmd.Preferred
	}
	if p.Refusal = cmd.EnvironmentRefusal; p.Refusal == nil {
		p.Placement, p.Refusal = policy.Place(kind, a, allocation.Owner(cmd.UserID, req.OrgID))
	}
	if req.OperationKey == "" {
		return p, nil
	}
	fp, err := Fingerprint(req, cmd.Allocation)
	p.Claim.Fingerprint = fp
	return p, err
}

// Session is the session the plan writes, with the id given, and what it
// is launched with (its prompt, its environment as it is now).
func (p *Plan) Session(id string) *session.Record {
	cmd, pl, req := p.Command, p.Placement, p.Command.Request
	return &session.Record{
		SessionID: id, SchemaVersion: 2,
		UserID: cmd.UserID, OrgID: req.OrgID, BotID: cmd.BotID, CreatedOnPlatform: req.CreatedOnPlatform,
		Repository: req.Repository, Agent: req.Agent,
		CreatedAt: p.Claim.Now.UTC().Truncate(time.Millisecond),
		Sandbox: session.Sandbox{
			ID: allocation.SandboxID(id), Kind: pl.Kind, Provider: pl.Provider, ProviderStored: true, Allocation: pl.Allocation,
		},
		Environment: session.RefOf(cmd.Environment),
		Launch:      &session.Launch{Prompt: req.Prompt, Environment: cmd.Environment},
	}
}
