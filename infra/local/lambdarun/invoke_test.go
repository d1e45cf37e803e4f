package lambdarun_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/cloud-agent/control-plane/infra/local/dynamotest"
	"github.com/cloud-agent/control-plane/infra/local/emftest"
	"github.com/cloud-agent/control-plane/infra/local/eventbus"
	"github.com/cloud-agent/control-plane/infra/local/kms"
	"github.com/cloud-agent/control-plane/infra/local/lambdarun"
	"github.com/cloud-agent/control-plane/infra/local/localdb"
	"github.com/cloud-agent/control-plane/infra/local/paramstore"
	"github.com/cloud-agent/control-plane/infra/template"
)

// built builds every function's bootstrap into a folder of the test's, as
// the Makefile builds it for Lambda (for this machine's architecture), and
// finds the pinned runtime interface emulator.
func built(t *testing.T, fns []template.Function) (dir, rie string) {
	t.Helper()
	var ids []string
	for _, fn := range fns {
		ids = append(ids, fn.LogicalID)
	}
	dir = t.TempDir()
	if err := lambdarun.Build(context.Background(), io.Discard, "../../..", dir, ids...); err != nil {
		t.Fatal(err)
	}
	rie, err := lambdarun.EmulatorPath(context.Background(), io.Discard, "../../..")
	if err != nil {
		t.Fatal(err)
	}
	return dir, rie
}

