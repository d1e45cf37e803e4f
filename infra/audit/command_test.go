package audit

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"

	"github.com/cloud-agent/control-plane/infra/local"
	"github.com/cloud-agent/control-plane/infra/local/dynamotest"
	"github.com/cloud-agent/control-plane/infra/local/faultproxy"
	"github.com/cloud-agent/control-plane/infra/local/motoserver"
	"github.com/cloud-agent/control-plane/infra/local/paramstore"
	"github.com/cloud-agent/control-plane/infra/template"
	"github.com/cloud-agent/control-plane/shared/environment"
	"github.com/cloud-agent/control-plane/shared/settings"
	"github.com/cloud-agent/control-plane/shared/trigger"
)

// run runs the command with its flags and returns what it printed.
func run(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	o, err := ParseFlags(args, &bytes.Buffer{})
	if err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	var out, errs bytes.Buffer
	err = Run(context.Background(), o, &out, &errs)
	return out.String(), errs.String(), err
}

// contractObject is the -json object as the contract names its members.
func contractObject(t *testing.T, out string) map[string]any {
	t.Helper()
	var got map[string]any
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	return got
}

// TestCommand is make audit against an endpoint and the local settings
// file: the contract's object with -json, a table without, the rewrite's
// dry run and run, and a second run that finds nothing to do.
func TestCommand(t *testing.T) {
	t.Parallel()
	b := dynamotest.Backends(t)[0]
	c, name := dynamotest.Table(t, b)
	fallsBack := seed(t, c, name)
	file := filepath.Join(t.TempDir(), "settings.json")
	data, _ := json.Marshal([]settings.Parameter{{Name: "allocation/selectable", Type: "StringList",
		Value: "cloudflare-containers-standard-3,cloudflare-containers-standard-4,vercel-small,isolated-standard"}})
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
	base := []string{"-endpoint", b.URL, "-table", name, "-settings", file}

	out, errs, err := run(t, append(base, "-json", "-segments", "3")...)
	if err != nil {
		t.Fatal(err)
	}
	// The contract's object, every member spelled as section 8 spells it.
	want := `{"scanned": 80,
		"sessions": {"current": 6, "legacyFlat": 3, "sharedKind": 1, "routeKey": 1, "rawOwnerKey": 2, "legacyIsolatedPrefix": 2,
			"sbxNoKind": 1, "invalid": 27, "onRetiredProvider": 11, "onRetiredAllocation": 5},
		"ledger": {"completed": 5, "inProgress": 2, "failed": 1, "recordsShared": 2, "recordsRetired": 2},
		"triggers": {"total": 14, "paused": 3, "webhook": 1, "fallback": {"retired": 2, "providerRetired": 2, "unknown": 2, "notSelectable": 2}},
		"environments": {"total": 7, "fallback": {"retired": 1, "providerRetired": 1, "unknown": 1, "notSelectable": 1}}}`
	if got := contractObject(t, out); !reflect.DeepEqual(got, contractObject(t, want)) {
		t.Errorf("-json: %s", out)
	}
	// The members in the contract's order: the environments after the
	// triggers.
	if i, j := strings.Index(out, `"triggers"`), strings.Index(out, `"environments"`); i < 0 || j < i {
		t.Errorf("-json's order: %s", out)
	}
	if !strings.Contains(errs, "table: "+name+" on "+b.URL) || !strings.Contains(errs, "settings: the local file "+file) || !strings.Contains(errs, `"isolated-standard" can never be selected`) {
		t.Errorf("the settings' warning: %q", errs)
	}

	o, _ := ParseFlags(base, &bytes.Buffer{})
	var text, bar bytes.Buffer
	o.Progress = &bar // a terminal
	if err := Run(context.Background(), o, &text, &bytes.Buffer{}); err != nil || !strings.HasPrefix(text.String(), name+": 80 items scanned\n") ||
		!strings.Contains(text.String(), "  fall back: not selectable") || !strings.Contains(text.String(), "\nEnvironments\n") {
		t.Errorf("the table: %v\n%s", err, text.String())
	}
	if !strings.Contains(bar.String(), "scanning "+name) {
		t.Errorf("no progress bar on a terminal: %q", bar.String())
	}

	out, _, err = run(t, append(base, "-rewrite-triggers", "-dry-run")...)
	if err != nil || strings.Count(out, " would clear: ") != len(fallsBack) || !strings.Contains(out, "rewrite: 12 would clear") ||
		!strings.Contains(out, `saved "vercel-huge"`) || !strings.Contains(out, `saved {"provider":{"id":"aws","account":"kilo"},"instanceType":"x"}`) ||
		!strings.Contains(out, "environment "+sharedEraEnvironment+` would clear: retired, saved "cloudflare-shared"`) || strings.Count(out, "\nenvironment env_") != 4 {
		t.Errorf("dry run: %v\n%s", err, out)
	}
	_, errs, err = run(t, append(base, "-rewrite-triggers", "-json")...)
	if err != nil || strings.Count(errs, " cleared: ") != len(fallsBack) {
		t.Errorf("rewrite: %v\n%s", err, errs)
	}
	out, _, err = run(t, append(base, "-json")...)
	none := map[string]any{"retired": 0.0, "providerRetired": 0.0, "unknown": 0.0, "notSelectable": 0.0}
	if got := contractObject(t, out); err != nil ||
		!reflect.DeepEqual(got["triggers"], map[string]any{"total": 14.0, "paused": 3.0, "webhook": 1.0, "fallback": none}) ||
		!reflect.DeepEqual(got["environments"], map[string]any{"total": 7.0, "fallback": none}) {
		t.Errorf("after the rewrite: %v %v", got, err)
	}
	out, _, err = run(t, append(base, "-rewrite-triggers")...)
	if err != nil || !strings.Contains(out, "rewrite: 0 cleared") {
		t.Errorf("a second rewrite: %v\n%s", err, out)
	}
}

