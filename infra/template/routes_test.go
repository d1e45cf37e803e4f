package template_test

import (
	"context"
	"encoding/json/v2"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/awslabs/goformation/v7/intrinsics"
	"github.com/getkin/kin-openapi/openapi3"

	"github.com/cloud-agent/control-plane/infra/local/apitest"
	"github.com/cloud-agent/control-plane/infra/local/testkit"
	"github.com/cloud-agent/control-plane/infra/template"
	"github.com/cloud-agent/control-plane/shared/app"
	"github.com/cloud-agent/control-plane/shared/httpapi"
)

// TestRouteTable holds a route to the four places it lives in: Go (each
// function's routes as the functions are built, app.Functions.Routes),
// template.yaml (an HttpApi event on the same function), docs/openapi.yaml
// (the path's operation) and events/ (a valid sample event of the
// function, one that its router hands to that route). A route missing
// from any of them, or on another function, fails the test, named with
// where it is and where it is missing. The template's routes are checked
// as in AWS too: see checkTemplateRoutes.
func TestRouteTable(t *testing.T) {
	fns, err := template.LoadFunctions("../../template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	served := app.Build(app.Parts{}).Routes()
	tpl := apitest.TemplateRoutes(fns)
	for _, line := range apitest.RouteDiff(apitest.GoRoutes(served), tpl, documentRoutes(t), sampleRoutes(t, fns, served)) {
		t.Error(line)
	}
	checkTemplateRoutes(t, fns)
}

// checkTemplateRoutes: every route of the template, the ANY twins
// included, is behind the JWT authorizer, so that no route is reachable
// without a token; each path of a route has one ANY twin, on the same
// function, so that another method of the path reaches the function,
// which answers it 405 after the token (the contract's order); no route
// key is declared twice, and no ANY stands on a path without routes but
// a greedy {proxy+} below a function's routes. The hook routes and the
// runtime routes alone go without the authorizer.
func checkTemplateRoutes(t *testing.T, fns []template.Function) {
	t.Helper()
	seen := map[string]bool{}
	paths := map[string]string{} // the function of each path's routes
	twins := map[string][]string{}
	for _, r := range template.Routes(fns) {
		if seen[r.Key()] {
			t.Errorf("template.yaml: %s is declared twice", r.Key())
		}
		seen[r.Key()] = true
		if public := withoutJWT(r.Path); r.JWT == public {
			t.Errorf("template.yaml: %s (on %s): behind the JWT authorizer %t, want %t (only the hook and runtime routes go without it)", r.Key(), r.Function, r.JWT, !public)
		}
		if r.Method == "ANY" {
			twins[r.Path] = append(twins[r.Path], r.Function)
			continue
		}
		if fn, ok := paths[r.Path]; ok && fn != r.Function {
			t.Errorf("template.yaml: the routes of %s are on %s and %s", r.Path, fn, r.Function)
		}
		paths[r.Path] = r.Function
	}
	for _, path := range slices.Sorted(maps.Keys(paths)) {
		switch fns := twins[path]; {
		case len(fns) == 0:
			t.Errorf("template.yaml: %s has no ANY twin: add one on %s, the function of its routes", path, paths[path])
		case !slices.Equal(fns, []string{paths[path]}):
			t.Errorf("template.yaml: ANY %s is on %v, want %s alone, the function of its routes", path, fns, paths[path])
		}
	}
	for _, path := range slices.Sorted(maps.Keys(twins)) {
		if prefix, greedy := strings.CutSuffix(path, "{proxy+}"); greedy && slices.ContainsFunc(slices.Collect(maps.Keys(paths)), func(p string) bool {
			return strings.HasPrefix(p, prefix) && slices.Equal(twins[path], []string{paths[p]})
		}) {
			continue // the deeper paths of a function's routes, which it answers 404
		}
		if _, ok := paths[path]; !ok {
			t.Errorf("template.yaml: ANY %s (on %v) stands on a path without routes", path, twins[path])
		}
	}
}

// publicPrefixes are where the routes without the JWT authorizer are,
// each checking its callers itself: the hook routes, a delivery's proof
// (contract section 4, Callers), and the runtime routes, a session's own
// token (contract v7, "Hand-off to the execution plane").
var publicPrefixes = []string{"/v1/hooks/", "/v1/runtime/"}

// withoutJWT tells whether the route on path goes without the JWT
// authorizer.
func withoutJWT(path string) bool {
	return slices.ContainsFunc(publicPrefixes, func(p string) bool { return strings.HasPrefix(path, p) })
}

// documentRoutes are the operations of docs/openapi.yaml.
func documentRoutes(t *testing.T) apitest.RouteSet {
	t.Helper()
	doc, err := openapi3.NewLoader().LoadFromFile("../../docs/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	set := apitest.RouteSet{Source: "docs/openapi.yaml", Functions: map[string]string{}}
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			set.Add(method+" "+path, "")
		}
	}
	return set
}

