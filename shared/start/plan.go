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

// NewPlan decides the start of cmd by the policy at now: the shared kind
// unless the request names one, checks 3 to 6 (Policy.Place), and, with
// an operation key, the request's fingerprint.
func NewPlan(cmd Command, policy *allocation.Policy, now time.Time) (*Plan, error) {
	req := cmd.Request
	kind := req.Kind
	if kind == "" {
		kind = allocation.KindIsolated
	}
	p := &Plan{Command: cmd, Claim: ledger.Claim{
		UserID: cmd.UserID, OrgID: req.OrgID, BotID: cmd.BotID, Policy: policy, Now: now, AnyRequest: cmd.AnyRequest,
	}}
	p.Placement, p.Refusal = policy.Place(kind, cmd.Allocation, allocation.Owner(cmd.UserID, req.OrgID))
	if req.OperationKey == "" {
		return p, nil
	}
	fp, err := Fingerprint(req, cmd.Allocation)
	p.Claim.Fingerprint = fp
	return p, err
}

// Session is the session the plan writes, with the id given.
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
	}
}
