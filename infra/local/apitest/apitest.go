// Package apitest runs the API's handlers, as the functions wire them
// (app.Build, its routes held to template.yaml's), on a real table of the
// embedded DynamoDB endpoint (or another backend) with settings from the
// local SSM stand-in, and calls them with payload 2.0 events the way the
// gateway builds them.
package apitest

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"log/slog"
	"maps"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/cloud-agent/control-plane/infra/local/dynamotest"
	"github.com/cloud-agent/control-plane/infra/local/faultproxy"
	"github.com/cloud-agent/control-plane/infra/local/kms"
	"github.com/cloud-agent/control-plane/infra/local/localdb"
	"github.com/cloud-agent/control-plane/infra/local/paramstore"
	"github.com/cloud-agent/control-plane/infra/template"
	"github.com/cloud-agent/control-plane/shared/app"
	"github.com/cloud-agent/control-plane/shared/commit"
	"github.com/cloud-agent/control-plane/shared/environmentapi"
	"github.com/cloud-agent/control-plane/shared/firing"
	"github.com/cloud-agent/control-plane/shared/hook"
	"github.com/cloud-agent/control-plane/shared/httpapi"
	"github.com/cloud-agent/control-plane/shared/invocation"
	"github.com/cloud-agent/control-plane/shared/runtimeapi"
	"github.com/cloud-agent/control-plane/shared/secrets"
	"github.com/cloud-agent/control-plane/shared/session"
	"github.com/cloud-agent/control-plane/shared/settings"
	"github.com/cloud-agent/control-plane/shared/store"
	"github.com/cloud-agent/control-plane/shared/triggerapi"
)

// ConfigPath is the settings path the harness serves.
const ConfigPath = "/cloud-agent/test"

// The Function dimension of the harness's API and of its firing, each an
// execution environment of its own.
const (
	APIFunction    = "api"
	FiringFunction = "firing"
	HookFunction   = "hook"
)

// Harness is the API over a fresh table.
type Harness struct {
	t        testing.TB
	API      *httpapi.API
	Client   *dynamodb.Client
	Table    string
	Start    *commit.Executor
	Triggers *triggerapi.Service
	Firing   *firing.Firing
	// Hooks are the webhook deliveries. API serves them with every other
	// route; HookAPI (Deliver) serves them alone, as the hook function's
	// own execution environment, under its own Function dimension.
	Hooks   *hook.Service
	HookAPI *httpapi.API
	// Secrets are the webhook secrets' keys on KMS, the local stand-in
	// with keys made for the test, whose requests it counts.
	Secrets *secrets.Keys
	// Environments are the environment routes, their secret variables
	// sealed on the same stand-in.
	Environments *environmentapi.Service
	// Runtime are the runtime routes; Tokens derive the sessions' tokens
	// on the same stand-in, as the session events function does.
	Runtime  *runtimeapi.Service
	Tokens   *secrets.SessionTokens
	KMS      *kms.TestServer
	settings string
	logs     *syncBuffer
}

// New builds the API on a fresh table of the backend (the embedded one when
// b is nil), through a client with the given options.
func New(t testing.TB, b *dynamotest.Backend, optFns ...func(*dynamodb.Options)) *Harness {
	t.Helper()
	if b == nil {
		b = &dynamotest.Backends(t)[0]
	}
	c, name := dynamotest.Table(t, *b)
	return NewOn(t, localdb.Client(b.Endpoint(t), append([]func(*dynamodb.Options){store.Counting}, optFns...)...), c, name)
}