// expected is what each sample event must get from its function.
var expected = map[string]struct {
	status int
	code   string
	has    string // a fragment the body must contain
}{
	"SessionStartFunction/valid.json":                               {201, "", `"replayed":false`},
	"SessionStartFunction/valid-idempotent.json":                    {201, "", `"kind":"isolated"`},
	"SessionStartFunction/invalid-missing-agent.json":               {400, "invalid_request", "agent"},
	"SessionStartFunction/invalid-retired-allocation.json":          {422, "sandbox_allocation_retired", "one sandbox now serves one workspace"},
	"SessionStartFunction/invalid-foreign-org.json":                 {403, "forbidden", ""},
	"SessionStartFunction/invalid-no-claims.json":                   {401, "unauthorized", ""},
	"SessionStartFunction/invalid-method.json":                      {405, "method_not_allowed", ""},
	"AllocationLookupFunction/lookup-valid.json":                    {200, "", `"containerLabel":"Isolated container"`},
	"AllocationLookupFunction/lookup-legacy.json":                   {200, "", `"code":"sandbox_runtime_retired"`},
	"AllocationLookupFunction/lookup-invalid-not-found.json":        {404, "not_found", ""},
	"AllocationLookupFunction/lookup-invalid-id.json":               {400, "invalid_request", ""},
	"AllocationLookupFunction/allocations-valid.json":               {200, "", `"default":"cloudflare-containers-standard-4"`},
	"AllocationLookupFunction/allocations-valid-org.json":           {200, "", `"enabled":true`},
	"AllocationLookupFunction/allocations-invalid-foreign-org.json": {403, "forbidden", ""},
	"AllocationLookupFunction/allocations-invalid-org-id.json":      {400, "invalid_request", ""},
	"AllocationLookupFunction/allocations-invalid-method.json":      {405, "method_not_allowed", ""},
	// The firing answers a summary, not an HTTP response; it fires the
	// two planted triggers: the one of shard 10 with the share that
	// FiringSchedule2 sends when FiringSchedules is 8 ([2, 10]), the one
	// of shard 14 with the Scheduled Event of every shard. Functions run in the order of their
	// logical ids and events in the order of their names, so the firing
	// runs before get-valid reads its run, and delete-valid deletes the
	// other planted trigger.
	"TriggerFireFunction/scheduled-event-ahead.json": {0, "", `{"due":0,"fired":0,"duplicates":0,"skipped":0,"fallbacks":0,"failed":0,"timedOut":0}`},
	"TriggerFireFunction/scheduled-event-share.json": {0, "", `{"due":1,"fired":1,"duplicates":0,"skipped":0,"fallbacks":0,"failed":0,"timedOut":0}`},
	"TriggerFireFunction/scheduled-event.json":       {0, "", `{"due":1,"fired":1,"duplicates":0,"skipped":0,"fallbacks":0,"failed":0,"timedOut":0}`},
	// The hook's deliveries to the three planted webhook triggers, signed
	// with the secrets the sample keys derive for them; the Standard
	// Webhooks sample is signed at a time long past, as a static sample
	// must be: out of the 5-minute window.
	"TriggerHookFunction/bearer-valid.json":             {201, "", `"delivery":"nightly-2026-11-30"`},
	"TriggerHookFunction/github-ignored-event.json":     {202, "", `"ignored":true`},
	"TriggerHookFunction/github-invalid-signature.json": {401, "unauthorized", ""},
	"TriggerHookFunction/github-ping.json":              {200, "", `"ping":true`},
	"TriggerHookFunction/github-valid.json":             {201, "", `"delivery":"72d3162e-cc78-11e3-81ab-4c9367dc0958"`},
	"TriggerHookFunction/gitlab-valid.json":             {201, "", `"delivery":"3f0d5b8e-2a61-4c7f-9e14-8b2d6a0c5f93"`},
	"TriggerHookFunction/invalid-deeper-path.json":      {404, "not_found", ""},
	"TriggerHookFunction/invalid-media-type.json":       {415, "unsupported_media_type", ""},
	"TriggerHookFunction/invalid-method.json":           {405, "method_not_allowed", ""},
	"TriggerHookFunction/invalid-unknown-id.json":       {401, "unauthorized", ""},
	"TriggerHookFunction/standard-invalid-stale.json":   {401, "unauthorized", ""},
	"TriggersFunction/create-valid.json":                {201, "", `"nextRunAt":"20`},
	// The runtime routes on the session of session-v2-current.json,
	// planted as started now, with the token the sample SessionTokenKey
	// derives for it: a claim, the launch read that shows it, a report
	// refused for its status, then the runner's report.
	"RuntimeFunction/claim-invalid-method.json":   {405, "method_not_allowed", ""},
	"RuntimeFunction/claim-valid.json":            {200, "", `"runner":"sample-runner-1"`},
	"RuntimeFunction/invalid-deeper-path.json":    {404, "not_found", ""},
	"RuntimeFunction/launch-invalid-token.json":   {401, "unauthorized", ""},
	"RuntimeFunction/launch-valid.json":           {200, "", `"sessionId":"workspace_0b8f3a1e-8a51-4c1b-9a57-3e0b3c2d1f00"`},
	"RuntimeFunction/outcome-invalid-status.json": {400, "invalid_request", "status"},
	"RuntimeFunction/outcome-valid.json":          {200, "", `"status":"completed"`},
	// The stream batch of one new session, announced on the bus: no item
	// failure (null, which Lambda takes as an empty list: the batch
	// succeeded).
	"SessionEventsFunction/stream-insert-valid.json":            {0, "", `{"batchItemFailures":null}`},
	"EnvironmentsFunction/create-valid.json":                    {201, "", `"PYPI_TOKEN":{"value":null,"secret":true}`},
	"EnvironmentsFunction/create-invalid-reserved-name.json":    {400, "invalid_request", "variables.AWS_REGION is reserved"},
	"EnvironmentsFunction/create-invalid-plain-credential.json": {400, "invalid_request", "mark it secret"},
	"EnvironmentsFunction/create-invalid-foreign-org.json":      {403, "forbidden", ""},
	"EnvironmentsFunction/delete-valid.json":                    {204, "", ""},
	"EnvironmentsFunction/delete-invalid-method.json":           {405, "method_not_allowed", ""},
	"EnvironmentsFunction/get-valid.json":                       {200, "", `"NPM_TOKEN":{"value":null,"secret":true}`},
	"EnvironmentsFunction/get-invalid-other-user.json":          {404, "not_found", ""},
	"EnvironmentsFunction/get-invalid-id.json":                  {400, "invalid_request", "environment id"},
	"EnvironmentsFunction/list-valid.json":                      {200, "", `"default":true`},
	"EnvironmentsFunction/list-invalid-foreign-org.json":        {403, "forbidden", ""},
	"EnvironmentsFunction/patch-valid.json":                     {200, "", `"version":2`},
	"EnvironmentsFunction/patch-invalid-unseal.json":            {400, "invalid_request", "stop being secret"},
	"TriggersFunction/create-invalid-cron.json":                 {400, "invalid_request", "schedule.cron"},
	"TriggersFunction/create-invalid-foreign-org.json":          {403, "forbidden", ""},
	"TriggersFunction/create-invalid-retired-allocation.json":   {422, "sandbox_allocation_retired", "one sandbox now serves one workspace"},
	"TriggersFunction/delete-valid.json":                        {204, "", ""},
	"TriggersFunction/delete-invalid-other-user.json":           {404, "not_found", ""},
	"TriggersFunction/delete-invalid-method.json":               {405, "method_not_allowed", ""},
	"TriggersFunction/get-valid.json":                           {200, "", `"lastRunStatus":"fired"`},
	"TriggersFunction/get-invalid-id.json":                      {400, "invalid_request", ""},
	"TriggersFunction/get-invalid-no-claims.json":               {401, "unauthorized", ""},
	"TriggersFunction/get-invalid-not-found.json":               {404, "not_found", ""},
	"TriggersFunction/list-valid.json":                          {200, "", `"nextCursor":null`},
	"TriggersFunction/list-invalid-cursor.json":                 {400, "invalid_request", "cursor"},
	"TriggersFunction/list-invalid-limit.json":                  {400, "invalid_request", "limit"},
	"TriggersFunction/list-invalid-method.json":                 {405, "method_not_allowed", ""},
	"TriggersFunction/patch-valid.json":                         {200, "", `"active":false`},
	"TriggersFunction/patch-invalid-member.json":                {400, "invalid_request", "orgId"},
	"TriggersFunction/patch-invalid-null-prompt.json":           {400, "invalid_request", "prompt cannot be removed"},
	"TriggersFunction/runs-valid.json":                          {200, "", `"status":"fired"`},
	"TriggersFunction/runs-invalid-limit.json":                  {400, "invalid_request", "limit"},
	"TriggersFunction/runs-invalid-other-user.json":             {404, "not_found", ""},
	"TriggersFunction/run-valid.json":                           {201, "", `"kind":"manual"`},
	"TriggersFunction/run-invalid-reserved-key.json":            {400, "invalid_request", "Idempotency-Key"},
	"TriggersFunction/rotate-valid.json":                        {400, "invalid_request", "A scheduled trigger has no secret"},
	"TriggersFunction/rotate-invalid-secret.json":               {400, "invalid_request", "secret must be whsec_"},
}

