package template

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/awslabs/goformation/v7/intrinsics"

	"github.com/cloud-agent/control-plane/infra/local/childproc"
	"github.com/cloud-agent/control-plane/infra/local/testkit"
	"github.com/cloud-agent/control-plane/shared/app"
	"github.com/cloud-agent/control-plane/shared/settings"
)

func loadFunctions(t *testing.T) []Function {
	t.Helper()
	fns, err := LoadFunctions("../../template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return fns
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
			out, err := childproc.Command("make", "--no-print-directory", "-C", "../..", "-n", "build-"+fn.LogicalID, "ARTIFACTS_DIR=/tmp/x").CombinedOutput()
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
			want := app.Variables(fn.LogicalID)
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
	tpl, err := Load("../../template.yaml")
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

// TestTemplateSettings: the settings parameters the stack owns, under the
// functions' CONFIG_PATH, hold the built-in values (settings.Builtin): a
// new stage, and a new local settings file, start as no parameter at all
// would.
func TestTemplateSettings(t *testing.T) {
	tpl, err := Load("../../template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	fns, err := Functions(tpl)
	if err != nil {
		t.Fatal(err)
	}
	path := fns[0].Environment["CONFIG_PATH"]
	for _, fn := range fns {
		if fn.Environment["CONFIG_PATH"] != path {
			t.Fatalf("%s reads its settings under %s, %s under %s", fn.LogicalID, fn.Environment["CONFIG_PATH"], fns[0].LogicalID, path)
		}
	}
	got := Settings(tpl, path)
	if n := len(tpl.GetAllSSMParameterResources()); n != len(got) {
		t.Errorf("%d of the %d parameters are under %s", len(got), n, path)
	}
	want := settings.Builtin()
	slices.SortFunc(want, func(a, b settings.Parameter) int { return strings.Compare(a.Name, b.Name) })
	if !slices.Equal(got, want) {
		t.Errorf("the template's settings %+v, the built-in ones %+v", got, want)
	}
}

// TestCfnLint runs cfn-lint on the template when it is installed.
func TestCfnLint(t *testing.T) {
	if _, err := exec.LookPath("cfn-lint"); err != nil {
		t.Skip("cfn-lint is not on the PATH")
	}
	if out, err := childproc.Command("cfn-lint", "../../template.yaml").CombinedOutput(); err != nil {
		t.Errorf("cfn-lint: %v\n%s", err, out)
	}
}

// TestTemplateAlarms: each alarm of the template evaluates its metric
// (namespace, name, statistic, period, and dimensions naming the right
// resources), with its comparison, threshold, periods and missing-data
// rule; an operator reads what it means and what to do first.
func TestTemplateAlarms(t *testing.T) {
	tpl := rawTemplate(t)
	alarms := resourcesOfType(tpl, "AWS::CloudWatch::Alarm")
	names := map[string]string{}
	for id, props := range alarms {
		want, ok := WantAlarms[id]
		if !ok {
			t.Errorf("alarm %s is not tested", id)
			continue
		}
		got, err := ReadAlarm(props)
		if err != nil {
			t.Errorf("%s: %v", id, err)
			continue
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s:\n got %+v\nwant %+v", id, got, want)
		}
		desc, _ := props["AlarmDescription"].(string)
		if len(desc) < 100 || len(desc) > 1024 || !strings.Contains(desc, "First") {
			t.Errorf("%s: the description (%d characters, at most 1024) does not say what to do first: %q", id, len(desc), desc)
		}
		// Named after the stack, so that a notification names its stack.
		name, _ := props["AlarmName"].(map[string]any)["Fn::Sub"].(string)
		if !strings.HasPrefix(name, "${AWS::StackName}-") {
			t.Errorf("%s: AlarmName %v", id, props["AlarmName"])
		}
		if other, dup := names[name]; dup {
			t.Errorf("%s and %s are both named %s", id, other, name)
		}
		names[name] = id
	}
	for id := range WantAlarms {
		if alarms[id] == nil {
			t.Errorf("no alarm %s", id)
		}
	}
	// The dimensions name resources of the template, of the right types.
	types := map[string]string{}
	for id, r := range tpl["Resources"].(map[string]any) {
		types[id], _ = r.(map[string]any)["Type"].(string)
	}
	wantType := map[string]string{
		"TriggerFireDeadLetterQueue": "AWS::SQS::Queue", FiringFunction: "AWS::Serverless::Function",
		"SessionEventsFailures": "AWS::SQS::Queue", EventsFunction: "AWS::Serverless::Function",
		"HttpApi": "AWS::Serverless::HttpApi", TableLogicalID: "AWS::DynamoDB::Table",
	}
	for _, fn := range APIFunctions {
		wantType[fn] = "AWS::Serverless::Function"
	}
	for id, typ := range wantType {
		if types[id] != typ {
			t.Errorf("%s is a %q, the alarms want a %s", id, types[id], typ)
		}
	}
}

// TestTemplateAlarmActions: every alarm but the quiet ones (the release
// alarms, which CodeDeploy reads) notifies the AlarmTopicArn parameter's
// topic on ALARM and on OK when it is set, and has no actions with the
// parameter's empty default; a quiet one has none at all. `sam deploy
// --guided` offers the empty default, and the parameter refuses what is
// not a topic's ARN.
func TestTemplateAlarmActions(t *testing.T) {
	tpl := rawTemplate(t)
	param, _ := tpl["Parameters"].(map[string]any)["AlarmTopicArn"].(map[string]any)
	if param["Type"] != "String" || param["Default"] != "" || param["Description"] == nil {
		t.Errorf("parameter AlarmTopicArn %v", param)
	}
	pattern, _ := param["AllowedPattern"].(string)
	allowed := regexp.MustCompile("^(?:" + pattern + ")$") // CloudFormation matches the whole value
	for value, ok := range map[string]bool{
		"": true, "arn:aws:sns:eu-west-1:123456789012:ops-alarms": true, "arn:aws-cn:sns:cn-north-1:123456789012:ops": true,
		"ops-alarms": false, "arn:aws:sqs:eu-west-1:123456789012:ops": false, "arn:aws:sns:eu-west-1:123456789012:": false,
	} {
		if allowed.MatchString(value) != ok {
			t.Errorf("AllowedPattern %q on %q: %v", pattern, value, !ok)
		}
	}
	cond := testkit.JSON(tpl["Conditions"].(map[string]any)["HasAlarmTopic"])
	if cond != `{"Fn::Not":[{"Fn::Equals":[{"Ref":"AlarmTopicArn"},""]}]}` {
		t.Errorf("condition HasAlarmTopic %s", cond)
	}
	conditioned := `{"Fn::If":["HasAlarmTopic",[{"Ref":"AlarmTopicArn"}],{"Ref":"AWS::NoValue"}]}`
	for id, props := range resourcesOfType(tpl, "AWS::CloudWatch::Alarm") {
		want := conditioned
		if WantAlarms[id].Quiet {
			want = "null"
		}
		for _, k := range []string{"AlarmActions", "OKActions"} {
			if got := testkit.JSON(props[k]); got != want {
				t.Errorf("%s %s: %s, want %s", id, k, got, want)
			}
		}
		if props["InsufficientDataActions"] != nil || props["ActionsEnabled"] == false {
			t.Errorf("%s: InsufficientDataActions %v, ActionsEnabled %v", id, props["InsufficientDataActions"], props["ActionsEnabled"])
		}
	}
	// As CloudFormation evaluates them (goformation's intrinsics, the
	// conditions first).
	data, err := os.ReadFile("../../template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, topic := range []string{"", "arn:aws:sns:us-east-1:123456789012:ops-alarms"} {
		out, err := processYAML(data, &intrinsics.ProcessorOptions{
			ParameterOverrides: map[string]any{"AlarmTopicArn": topic}, EvaluateConditions: true,
		})
		if err != nil {
			t.Fatal(err)
		}
		var resolved map[string]any
		if err := json.Unmarshal(out, &resolved); err != nil {
			t.Fatal(err)
		}
		for id, props := range resourcesOfType(resolved, "AWS::CloudWatch::Alarm") {
			want := "null"
			if topic != "" && !WantAlarms[id].Quiet {
				want = testkit.JSON([]string{topic})
			}
			for _, k := range []string{"AlarmActions", "OKActions"} {
				if got := testkit.JSON(props[k]); got != want {
					t.Errorf("AlarmTopicArn %q: %s %s %s, want %s", topic, id, k, got, want)
				}
			}
		}
	}
}

// TestTemplateDashboard: the dashboard's body is JSON once CloudFormation
// substitutes its references, each of which names a resource or parameter
// of the template; it shows every alarm and its metrics, and every metric
// the functions emit (by function, by allocation and by code), each
// function's by the function's deployed name; the stack outputs its URL.
func TestTemplateDashboard(t *testing.T) {
	tpl := rawTemplate(t)
	boards := resourcesOfType(tpl, "AWS::CloudWatch::Dashboard")
	if len(boards) != 1 {
		t.Fatalf("%d dashboards", len(boards))
	}
	props := boards["Dashboard"]
	if got := testkit.JSON(props["DashboardName"]); got != `{"Fn::Sub":"${AWS::StackName}-${AWS::Region}"}` {
		t.Errorf("DashboardName %s: dashboards are global to the account, the name carries the stack and its region", got)
	}
	body, ok := props["DashboardBody"].(map[string]any)["Fn::Sub"].(string)
	if !ok {
		t.Fatalf("DashboardBody %v: want !Sub over a JSON string", props["DashboardBody"])
	}
	resources, _ := tpl["Resources"].(map[string]any)
	params, _ := tpl["Parameters"].(map[string]any)
	pseudo := map[string]string{"AWS::Region": "eu-west-1", "AWS::AccountId": "123456789012", "AWS::Partition": "aws", "AWS::StackName": "control-plane"}
	// Each reference as CloudFormation substitutes it: here a resource's
	// Ref is <LogicalId>, an attribute <LogicalId.Attribute>.
	var unknown []string
	substituted := regexp.MustCompile(`\$\{([^}]*)\}`).ReplaceAllStringFunc(body, func(s string) string {
		name := s[2 : len(s)-1]
		id, _, _ := strings.Cut(name, ".")
		switch {
		case pseudo[name] != "":
			return pseudo[name]
		case resources[id] != nil:
			return "<" + name + ">"
		case params[name] != nil && !strings.Contains(name, "."):
			return fmt.Sprint(params[name].(map[string]any)["Default"])
		}
		unknown = append(unknown, name)
		return s
	})
	if len(unknown) > 0 {
		t.Errorf("the body refers to %v: neither a resource, a parameter nor a pseudo parameter", unknown)
	}
	if strings.Contains(substituted, "${") {
		t.Errorf("the body keeps a ${ after substitution")
	}
	d, err := ReadDashboard(substituted)
	if err != nil {
		t.Fatalf("the substituted body: %v\n%s", err, substituted)
	}
	for _, r := range d.Regions {
		if r != pseudo["AWS::Region"] {
			t.Errorf("a metric widget of region %q, not the stack's", r)
		}
	}
	fn := func(id string) string { return "<" + id + ">" }
	resolve := func(v string) string {
		if id, ok := strings.CutPrefix(v, "!Ref "); ok {
			return "<" + id + ">"
		}
		if att, ok := strings.CutPrefix(v, "!GetAtt "); ok {
			return "<" + att + ">"
		}
		if text, ok := strings.CutPrefix(v, "!Sub "); ok {
			return regexp.MustCompile(`\$\{([^}]*)\}`).ReplaceAllString(text, "<$1>")
		}
		return v
	}
	if missing := MissingMetrics(d.Metrics, WantDashboard(fn, resolve)); len(missing) > 0 {
		t.Errorf("the dashboard lacks:\n%s\nit shows:\n%s", strings.Join(missing, "\n"), fmt.Sprint(d.Metrics))
	}
	// The functions' own metrics by their deployed names only: the
	// namespace is shared by every stage in the account.
	for _, m := range d.Metrics {
		if m.Namespace != MetricNamespace {
			continue
		}
		for _, f := range strings.Split(m.Dimensions["Function"], " OR ") {
			id := strings.Trim(f, "<>")
			if typ, _ := resources[id].(map[string]any)["Type"].(string); typ != "AWS::Serverless::Function" || f != fn(id) {
				t.Errorf("%s: Function %q is not a function of the stack", m, f)
			}
		}
	}
	var wantAlarms []string
	for id := range WantAlarms {
		wantAlarms = append(wantAlarms, "arn:aws:cloudwatch:eu-west-1:123456789012:alarm:<"+id+">")
	}
	slices.Sort(wantAlarms)
	gotAlarms := slices.Sorted(slices.Values(d.Alarms))
	if !slices.Equal(gotAlarms, wantAlarms) {
		t.Errorf("the alarm widgets show %v, want %v", gotAlarms, wantAlarms)
	}
	url := testkit.JSON(tpl["Outputs"].(map[string]any)["DashboardUrl"].(map[string]any)["Value"])
	if url != `{"Fn::Sub":"https://${AWS::Region}.console.aws.amazon.com/cloudwatch/home?region=${AWS::Region}#dashboards/dashboard/${Dashboard}"}` {
		t.Errorf("output DashboardUrl %s", url)
	}
}

// TestKMSKeys: the keys are the contract's (WebhookKey an HMAC_256 key
// for GenerateMac; WebhookSecretsKey and EnvironmentSecretsKey symmetric
// keys for Encrypt and Decrypt, rotated every year), and each outlives the
// stack and a replacement (Retain): a generated webhook secret is derived
// from WebhookKey alone, stored nowhere, and a sealed secret opens only
// with the key that sealed it. Who may use EnvironmentSecretsKey is
// judged on the SAM translator's output (kms_test.go).
func TestKMSKeys(t *testing.T) {
	raw := templateJSON(t)
	var tpl struct {
		Resources map[string]struct {
			Type, DeletionPolicy, UpdateReplacePolicy string
			Properties                                struct {
				KeySpec, KeyUsage string
				EnableKeyRotation bool
			}
		}
	}
	if err := json.Unmarshal(raw, &tpl); err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string][2]string{
		"WebhookKey":            {"HMAC_256", "GENERATE_VERIFY_MAC"},
		"WebhookSecretsKey":     {"SYMMETRIC_DEFAULT", "ENCRYPT_DECRYPT"},
		"EnvironmentSecretsKey": {"SYMMETRIC_DEFAULT", "ENCRYPT_DECRYPT"},
	} {
		r := tpl.Resources[id]
		if r.Type != "AWS::KMS::Key" || r.Properties.KeySpec != want[0] || r.Properties.KeyUsage != want[1] ||
			r.DeletionPolicy != "Retain" || r.UpdateReplacePolicy != "Retain" ||
			r.Properties.EnableKeyRotation != (want[0] == "SYMMETRIC_DEFAULT") {
			t.Errorf("%s: %+v", id, r)
		}
	}
}

// TestExecutionPlaneRoleParameter: ExecutionPlaneRoleArn is empty by
// default, so that `sam deploy --guided` may leave it so, and takes an
// IAM role's ARN or nothing; HasExecutionPlaneRole holds when it is set.
func TestExecutionPlaneRoleParameter(t *testing.T) {
	tpl := rawTemplate(t)
	param, _ := tpl["Parameters"].(map[string]any)["ExecutionPlaneRoleArn"].(map[string]any)
	if param["Type"] != "String" || param["Default"] != "" || param["Description"] == nil {
		t.Errorf("parameter ExecutionPlaneRoleArn %v", param)
	}
	pattern, _ := param["AllowedPattern"].(string)
	allowed := regexp.MustCompile("^(?:" + pattern + ")$") // CloudFormation matches the whole value
	for value, ok := range map[string]bool{
		"": true, "arn:aws:iam::123456789012:role/execution-plane": true, "arn:aws-cn:iam::123456789012:role/service/plane_runner@x.y": true,
		"arn:aws:iam::123456789012:user/someone": false, "arn:aws:iam::123456789012:root": false, "*": false,
		"arn:aws:iam::123456789012:role/": false, "execution-plane": false, "arn:aws:iam::1234:role/plane": false,
	} {
		if allowed.MatchString(value) != ok {
			t.Errorf("AllowedPattern %q on %q: %v", pattern, value, !ok)
		}
	}
	cond := testkit.JSON(tpl["Conditions"].(map[string]any)["HasExecutionPlaneRole"])
	if cond != `{"Fn::Not":[{"Fn::Equals":[{"Ref":"ExecutionPlaneRoleArn"},""]}]}` {
		t.Errorf("condition HasExecutionPlaneRole %s", cond)
	}
}

// templateJSON is template.yaml read as JSON (processYAML), for the tests
// that decode the parts of it they hold.
func templateJSON(t *testing.T) []byte {
	t.Helper()
	data, err := os.ReadFile("../../template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	raw, err := processYAML(data, nil)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}