// NewOn builds the API over table name, reached by api (which may go
// through a fault proxy), while direct reaches the same table straight;
// the settings' SSM client takes the given options. The API serves every
// function's routes (app.Functions.Routes) at once, and fails the test first
// when they are not template.yaml's, function by function: a route that
// only Go serves would pass here and be dead in AWS.
func NewOn(t testing.TB, api, direct *dynamodb.Client, name string, ssmOpts ...func(*ssm.Options)) *Harness {
	t.Helper()
	h := &Harness{t: t, Client: direct, Table: name, settings: filepath.Join(t.TempDir(), "settings.json"), logs: &syncBuffer{}}
	h.SetSettings(nil)
	ssmSrv := httptest.NewServer(&paramstore.Server{File: h.settings, Path: ConfigPath})
	t.Cleanup(ssmSrv.Close)
	sm := ssm.New(ssm.Options{Region: "us-east-1", BaseEndpoint: aws.String(ssmSrv.URL),
		Credentials: credentials.NewStaticCredentialsProvider("local", "local", "")}, ssmOpts...)
	log := slog.New(slog.NewJSONHandler(h.logs, nil))
	// Settings are read at every request, so that a test can change them.
	cfg := settings.New(sm, ConfigPath, time.Nanosecond)
	tbl := store.New(api, name)
	h.KMS = kms.NewTestServer(t, stackKeys(t))
	h.Secrets = secrets.New(kms.Client(h.KMS.URL), "alias/WebhookKey", "alias/WebhookSecretsKey")
	h.Tokens = secrets.NewSessionTokens(kms.Client(h.KMS.URL), "alias/SessionTokenKey")
	built := app.Build(app.Parts{Log: log, Table: tbl, Settings: cfg, Secrets: h.Secrets,
		Variables: secrets.NewVariables(kms.Client(h.KMS.URL), "alias/EnvironmentSecretsKey"),
		Tokens:    h.Tokens, SecretsKey: h.KMS.Keys.Key("EnvironmentSecretsKey").ARN(),
		Metrics: invocation.NewMetrics(FiringFunction, "$LATEST")})
	h.Start, h.Triggers, h.Hooks, h.Firing, h.Environments, h.Runtime = built.Start, built.Triggers, built.Hooks, built.Firing, built.Environments, built.Runtime
	h.HookAPI = httpapi.New(log, h.Hooks.Routes()...).WithMetrics(invocation.NewMetrics(HookFunction, "$LATEST"))
	fns := built.Routes()
	tpl, err := templateRoutes()
	if err != nil {
		t.Fatal(err)
	}
	if diff := RouteDiff(GoRoutes(fns), tpl); diff != nil {
		t.Fatalf("the functions' routes are not template.yaml's:\n%s", strings.Join(diff, "\n"))
	}
	var routes []httpapi.Route
	for _, id := range slices.Sorted(maps.Keys(fns)) {
		routes = append(routes, fns[id]...)
	}
	h.API = httpapi.New(log, routes...).WithMetrics(invocation.NewMetrics(APIFunction, "$LATEST"))
	return h
}

var (
	keysOnce sync.Once
	keys     *kms.Keys
	keysErr  error
)

// stackKeys are the KMS keys of every harness of a test binary, as one
// stack's functions share them: a secret one harness's triggers made is
// the one another's hook derives. Each harness serves them on a stand-in
// of its own, which counts and records its own requests.
func stackKeys(t testing.TB) *kms.Keys {
	keysOnce.Do(func() { keys, keysErr = kms.Generate() })
	if keysErr != nil {
		t.Fatal(keysErr)
	}
	return keys
}

// RouteSet is the routes one source knows: the function that serves each,
// by its route key ("GET /v1/allocations"), or "" when the source names no
// function (the API document).
type RouteSet struct {
	Source    string
	Functions map[string]string
}

// Add puts the route key on fn; a key put on two functions is on both,
// which no other source can agree with.
func (s RouteSet) Add(key, fn string) {
	if have, ok := s.Functions[key]; ok && have != fn {
		fn = have + " and " + fn
	}
	s.Functions[key] = fn
}

// GoRoutes are the routes the functions serve.
func GoRoutes(fns map[string][]httpapi.Route) RouteSet {
	set := RouteSet{Source: "Go", Functions: map[string]string{}}
	for id, routes := range fns {
		for _, r := range routes {
			set.Add(r.Method+" "+r.Pattern, id)
		}
	}
	return set
}

// TemplateRoutes are the HttpApi events of the template's functions, but
// their ANY twins: API Gateway sends another method of the path to the
// function, whose router answers it 405.
func TemplateRoutes(fns []template.Function) RouteSet {
	set := RouteSet{Source: "template.yaml", Functions: map[string]string{}}
	for _, r := range template.Routes(fns) {
		if r.Method != "ANY" {
			set.Add(r.Key(), r.Function)
		}
	}
	return set
}

