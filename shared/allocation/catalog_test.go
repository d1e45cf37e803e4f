package allocation

import (
	"encoding/json/jsontext"
	"encoding/json/v2"
	"errors"
	"testing"

	"github.com/cloud-agent/control-plane/infra/local/testkit"
	"github.com/cloud-agent/control-plane/shared/problem"
)

func intp(n int) *int { return &n }

func wantCode(t *testing.T, err error, want problem.Code) {
	t.Helper()
	if want == "" {
		if err != nil {
			t.Fatalf("err = %v, want none", err)
		}
		return
	}
	var pe *problem.Error
	if !errors.As(err, &pe) {
		t.Fatalf("err = %v, want code %s", err, want)
	}
	if pe.Code != want {
		t.Fatalf("code = %s (%s), want %s", pe.Code, pe.Detail, want)
	}
}

// TestCatalogTable holds every row of the allocation table of section 2:
// provider, account, instance type, built-in status and resources.
func TestCatalogTable(t *testing.T) {
	p := DefaultPolicy()
	def, err := p.Default()
	if err != nil {
		t.Fatal(err)
	}
	rows := []struct {
		name, provider, instanceType string
		status                       string
		res                          Resources
	}{
		{"cloudflare-containers-standard-4", "cloudflare-containers", "standard-4", "default", Resources{intp(4), intp(12288), intp(20000)}},
		{"cloudflare-containers-standard-3", "cloudflare-containers", "standard-3", "selectable", Resources{intp(2), intp(8192), intp(16000)}},
		{"vercel-small", "vercel", "small", "selectable", Resources{intp(2), intp(4096), nil}},
		{"vercel-large", "vercel", "large", "selectable", Resources{intp(4), intp(8192), nil}},
		{"cloudflare-single", "cloudflare", "single", "provider retired", Resources{intp(2), intp(6144), intp(10000)}},
		{"isolated-standard", "cloudflare", "isolated-standard", "provider retired", Resources{intp(4), intp(12288), intp(20000)}},
		{"cloudflare-shared", "cloudflare", "shared", "allocation retired", Resources{}},
	}
	if len(catalog) != len(rows) {
		t.Fatalf("catalog has %d allocations, the contract %d", len(catalog), len(rows))
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			a, ok := ByName(r.name)
			if !ok {
				t.Fatal("not in the catalog")
			}
			req := a.Request()
			if string(a.Provider()) != r.provider || req.Provider.ID != a.Provider() || req.Provider.Account != "kilo" || req.InstanceType != r.instanceType {
				t.Errorf("got %s %+v", a.Provider(), req)
			}
			if a.Name() != r.name || a.BYOC() {
				t.Errorf("name %q byoc %v", a.Name(), a.BYOC())
			}
			gotRes, _ := json.Marshal(a.Resources())
			wantRes, _ := json.Marshal(r.res)
			if string(gotRes) != string(wantRes) {
				t.Errorf("resources %s, want %s", gotRes, wantRes)
			}
			err := p.Check(a, "anyone")
			switch r.status {
			case "default":
				if def.Name() != r.name {
					t.Errorf("default is %s", def)
				}
				wantCode(t, err, "")
			case "selectable":
				wantCode(t, err, "")
			case "provider retired":
				wantCode(t, err, problem.SandboxRuntimeRetired)
			case "allocation retired":
				wantCode(t, err, problem.SandboxAllocationRetired)
			}
		})
	}
}

// TestProviderDisplayNames: cloudflare is "Cloudflare Sandbox",
// cloudflare-containers "Cloudflare Containers", vercel "Vercel Sandbox".
func TestProviderDisplayNames(t *testing.T) {
	for p, want := range map[Provider]string{
		Cloudflare:           "Cloudflare Sandbox",
		CloudflareContainers: "Cloudflare Containers",
		Vercel:               "Vercel Sandbox",
	} {
		if got := p.DisplayName(); got != want || !p.Known() {
			t.Errorf("%s: %q known=%v", p, got, p.Known())
		}
	}
	if Provider("aws").Known() {
		t.Error("aws is not a provider")
	}
}

