package docs_test

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/getkin/kin-openapi/openapi3"
	"github.com/google/uuid"

	"github.com/cloud-agent/control-plane/infra/local/apitest"
	"github.com/cloud-agent/control-plane/infra/local/dynamotest"
	"github.com/cloud-agent/control-plane/infra/local/faultproxy"
	"github.com/cloud-agent/control-plane/infra/local/localdb"
	"github.com/cloud-agent/control-plane/shared/httpapi"
	"github.com/cloud-agent/control-plane/shared/lookup"
	"github.com/cloud-agent/control-plane/shared/session"
	"github.com/cloud-agent/control-plane/shared/settings"
	"github.com/cloud-agent/control-plane/shared/store"
	"github.com/cloud-agent/control-plane/shared/trigger"
	"github.com/cloud-agent/control-plane/shared/webhook"
)

func TestMain(m *testing.M) { dynamotest.Main(m) }

// The caller of every call, and bodies the create routes accept.
var (
	caller    = map[string]string{"sub": "u1", "org_ids": "o1"}
	startBase = map[string]any{
		"repository": map[string]any{"type": "github", "repo": "owner/name"},
		"agent":      map[string]any{"mode": "code", "model": "provider/model-name"},
	}
	triggerBase = map[string]any{
		"schedule":   map[string]any{"cron": "0 9 * * 1-5"},
		"repository": startBase["repository"],
		"agent":      startBase["agent"],
		"prompt":     "Update the dependencies.",
	}
)

// absent is an id that no table of these tests holds.
const absent = "absent_1"

func call(method, path string, body map[string]any) apitest.Call {
	c := apitest.Call{Method: method, Path: path, Claims: caller}
	if body != nil {
		c.Body = apitest.Body(body, nil)
	}
	return c
}

// with is base with members set.
func with(base, set map[string]any) map[string]any {
	m := maps.Clone(base)
	maps.Copy(m, set)
	return m
}

func start(set map[string]any) apitest.Call {
	return call("POST", "/v1/sessions", with(startBase, set))
}

func createTrigger(set map[string]any) apitest.Call {
	return call("POST", "/v1/triggers", with(triggerBase, set))
}

// allocating is a start body's member that names an allocation.
func allocating(allocation any) map[string]any {
	return map[string]any{"runtime": map[string]any{"sandboxAllocation": allocation}}
}

// ordinary is each route's request as a caller would send it, with ids in
// its path that no table holds.
var ordinary = map[string]apitest.Call{
	"POST /v1/sessions":                       start(nil),
	"GET /v1/sessions/{sessionId}/allocation": call("GET", "/v1/sessions/"+absent+"/allocation", nil),
	"GET /v1/allocations":                     call("GET", "/v1/allocations", nil),
	"POST /v1/triggers":                       createTrigger(nil),
	"GET /v1/triggers":                        call("GET", "/v1/triggers", nil),
	"GET /v1/triggers/{triggerId}":            call("GET", "/v1/triggers/"+absent, nil),
	"DELETE /v1/triggers/{triggerId}":         call("DELETE", "/v1/triggers/"+absent, nil),
	"PATCH /v1/triggers/{triggerId}":          call("PATCH", "/v1/triggers/"+absent, map[string]any{}),
	"GET /v1/triggers/{triggerId}/runs":       call("GET", "/v1/triggers/"+absent+"/runs", nil),
	"POST /v1/triggers/{triggerId}/run":       call("POST", "/v1/triggers/"+absent+"/run", nil),
	"POST /v1/triggers/{triggerId}/secret":    call("POST", "/v1/triggers/"+absent+"/secret", nil),
	"POST /v1/hooks/{triggerId}":              call("POST", "/v1/hooks/"+absentTrigger, map[string]any{}),
	"POST /v1/environments":                   createEnvironment(nil),
	"GET /v1/environments":                    call("GET", "/v1/environments", nil),
	"GET /v1/environments/{environmentId}":    call("GET", "/v1/environments/"+absent, nil),
	"PATCH /v1/environments/{environmentId}":  call("PATCH", "/v1/environments/"+absent, map[string]any{}),
	"DELETE /v1/environments/{environmentId}": call("DELETE", "/v1/environments/"+absent, nil),
}

func createEnvironment(set map[string]any) apitest.Call {
	return call("POST", "/v1/environments", with(map[string]any{"name": "Node"}, set))
}

