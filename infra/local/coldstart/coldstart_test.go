package coldstart

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/cloud-agent/control-plane/infra/local/childproc"
	"github.com/cloud-agent/control-plane/infra/local/dynamotest"
	"github.com/cloud-agent/control-plane/infra/local/eventbus"
	"github.com/cloud-agent/control-plane/infra/local/kms"
	"github.com/cloud-agent/control-plane/infra/local/lambdarun"
	"github.com/cloud-agent/control-plane/infra/local/localdb"
	"github.com/cloud-agent/control-plane/infra/local/paramstore"
	"github.com/cloud-agent/control-plane/infra/template"
)

// coldStartSamples is how many cold starts each case's median is taken
// over, after one round that is not counted.
const coldStartSamples = 15

// The floors' names among the functions' in the benchmarks, and their
// folders under testdata: hello world, and the SDK's floor (hello world
// with the DynamoDB and SSM clients every function builds).
const (
	helloName = "hello"
	sdkFloor  = "sdk-floor"
)

// coldCase is one bootstrap and the first event it answers.
type coldCase struct {
	name      string // the sub-benchmark: <LogicalId>/<no-io|settings|dynamodb>, hello or sdk-floor
	bootstrap string
	env       []string
	timeout   time.Duration
	// event returns the event, after planting what it needs in the table.
	event func() ([]byte, error)
	// check says whether the answer is the one the case is about.
	check func(out []byte) error
}

// coldEvent is a sample event of an HTTP function, with the body's
// sandboxAllocation set to allocation when set (under the body's member
// in, when set), and its answer.
type coldEvent struct {
	kind, file, allocation, in string
	status                     int
	code                       string
	// fresh is a header given a new value at each invocation: a new
	// delivery's key.
	fresh string
}

// coldEvents are, for each HTTP function, its cases besides no-io (which
// is the first event without its claims, unless the first is of kind
// no-io): settings reads the settings and nothing else (for the start and
// the trigger and the environment, an allocation on a retired runtime,
// which the policy from the settings refuses: check 4); dynamodb reads
// the settings, then reads or writes the table (the environments: a list
// of the caller's). The hook has no caller: its no-io is a malformed
// trigger id, 401 before any I/O, and its dynamodb a new delivery (a
// token trigger's, a new Idempotency-Key each time): the table, KMS for
// the trigger's secret, the settings, then the start's transaction.
var coldEvents = map[string][]coldEvent{
	"AllocationLookupFunction": {
		{"settings", "allocations-valid.json", "", "", 200, "", ""},
		{"dynamodb", "lookup-valid.json", "", "", 200, "", ""},
	},
	"SessionStartFunction": {
		{"settings", "valid.json", "cloudflare-single", "runtime", 422, "sandbox_runtime_retired", ""},
		{"dynamodb", "valid.json", "", "", 201, "", ""},
	},
	"TriggersFunction": {
		{"settings", "create-valid.json", "cloudflare-single", "", 422, "sandbox_runtime_retired", ""},
		{"dynamodb", "create-valid.json", "", "", 201, "", ""},
	},
	"EnvironmentsFunction": {
		{"settings", "create-valid.json", "cloudflare-single", "", 422, "sandbox_runtime_retired", ""},
		{"dynamodb", "list-valid.json", "", "", 200, "", ""},
	},
	"TriggerHookFunction": {
		{kind: "no-io", file: "invalid-unknown-id.json", status: 401, code: "unauthorized"},
		{kind: "dynamodb", file: "bearer-valid.json", status: 201, fresh: "idempotency-key"},
	},
	// The runtime routes have no caller either: their no-io is another
	// method (405 before any I/O), their dynamodb the launch read of the
	// planted session (the table, then KMS for its token).
	"RuntimeFunction": {
		{kind: "no-io", file: "claim-invalid-method.json", status: 405, code: "method_not_allowed"},
		{kind: "dynamodb", file: "launch-valid.json", status: 200},
	},
}