var (
	templateOnce sync.Once
	templateSet  RouteSet
	templateErr  error
)

// templateRoutes are template.yaml's routes, read once.
func templateRoutes() (RouteSet, error) {
	templateOnce.Do(func() {
		_, file, _, _ := runtime.Caller(0)
		var fns []template.Function
		fns, templateErr = template.LoadFunctions(filepath.Join(filepath.Dir(file), "..", "..", "..", "template.yaml"))
		templateSet = TemplateRoutes(fns)
	})
	return templateSet, templateErr
}

// RouteDiff names, one line a route, each route that some of the sets hold
// and others lack, or put on different functions, with where it is and
// where it is missing; nil when the sets agree.
func RouteDiff(sets ...RouteSet) []string {
	keys := map[string]bool{}
	for _, s := range sets {
		for key := range s.Functions {
			keys[key] = true
		}
	}
	var diff []string
	for _, key := range slices.Sorted(maps.Keys(keys)) {
		var in, missing []string
		fns := map[string]bool{}
		for _, s := range sets {
			fn, ok := s.Functions[key]
			switch {
			case !ok:
				missing = append(missing, s.Source)
			case fn == "":
				in = append(in, s.Source)
			default:
				in = append(in, s.Source+" (on "+fn+")")
				fns[fn] = true
			}
		}
		if len(missing) == 0 && len(fns) <= 1 {
			continue
		}
		line := key + ": in " + strings.Join(in, ", ")
		if len(missing) > 0 {
			line += "; missing in " + strings.Join(missing, ", ")
		}
		diff = append(diff, line)
	}
	return diff
}

// Faulty is the API over a fresh table of the embedded endpoint reached
// through a fault-injecting proxy, with the SDK's own retries (their waits
// cut short), and then the given options. Each attempt has time enough
// however busy the machine (a loaded machine under the race detector
// takes more than 100 ms for some), so that only the faults injected fail
// a request; a test of a slow endpoint sets a short one (AttemptTimeout).
func Faulty(t testing.TB, optFns ...func(*dynamodb.Options)) (*Harness, *faultproxy.Proxy) {
	t.Helper()
	b := dynamotest.Backends(t)[0]
	direct, name := dynamotest.Table(t, b)
	p := faultproxy.New(b.URL)
	t.Cleanup(p.Close)
	api := localdb.Client(p.URL(), append([]func(*dynamodb.Options){store.Counting, func(o *dynamodb.Options) {
		o.Retryer = retry.AddWithMaxBackoffDelay(o.Retryer, time.Millisecond)
	}, AttemptTimeout(10 * time.Second)}, optFns...)...)
	return NewOn(t, api, direct, name), p
}

// AttemptTimeout bounds each attempt of a request to d.
func AttemptTimeout(d time.Duration) func(*dynamodb.Options) {
	return func(o *dynamodb.Options) { o.HTTPClient = awshttp.NewBuildableClient().WithTimeout(d) }
}

// SetSettings replaces the settings the functions read.
func (h *Harness) SetSettings(params []settings.Parameter) {
	h.t.Helper()
	if params == nil {
		params = []settings.Parameter{}
	}
	data, _ := json.Marshal(params)
	if err := os.WriteFile(h.settings, data, 0o600); err != nil {
		h.t.Fatal(err)
	}
}

// BreakSettings makes the settings unreadable: the stand-in then fails
// every read.
func (h *Harness) BreakSettings() {
	h.t.Helper()
	if err := os.WriteFile(h.settings, []byte("not json"), 0o600); err != nil {
		h.t.Fatal(err)
	}
}

// Call is one request.
type Call struct {
	Method  string
	Path    string // with the query string, if any
	Claims  map[string]string
	Headers map[string]string
	Body    string
	// Base64 sends the body base64-encoded, as the gateway passes binary.
	Base64 bool
}

// Result is one response, with the body decoded.
type Result struct {
	Status   int
	Headers  map[string]string
	Raw      string
	Body     map[string]any
	Requests int // DynamoDB requests the invocation logged
}

