package store

import (
	"encoding/json/v2"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/cloud-agent/control-plane/infra/local/localdb"
	"github.com/cloud-agent/control-plane/shared/allocation"
	"github.com/cloud-agent/control-plane/shared/session"
)

// fixture reads testdata/<dir>/<name>.json, a stored item in DynamoDB
// JSON: a session's (items) or a ledger row's (ledger).
func fixture(t testing.TB, dir, name string) Item {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", dir, name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	item, err := localdb.UnmarshalItem(data)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return item
}

// recordJSON is v's JSON with the members of its maps sorted and an
// allocation shown by its name, so that two equal values compare equal.
func recordJSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v, json.Deterministic(true), json.WithMarshalers(json.MarshalFunc(func(a allocation.Allocation) ([]byte, error) {
		return json.Marshal(a.String())
	})))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

const hex48 = "0123456789abcdef0123456789abcdef0123456789abcdef"

// TestCurrentShapeView: the current writer's record shows exactly as the
// contract's lookup example.
func TestCurrentShapeView(t *testing.T) {
	r, err := DecodeSession(fixture(t, "items", "session-v2-current"))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"sessionId":"workspace_0b8f3a1e-8a51-4c1b-9a57-3e0b3c2d1f00","owner":{"userId":"u1","orgId":null,"botId":null},` +
		`"createdAt":"2026-11-30T10:00:00Z","sandbox":{"id":"sbx-3bad86c4cea192b91a85e66feda724ff957cc3870486bd77","kind":"isolated",` +
		`"provider":"cloudflare-containers","allocation":"cloudflare-containers-standard-4",` +
		`"allocationRequest":{"provider":{"id":"cloudflare-containers","account":"kilo"},"instanceType":"standard-4"},` +
		`"resources":{"vcpus":4,"memoryMiB":12288,"diskMB":20000},"route":null,"containerScope":"isolated","containerLabel":"Isolated container"},` +
		`"runtime":{"state":"allocated","code":null,"message":null},"record":{"schemaVersion":2,"legacy":false},"environment":null,"outcome":null}`
	if got := recordJSON(t, r.View(allocation.DefaultPolicy())); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if r.Repository != (session.Repository{Type: "github", Repo: "acme/app", Branch: "main"}) || r.Agent != (session.Agent{Mode: "code", Model: "anthropic/claude"}) || r.CreatedOnPlatform != "cli" {
		t.Errorf("record %+v", r)
	}
}

// TestLegacyRouteKeyView: a legacy shared session with a route key: kind
// null, provider cloudflare, allocation cloudflare-shared, route as stored,
// shared scope, retired runtime.
func TestLegacyRouteKeyView(t *testing.T) {
	r, err := DecodeSession(fixture(t, "items", "session-v2-route-key"))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"id":"usr-` + hex48 + `","kind":null,"provider":"cloudflare","allocation":"cloudflare-shared",` +
		`"allocationRequest":{"provider":{"id":"cloudflare","account":"kilo"},"instanceType":"shared"},` +
		`"resources":{"vcpus":null,"memoryMiB":null,"diskMB":null},` +
		`"route":{"kind":"shared","routeKey":"usr-` + hex48 + `","suffix":"shared-slot-v1"},` +
		`"containerScope":"shared","containerLabel":"Shared container"}`
	v := r.View(allocation.DefaultPolicy())
	if got := recordJSON(t, v.Sandbox); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if got := recordJSON(t, v.Runtime); !strings.Contains(got, `"state":"retired","code":"sandbox_runtime_retired"`) ||
		!strings.Contains(got, "retired Cloudflare Sandbox runtime") {
		t.Errorf("runtime %s", got)
	}
}

