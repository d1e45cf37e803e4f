package template_test

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cfntypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	cwschemas "github.com/aws/aws-sdk-go-v2/service/cloudwatch/schemas"
	cwtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"github.com/aws/smithy-go/transport/http/protocol/awsquery"

	"github.com/cloud-agent/control-plane/infra/local/apitest"
	"github.com/cloud-agent/control-plane/infra/local/localdb"
	"github.com/cloud-agent/control-plane/infra/local/motoserver"
	"github.com/cloud-agent/control-plane/infra/local/schedule"
	"github.com/cloud-agent/control-plane/infra/local/testkit"
	"github.com/cloud-agent/control-plane/infra/template"
	"github.com/cloud-agent/control-plane/shared/firing"
	"github.com/cloud-agent/control-plane/shared/settings"
	"github.com/cloud-agent/control-plane/shared/store"
)

// deployRegion is the region the template is transformed for and the
// stack created in (localdb.Client's region).
const deployRegion = "us-east-1"

// deployParams are the stack's parameters: four firing schedules
// (deployFiringSchedules), so that the stack creates the rules and
// permissions of several, and not the others.
var deployParams = map[string]string{
	"JwtIssuer":       "https://issuer.example.com",
	"JwtAudience":     "cloud-agent",
	"Stage":           "test",
	"FiringSchedules": strconv.Itoa(deployFiringSchedules),
}

const deployFiringSchedules = 4

// created tells whether the stack of deployParams creates a resource of
// the condition c: every resource without one; FiringScheduleN's when N is
// below deployFiringSchedules.
func created(t *testing.T, c string) bool {
	var n int
	if _, err := fmt.Sscanf(c, "FiringSchedule%d", &n); c != "" && err != nil {
		t.Fatalf("a resource on the condition %s, which the test does not know", c)
	}
	return c == "" || n < deployFiringSchedules
}

// motoLacks are the resource types of the transformed template that moto's
// CloudFormation creates without listing them among the stack's resources
// (a permission becomes a statement of its function's policy, asserted in
// checkPermissions) or does not support at all (it skips them with a
// warning): the HTTP API and its stage, the queue's policy and the
// firing's asynchronous invocation config, asserted on the template; and
// the alarms (moto's CloudFormation creates dashboards but no
// AWS::CloudWatch::Alarm), which checkAlarms creates on moto's CloudWatch
// as CloudFormation would; the functions' versions, which moto does not
// list among the stack's resources; and the functions' aliases and their
// CodeDeploy application and deployment groups, which onMoto takes out of
// the template and TestReleasesShiftThroughAliases checks on it; the
// sessions' bus, which moto creates without a physical id, and its
// policy, which moto's CloudFormation does not support (TestLeastPrivilege
// judges the policy on the template).
var motoLacks = map[string]bool{
	"AWS::Lambda::Permission":          true,
	"AWS::ApiGatewayV2::Api":           true,
	"AWS::ApiGatewayV2::Stage":         true,
	"AWS::SQS::QueuePolicy":            true,
	"AWS::Lambda::EventInvokeConfig":   true,
	"AWS::CloudWatch::Alarm":           true,
	"AWS::Lambda::Version":             true,
	"AWS::Lambda::Alias":               true,
	"AWS::CodeDeploy::Application":     true,
	"AWS::CodeDeploy::DeploymentGroup": true,
	"AWS::Events::EventBus":            true,
	"AWS::Events::EventBusPolicy":      true,
}

// firstVersion is the number of a function's first published version: a
// new stack's, which moto creates without giving its attributes.
const firstVersion = "1"

// onMoto is a transformed template as moto's CloudFormation can create
// it: moto has no AWS::Lambda::Alias and no CodeDeploy resources, and a
// reference to an alias it does not create leaves the permissions and the
// schedule's target without their function. So the aliases and the
// CodeDeploy resources are taken out, and every reference to an alias
// names its function's ARN instead (TestReleasesShiftThroughAliases checks
// that the template names the aliases). moto fails on the Version
// attribute of an AWS::Lambda::Version, which the release alarms and the
// dashboard name: it is firstVersion, the number a new stack publishes.
func onMoto(t *testing.T, body string) string {
	t.Helper()
	var tpl map[string]any
	if err := json.Unmarshal([]byte(body), &tpl); err != nil {
		t.Fatal(err)
	}
	resources, _ := tpl["Resources"].(map[string]any)
	functionOf := map[string]string{} // by alias
	var versions []string
	for id, r := range resources {
		switch dig(r, "Type") {
		case "AWS::Lambda::Alias":
			fn, _ := dig(r, "Properties", "FunctionName", "Ref").(string)
			functionOf[id] = fn
			delete(resources, id)
		case "AWS::CodeDeploy::Application", "AWS::CodeDeploy::DeploymentGroup":
			delete(resources, id)
		case "AWS::Lambda::Version":
			versions = append(versions, id)
		}
	}
	var rewrite func(v any) any
	rewrite = func(v any) any {
		switch x := v.(type) {
		case map[string]any:
			if id, ok := x["Ref"].(string); ok && len(x) == 1 && functionOf[id] != "" {
				return map[string]any{"Fn::GetAtt": []any{functionOf[id], "Arn"}}
			}
			if att, ok := x["Fn::GetAtt"].([]any); ok && len(x) == 1 && len(att) == 2 && slices.Contains(versions, fmt.Sprint(att[0])) && att[1] == "Version" {
				return firstVersion
			}
			for k, e := range x {
				x[k] = rewrite(e)
			}
		case []any:
			for i, e := range x {
				x[i] = rewrite(e)
			}
		case string:
			for alias, fn := range functionOf {
				x = strings.ReplaceAll(x, "${"+alias+"}", "${"+fn+".Arn}")
			}
			for _, id := range versions {
				x = strings.ReplaceAll(x, "${"+id+".Version}", firstVersion)
			}
			return x
		}
		return v
	}
	t.Logf("moto creates no AWS::Lambda::Alias and no CodeDeploy resources: the stack on moto invokes the functions %v without their aliases, which TestReleasesShiftThroughAliases checks on the template", slices.Sorted(maps.Values(functionOf)))
	return testkit.JSON(rewrite(tpl))
}

