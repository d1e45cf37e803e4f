package session

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/cloud-agent/control-plane/shared/allocation"
	"github.com/cloud-agent/control-plane/shared/problem"
)

// TestDecodeLedgerShapes decodes every ledger row fixture, in the shapes of
// the current and the older writers, and derives each row's provider as the
// ledger rules do: the recorded one, else the recorded allocation's, else
// cloudflare for an id of a legacy class, else unknown.
func TestDecodeLedgerShapes(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	rows := []struct {
		fixture  string
		status   string
		org      string
		kind     string
		provider string // "" is unknown
		alloc    string
		live     bool // lease live at now
		route    bool
	}{
		{"ledger-completed", StatusCompleted, "", "isolated", "cloudflare-containers", "cloudflare-containers-standard-4", false, false},
		{"ledger-code-review", StatusCompleted, "", "code-review", "vercel", "", false, false},
		{"ledger-in-progress-live", StatusInProgress, "", "", "", "", true, false},
		{"ledger-in-progress-lapsed", StatusInProgress, "", "", "", "", false, false},
		{"ledger-failed", StatusFailed, "", "", "vercel", "vercel-small", false, false},
		{"ledger-shared-kind", StatusCompleted, "", "shared", "", "", false, false},
		{"ledger-legacy-shared-id", StatusCompleted, "", "", "cloudflare", "", false, true},
		{"ledger-other-org", StatusCompleted, "org_b", "isolated", "vercel", "vercel-large", false, false},
	}
	for _, r := range rows {
		t.Run(r.fixture, func(t *testing.T) {
			l, err := DecodeLedger(fixture(t, r.fixture))
			if err != nil {
				t.Fatal(err)
			}
			p, ok := l.Provider()
			if string(p) != r.provider || ok != (r.provider != "") {
				t.Errorf("provider %q %v, want %q", p, ok, r.provider)
			}
			if l.Status != r.status || l.OrgID != r.org || l.SandboxKind != r.kind || l.SandboxAllocation != r.alloc ||
				l.LeaseUntil.After(now) != r.live || (l.Route != nil) != r.route || l.Intent != IntentCreateSession || l.UserID != "u1" ||
				!strings.HasPrefix(l.OperationKey, "k-") || l.SessionID == "" {
				t.Errorf("row %+v", l)
			}
			if l.ExpiresAt != time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC) || l.Expired(now) || !l.Expired(l.ExpiresAt) {
				t.Errorf("expiresAt %v", l.ExpiresAt)
			}
		})
	}
	_, err := DecodeLedger(fixture(t, "invalid-ledger-lease-type"))
	var ie *InvalidLedgerError
	if !errors.As(err, &ie) {
		t.Errorf("err = %v", err)
	}
}

// TestLedgerRoundTrip: the current writer's row decodes to itself; the
// operation key may contain '#'-free characters of its alphabet.
func TestLedgerRoundTrip(t *testing.T) {
	in := &LedgerRow{
		UserID: "u1", OperationKey: "trigger:trg_1:2026-11-30T10:00:00Z", Intent: IntentCreateSession, OrgID: "o1",
		Fingerprint: "ab", Status: StatusCompleted, SessionID: "workspace_x", SandboxID: allocation.SandboxID("workspace_x"),
		SandboxKind: "isolated", SandboxProvider: "vercel", SandboxAllocation: "vercel-small",
		CreatedAt: "2026-11-30T10:00:00Z", ExpiresAt: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC),
	}
	out, err := DecodeLedger(EncodeLedger(in))
	if err != nil {
		t.Fatal(err)
	}
	if mustJSON(t, out) != mustJSON(t, in) {
		t.Errorf("got %+v", out)
	}
}

// TestLedgerRetirement is ledger rules 2 and 3, which the start and the
// audit share, and what a row records as shared: only what it records
// counts, never an allocation derived from its sandbox id.
func TestLedgerRetirement(t *testing.T) {
	legacyShared := "usr-" + strings.Repeat("a", 48)
	rows := []struct {
		rule   string
		cfg    allocation.Config
		row    LedgerRow
		shared bool
		code   problem.Code // "" when neither rule refuses it
	}{
		{"current row", allocation.Config{}, LedgerRow{SandboxKind: "isolated", SandboxProvider: "vercel", SandboxAllocation: "vercel-small"}, false, ""},
		{"rule 2: shared kind", allocation.Config{}, LedgerRow{SandboxKind: "shared", SandboxProvider: "cloudflare-containers"}, true, problem.SandboxAllocationRetired},
		{"rule 2: cloudflare-shared recorded", allocation.Config{}, LedgerRow{SandboxAllocation: "cloudflare-shared", SandboxProvider: "cloudflare-containers"}, true, problem.SandboxAllocationRetired},
		{"rule 2: retired by the settings", allocation.Config{RetiredAllocations: []string{"vercel-small"}}, LedgerRow{SandboxAllocation: "vercel-small"}, false, problem.SandboxAllocationRetired},
		{"rule 3: provider recorded retired", allocation.Config{}, LedgerRow{SandboxProvider: "cloudflare"}, false, problem.SandboxRuntimeRetired},
		{"rule 3: legacy shared id, a shared route", allocation.Config{}, LedgerRow{SandboxID: legacyShared, Route: &Route{Kind: "shared", RouteKey: legacyShared}}, true, problem.SandboxRuntimeRetired},
		{"rule 3: provider retired by the settings", allocation.Config{RetiredProviders: []string{"vercel"}}, LedgerRow{SandboxAllocation: "vercel-large"}, false, problem.SandboxRuntimeRetired},
		{"unknown provider: neither", allocation.Config{}, LedgerRow{SandboxID: "sbx-" + strings.Repeat("b", 48)}, false, ""},
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