// BenchmarkColdStart measures, under the runtime interface emulator, the
// time from the invocation that starts a bootstrap's process to its first
// answer (ms-median, and x-hello against the hello-world bootstrap built
// the same way), for the SDK's floor (testdata/sdk-floor) and for each
// function with an event that needs no I/O and
// with one that reads the settings (for the HTTP functions also one that
// reads or writes the table). ms-init is the part the emulator reports as
// the process's initialisation (until it asks for its first event), and
// ms-warm the same event answered again by the same process. Every sample
// is a new emulator and process; the cases take turns, so that a slower
// moment of the machine falls on all of them. One iteration takes every
// sample: run it with -benchtime=1x.
func BenchmarkColdStart(b *testing.B) {
	ctx := context.Background()
	tpl, fns, ids := templateFunctions(b)
	dir := b.TempDir()
	if err := lambdarun.Build(ctx, io.Discard, "../../..", dir, ids...); err != nil {
		b.Fatal(err)
	}
	hello, err := buildFloor(ctx, runtime.GOARCH, "../../..", dir, helloName)
	if err != nil {
		b.Fatal(err)
	}
	sdk, err := buildFloor(ctx, runtime.GOARCH, "../../..", dir, sdkFloor)
	if err != nil {
		b.Fatal(err)
	}
	rie, err := lambdarun.EmulatorPath(ctx, io.Discard, "../../..")
	if err != nil {
		b.Fatal(err)
	}
	client, dynamoURL := benchTable(b)
	configPath := fns[0].Environment["CONFIG_PATH"]
	settings := filepath.Join(dir, "settings.json")
	if err := paramstore.Seed(settings, template.Settings(tpl, configPath)); err != nil {
		b.Fatal(err)
	}
	ssm := httptest.NewServer(&paramstore.Server{File: settings, Path: configPath})
	b.Cleanup(ssm.Close)

	kmsEnv := sampleKMS(b)

	helloFn := template.Function{LogicalID: helloName, Timeout: 3 * time.Second, MemoryMB: 128}
	anonymous, err := sampleEvent("SessionStartFunction", coldEvent{file: "valid.json"}, true)
	if err != nil {
		b.Fatal(err)
	}
	floorEnv := lambdarun.Environment(helloFn, dynamoURL, ssm.URL)
	answered := func() ([]byte, error) { return anonymous, nil }
	cases := []coldCase{
		{name: helloName, bootstrap: hello, env: floorEnv, timeout: helloFn.Timeout, event: answered, check: wantAnswer(200, "")},
		{name: sdkFloor, bootstrap: sdk, env: floorEnv, timeout: helloFn.Timeout, event: answered, check: wantAnswer(200, "")},
	}
	for _, fn := range fns {
		c := coldCase{bootstrap: filepath.Join(dir, fn.LogicalID, "bootstrap"), env: lambdarun.Environment(fn, dynamoURL, ssm.URL, kmsEnv...), timeout: fn.Timeout}
		switch {
		case fn.LogicalID == "SessionEventsFunction":
			cases = append(cases, eventsCase(b, c, fn))
			continue
		case len(fn.Routes) == 0:
			cases = append(cases, firingCases(ctx, b, c, fn, client)...)
			continue
		}
		evs, ok := coldEvents[fn.LogicalID]
		if !ok {
			b.Fatalf("no cold start events for %s", fn.LogicalID)
		}
		noIO := c
		noIO.name = fn.LogicalID + "/no-io"
		first, status, code := evs[0], 401, "unauthorized"
		if first.kind == "no-io" {
			evs, status, code = evs[1:], first.status, first.code
		}
		event, err := sampleEvent(fn.LogicalID, first, true)
		if err != nil {
			b.Fatal(err)
		}
		noIO.event, noIO.check = func() ([]byte, error) { return event, nil }, wantAnswer(status, code)
		cases = append(cases, noIO)
		for _, ev := range evs {
			event, err := sampleEvent(fn.LogicalID, ev, false)
			if err != nil {
				b.Fatal(err)
			}
			k := c
			k.name = fn.LogicalID + "/" + ev.kind
			k.event, k.check = func() ([]byte, error) { return event, nil }, wantAnswer(ev.status, ev.code)
			if ev.fresh != "" {
				k.event = freshHeader(event, ev.fresh)
			}
			cases = append(cases, k)
		}
	}

	samples := make([][]coldSample, len(cases))
	for round := range coldStartSamples + 1 {
		for i := range cases {
			// Each round starts with another case.
			k := (i + round) % len(cases)
			s, err := coldStart(ctx, rie, cases[k])
			if err != nil {
				b.Fatalf("%s: %v", cases[k].name, err)
			}
			if round > 0 {
				samples[k] = append(samples[k], s)
			}
		}
	}
	floor := medianOf(samples[0], func(s coldSample) time.Duration { return s.cold })
	for i, c := range cases {
		cold := medianOf(samples[i], func(s coldSample) time.Duration { return s.cold })
		b.Run(c.name, func(b *testing.B) {
			b.ReportMetric(0, "ns/op")
			b.ReportMetric(ms(cold), "ms-median")
			b.ReportMetric(float64(cold)/float64(floor), "x-hello")
			b.ReportMetric(ms(medianOf(samples[i], func(s coldSample) time.Duration { return s.init })), "ms-init")
			b.ReportMetric(ms(medianOf(samples[i], func(s coldSample) time.Duration { return s.warm })), "ms-warm")
		})
	}
}

