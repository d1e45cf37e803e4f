package allocation

import (
	"testing"

	"github.com/cloud-agent/control-plane/infra/local/testkit"
	"github.com/cloud-agent/control-plane/shared/problem"
)

// TestRetirement: the one decision on a sandbox's retirement, and every
// wording each asker is given: a new start (checks 3 and 4, the
// allocation first), a key's ledger row (rules 2 and 3, the allocation
// first) and a stored session (its runtime, the provider first).
func TestRetirement(t *testing.T) {
	const (
		startAllocation = "The vercel-small sandbox allocation is retired: one sandbox now serves one workspace. " +
			"Start the session without an allocation to use the default, or choose another allocation."
		startShared = "The cloudflare-shared sandbox allocation is retired: one sandbox now serves one workspace. " +
			"Start the session without an allocation to use the default, or choose another allocation."
		startRuntime = "The cloudflare-single allocation runs on the retired Cloudflare Sandbox runtime and cannot start new sessions. " +
			"Start the session without an allocation to use the default, or choose another allocation."
		startVercelRuntime = "The vercel-small allocation runs on the retired Vercel Sandbox runtime and cannot start new sessions. " +
			"Start the session without an allocation to use the default, or choose another allocation."
		keyRuntime = "The operation key's session runs on the retired Cloudflare Sandbox runtime and cannot be started or resumed. " +
			"Start a new session with another operation key to use the default sandbox."
		keyVercelRuntime = "The operation key's session runs on the retired Vercel Sandbox runtime and cannot be started or resumed. " +
			"Start a new session with another operation key to use the default sandbox."
		sessionAllocation = "The vercel-small sandbox allocation is retired: this session cannot be started or resumed. " +
			"Start a new session with the default sandbox to continue."
		sessionRuntime = "This session ran on the retired Cloudflare Sandbox runtime and cannot be started or resumed. " +
			"Start a new session with the default sandbox to continue."
		sessionVercelRuntime = "This session ran on the retired Vercel Sandbox runtime and cannot be started or resumed. " +
			"Start a new session with the default sandbox to continue."
	)
	retiredSmall := Config{RetiredAllocations: []string{VercelSmall}}
	retiredBoth := Config{RetiredAllocations: []string{VercelSmall}, RetiredProviders: []string{"vercel"}}
	type answer struct {
		code   problem.Code
		detail string
	}
	none := answer{}
	for _, r := range []struct {
		rule                      string
		cfg                       Config
		alloc                     string
		prov                      Provider
		shared                    bool
		allocRetired, provRetired bool
		start, key, session       answer
	}{
		{"allocated", Config{}, ContainersStandard4, CloudflareContainers, false, false, false, none, none, none},
		{"no allocation, a live provider", Config{}, "", Vercel, false, false, false, none, none, none},
		{"no allocation, no provider", Config{}, "", "", false, false, false, none, none, none},
		{"retired allocation on a live provider", retiredSmall, VercelSmall, Vercel, false, true, false,
			answer{problem.SandboxAllocationRetired, startAllocation}, answer{problem.SandboxAllocationRetired, startAllocation},
			answer{problem.SandboxAllocationRetired, sessionAllocation}},
		{"the shared kind", Config{}, "", "", true, true, false,
			answer{problem.SandboxAllocationRetired, startShared}, answer{problem.SandboxAllocationRetired, startShared},
			answer{problem.SandboxAllocationRetired, "The cloudflare-shared sandbox allocation is retired: this session cannot be started or resumed. " +
				"Start a new session with the default sandbox to continue."}},
		{"retired provider", Config{}, CloudflareSingle, Cloudflare, false, false, true,
			answer{problem.SandboxRuntimeRetired, startRuntime}, answer{problem.SandboxRuntimeRetired, keyRuntime},
			answer{problem.SandboxRuntimeRetired, sessionRuntime}},
		{"both retired: the allocation first, but for a stored session", retiredBoth, VercelSmall, Vercel, false, true, true,
			answer{problem.SandboxAllocationRetired, startAllocation}, answer{problem.SandboxAllocationRetired, startAllocation},
			answer{problem.SandboxRuntimeRetired, sessionVercelRuntime}},
		{"the allocation's provider retired, another one given: the one given counts", Config{RetiredProviders: []string{"vercel"}}, VercelSmall, CloudflareContainers, false, false, false,
			none, none, none},
		{"the allocation's provider retired, none given", Config{RetiredProviders: []string{"vercel"}}, VercelSmall, "", false, false, true,
			answer{problem.SandboxRuntimeRetired, startVercelRuntime}, answer{problem.SandboxRuntimeRetired, keyVercelRuntime},
			answer{problem.SandboxRuntimeRetired, sessionVercelRuntime}},
		{"no allocation on a retired provider", Config{}, "", Cloudflare, false, false, true,
			answer{problem.SandboxRuntimeRetired, ""}, // a new start always names an allocation
			answer{problem.SandboxRuntimeRetired, keyRuntime}, answer{problem.SandboxRuntimeRetired, sessionRuntime}},
	} {
		t.Run(r.rule, func(t *testing.T) {
			p, _ := NewPolicy(r.cfg)
			var a Allocation
			if r.alloc != "" {
				a = named(t, r.alloc)
			}
			d := p.Retirement(a, r.prov, r.shared)
			if d.Allocation != r.allocRetired || d.Provider != r.provRetired || d.Retired() != (r.allocRetired || r.provRetired) {
				t.Errorf("decision %+v, want allocation %t, provider %t", d, r.allocRetired, r.provRetired)
			}
			for who, want := range map[Asker]answer{NewStart: r.start, KeyRow: r.key} {
				err := d.Err(who)
				var got answer
				if err != nil {
					got = answer{problem.CodeOf(err), err.(*problem.Error).Detail}
				}
				if want.detail == "" {
					got.detail = ""
				}
				if got != want {
					t.Errorf("asker %d: %+v, want %+v", who, got, want)
				}
			}
			rt := d.Runtime()
			switch {
			case r.session == none && (rt.State != StateAllocated || rt.Code != nil || rt.Message != nil):
				t.Errorf("runtime %s, want allocated", testkit.JSON(rt))
			case r.session != none && (rt.State != StateRetired || rt.Code == nil || *rt.Code != r.session.code || *rt.Message != r.session.detail):
				t.Errorf("runtime %s, want %+v", testkit.JSON(rt), r.session)
			}
		})
	}
	byoc, _ := FromRequest(Request{RequestProvider{Vercel, AccountBYOC}, "small"})
	p, _ := NewPolicy(retiredSmall)
	if d := p.Retirement(byoc, Vercel, false); d.Retired() {
		t.Errorf("a byoc sandbox is never on a retired allocation: %+v", d)
	}
}