// functionLogs is what an emulator writes: its own lines and its
// function's.
type functionLogs struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *functionLogs) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// lines are the function's own log lines so far: the JSON objects among
// what the emulator wrote.
func (l *functionLogs) lines() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for line := range strings.SplitSeq(l.b.String(), "\n") {
		if strings.HasPrefix(line, "{") {
			out = append(out, line)
		}
	}
	return out
}

// next waits for the function's line after the first n and returns it.
func (l *functionLogs) next(t *testing.T, n int) string {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if lines := l.lines(); len(lines) > n {
			if len(lines) > n+1 {
				t.Errorf("%d lines for one invocation: %v", len(lines)-n, lines[n:])
			}
			return lines[n]
		}
		if time.Now().After(deadline) {
			t.Fatal("the invocation logged no line")
		}
	}
}

// reportLine is the emulator's REPORT line with the function's memory
// size and the peak it used.
var (
	reportLine = regexp.MustCompile(`(?m)^REPORT RequestId: .*\tMemory Size: ([0-9]+) MB\tMax Memory Used: ([0-9]+) MB\t$`)
	anyReport  = regexp.MustCompile(`(?m)^REPORT `)
)

// checkEmulatorLines: the emulator's lines about one function's
// invocations hold its INFO lines only at EmulatorInfo, and a REPORT line
// for each invocation whose Max Memory Used is the bootstrap's own peak,
// well under the memory size the emulator was given (a Go bootstrap
// peaks at a few tens of MB), not the memory size.
func checkEmulatorLines(t *testing.T, fn template.Function, logs *functionLogs, level lambdarun.EmulatorLog) {
	logs.mu.Lock()
	out := logs.b.String()
	logs.mu.Unlock()
	if info := strings.Contains(out, "[INFO] (rapid)"); info != (level == lambdarun.EmulatorInfo) {
		t.Errorf("%s at %s: INFO lines %v:\n%s", fn.LogicalID, level, info, out)
	}
	reports := reportLine.FindAllStringSubmatch(out, -1)
	if len(reports) == 0 || len(reports) != len(anyReport.FindAllString(out, -1)) {
		t.Errorf("%s: REPORT lines without Max Memory Used:\n%s", fn.LogicalID, out)
	}
	for _, r := range reports {
		size, _ := strconv.Atoi(r[1])
		used, _ := strconv.Atoi(r[2])
		if size != fn.MemoryMB || used < 1 || used >= size/2 {
			t.Errorf("%s: %q", fn.LogicalID, r[0])
		}
	}
}

