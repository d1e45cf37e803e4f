package store

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/cloud-agent/control-plane/shared/allocation"
	"github.com/cloud-agent/control-plane/shared/ledger"
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
		{"ledger-completed", ledger.StatusCompleted, "", "isolated", "cloudflare-containers", "cloudflare-containers-standard-4", false, false},
		{"ledger-code-review", ledger.StatusCompleted, "", "code-review", "vercel", "", false, false},
		{"ledger-in-progress-live", ledger.StatusInProgress, "", "", "", "", true, false},
		{"ledger-in-progress-lapsed", ledger.StatusInProgress, "", "", "", "", false, false},
		{"ledger-failed", ledger.StatusFailed, "", "", "vercel", "vercel-small", false, false},
		{"ledger-shared-kind", ledger.StatusCompleted, "", "shared", "", "", false, false},
		{"ledger-legacy-shared-id", ledger.StatusCompleted, "", "", "cloudflare", "", false, true},
		{"ledger-other-org", ledger.StatusCompleted, "org_b", "isolated", "vercel", "vercel-large", false, false},
	}
	for _, r := range rows {
		t.Run(r.fixture, func(t *testing.T) {
			l, err := DecodeLedger(fixture(t, "ledger", r.fixture))
			if err != nil {
				t.Fatal(err)
			}
			p, ok := l.Provider()
			if string(p) != r.provider || ok != (r.provider != "") {
				t.Errorf("provider %q %v, want %q", p, ok, r.provider)
			}
			if l.Status != r.status || l.OrgID != r.org || l.SandboxKind != r.kind || l.SandboxAllocation != r.alloc ||
				l.LeaseUntil.After(now) != r.live || (l.Route != nil) != r.route || l.Intent != ledger.IntentCreateSession || l.UserID != "u1" ||
				!strings.HasPrefix(l.OperationKey, "k-") || l.SessionID == "" {
				t.Errorf("row %+v", l)
			}
			if l.ExpiresAt != time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC) || l.Expired(now) || !l.Expired(l.ExpiresAt) {
				t.Errorf("expiresAt %v", l.ExpiresAt)
			}
		})
	}
	_, err := DecodeLedger(fixture(t, "ledger", "invalid-ledger-lease-type"))
	var ie *InvalidLedgerError
	if !errors.As(err, &ie) {
		t.Errorf("err = %v", err)
	}
}

// TestLedgerRoundTrip: the current writer's row decodes to itself; the
// operation key may contain '#'-free characters of its alphabet.
func TestLedgerRoundTrip(t *testing.T) {
	in := &ledger.Row{
		UserID: "u1", OperationKey: "trigger:trg_1:2026-11-30T10:00:00Z", Intent: ledger.IntentCreateSession, OrgID: "o1",
		Fingerprint: "ab", Status: ledger.StatusCompleted, SessionID: "workspace_x", SandboxID: allocation.SandboxID("workspace_x"),
		SandboxKind: "isolated", SandboxProvider: "vercel", SandboxAllocation: "vercel-small",
		CreatedAt: "2026-11-30T10:00:00Z", ExpiresAt: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC),
	}
	out, err := DecodeLedger(EncodeLedger(in))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(out, in) {
		t.Errorf("got %+v", out)
	}
}