// patchEnvironment stores an environment of u1 and returns a PATCH of it
// with body.
func patchEnvironment(t *testing.T, h *apitest.Harness, body map[string]any) apitest.Call {
	t.Helper()
	id := do(t, h, createEnvironment(map[string]any{"name": "Patched", "variables": map[string]any{"NPM_TOKEN": map[string]any{"value": "x", "secret": true}}}))["environmentId"].(string)
	return call("PATCH", "/v1/environments/"+id, body)
}

// absentTrigger is a trigger id that no table of these tests holds.
const absentTrigger = "trg_00000000-0000-4000-8000-000000000000"

// hookTrigger stores a webhook trigger of u1 (verify github, every event)
// and returns its id and secret.
func hookTrigger(t *testing.T, h *apitest.Harness) (string, string) {
	t.Helper()
	tr := &trigger.Trigger{
		ID: "trg_" + uuid.NewString(), UserID: "u1", Active: true, Prompt: "Review {{ event }}", Version: 1,
		Repository: session.Repository{Type: "github", Repo: "owner/name"}, Agent: session.Agent{Mode: "code", Model: "provider/model-name"},
		Webhook: &trigger.Webhook{Verify: webhook.VerifyGitHub, Secret: trigger.Secret{Version: 1, CreatedAt: time.Now()}}, CreatedAt: time.Now(),
	}
	if err := h.Triggers.Table.CreateTrigger(t.Context(), tr, 100); err != nil {
		t.Fatal(err)
	}
	secret, err := h.Secrets.Derive(t.Context(), tr.ID, 1)
	if err != nil {
		t.Fatal(err)
	}
	return tr.ID, secret
}

