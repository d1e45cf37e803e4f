package local

import (
	"encoding/json"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/awslabs/goformation/v7/intrinsics"

	"github.com/cloud-agent/control-plane/shared/firing"
	"github.com/cloud-agent/control-plane/shared/lambdaenv"
)

func loadFunctions(t *testing.T) []Function {
	t.Helper()
	tpl, err := LoadTemplate("../../template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	fns, err := Functions(tpl)
	if err != nil {
		t.Fatal(err)
	}
	return fns
}

// TestTemplateRoutes: every route of the contract is routed to its
// function, behind the JWT authorizer, and each of its paths on ANY
// without it (so that another method is a 405 from the function, before
// any token is checked); no other route exists.
func TestTemplateRoutes(t *testing.T) {
	want := map[string]string{
		"POST /v1/sessions":                       "SessionStartFunction",
		"GET /v1/sessions/{sessionId}/allocation": "AllocationLookupFunction",
		"GET /v1/allocations":                     "AllocationLookupFunction",
		"POST /v1/triggers":                       "TriggersFunction",
		"GET /v1/triggers":                        "TriggersFunction",
		"GET /v1/triggers/{triggerId}":            "TriggersFunction",
		"DELETE /v1/triggers/{triggerId}":         "TriggersFunction",
	}
	got := map[string]Route{}
	for _, fn := range loadFunctions(t) {
		for _, r := range fn.Routes {
			if _, dup := got[r.Key()]; dup {
				t.Errorf("route %s twice", r.Key())
			}
			got[r.Key()] = r
		}
	}
	paths := map[string]bool{}
	for key, fn := range want {
		r, ok := got[key]
		if !ok || r.Function != fn || !r.JWT {
			t.Errorf("%s: %+v, want %s behind the authorizer", key, r, fn)
		}
		path := strings.SplitN(key, " ", 2)[1]
		paths[path] = true
		any, ok := got["ANY "+path]
		if !ok || any.Function != fn {
			t.Errorf("ANY %s: %+v, want %s", path, any, fn)
		}
	}
	// No route is reachable without a token, the catch-alls included.
	for key, r := range got {
		if !r.JWT {
			t.Errorf("%s has no authorizer", key)
		}
	}
	if len(got) != len(want)+len(paths) {
		t.Errorf("%d routes, want %d: %v", len(got), len(want)+len(paths), got)
	}
}

// TestTemplateSchedule: the firing runs every minute, with retries and a
// dead-letter queue for the events that still fail; no other function
// has a schedule.
func TestTemplateSchedule(t *testing.T) {
	for _, fn := range loadFunctions(t) {
		want := []string(nil)
		if fn.LogicalID == "TriggerFireFunction" {
			want = []string{"rate(1 minute)"}
		}
		if !slices.Equal(fn.Schedules, want) {
			t.Errorf("%s: schedules %v, want %v", fn.LogicalID, fn.Schedules, want)
		}
	}
	data, err := os.ReadFile("../../template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	raw, err := intrinsics.ProcessYAML(data, nil)
	if err != nil {
		t.Fatal(err)
	}
	var tpl struct {
		Resources map[string]struct {
			Type       string
			Properties struct {
				EventInvokeConfig struct {
					MaximumRetryAttempts *int
					DestinationConfig    struct{ OnFailure struct{ Type string } }
				}
				Events map[string]struct {
					Type       string
					Properties struct {
						RetryPolicy      struct{ MaximumRetryAttempts *int }
						DeadLetterConfig map[string]any
					}
				}
			}
		}
	}
	if err := json.Unmarshal(raw, &tpl); err != nil {
		t.Fatal(err)
	}
	fire := tpl.Resources["TriggerFireFunction"].Properties
	ev := fire.Events["EveryMinute"]
	if ev.Type != "Schedule" || ev.Properties.RetryPolicy.MaximumRetryAttempts == nil || !hasArn(ev.Properties.DeadLetterConfig) {
		t.Errorf("the schedule has no retry policy or dead-letter queue: %+v", ev)
	}
	if fire.EventInvokeConfig.MaximumRetryAttempts == nil || fire.EventInvokeConfig.DestinationConfig.OnFailure.Type != "SQS" {
		t.Errorf("failed invocations are not retried into the queue: %+v", fire.EventInvokeConfig)
	}
	if tpl.Resources["TriggerFireDeadLetterQueue"].Type != "AWS::SQS::Queue" {
		t.Error("no dead-letter queue")
	}
}

// TestTemplateFunctions: each function is built by the Makefile's
// build-<LogicalId> target from an existing folder, runs bootstrap on
// provided.al2023 arm64, and has exactly the environment the code reads.
func TestTemplateFunctions(t *testing.T) {
	for _, fn := range loadFunctions(t) {
		t.Run(fn.LogicalID, func(t *testing.T) {
			if fn.BuildMethod != "makefile" || fn.Runtime != "provided.al2023" || fn.Handler != "bootstrap" {
				t.Errorf("%+v", fn)
			}
			out, err := exec.Command("make", "--no-print-directory", "-C", "../..", "-n", "build-"+fn.LogicalID, "ARTIFACTS_DIR=/tmp/x").CombinedOutput()
			if err != nil {
				t.Fatalf("make build-%s: %v\n%s", fn.LogicalID, err, out)
			}
			for _, flag := range []string{"CGO_ENABLED=0", "GOOS=linux", "GOARCH=arm64", "-tags lambda.norpc", "-trimpath", `-ldflags "-s -w"`, "/tmp/x/bootstrap"} {
				if !strings.Contains(string(out), flag) {
					t.Errorf("the build lacks %s: %s", flag, out)
				}
			}
			folder := strings.Fields(string(out))[len(strings.Fields(string(out)))-1]
			if _, err := os.Stat("../../" + strings.TrimPrefix(folder, "./") + "/main.go"); err != nil {
				t.Errorf("code folder %s: %v", folder, err)
			}
			var names []string
			for k := range fn.Environment {
				names = append(names, k)
			}
			slices.Sort(names)
			want := slices.Clone(lambdaenv.Variables)
			if fn.LogicalID == "TriggerFireFunction" {
				want = append(want, firing.VarConcurrency)
			}
			slices.Sort(want)
			if !slices.Equal(names, want) {
				t.Errorf("environment %v, the code reads %v", names, want)
			}
			if !slices.Equal(fn.Architectures, []string{"arm64"}) {
				t.Errorf("architectures %v", fn.Architectures)
			}
		})
	}
}

// TestTemplateTable: on demand, string keys PK and SK, TTL on expiresAt,
// point-in-time recovery.
func TestTemplateTable(t *testing.T) {
	tpl, err := LoadTemplate("../../template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := tpl.GetDynamoDBTableWithName(TableLogicalID)
	if err != nil {
		t.Fatal(err)
	}
	if *tbl.BillingMode != "PAY_PER_REQUEST" || tbl.TimeToLiveSpecification == nil || *tbl.TimeToLiveSpecification.AttributeName != "expiresAt" ||
		!tbl.TimeToLiveSpecification.Enabled || tbl.PointInTimeRecoverySpecification == nil || !*tbl.PointInTimeRecoverySpecification.PointInTimeRecoveryEnabled {
		t.Errorf("table %+v", tbl)
	}
}

// TestCfnLint runs cfn-lint on the template when it is installed.
func TestCfnLint(t *testing.T) {
	if _, err := exec.LookPath("cfn-lint"); err != nil {
		t.Skip("cfn-lint is not on the PATH")
	}
	if out, err := exec.Command("cfn-lint", "../../template.yaml").CombinedOutput(); err != nil {
		t.Errorf("cfn-lint: %v\n%s", err, out)
	}
}

// hasArn: the dead-letter queue is named by its ARN (which resolves only
// in AWS).
func hasArn(m map[string]any) bool { _, ok := m["Arn"]; return ok }

// TestZoneDataBuiltIn: the functions that read schedules carry the zone
// data in their binaries: provided.al2023 may have no zone files.
func TestZoneDataBuiltIn(t *testing.T) {
	for _, folder := range []string{"triggers", "triggerfire"} {
		out, err := exec.Command("go", "list", "-deps", "-tags", "lambda.norpc", "../../functions/"+folder).CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", folder, err, out)
		}
		if !slices.Contains(strings.Fields(string(out)), "time/tzdata") {
			t.Errorf("functions/%s does not link time/tzdata", folder)
		}
	}
}

// TestFunctionsImportNothingLocal: no function imports the local stack,
// its shortcuts (unverified tokens) included.
func TestFunctionsImportNothingLocal(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-tags", "lambda.norpc", "../../functions/...").CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if strings.Contains(pkg, "/infra/local") {
			t.Errorf("a function imports %s", pkg)
		}
	}
}
