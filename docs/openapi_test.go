package docs_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/cloud-agent/control-plane/infra/local/apitest"
	"github.com/cloud-agent/control-plane/infra/local/gateway"
	"github.com/cloud-agent/control-plane/infra/template"
	"github.com/cloud-agent/control-plane/shared/problem"
)

func load(t *testing.T) *openapi3.T {
	t.Helper()
	doc, err := openapi3.NewLoader().LoadFromFile("openapi.yaml")
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	return doc
}

func TestDocumentIsValid(t *testing.T) {
	doc := load(t)
	if doc.OpenAPI != "3.0.3" {
		t.Errorf("openapi = %q, want 3.0.3", doc.OpenAPI)
	}
	if err := doc.Validate(context.Background(), openapi3.EnableExamplesValidation()); err != nil {
		t.Fatalf("validate: %v", err)
	}
}

// checkRouteKeys fails unless the keys of table, a table of these tests
// by route ("GET /v1/allocations"), are template.yaml's routes, which
// TestRouteTable (infra/template) holds to Go, to this document and to
// events/.
func checkRouteKeys[V any](t *testing.T, name string, table map[string]V) {
	t.Helper()
	fns, err := template.LoadFunctions("../template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	keys := apitest.RouteSet{Source: name, Functions: map[string]string{}}
	for key := range table {
		keys.Add(key, "")
	}
	tpl := apitest.TemplateRoutes(fns)
	for _, line := range apitest.RouteDiff(tpl, keys) {
		t.Error(line)
	}
}

// public are the routes without the JWT authorizer: a delivery proves
// itself with its trigger's secret, the execution plane with a session's
// token.
var public = map[string]bool{"POST /v1/hooks/{triggerId}": true,
	"GET /v1/runtime/sessions/{sessionId}": true, "POST /v1/runtime/sessions/{sessionId}/claim": true, "POST /v1/runtime/sessions/{sessionId}/outcome": true}

// operations calls f for every operation of the document.
func operations(doc *openapi3.T, f func(name string, op *openapi3.Operation)) {
	for _, path := range doc.Paths.InMatchingOrder() {
		for method, op := range doc.Paths.Value(path).Operations() {
			f(method+" "+path, op)
		}
	}
}

func TestEveryRouteNeedsABearerToken(t *testing.T) {
	doc := load(t)
	scheme := doc.Components.SecuritySchemes["bearerAuth"]
	if scheme == nil || scheme.Value.Type != "http" || scheme.Value.Scheme != "bearer" || scheme.Value.BearerFormat != "JWT" {
		t.Fatalf("bearerAuth is not an HTTP bearer JWT scheme")
	}
	operations(doc, func(name string, op *openapi3.Operation) {
		security := doc.Security
		if op.Security != nil {
			security = *op.Security
		}
		if public[name] {
			if len(security) != 0 {
				t.Errorf("%s: security = %v, want none", name, security)
			}
			return
		}
		if len(security) != 1 || len(security[0]) != 1 || security[0]["bearerAuth"] == nil {
			t.Errorf("%s: security = %v, want bearerAuth only", name, security)
		}
	})
}

// wantStatuses are the statuses each route answers.
var wantStatuses = map[string][]int{
	"POST /v1/sessions":                             {200, 201, 400, 401, 403, 404, 405, 409, 413, 422, 500, 503},
	"GET /v1/sessions/{sessionId}/allocation":       {200, 400, 401, 404, 405, 413, 500, 503},
	"GET /v1/allocations":                           {200, 400, 401, 403, 405, 413, 500, 503},
	"POST /v1/triggers":                             {201, 400, 401, 403, 405, 413, 422, 500, 503},
	"GET /v1/triggers":                              {200, 400, 401, 405, 413, 500, 503},
	"GET /v1/triggers/{triggerId}":                  {200, 400, 401, 404, 405, 413, 500, 503},
	"DELETE /v1/triggers/{triggerId}":               {204, 400, 401, 404, 405, 413, 500, 503},
	"PATCH /v1/triggers/{triggerId}":                {200, 400, 401, 403, 404, 405, 413, 422, 500, 503},
	"GET /v1/triggers/{triggerId}/runs":             {200, 400, 401, 404, 405, 413, 500, 503},
	"POST /v1/triggers/{triggerId}/run":             {200, 201, 400, 401, 404, 405, 409, 413, 422, 500, 503},
	"POST /v1/triggers/{triggerId}/secret":          {200, 400, 401, 404, 405, 413, 500, 503},
	"POST /v1/hooks/{triggerId}":                    {200, 201, 202, 400, 401, 404, 405, 409, 413, 415, 422, 429, 500, 503},
	"POST /v1/environments":                         {201, 400, 401, 403, 405, 409, 413, 422, 500, 503},
	"GET /v1/environments":                          {200, 400, 401, 403, 405, 413, 500, 503},
	"GET /v1/environments/{environmentId}":          {200, 400, 401, 404, 405, 413, 500, 503},
	"PATCH /v1/environments/{environmentId}":        {200, 400, 401, 403, 404, 405, 409, 413, 422, 500, 503},
	"DELETE /v1/environments/{environmentId}":       {204, 400, 401, 404, 405, 409, 413, 500, 503},
	"GET /v1/runtime/sessions/{sessionId}":          {200, 401, 404, 405, 413, 422, 500, 503},
	"POST /v1/runtime/sessions/{sessionId}/claim":   {200, 400, 401, 404, 405, 409, 413, 500, 503},
	"POST /v1/runtime/sessions/{sessionId}/outcome": {200, 400, 401, 404, 405, 409, 413, 500, 503},
}

func TestResponses(t *testing.T) {
	checkRouteKeys(t, "wantStatuses", wantStatuses)
	doc := load(t)
	problemSchema := doc.Components.Schemas["Problem"].Value
	operations(doc, func(name string, op *openapi3.Operation) {
		var statuses []int
		for code, ref := range op.Responses.Map() {
			status, err := strconv.Atoi(code)
			if err != nil {
				t.Errorf("%s: response %q is not a status", name, code)
				continue
			}
			statuses = append(statuses, status)
			checkResponse(t, fmt.Sprintf("%s %d", name, status), status, ref.Value, problemSchema, doc.Components.Schemas)
		}
		slices.Sort(statuses)
		if want := wantStatuses[name]; !slices.Equal(statuses, want) {
			t.Errorf("%s: statuses = %v, want %v", name, statuses, want)
		}
	})
}

// gatewayAnswers are API Gateway's own answers that every operation lists
// beside the function's problem, by status: a body over the HTTP API's
// 10 MB payload quota (413), and an event over Lambda's 6 MB invocation
// limit (500). AWS labels the 413 "text; charset=utf-8", which is no media
// type: the document lists it as text/plain and says how AWS labels it.
// Neither carries Cache-Control.
var gatewayAnswers = map[int]struct {
	mediaType, contentType, schema, body, limit string
}{
	413: {"text/plain", "text; charset=utf-8", "GatewayText", "HTTP content length exceeded 10485760 bytes.", "10,485,760 bytes"},
	500: {"application/json", "application/json", "GatewayMessage", `{"message":"Internal Server Error"}`, "6,291,456 bytes"},
}

// gatewayBody is the body of the example of API Gateway's own answer
// under status in r, as it goes on the wire: a string as it is, anything
// else as JSON. ok is false when r lists no such example.
func gatewayBody(t *testing.T, r *openapi3.Response, status int) (body string, ok bool) {
	t.Helper()
	mt := r.Content.Get(gatewayAnswers[status].mediaType)
	if mt == nil || len(mt.Examples) != 1 || mt.Examples["gateway"] == nil {
		return "", false
	}
	v := mt.Examples["gateway"].Value.Value
	if s, isString := v.(string); isString {
		return s, true
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b), true
}

func checkResponse(t *testing.T, name string, status int, r *openapi3.Response, problemSchema *openapi3.Schema, schemas openapi3.Schemas) {
	t.Helper()
	gateway, fromGateway := gatewayAnswers[status]
	if cc := r.Headers["Cache-Control"]; cc == nil {
		t.Errorf("%s: no Cache-Control header", name)
	} else if cc.Value.Required == fromGateway {
		t.Errorf("%s: Cache-Control required = %v, want %v: API Gateway's own answers carry none", name, cc.Value.Required, !fromGateway)
	}
	wantHeaders := map[string]bool{
		// A start answers a replay with the session's Location too.
		"Location": status == 201 || name == "POST /v1/sessions 200",
		"Allow":    status == 405,
		// A delivery's 409 is a redelivery's operation_key_reuse_mismatch
		// only (its key's row is judged whatever its lease).
		// A 409 creation_in_progress may pass later; a hook's or an
		// environment's 409 will not.
		"Retry-After": status == 409 && (name == "POST /v1/sessions 409" || name == "POST /v1/triggers/{triggerId}/run 409") || status == 429 || status == 503,
	}
	for header, want := range wantHeaders {
		if got := r.Headers[header] != nil; got != want {
			t.Errorf("%s: %s header present = %v, want %v", name, header, got, want)
		}
	}
	if status == 204 {
		if len(r.Content) != 0 {
			t.Errorf("%s: a 204 has a body", name)
		}
		return
	}
	if status < 400 {
		mt := r.Content.Get("application/json")
		if mt == nil || len(r.Content) != 1 {
			t.Fatalf("%s: content is not application/json alone", name)
		}
		if len(mt.Examples) == 0 && mt.Example == nil {
			t.Errorf("%s: no example", name)
		}
		return
	}
	mt := r.Content.Get("application/problem+json")
	if fromGateway {
		if mt == nil || len(r.Content) != 2 || r.Content.Get(gateway.mediaType) == nil {
			t.Fatalf("%s: content is not application/problem+json and API Gateway's %s", name, gateway.mediaType)
		}
		if s := r.Content.Get(gateway.mediaType).Schema; s == nil || s.Value != schemas[gateway.schema].Value {
			t.Errorf("%s %s: schema is not %s", name, gateway.mediaType, gateway.schema)
		}
		if body, ok := gatewayBody(t, r, status); !ok || body != gateway.body {
			t.Errorf("%s %s: API Gateway's answer is %q, want the one example %q", name, gateway.mediaType, body, gateway.body)
		}
		for _, s := range []string{gateway.contentType, gateway.limit} {
			if !strings.Contains(strings.Join(strings.Fields(*r.Description), " "), s) {
				t.Errorf("%s: the description does not say %q", name, s)
			}
		}
	} else if mt == nil || len(r.Content) != 1 {
		t.Fatalf("%s: content is not application/problem+json alone", name)
	}
	if mt.Schema.Value != problemSchema {
		t.Errorf("%s: schema is not Problem", name)
	}
	if len(mt.Examples) == 0 {
		t.Errorf("%s: no example", name)
	}
	for key, ex := range mt.Examples {
		body, ok := ex.Value.Value.(map[string]any)
		if !ok {
			t.Errorf("%s %s: example is not an object", name, key)
			continue
		}
		code, _ := body["code"].(string)
		if key != code {
			t.Errorf("%s: example %q names code %q", name, key, code)
		}
		if got := problem.Code(code).Status(); got != status {
			t.Errorf("%s: example %q: code %s goes with status %d", name, key, code, got)
		}
		if got, _ := body["status"].(float64); int(got) != status {
			t.Errorf("%s: example %q: status member %v", name, key, body["status"])
		}
	}
}

// TestGatewayAnswersAreDocumented holds the document's answers of API
// Gateway itself to what the local gateway, which answers as AWS does,
// answers on each operation: a body one byte over 10,485,760 bytes is the
// 413, and a body within it whose event is over 6,291,456 bytes the 500,
// neither invoking the function. The status, the Content-Type and the body
// must be the document's, and there is no Cache-Control.
func TestGatewayAnswersAreDocumented(t *testing.T) {
	doc := load(t)
	fns, err := template.LoadFunctions("../template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	routes := template.Routes(fns)
	var invocations atomic.Int64
	gw := &gateway.Gateway{Routes: routes, Invoke: func(context.Context, string, []byte) ([]byte, error) {
		invocations.Add(1)
		return nil, errors.New("the function is not invoked over a limit")
	}}
	token := gateway.DevToken(map[string]any{"sub": caller["sub"], "org_ids": caller["org_ids"]})
	// The bodies, built once: allocating 10 MB is slow under the race
	// detector.
	bodies := map[int]string{}
	for status, size := range map[int]int{413: 10<<20 + 1, 500: 7 << 20} { // bytes of body
		bodies[status] = "{" + strings.Repeat(" ", size-2) + "}"
	}
	operations(doc, func(name string, op *openapi3.Operation) {
		c, ok := ordinary[name]
		if !ok {
			t.Fatalf("no ordinary request for %s", name)
		}
		for status, g := range gatewayAnswers {
			t.Run(fmt.Sprintf("%s %d", name, status), func(t *testing.T) {
				r := op.Responses.Status(status)
				if r == nil {
					t.Fatalf("no %d", status)
				}
				want, ok := gatewayBody(t, r.Value, status)
				if !ok {
					t.Fatalf("no example of API Gateway's %s answer", g.mediaType)
				}
				req := httptest.NewRequest(c.Method, c.Path, strings.NewReader(bodies[status]))
				req.Header.Set("Authorization", "Bearer "+token)
				req.Header.Set("Content-Type", "application/json")
				before := invocations.Load()
				w := httptest.NewRecorder()
				gw.ServeHTTP(w, req)
				res := w.Result()
				if res.StatusCode != status || res.Header.Get("Content-Type") != g.contentType || w.Body.String() != want {
					t.Errorf("the gateway answers %d %q %q, the document %d %q %q", res.StatusCode, res.Header.Get("Content-Type"), w.Body.String(), status, g.contentType, want)
				}
				if cc := res.Header.Get("Cache-Control"); cc != "" {
					t.Errorf("Cache-Control: %s", cc)
				}
				if invocations.Load() != before {
					t.Error("the function was invoked")
				}
			})
		}
	})
}

// checkExamples validates each example of a media type, parameter or header
// against its schema.
func checkExamples(t *testing.T, name string, schema *openapi3.SchemaRef, example any, examples openapi3.Examples, opts ...openapi3.SchemaValidationOption) int {
	t.Helper()
	values := map[string]any{}
	if example != nil {
		values["example"] = example
	}
	for key, ex := range examples {
		values[key] = ex.Value.Value
	}
	if len(values) > 0 && (schema == nil || schema.Value == nil) {
		t.Errorf("%s: examples without a schema", name)
		return 0
	}
	for key, v := range values {
		// Round-trip through JSON so that values are what a client sends.
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("%s %s: %v", name, key, err)
		}
		var decoded any
		if err := json.Unmarshal(b, &decoded); err != nil {
			t.Fatalf("%s %s: %v", name, key, err)
		}
		if err := schema.Value.VisitJSON(decoded, opts...); err != nil {
			t.Errorf("%s: example %q does not match its schema: %v", name, key, err)
		}
	}
	return len(values)
}

func TestEveryExampleMatchesItsSchema(t *testing.T) {
	doc := load(t)
	n := 0
	params := func(name string, ps openapi3.Parameters) {
		for _, p := range ps {
			n += checkExamples(t, name+" parameter "+p.Value.Name, p.Value.Schema, p.Value.Example, p.Value.Examples, openapi3.VisitAsRequest())
		}
	}
	for _, path := range doc.Paths.InMatchingOrder() {
		item := doc.Paths.Value(path)
		params(path, item.Parameters)
		for method, op := range item.Operations() {
			name := method + " " + path
			params(name, op.Parameters)
			if op.RequestBody != nil {
				for ct, mt := range op.RequestBody.Value.Content {
					n += checkExamples(t, name+" request "+ct, mt.Schema, mt.Example, mt.Examples, openapi3.VisitAsRequest())
				}
			}
			for code, r := range op.Responses.Map() {
				for ct, mt := range r.Value.Content {
					n += checkExamples(t, name+" "+code+" "+ct, mt.Schema, mt.Example, mt.Examples, openapi3.VisitAsResponse())
				}
				for h, hr := range r.Value.Headers {
					n += checkExamples(t, name+" "+code+" header "+h, hr.Value.Schema, hr.Value.Example, hr.Value.Examples, openapi3.VisitAsResponse())
				}
			}
		}
	}
	if n < 50 {
		t.Errorf("only %d examples were checked", n)
	}
}

// TestNullability holds the schemas to OpenAPI 3.0's null: `nullable` adds
// null to the `type` beside it and means nothing without one (a member
// that may be null and whose schema is a reference is a oneOf of it and
// NullValue), and a `not` that refuses a pattern names the type string, so
// that it does not refuse null and every other type as well.
func TestNullability(t *testing.T) {
	doc := load(t)
	var walk func(at string, s *openapi3.SchemaRef)
	walk = func(at string, s *openapi3.SchemaRef) {
		if s == nil || s.Ref != "" {
			return
		}
		v := s.Value
		if v.Nullable && v.Type == nil {
			t.Errorf("%s: nullable without a type", at)
		}
		if v.Not != nil && v.Not.Value.Pattern != "" && !v.Not.Value.Type.Is("string") {
			t.Errorf("%s: a not with a pattern and no type string", at)
		}
		for name, p := range v.Properties {
			walk(at+"."+name, p)
		}
		walk(at+"[]", v.Items)
		for i, x := range slices.Concat(v.AllOf, v.OneOf, v.AnyOf) {
			walk(fmt.Sprintf("%s/%d", at, i), x)
		}
	}
	for name, s := range doc.Components.Schemas {
		walk(name, s)
	}
}

// TestProblemCodes checks that the Problem schema's codes are the ones the
// service answers with.
func TestProblemCodes(t *testing.T) {
	doc := load(t)
	schema := doc.Components.Schemas["ProblemCode"].Value
	var codes []string
	for _, v := range schema.Enum {
		codes = append(codes, v.(string))
	}
	want := []problem.Code{
		problem.InvalidRequest, problem.PayloadTooLarge, problem.Unauthorized, problem.Forbidden,
		problem.NotFound, problem.MethodNotAllowed, problem.InvalidSandboxAllocation,
		problem.AllocationRoutingConflict, problem.SandboxAllocationRetired, problem.SandboxRuntimeRetired,
		problem.SandboxSelectionDisabled, problem.SandboxAllocationUnavailable,
		problem.OperationKeyReuseMismatch, problem.OperationKeyPayloadMismatch, problem.CreationInProgress,
		problem.TriggerLimitReached,
		problem.EnvironmentNameTaken, problem.EnvironmentInUse, problem.EnvironmentLimitReached, problem.EnvironmentNotFound,
		problem.OutcomeAlreadyRecorded, problem.SessionClaimed, problem.SessionEnded,
		problem.SessionRecordInvalid, problem.InternalError,
		problem.UnsupportedMediaType, problem.RateLimited, problem.ServiceUnavailable,
	}
	if len(codes) != len(want) {
		t.Fatalf("codes = %v, want %v", codes, want)
	}
	for i, c := range want {
		if codes[i] != string(c) {
			t.Errorf("code %d = %q, want %q", i, codes[i], c)
		}
	}
}

// TestRequestSchemas holds the request schemas to the contract's limits.
func TestRequestSchemas(t *testing.T) {
	doc := load(t)
	start := doc.Components.Schemas["StartSessionRequest"].Value
	trigger := doc.Components.Schemas["CreateTriggerRequest"].Value
	patch := doc.Components.Schemas["TriggerPatch"].Value
	rotation := doc.Components.Schemas["RotateSecretRequest"].Value
	const base = `"repository":{"type":"github","repo":"owner/name"},"agent":{"mode":"code","model":"m"}`
	const triggerBase = `"schedule":{"cron":"0 9 * * 1-5"},` + base + `,"prompt":"p"`
	tests := []struct {
		name   string
		schema *openapi3.Schema
		body   string
		ok     bool
	}{
		{"minimal start", start, `{` + base + `}`, true},
		{"every optional member null", start, `{"operationKey":null,"orgId":null,` + base + `,"initialTurn":null,"runtime":null,"createdOnPlatform":null}`, true},
		{"null inside runtime", start, `{` + base + `,"runtime":{"sandboxAllocation":null,"sandboxKind":null}}`, true},
		{"missing agent", start, `{"repository":{"type":"github","repo":"owner/name"}}`, false},
		{"unknown member", start, `{` + base + `,"extra":1}`, false},
		{"operation key of 128", start, `{"operationKey":"` + strings.Repeat("k", 128) + `",` + base + `}`, true},
		{"operation key of 129", start, `{"operationKey":"` + strings.Repeat("k", 129) + `",` + base + `}`, false},
		{"operation key reserved", start, `{"operationKey":"trigger:x",` + base + `}`, false},
		{"operation key bad character", start, `{"operationKey":"a/b",` + base + `}`, false},
		{"bad org id", start, `{"orgId":"a b",` + base + `}`, false},
		{"reserved platform", start, `{` + base + `,"createdOnPlatform":"scheduled"}`, false},
		{"empty platform", start, `{` + base + `,"createdOnPlatform":""}`, false},
		{"empty org id", start, `{"orgId":"",` + base + `}`, false},
		{"platform of 101", start, `{` + base + `,"createdOnPlatform":"` + strings.Repeat("p", 101) + `"}`, false},
		{"secret in model", start, `{"repository":{"type":"github","repo":"owner/name"},"agent":{"mode":"code","model":"ghp_x"}}`, false},
		{"secret in prompt is allowed", start, `{` + base + `,"initialTurn":{"prompt":"ghp_x"}}`, true},
		{"empty mode", start, `{"repository":{"type":"github","repo":"owner/name"},"agent":{"mode":"","model":"m"}}`, false},
		{"model of 201", start, `{"repository":{"type":"github","repo":"owner/name"},"agent":{"mode":"c","model":"` + strings.Repeat("m", 201) + `"}}`, false},
		{"bad repo", start, `{"repository":{"type":"github","repo":"owner"},"agent":{"mode":"c","model":"m"}}`, false},
		{"github with url", start, `{"repository":{"type":"github","url":"https://github.com/a/b"},"agent":{"mode":"c","model":"m"}}`, false},
		{"gitlab url", start, `{"repository":{"type":"gitlab","url":"https://gitlab.com/a/b"},"agent":{"mode":"c","model":"m"}}`, true},
		{"url with user info", start, `{"repository":{"type":"git","url":"https://u:p@host/a"},"agent":{"mode":"c","model":"m"}}`, false},
		{"url with query", start, `{"repository":{"type":"git","url":"https://host/a?x=1"},"agent":{"mode":"c","model":"m"}}`, false},
		{"http url", start, `{"repository":{"type":"git","url":"http://host/a"},"agent":{"mode":"c","model":"m"}}`, false},
		{"branch with slash", start, `{"repository":{"type":"github","repo":"o/n","branch":"feature/x"},"agent":{"mode":"c","model":"m"}}`, true},
		{"branch with space", start, `{"repository":{"type":"github","repo":"o/n","branch":"a b"},"agent":{"mode":"c","model":"m"}}`, false},
		{"branch starting with a dash", start, `{"repository":{"type":"github","repo":"o/n","branch":"-x"},"agent":{"mode":"c","model":"m"}}`, false},
		{"branch with a dash inside", start, `{"repository":{"type":"github","repo":"o/n","branch":"fix-1/a-b"},"agent":{"mode":"c","model":"m"}}`, true},
		{"branch component starting with a dot", start, `{"repository":{"type":"github","repo":"o/n","branch":"a/.b"},"agent":{"mode":"c","model":"m"}}`, false},
		{"empty branch component", start, `{"repository":{"type":"github","repo":"o/n","branch":"a//b"},"agent":{"mode":"c","model":"m"}}`, false},
		{"branch ending in dot", start, `{"repository":{"type":"github","repo":"o/n","branch":"a."},"agent":{"mode":"c","model":"m"}}`, false},
		{"allocation name", start, `{` + base + `,"runtime":{"sandboxAllocation":"cloudflare-shared"}}`, true},
		{"unknown allocation name", start, `{` + base + `,"runtime":{"sandboxAllocation":"large"}}`, false},
		{"byoc object", start, `{` + base + `,"runtime":{"sandboxAllocation":{"provider":{"id":"vercel","account":"byoc"},"instanceType":"small"}}}`, true},
		{"byoc on containers", start, `{` + base + `,"runtime":{"sandboxAllocation":{"provider":{"id":"cloudflare-containers","account":"byoc"},"instanceType":"standard-4"}}}`, false},
		{"object with an extra key", start, `{` + base + `,"runtime":{"sandboxAllocation":{"provider":{"id":"vercel","account":"kilo"},"instanceType":"small","x":1}}}`, false},
		{"unknown kind", start, `{` + base + `,"runtime":{"sandboxKind":"gpu"}}`, false},
		{"minimal trigger", trigger, `{` + triggerBase + `}`, true},
		{"trigger without prompt", trigger, `{"schedule":{"cron":"0 9 * * *"},` + base + `}`, false},
		{"trigger with every optional member", trigger, `{"orgId":"o1",` + triggerBase + `,"sandboxAllocation":"vercel-small","active":false}`, true},
		{"trigger with null members", trigger, `{"orgId":null,"schedule":{"cron":"0 9 * * *","timezone":null},` + base + `,"prompt":"p","sandboxAllocation":null,"active":null}`, true},
		{"local time zone", trigger, `{"schedule":{"cron":"0 9 * * *","timezone":"Local"},` + base + `,"prompt":"p"}`, false},
		{"empty time zone", trigger, `{"schedule":{"cron":"0 9 * * *","timezone":""},` + base + `,"prompt":"p"}`, false},
		{"trigger with sandboxKind", trigger, `{` + triggerBase + `,"runtime":{}}`, false},
		{"prompt of 100001", trigger, `{"schedule":{"cron":"0 9 * * *"},` + base + `,"prompt":"` + strings.Repeat("p", 100001) + `"}`, false},
		{"empty trigger prompt", trigger, `{"schedule":{"cron":"0 9 * * *"},` + base + `,"prompt":""}`, false},
		{"webhook trigger", trigger, `{"webhook":{},` + base + `,"prompt":"{{ body }}"}`, true},
		{"webhook trigger with every member", trigger, `{"webhook":{"verify":"standard","events":["push","pull_request.opened"],"secret":"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"},` + base + `,"prompt":"p"}`, true},
		{"token trigger with its header", trigger, `{"webhook":{"verify":"token","header":"X-Webhook-Secret","events":null},` + base + `,"prompt":"p"}`, true},
		{"schedule and webhook", trigger, `{"webhook":{},` + triggerBase + `}`, false},
		{"neither schedule nor webhook", trigger, `{` + base + `,"prompt":"p"}`, false},
		{"unknown verify", trigger, `{"webhook":{"verify":"gitlab"},` + base + `,"prompt":"p"}`, false},
		{"empty events", trigger, `{"webhook":{"events":[]},` + base + `,"prompt":"p"}`, false},
		{"an event twice", trigger, `{"webhook":{"events":["push","push"]},` + base + `,"prompt":"p"}`, false},
		{"a bad event", trigger, `{"webhook":{"events":["a:b"]},` + base + `,"prompt":"p"}`, false},
		{"GitLab's event names", trigger, `{"webhook":{"verify":"token","events":["Push Hook","Merge Request Hook.merge"]},` + base + `,"prompt":"p"}`, true},
		{"an event with two spaces in a row", trigger, `{"webhook":{"events":["Push  Hook"]},` + base + `,"prompt":"p"}`, false},
		{"an event with a space last", trigger, `{"webhook":{"events":["Push "]},` + base + `,"prompt":"p"}`, false},
		{"an event of 101", trigger, `{"webhook":{"events":["` + strings.Repeat("a b ", 25) + `a"]},` + base + `,"prompt":"p"}`, false},
		{"patched GitLab event names", patch, `{"webhook":{"events":["Note Hook"]}}`, true},
		{"patched event with a tab", patch, `{"webhook":{"events":["Note\tHook"]}}`, false},
		{"a header with an underscore", trigger, `{"webhook":{"verify":"token","header":"X_Secret"},` + base + `,"prompt":"p"}`, false},
		{"an unknown webhook member", trigger, `{"webhook":{"url":"/v1/hooks/x"},` + base + `,"prompt":"p"}`, false},
		{"patched events", patch, `{"webhook":{"events":["push"]}}`, true},
		{"patched events null", patch, `{"webhook":{"events":null}}`, true},
		{"patched verify", patch, `{"webhook":{"verify":"github"}}`, false},
		{"patched empty events", patch, `{"webhook":{"events":[]}}`, false},
		{"a rotation", rotation, `{}`, true},
		{"a rotation importing a secret", rotation, `{"secret":"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}`, true},
		{"a rotation with another member", rotation, `{"version":2}`, false},
		{"a rotation with a secret without whsec_", rotation, `{"secret":"MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}`, false},
		{"empty patch", patch, `{}`, true},
		{"pause", patch, `{"active":false}`, true},
		{"every member", patch, `{"active":true,"schedule":{"cron":"0 9 * * *","timezone":"Europe/Berlin"},` + base + `,"prompt":"p","sandboxAllocation":"vercel-small"}`, true},
		{"partial members", patch, `{"schedule":{"timezone":"UTC"},"repository":{"branch":"dev"},"agent":{"model":"m2"}}`, true},
		{"null removes optional members", patch, `{"schedule":{"timezone":null},"repository":{"branch":null},"agent":{"variant":null},"sandboxAllocation":null}`, true},
		{"another repository type", patch, `{"repository":{"type":"gitlab","repo":null,"url":"https://gitlab.com/a/b"}}`, true},
		{"byoc object in a patch", patch, `{"sandboxAllocation":{"provider":{"id":"vercel","account":"byoc"},"instanceType":"large"}}`, true},
		{"part of an allocation object, merged into the saved one", patch, `{"sandboxAllocation":{"instanceType":"large"}}`, true},
		{"unknown instance type in a patch", patch, `{"sandboxAllocation":{"instanceType":"huge"}}`, false},
		{"extra key of an allocation object in a patch", patch, `{"sandboxAllocation":{"instanceType":"large","x":1}}`, false},
		{"org id in a patch", patch, `{"orgId":"o1"}`, false},
		{"null org id in a patch", patch, `{"orgId":null}`, false},
		{"unknown member in a patch", patch, `{"runtime":{}}`, false},
		{"read-only member in a patch", patch, `{"nextRunAt":"2026-12-01T08:00:00Z"}`, false},
		{"null prompt", patch, `{"prompt":null}`, false},
		{"null active", patch, `{"active":null}`, false},
		{"null schedule", patch, `{"schedule":null}`, false},
		{"null cron", patch, `{"schedule":{"cron":null}}`, false},
		{"null repository", patch, `{"repository":null}`, false},
		{"null repository type", patch, `{"repository":{"type":null}}`, false},
		{"null agent", patch, `{"agent":null}`, false},
		{"null model", patch, `{"agent":{"model":null}}`, false},
		{"empty patch prompt", patch, `{"prompt":""}`, false},
		{"patch prompt of 100001", patch, `{"prompt":"` + strings.Repeat("p", 100001) + `"}`, false},
		{"secret in a patched model", patch, `{"agent":{"model":"ghp_x"}}`, false},
		{"secret in a patched prompt is allowed", patch, `{"prompt":"ghp_x"}`, true},
		{"url with user info in a patch", patch, `{"repository":{"url":"https://u:p@host/a"}}`, false},
		{"bad branch in a patch", patch, `{"repository":{"branch":"a b"}}`, false},
		{"local time zone in a patch", patch, `{"schedule":{"timezone":"Local"}}`, false},
		{"unknown member of a patched schedule", patch, `{"schedule":{"seconds":"0"}}`, false},
		{"unknown allocation name in a patch", patch, `{"sandboxAllocation":"large"}`, false},
		{"allocation of another type", patch, `{"sandboxAllocation":1}`, false},
		{"patch is not an object", patch, `[]`, false},
	}
	// The reserved trigger: prefix and the credential markers are in the
	// parameter's description: a header schema cannot use "not".
	key := doc.Components.Parameters["IdempotencyKey"].Value.Schema.Value
	for _, k := range []string{"", "a/b", strings.Repeat("k", 129)} {
		if key.VisitJSON(k) == nil {
			t.Errorf("Idempotency-Key %q is valid", k)
		}
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var v any
			if err := json.Unmarshal([]byte(tt.body), &v); err != nil {
				t.Fatal(err)
			}
			err := tt.schema.VisitJSON(v, openapi3.VisitAsRequest(), openapi3.MultiErrors())
			if (err == nil) != tt.ok {
				t.Errorf("valid = %v, want %v: %v", err == nil, tt.ok, err)
			}
		})
	}
}