// delivery is a proven GitHub delivery of body to trigger id, with more
// headers.
func delivery(t *testing.T, id, secret, body string, more map[string]string) apitest.Call {
	t.Helper()
	headers, err := webhook.DeliveryProof(webhook.VerifyGitHub, secret, "", time.Now(), []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	maps.Copy(headers, more)
	return apitest.Call{Method: "POST", Path: "/v1/hooks/" + id, Headers: headers, Body: body}
}

// redelivered is a delivery that started a session, to send again once
// change has changed what its key's ledger row (whose partition key it
// is given) is judged by.
func redelivered(t *testing.T, h *apitest.Harness, change func(pk string)) apitest.Call {
	t.Helper()
	id, secret := hookTrigger(t, h)
	c := delivery(t, id, secret, `{"ref":"main"}`, map[string]string{"x-github-event": "push"})
	if r := h.Deliver(c); r.Status != 201 {
		t.Fatalf("the first delivery: %d %s", r.Status, r.Raw)
	}
	for _, it := range h.Items() {
		var item map[string]map[string]string
		if json.Unmarshal([]byte(it), &item) == nil && strings.HasPrefix(item["PK"]["S"], "OPERATION#") {
			change(item["PK"]["S"])
			return c
		}
	}
	t.Fatal("no ledger row")
	return c
}

// setMember sets a string member of the ledger row of partition key pk.
func setMember(t *testing.T, h *apitest.Harness, pk, name, value string) {
	t.Helper()
	if _, err := h.Client.UpdateItem(t.Context(), &dynamodb.UpdateItemInput{TableName: aws.String(h.Table),
		Key:                       map[string]types.AttributeValue{"PK": &types.AttributeValueMemberS{Value: pk}, "SK": &types.AttributeValueMemberS{Value: "LEDGER"}},
		UpdateExpression:          aws.String("SET #n = :v"),
		ExpressionAttributeNames:  map[string]string{"#n": name},
		ExpressionAttributeValues: map[string]types.AttributeValue{":v": &types.AttributeValueMemberS{Value: value}},
	}); err != nil {
		t.Fatal(err)
	}
}

// send sends a call to the API, or to the hook's for a webhook route.
func send(h *apitest.Harness, op string, c apitest.Call) apitest.Result {
	if strings.HasPrefix(op, "POST /v1/hooks/") {
		return h.Deliver(c)
	}
	return h.Do(c)
}

// callOf reports whether the call c is the route op's ("METHOD
// /pattern"): its method, and its path segment for segment but for the
// pattern's {parameters}.
func callOf(op string, c apitest.Call) bool {
	method, pattern, _ := strings.Cut(op, " ")
	path, _, _ := strings.Cut(c.Path, "?")
	ps, xs := strings.Split(pattern, "/"), strings.Split(path, "/")
	if c.Method != method || len(ps) != len(xs) {
		return false
	}
	for i, p := range ps {
		if !strings.HasPrefix(p, "{") && p != xs[i] {
			return false
		}
	}
	return true
}

// do sends a call that must succeed and returns its body.
func do(t *testing.T, h *apitest.Harness, c apitest.Call) map[string]any {
	t.Helper()
	r := h.Do(c)
	if r.Status >= 300 {
		t.Fatalf("%s %s: %d %s", c.Method, c.Path, r.Status, r.Raw)
	}
	return r.Body
}

// patchStored creates a trigger and returns a patch of it.
func patchStored(t *testing.T, h *apitest.Harness, body map[string]any) apitest.Call {
	id := do(t, h, createTrigger(nil))["triggerId"].(string)
	return call("PATCH", "/v1/triggers/"+id, body)
}

// runNow is POST /v1/triggers/{id}/run with the Idempotency-Key key.
func runNow(id, key string) apitest.Call {
	c := call("POST", "/v1/triggers/"+id+"/run", nil)
	c.Headers = map[string]string{"Idempotency-Key": key}
	return c
}

// noSelection lets no owner select an allocation.
func noSelection(h *apitest.Harness) {
	h.SetSettings([]settings.Parameter{{Name: "selection/owners", Type: "StringList", Value: "-"}})
}

// selectable makes names the allocations an owner may select.
func selectable(h *apitest.Harness, names string) {
	h.SetSettings([]settings.Parameter{{Name: "allocation/selectable", Type: "StringList", Value: names}})
}

// invalidSession is a session of u1 that does not decode: no schema
// version has this shape.
func invalidSession(id string) []byte {
	return fmt.Appendf(nil, `{"PK":{"S":"SESSION#%s"},"SK":{"S":"METADATA"},"metadataSchemaVersion":{"N":"3"},"userId":{"S":"u1"}}`, id)
}

// provoke prepares h so that the call it returns makes the API answer one
// problem.
type provoke func(t *testing.T, h *apitest.Harness) apitest.Call

func fixed(c apitest.Call) provoke {
	return func(*testing.T, *apitest.Harness) apitest.Call { return c }
}

// provokes are the calls that answer a route's problem, by route and code,
// where the route's ordinary request does not (see answer).
var provokes = map[string]provoke{
	"POST /v1/sessions invalid_request":             fixed(start(map[string]any{"agent": map[string]any{"mode": "code"}})),
	"POST /v1/sessions invalid_sandbox_allocation":  fixed(start(allocating("large"))),
	"POST /v1/sessions allocation_routing_conflict": fixed(start(map[string]any{"runtime": map[string]any{"sandboxAllocation": "vercel-small", "sandboxKind": "code-review"}})),
	"POST /v1/sessions forbidden":                   fixed(start(map[string]any{"orgId": "o9"})),
	"POST /v1/sessions sandbox_selection_disabled": func(t *testing.T, h *apitest.Harness) apitest.Call {
		noSelection(h)
		return start(allocating("vercel-small"))
	},
	"POST /v1/sessions not_found": func(t *testing.T, h *apitest.Harness) apitest.Call {
		c := start(map[string]any{"operationKey": "k"})
		id := do(t, h, c)["sessionId"].(string)
		_, err := h.Client.DeleteItem(t.Context(), &dynamodb.DeleteItemInput{TableName: aws.String(h.Table), Key: map[string]types.AttributeValue{
			"PK": &types.AttributeValueMemberS{Value: "SESSION#" + id}, "SK": &types.AttributeValueMemberS{Value: "METADATA"},
		}})
		if err != nil {
			t.Fatal(err)
		}
		return c
	},
	"POST /v1/sessions operation_key_reuse_mismatch": func(t *testing.T, h *apitest.Harness) apitest.Call {
		do(t, h, start(map[string]any{"operationKey": "k"}))
		return start(map[string]any{"operationKey": "k", "orgId": "o1"})
	},
	"POST /v1/sessions creation_in_progress": func(t *testing.T, h *apitest.Harness) apitest.Call {
		// Only an older writer leaves a row in progress.
		now := time.Now()
		h.Put(fmt.Appendf(nil, `{"PK":{"S":"OPERATION#u1#k"},"SK":{"S":"LEDGER"},"intent":{"S":"create_session"},"fingerprint":{"S":"f"},`+
			`"status":{"S":"in_progress"},"sessionId":{"S":"workspace_x"},"leaseUntil":{"N":"%d"},"createdAt":{"S":"%s"},"expiresAt":{"N":"%d"}}`,
			now.Add(time.Minute).UnixMilli(), now.UTC().Format(time.RFC3339), now.Add(time.Hour).Unix()))
		return start(map[string]any{"operationKey": "k"})
	},
	"POST /v1/sessions sandbox_allocation_retired": fixed(start(allocating("cloudflare-shared"))),
	"POST /v1/sessions sandbox_runtime_retired":    fixed(start(allocating("cloudflare-single"))),
	"POST /v1/sessions sandbox_allocation_unavailable": func(t *testing.T, h *apitest.Harness) apitest.Call {
		selectable(h, "vercel-small")
		return start(allocating("vercel-large"))
	},
	"POST /v1/sessions operation_key_payload_mismatch": func(t *testing.T, h *apitest.Harness) apitest.Call {
		do(t, h, start(map[string]any{"operationKey": "k"}))
		return start(map[string]any{"operationKey": "k", "initialTurn": map[string]any{"prompt": "Another task."}})
	},
	"POST /v1/sessions session_record_invalid": func(t *testing.T, h *apitest.Harness) apitest.Call {
		c := start(map[string]any{"operationKey": "k"})
		h.Put(invalidSession(do(t, h, c)["sessionId"].(string)))
		return c
	},
	"GET /v1/sessions/{sessionId}/allocation session_record_invalid": func(t *testing.T, h *apitest.Harness) apitest.Call {
		h.Put(invalidSession(absent))
		return ordinary["GET /v1/sessions/{sessionId}/allocation"]
	},
	"GET /v1/allocations invalid_request": fixed(call("GET", "/v1/allocations?orgId=a!b", nil)),
	"GET /v1/allocations forbidden":       fixed(call("GET", "/v1/allocations?orgId=o9", nil)),
	"GET /v1/allocations internal_error": func(t *testing.T, h *apitest.Harness) apitest.Call {
		// Listing reads no table: what can fail unexpectedly there is the
		// function itself, here one never given its settings.
		h.API = httpapi.New(slog.New(slog.DiscardHandler), (&lookup.Service{}).Routes()...)
		return ordinary["GET /v1/allocations"]
	},
	"POST /v1/triggers invalid_request":            fixed(createTrigger(map[string]any{"schedule": map[string]any{"cron": "0 9 * *"}})),
	"POST /v1/triggers invalid_sandbox_allocation": fixed(createTrigger(map[string]any{"sandboxAllocation": "large"})),
	"POST /v1/triggers forbidden":                  fixed(createTrigger(map[string]any{"orgId": "o9"})),
	"POST /v1/triggers sandbox_selection_disabled": func(t *testing.T, h *apitest.Harness) apitest.Call {
		noSelection(h)
		return createTrigger(map[string]any{"sandboxAllocation": "vercel-small"})
	},
	"POST /v1/triggers sandbox_allocation_retired": fixed(createTrigger(map[string]any{"sandboxAllocation": "cloudflare-shared"})),
	"POST /v1/triggers sandbox_runtime_retired":    fixed(createTrigger(map[string]any{"sandboxAllocation": "cloudflare-single"})),
	"POST /v1/triggers sandbox_allocation_unavailable": func(t *testing.T, h *apitest.Harness) apitest.Call {
		selectable(h, "vercel-small")
		return createTrigger(map[string]any{"sandboxAllocation": "vercel-large"})
	},
	"POST /v1/triggers trigger_limit_reached": func(t *testing.T, h *apitest.Harness) apitest.Call {
		for range 100 {
			do(t, h, createTrigger(nil))
		}
		return createTrigger(nil)
	},
	"GET /v1/triggers invalid_request": fixed(call("GET", "/v1/triggers?limit=0", nil)),
	"PATCH /v1/triggers/{triggerId} invalid_request": func(t *testing.T, h *apitest.Harness) apitest.Call {
		return patchStored(t, h, map[string]any{"orgId": "o1"})
	},
	"PATCH /v1/triggers/{triggerId} invalid_sandbox_allocation": func(t *testing.T, h *apitest.Harness) apitest.Call {
		return patchStored(t, h, map[string]any{"sandboxAllocation": "large"})
	},
	"PATCH /v1/triggers/{triggerId} sandbox_selection_disabled": func(t *testing.T, h *apitest.Harness) apitest.Call {
		c := patchStored(t, h, map[string]any{"sandboxAllocation": "vercel-small"})
		noSelection(h)
		return c
	},
	"PATCH /v1/triggers/{triggerId} sandbox_allocation_retired": func(t *testing.T, h *apitest.Harness) apitest.Call {
		return patchStored(t, h, map[string]any{"sandboxAllocation": "cloudflare-shared"})
	},
	"PATCH /v1/triggers/{triggerId} sandbox_runtime_retired": func(t *testing.T, h *apitest.Harness) apitest.Call {
		return patchStored(t, h, map[string]any{"sandboxAllocation": "cloudflare-single"})
	},
	"PATCH /v1/triggers/{triggerId} sandbox_allocation_unavailable": func(t *testing.T, h *apitest.Harness) apitest.Call {
		c := patchStored(t, h, map[string]any{"sandboxAllocation": "vercel-large"})
		selectable(h, "vercel-small")
		return c
	},
	"GET /v1/triggers/{triggerId}/runs invalid_request": fixed(call("GET", "/v1/triggers/"+absent+"/runs?limit=0", nil)),
	"POST /v1/triggers/{triggerId}/run invalid_request": fixed(call("POST", "/v1/triggers/a!b/run", nil)),
	"POST /v1/triggers/{triggerId}/run creation_in_progress": func(t *testing.T, h *apitest.Harness) apitest.Call {
		// Only an older writer leaves a row in progress.
		id := do(t, h, createTrigger(nil))["triggerId"].(string)
		now := time.Now()
		h.Put(fmt.Appendf(nil, `{"PK":{"S":"OPERATION#u1#trigger:%s:now:k"},"SK":{"S":"LEDGER"},"intent":{"S":"create_session"},"fingerprint":{"S":"f"},`+
			`"status":{"S":"in_progress"},"sessionId":{"S":"workspace_x"},"leaseUntil":{"N":"%d"},"createdAt":{"S":"%s"},"expiresAt":{"N":"%d"}}`,
			id, now.Add(time.Minute).UnixMilli(), now.UTC().Format(time.RFC3339), now.Add(time.Hour).Unix()))
		return runNow(id, "k")
	},
	"POST /v1/hooks/{triggerId} not_found":              fixed(call("POST", "/v1/hooks/"+absentTrigger+"/deeper", nil)),
	"POST /v1/hooks/{triggerId} unsupported_media_type": fixed(apitest.Call{Method: "POST", Path: "/v1/hooks/" + absentTrigger, Headers: map[string]string{"Content-Type": "image/png"}}),
	"POST /v1/hooks/{triggerId} invalid_request": func(t *testing.T, h *apitest.Harness) apitest.Call {
		id, secret := hookTrigger(t, h)
		return delivery(t, id, secret, "{}", map[string]string{"x-github-event": "push", "x-github-delivery": "not an id"})
	},
	"POST /v1/hooks/{triggerId} rate_limited": func(t *testing.T, h *apitest.Harness) apitest.Call {
		h.SetSettings([]settings.Parameter{{Name: "webhook/deliveries-per-minute", Type: "String", Value: "1"}})
		id, secret := hookTrigger(t, h)
		if r := h.Deliver(delivery(t, id, secret, `{"n":1}`, nil)); r.Status != 201 {
			t.Fatalf("the minute's first delivery: %d %s", r.Status, r.Raw)
		}
		return delivery(t, id, secret, `{"n":2}`, nil)
	},
	"POST /v1/hooks/{triggerId} sandbox_allocation_retired": func(t *testing.T, h *apitest.Harness) apitest.Call {
		return redelivered(t, h, func(pk string) { setMember(t, h, pk, "sandboxKind", "shared") })
	},
	"POST /v1/hooks/{triggerId} sandbox_runtime_retired": func(t *testing.T, h *apitest.Harness) apitest.Call {
		return redelivered(t, h, func(string) {
			h.SetSettings([]settings.Parameter{{Name: "provider/retired", Type: "StringList", Value: "cloudflare-containers"}})
		})
	},
	"POST /v1/hooks/{triggerId} operation_key_reuse_mismatch": func(t *testing.T, h *apitest.Harness) apitest.Call {
		return redelivered(t, h, func(pk string) { setMember(t, h, pk, "orgId", "o9") })
	},
	"POST /v1/environments invalid_request": fixed(createEnvironment(map[string]any{
		"variables": map[string]any{"NPM_TOKEN": map[string]any{"value": "ghp_abcdefghijklmnopqrstuvwxyz0123456789"}},
	})),
	"POST /v1/environments invalid_sandbox_allocation": fixed(createEnvironment(map[string]any{"sandboxAllocation": "large"})),
	"POST /v1/environments forbidden":                  fixed(createEnvironment(map[string]any{"orgId": "o9"})),
	"POST /v1/environments sandbox_selection_disabled": func(t *testing.T, h *apitest.Harness) apitest.Call {
		noSelection(h)
		return createEnvironment(map[string]any{"sandboxAllocation": "vercel-small"})
	},
	"POST /v1/environments sandbox_allocation_retired": fixed(createEnvironment(map[string]any{"sandboxAllocation": "cloudflare-shared"})),
	"POST /v1/environments sandbox_runtime_retired":    fixed(createEnvironment(map[string]any{"sandboxAllocation": "cloudflare-single"})),
	"POST /v1/environments sandbox_allocation_unavailable": func(t *testing.T, h *apitest.Harness) apitest.Call {
		selectable(h, "vercel-small")
		return createEnvironment(map[string]any{"sandboxAllocation": "vercel-large"})
	},
	"POST /v1/environments environment_name_taken": func(t *testing.T, h *apitest.Harness) apitest.Call {
		do(t, h, createEnvironment(nil))
		return createEnvironment(map[string]any{"name": "NODE"})
	},
	"POST /v1/environments environment_limit_reached": func(t *testing.T, h *apitest.Harness) apitest.Call {
		for i := range 100 {
			do(t, h, createEnvironment(map[string]any{"name": fmt.Sprint("env ", i)}))
		}
		return createEnvironment(nil)
	},
	"GET /v1/environments invalid_request": fixed(call("GET", "/v1/environments?limit=0", nil)),
	"GET /v1/environments forbidden":       fixed(call("GET", "/v1/environments?orgId=o9", nil)),
	"PATCH /v1/environments/{environmentId} invalid_request": func(t *testing.T, h *apitest.Harness) apitest.Call {
		return patchEnvironment(t, h, map[string]any{"variables": map[string]any{"NPM_TOKEN": map[string]any{"secret": false}}})
	},
	"PATCH /v1/environments/{environmentId} invalid_sandbox_allocation": func(t *testing.T, h *apitest.Harness) apitest.Call {
		return patchEnvironment(t, h, map[string]any{"sandboxAllocation": "large"})
	},
	"PATCH /v1/environments/{environmentId} sandbox_selection_disabled": func(t *testing.T, h *apitest.Harness) apitest.Call {
		c := patchEnvironment(t, h, map[string]any{"sandboxAllocation": "vercel-small"})
		noSelection(h)
		return c
	},
	"PATCH /v1/environments/{environmentId} sandbox_allocation_retired": func(t *testing.T, h *apitest.Harness) apitest.Call {
		return patchEnvironment(t, h, map[string]any{"sandboxAllocation": "cloudflare-shared"})
	},
	"PATCH /v1/environments/{environmentId} sandbox_runtime_retired": func(t *testing.T, h *apitest.Harness) apitest.Call {
		return patchEnvironment(t, h, map[string]any{"sandboxAllocation": "cloudflare-single"})
	},
	"PATCH /v1/environments/{environmentId} sandbox_allocation_unavailable": func(t *testing.T, h *apitest.Harness) apitest.Call {
		selectable(h, "vercel-small")
		return patchEnvironment(t, h, map[string]any{"sandboxAllocation": "vercel-large"})
	},
	"PATCH /v1/environments/{environmentId} environment_name_taken": func(t *testing.T, h *apitest.Harness) apitest.Call {
		do(t, h, createEnvironment(nil))
		return patchEnvironment(t, h, map[string]any{"name": "node"})
	},
	"DELETE /v1/environments/{environmentId} environment_in_use": func(t *testing.T, h *apitest.Harness) apitest.Call {
		id := do(t, h, createEnvironment(nil))["environmentId"].(string)
		h.SetItem("ENVIRONMENT#"+id, "ENVIRONMENT", "triggers", &types.AttributeValueMemberN{Value: "1"})
		return call("DELETE", "/v1/environments/"+id, nil)
	},
	"POST /v1/triggers/{triggerId}/run operation_key_payload_mismatch": func(t *testing.T, h *apitest.Harness) apitest.Call {
		id := do(t, h, createTrigger(nil))["triggerId"].(string)
		do(t, h, runNow(id, "k"))
		do(t, h, call("PATCH", "/v1/triggers/"+id, map[string]any{"prompt": "Another task."}))
		return runNow(id, "k")
	},
}

// answer makes the real handlers, on a fresh table, answer code on the
// route op. Codes that any route answers the same way come from the
// route's ordinary request: without a caller (unauthorized), with a method
// the path does not take, with a body over 256 KiB, with an id that is not
// one in the path (invalid_request) or that no table holds (not_found), on
// a table that does not exist (internal_error), or with the settings
// unreadable and every storage request throttled (service_unavailable).
func answer(t *testing.T, op, code string) apitest.Result {
	var h *apitest.Harness
	switch code {
	case "internal_error":
		b := dynamotest.Backends(t)[0]
		c := localdb.Client(b.URL, store.Counting)
		h = apitest.NewOn(t, c, c, "NoSuchTable")
	case "service_unavailable":
		var p *faultproxy.Proxy
		h, p = apitest.Faulty(t)
		p.InjectEvery("", 1, faultproxy.DynamoThrottle)
		h.BreakSettings()
	default:
		h = apitest.New(t, nil)
	}
	if f, ok := provokes[op+" "+code]; ok {
		c := f(t, h)
		// A call made to answer another method (405) or a path the route
		// does not take (404) is not the route's; any other is.
		if code != "method_not_allowed" && code != "not_found" && !callOf(op, c) {
			t.Fatalf("the call %s %s that answers %s is not of the route %s", c.Method, c.Path, code, op)
		}
		return send(h, op, c)
	}
	c, ok := ordinary[op]
	if !ok {
		t.Fatalf("no ordinary request for %s", op)
	}
	switch code {
	case "unauthorized":
		c.Claims = nil
	case "method_not_allowed":
		c.Method = "PUT"
	case "payload_too_large":
		c.Body = strings.Repeat(" ", 256<<10+1)
	case "invalid_request":
		c.Path = strings.Replace(c.Path, absent, "not.an.id", 1)
	case "not_found", "internal_error", "service_unavailable":
	default:
		t.Fatalf("no call makes %s answer %s: add one to provokes", op, code)
	}
	return send(h, op, c)
}

// TestProblemExamples holds every problem example of the document to what
// the API answers: for each route and example, the real handlers are made
// to answer the example's code on that route, and the answer must be the
// example, member for member, but for the request's id.
func TestProblemExamples(t *testing.T) {
	checkRouteKeys(t, "ordinary", ordinary)
	doc := load(t)
	operations(doc, func(op string, o *openapi3.Operation) {
		for status, r := range o.Responses.Map() {
			mt := r.Value.Content.Get("application/problem+json")
			if mt == nil {
				continue
			}
			for code, ex := range mt.Examples {
				t.Run(op+" "+status+" "+code, func(t *testing.T) {
					t.Parallel()
					want := roundTrip(t, ex.Value.Value)
					got := answer(t, op, code).Body
					for _, m := range []map[string]any{want, got} {
						if id, _ := m["requestId"].(string); id == "" {
							t.Errorf("no requestId in %v", m)
						}
						delete(m, "requestId")
					}
					for name := range with(want, got) { // the members of either
						if !reflect.DeepEqual(want[name], got[name]) {
							t.Errorf("%s: the example has %#v, the API answers %#v", name, want[name], got[name])
						}
					}
				})
			}
		}
	})
}

// roundTrip is an example's value as JSON decodes it.
func roundTrip(t *testing.T, v any) map[string]any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}
