package local

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	ebtypes "github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	awskms "github.com/aws/aws-sdk-go-v2/service/kms"
	kmstypes "github.com/aws/aws-sdk-go-v2/service/kms/types"

	"github.com/cloud-agent/control-plane/infra/local/dynamo"
	"github.com/cloud-agent/control-plane/infra/local/eventbus"
	"github.com/cloud-agent/control-plane/infra/local/faultproxy"
	"github.com/cloud-agent/control-plane/infra/local/gateway"
	"github.com/cloud-agent/control-plane/infra/local/kms"
	"github.com/cloud-agent/control-plane/infra/local/localdb"
	"github.com/cloud-agent/control-plane/infra/template"
)

func startStack(t testing.TB, cfg Config) *Stack {
	t.Helper()
	cfg.Repo, cfg.APIAddr, cfg.Logs = "../..", "127.0.0.1:0", io.Discard
	if cfg.DynamoURL == "" {
		cfg.DynamoAddr = "127.0.0.1:0"
	}
	if cfg.SettingsFile == "" {
		cfg.SettingsFile = filepath.Join(t.TempDir(), "settings.json")
	}
	s, err := Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	return s
}

// stackProcesses lists the running processes of local stacks' functions
// (emulators and bootstraps started from a build folder of Start) whose
// command line holds match, by pid: a build folder of one stack, since
// other stacks may run on the same machine.
func stackProcesses(t testing.TB, match string) map[string]string {
	t.Helper()
	found := map[string]string{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(cmdline), match) {
			found[e.Name()] = strings.ReplaceAll(string(cmdline), "\x00", " ")
		}
	}
	return found
}

// TestStackLeavesNothing: closing the stack ends every emulator and
// function it started and removes its builds; a Start that fails (here, its
// API port is taken) reports the error and leaves nothing running either.
func TestStackLeavesNothing(t *testing.T) {
	s := startStack(t, Config{})
	if len(stackProcesses(t, s.buildDir)) == 0 {
		t.Fatal("no function processes seen while the stack runs")
	}
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if left := stackProcesses(t, s.buildDir); len(left) > 0 {
		t.Errorf("still running after Close: %v", left)
	}
	if _, err := os.Stat(s.buildDir); !os.IsNotExist(err) {
		t.Errorf("the builds are still in %s", s.buildDir)
	}

	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	// The failed Start builds under a folder of this test's own, so that
	// the processes of other stacks on the machine (another test binary's)
	// are not taken for its.
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	_, err = Start(context.Background(), Config{Repo: "../..", DynamoAddr: "127.0.0.1:0", APIAddr: taken.Addr().String(),
		SettingsFile: filepath.Join(t.TempDir(), "s.json"), Logs: io.Discard})
	if err == nil {
		t.Fatal("Start on a taken port succeeded")
	}
	if left := stackProcesses(t, filepath.Join(tmp, "control-plane-functions-")); len(left) > 0 {
		t.Errorf("still running after a failed Start: %v", left)
	}
}