// TestDecodeSessionShapes decodes every fixture of a stored session shape
// (section 6) and checks what the contract says each shows.
func TestDecodeSessionShapes(t *testing.T) {
	rows := []struct {
		fixture    string
		version    int
		legacy     bool
		id         string // "" shows null
		kind       string // "" shows null
		provider   string
		alloc      string // allocation name; "" shows null
		request    string // allocationRequest as JSON
		resources  string
		scope      string
		state      string
		code       string
		createdAt  string
		owner      string
		repository session.Repository
	}{
		{fixture: "session-v2-code-review", version: 2, legacy: false, id: "sbx-" + hex48, kind: "code-review", provider: "vercel",
			request: "null", resources: `{"vcpus":1,"memoryMiB":4096,"diskMB":8000}`, scope: "isolated", state: "allocated",
			createdAt: "2026-11-30T10:00:00Z", owner: `{"userId":"u1","orgId":null,"botId":null}`},
		{fixture: "session-v2-byoc", version: 2, legacy: false, id: "sbx-" + hex48, kind: "isolated", provider: "vercel",
			request: `{"provider":{"id":"vercel","account":"byoc"},"instanceType":"large"}`, resources: `{"vcpus":4,"memoryMiB":8192,"diskMB":null}`,
			scope: "isolated", state: "allocated", createdAt: "2026-11-30T10:00:00Z", owner: `{"userId":"u1","orgId":"org1","botId":"bot1"}`},
		{fixture: "session-v2-shared-sbx", version: 2, legacy: true, id: "sbx-" + hex48, kind: "shared", provider: "cloudflare", alloc: "cloudflare-shared",
			request: `{"provider":{"id":"cloudflare","account":"kilo"},"instanceType":"shared"}`, resources: `{"vcpus":null,"memoryMiB":null,"diskMB":null}`,
			scope: "shared", state: "retired", code: "sandbox_runtime_retired", createdAt: "2026-11-30T10:00:00Z"},
		{fixture: "session-v2-route-key", version: 2, legacy: true, id: "usr-" + hex48, provider: "cloudflare", alloc: "cloudflare-shared",
			request: `{"provider":{"id":"cloudflare","account":"kilo"},"instanceType":"shared"}`, resources: `{"vcpus":null,"memoryMiB":null,"diskMB":null}`,
			scope: "shared", state: "retired", code: "sandbox_runtime_retired", createdAt: "2026-11-30T10:00:00Z"},
		{fixture: "session-v2-owner-key", version: 2, legacy: true, id: "org_42__user_7", provider: "cloudflare", alloc: "cloudflare-shared",
			request: `{"provider":{"id":"cloudflare","account":"kilo"},"instanceType":"shared"}`, resources: `{"vcpus":null,"memoryMiB":null,"diskMB":null}`,
			scope: "shared", state: "retired", code: "sandbox_runtime_retired", createdAt: "2026-11-30T10:00:00Z", owner: `{"userId":"u1","orgId":"org_42","botId":null}`},
		{fixture: "session-v2-legacy-isolated", version: 2, legacy: true, id: "ses-" + hex48, provider: "cloudflare",
			request: "null", resources: `{"vcpus":null,"memoryMiB":null,"diskMB":null}`,
			scope: "isolated", state: "retired", code: "sandbox_runtime_retired", createdAt: "2026-11-30T10:00:00Z"},
		{fixture: "session-v2-cloudflare-single", version: 2, legacy: false, id: "sbx-" + hex48, kind: "isolated", provider: "cloudflare", alloc: "cloudflare-single",
			request: `{"provider":{"id":"cloudflare","account":"kilo"},"instanceType":"single"}`, resources: `{"vcpus":2,"memoryMiB":6144,"diskMB":10000}`,
			scope: "isolated", state: "retired", code: "sandbox_runtime_retired", createdAt: "2026-11-30T10:00:00Z"},
		// The current writer's shape but for the cloudflare-shared
		// allocation, which only legacy records hold.
		{fixture: "session-v2-shared-allocation", version: 2, legacy: true, id: "sbx-" + hex48, kind: "isolated", provider: "cloudflare", alloc: "cloudflare-shared",
			request: `{"provider":{"id":"cloudflare","account":"kilo"},"instanceType":"shared"}`, resources: `{"vcpus":null,"memoryMiB":null,"diskMB":null}`,
			scope: "isolated", state: "retired", code: "sandbox_runtime_retired", createdAt: "2026-11-30T10:00:00Z"},
		{fixture: "session-v2-sbx-no-kind", version: 2, legacy: true, id: "sbx-" + hex48, provider: "cloudflare",
			request: "null", resources: `{"vcpus":null,"memoryMiB":null,"diskMB":null}`,
			scope: "unknown", state: "retired", code: "sandbox_runtime_retired", createdAt: "2026-11-30T10:00:00Z"},
		{fixture: "session-v2-no-sandbox", version: 2, legacy: true, provider: "cloudflare",
			request: "null", resources: `{"vcpus":null,"memoryMiB":null,"diskMB":null}`,
			scope: "unknown", state: "retired", code: "sandbox_runtime_retired"},
		{fixture: "session-v2-unset-attributes", version: 2, legacy: false, id: "sbx-" + hex48, kind: "isolated", provider: "vercel", alloc: "vercel-small",
			request: `{"provider":{"id":"vercel","account":"kilo"},"instanceType":"small"}`, resources: `{"vcpus":2,"memoryMiB":4096,"diskMB":null}`,
			scope: "isolated", state: "allocated", createdAt: "2026-11-30T10:00:00Z"},
		{fixture: "session-v2-kilo-request-only", version: 2, legacy: false, id: "sbx-" + hex48, kind: "isolated", provider: "vercel", alloc: "vercel-small",
			request: `{"provider":{"id":"vercel","account":"kilo"},"instanceType":"small"}`, resources: `{"vcpus":2,"memoryMiB":4096,"diskMB":null}`,
			scope: "isolated", state: "allocated", createdAt: "2026-11-30T10:00:00Z"},
		{fixture: "session-v1-null-version-attributes", version: 1, legacy: true, id: "crv-" + hex48, provider: "cloudflare",
			request: "null", resources: `{"vcpus":null,"memoryMiB":null,"diskMB":null}`,
			scope: "isolated", state: "retired", code: "sandbox_runtime_retired", createdAt: "2023-11-14T22:13:20Z",
			owner: `{"userId":"u3","orgId":null,"botId":null}`},
		{fixture: "session-v1-flat", version: 1, legacy: true, id: "org_9__u1", provider: "cloudflare", alloc: "cloudflare-shared",
			request: `{"provider":{"id":"cloudflare","account":"kilo"},"instanceType":"shared"}`, resources: `{"vcpus":null,"memoryMiB":null,"diskMB":null}`,
			scope: "shared", state: "retired", code: "sandbox_runtime_retired", createdAt: "2023-11-14T22:13:20Z",
			owner: `{"userId":"u1","orgId":"org_9","botId":null}`, repository: session.Repository{Type: "github", Repo: "acme/app", Branch: "dev"}},
		{fixture: "session-v1-no-sandbox", version: 1, legacy: true, provider: "cloudflare",
			request: "null", resources: `{"vcpus":null,"memoryMiB":null,"diskMB":null}`,
			scope: "unknown", state: "retired", code: "sandbox_runtime_retired", createdAt: "2023-11-14T22:13:20Z",
			owner: `{"userId":"u2","orgId":null,"botId":null}`, repository: session.Repository{Type: "git", URL: "https://git.example.com/r.git"}},
	}
	null := func(s string) string {
		if s == "" {
			return "null"
		}
		return `"` + s + `"`
	}
	p := allocation.DefaultPolicy()
	for _, r := range rows {
		t.Run(r.fixture, func(t *testing.T) {
			rec, err := DecodeSession(fixture(t, "items", r.fixture))
			if err != nil {
				t.Fatal(err)
			}
			v := rec.View(p)
			sb := v.Sandbox
			check := func(what, got, want string) {
				t.Helper()
				if got != want {
					t.Errorf("%s = %s, want %s", what, got, want)
				}
			}
			check("schemaVersion", recordJSON(t, v.Record.SchemaVersion), recordJSON(t, r.version))
			check("legacy", recordJSON(t, v.Record.Legacy), recordJSON(t, r.legacy))
			check("id", recordJSON(t, sb.ID), null(r.id))
			check("kind", recordJSON(t, sb.Kind), null(r.kind))
			check("provider", string(sb.Provider), r.provider)
			check("allocation", recordJSON(t, sb.Allocation), null(r.alloc))
			check("allocationRequest", recordJSON(t, sb.AllocationRequest), r.request)
			check("resources", recordJSON(t, sb.Resources), r.resources)
			check("scope", string(sb.ContainerScope), r.scope)
			check("label", sb.ContainerLabel, allocation.Scope(r.scope).Label())
			check("state", v.Runtime.State, r.state)
			check("code", recordJSON(t, v.Runtime.Code), null(r.code))
			check("createdAt", recordJSON(t, v.CreatedAt), null(r.createdAt))
			if r.owner != "" {
				check("owner", recordJSON(t, v.Owner), r.owner)
			}
			if r.repository != (session.Repository{}) && rec.Repository != r.repository {
				t.Errorf("repository %+v", rec.Repository)
			}
			if strings.Contains(recordJSON(t, v), "secret-value") {
				t.Error("an unknown attribute is shown")
			}
		})
	}
}