// TestParse: an allocation is one of the names, or exactly one of the valid
// request objects; any other string or object is invalid_sandbox_allocation,
// another JSON type invalid_request.
func TestParse(t *testing.T) {
	rows := []struct {
		rule, in string
		name     string // the allocation it means; "" for byoc
		str      string // its String()
		code     problem.Code
	}{
		{"name standard-4", `"cloudflare-containers-standard-4"`, "cloudflare-containers-standard-4", "cloudflare-containers-standard-4", ""},
		{"name standard-3", `"cloudflare-containers-standard-3"`, "cloudflare-containers-standard-3", "cloudflare-containers-standard-3", ""},
		{"name vercel-small", `"vercel-small"`, "vercel-small", "vercel-small", ""},
		{"name vercel-large", `"vercel-large"`, "vercel-large", "vercel-large", ""},
		{"name cloudflare-single", `"cloudflare-single"`, "cloudflare-single", "cloudflare-single", ""},
		{"name isolated-standard", `"isolated-standard"`, "isolated-standard", "isolated-standard", ""},
		{"name cloudflare-shared", `"cloudflare-shared"`, "cloudflare-shared", "cloudflare-shared", ""},
		{"object cloudflare single", `{"provider":{"id":"cloudflare","account":"kilo"},"instanceType":"single"}`, "cloudflare-single", "cloudflare-single", ""},
		{"object cloudflare shared", `{"provider":{"id":"cloudflare","account":"kilo"},"instanceType":"shared"}`, "cloudflare-shared", "cloudflare-shared", ""},
		{"object cloudflare isolated-standard", `{"instanceType":"isolated-standard","provider":{"account":"kilo","id":"cloudflare"}}`, "isolated-standard", "isolated-standard", ""},
		{"object containers standard-3", `{"provider":{"id":"cloudflare-containers","account":"kilo"},"instanceType":"standard-3"}`, "cloudflare-containers-standard-3", "cloudflare-containers-standard-3", ""},
		{"object containers standard-4", ` {"provider": {"id": "cloudflare-containers", "account": "kilo"}, "instanceType": "standard-4"} `, "cloudflare-containers-standard-4", "cloudflare-containers-standard-4", ""},
		{"object vercel kilo small", `{"provider":{"id":"vercel","account":"kilo"},"instanceType":"small"}`, "vercel-small", "vercel-small", ""},
		{"object vercel kilo large", `{"provider":{"id":"vercel","account":"kilo"},"instanceType":"large"}`, "vercel-large", "vercel-large", ""},
		{"object vercel byoc small", `{"provider":{"id":"vercel","account":"byoc"},"instanceType":"small"}`, "", "vercel/byoc/small", ""},
		{"object vercel byoc large", `{"provider":{"id":"vercel","account":"byoc"},"instanceType":"large"}`, "", "vercel/byoc/large", ""},

		{"unknown name", `"vercel-medium"`, "", "", problem.InvalidSandboxAllocation},
		{"names are case-sensitive", `"Vercel-Small"`, "", "", problem.InvalidSandboxAllocation},
		{"empty name", `""`, "", "", problem.InvalidSandboxAllocation},
		{"name with space", `" vercel-small"`, "", "", problem.InvalidSandboxAllocation},
		{"byoc only on vercel", `{"provider":{"id":"cloudflare-containers","account":"byoc"},"instanceType":"standard-4"}`, "", "", problem.InvalidSandboxAllocation},
		{"unknown account", `{"provider":{"id":"vercel","account":"acme"},"instanceType":"small"}`, "", "", problem.InvalidSandboxAllocation},
		{"unknown instance type", `{"provider":{"id":"vercel","account":"kilo"},"instanceType":"medium"}`, "", "", problem.InvalidSandboxAllocation},
		{"instance type of another provider", `{"provider":{"id":"vercel","account":"kilo"},"instanceType":"standard-4"}`, "", "", problem.InvalidSandboxAllocation},
		{"extra top-level key", `{"provider":{"id":"vercel","account":"kilo"},"instanceType":"small","region":"x"}`, "", "", problem.InvalidSandboxAllocation},
		{"extra provider key", `{"provider":{"id":"vercel","account":"kilo","x":1},"instanceType":"small"}`, "", "", problem.InvalidSandboxAllocation},
		{"missing instanceType", `{"provider":{"id":"vercel","account":"kilo"}}`, "", "", problem.InvalidSandboxAllocation},
		{"missing account", `{"provider":{"id":"vercel"},"instanceType":"small"}`, "", "", problem.InvalidSandboxAllocation},
		{"member names are case-sensitive", `{"Provider":{"id":"vercel","account":"kilo"},"instanceType":"small"}`, "", "", problem.InvalidSandboxAllocation},
		{"inner names are case-sensitive", `{"provider":{"ID":"vercel","account":"kilo"},"instanceType":"small"}`, "", "", problem.InvalidSandboxAllocation},
		{"provider as a string", `{"provider":"vercel","instanceType":"small"}`, "", "", problem.InvalidSandboxAllocation},
		{"instanceType as a number", `{"provider":{"id":"vercel","account":"kilo"},"instanceType":1}`, "", "", problem.InvalidSandboxAllocation},
		{"null provider", `{"provider":null,"instanceType":"small"}`, "", "", problem.InvalidSandboxAllocation},
		{"empty object", `{}`, "", "", problem.InvalidSandboxAllocation},
		{"repeated member", `{"provider":{"id":"vercel","account":"kilo"},"provider":{"id":"vercel","account":"byoc"},"instanceType":"small"}`, "", "", problem.InvalidRequest},
		{"repeated inner member", `{"provider":{"id":"vercel","account":"kilo","account":"byoc"},"instanceType":"small"}`, "", "", problem.InvalidRequest},
		{"trailing data", `"vercel-small" "x"`, "", "", problem.InvalidRequest},
		{"null is left to the caller", `null`, "", "", problem.InvalidRequest},
		{"number", `7`, "", "", problem.InvalidRequest},
		{"array", `["vercel-small"]`, "", "", problem.InvalidRequest},
		{"boolean", `true`, "", "", problem.InvalidRequest},
		{"empty", ``, "", "", problem.InvalidRequest},
	}
	for _, r := range rows {
		t.Run(r.rule, func(t *testing.T) {
			a, err := Parse(jsontext.Value(r.in))
			wantCode(t, err, r.code)
			if err != nil {
				return
			}
			if a.Name() != r.name || a.String() != r.str {
				t.Errorf("got name %q string %q", a.Name(), a)
			}
		})
	}
}