// TestCommandParameterStore reads the settings from Parameter Store under
// -config-path (moto's), through the same settings code as the functions.
func TestCommandParameterStore(t *testing.T) {
	url := motoserver.URL(t)
	t.Setenv("AWS_ENDPOINT_URL_SSM", url)
	t.Setenv("AWS_ACCESS_KEY_ID", "local")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "local")
	t.Setenv("AWS_REGION", "us-east-1")
	b := dynamotest.Backends(t)[0]
	c, name := dynamotest.Table(t, b)
	seed(t, c, name)
	sm := paramstore.Client(url)
	if _, err := sm.PutParameter(context.Background(), &ssm.PutParameterInput{Name: aws.String("/cloud-agent/audit-test/allocation/retired"),
		Type: ssmtypes.ParameterTypeStringList, Value: aws.String("vercel-small"), Overwrite: aws.Bool(true)}); err != nil {
		t.Fatal(err)
	}
	out, errs, err := run(t, "-endpoint", b.URL, "-table", name, "-config-path", "/cloud-agent/audit-test", "-json")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(errs, "settings: Parameter Store under /cloud-agent/audit-test") {
		t.Errorf("the settings' source: %q", errs)
	}
	got := contractObject(t, out)["sessions"].(map[string]any)
	if got["onRetiredAllocation"] != 7.0 {
		t.Errorf("vercel-small retired in Parameter Store: %v", got)
	}
	// A path that holds no parameter (mistyped, say) judges by the
	// built-in settings: a rewrite under it is refused, and writes nothing.
	before := items(t, c, name)
	_, _, err = run(t, "-endpoint", b.URL, "-table", name, "-config-path", "/cloud-agent/no-such-stage", "-rewrite-triggers")
	if err == nil || !strings.Contains(err.Error(), "no parameter under /cloud-agent/no-such-stage") {
		t.Errorf("a rewrite under an empty path: %v", err)
	}
	if !reflect.DeepEqual(items(t, c, name), before) {
		t.Error("the refused rewrite changed the table")
	}
}