// TestTemplateDeploysOnMoto transforms template.yaml with the SAM
// translator, as `sam deploy` does, creates the stack on moto's
// CloudFormation, checks what it created (its alarms and dashboard
// included), runs the handlers against the stack's table and parameter
// path (one start, one lookup, one firing), and deletes the stack. A
// second stack, with an SNS topic for AlarmTopicArn, checks the alarms'
// actions.
func TestTemplateDeploysOnMoto(t *testing.T) {
	needSAMTranslator(t, "the template is not deployed")
	endpoint := motoserver.URL(t)
	ctx := context.Background()
	cfg := aws.Config{Region: deployRegion, BaseEndpoint: aws.String(endpoint),
		Credentials: credentials.NewStaticCredentialsProvider("local", "local", "")}

	// What `sam package` does: the code in a bucket, the template naming it.
	bucket := fmt.Sprintf("deploy-code-%d", time.Now().UnixNano())
	s3c := s3.NewFromConfig(cfg, func(o *s3.Options) { o.UsePathStyle = true })
	if _, err := s3c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	if _, err := s3c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String("bootstrap.zip"), Body: bytes.NewReader(bootstrapZip(t))}); err != nil {
		t.Fatal(err)
	}
	codeURI := fmt.Sprintf("s3://%s/bootstrap.zip", bucket)
	body := transform(t, templatePath, codeURI, deployParams)
	var tpl struct {
		Resources map[string]struct {
			Type       string
			Condition  string
			Properties map[string]any
		}
	}
	if err := json.Unmarshal([]byte(body), &tpl); err != nil {
		t.Fatal(err)
	}

	body = onMoto(t, body)
	cfn := cloudformation.NewFromConfig(cfg)
	stack := createStack(ctx, t, cfn, "cloud-agent-test", body, deployParams)
	deleted := false
	t.Cleanup(func() {
		if !deleted {
			_, _ = cfn.DeleteStack(ctx, &cloudformation.DeleteStackInput{StackName: aws.String(stack)})
		}
	})
	st := waitStack(t, cfn, stack, cfntypes.StackStatusCreateInProgress)
	if st.StackStatus != cfntypes.StackStatusCreateComplete {
		t.Fatalf("stack %s: %s", st.StackStatus, aws.ToString(st.StackStatusReason))
	}
	res, err := cfn.DescribeStackResources(ctx, &cloudformation.DescribeStackResourcesInput{StackName: aws.String(stack)})
	if err != nil {
		t.Fatal(err)
	}
	physical := map[string]string{}
	for _, r := range res.StackResources {
		physical[aws.ToString(r.LogicalResourceId)] = aws.ToString(r.PhysicalResourceId)
		if r.ResourceStatus != cfntypes.ResourceStatusCreateComplete {
			t.Errorf("%s (%s): %s", aws.ToString(r.LogicalResourceId), aws.ToString(r.ResourceType), r.ResourceStatus)
		}
	}
	for id, r := range tpl.Resources {
		switch want := created(t, r.Condition); {
		case want && physical[id] == "" && !motoLacks[r.Type]:
			t.Errorf("the stack has no %s (%s)", id, r.Type)
		case !want && physical[id] != "":
			t.Errorf("the stack has %s (%s), whose condition %s does not hold", id, r.Type, r.Condition)
		}
	}
	table := physical["SessionsTable"]
	if table == "" {
		t.Fatal("no table")
	}
	ddb := localdb.Client(endpoint)
	t.Cleanup(func() {
		// The table outlives its stack (DeletionPolicy Retain).
		_, _ = ddb.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(table)})
	})
	outputs := map[string]string{}
	for _, o := range st.Outputs {
		outputs[aws.ToString(o.OutputKey)] = aws.ToString(o.OutputValue)
	}
	if outputs["TableName"] != table {
		t.Errorf("output TableName %q, the table is %q", outputs["TableName"], table)
	}

	checkTable(t, ddb, table, tpl.Resources["SessionsTable"].Properties)
	for _, fn := range []string{"SessionStartFunction", "AllocationLookupFunction", "TriggersFunction", "TriggerHookFunction", "EnvironmentsFunction", "RuntimeFunction", "TriggerFireFunction"} {
		// moto's CloudFormation drops a function's Architectures (its
		// LambdaFunction.create_from_cloudformation_json does not read them:
		// the functions report x86_64), so arm64 is asserted on the template
		// CloudFormation received.
		if got := fmt.Sprint(tpl.Resources[fn].Properties["Architectures"]); got != "[arm64]" {
			t.Errorf("%s: Architectures %s", fn, got)
		}
	}
	fire := checkFunctions(t, lambda.NewFromConfig(cfg), physical, table, tpl.Resources["TriggerFireFunctionEventInvokeConfig"].Properties)
	checkSchedule(t, eventbridge.NewFromConfig(cfg), physical, fire)
	checkPermissions(t, lambda.NewFromConfig(cfg), physical)
	sm := ssm.NewFromConfig(cfg)
	checkParameters(t, sm)
	cw := cloudWatchClient(cfg)
	s := newDeployed(t, stack, body, deployParams, physical)
	checkDashboard(t, cw, s, outputs["DashboardUrl"], checkAlarms(t, cw, s, ""))

	t.Run("handlers", func(t *testing.T) { runHandlers(t, endpoint, ddb, table) })
	t.Run("alarm topic", func(t *testing.T) { deployWithAlarmTopic(t, cfg, cfn, codeURI) })

	if _, err := cfn.DeleteStack(ctx, &cloudformation.DeleteStackInput{StackName: aws.String(stack)}); err != nil {
		t.Fatal(err)
	}
	deleted = true
	if st := waitStack(t, cfn, aws.ToString(st.StackId), cfntypes.StackStatusDeleteInProgress); st.StackStatus != cfntypes.StackStatusDeleteComplete {
		t.Errorf("delete: %s %s", st.StackStatus, aws.ToString(st.StackStatusReason))
	}
	// The stack owns the settings of its stage: they go with it.
	if out, err := sm.GetParametersByPath(ctx, &ssm.GetParametersByPathInput{Path: aws.String("/cloud-agent/test"), Recursive: aws.Bool(true)}); err != nil || len(out.Parameters) != 0 {
		t.Errorf("after the delete, parameters %v (%v)", names(out), err)
	}
	if _, err := ddb.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)}); err != nil {
		t.Errorf("the table did not outlive the stack (DeletionPolicy Retain): %v", err)
	}
}