// TestBYOC: a vercel/byoc object has no name, is stored only as its request,
// has the resources of vercel-<instanceType>, always passes check 3, passes
// check 4 unless vercel is retired, and checks 5 and 6 when
// vercel-<instanceType> would.
func TestBYOC(t *testing.T) {
	small, ok := FromRequest(Request{RequestProvider{Vercel, AccountBYOC}, "small"})
	if !ok || small.Name() != "" || !small.BYOC() || small.spec.Name != VercelSmall || small.Provider() != Vercel {
		t.Fatalf("byoc small: %+v", small)
	}
	if r := small.Request(); r.Provider.Account != AccountBYOC || r.InstanceType != "small" {
		t.Errorf("request %+v", r)
	}
	vs, _ := ByName(VercelSmall)
	if got, want := testkit.JSON(small.Resources()), testkit.JSON(vs.Resources()); got != want {
		t.Errorf("resources %s, want %s", got, want)
	}
	rows := []struct {
		rule string
		cfg  Config
		code problem.Code
	}{
		{"passes with built-in settings", Config{}, ""},
		{"always passes check 3, even with vercel-small retired", Config{RetiredAllocations: []string{VercelSmall}, Selectable: []string{VercelSmall}}, ""},
		{"fails check 4 when vercel is retired", Config{RetiredProviders: []string{"vercel"}}, problem.SandboxRuntimeRetired},
		{"check 5 as vercel-small", Config{SelectionOwners: []string{"someone-else"}}, problem.SandboxSelectionDisabled},
		{"check 6 as vercel-small", Config{Selectable: []string{VercelLarge}}, problem.SandboxAllocationUnavailable},
		{"skips checks 5 and 6 when vercel-small is the default", Config{Default: strp(VercelSmall), SelectionOwners: []string{}}, ""},
	}
	for _, r := range rows {
		t.Run(r.rule, func(t *testing.T) {
			p, _ := NewPolicy(r.cfg)
			wantCode(t, p.Check(small, "u1"), r.code)
		})
	}
}

func strp(s string) *string { return &s }

// FuzzParse: parsing never panics, and what parses round-trips through its
// request object.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`"vercel-small"`, `"cloudflare-shared"`, `{"provider":{"id":"vercel","account":"byoc"},"instanceType":"large"}`,
		`{"provider":{"id":"cloudflare","account":"kilo"},"instanceType":"shared"}`, `{"provider":{}}`, `[`, `null`, `"\u0000"`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		a, err := Parse(raw)
		if err != nil {
			if c := problem.CodeOf(err); c != problem.InvalidSandboxAllocation && c != problem.InvalidRequest {
				t.Fatalf("code %s", c)
			}
			return
		}
		b, ok := FromRequest(a.Request())
		if !ok || b != a {
			t.Fatalf("%v does not round-trip: %v", a, b)
		}
	})
}
