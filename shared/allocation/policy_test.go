package allocation

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/cloud-agent/control-plane/infra/local/testkit"
	"github.com/cloud-agent/control-plane/shared/problem"
)

func named(t *testing.T, name string) Allocation {
	t.Helper()
	a, ok := ByName(name)
	if !ok {
		t.Fatalf("%s is not in the catalog", name)
	}
	return a
}

// TestChecks runs checks 3 to 6 of section 2 on explicit allocations, one
// row per rule, including which check wins when several fail.
func TestChecks(t *testing.T) {
	rows := []struct {
		rule  string
		cfg   Config
		alloc string
		owner string
		code  problem.Code
	}{
		{"3: cloudflare-shared is a retired allocation", Config{}, CloudflareShared, "u1", problem.SandboxAllocationRetired},
		{"3 before 4: a retired allocation on a retired provider", Config{RetiredAllocations: []string{VercelSmall}, RetiredProviders: []string{"vercel"}}, VercelSmall, "u1", problem.SandboxAllocationRetired},
		{"3: settings retire an allocation", Config{RetiredAllocations: []string{VercelLarge}}, VercelLarge, "u1", problem.SandboxAllocationRetired},
		{"3 before 5: retired wins over selection disabled", Config{SelectionOwners: []string{}}, CloudflareShared, "u1", problem.SandboxAllocationRetired},
		{"4: cloudflare-single is on the retired cloudflare runtime", Config{}, CloudflareSingle, "u1", problem.SandboxRuntimeRetired},
		{"4: isolated-standard is on the retired cloudflare runtime", Config{}, IsolatedStandard, "u1", problem.SandboxRuntimeRetired},
		{"4: settings retire a provider", Config{RetiredProviders: []string{"vercel"}}, VercelSmall, "u1", problem.SandboxRuntimeRetired},
		{"4 before 5", Config{SelectionOwners: []string{}}, CloudflareSingle, "u1", problem.SandboxRuntimeRetired},
		{"5: owner not in the selection owners", Config{SelectionOwners: []string{"org-a"}}, VercelSmall, "u1", problem.SandboxSelectionDisabled},
		{"5: listed owner may select", Config{SelectionOwners: []string{"org-a"}}, VercelSmall, "org-a", ""},
		{"5: * lets everyone select", Config{SelectionOwners: []string{"*"}}, VercelSmall, "anyone", ""},
		{"5 before 6", Config{SelectionOwners: []string{}, Selectable: []string{}}, VercelSmall, "u1", problem.SandboxSelectionDisabled},
		{"6: not in the selectable list", Config{Selectable: []string{VercelSmall}}, VercelLarge, "u1", problem.SandboxAllocationUnavailable},
		{"6: the default skips it", Config{Selectable: []string{}}, ContainersStandard4, "u1", ""},
		{"5: the default skips it", Config{SelectionOwners: []string{}}, ContainersStandard4, "u1", ""},
		{"the effective default, not the built-in one, skips 5 and 6", Config{Default: strp(VercelLarge), SelectionOwners: []string{}}, ContainersStandard4, "u1", problem.SandboxSelectionDisabled},
		{"the built-in default skips 5 and 6 when the configured one is retired", Config{Default: strp(VercelLarge), RetiredAllocations: []string{VercelLarge}, SelectionOwners: []string{}}, ContainersStandard4, "u1", ""},
		{"a configured default skips 5 and 6", Config{Default: strp(VercelLarge), SelectionOwners: []string{}}, VercelLarge, "u1", ""},
		{"selectable passes", Config{}, ContainersStandard3, "u1", ""},
	}
	for _, r := range rows {
		t.Run(r.rule, func(t *testing.T) {
			p, _ := NewPolicy(r.cfg)
			wantCode(t, p.Check(named(t, r.alloc), r.owner), r.code)
		})
	}
}

// TestRetiredDetails: the detail of check 3 names the allocation and says
// that one sandbox now serves one workspace; the detail of check 4 names
// the allocation and the retired runtime.
func TestRetiredDetails(t *testing.T) {
	p := DefaultPolicy()
	err := p.Check(named(t, CloudflareShared), "u1")
	want := "The cloudflare-shared sandbox allocation is retired: one sandbox now serves one workspace. Start the session without an allocation to use the default, or choose another allocation."
	if err.(*problem.Error).Detail != want {
		t.Errorf("check 3 detail %q", err.(*problem.Error).Detail)
	}
	err = p.Check(named(t, CloudflareSingle), "u1")
	want = "The cloudflare-single allocation runs on the retired Cloudflare Sandbox runtime and cannot start new sessions. Start the session without an allocation to use the default, or choose another allocation."
	if err.(*problem.Error).Detail != want {
		t.Errorf("check 4 detail %q", err.(*problem.Error).Detail)
	}
}