// TestLegacyIsolatedPrefixes: ses-, istd-, crv- and dind- ids decode as
// isolated legacy records on cloudflare.
func TestLegacyIsolatedPrefixes(t *testing.T) {
	for _, prefix := range []string{"ses-", "istd-", "crv-", "dind-"} {
		item := fixture(t, "items", "session-v2-legacy-isolated")
		ws := item["metadata"].(*types.AttributeValueMemberM).Value["workspace"].(*types.AttributeValueMemberM).Value
		ws["sandboxId"] = S(prefix + hex48)
		rec, err := DecodeSession(item)
		if err != nil {
			t.Fatal(err)
		}
		sb := rec.SandboxView()
		if sb.ContainerScope != allocation.ScopeIsolated || sb.Provider != allocation.Cloudflare || sb.Allocation != nil || !rec.Legacy() {
			t.Errorf("%s: %s", prefix, recordJSON(t, sb))
		}
	}
}

// TestDecodeSessionInvalid: records that do not validate are typed errors, never
// panics, and carry the owner only when it can still be read, from where the
// record's version keeps it (never from an ignored top-level attribute of a
// version 2 record).
func TestDecodeSessionInvalid(t *testing.T) {
	rows := []struct {
		fixture string
		owner   string // the user id the error still knows
	}{
		{"invalid-version-3", "u1"},
		{"invalid-flat-with-version", "u1"},
		{"invalid-shared-kind-on-another-provider", "u1"},
		{"invalid-version-as-string", "u1"},
		{"invalid-metadata-without-version", "u1"},
		{"invalid-version-without-metadata", ""},
		{"invalid-session-id-differs", "u1"},
		{"invalid-unknown-kind", "u1"},
		{"invalid-unknown-provider", "u1"},
		{"invalid-unknown-allocation", "u1"},
		{"invalid-request-not-an-object", "u1"},
		{"invalid-allocation-disagrees-with-request", "u1"},
		{"invalid-allocation-disagrees-with-provider", "u1"},
		{"invalid-allocation-on-absent-provider", "u1"},
		{"invalid-wrong-type", ""},
		{"invalid-timestamp-type", "u1"},
		{"invalid-missing-user", ""},
		{"invalid-v1-missing-user", ""},
		{"invalid-kind-type", "u1"},
		{"invalid-provider-type", "u1"},
		{"invalid-allocation-type", "u1"},
		{"invalid-route-type", "u1"},
		{"invalid-request-type", "u1"},
		{"invalid-lifecycle-version-type", "u1"},
		{"invalid-metadata-type", ""},
		{"invalid-v2-without-identity", ""},
		{"invalid-v1-wrong-type", "u1"},
	}
	for _, r := range rows {
		t.Run(r.fixture, func(t *testing.T) {
			item := fixture(t, "items", r.fixture)
			_, err := DecodeSession(item)
			var ie *InvalidSessionError
			if !errors.As(err, &ie) {
				t.Fatalf("err = %v, want an InvalidSessionError", err)
			}
			if ie.UserID != r.owner {
				t.Errorf("owner %q, want %q (%s)", ie.UserID, r.owner, ie.Reason)
			}
			// The reason goes to the log, which never holds stored values.
			for _, v := range stringValues(item) {
				if len(v) > 3 && v != ie.SessionID && v != "SESSION#"+ie.SessionID && strings.Contains(ie.Reason, v) {
					t.Errorf("the reason %q shows the stored value %q", ie.Reason, v)
				}
			}
		})
	}
}