// TestBootstrapsWithSampleEvents runs each built bootstrap under the
// runtime interface emulator, with the environment of template.yaml pointed
// at the embedded endpoint and the settings stand-in, and invokes it with
// every sample event in events/, one at a time, as `sam local invoke -e`
// would. Each invocation logs one line with valid EMF: the Function
// dimension the function's name (the logical id, locally), ColdStart 1 on
// the environment's first invocation only, DynamoDBRequests (at least one
// for a 201, two for a firing that fired), and what the
// answer adds (Refusals by the problem's code, Starts by provider and
// allocation, EnvironmentWrites by change, the firing's summary). The emulator's own lines are as
// checkEmulatorLines says, the first function's at EmulatorInfo.
func TestBootstrapsWithSampleEvents(t *testing.T) {
	tpl, err := template.Load("../../../template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	fns, err := template.Functions(tpl)
	if err != nil {
		t.Fatal(err)
	}
	dir, rie := built(t, fns)
	c, dynamoURL := dynamotest.LocalTable(t)
	for _, f := range []string{"store/testdata/items/session-v2-current", "store/testdata/items/session-v1-flat", "store/testdata/trigger-weekdays", "store/testdata/trigger-byoc",
		"store/testdata/trigger-webhook-github", "store/testdata/trigger-webhook-token", "store/testdata/trigger-webhook-standard",
		"store/testdata/environment-node", "store/testdata/environment-shared-era"} {
		data, _ := os.ReadFile("../../../shared/" + f + ".json")
		item, _ := localdb.UnmarshalItem(data)
		if _, err := c.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(template.TableLogicalID), Item: item}); err != nil {
			t.Fatal(err)
		}
	}
	startedNow(t, c, runtimeSession)
	settings := filepath.Join(t.TempDir(), "settings.json")
	configPath := fns[0].Environment["CONFIG_PATH"]
	if err := paramstore.Seed(settings, template.Settings(tpl, configPath)); err != nil {
		t.Fatal(err)
	}
	ssm := httptest.NewServer(&paramstore.Server{File: settings, Path: configPath})
	t.Cleanup(ssm.Close)
	// The sample keys, so that the webhook samples' secrets, derived and
	// signed once, are the ones the functions derive.
	keyFile := filepath.Join(t.TempDir(), "kms-keys.json")
	if data, err := os.ReadFile("../kms/testdata/sample-keys.json"); err != nil || os.WriteFile(keyFile, data, 0o600) != nil {
		t.Fatal(err)
	}
	keys, err := kms.Open(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	kmsSrv := httptest.NewServer(&kms.Server{Keys: keys})
	t.Cleanup(kmsSrv.Close)
	bus, busEnv := sessionsBus(t)
	more := append(keys.Environment(kmsSrv.URL), busEnv...)

	files, _ := filepath.Glob("../../../events/*/*.json")
	seen := map[string]bool{}
	for i, fn := range fns {
		logs := &functionLogs{}
		level := lambdarun.EmulatorWarnings
		if i == 0 {
			level = lambdarun.EmulatorInfo
		}
		l, err := lambdarun.Start(rie, fn.LogicalID, filepath.Join(dir, fn.LogicalID, "bootstrap"), lambdarun.Environment(fn, dynamoURL, ssm.URL, more...), fn.Timeout, logs, level)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(l.Close)
		t.Cleanup(func() { checkEmulatorLines(t, fn, logs, level) })
		invoked := 0
		for _, f := range files {
			name := strings.TrimPrefix(filepath.ToSlash(f), "../../../events/")
			if !strings.HasPrefix(name, fn.LogicalID+"/") {
				continue
			}
			seen[name] = true
			t.Run(name, func(t *testing.T) {
				want, ok := expected[name]
				if !ok {
					t.Fatalf("no expectation for %s", name)
				}
				event, _ := os.ReadFile(f)
				out, err := l.Invoke(context.Background(), event)
				if err != nil {
					t.Fatal(err)
				}
				line := emftest.Check(t, logs.next(t, invoked))
				invoked++
				if line.Members["Function"] != fn.LogicalID {
					t.Errorf("Function %v, want %s", line.Members["Function"], fn.LogicalID)
				}
				if v, _ := line.Value("ColdStart"); v != map[bool]float64{true: 1, false: 0}[invoked == 1] {
					t.Errorf("ColdStart %v on invocation %d of the environment", v, invoked)
				}
				requests, ok := line.Value("DynamoDBRequests")
				if !ok {
					t.Errorf("no DynamoDBRequests: %v", line.Metrics())
				}
				// What writes the table counts its requests: a 201, at least
				// its write; a firing that fired, a shard query and a
				// transaction.
				least := 0.0
				switch {
				case strings.Contains(want.has, `"fired":1`):
					least = 2
				case want.status == 201:
					least = 1
				}
				if requests < least {
					t.Errorf("DynamoDBRequests %v, want at least %v", requests, least)
				}
				if len(fn.Routes) == 0 {
					if string(out) != want.has {
						t.Errorf("%s, want %s", out, want.has)
					}
					if fn.LogicalID == "SessionEventsFunction" {
						checkAnnounced(t, line, bus)
					} else {
						checkSummary(t, line, out)
					}
					return
				}
				wantMetrics := []string{"ColdStart", "DynamoDBRequests"}
				switch {
				case want.code != "":
					wantMetrics = append(wantMetrics, "Refusals")
					if line.Members["Code"] != want.code {
						t.Errorf("Code %v, want %s", line.Members["Code"], want.code)
					}
				case want.status == 201 && (fn.LogicalID == "SessionStartFunction" || fn.LogicalID == "TriggerHookFunction" || name == "TriggersFunction/run-valid.json"):
					wantMetrics = append(wantMetrics, "Starts")
					if d := line.Dimensions(); d["Provider"] == "" || d["Allocation"] == "" {
						t.Errorf("Starts by %v", d)
					}
				case fn.LogicalID == "EnvironmentsFunction" && (want.status == 201 || want.status == 204 || strings.HasPrefix(name, fn.LogicalID+"/patch-")):
					wantMetrics = append(wantMetrics, "EnvironmentWrites") // by what changed
					if d := line.Dimensions(); d["Change"] == "" {
						t.Errorf("EnvironmentWrites by %v", d)
					}
				}
				if fn.LogicalID == "TriggerHookFunction" && want.status != 404 && want.status != 405 { // every delivery the route took, by its outcome
					at := slices.Index(wantMetrics, "Refusals") // noted as the handler ends, before the answer's refusal
					if at < 0 {
						at = len(wantMetrics)
					}
					wantMetrics = slices.Insert(wantMetrics, at, "Deliveries")
					if line.Members["Outcome"] == nil {
						t.Errorf("Deliveries by %v", line.Dimensions())
					}
				}
				if fn.LogicalID == "RuntimeFunction" {
					wantMetrics = runtimeMetrics(name, want.status, wantMetrics)
				}
				if !slices.Equal(line.Metrics(), wantMetrics) {
					t.Errorf("metrics %v, want %v", line.Metrics(), wantMetrics)
				}
				var resp events.APIGatewayV2HTTPResponse
				if err := json.Unmarshal(out, &resp); err != nil {
					t.Fatalf("%s: %v", out, err)
				}
				var body struct{ Code string }
				_ = json.Unmarshal([]byte(resp.Body), &body)
				if resp.StatusCode != want.status || body.Code != want.code || !strings.Contains(resp.Body, want.has) || resp.Headers["Cache-Control"] != "no-store" {
					t.Errorf("%d %v %s", resp.StatusCode, resp.Headers, resp.Body)
				}
			})
		}
	}
	var missing []string
	for name := range expected {
		if !seen[name] {
			missing = append(missing, name)
		}
	}
	slices.Sort(missing)
	if len(missing) > 0 {
		t.Errorf("expected events with no file or function: %v", missing)
	}
}