func call(t testing.TB, method, url, token, body string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

// functionProcesses are the pids of the emulator of a function of the
// stack, by name, and of its running bootstrap (the process the emulator
// started); "" for one that is not running.
func functionProcesses(t testing.TB, s *Stack, id string) (emulator, bootstrap string) {
	t.Helper()
	path := filepath.Join(s.buildDir, id, "bootstrap")
	for pid := range stackProcesses(t, path) {
		cmdline, _ := os.ReadFile(filepath.Join("/proc", pid, "cmdline"))
		if strings.Split(string(cmdline), "\x00")[0] == path {
			bootstrap = pid
		} else {
			emulator = pid
		}
	}
	return emulator, bootstrap
}

// functionEnvironment is the environment of the running bootstrap of a
// function of the stack, by name.
func functionEnvironment(t *testing.T, s *Stack, id string) map[string]string {
	t.Helper()
	_, pid := functionProcesses(t, s, id)
	if pid == "" {
		t.Fatalf("no running bootstrap of %s", id)
	}
	environ, err := os.ReadFile(filepath.Join("/proc", pid, "environ"))
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{}
	for _, kv := range strings.Split(string(environ), "\x00") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	return env
}

// generateMac is the stack's KMS stand-in's MAC of msg under WebhookKey,
// named by its alias, as a function would ask it through the SDK.
func generateMac(t *testing.T, s *Stack, msg string) []byte {
	t.Helper()
	out, err := kms.Client(s.KMSURL).GenerateMac(context.Background(), &awskms.GenerateMacInput{
		KeyId: aws.String("alias/WebhookKey"), Message: []byte(msg), MacAlgorithm: kmstypes.MacAlgorithmSpecHmacSha256})
	if err != nil {
		t.Fatal(err)
	}
	return out.Mac
}

// TestStack: the whole local stack answers the README's calls through the
// gateway and the built functions, and with a data file keeps the table
// across a restart; its KMS stand-in makes the key file on the first start
// (mode 0600), every function gets its endpoint and the keys' ARNs, and
// after a restart the same keys derive the same MACs.
func TestStack(t *testing.T) {
	t.Parallel()
	data := filepath.Join(t.TempDir(), "table.jsonl")
	keys := filepath.Join(t.TempDir(), ".local", "kms-keys.json")
	s := startStack(t, Config{DataFile: data, KeysFile: keys})
	if fi, err := os.Stat(keys); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the key file: %v %v", fi, err)
	}
	mac := generateMac(t, s, "webhook:trg_1:1")
	token := gateway.DevToken(map[string]any{"sub": "dev-user", "org_ids": []string{"dev-org"}})
	status, started := call(t, "POST", s.APIURL+"/v1/sessions", token, `{"repository":{"type":"github","repo":"acme/app"},"agent":{"mode":"code","model":"anthropic/claude"}}`)
	if status != 201 {
		t.Fatalf("start: %d %v", status, started)
	}
	sessionID := started["sessionId"].(string)
	var id string
	// The table's time to live is the template's, as in AWS.
	ttl, err := s.client.DescribeTimeToLive(context.Background(), &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(template.TableLogicalID)})
	if err != nil || ttl.TimeToLiveDescription.TimeToLiveStatus != types.TimeToLiveStatusEnabled || aws.ToString(ttl.TimeToLiveDescription.AttributeName) != "expiresAt" {
		t.Errorf("time to live: %+v %v", ttl, err)
	}
	if status, body := call(t, "GET", s.APIURL+"/v1/allocations", token, ""); status != 200 || body["enabled"] != true {
		t.Errorf("allocations: %d %v", status, body)
	}
	if status, _ := call(t, "PUT", s.APIURL+"/v1/sessions", "", ""); status != 401 {
		t.Errorf("another method without a token: %d", status)
	}
	if status, _ := call(t, "PUT", s.APIURL+"/v1/sessions", token, ""); status != 405 {
		t.Errorf("another method: %d", status)
	}
	env := functionEnvironment(t, s, "SessionStartFunction")
	for _, want := range append(s.Keys.Environment(s.KMSURL), "AWS_ENDPOINT_URL_EVENTBRIDGE="+s.EventsURL) {
		name, value, _ := strings.Cut(want, "=")
		if env[name] != value {
			t.Errorf("the function has %s=%q, want %q", name, env[name], value)
		}
	}
	id = putAndList(t, s)
	// A list still waiting for an event does not hold the stack's Close.
	waited := make(chan int, 1)
	go func() {
		resp, err := http.Get(s.APIURL + "/_local/events?wait=20&after=" + id)
		if err != nil {
			waited <- 0
			return
		}
		resp.Body.Close()
		waited <- resp.StatusCode
	}()
	time.Sleep(300 * time.Millisecond)
	closing := time.Now()
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(closing); d > 10*time.Second {
		t.Errorf("Close took %v with a list waiting", d)
	}
	if status := <-waited; status != 200 {
		t.Errorf("the waiting list: %d", status)
	}

	// The stack runs the template's schedules with its parameters: one
	// firing schedule by default, four with FiringSchedules 4.
	again := startStack(t, Config{DataFile: data, KeysFile: keys, Parameters: map[string]string{"FiringSchedules": "4"}})
	defer again.Close(context.Background())
	for _, st := range []*Stack{s, again} {
		for _, fn := range st.Functions {
			if want := map[*Stack]int{s: 1, again: 4}[st]; fn.LogicalID == "TriggerFireFunction" && len(fn.Schedules) != want {
				t.Errorf("%d firing schedules, want %d", len(fn.Schedules), want)
			}
		}
	}
	if status, body := call(t, "GET", again.APIURL+"/v1/sessions/"+sessionID+"/allocation", token, ""); status != 200 || body["sessionId"] != sessionID {
		t.Errorf("after a restart: %d %v", status, body)
	}
	if !bytes.Equal(generateMac(t, again, "webhook:trg_1:1"), mac) {
		t.Error("after a restart, WebhookKey derives another MAC")
	}
}