// TestCheckRouting is check 2.
func TestCheckRouting(t *testing.T) {
	a := named(t, VercelSmall)
	err := CheckRouting(a, KindCodeReview)
	wantCode(t, err, problem.AllocationRoutingConflict)
	if d := err.(*problem.Error).Detail; d != "Sandbox allocations cannot be combined with specialized sandbox routing" {
		t.Errorf("detail %q", d)
	}
	wantCode(t, CheckRouting(a, KindIsolated), "")
	wantCode(t, CheckRouting(Allocation{}, KindCodeReview), "")
}

// TestBuiltinConfig: the built-in values are section 7's, valid, and their
// policy is the policy of no settings at all.
func TestBuiltinConfig(t *testing.T) {
	c := BuiltinConfig()
	if *c.Default != "cloudflare-containers-standard-4" ||
		!slices.Equal(c.Selectable, []string{"cloudflare-containers-standard-3", "cloudflare-containers-standard-4", "vercel-small", "vercel-large"}) ||
		len(c.RetiredAllocations) != 0 || c.RetiredAllocations == nil || len(c.RetiredProviders) != 0 || c.RetiredProviders == nil ||
		!slices.Equal(c.SelectionOwners, []string{"*"}) {
		t.Errorf("built-in settings %+v", c)
	}
	p, warnings := NewPolicy(c)
	if len(warnings) > 0 {
		t.Errorf("warnings %q", warnings)
	}
	if !reflect.DeepEqual(p, DefaultPolicy()) {
		t.Errorf("the policy of the built-in settings %+v, of none %+v", p, DefaultPolicy())
	}
	c.Selectable[0] = VercelSmall
	if BuiltinConfig().Selectable[0] != ContainersStandard3 {
		t.Error("a change to one BuiltinConfig changes the next")
	}
}

// TestSettings: settings add to the retired sets but never take a built-in
// out; unknown names are ignored with a warning; isolated-standard and
// cloudflare-shared are never selectable; the effective default falls back
// to the built-in one, and is 503 when that is retired too.
func TestSettings(t *testing.T) {
	t.Run("cannot un-retire cloudflare-shared or cloudflare", func(t *testing.T) {
		p, _ := NewPolicy(Config{RetiredAllocations: []string{}, RetiredProviders: []string{}})
		wantCode(t, p.Check(named(t, CloudflareShared), "u1"), problem.SandboxAllocationRetired)
		wantCode(t, p.Check(named(t, CloudflareSingle), "u1"), problem.SandboxRuntimeRetired)
	})
	t.Run("unknown names are ignored and logged", func(t *testing.T) {
		p, warnings := NewPolicy(Config{
			Default:            strp("nope"),
			Selectable:         []string{"nope", VercelSmall},
			RetiredAllocations: []string{"gone"},
			RetiredProviders:   []string{"aws"},
		})
		if len(warnings) != 4 {
			t.Errorf("warnings %q", warnings)
		}
		if d, _ := p.Default(); d.Name() != BuiltinDefault {
			t.Errorf("default %s", d)
		}
		wantCode(t, p.Check(named(t, VercelSmall), "u1"), "")
	})
	t.Run("isolated-standard and cloudflare-shared are never selectable", func(t *testing.T) {
		p, warnings := NewPolicy(Config{Selectable: []string{IsolatedStandard, CloudflareShared}, Default: strp(CloudflareShared)})
		if len(warnings) != 3 {
			t.Errorf("warnings %q", warnings)
		}
		if d, _ := p.Default(); d.Name() != BuiltinDefault {
			t.Errorf("default %s", d)
		}
	})
	t.Run("the selectable list is the setting's", func(t *testing.T) {
		p, _ := NewPolicy(Config{Selectable: []string{VercelLarge}})
		wantCode(t, p.Check(named(t, VercelLarge), "u1"), "")
		wantCode(t, p.Check(named(t, ContainersStandard3), "u1"), problem.SandboxAllocationUnavailable)
	})
	rows := []struct {
		rule string
		cfg  Config
		want string
	}{
		{"built-in default", Config{}, ContainersStandard4},
		{"configured default", Config{Default: strp(VercelSmall)}, VercelSmall},
		{"a retired configured default falls back", Config{Default: strp(VercelSmall), RetiredAllocations: []string{VercelSmall}}, ContainersStandard4},
		{"a configured default on a retired provider falls back", Config{Default: strp(VercelSmall), RetiredProviders: []string{"vercel"}}, ContainersStandard4},
		{"cloudflare-single as default falls back", Config{Default: strp(CloudflareSingle)}, ContainersStandard4},
		{"built-in default retired too is 503", Config{Default: strp(VercelSmall), RetiredProviders: []string{"vercel", "cloudflare-containers"}}, ""},
		{"built-in default retired, configured one fine", Config{Default: strp(VercelSmall), RetiredAllocations: []string{ContainersStandard4}}, VercelSmall},
	}
	for _, r := range rows {
		t.Run(r.rule, func(t *testing.T) {
			p, _ := NewPolicy(r.cfg)
			d, err := p.Default()
			if r.want == "" {
				wantCode(t, err, problem.ServiceUnavailable)
				if err.(*problem.Error).Cause == nil {
					t.Error("the log is not told why")
				}
				return
			}
			wantCode(t, err, "")
			if d.Name() != r.want {
				t.Errorf("default %s, want %s", d, r.want)
			}
		})
	}
}