// sampleRoutes are the routes of the valid sample events (those whose
// name does not say invalid), each on the function of its folder, as the
// function's router dispatches them. Every sample event of an API
// function must name in its routeKey one of the function's routes in
// template.yaml (an ANY twin for another method), and the route its router
// hands it to, if any.
func sampleRoutes(t *testing.T, fns []template.Function, served map[string][]httpapi.Route) apitest.RouteSet {
	t.Helper()
	set := apitest.RouteSet{Source: "events/ (a valid sample)", Functions: map[string]string{}}
	for _, fn := range fns {
		if len(fn.Routes) == 0 && served[fn.LogicalID] == nil {
			continue // not an API function: its events are not HTTP
		}
		declared := map[string]bool{}
		for _, r := range fn.Routes {
			declared[r.Key()] = true
		}
		files, err := filepath.Glob(filepath.Join("../../events", fn.LogicalID, "*.json"))
		if err != nil {
			t.Fatal(err)
		}
		for _, file := range files {
			name := strings.TrimPrefix(file, "../../")
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			var ev events.APIGatewayV2HTTPRequest
			if err := json.Unmarshal(data, &ev); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if !declared[ev.RouteKey] {
				t.Errorf("%s: routeKey %q is no route of %s in template.yaml", name, ev.RouteKey, fn.LogicalID)
			}
			route := dispatch(t, served[fn.LogicalID], ev)
			valid := !strings.Contains(filepath.Base(file), "invalid")
			switch {
			case route != "" && route != ev.RouteKey:
				t.Errorf("%s: routeKey %q, but %s's router hands it to %s", name, ev.RouteKey, fn.LogicalID, route)
			case route != "" && valid:
				set.Add(route, fn.LogicalID)
			case valid:
				t.Errorf("%s: a valid sample that %s's router hands to no route", name, fn.LogicalID)
			}
		}
	}
	return set
}

// dispatch is the route ("GET /v1/allocations") whose handler an API of
// routes calls with ev, or "" when the router answers it itself (404,
// 401, 405).
func dispatch(t *testing.T, routes []httpapi.Route, ev events.APIGatewayV2HTTPRequest) string {
	t.Helper()
	var called string
	var stubs []httpapi.Route
	for _, r := range routes {
		key := r.Method + " " + r.Pattern
		r.Handle = func(context.Context, *httpapi.Request) (httpapi.Response, error) {
			called = key
			return httpapi.Response{Status: 204}, nil
		}
		stubs = append(stubs, r)
	}
	if _, err := httpapi.New(slog.New(slog.DiscardHandler), stubs...).Handle(t.Context(), ev); err != nil {
		t.Fatal(err)
	}
	return called
}

// TestRuntimeRoutesThrottled: the contract throttles the runtime routes at
// a rate of 100 requests a second with bursts of 200, by route settings.
// The HttpApi's DefaultRouteSettings already throttle every route so, and
// RouteSettings would only override them: each runtime route's throttle
// (its RouteSettings entry, else the default) must be those. Mutations of
// the template that would change them must be refused. The routes are the
// template's as it is: the local stack's loader (goformation) cannot read
// a RouteSettings map, one more reason to keep the throttle in the
// defaults.
func TestRuntimeRoutesThrottled(t *testing.T) {
	written, err := os.ReadFile("../../template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	fns, err := template.LoadFunctions("../../template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	routes := template.Routes(fns)
	const defaults = "      DefaultRouteSettings:\n        ThrottlingBurstLimit: 200\n        ThrottlingRateLimit: 100\n"
	cases := []struct{ name, old, new string }{
		{name: "the template as it is"},
		{"a lower default rate", defaults, strings.Replace(defaults, "RateLimit: 100", "RateLimit: 10", 1)},
		{"no default throttle", defaults, ""},
		{"a claim's route settings above the contract's", defaults, defaults +
			"      RouteSettings:\n        POST /v1/runtime/sessions/{sessionId}/claim:\n          ThrottlingBurstLimit: 5000\n          ThrottlingRateLimit: 10000\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			text := string(written)
			if c.old != "" {
				if n := strings.Count(text, c.old); n != 1 {
					t.Fatalf("the mutation's text is %d times in the template, not once", n)
				}
				text = strings.Replace(text, c.old, c.new, 1)
			}
			long, err := template.ProcessYAML([]byte(text), &intrinsics.ProcessorOptions{NoProcess: true})
			if err != nil {
				t.Fatal(err)
			}
			api, _ := dig(decodeTemplate(t, string(long)), "Resources", "HttpApi", "Properties").(map[string]any)
			v := runtimeThrottles(api, routes)
			switch {
			case c.old == "" && len(v) > 0:
				t.Errorf("throttles:\n%s", strings.Join(v, "\n"))
			case c.old != "" && len(v) == 0:
				t.Error("the mutation passes")
			}
		})
	}
}

// runtimeThrottles reports each runtime route whose throttle, as the
// HttpApi's properties set it, is not a rate of 100 and a burst of 200,
// and a template without runtime routes.
func runtimeThrottles(api map[string]any, routes []template.Route) []string {
	var v []string
	n := 0
	for _, r := range routes {
		if !strings.HasPrefix(r.Path, "/v1/runtime/") {
			continue
		}
		n++
		settings := dig(api, "RouteSettings", r.Key())
		if settings == nil {
			settings = dig(api, "DefaultRouteSettings")
		}
		rate, burst := dig(settings, "ThrottlingRateLimit"), dig(settings, "ThrottlingBurstLimit")
		if testkit.JSON(rate) != "100" || testkit.JSON(burst) != "200" {
			v = append(v, fmt.Sprintf("%s: rate %v, burst %v, want 100 and 200", r.Key(), rate, burst))
		}
	}
	if n == 0 {
		v = append(v, "no runtime route")
	}
	return v
}