// firingCases are the firing's cases of fn on c: no-io, a Scheduled Event
// ahead of every slot; settings, a due trigger planted on client before
// each invocation, fired.
func firingCases(ctx context.Context, b *testing.B, c coldCase, fn template.Function, client *dynamodb.Client) []coldCase {
	ahead, err := os.ReadFile("../../../events/" + fn.LogicalID + "/scheduled-event-ahead.json")
	if err != nil {
		b.Fatal(err)
	}
	due, err := os.ReadFile("../../../events/" + fn.LogicalID + "/scheduled-event.json")
	if err != nil {
		b.Fatal(err)
	}
	noIO, reads := c, c
	noIO.name, reads.name = fn.LogicalID+"/no-io", fn.LogicalID+"/settings"
	noIO.event, noIO.check = func() ([]byte, error) { return ahead, nil }, wantSummary(0)
	planted := 0
	reads.event = func() ([]byte, error) {
		planted++
		return due, plantDueTrigger(ctx, client, planted)
	}
	reads.check = wantSummary(1)
	return []coldCase{noIO, reads}
}

// eventsCase is the session events function's case of fn on c: the sample
// stream batch of one new session, announced on an EventBridge stand-in
// (KMS for the token, then PutEvents), with no item failure.
func eventsCase(b *testing.B, c coldCase, fn template.Function) coldCase {
	bus := httptest.NewServer(eventbus.New("SessionsBus", io.Discard))
	b.Cleanup(bus.Close)
	batch, err := os.ReadFile("../../../events/" + fn.LogicalID + "/stream-insert-valid.json")
	if err != nil {
		b.Fatal(err)
	}
	c.name = fn.LogicalID + "/kms-events"
	c.env = append(slices.Clone(c.env), "AWS_ENDPOINT_URL_EVENTBRIDGE="+bus.URL, "API_URL=http://127.0.0.1:3000")
	c.event = func() ([]byte, error) { return batch, nil }
	c.check = func(out []byte) error {
		if string(out) != `{"batchItemFailures":null}` {
			return fmt.Errorf("%s, want no item failure", out)
		}
		return nil
	}
	return c
}

// coldSample is one cold start: the first answer, the emulator's init
// phase within it, and the same event answered again.
type coldSample struct{ cold, init, warm time.Duration }

// initReport is the emulator's log line of a process's initialisation.
var initReport = regexp.MustCompile(`INIT REPORT\(durationMs: ([0-9.]+)\)`)

// coldStart starts the emulator, then times one invocation, which starts
// the bootstrap's process, waits until it asks for its first event, and
// returns its answer; then a second one.
func coldStart(ctx context.Context, rie string, c coldCase) (coldSample, error) {
	var s coldSample
	var logs bytes.Buffer
	l, err := lambdarun.Start(rie, c.name, c.bootstrap, c.env, c.timeout, &logs, lambdarun.EmulatorInfo)
	if err != nil {
		return s, err
	}
	for _, took := range []*time.Duration{&s.cold, &s.warm} {
		event, err := c.event()
		if err != nil {
			l.Close()
			return s, err
		}
		begun := time.Now()
		out, err := l.Invoke(ctx, event)
		*took = time.Since(begun)
		if err == nil {
			err = c.check(out)
		}
		if err != nil {
			l.Close()
			return s, err
		}
	}
	l.Close() // the emulator's output is all written once it has exited
	m := initReport.FindStringSubmatch(logs.String())
	if m == nil {
		return s, fmt.Errorf("the emulator reported no initialisation:\n%s", logs.String())
	}
	d, err := strconv.ParseFloat(m[1], 64)
	s.init = time.Duration(d * float64(time.Millisecond))
	return s, err
}