// TestPlace: what a new session gets.
func TestPlace(t *testing.T) {
	rows := []struct {
		rule      string
		cfg       Config
		kind      Kind
		alloc     string
		wantKind  Kind
		wantProv  Provider
		wantAlloc string
		code      problem.Code
	}{
		{"no allocation: the effective default", Config{}, KindIsolated, "", KindIsolated, CloudflareContainers, ContainersStandard4, ""},
		{"no allocation: the configured default", Config{Default: strp(VercelLarge)}, KindIsolated, "", KindIsolated, Vercel, VercelLarge, ""},
		{"explicit allocation", Config{}, KindIsolated, VercelSmall, KindIsolated, Vercel, VercelSmall, ""},
		{"explicit allocation runs the checks", Config{}, KindIsolated, CloudflareSingle, "", "", "", problem.SandboxRuntimeRetired},
		{"code-review: the default's provider, no allocation", Config{Default: strp(VercelSmall)}, KindCodeReview, "", KindCodeReview, Vercel, "", ""},
		{"code-review with an allocation is check 2", Config{}, KindCodeReview, VercelSmall, "", "", "", problem.AllocationRoutingConflict},
		{"shared kind is retired, judged as check 3", Config{}, KindShared, "", "", "", "", problem.SandboxAllocationRetired},
		{"shared kind with an allocation is retired", Config{}, KindShared, VercelSmall, "", "", "", problem.SandboxAllocationRetired},
		{"no usable default is 503", Config{RetiredProviders: []string{"cloudflare-containers"}}, KindIsolated, "", "", "", "", problem.ServiceUnavailable},
		{"code-review with no usable default is 503", Config{RetiredProviders: []string{"cloudflare-containers"}}, KindCodeReview, "", "", "", "", problem.ServiceUnavailable},
	}
	for _, r := range rows {
		t.Run(r.rule, func(t *testing.T) {
			p, _ := NewPolicy(r.cfg)
			var a Allocation
			if r.alloc != "" {
				a = named(t, r.alloc)
			}
			pl, err := p.Place(r.kind, a, "u1")
			wantCode(t, err, r.code)
			if err != nil {
				return
			}
			if pl.Kind != r.wantKind || pl.Provider != r.wantProv || pl.Allocation.Name() != r.wantAlloc {
				t.Errorf("got %+v", pl)
			}
			wantRes := testkit.JSON(pl.Allocation.Resources())
			if r.wantKind == KindCodeReview {
				wantRes = `{"vcpus":1,"memoryMiB":4096,"diskMB":8000}`
			}
			if got := testkit.JSON(pl.Resources); got != wantRes {
				t.Errorf("resources %s, want %s", got, wantRes)
			}
		})
	}
}