// bootstrapZip is the functions' code package. moto creates functions
// without running them, so it holds a placeholder bootstrap; the handlers
// run in process against the stack's resources instead (runHandlers).
func bootstrapZip(t *testing.T) []byte {
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	w, err := zw.Create("bootstrap")
	if err == nil {
		_, err = w.Write([]byte("#!/bin/sh\nexit 1\n"))
	}
	if err == nil {
		err = zw.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// waitStack polls the stack until its status leaves pending.
func waitStack(t *testing.T, cfn *cloudformation.Client, stack string, pending cfntypes.StackStatus) cfntypes.Stack {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		out, err := cfn.DescribeStacks(context.Background(), &cloudformation.DescribeStacksInput{StackName: aws.String(stack)})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Stacks) != 1 {
			t.Fatalf("%d stacks named %s", len(out.Stacks), stack)
		}
		if s := out.Stacks[0]; s.StackStatus != pending || time.Now().After(deadline) {
			return s
		}
	}
}

func checkTable(t *testing.T, ddb *dynamodb.Client, table string, props map[string]any) {
	ctx := context.Background()
	out, err := ddb.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	if err != nil {
		t.Fatal(err)
	}
	d := out.Table
	if got := keys(d.KeySchema); got != "PK HASH, SK RANGE" {
		t.Errorf("table keys %s", got)
	}
	if d.BillingModeSummary == nil || d.BillingModeSummary.BillingMode != ddbtypes.BillingModePayPerRequest {
		t.Errorf("billing %+v", d.BillingModeSummary)
	}
	attrs := map[string]ddbtypes.ScalarAttributeType{}
	for _, a := range d.AttributeDefinitions {
		attrs[aws.ToString(a.AttributeName)] = a.AttributeType
	}
	for _, a := range []string{"PK", "SK", "ownerUserId", "listedAt", "dueShard", "nextRunAt", "environmentOwner", "environmentListedAt"} {
		if attrs[a] != ddbtypes.ScalarAttributeTypeS {
			t.Errorf("attribute %s: %q", a, attrs[a])
		}
	}
	indexes := map[string]string{}
	for _, g := range d.GlobalSecondaryIndexes {
		indexes[aws.ToString(g.IndexName)] = keys(g.KeySchema) + " / " + string(g.Projection.ProjectionType)
	}
	want := map[string]string{
		"TriggersByUser":      "ownerUserId HASH, listedAt RANGE / ALL",
		"DueTriggersAll":      "dueShard HASH, nextRunAt RANGE / ALL",
		"EnvironmentsByOwner": "environmentOwner HASH, environmentListedAt RANGE / ALL",
	}
	if !reflect.DeepEqual(indexes, want) {
		t.Errorf("indexes %v, want %v", indexes, want)
	}
	// moto's CloudFormation drops the table's TimeToLiveSpecification and
	// PointInTimeRecoverySpecification (its Table.create_from_cloudformation_json
	// reads neither): the deployed table reports TTL and PITR disabled. So
	// they are asserted on the template CloudFormation received, and on
	// the table as well once moto keeps them.
	if got := fmt.Sprint(props["TimeToLiveSpecification"]); got != "map[AttributeName:expiresAt Enabled:true]" {
		t.Errorf("TimeToLiveSpecification %s", got)
	}
	if got := fmt.Sprint(props["PointInTimeRecoverySpecification"]); got != "map[PointInTimeRecoveryEnabled:true]" {
		t.Errorf("PointInTimeRecoverySpecification %s", got)
	}
	if ttl, err := ddb.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(table)}); err != nil {
		t.Error(err)
	} else if s := ttl.TimeToLiveDescription; s.TimeToLiveStatus != ddbtypes.TimeToLiveStatusDisabled &&
		(s.TimeToLiveStatus != ddbtypes.TimeToLiveStatusEnabled || aws.ToString(s.AttributeName) != "expiresAt") {
		t.Errorf("TTL %s on %q", s.TimeToLiveStatus, aws.ToString(s.AttributeName))
	} else if s.TimeToLiveStatus == ddbtypes.TimeToLiveStatusDisabled {
		t.Log("moto's CloudFormation did not apply the table's TTL (known)")
	}
	if b, err := ddb.DescribeContinuousBackups(ctx, &dynamodb.DescribeContinuousBackupsInput{TableName: aws.String(table)}); err != nil {
		t.Error(err)
	} else if p := b.ContinuousBackupsDescription.PointInTimeRecoveryDescription; p == nil {
		t.Error("no point-in-time recovery description")
	} else if p.PointInTimeRecoveryStatus == ddbtypes.PointInTimeRecoveryStatusDisabled {
		t.Log("moto's CloudFormation did not apply the table's point-in-time recovery (known)")
	}
}

func keys(ks []ddbtypes.KeySchemaElement) string {
	var s []string
	for _, k := range ks {
		s = append(s, aws.ToString(k.AttributeName)+" "+string(k.KeyType))
	}
	return strings.Join(s, ", ")
}

// checkFunctions checks each function's configuration and returns the
// firing's ARN.
func checkFunctions(t *testing.T, lc *lambda.Client, physical map[string]string, table string, invokeConfig map[string]any) string {
	ctx := context.Background()
	env := map[string]string{"TABLE_NAME": table, "CONFIG_PATH": "/cloud-agent/test", "CONFIG_TTL_SECONDS": "60"}
	fireEnv := map[string]string{"FIRING_CONCURRENCY": "64"}
	keysEnv := map[string]string{
		"WEBHOOK_KEY_ID":         "arn:aws:kms:" + deployRegion + ":123456789012:key/" + physical["WebhookKey"],
		"WEBHOOK_SECRETS_KEY_ID": "arn:aws:kms:" + deployRegion + ":123456789012:key/" + physical["WebhookSecretsKey"],
	}
	environmentsEnv := map[string]string{
		"ENVIRONMENT_SECRETS_KEY_ID": "arn:aws:kms:" + deployRegion + ":123456789012:key/" + physical["EnvironmentSecretsKey"],
	}
	runtimeEnv := map[string]string{
		"SESSION_TOKEN_KEY_ID":       "arn:aws:kms:" + deployRegion + ":123456789012:key/" + physical["SessionTokenKey"],
		"ENVIRONMENT_SECRETS_KEY_ID": environmentsEnv["ENVIRONMENT_SECRETS_KEY_ID"],
	}
	for k, v := range env {
		fireEnv[k], keysEnv[k], environmentsEnv[k], runtimeEnv[k] = v, v, v, v
	}
	type want struct {
		memory, timeout int32
		env             map[string]string
	}
	fns := map[string]want{
		"SessionStartFunction":     {256, 10, env},
		"AllocationLookupFunction": {256, 10, env},
		"TriggersFunction":         {256, 10, keysEnv},
		"TriggerHookFunction":      {256, 10, keysEnv},
		"EnvironmentsFunction":     {256, 10, environmentsEnv},
		"RuntimeFunction":          {256, 10, runtimeEnv},
		"TriggerFireFunction":      {512, 60, fireEnv},
	}
	var fireARN string
	for id, w := range fns {
		name := physical[id]
		c, err := lc.GetFunctionConfiguration(ctx, &lambda.GetFunctionConfigurationInput{FunctionName: aws.String(name)})
		if err != nil {
			t.Errorf("%s: %v", id, err)
			continue
		}
		var vars map[string]string
		if c.Environment != nil {
			vars = c.Environment.Variables
		}
		got := fmt.Sprint(c.Runtime, " ", aws.ToString(c.Handler), " ", aws.ToInt32(c.MemorySize), " ", aws.ToInt32(c.Timeout))
		if got != fmt.Sprint("provided.al2023 bootstrap ", w.memory, " ", w.timeout) || !reflect.DeepEqual(vars, w.env) {
			t.Errorf("%s: %s %v, want provided.al2023 bootstrap %d %d %v", id, got, vars, w.memory, w.timeout, w.env)
		}
		if role := physical[id+"Role"]; role == "" || !strings.HasSuffix(aws.ToString(c.Role), "/"+role) {
			t.Errorf("%s: role %s, not its own %s", id, aws.ToString(c.Role), role)
		}
		if id == "TriggerFireFunction" {
			fireARN = aws.ToString(c.FunctionArn)
		}
	}
	// moto's CloudFormation has no AWS::Lambda::EventInvokeConfig (it
	// creates none): the asynchronous invocation's retries and failure
	// destination are asserted on the template CloudFormation received.
	dest := fmt.Sprint(invokeConfig["DestinationConfig"])
	if invokeConfig["FunctionName"] == nil || fmt.Sprint(invokeConfig["MaximumRetryAttempts"]) != "2" ||
		fmt.Sprint(invokeConfig["MaximumEventAgeInSeconds"]) != "300" || !strings.Contains(dest, "TriggerFireDeadLetterQueue") {
		t.Errorf("TriggerFireFunction's EventInvokeConfig %v", invokeConfig)
	}
	return fireARN
}

