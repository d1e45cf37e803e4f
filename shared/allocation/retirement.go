package allocation

import (
	"fmt"

	"github.com/cloud-agent/control-plane/shared/problem"
)

// Retirement is the policy's one decision on whether a sandbox is retired:
// its allocation, its provider, or both. Each who asks (Asker) is answered
// from it with its own code and words (Err, Runtime).
type Retirement struct {
	// Allocation: the sandbox's allocation is retired, or it is of the
	// shared kind, whose allocation (cloudflare-shared) always is.
	Allocation bool
	// Provider: its provider is retired: the one given, else its
	// allocation's.
	Provider bool
	// allocation is the allocation the words name; provider the retired
	// provider they name.
	allocation Allocation
	provider   Provider
}

// Retirement decides on a sandbox on allocation a (zero when none) and
// provider prov ("" when unknown: then a's), shared when it is of the
// shared kind. A stored session's provider and allocation always agree
// (one that disagrees does not decode); a key's row is judged on the
// provider it records, as rule 3 says.
func (p *Policy) Retirement(a Allocation, prov Provider, shared bool) Retirement {
	r := Retirement{allocation: a, provider: prov}
	if r.Allocation = !a.IsZero() && p.AllocationRetired(a); !r.Allocation && shared {
		r.Allocation = true
		r.allocation, _ = ByName(CloudflareShared)
	}
	switch {
	case prov != "":
		r.Provider = p.retiredProviders[prov]
	case !a.IsZero():
		r.Provider, r.provider = p.retiredProviders[a.Provider()], a.Provider()
	}
	return r
}

// Retired reports whether the sandbox is retired at all.
func (r Retirement) Retired() bool { return r.Allocation || r.Provider }

// Asker is who asks whether a sandbox is retired.
type Asker int

const (
	// NewStart is checks 3 and 4 of an explicit allocation, and the shared
	// kind judged as check 3: the allocation first.
	NewStart Asker = iota
	// KeyRow is ledger rules 2 and 3, about the session an operation
	// key's row records: the allocation first.
	KeyRow
	// StoredSession is a stored session's runtime (the lookup): the
	// provider first.
	StoredSession
)

// Err is the refusal of a retired sandbox as who is told it, nil when it
// is not retired: sandbox_allocation_retired or sandbox_runtime_retired,
// in who's order, with who's words.
func (r Retirement) Err(who Asker) error {
	code, detail := r.answer(who)
	if code == "" {
		return nil
	}
	return problem.New(code, detail)
}

// Runtime is the state of a stored session's sandbox runtime.
type Runtime struct {
	State   string        `json:"state"`
	Code    *problem.Code `json:"code"`
	Message *string       `json:"message"`
}

// The runtime states.
const (
	StateAllocated = "allocated"
	StateRetired   = "retired"
)

// Runtime is the runtime of a stored session on the sandbox: retired, with
// the code and message a stored session is given (StoredSession), when
// its allocation or provider is retired.
func (r Retirement) Runtime() Runtime {
	code, msg := r.answer(StoredSession)
	if code == "" {
		return Runtime{State: StateAllocated}
	}
	return Runtime{State: StateRetired, Code: &code, Message: &msg}
}

// answer is the code and the words of the decision for who; no code when
// the sandbox is not retired.
func (r Retirement) answer(who Asker) (problem.Code, string) {
	allocationFirst := r.Allocation && (who != StoredSession || !r.Provider)
	switch {
	case allocationFirst && who == StoredSession:
		return problem.SandboxAllocationRetired, fmt.Sprintf("The %s sandbox allocation is retired: this session cannot be started or resumed. "+
			"Start a new session with the default sandbox to continue.", r.allocation)
	case allocationFirst:
		return problem.SandboxAllocationRetired, fmt.Sprintf("The %s sandbox allocation is retired: one sandbox now serves one workspace. "+
			"Start the session without an allocation to use the default, or choose another allocation.", r.allocation)
	case !r.Provider:
		return "", ""
	case who == NewStart:
		return problem.SandboxRuntimeRetired, fmt.Sprintf("The %s allocation runs on the retired %s runtime and cannot start new sessions. "+
			"Start the session without an allocation to use the default, or choose another allocation.", r.allocation, r.provider.DisplayName())
	case who == KeyRow:
		return problem.SandboxRuntimeRetired, fmt.Sprintf("The operation key's session runs on the retired %s runtime and cannot be started or resumed. "+
			"Start a new session with another operation key to use the default sandbox.", r.provider.DisplayName())
	}
	return problem.SandboxRuntimeRetired, fmt.Sprintf("This session ran on the retired %s runtime and cannot be started or resumed. "+
		"Start a new session with the default sandbox to continue.", r.provider.DisplayName())
}
