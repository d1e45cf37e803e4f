package start

import (
	"context"

	"github.com/cloud-agent/control-plane/shared/invocation"
	"github.com/cloud-agent/control-plane/shared/ledger"
	"github.com/cloud-agent/control-plane/shared/session"
)

// Response is the body of a start: the session, whether it was replayed,
// its sandbox and its environment as the lookup shows them.
type Response struct {
	SessionID   string                  `json:"sessionId"`
	Replayed    bool                    `json:"replayed"`
	Sandbox     session.SandboxView     `json:"sandbox"`
	Environment *session.EnvironmentRef `json:"environment"`
}

// ResponseOf is the body of a start that obtained rec, replayed or not.
func ResponseOf(rec *session.Record, replayed bool) Response {
	return Response{SessionID: rec.SessionID, Replayed: replayed, Sandbox: rec.SandboxView(), Environment: rec.Environment}
}

// The metrics of a start that obtained its session (POST /v1/sessions, a
// trigger's start now), by the dimensions Provider and Allocation of the
// session's sandbox.
const (
	// Starts counts a new session (201).
	Starts = "Starts"
	// Replays counts a replayed one (200).
	Replays = "Replays"
	// DimProvider is the sandbox's provider.
	DimProvider = "Provider"
	// DimAllocation is its allocation: the name, vercel/byoc/<instanceType>
	// for a byoc object, NoAllocation when it has none (code-review).
	DimAllocation = "Allocation"
	// NoAllocation is the Allocation of a session that has none.
	NoAllocation = "none"
)

// Count counts the session a start obtained: Starts for a new one,
// Replays for a replayed one, by its sandbox's provider and allocation.
func Count(ctx context.Context, out ledger.Outcome) {
	metric := Starts
	if out.Kind == ledger.Replayed {
		metric = Replays
	}
	invocation.Add(ctx, invocation.Count(metric, 1, sandboxDimensions(out.Record)...))
}

// sandboxDimensions are the Provider and Allocation of a session's sandbox.
func sandboxDimensions(rec *session.Record) []invocation.Dimension {
	a := NoAllocation
	if alloc := rec.Allocation(); !alloc.IsZero() {
		a = alloc.String()
	}
	return []invocation.Dimension{{Name: DimProvider, Value: string(rec.Sandbox.Provider)}, {Name: DimAllocation, Value: a}}
}