// checkPermissions checks who may invoke each function: API Gateway on
// exactly the template's routes (any stage), EventBridge from the firing's
// rule alone. moto cannot resolve the HTTP API's id (it does not create the
// API): the ARNs are compared from the stage on.
func checkPermissions(t *testing.T, lc *lambda.Client, physical map[string]string) {
	want := map[string][]string{
		"SessionStartFunction":     {"apigateway /*/*/v1/sessions", "apigateway /*/POST/v1/sessions"},
		"AllocationLookupFunction": {"apigateway /*/*/v1/allocations", "apigateway /*/*/v1/sessions/*/allocation", "apigateway /*/GET/v1/allocations", "apigateway /*/GET/v1/sessions/*/allocation"},
		"TriggersFunction": {"apigateway /*/*/v1/triggers", "apigateway /*/*/v1/triggers/*", "apigateway /*/*/v1/triggers/*/run", "apigateway /*/*/v1/triggers/*/runs", "apigateway /*/*/v1/triggers/*/secret", "apigateway /*/DELETE/v1/triggers/*",
			"apigateway /*/GET/v1/triggers", "apigateway /*/GET/v1/triggers/*", "apigateway /*/GET/v1/triggers/*/runs", "apigateway /*/PATCH/v1/triggers/*", "apigateway /*/POST/v1/triggers", "apigateway /*/POST/v1/triggers/*/run",
			"apigateway /*/POST/v1/triggers/*/secret"},
		"TriggerHookFunction": {"apigateway /*/*/v1/hooks/*", "apigateway /*/*/v1/hooks/*", "apigateway /*/POST/v1/hooks/*"},
		"EnvironmentsFunction": {"apigateway /*/*/v1/environments", "apigateway /*/*/v1/environments/*", "apigateway /*/DELETE/v1/environments/*",
			"apigateway /*/GET/v1/environments", "apigateway /*/GET/v1/environments/*", "apigateway /*/PATCH/v1/environments/*", "apigateway /*/POST/v1/environments"},
		"RuntimeFunction": {"apigateway /*/*/v1/runtime/*", "apigateway /*/*/v1/runtime/sessions/*", "apigateway /*/*/v1/runtime/sessions/*/claim",
			"apigateway /*/*/v1/runtime/sessions/*/outcome", "apigateway /*/GET/v1/runtime/sessions/*", "apigateway /*/POST/v1/runtime/sessions/*/claim",
			"apigateway /*/POST/v1/runtime/sessions/*/outcome"},
	}
	for n := range deployFiringSchedules {
		want["TriggerFireFunction"] = append(want["TriggerFireFunction"], "events arn:aws:events:"+deployRegion+":123456789012:rule/"+physical[fmt.Sprint("FiringSchedule", n)])
	}
	sort.Strings(want["TriggerFireFunction"])
	for fn, w := range want {
		out, err := lc.GetPolicy(context.Background(), &lambda.GetPolicyInput{FunctionName: aws.String(physical[fn])})
		if err != nil {
			t.Errorf("%s: %v", fn, err)
			continue
		}
		var policy struct {
			Statement []struct {
				Action, Effect string
				Principal      struct{ Service string }
				Condition      struct {
					ArnLike map[string]string
				}
			}
		}
		if err := json.Unmarshal([]byte(aws.ToString(out.Policy)), &policy); err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, s := range policy.Statement {
			src := s.Condition.ArnLike["AWS:SourceArn"]
			service, _, _ := strings.Cut(s.Principal.Service, ".")
			if service == "apigateway" {
				// arn:aws:execute-api:region:account:<api id>/<stage>/<method>/<path>
				if i := strings.Index(src, "/"); i >= 0 && strings.HasPrefix(src, "arn:aws:execute-api:"+deployRegion+":") {
					src = src[i:]
				}
			}
			if s.Action != "lambda:InvokeFunction" || s.Effect != "Allow" {
				src += " " + s.Effect + " " + s.Action
			}
			got = append(got, service+" "+src)
		}
		sort.Strings(got)
		if !slices.Equal(got, w) {
			t.Errorf("%s may be invoked by %q, want %q", fn, got, w)
		}
	}
}