// putAndList puts an event on the stack's bus stand-in, named SessionsBus,
// through the SDK's client at s.EventsURL, and reads it back from the
// gateway's /_local/events, with no token: its id.
func putAndList(t *testing.T, s *Stack) string {
	t.Helper()
	if s.Bus.Name() != "SessionsBus" {
		t.Errorf("the bus is named %s", s.Bus.Name())
	}
	out, err := eventbus.Client(s.EventsURL).PutEvents(context.Background(), &eventbridge.PutEventsInput{Entries: []ebtypes.PutEventsRequestEntry{{
		EventBusName: aws.String(s.Bus.Name()), Source: aws.String("cloud-agent.control-plane"), DetailType: aws.String("Session Started"),
		Detail: aws.String(`{"sessionId":"s1","sequence":1}`)}}})
	if err != nil || out.FailedEntryCount != 0 {
		t.Fatalf("PutEvents: %v %+v", err, out)
	}
	id := aws.ToString(out.Entries[0].EventId)
	status, listed := call(t, "GET", s.APIURL+"/_local/events", "", "")
	if events, _ := listed["events"].([]any); status != 200 || len(events) != 1 || events[0].(map[string]any)["id"] != id {
		t.Fatalf("the list: %d %v, want the event %s", status, listed, id)
	}
	return id
}