// Code is the problem code of the response, or "".
func (r Result) Code() string { s, _ := r.Body["code"].(string); return s }

// CreateTrigger creates a trigger of the caller claims with the body b
// (POST /v1/triggers) and returns its id; anything but a 201 fails t.
func (h *Harness) CreateTrigger(t testing.TB, claims map[string]string, b string) string {
	t.Helper()
	return h.create(t, "/v1/triggers", "triggerId", claims, b)
}

// CreateEnvironment creates an environment of the caller claims with the
// body b (POST /v1/environments) and returns its id; anything but a 201
// fails t.
func (h *Harness) CreateEnvironment(t testing.TB, claims map[string]string, b string) string {
	t.Helper()
	return h.create(t, "/v1/environments", "environmentId", claims, b)
}

func (h *Harness) create(t testing.TB, path, idMember string, claims map[string]string, b string) string {
	t.Helper()
	r := h.Do(Call{Method: "POST", Path: path, Claims: claims, Body: b})
	if r.Status != 201 {
		t.Fatalf("POST %s: %d %s", path, r.Status, r.Raw)
	}
	id, _ := r.Body[idMember].(string)
	return id
}

// Do sends the call as the gateway would.
func (h *Harness) Do(c Call) Result {
	h.t.Helper()
	return h.do(h.API, c)
}

// Deliver sends a webhook delivery as the gateway would.
func (h *Harness) Deliver(c Call) Result {
	h.t.Helper()
	return h.do(h.HookAPI, c)
}

func (h *Harness) do(api *httpapi.API, c Call) Result {
	h.t.Helper()
	resp, err := api.Handle(context.Background(), Event(c))
	if err != nil {
		h.t.Fatal(err)
	}
	res := Result{Status: resp.StatusCode, Headers: resp.Headers, Raw: resp.Body}
	if resp.Body != "" {
		if err := json.Unmarshal([]byte(resp.Body), &res.Body); err != nil {
			h.t.Fatalf("body %q: %v", resp.Body, err)
		}
	}
	var line struct{ DynamodbRequests int }
	_ = json.Unmarshal([]byte(h.LastLog()), &line)
	res.Requests = line.DynamodbRequests
	checkDocument(h.t, c, res)
	return res
}

// Event builds the payload 2.0 event of a call.
func Event(c Call) events.APIGatewayV2HTTPRequest {
	path, query, _ := strings.Cut(c.Path, "?")
	ev := events.APIGatewayV2HTTPRequest{
		Version: "2.0", RouteKey: "$default", RawPath: path, RawQueryString: query,
		Headers: map[string]string{"content-type": "application/json"}, Body: c.Body, IsBase64Encoded: c.Base64,
	}
	if c.Base64 {
		ev.Body = base64.StdEncoding.EncodeToString([]byte(c.Body))
	}
	for k, v := range c.Headers {
		ev.Headers[strings.ToLower(k)] = v
	}
	if query != "" {
		ev.QueryStringParameters = map[string]string{}
		for _, kv := range strings.Split(query, "&") {
			k, v, _ := strings.Cut(kv, "=")
			ev.QueryStringParameters[k] = v
		}
	}
	ev.RequestContext.HTTP.Method = c.Method
	ev.RequestContext.HTTP.Path = path
	ev.RequestContext.RequestID = "req-test"
	if c.Claims != nil {
		ev.RequestContext.Authorizer = &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
			JWT: &events.APIGatewayV2HTTPRequestContextAuthorizerJWTDescription{Claims: c.Claims},
		}
	}
	return ev
}

// Body is the JSON of base with members set; a nil value deletes one.
func Body(base, set map[string]any) string {
	m := map[string]any{}
	for k, v := range base {
		m[k] = v
	}
	for k, v := range set {
		if v == nil {
			delete(m, k)
			continue
		}
		m[k] = v
	}
	b, _ := json.Marshal(m)
	return string(b)
}