// TestFlags: the flags the contract names, and the combinations refused.
func TestFlags(t *testing.T) {
	t.Parallel()
	o, err := ParseFlags(nil, &bytes.Buffer{})
	if err != nil || o.Table != localTable || o.Segments != 4 || o.Endpoint != "" || o.Region != "" || o.JSON || o.RewriteTriggers {
		t.Errorf("defaults: %+v %v", o, err)
	}
	for _, args := range [][]string{
		{"-dry-run"}, {"-segments", "0"}, {"-segments", "1001"}, {"-region", "eu-west-1", "-endpoint", "http://x"}, {"extra"},
		{"-region", "eu-west-1"}, // a table in AWS, judged by a local file
		{"-region", "eu-west-1", "-rewrite-triggers"},
	} {
		if _, err := ParseFlags(args, &bytes.Buffer{}); err == nil {
			t.Errorf("%v: accepted", args)
		}
	}
}

// TestLocalStack: with no flag the audit reads the local stack's table on
// the local stack's DynamoDB endpoint (make run).
func TestLocalStack(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "") // else the SDK's credentials are used
	o, err := ParseFlags(nil, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	c, _, err := clients(context.Background(), o)
	if err != nil || o.Table != template.TableLogicalID || tableEndpoint(c) != "http://"+local.DynamoAddr {
		t.Errorf("the audit reads %s on %s (%v); the local stack serves %s on http://%s", o.Table, tableEndpoint(c), err, template.TableLogicalID, local.DynamoAddr)
	}
}

// TestRewriteUnsettled: a rewrite whose writes fail leaves the triggers
// and environments as they were, says which were not cleared, and fails,
// so that it is run again; the next run clears them.
func TestRewriteUnsettled(t *testing.T) {
	t.Parallel()
	b := dynamotest.Backends(t)[0]
	c, name := dynamotest.Table(t, b)
	fallsBack := seed(t, c, name)
	file := filepath.Join(t.TempDir(), "settings.json")
	data, _ := json.Marshal([]settings.Parameter{{Name: "allocation/selectable", Type: "StringList", Value: "cloudflare-containers-standard-3,cloudflare-containers-standard-4,vercel-small"}})
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
	p := faultproxy.New(b.URL)
	t.Cleanup(p.Close)
	p.InjectEvery("UpdateItem", 1, faultproxy.DynamoInternalError)         // a trigger's
	p.InjectEvery("TransactWriteItems", 1, faultproxy.DynamoInternalError) // an environment's
	before := items(t, c, name)
	out, _, err := run(t, "-endpoint", p.URL(), "-table", name, "-settings", file, "-rewrite-triggers")
	if err == nil || !strings.Contains(err.Error(), "run the rewrite again") || strings.Count(out, " not cleared: ") != len(fallsBack) ||
		!strings.Contains(out, fmt.Sprintf("%d not settled", len(fallsBack))) {
		t.Errorf("%v\n%s", err, out)
	}
	if !reflect.DeepEqual(items(t, c, name), before) {
		t.Error("a failed rewrite changed the table")
	}
	p.ClearEvery()
	if out, _, err := run(t, "-endpoint", p.URL(), "-table", name, "-settings", file, "-rewrite-triggers"); err != nil || strings.Count(out, " cleared: ") != len(fallsBack) {
		t.Errorf("run again: %v\n%s", err, out)
	}
}

// TestWriteRewrite: a trigger or an environment that kept changing fails
// the run too; each line names what it is.
func TestWriteRewrite(t *testing.T) {
	t.Parallel()
	for _, fb := range []Fallback{
		{Trigger: &trigger.Trigger{ID: "trg_a", SavedAllocation: "cloudflare-shared"}, Class: "retired"},
		{Environment: &environment.Environment{ID: "env_a", SavedAllocation: "cloudflare-shared"}, Class: "retired"},
	} {
		var out bytes.Buffer
		err := writeRewrite(&out, []Outcome{{Fallback: fb, Result: Changing}}, false)
		if line := fb.Kind() + " " + fb.ID() + ` kept changing; not cleared: retired, saved "cloudflare-shared"`; err == nil || !strings.Contains(out.String(), line) {
			t.Errorf("%v %s", err, out.String())
		}
	}
}
