package allocation

import (
	"strings"
	"testing"

	"github.com/cloud-agent/control-plane/shared/problem"
)

// TestSandboxIDKnownAnswer: "sbx-" and the first 48 lowercase hex of
// SHA-256("control-isolated-v1:<sessionId>"), the same on every machine.
func TestSandboxIDKnownAnswer(t *testing.T) {
	for in, want := range map[string]string{
		"workspace_0b8f3a1e-8a51-4c1b-9a57-3e0b3c2d1f00": "sbx-3bad86c4cea192b91a85e66feda724ff957cc3870486bd77",
		"workspace_é": "sbx-82bd8e0ae2ce709289673135fe33a9050e1096b30b9cc432",
	} {
		if got := SandboxID(in); got != want {
			t.Errorf("SandboxID(%q) = %s, want %s", in, got, want)
		}
	}
}

const hex48 = "0123456789abcdef0123456789abcdef0123456789abcdef"

// TestClassify has a row for every id shape of section 3.
func TestClassify(t *testing.T) {
	rows := []struct {
		rule string
		id   string
		want IDClass
	}{
		{"sbx- + 48 hex", "sbx-" + hex48, ClassSandbox},
		{"a derived id", SandboxID("workspace_x"), ClassSandbox},
		{"ses- + 48 hex", "ses-" + hex48, ClassLegacyIsolated},
		{"istd- + 48 hex", "istd-" + hex48, ClassLegacyIsolated},
		{"crv- + 48 hex", "crv-" + hex48, ClassLegacyIsolated},
		{"dind- + 48 hex", "dind-" + hex48, ClassLegacyIsolated},
		{"org- + 48 hex", "org-" + hex48, ClassLegacyRouteKey},
		{"usr- + 48 hex", "usr-" + hex48, ClassLegacyRouteKey},
		{"bot- + 48 hex", "bot-" + hex48, ClassLegacyRouteKey},
		{"ubt- + 48 hex", "ubt-" + hex48, ClassLegacyRouteKey},
		{"contains __", "org_123__user_456", ClassLegacyOwnerKey},
		{"__ anywhere", "__", ClassLegacyOwnerKey},
		{"sbx- with 47 hex", "sbx-" + hex48[:47], ClassUnknown},
		{"sbx- with 49 hex", "sbx-" + hex48 + "0", ClassUnknown},
		{"sbx- with a non-hex digit", "sbx-" + hex48[:47] + "g", ClassUnknown},
		{"unknown prefix", "vm-" + hex48, ClassUnknown},
		{"prefix only", "ses-", ClassUnknown},
		{"no id", "", ClassUnknown},
	}
	for _, r := range rows {
		t.Run(r.rule, func(t *testing.T) {
			if got := Classify(r.id); got != r.want {
				t.Errorf("Classify(%q) = %d, want %d", r.id, got, r.want)
			}
		})
	}
}

// TestContainerScope has a row for every row of the scope table: the stored
// kind first, the id's class only when no kind is stored.
func TestContainerScope(t *testing.T) {
	rows := []struct {
		rule  string
		kind  Kind
		id    string
		scope Scope
		label string
	}{
		{"stored isolated", KindIsolated, "sbx-" + hex48, ScopeIsolated, "Isolated container"},
		{"stored code-review", KindCodeReview, "sbx-" + hex48, ScopeIsolated, "Isolated container"},
		{"stored shared", KindShared, "sbx-" + hex48, ScopeShared, "Shared container"},
		{"stored kind wins over a shared id", KindIsolated, "org-" + hex48, ScopeIsolated, "Isolated container"},
		{"stored kind wins over an isolated id", KindShared, "ses-" + hex48, ScopeShared, "Shared container"},
		{"none, route key", "", "usr-" + hex48, ScopeShared, "Shared container"},
		{"none, raw owner key", "", "org_1__usr_2", ScopeShared, "Shared container"},
		{"none, legacy isolated", "", "istd-" + hex48, ScopeIsolated, "Isolated container"},
		{"none, sbx-", "", "sbx-" + hex48, ScopeUnknown, "Unknown container"},
		{"none, anything else", "", "whatever", ScopeUnknown, "Unknown container"},
		{"none, no id", "", "", ScopeUnknown, "Unknown container"},
	}
	for _, r := range rows {
		t.Run(r.rule, func(t *testing.T) {
			s := ContainerScope(r.kind, r.id)
			if s != r.scope || s.Label() != r.label {
				t.Errorf("got %s %q", s, s.Label())
			}
		})
	}
}

// TestRecordAllocation: the stored allocation, else cloudflare-shared for a
// shared kind or a legacy shared id class.
func TestRecordAllocation(t *testing.T) {
	vs, _ := ByName(VercelSmall)
	rows := []struct {
		rule   string
		stored Allocation
		kind   Kind
		id     string
		want   string
	}{
		{"stored wins", vs, KindShared, "org-" + hex48, VercelSmall},
		{"kind shared", Allocation{}, KindShared, "sbx-" + hex48, CloudflareShared},
		{"route key", Allocation{}, "", "bot-" + hex48, CloudflareShared},
		{"raw owner key", Allocation{}, "", "a__b", CloudflareShared},
		{"legacy isolated: none", Allocation{}, "", "ses-" + hex48, ""},
		{"isolated kind: none", Allocation{}, KindIsolated, "sbx-" + hex48, ""},
	}
	for _, r := range rows {
		t.Run(r.rule, func(t *testing.T) {
			if got := RecordAllocation(r.stored, r.kind, r.id); got.Name() != r.want {
				t.Errorf("got %q", got.Name())
			}
		})
	}
}

// TestParseKind: isolated and code-review are accepted, shared is accepted
// here and refused as retired by Place, anything else is invalid_request.
func TestParseKind(t *testing.T) {
	for _, k := range []string{"isolated", "code-review", "shared"} {
		if got, err := ParseKind(k); err != nil || string(got) != k {
			t.Errorf("%s: %v", k, err)
		}
	}
	for _, k := range []string{"", "Isolated", "dind", "isolated "} {
		_, err := ParseKind(k)
		wantCode(t, err, problem.InvalidRequest)
	}
}

// FuzzClassify: classification never panics, every derived id is of the
// sandbox class, and only ids with a legacy shape are legacy.
func FuzzClassify(f *testing.F) {
	for _, s := range []string{"sbx-" + hex48, "org-" + hex48, "a__b", "", "ses-", "dind-" + strings.ToUpper(hex48)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		c := Classify(id)
		if Classify(SandboxID(id)) != ClassSandbox {
			t.Fatalf("SandboxID(%q) is not of the sandbox class", id)
		}
		if c.Shared() && !strings.Contains(id, "__") && !hexAfterAny(id, routeKeyPrefixes) {
			t.Fatalf("%q classed shared", id)
		}
		_ = ContainerScope("", id).Label()
	})
}