// TestResolve: the policy's one decision about a saved allocation. Saved
// values that are unknown or fail checks 3 to 6 fall back to the
// effective default with a reason for the log; they are never errors. A
// new session starts with the saved allocation when it passes, else with
// none (the effective default), and its status (Ran) is the one a replay
// of it records: fallback exactly when it fell back. A session that ran
// the saved allocation ran as saved, though it fails its checks now.
func TestResolve(t *testing.T) {
	byoc := &Request{RequestProvider{Vercel, AccountBYOC}, "large"}
	rows := []struct {
		rule     string
		cfg      Config
		name     string
		req      *Request
		start    string // "" for none: the effective default
		runs     string // what a new session runs on (Saved)
		fallback FallbackClass
	}{
		{"none saved: the default", Config{}, "", nil, "", ContainersStandard4, ""},
		{"a valid saved name runs", Config{}, VercelSmall, nil, VercelSmall, VercelSmall, ""},
		{"a saved byoc request runs", Config{}, "", byoc, "vercel/byoc/large", "vercel/byoc/large", ""},
		{"saving the default runs it", Config{SelectionOwners: []string{}}, ContainersStandard4, nil, ContainersStandard4, ContainersStandard4, ""},
		{"unknown name falls back", Config{}, "vercel-huge", nil, "", ContainersStandard4, FallbackUnknown},
		{"invalid request falls back", Config{}, "", &Request{RequestProvider{"aws", "kilo"}, "x"}, "", ContainersStandard4, FallbackUnknown},
		{"unknown byoc request falls back", Config{}, "", &Request{RequestProvider{Vercel, AccountBYOC}, "huge"}, "", ContainersStandard4, FallbackUnknown},
		{"retired allocation falls back (3)", Config{}, CloudflareShared, nil, "", ContainersStandard4, FallbackRetired},
		{"retired provider falls back (4)", Config{}, CloudflareSingle, nil, "", ContainersStandard4, FallbackProviderRetired},
		{"retired by the settings falls back (3)", Config{RetiredAllocations: []string{VercelSmall}}, VercelSmall, nil, "", ContainersStandard4, FallbackRetired},
		{"provider retired by the settings falls back (4)", Config{RetiredProviders: []string{"vercel"}}, "", byoc, "", ContainersStandard4, FallbackProviderRetired},
		{"selection disabled falls back (5)", Config{SelectionOwners: []string{}}, VercelSmall, nil, "", ContainersStandard4, FallbackNotSelectable},
		{"unavailable falls back (6)", Config{Selectable: []string{}}, VercelSmall, nil, "", ContainersStandard4, FallbackNotSelectable},
		{"falls back to the effective default", Config{Default: strp(VercelLarge)}, CloudflareShared, nil, "", VercelLarge, FallbackRetired},
		{"a byoc request falls back to a vercel default", Config{Default: strp(VercelLarge), SelectionOwners: []string{}}, "", &Request{RequestProvider{Vercel, AccountBYOC}, "small"}, "", VercelLarge, FallbackNotSelectable},
	}
	for _, r := range rows {
		t.Run(r.rule, func(t *testing.T) {
			p, _ := NewPolicy(r.cfg)
			c, err := p.Resolve(r.name, r.req, "u1")
			if err != nil {
				t.Fatal(err)
			}
			if c.Start.String() != r.start || c.Fallback.Class != r.fallback || c.FellBack() != (r.fallback != "") || (c.Fallback.Reason != "") != (r.fallback != "") {
				t.Errorf("start %q, fallback %+v", c.Start, c.Fallback)
			}
			if c.Fallback.Class == FallbackUnknown && (r.name != "" && strings.Contains(c.Fallback.Reason, r.name) || strings.Contains(c.Fallback.Reason, "aws")) {
				t.Errorf("the reason repeats the stored value: %s", c.Fallback.Reason)
			}
			runs, fb, err := p.Saved(r.name, r.req, "u1")
			if err != nil || runs.String() != r.runs || fb != c.Fallback {
				t.Errorf("Saved: %s, %+v, %v", runs, fb, err)
			}
			if c.Ran(runs) == c.FellBack() {
				t.Errorf("a new session on %s ran as saved: %v, but fell back: %v", runs, c.Ran(runs), c.FellBack())
			}
			if !c.Saved.IsZero() && !c.Ran(c.Saved) {
				t.Errorf("a session on the saved %s did not run as saved", c.Saved)
			}
		})
	}
	// No usable default: only a start that needs it is an error.
	p, _ := NewPolicy(Config{RetiredProviders: []string{"cloudflare-containers"}})
	for _, name := range []string{"", CloudflareShared} {
		if _, err := p.Resolve(name, nil, "u1"); problem.CodeOf(err) != problem.ServiceUnavailable {
			t.Errorf("no usable default, %q saved: %v", name, err)
		}
		if _, _, err := p.Saved(name, nil, "u1"); problem.CodeOf(err) != problem.ServiceUnavailable {
			t.Errorf("Saved, no usable default, %q saved: %v", name, err)
		}
	}
	if c, err := p.Resolve(VercelSmall, nil, "u1"); err != nil || c.Start.String() != VercelSmall {
		t.Errorf("no usable default, a saved allocation that passes: %s %v", c.Start, err)
	}
}