// TestTemplateKeys: a KMS key of the template is one of the stand-in's, of
// its kind; another is refused at start, naming what to change. The
// template as it is passes.
func TestTemplateKeys(t *testing.T) {
	tpl, err := template.Load("../../template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := templateKeys(tpl); err != nil {
		t.Error(err)
	}
	for _, tc := range []struct{ name, resources, want string }{
		{"the stand-in's keys", `
  WebhookKey:
    Type: AWS::KMS::Key
    DeletionPolicy: Retain
    Properties: {KeySpec: HMAC_256, KeyUsage: GENERATE_VERIFY_MAC}
  WebhookSecretsKey:
    Type: AWS::KMS::Key
    DeletionPolicy: Retain
    Properties: {}`, ""},
		{"another kind", `
  WebhookKey:
    Type: AWS::KMS::Key
    Properties: {KeySpec: HMAC_512, KeyUsage: GENERATE_VERIFY_MAC}`, "WebhookKey is HMAC_512/GENERATE_VERIFY_MAC, the local KMS stand-in's is HMAC_256/GENERATE_VERIFY_MAC"},
		{"a key the stand-in lacks", `
  AuditKey:
    Type: AWS::KMS::Key
    Properties: {}`, "AuditKey is not one the local KMS stand-in holds"},
	} {
		path := filepath.Join(t.TempDir(), "template.yaml")
		if err := os.WriteFile(path, []byte("AWSTemplateFormatVersion: '2010-09-09'\nResources:"+tc.resources+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		tpl, err := template.Load(path)
		if err != nil {
			t.Fatal(err)
		}
		err = templateKeys(tpl)
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}

// TestStackOnAnotherEndpoint: with an endpoint given (another embedded
// endpoint here, as AWS_ENDPOINT_URL_DYNAMODB would give one), the stack
// creates the table there and serves no DynamoDB endpoint of its own.
func TestStackOnAnotherEndpoint(t *testing.T) {
	t.Parallel()
	other, err := dynamo.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close(context.Background())
	s := startStack(t, Config{DynamoURL: other.URL})
	defer s.Close(context.Background())
	if s.endpoint != nil || s.DynamoURL != other.URL {
		t.Errorf("the stack serves its own endpoint: %s", s.DynamoURL)
	}
	token := gateway.DevToken(map[string]any{"sub": "u1"})
	if status, body := call(t, "POST", s.APIURL+"/v1/sessions", token, `{"repository":{"type":"github","repo":"a/b"},"agent":{"mode":"code","model":"m"}}`); status != 201 {
		t.Errorf("start on the other endpoint: %d %v", status, body)
	}
	if _, err := localdb.Client(other.URL).DescribeTable(context.Background(), &dynamodb.DescribeTableInput{TableName: aws.String(template.TableLogicalID)}); err != nil {
		t.Errorf("no table there: %v", err)
	}
}

// TestStackFinishesTheTable: a start whose UpdateTimeToLive is refused
// fails and leaves the table it created without a time to live; the next
// start gives it the template's.
func TestStackFinishesTheTable(t *testing.T) {
	t.Parallel()
	other, err := dynamo.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close(context.Background())
	proxy := faultproxy.New(other.URL)
	defer proxy.Close()
	proxy.Inject("UpdateTimeToLive", 1, faultproxy.Status(http.StatusBadRequest,
		"com.amazonaws.dynamodb.v20120810#AccessDeniedException", "not authorized to perform: dynamodb:UpdateTimeToLive"))
	cfg := Config{Repo: "../..", APIAddr: "127.0.0.1:0", Logs: io.Discard, DynamoURL: proxy.URL(), SettingsFile: filepath.Join(t.TempDir(), "settings.json")}
	if s, err := Start(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "setting the time to live of table "+template.TableLogicalID) {
		if s != nil {
			_ = s.Close(context.Background())
		}
		t.Fatalf("a refused UpdateTimeToLive: %v", err)
	}
	ttl := func() *types.TimeToLiveDescription {
		out, err := localdb.Client(other.URL).DescribeTimeToLive(context.Background(), &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(template.TableLogicalID)})
		if err != nil {
			t.Fatal(err)
		}
		return out.TimeToLiveDescription
	}
	if d := ttl(); d.TimeToLiveStatus != types.TimeToLiveStatusDisabled {
		t.Fatalf("the time to live after the refusal: %s", d.TimeToLiveStatus)
	}
	startStack(t, Config{DynamoURL: proxy.URL()})
	if d := ttl(); d.TimeToLiveStatus != types.TimeToLiveStatusEnabled || aws.ToString(d.AttributeName) != "expiresAt" {
		t.Errorf("the time to live after the next start: %s on %q", d.TimeToLiveStatus, aws.ToString(d.AttributeName))
	}
	if n := proxy.Count("CreateTable"); n != 1 {
		t.Errorf("%d CreateTable requests", n)
	}
}

// TestDataFileKept: a data file with a bad line stops the start, and is
// left as it was; one that cannot be written stops it at once, not at the
// save when the stack stops.
func TestDataFileKept(t *testing.T) {
	t.Parallel()
	data := filepath.Join(t.TempDir(), "table.jsonl")
	content := `{"PK":{"S":"SESSION#a"},"SK":{"S":"METADATA"}}` + "\n\nnot json\n" + `{"PK":{"S":"SESSION#b"},"SK":{"S":"METADATA"}}` + "\n"
	if err := os.WriteFile(data, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := Config{Repo: "../..", DynamoAddr: "127.0.0.1:0", APIAddr: "127.0.0.1:0", SettingsFile: filepath.Join(t.TempDir(), "s.json"), Logs: io.Discard}
	cfg.DataFile = data
	if _, err := Start(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "line 3") {
		t.Errorf("a bad line: %v", err)
	}
	if got, _ := os.ReadFile(data); string(got) != content {
		t.Errorf("the data file changed: %q", got)
	}
	cfg.DataFile = "/dev/null/table.jsonl"
	if _, err := Start(context.Background(), cfg); err == nil {
		t.Error("an unwritable data file was accepted")
	}
}

// The limits AWS enforces before any function runs (docs/bad-input.md,
// Bodies): an HTTP API's body, and Lambda's synchronous invocation
// payload, counted on the whole event.
const (
	gatewayBodyLimit   = 10 << 20
	invokePayloadLimit = 6 << 20
)

// TestGatewayLimits: through the gateway and the built functions under the
// runtime emulator, a body is answered as AWS answers it. Over 256 KiB it
// is the function's 413 problem, up to an event of 6 MB (6,291,456 bytes,
// headers and all); with an event over that, API Gateway's 500, without an
// invocation (Lambda refuses it); over 10 MB, API Gateway's 413.
func TestGatewayLimits(t *testing.T) {
	t.Parallel()
	s := startStack(t, Config{})
	routes := template.Routes(s.Functions)
	var invocations, lastEvent atomic.Int64
	srv := httptest.NewServer(&gateway.Gateway{Routes: routes, Invoke: func(ctx context.Context, id string, event []byte) ([]byte, error) {
		invocations.Add(1)
		lastEvent.Store(int64(len(event)))
		return s.invoke(ctx, id, event)
	}})
	defer srv.Close()
	token := gateway.DevToken(map[string]any{"sub": "u1"})
	// post sends a JSON object of n bytes and tells the answer, and whether
	// the function was invoked.
	post := func(n int) (status int, contentType, body string, invoked bool) {
		t.Helper()
		before := invocations.Load()
		req, _ := http.NewRequest("POST", srv.URL+"/v1/sessions", strings.NewReader("{"+strings.Repeat(" ", n-2)+"}"))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("Content-Type"), string(b), invocations.Load() > before
	}
	problemOf := func(body string) string {
		var p struct{ Code string }
		_ = json.Unmarshal([]byte(body), &p)
		return p.Code
	}
	// A body between 256 KiB and the limit: the function refuses it. Its
	// event tells what the gateway adds to a body of this length.
	const probe = 1 << 20
	status, _, body, invoked := post(probe)
	if status != 413 || problemOf(body) != "payload_too_large" || !invoked {
		t.Fatalf("1 MiB: %d %s (invoked %v)", status, body, invoked)
	}
	atLimit := invokePayloadLimit - (int(lastEvent.Load()) - probe)
	status, _, body, invoked = post(atLimit)
	if status != 413 || problemOf(body) != "payload_too_large" || !invoked || lastEvent.Load() != invokePayloadLimit {
		t.Errorf("an event at the limit: %d %s (invoked %v, an event of %d bytes)", status, body, invoked, lastEvent.Load())
	}
	for _, n := range []int{atLimit + 1, gatewayBodyLimit} {
		if status, ct, body, invoked := post(n); status != 500 || ct != "application/json" || body != `{"message":"Internal Server Error"}` || invoked {
			t.Errorf("a body of %d bytes: %d %s %s (invoked %v)", n, status, ct, body, invoked)
		}
	}
	// A body well over the limit too: the client, still sending, gets the
	// answer, not a reset connection.
	for _, n := range []int{gatewayBodyLimit + 1, 12 << 20} {
		if status, ct, body, invoked := post(n); status != 413 || ct != "text; charset=utf-8" || body != "HTTP content length exceeded 10485760 bytes." || invoked {
			t.Errorf("%d bytes over 10 MB: %d %s %s (invoked %v)", n-gatewayBodyLimit, status, ct, body, invoked)
		}
	}
}

// TestLoopbackOnly: the stack refuses to listen beyond loopback.
func TestLoopbackOnly(t *testing.T) {
	if err := loopbackOnly("0.0.0.0:3000"); err == nil {
		t.Error("0.0.0.0 accepted")
	}
	if err := loopbackOnly("127.0.0.1:3000", "localhost:8000", "[::1]:1"); err != nil {
		t.Error(err)
	}
	cfg := Config{Repo: "../..", DynamoAddr: "127.0.0.1:0", APIAddr: "127.0.0.1:0", EventsAddr: "0.0.0.0:0", Logs: io.Discard}
	if _, err := Start(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "not a loopback address") {
		t.Errorf("an events address beyond loopback: %v", err)
	}
}