// checkSchedule checks the firing's rules: deployFiringSchedules of them,
// each every minute, to the firing, with its retry policy and dead-letter
// queue, sending a Scheduled Event of its own time and id whose detail
// names its share of the shards; the shares divide the shards between
// them.
func checkSchedule(t *testing.T, eb *eventbridge.Client, physical map[string]string, fireARN string) {
	ctx := context.Background()
	var covered []int
	for n := range deployFiringSchedules {
		rule := physical[fmt.Sprint("FiringSchedule", n)]
		r, err := eb.DescribeRule(ctx, &eventbridge.DescribeRuleInput{Name: aws.String(rule)})
		if err != nil {
			t.Fatal(err)
		}
		if aws.ToString(r.ScheduleExpression) != "rate(1 minute)" || r.State != "ENABLED" {
			t.Errorf("rule %s %s", aws.ToString(r.ScheduleExpression), r.State)
		}
		out, err := eb.ListTargetsByRule(ctx, &eventbridge.ListTargetsByRuleInput{Rule: aws.String(rule)})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Targets) != 1 {
			t.Fatalf("%d targets", len(out.Targets))
		}
		tg := out.Targets[0]
		if aws.ToString(tg.Arn) != fireARN {
			t.Errorf("target %s, the firing is %s", aws.ToString(tg.Arn), fireARN)
		}
		if p := tg.RetryPolicy; p == nil || aws.ToInt32(p.MaximumRetryAttempts) != 2 || aws.ToInt32(p.MaximumEventAgeInSeconds) != 300 {
			t.Errorf("retry policy %s, want 2 attempts within 300 s", testkit.JSON(p))
		}
		// The queue's physical id is its URL; its name ends it.
		queue := physical["TriggerFireDeadLetterQueue"]
		queue = queue[strings.LastIndex(queue, "/")+1:]
		if d := tg.DeadLetterConfig; d == nil || !strings.HasSuffix(aws.ToString(d.Arn), ":"+queue) || !strings.HasPrefix(aws.ToString(d.Arn), "arn:aws:sqs:") {
			t.Errorf("dead-letter config %s, the queue is %s", testkit.JSON(d), queue)
		}
		it := tg.InputTransformer
		if it == nil {
			t.Fatalf("%s sends the plain Scheduled Event", rule)
		}
		ev, err := schedule.Target(template.Schedule{ID: rule, Input: &template.Input{Paths: it.InputPathsMap, Template: aws.ToString(it.InputTemplate)}}, deployedAt)
		var got events.EventBridgeEvent
		if err == nil {
			err = json.Unmarshal(ev, &got)
		}
		var detail struct{ Shards []int }
		if err == nil {
			err = json.Unmarshal(got.Detail, &detail)
		}
		if err != nil || !got.Time.Equal(deployedAt) || got.ID == "" || got.DetailType != "Scheduled Event" || got.Source != "aws.events" {
			t.Errorf("%s sends %s: %v", rule, ev, err)
		}
		for _, s := range detail.Shards {
			if s%deployFiringSchedules != n {
				t.Errorf("%s fires the shards %v", rule, detail.Shards)
			}
		}
		covered = append(covered, detail.Shards...)
	}
	slices.Sort(covered)
	for i, s := range covered {
		if s != i || len(covered) != store.DueShards {
			t.Fatalf("the rules fire the shards %v, want each once", covered)
		}
	}
}

// deployedAt is a time of a scheduled event.
var deployedAt = time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)