// runtimeSession is the session the runtime samples name: that of
// session-v2-current.json.
const runtimeSession = "workspace_0b8f3a1e-8a51-4c1b-9a57-3e0b3c2d1f00"

// startedNow moves the planted session's start to now: a session's token
// lives at most 7 days and 24 hours after its start or last heartbeat,
// and the runtime samples, whose token the sample SessionTokenKey
// derived once, must find it alive whenever the test runs.
func startedNow(t *testing.T, c *dynamodb.Client, sessionID string) {
	t.Helper()
	_, err := c.UpdateItem(context.Background(), &dynamodb.UpdateItemInput{TableName: aws.String(template.TableLogicalID),
		Key: map[string]types.AttributeValue{
			"PK": &types.AttributeValueMemberS{Value: "SESSION#" + sessionID}, "SK": &types.AttributeValueMemberS{Value: "METADATA"},
		},
		UpdateExpression:          aws.String("SET metadata.lifecycle.#ts = :now"),
		ConditionExpression:       aws.String("attribute_exists(PK)"),
		ExpressionAttributeNames:  map[string]string{"#ts": "timestamp"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":now": &types.AttributeValueMemberN{Value: strconv.FormatInt(time.Now().UnixMilli(), 10)}},
	})
	if err != nil {
		t.Fatal(err)
	}
}