// Put writes an item given in DynamoDB JSON straight into the table.
func (h *Harness) Put(dynamoJSON []byte) {
	h.t.Helper()
	item, err := localdb.UnmarshalItem(dynamoJSON)
	if err != nil {
		h.t.Fatal(err)
	}
	if _, err := h.Client.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(h.Table), Item: item}); err != nil {
		h.t.Fatal(err)
	}
}

// SetTrigger sets an attribute of a stored trigger, at a path of
// dot-separated names, as an older writer (or a hand) might have.
func (h *Harness) SetTrigger(id, path string, v types.AttributeValue) {
	h.t.Helper()
	if err := h.UpdateTrigger(id, path, v); err != nil {
		h.t.Fatal(err)
	}
}

// UpdateTrigger is SetTrigger returning its error, for code that runs
// outside the test's goroutine (a fault proxy's Before).
func (h *Harness) UpdateTrigger(id, path string, v types.AttributeValue) error {
	return h.update("TRIGGER#"+id, "TRIGGER", path, v)
}

// SetItem sets an attribute of the item pk/sk, at a path of dot-separated
// names, as an older writer (or a hand) might have.
func (h *Harness) SetItem(pk, sk, path string, v types.AttributeValue) {
	h.t.Helper()
	if err := h.update(pk, sk, path, v); err != nil {
		h.t.Fatal(err)
	}
}

func (h *Harness) update(pk, sk, path string, v types.AttributeValue) error {
	names, parts := map[string]string{}, []string{}
	for i, name := range strings.Split(path, ".") {
		ref := "#p" + strconv.Itoa(i)
		names[ref] = name
		parts = append(parts, ref)
	}
	_, err := h.Client.UpdateItem(context.Background(), &dynamodb.UpdateItemInput{
		TableName: aws.String(h.Table),
		Key: map[string]types.AttributeValue{
			"PK": &types.AttributeValueMemberS{Value: pk}, "SK": &types.AttributeValueMemberS{Value: sk},
		},
		UpdateExpression:          aws.String("SET " + strings.Join(parts, ".") + " = :v"),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: map[string]types.AttributeValue{":v": v},
	})
	return err
}

// Items is every item in the table, in DynamoDB JSON.
func (h *Harness) Items() []string {
	h.t.Helper()
	out, err := h.Client.Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String(h.Table), ConsistentRead: aws.Bool(true)})
	if err != nil {
		h.t.Fatal(err)
	}
	var items []string
	for _, it := range out.Items {
		b, _ := attributevalue.MarshalMapJSON(it)
		items = append(items, string(b))
	}
	return items
}

// Sessions are the sessions' metadata items in the table, in DynamoDB
// JSON (not what a session keeps beside them: its prompt, its
// environment's snapshot).
func (h *Harness) Sessions() []string {
	var out []string
	for _, it := range h.Items() {
		if strings.Contains(it, `"PK":{"S":"SESSION#`) && strings.Contains(it, `"SK":{"S":"METADATA"}`) {
			out = append(out, it)
		}
	}
	return out
}

// Session reads a session as the store does (strongly consistent).
func (h *Harness) Session(id string) *session.Record {
	h.t.Helper()
	rec, err := store.New(h.Client, h.Table).GetSession(context.Background(), id)
	if err != nil {
		h.t.Fatal(err)
	}
	return rec
}

// Snapshot is every item in the table, each with its members sorted, in
// order: two snapshots are equal when the table did not change.
func (h *Harness) Snapshot() string {
	out := h.Items()
	for i, it := range out {
		var v any
		_ = json.Unmarshal([]byte(it), &v)
		b, _ := json.Marshal(v) // a map's members sorted
		out[i] = string(b)
	}
	slices.Sort(out)
	return strings.Join(out, "\n")
}

// Logs are the log lines the functions wrote so far.
func (h *Harness) Logs() []string {
	return strings.Split(strings.TrimSpace(h.logs.String()), "\n")
}

// LastLog is the last log line the functions wrote.
func (h *Harness) LastLog() string { return h.logs.last() }

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// last is the buffer's last line.
func (s *syncBuffer) last() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := bytes.TrimSpace(s.b.Bytes())
	return string(b[bytes.LastIndexByte(b, '\n')+1:])
}
