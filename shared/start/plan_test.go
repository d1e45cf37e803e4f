package start_test

import (
	"testing"
	"time"

	"github.com/cloud-agent/control-plane/shared/allocation"
	"github.com/cloud-agent/control-plane/shared/problem"
	"github.com/cloud-agent/control-plane/shared/start"
)

// TestNewPlan: a start is decided from values alone: its claim, its
// placement or checks 3 to 6's refusal, a fingerprint only with a key,
// and the session it writes.
func TestNewPlan(t *testing.T) {
	now := time.Date(2026, 12, 6, 9, 30, 0, 123456789, time.FixedZone("CET", 3600))
	small, _ := allocation.ByName(allocation.VercelSmall)
	single, _ := allocation.ByName(allocation.CloudflareSingle)
	for _, row := range []struct {
		rule    string
		body    map[string]any
		alloc   allocation.Allocation
		refusal problem.Code
		keyed   bool
	}{
		{"no allocation: the effective default, isolated", map[string]any{}, allocation.Allocation{}, "", false},
		{"an allocation, with a key", map[string]any{"operationKey": "k", "orgId": "org_1"}, small, "", true},
		{"a retired runtime: refused by check 3 to 6, still planned", map[string]any{"operationKey": "k"}, single, problem.SandboxRuntimeRetired, true},
	} {
		t.Run(row.rule, func(t *testing.T) {
			req, err := start.ParseRequest([]byte(body(row.body)), nil)
			if err != nil {
				t.Fatal(err)
			}
			cmd := start.Command{UserID: "u1", BotID: "b1", Request: req, Allocation: row.alloc, AnyRequest: true}
			p, err := start.NewPlan(cmd, allocation.DefaultPolicy(), now)
			if err != nil {
				t.Fatal(err)
			}
			c := p.Claim
			if c.UserID != "u1" || c.BotID != "b1" || c.OrgID != req.OrgID || !c.Now.Equal(now) || !c.AnyRequest || c.Policy == nil {
				t.Errorf("claim %+v", c)
			}
			if (c.Fingerprint != "") != row.keyed {
				t.Errorf("fingerprint %q with a key %t", c.Fingerprint, row.keyed)
			}
			if got := p.Refusal; (got == nil) != (row.refusal == "") || got != nil && problem.CodeOf(got) != row.refusal {
				t.Fatalf("refusal %v, want %q", p.Refusal, row.refusal)
			}
			if p.Refusal != nil {
				return
			}
			rec := p.Session("workspace_1")
			want := allocation.SandboxID("workspace_1")
			if rec.SessionID != "workspace_1" || rec.Sandbox.ID != want || rec.UserID != "u1" || rec.OrgID != req.OrgID || rec.BotID != "b1" ||
				rec.Sandbox.Kind != allocation.KindIsolated || !rec.Sandbox.ProviderStored || rec.Sandbox.Allocation != p.Placement.Allocation ||
				!rec.CreatedAt.Equal(now.Truncate(time.Millisecond)) || rec.CreatedAt.Location() != time.UTC {
				t.Errorf("session %+v", rec)
			}
			if !row.alloc.IsZero() && rec.Allocation().String() != row.alloc.String() {
				t.Errorf("allocation %s, want %s", rec.Allocation(), row.alloc)
			}
		})
	}
}