// sessionsBus is the EventBridge stand-in the session events function
// puts its events on, served for the test, and the environment that
// points the functions at it: its PutEvents endpoint and the API's URL
// that the launch URLs name. The bus has the name the template gives the
// function locally (its logical id).
func sessionsBus(t *testing.T) (*eventbus.Bus, []string) {
	t.Helper()
	bus := eventbus.New("SessionsBus", io.Discard)
	srv := httptest.NewServer(bus)
	t.Cleanup(srv.Close)
	return bus, []string{"AWS_ENDPOINT_URL_EVENTBRIDGE=" + srv.URL, "API_URL=http://127.0.0.1:3000"}
}

// checkSummary: each member of the firing's summary is the metric of its
// name on the line, and the line has the firing's lag.
func checkSummary(t *testing.T, line *emftest.Line, out []byte) {
	t.Helper()
	var sum map[string]float64
	_ = json.Unmarshal(out, &sum)
	for member, v := range sum {
		if m, _ := line.Value(strings.ToUpper(member[:1]) + member[1:]); m != v {
			t.Errorf("metric of %s is %v, the summary's %v", member, m, v)
		}
	}
	if _, ok := line.Value("FiringLag"); !ok {
		t.Errorf("no FiringLag: %v", line.Metrics())
	}
}

// checkAnnounced: the sample batch's one new session is announced, one
// Session Started event on the bus with its launch URL, and the line
// counts it put.
func checkAnnounced(t *testing.T, line *emftest.Line, bus *eventbus.Bus) {
	t.Helper()
	events, _, _ := bus.Events(context.Background(), "", 0)
	if len(events) != 1 || events[0].DetailType != "Session Started" ||
		!strings.Contains(string(events[0].Detail), `"url":"http://127.0.0.1:3000/v1/runtime/sessions/`+runtimeSession+`"`) {
		t.Errorf("the bus holds %+v, want the session's Session Started", events)
	}
	if put, _ := line.Value("EventsPut"); put != 1 {
		t.Errorf("EventsPut %v, want 1: %v", put, line.Metrics())
	}
}

// runtimeMetrics are the metrics of a runtime route's line: those of
// every line (want), with, before the refusal's, what the route counts:
// a 401 by its reason, a first claim, a report by its status.
func runtimeMetrics(name string, status int, want []string) []string {
	var counted string
	switch {
	case status == 401:
		counted = "Unauthorized"
	case status == 200 && strings.Contains(name, "/claim-"):
		counted = "Claims"
	case status == 200 && strings.Contains(name, "/outcome-"):
		counted = "Reports"
	default:
		return want
	}
	at := slices.Index(want, "Refusals")
	if at < 0 {
		at = len(want)
	}
	return slices.Insert(want, at, counted)
}