// TestTriggerPatchMediaTypes: a trigger patch is a JSON merge patch, sent as
// application/merge-patch+json or application/json, both the same schema.
func TestTriggerPatchMediaTypes(t *testing.T) {
	doc := load(t)
	op := doc.Paths.Value("/v1/triggers/{triggerId}").Patch
	if op == nil || op.RequestBody == nil || !op.RequestBody.Value.Required {
		t.Fatal("PATCH /v1/triggers/{triggerId} has no required body")
	}
	content := op.RequestBody.Value.Content
	want := doc.Components.Schemas["TriggerPatch"].Value
	if len(content) != 2 {
		t.Errorf("media types %v, want application/merge-patch+json and application/json", slices.Collect(maps.Keys(content)))
	}
	for _, ct := range []string{"application/merge-patch+json", "application/json"} {
		mt := content.Get(ct)
		if mt == nil || mt.Schema == nil || mt.Schema.Value != want {
			t.Errorf("%s: schema is not TriggerPatch", ct)
		}
	}
}

// TestTriggerRuns holds a run to the contract: every member present, the
// times in whole seconds UTC, the status one of the trigger's, its outcome
// null or an outcome.
func TestTriggerRuns(t *testing.T) {
	doc := load(t)
	list := doc.Components.Schemas["TriggerRunList"].Value
	const run = `"kind":"scheduled","slot":"2026-12-01T08:00:00Z","status":"fired","sessionId":"workspace_1","error":null,"recordedAt":"2026-12-01T08:00:02Z","outcome":null`
	tests := []struct {
		name string
		body string
		ok   bool
	}{
		{"a run", `{"items":[{` + run + `}],"nextCursor":null}`, true},
		{"a manual run", `{"items":[{"kind":"manual","slot":"2026-12-01T08:03:17Z","status":"fired","sessionId":"workspace_1","error":null,"recordedAt":"2026-12-01T08:03:17Z","outcome":null}],"nextCursor":null}`, true},
		{"an unknown kind", `{"items":[{"kind":"retry","slot":"2026-12-01T08:00:00Z","status":"fired","sessionId":"workspace_1","error":null,"recordedAt":"2026-12-01T08:00:02Z","outcome":null}],"nextCursor":null}`, false},
		{"a failed run", `{"items":[{"kind":"manual","slot":"2026-12-01T08:00:00Z","status":"failed","sessionId":null,"error":"sandbox_selection_disabled","recordedAt":"2026-12-01T08:00:02Z","outcome":null}],"nextCursor":"c"}`, true},
		{"no runs", `{"items":[],"nextCursor":null}`, true},
		{"a run with its outcome", `{"items":[{` + strings.Replace(run, `"outcome":null`, `"outcome":{"status":"failed","error":{"code":"tests_failed","message":"3 failed."},"endedAt":"2026-12-01T08:41:10Z","reportedAt":"2026-12-01T08:41:12Z"}`, 1) + `}],"nextCursor":null}`, true},
		{"an unknown outcome", `{"items":[{` + strings.Replace(run, `"outcome":null`, `"outcome":{"status":"running","error":null,"endedAt":"2026-12-01T08:41:10Z","reportedAt":"2026-12-01T08:41:12Z"}`, 1) + `}],"nextCursor":null}`, false},
		{"no outcome member", `{"items":[{` + strings.Replace(run, `,"outcome":null`, ``, 1) + `}],"nextCursor":null}`, false},
		{"no nextCursor", `{"items":[]}`, false},
		{"a member left out", `{"items":[{"slot":"2026-12-01T08:00:00Z","status":"fired","sessionId":"s","recordedAt":"2026-12-01T08:00:02Z","outcome":null}],"nextCursor":null}`, false},
		{"an extra member", `{"items":[{` + run + `,"triggerId":"trg_1"}],"nextCursor":null}`, false},
		{"an unknown status", `{"items":[{"slot":"2026-12-01T08:00:00Z","status":"skipped","sessionId":null,"error":null,"recordedAt":"2026-12-01T08:00:02Z","outcome":null}],"nextCursor":null}`, false},
		{"a null status", `{"items":[{"slot":"2026-12-01T08:00:00Z","status":null,"sessionId":null,"error":null,"recordedAt":"2026-12-01T08:00:02Z","outcome":null}],"nextCursor":null}`, false},
		{"fractional seconds", `{"items":[{"slot":"2026-12-01T08:00:00.5Z","status":"fired","sessionId":"s","error":null,"recordedAt":"2026-12-01T08:00:02Z","outcome":null}],"nextCursor":null}`, false},
		{"an unknown error code", `{"items":[{"slot":"2026-12-01T08:00:00Z","status":"failed","sessionId":null,"error":"boom","recordedAt":"2026-12-01T08:00:02Z","outcome":null}],"nextCursor":null}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var v any
			if err := json.Unmarshal([]byte(tt.body), &v); err != nil {
				t.Fatal(err)
			}
			err := list.VisitJSON(v, openapi3.VisitAsResponse(), openapi3.MultiErrors())
			if (err == nil) != tt.ok {
				t.Errorf("valid = %v, want %v: %v", err == nil, tt.ok, err)
			}
		})
	}
	params := doc.Paths.Value("/v1/triggers/{triggerId}/runs").Get.Parameters
	limit, cursor := params.GetByInAndName("query", "limit"), params.GetByInAndName("query", "cursor")
	if limit == nil || cursor == nil {
		t.Fatal("GET /v1/triggers/{triggerId}/runs takes no limit or no cursor")
	}
	s := limit.Schema.Value
	if s.Min == nil || *s.Min != 1 || s.Max == nil || *s.Max != 100 || s.Default != float64(50) {
		t.Errorf("limit: minimum %v, maximum %v, default %v, want 1, 100, 50", s.Min, s.Max, s.Default)
	}
	if o := params.GetByInAndName("query", "outcome"); o == nil || fmt.Sprint(o.Schema.Value.Enum) != "[running completed failed interrupted timed_out]" {
		t.Errorf("outcome: %+v, want the enum of running and the outcomes' statuses", o)
	}
}