func medianOf(samples []coldSample, of func(coldSample) time.Duration) time.Duration {
	var d []time.Duration
	for _, s := range samples {
		d = append(d, of(s))
	}
	slices.Sort(d)
	if len(d)%2 == 1 {
		return d[len(d)/2]
	}
	return (d[len(d)/2-1] + d[len(d)/2]) / 2
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// sampleEvent is a function's sample API event, with ev's allocation in its
// body when ev has one (replacing the member ev.in), and without the authorizer's claims when anonymous
// (a 401 that the function answers before any I/O).
func sampleEvent(function string, ev coldEvent, anonymous bool) ([]byte, error) {
	data, err := os.ReadFile("../../../events/" + function + "/" + ev.file)
	if err != nil {
		return nil, err
	}
	var req events.APIGatewayV2HTTPRequest
	if err := json.Unmarshal(data, &req); err != nil {
		return nil, err
	}
	if anonymous {
		req.RequestContext.Authorizer = nil
	}
	if ev.allocation != "" {
		var body map[string]any
		if err := json.Unmarshal([]byte(req.Body), &body); err != nil {
			return nil, err
		}
		member := body
		if ev.in != "" {
			member = map[string]any{}
			body[ev.in] = member
		}
		member["sandboxAllocation"] = ev.allocation
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		req.Body = string(b)
		delete(req.Headers, "content-length")
	}
	return json.Marshal(req)
}

// freshHeader is the event with the header set to a new value at each
// call.
func freshHeader(event []byte, header string) func() ([]byte, error) {
	n := 0
	return func() ([]byte, error) {
		var req events.APIGatewayV2HTTPRequest
		if err := json.Unmarshal(event, &req); err != nil {
			return nil, err
		}
		n++
		req.Headers[header] = fmt.Sprintf("cold-start-%d", n)
		return json.Marshal(req)
	}
}

// sampleKMS serves the KMS stand-in with the committed sample keys, those
// the webhook samples' secrets were derived with, and returns what the
// functions' environment needs to reach it.
func sampleKMS(b *testing.B) []string {
	file := filepath.Join(b.TempDir(), "kms-keys.json")
	data, err := os.ReadFile("../kms/testdata/sample-keys.json")
	if err == nil {
		err = os.WriteFile(file, data, 0o600)
	}
	if err != nil {
		b.Fatal(err)
	}
	keys, err := kms.Open(file)
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(&kms.Server{Keys: keys})
	b.Cleanup(srv.Close)
	return keys.Environment(srv.URL)
}

func wantAnswer(status int, code string) func([]byte) error {
	return func(out []byte) error {
		var resp events.APIGatewayV2HTTPResponse
		if err := json.Unmarshal(out, &resp); err != nil {
			return fmt.Errorf("%s: %w", out, err)
		}
		var body struct{ Code string }
		_ = json.Unmarshal([]byte(resp.Body), &body)
		if resp.StatusCode != status || body.Code != code {
			return fmt.Errorf("status %d %q, want %d %q: %s", resp.StatusCode, body.Code, status, code, resp.Body)
		}
		return nil
	}
}

func wantSummary(fired int) func([]byte) error {
	return func(out []byte) error {
		var s struct{ Due, Fired, Failed int }
		if err := json.Unmarshal(out, &s); err != nil {
			return fmt.Errorf("%s: %w", out, err)
		}
		if s.Due != fired || s.Fired != fired || s.Failed != 0 {
			return fmt.Errorf("%s, want %d due and fired", out, fired)
		}
		return nil
	}
}

// dueTriggerID is the id of the planted trigger's fixture.
const dueTriggerID = "trg_9b2e4f61-0c3a-4d8e-b5f7-1a6c3e9d2b40"

// plantDueTrigger puts the fixture of a weekday trigger, due before the
// sample scheduled event, under a new id (the n-th), so that each firing
// starts a new session.
func plantDueTrigger(ctx context.Context, c *dynamodb.Client, n int) error {
	data, err := os.ReadFile("../../../shared/store/testdata/trigger-weekdays.json")
	if err != nil {
		return err
	}
	if !bytes.Contains(data, []byte(dueTriggerID)) {
		return errors.New("the trigger fixture has another id")
	}
	data = bytes.ReplaceAll(data, []byte(dueTriggerID), fmt.Appendf(nil, "%s%012x", dueTriggerID[:len(dueTriggerID)-12], n))
	return putItem(ctx, c, data)
}

func putItem(ctx context.Context, c *dynamodb.Client, data []byte) error {
	item, err := localdb.UnmarshalItem(data)
	if err != nil {
		return err
	}
	_, err = c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(template.TableLogicalID), Item: item})
	return err
}