// TestOptionsFor is GET /v1/allocations: the options always include the
// effective default, byoc says whether a byoc object would pass, retired
// lists every allocation retired or on a retired provider, and an owner who
// may not select has enabled false and no options.
func TestOptionsFor(t *testing.T) {
	names := func(o Options) []string {
		var n []string
		for _, x := range o.Options {
			n = append(n, x.Allocation)
		}
		return n
	}
	rows := []struct {
		rule    string
		cfg     Config
		enabled bool
		def     string
		options []string
		byoc    bool
		retired []string
	}{
		{"built-in", Config{}, true, ContainersStandard4,
			[]string{ContainersStandard4, ContainersStandard3, VercelSmall, VercelLarge}, true,
			[]string{CloudflareSingle, IsolatedStandard, CloudflareShared}},
		{"the default is always an option", Config{Selectable: []string{VercelSmall}}, true, ContainersStandard4,
			[]string{ContainersStandard4, VercelSmall}, true,
			[]string{CloudflareSingle, IsolatedStandard, CloudflareShared}},
		{"no vercel: no byoc", Config{Selectable: []string{ContainersStandard3}}, true, ContainersStandard4,
			[]string{ContainersStandard4, ContainersStandard3}, false,
			[]string{CloudflareSingle, IsolatedStandard, CloudflareShared}},
		{"vercel retired", Config{RetiredProviders: []string{"vercel"}}, true, ContainersStandard4,
			[]string{ContainersStandard4, ContainersStandard3}, false,
			[]string{VercelSmall, VercelLarge, CloudflareSingle, IsolatedStandard, CloudflareShared}},
		{"may not select", Config{SelectionOwners: []string{"org-x"}}, false, ContainersStandard4,
			nil, false,
			[]string{CloudflareSingle, IsolatedStandard, CloudflareShared}},
		{"may not select, but a vercel default lets byoc of its type pass", Config{SelectionOwners: []string{}, Default: strp(VercelSmall)}, false, VercelSmall,
			nil, true,
			[]string{CloudflareSingle, IsolatedStandard, CloudflareShared}},
		{"byoc passes check 3 even when both vercel allocations are retired", Config{RetiredAllocations: []string{VercelSmall, VercelLarge}}, true, ContainersStandard4,
			[]string{ContainersStandard4, ContainersStandard3}, true,
			[]string{VercelSmall, VercelLarge, CloudflareSingle, IsolatedStandard, CloudflareShared}},
		{"no usable default: default null, the rest still listed", Config{RetiredProviders: []string{"cloudflare-containers"}}, true, "",
			[]string{VercelSmall, VercelLarge}, true,
			[]string{ContainersStandard4, ContainersStandard3, CloudflareSingle, IsolatedStandard, CloudflareShared}},
		{"retired allocation listed", Config{RetiredAllocations: []string{ContainersStandard3}}, true, ContainersStandard4,
			[]string{ContainersStandard4, VercelSmall, VercelLarge}, true,
			[]string{ContainersStandard3, CloudflareSingle, IsolatedStandard, CloudflareShared}},
	}
	for _, r := range rows {
		t.Run(r.rule, func(t *testing.T) {
			p, _ := NewPolicy(r.cfg)
			o := p.OptionsFor("u1")
			def := ""
			if o.Default != nil {
				def = *o.Default
			}
			if o.Enabled != r.enabled || def != r.def || !slices.Equal(names(o), r.options) || o.BYOC != r.byoc || !slices.Equal(o.Retired, r.retired) {
				t.Errorf("got %s", testkit.JSON(o))
			}
			if o.Options == nil || o.Retired == nil {
				t.Error("lists must be [] rather than null")
			}
		})
	}
}
