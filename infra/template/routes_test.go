package template_test

import (
	"context"
	"encoding/json/v2"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/getkin/kin-openapi/openapi3"

	"github.com/cloud-agent/control-plane/infra/local/apitest"
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
// a greedy {proxy+} below a function's routes. The hook routes alone go
// without the authorizer.
// hookPrefix is where the hook routes are, the only ones without the JWT
// authorizer (contract section 4, Callers).
const hookPrefix = "/v1/hooks/"

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
		if hook := strings.HasPrefix(r.Path, hookPrefix); r.JWT == hook {
			t.Errorf("template.yaml: %s (on %s): behind the JWT authorizer %t, want %t (only the hook routes go without it)", r.Key(), r.Function, r.JWT, !hook)
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