// TestSessionRoundTrip: what the current writer encodes decodes to the same
// record, marked current.
func TestSessionRoundTrip(t *testing.T) {
	byoc, _ := allocation.FromRequest(allocation.Request{Provider: allocation.RequestProvider{ID: allocation.Vercel, Account: allocation.AccountBYOC}, InstanceType: "small"})
	named, _ := allocation.ByName(allocation.ContainersStandard3)
	for _, rec := range []*session.Record{
		{SessionID: "workspace_a", SchemaVersion: 2, UserID: "u1", OrgID: "o1", BotID: "b1", CreatedOnPlatform: "web",
			Repository: session.Repository{Type: "gitlab", URL: "https://gitlab.com/a/b", Branch: "x"}, Agent: session.Agent{Mode: "code", Model: "m", Variant: "v"},
			CreatedAt: time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC),
			Sandbox:   session.Sandbox{ID: allocation.SandboxID("workspace_a"), Kind: allocation.KindIsolated, Provider: allocation.Vercel, ProviderStored: true, Allocation: byoc}},
		{SessionID: "workspace_b", SchemaVersion: 2, UserID: "u1", CreatedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
			Sandbox: session.Sandbox{ID: allocation.SandboxID("workspace_b"), Kind: allocation.KindIsolated, Provider: allocation.CloudflareContainers, ProviderStored: true, Allocation: named}},
		{SessionID: "workspace_c", SchemaVersion: 2, UserID: "u1", CreatedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
			Sandbox: session.Sandbox{ID: allocation.SandboxID("workspace_c"), Kind: allocation.KindCodeReview, Provider: allocation.CloudflareContainers, ProviderStored: true}},
	} {
		item := EncodeSession(rec)
		got, err := DecodeSession(item)
		if err != nil {
			t.Fatal(err)
		}
		if recordJSON(t, got) != recordJSON(t, rec) || got.Sandbox.Allocation != rec.Sandbox.Allocation || got.Legacy() {
			t.Errorf("round trip:\n got %+v\nwant %+v", got, rec)
		}
		ws := item["metadata"].(*types.AttributeValueMemberM).Value["workspace"].(*types.AttributeValueMemberM).Value
		_, hasName := ws["sandboxAllocation"]
		_, hasReq := ws["sandboxAllocationRequest"]
		a := rec.Sandbox.Allocation
		if hasName != (!a.IsZero() && !a.BYOC()) || hasReq != a.BYOC() {
			t.Errorf("%s: a named allocation is stored by name, a byoc one only as its request", rec.SessionID)
		}
	}
}