// benchTable serves the embedded endpoint with the template's table,
// holding the session that the sample lookup and launch read read (as
// started now, so that the sample token is alive: it lives at most 7 days
// and 24 hours after the start) and the token trigger that the sample
// delivery is for.
func benchTable(b *testing.B) (*dynamodb.Client, string) {
	c, url := dynamotest.LocalTable(b)
	for _, f := range []string{"items/session-v2-current.json", "trigger-webhook-token.json"} {
		data, err := os.ReadFile("../../../shared/store/testdata/" + f)
		data = bytes.Replace(data, []byte(`"N": "1796032800000"`), fmt.Appendf(nil, `"N": "%d"`, time.Now().UnixMilli()), 1)
		if err == nil {
			err = putItem(context.Background(), c, data)
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	return c, url
}

// templateFunctions reads template.yaml: the template, its functions and
// their logical ids.
func templateFunctions(b *testing.B) (*template.Template, []template.Function, []string) {
	tpl, err := template.Load("../../../template.yaml")
	if err != nil {
		b.Fatal(err)
	}
	fns, err := template.Functions(tpl)
	if err != nil {
		b.Fatal(err)
	}
	var ids []string
	for _, fn := range fns {
		ids = append(ids, fn.LogicalID)
	}
	return tpl, fns, ids
}

// BenchmarkSize reports the size of each function's bootstrap, built
// exactly as `make build-<LogicalId>` builds it for Lambda (arm64,
// stripped), and of the zip that deploys it (deflate, as `sam` zips it),
// beside the hello-world bootstrap and the SDK's floor built the same way.
func BenchmarkSize(b *testing.B) {
	ctx := context.Background()
	_, _, ids := templateFunctions(b)
	dir := b.TempDir()
	if err := lambdarun.BuildFor(ctx, io.Discard, "arm64", "../../..", dir, ids...); err != nil {
		b.Fatal(err)
	}
	for _, floor := range []string{helloName, sdkFloor} {
		if _, err := buildFloor(ctx, "arm64", "../../..", dir, floor); err != nil {
			b.Fatal(err)
		}
	}
	for _, id := range append(ids, helloName, sdkFloor) {
		path := filepath.Join(dir, id, "bootstrap")
		info, err := os.Stat(path)
		if err != nil {
			b.Fatal(err)
		}
		zipped, err := zipSize(path)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(id, func(b *testing.B) {
			b.ReportMetric(0, "ns/op")
			b.ReportMetric(float64(info.Size())/(1<<20), "MiB")
			b.ReportMetric(float64(zipped)/(1<<20), "MiB-zipped")
		})
	}
}

// zipSize is the size of a deployment zip holding the file as bootstrap.
func zipSize(path string) (int, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	h := &zip.FileHeader{Name: "bootstrap", Method: zip.Deflate}
	h.SetMode(0o755)
	w, err := zw.CreateHeader(h)
	if err != nil {
		return 0, err
	}
	if _, err := w.Write(data); err != nil {
		return 0, err
	}
	if err := zw.Close(); err != nil {
		return 0, err
	}
	return buf.Len(), nil
}

// buildFloor builds testdata/<name> into dir/<name>/bootstrap with the
// very command the Makefile runs for a function (as `make -n` prints it),
// for goarch, and returns the bootstrap's path.
func buildFloor(ctx context.Context, goarch, repo, dir, name string) (string, error) {
	out := filepath.Join(dir, name)
	cmd := childproc.CommandContext(ctx, "make", "-n", "--no-print-directory", "build-SessionStartFunction",
		"ARTIFACTS_DIR="+out, "LAMBDA_GOARCH="+goarch)
	cmd.Dir = repo
	script, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("reading the build command: %w", err)
	}
	const pkg = "./functions/sessionstart"
	if strings.Count(string(script), pkg) != 1 {
		return "", fmt.Errorf("the build command does not name %s once:\n%s", pkg, script)
	}
	cmd = childproc.CommandContext(ctx, "sh", "-c", strings.Replace(string(script), pkg, "./infra/local/coldstart/testdata/"+name, 1))
	cmd.Dir = repo
	if log, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building %s: %w\n%s", name, err, log)
	}
	return filepath.Join(out, "bootstrap"), nil
}
