package ledger

import (
	"strings"
	"testing"

	"github.com/cloud-agent/control-plane/shared/allocation"
	"github.com/cloud-agent/control-plane/shared/problem"
	"github.com/cloud-agent/control-plane/shared/session"
)

// TestLedgerRetirement is ledger rules 2 and 3, which the start and the
// audit share, and what a row records as shared: only what it records
// counts, never an allocation derived from its sandbox id.
func TestLedgerRetirement(t *testing.T) {
	legacyShared := "usr-" + strings.Repeat("a", 48)
	rows := []struct {
		rule   string
		cfg    allocation.Config
		row    Row
		shared bool
		code   problem.Code // "" when neither rule refuses it
	}{
		{"current row", allocation.Config{}, Row{SandboxKind: "isolated", SandboxProvider: "vercel", SandboxAllocation: "vercel-small"}, false, ""},
		{"rule 2: shared kind", allocation.Config{}, Row{SandboxKind: "shared", SandboxProvider: "cloudflare-containers"}, true, problem.SandboxAllocationRetired},
		{"rule 2: cloudflare-shared recorded", allocation.Config{}, Row{SandboxAllocation: "cloudflare-shared", SandboxProvider: "cloudflare-containers"}, true, problem.SandboxAllocationRetired},
		{"rule 2: retired by the settings", allocation.Config{RetiredAllocations: []string{"vercel-small"}}, Row{SandboxAllocation: "vercel-small"}, false, problem.SandboxAllocationRetired},
		{"rule 3: provider recorded retired", allocation.Config{}, Row{SandboxProvider: "cloudflare"}, false, problem.SandboxRuntimeRetired},
		{"rule 3: legacy shared id, a shared route", allocation.Config{}, Row{SandboxID: legacyShared, Route: &session.Route{Kind: "shared", RouteKey: legacyShared}}, true, problem.SandboxRuntimeRetired},
		{"rule 3: provider retired by the settings", allocation.Config{RetiredProviders: []string{"vercel"}}, Row{SandboxAllocation: "vercel-large"}, false, problem.SandboxRuntimeRetired},
		{"unknown provider: neither", allocation.Config{}, Row{SandboxID: "sbx-" + strings.Repeat("b", 48)}, false, ""},
	}
	for _, r := range rows {
		t.Run(r.rule, func(t *testing.T) {
			p, _ := allocation.NewPolicy(r.cfg)
			if got := r.row.RecordsShared(); got != r.shared {
				t.Errorf("RecordsShared %t, want %t", got, r.shared)
			}
			if err := r.row.Retirement(p); (err == nil) != (r.code == "") || err != nil && problem.CodeOf(err) != r.code {
				t.Errorf("Retirement %v, want %q", err, r.code)
			}
		})
	}
}