// FuzzDecodeSession: decoding never panics, on any item built from fuzzed DynamoDB
// JSON, and a record that decodes can always be shown.
func FuzzDecodeSession(f *testing.F) {
	entries, err := os.ReadDir(filepath.Join("testdata", "items"))
	if err != nil {
		f.Fatal(err)
	}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join("testdata", "items", e.Name()))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	p := allocation.DefaultPolicy()
	f.Fuzz(func(t *testing.T, data []byte) {
		item, err := localdb.UnmarshalItem(data)
		if err != nil {
			return
		}
		rec, err := DecodeSession(item)
		if err != nil {
			var ie *InvalidSessionError
			if !errors.As(err, &ie) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		if _, err := json.Marshal(rec.View(p)); err != nil {
			t.Fatal(err)
		}
	})
}

// stringValues lists every string value of an item, at any depth.
func stringValues(item Item) []string {
	var out []string
	var walk func(v types.AttributeValue)
	walk = func(v types.AttributeValue) {
		switch x := v.(type) {
		case *types.AttributeValueMemberS:
			out = append(out, x.Value)
		case *types.AttributeValueMemberM:
			for _, e := range x.Value {
				walk(e)
			}
		case *types.AttributeValueMemberL:
			for _, e := range x.Value {
				walk(e)
			}
		}
	}
	for _, v := range item {
		walk(v)
	}
	return out
}