// checkParameters checks the settings the stack creates, with their
// built-in values.
func checkParameters(t *testing.T, sm *ssm.Client) {
	out, err := sm.GetParametersByPath(context.Background(), &ssm.GetParametersByPathInput{Path: aws.String("/cloud-agent/test"), Recursive: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, p := range out.Parameters {
		got[aws.ToString(p.Name)] = string(p.Type) + " " + aws.ToString(p.Value)
	}
	want := map[string]string{}
	for _, p := range settings.Builtin() {
		want["/cloud-agent/test/"+p.Name] = p.Type + " " + p.Value
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("parameters %v, want %v", got, want)
	}
}

func names(out *ssm.GetParametersByPathOutput) []string {
	var s []string
	if out != nil {
		for _, p := range out.Parameters {
			s = append(s, aws.ToString(p.Name))
		}
	}
	sort.Strings(s)
	return s
}

// countingClient counts the requests it sends.
type countingClient struct {
	n  *atomic.Int64
	hc *http.Client
}

func (c countingClient) Do(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.hc.Do(r)
}

// runHandlers runs the functions' handlers, as they are wired, on the
// stack's table with the settings of the stack's parameter path on moto
// (the stage's path, apitest.ConfigPath): one start, one lookup, one
// firing.
func runHandlers(t *testing.T, endpoint string, ddb *dynamodb.Client, table string) {
	if apitest.ConfigPath != "/cloud-agent/"+deployParams["Stage"] {
		t.Fatalf("the handlers read %s, the stack's settings are under /cloud-agent/%s", apitest.ConfigPath, deployParams["Stage"])
	}
	var ssmRequests atomic.Int64
	h := apitest.NewOn(t, localdb.Client(endpoint, store.Counting), ddb, table, func(o *ssm.Options) {
		o.BaseEndpoint = aws.String(endpoint)
		o.HTTPClient = countingClient{&ssmRequests, &http.Client{Timeout: 5 * time.Second}}
	})
	owner := map[string]string{"sub": "u1", "org_ids": "[o1]"}
	agent := map[string]any{"mode": "code", "model": "anthropic/claude"}
	repo := map[string]any{"type": "github", "repo": "acme/app"}

	// A start asking for an allocation the stack's selectable list holds.
	r := h.Do(apitest.Call{Method: "POST", Path: "/v1/sessions", Claims: owner, Body: apitest.Body(map[string]any{
		"orgId": "o1", "repository": repo, "agent": agent,
		"runtime": map[string]any{"sandboxAllocation": "vercel-large"},
	}, nil)})
	if r.Status != 201 {
		t.Fatalf("start: %d %s", r.Status, r.Raw)
	}
	id, _ := r.Body["sessionId"].(string)
	sb, _ := r.Body["sandbox"].(map[string]any)
	if sb["allocation"] != "vercel-large" {
		t.Errorf("start: sandbox %v", sb)
	}
	if ssmRequests.Load() == 0 {
		t.Error("the start read no settings from moto's SSM")
	}
	l := h.Do(apitest.Call{Method: "GET", Path: "/v1/sessions/" + id + "/allocation", Claims: owner})
	if l.Status != 200 {
		t.Fatalf("lookup: %d %s", l.Status, l.Raw)
	}
	if got, _ := l.Body["sandbox"].(map[string]any); got["allocation"] != "vercel-large" || got["id"] != sb["id"] {
		t.Errorf("lookup: sandbox %v, the start's %v", got, sb)
	}

	// A trigger every five minutes, fired at its first slot: it starts a
	// session on the default allocation of the stack's settings.
	created := time.Date(2026, 11, 30, 10, 0, 30, 0, time.UTC)
	slot := time.Date(2026, 11, 30, 10, 5, 0, 0, time.UTC)
	h.Triggers.Now = func() time.Time { return created }
	tid := h.CreateTrigger(t, owner, apitest.Body(map[string]any{
		"orgId": "o1", "schedule": map[string]any{"cron": "*/5 * * * *"}, "repository": repo, "agent": agent, "prompt": "Triage new issues.",
	}, nil))
	h.Firing.Now = func() time.Time { return slot }
	sum, err := h.Firing.Handle(context.Background(), events.EventBridgeEvent{Source: "aws.events", DetailType: "Scheduled Event", Time: slot.Add(20 * time.Second)})
	if err != nil || sum != (firing.Summary{Due: 1, Fired: 1}) {
		t.Fatalf("firing: %+v %v", sum, err)
	}
	tr := h.Do(apitest.Call{Method: "GET", Path: "/v1/triggers/" + tid, Claims: owner})
	fired, _ := tr.Body["lastSessionId"].(string)
	if tr.Status != 200 || tr.Body["lastRunStatus"] != "fired" || fired == "" {
		t.Fatalf("trigger after the firing: %d %s", tr.Status, tr.Raw)
	}
	f := h.Do(apitest.Call{Method: "GET", Path: "/v1/sessions/" + fired + "/allocation", Claims: owner})
	if got, _ := f.Body["sandbox"].(map[string]any); f.Status != 200 || got["allocation"] != "cloudflare-containers-standard-4" {
		t.Errorf("the fired session: %d %s", f.Status, f.Raw)
	}
	sessions := h.Sessions()
	if len(sessions) != 2 || !slices.ContainsFunc(sessions, func(s string) bool { return strings.Contains(s, `"createdOnPlatform":{"S":"scheduled"}`) }) {
		t.Errorf("sessions in the stack's table: %v", sessions)
	}
}

// cloudWatchClient is a CloudWatch client for moto. The SDK speaks Smithy
// RPC v2 CBOR to CloudWatch, which moto's server does not; CloudWatch also
// serves the AWS Query protocol, which it does.
func cloudWatchClient(cfg aws.Config) *cloudwatch.Client {
	return cloudwatch.NewFromConfig(cfg, func(o *cloudwatch.Options) {
		o.Protocol = awsquery.New(cwschemas.GraniteServiceVersion20100801)
	})
}

// deployed is a stack on moto and the template CloudFormation received
// for it, whose intrinsics it resolves as CloudFormation would on this
// stack: for the resources moto's CloudFormation does not create.
type deployed struct {
	name     string
	params   map[string]string
	physical map[string]string // by logical id
	tpl      struct {
		Parameters map[string]struct{ Default any }
		Conditions map[string]any
		Resources  map[string]struct {
			Type       string
			Properties map[string]any
		}
	}
}

func newDeployed(t *testing.T, name, body string, params, physical map[string]string) deployed {
	s := deployed{name: name, params: params, physical: physical}
	if err := json.Unmarshal([]byte(body), &s.tpl); err != nil {
		t.Fatal(err)
	}
	return s
}

// noValue is what AWS::NoValue resolves to: the member or element that
// holds it is left out.
type noValue struct{}

// resolve resolves v's intrinsics: Ref, Fn::GetAtt (a queue's QueueName),
// Fn::If (with Fn::Not and Fn::Equals) and Fn::Sub; any other is an error.
func (s deployed) resolve(v any) (any, error) {
	switch v := v.(type) {
	case []any:
		out := []any{}
		for _, e := range v {
			r, err := s.resolve(e)
			if err != nil {
				return nil, err
			}
			if _, none := r.(noValue); !none {
				out = append(out, r)
			}
		}
		return out, nil
	case map[string]any:
		for k, arg := range v {
			if len(v) == 1 && (k == "Ref" || strings.HasPrefix(k, "Fn::")) {
				return s.intrinsic(k, arg)
			}
		}
		out := map[string]any{}
		for k, e := range v {
			r, err := s.resolve(e)
			if err != nil {
				return nil, err
			}
			if _, none := r.(noValue); !none {
				out[k] = r
			}
		}
		return out, nil
	}
	return v, nil
}

func (s deployed) intrinsic(fn string, arg any) (any, error) {
	switch fn {
	case "Ref":
		if name, ok := arg.(string); ok {
			return s.ref(name)
		}
	case "Fn::GetAtt":
		switch a := arg.(type) {
		case string:
			id, attr, _ := strings.Cut(a, ".")
			return s.getAtt(id, attr)
		case []any:
			if len(a) == 2 {
				return s.getAtt(fmt.Sprint(a[0]), fmt.Sprint(a[1]))
			}
		}
	case "Fn::If":
		if a, ok := arg.([]any); ok && len(a) == 3 {
			name, _ := a[0].(string)
			c, err := s.condition(s.tpl.Conditions[name])
			if err != nil {
				return nil, fmt.Errorf("condition %s: %w", name, err)
			}
			if c {
				return s.resolve(a[1])
			}
			return s.resolve(a[2])
		}
	case "Fn::Sub":
		if tmpl, ok := arg.(string); ok {
			var err error
			out := regexp.MustCompile(`\$\{([^}]*)\}`).ReplaceAllStringFunc(tmpl, func(ref string) string {
				var v any
				var e error
				if id, attr, ok := strings.Cut(ref[2:len(ref)-1], "."); ok {
					v, e = s.getAtt(id, attr)
				} else {
					v, e = s.ref(id)
				}
				if e != nil {
					err = e
				}
				return fmt.Sprint(v)
			})
			return out, err
		}
	}
	return nil, fmt.Errorf("%s %v is not resolved by the test", fn, arg)
}

// ref resolves a Ref: a parameter (as given, else its default), a pseudo
// parameter, or a resource's physical id; a resource of a type moto does
// not create (the HTTP API) resolves to its logical id.
func (s deployed) ref(name string) (any, error) {
	switch name {
	case "AWS::NoValue":
		return noValue{}, nil
	case "AWS::StackName":
		return s.name, nil
	case "AWS::Region":
		return deployRegion, nil
	case "AWS::AccountId":
		return "123456789012", nil
	case "AWS::Partition":
		return "aws", nil
	}
	if v, ok := s.params[name]; ok {
		return v, nil
	}
	if p, ok := s.tpl.Parameters[name]; ok {
		return p.Default, nil
	}
	if id := s.physical[name]; id != "" {
		return id, nil
	}
	if motoLacks[s.tpl.Resources[name].Type] {
		return name, nil
	}
	return nil, fmt.Errorf("Ref %s: no parameter or resource of the stack", name)
}

func (s deployed) getAtt(id, attr string) (any, error) {
	switch typ := s.tpl.Resources[id].Type; {
	case typ == "AWS::SQS::Queue" && attr == "QueueName" && s.physical[id] != "":
		// A queue's physical id is its URL; its name ends it.
		return s.physical[id][strings.LastIndex(s.physical[id], "/")+1:], nil
	case typ == "AWS::Lambda::Version" && attr == "Version", typ == "AWS::Lambda::Function" && attr == "Version.Version":
		// A version's number, or that of the version SAM publishes of a
		// function (<Function>.Version), as onMoto gives it.
		return firstVersion, nil
	}
	return nil, fmt.Errorf("Fn::GetAtt %s.%s is not resolved by the test", id, attr)
}

func (s deployed) condition(v any) (bool, error) {
	if m, ok := v.(map[string]any); ok && len(m) == 1 {
		if a, ok := m["Fn::Not"].([]any); ok && len(a) == 1 {
			c, err := s.condition(a[0])
			return !c, err
		}
		if a, ok := m["Fn::Equals"].([]any); ok && len(a) == 2 {
			x, err := s.resolve(a[0])
			if err != nil {
				return false, err
			}
			y, err := s.resolve(a[1])
			return fmt.Sprint(x) == fmt.Sprint(y), err
		}
		if name, ok := m["Condition"].(string); ok {
			return s.condition(s.tpl.Conditions[name])
		}
	}
	return false, fmt.Errorf("condition %v is not evaluated by the test", v)
}

// value resolves a value written as template.AlarmMetric writes it.
func (s deployed) value(t *testing.T, v string) string {
	t.Helper()
	var r any
	var err error
	if id, ok := strings.CutPrefix(v, "!Ref "); ok {
		r, err = s.ref(id)
	} else if att, ok := strings.CutPrefix(v, "!GetAtt "); ok {
		id, attr, _ := strings.Cut(att, ".")
		r, err = s.getAtt(id, attr)
	} else if text, ok := strings.CutPrefix(v, "!Sub "); ok {
		r, err = s.intrinsic("Fn::Sub", text)
	} else {
		return v
	}
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprint(r)
}

// checkAlarms creates the template's alarms on moto's CloudWatch with the
// properties CloudFormation would give them on this stack (moto's
// CloudFormation creates no AWS::CloudWatch::Alarm): every property of the
// template is a PutMetricAlarm parameter and every reference resolves to
// the stack. It checks what CloudWatch then holds against
// template.WantAlarms, the dimensions naming the stack's own function, queue,
// table (and API, which moto does not create), and the actions: topic on
// ALARM and on OK, none without one or for a quiet alarm. It returns the
// alarms' ARNs by logical id.
func checkAlarms(t *testing.T, cw *cloudwatch.Client, s deployed, topic string) map[string]string {
	ctx := context.Background()
	ids := map[string]string{} // by alarm name
	for id, r := range s.tpl.Resources {
		if r.Type != "AWS::CloudWatch::Alarm" {
			continue
		}
		props, err := s.resolve(map[string]any(r.Properties))
		if err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		var in cloudwatch.PutMetricAlarmInput
		dec := json.NewDecoder(strings.NewReader(testkit.JSON(props)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&in); err != nil {
			t.Fatalf("%s: a property that PutMetricAlarm does not take: %v", id, err)
		}
		if _, err := cw.PutMetricAlarm(ctx, &in); err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		ids[aws.ToString(in.AlarmName)] = id
	}
	var names []string
	for name := range ids {
		names = append(names, name)
	}
	t.Cleanup(func() { _, _ = cw.DeleteAlarms(context.Background(), &cloudwatch.DeleteAlarmsInput{AlarmNames: names}) })
	out, err := cw.DescribeAlarms(ctx, &cloudwatch.DescribeAlarmsInput{AlarmNames: names})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.MetricAlarms) != len(template.WantAlarms) {
		t.Errorf("%d alarms, want %d", len(out.MetricAlarms), len(template.WantAlarms))
	}
	var actions []string
	if topic != "" {
		actions = []string{topic}
	}
	arns := map[string]string{}
	dims := func(ds []cwtypes.Dimension) map[string]string {
		m := map[string]string{}
		for _, d := range ds {
			m[aws.ToString(d.Name)] = aws.ToString(d.Value)
		}
		return m
	}
	for _, a := range out.MetricAlarms {
		name := aws.ToString(a.AlarmName)
		id := ids[name]
		want, ok := template.WantAlarms[id]
		if !ok || !strings.HasPrefix(name, s.name+"-") {
			t.Errorf("alarm %s (%s)", name, id)
			continue
		}
		arns[id] = aws.ToString(a.AlarmArn)
		got := fmt.Sprint(a.ComparisonOperator, " ", aws.ToFloat64(a.Threshold), " ", aws.ToInt32(a.EvaluationPeriods), " ", aws.ToInt32(a.DatapointsToAlarm), " ", aws.ToString(a.TreatMissingData))
		if w := fmt.Sprint(want.Comparison, " ", want.Threshold, " ", want.EvaluationPeriods, " ", want.DatapointsToAlarm, " ", want.TreatMissingData); got != w {
			t.Errorf("%s: %s, want %s", id, got, w)
		}
		var metrics []template.AlarmMetric
		if aws.ToString(a.MetricName) != "" {
			metrics = append(metrics, template.AlarmMetric{Namespace: aws.ToString(a.Namespace), Name: aws.ToString(a.MetricName),
				Stat: string(a.Statistic), Period: int(aws.ToInt32(a.Period)), Dimensions: dims(a.Dimensions)})
		}
		expression := ""
		for _, q := range a.Metrics {
			if q.MetricStat == nil {
				expression = aws.ToString(q.Expression)
				continue
			}
			m := q.MetricStat.Metric
			metrics = append(metrics, template.AlarmMetric{Namespace: aws.ToString(m.Namespace), Name: aws.ToString(m.MetricName),
				Stat: aws.ToString(q.MetricStat.Stat), Period: int(aws.ToInt32(q.MetricStat.Period)), Dimensions: dims(m.Dimensions)})
		}
		wantMetrics := slices.Clone(want.Metrics)
		for i, m := range wantMetrics {
			d := map[string]string{}
			for k, v := range m.Dimensions {
				d[k] = s.value(t, v)
			}
			wantMetrics[i].Dimensions = d
		}
		if !reflect.DeepEqual(metrics, wantMetrics) || expression != want.Expression {
			t.Errorf("%s: metrics %+v %q, want %+v %q", id, metrics, expression, wantMetrics, want.Expression)
		}
		notified := actions
		if want.Quiet {
			notified = nil
		}
		if !slices.Equal(a.AlarmActions, notified) || !slices.Equal(a.OKActions, notified) || len(a.InsufficientDataActions) != 0 {
			t.Errorf("%s: actions %q, OK actions %q, insufficient-data actions %q; want %q on ALARM and OK", id, a.AlarmActions, a.OKActions, a.InsufficientDataActions, notified)
		}
	}
	return arns
}

// checkDashboard checks the dashboard moto's CloudFormation created: named
// after the stack and its region, at the URL of the DashboardUrl output,
// with every reference of its body resolved to the stack's resources but
// those to resources moto does not create (the HTTP API, the alarms),
// which moto leaves as written and which are resolved here as
// checkAlarms does; the body then shows the alarms of alarmARNs and every
// metric of template.WantDashboard, each function's by its deployed name.
func checkDashboard(t *testing.T, cw *cloudwatch.Client, s deployed, url string, alarmARNs map[string]string) {
	name := s.name + "-" + deployRegion
	if want := "https://" + deployRegion + ".console.aws.amazon.com/cloudwatch/home?region=" + deployRegion + "#dashboards/dashboard/" + name; url != want || s.physical["Dashboard"] != name {
		t.Errorf("dashboard %q at %q, want %q", s.physical["Dashboard"], url, want)
	}
	out, err := cw.GetDashboard(context.Background(), &cloudwatch.GetDashboardInput{DashboardName: aws.String(name)})
	if err != nil {
		t.Fatal(err)
	}
	body := regexp.MustCompile(`\$\{([^}]*)\}`).ReplaceAllStringFunc(aws.ToString(out.DashboardBody), func(ref string) string {
		id := ref[2 : len(ref)-1]
		if !motoLacks[s.tpl.Resources[id].Type] {
			t.Errorf("moto left %s unresolved", ref)
			return ref
		}
		if r, err := s.ref(id); err == nil && s.tpl.Resources[id].Type != "AWS::CloudWatch::Alarm" {
			return fmt.Sprint(r)
		}
		// An alarm's Ref is its name, the end of its ARN.
		arn := alarmARNs[id]
		return arn[strings.LastIndex(arn, ":")+1:]
	})
	d, err := template.ReadDashboard(body)
	if err != nil {
		t.Fatalf("dashboard body: %v\n%s", err, body)
	}
	fn := func(id string) string { return s.physical[id] }
	if missing := template.MissingMetrics(d.Metrics, template.WantDashboard(fn, func(v string) string { return s.value(t, v) })); len(missing) > 0 {
		t.Errorf("the dashboard lacks:\n%s", strings.Join(missing, "\n"))
	}
	var want []string
	for _, arn := range alarmARNs {
		want = append(want, arn)
	}
	if got := slices.Sorted(slices.Values(d.Alarms)); !slices.Equal(got, slices.Sorted(slices.Values(want))) {
		t.Errorf("the dashboard shows the alarms %v, CloudWatch holds %v", got, want)
	}
	for _, r := range d.Regions {
		if r != deployRegion {
			t.Errorf("a widget of region %q", r)
		}
	}
}

// deployWithAlarmTopic creates a second stack, of another stage, with an
// SNS topic for AlarmTopicArn, and checks its alarms' actions and its
// dashboard.
func deployWithAlarmTopic(t *testing.T, cfg aws.Config, cfn *cloudformation.Client, codeURI string) {
	ctx := context.Background()
	sc := sns.NewFromConfig(cfg)
	tp, err := sc.CreateTopic(ctx, &sns.CreateTopicInput{Name: aws.String(fmt.Sprintf("control-plane-alarms-%d", time.Now().UnixNano()))})
	if err != nil {
		t.Fatal(err)
	}
	topic := aws.ToString(tp.TopicArn)
	t.Cleanup(func() {
		_, _ = sc.DeleteTopic(context.Background(), &sns.DeleteTopicInput{TopicArn: aws.String(topic)})
	})
	params := map[string]string{"AlarmTopicArn": topic, "Stage": "alarms"}
	for k, v := range deployParams {
		if params[k] == "" {
			params[k] = v
		}
	}
	body := onMoto(t, transform(t, templatePath, codeURI, params))
	stack := createStack(ctx, t, cfn, "cloud-agent-alarms", body, params)
	physical := map[string]string{}
	t.Cleanup(func() {
		_, _ = cfn.DeleteStack(context.Background(), &cloudformation.DeleteStackInput{StackName: aws.String(stack)})
		if table := physical["SessionsTable"]; table != "" {
			_, _ = localdb.Client(aws.ToString(cfg.BaseEndpoint)).DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(table)})
		}
	})
	st := waitStack(t, cfn, stack, cfntypes.StackStatusCreateInProgress)
	if st.StackStatus != cfntypes.StackStatusCreateComplete {
		t.Fatalf("stack %s: %s", st.StackStatus, aws.ToString(st.StackStatusReason))
	}
	res, err := cfn.DescribeStackResources(ctx, &cloudformation.DescribeStackResourcesInput{StackName: aws.String(stack)})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res.StackResources {
		physical[aws.ToString(r.LogicalResourceId)] = aws.ToString(r.PhysicalResourceId)
	}
	var url string
	for _, o := range st.Outputs {
		if aws.ToString(o.OutputKey) == "DashboardUrl" {
			url = aws.ToString(o.OutputValue)
		}
	}
	cw := cloudWatchClient(cfg)
	s := newDeployed(t, stack, body, params, physical)
	checkDashboard(t, cw, s, url, checkAlarms(t, cw, s, topic))
}

// createStack creates a stack of the template body with the parameters,
// named by prefix and the time, and returns its name.
func createStack(ctx context.Context, t *testing.T, cfn *cloudformation.Client, prefix, body string, params map[string]string) string {
	t.Helper()
	stack := fmt.Sprintf("%s-%d", prefix, time.Now().UnixNano())
	var cp []cfntypes.Parameter
	for k, v := range params {
		cp = append(cp, cfntypes.Parameter{ParameterKey: aws.String(k), ParameterValue: aws.String(v)})
	}
	if _, err := cfn.CreateStack(ctx, &cloudformation.CreateStackInput{
		StackName: aws.String(stack), TemplateBody: aws.String(body), Parameters: cp,
		Capabilities: []cfntypes.Capability{cfntypes.CapabilityCapabilityIam},
	}); err != nil {
		t.Fatal(err)
	}
	return stack
}
