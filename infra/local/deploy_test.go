package local_test

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cfntypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/cloud-agent/control-plane/infra/local"
	"github.com/cloud-agent/control-plane/infra/local/apitest"
	"github.com/cloud-agent/control-plane/infra/local/motoserver"
	"github.com/cloud-agent/control-plane/shared/firing"
	"github.com/cloud-agent/control-plane/shared/store"
)

// deployRegion is the region the template is transformed for and the
// stack created in (local.DynamoClient's region).
const deployRegion = "us-east-1"

// deployParams are the stack's parameters.
var deployParams = map[string]string{
	"JwtIssuer":   "https://issuer.example.com",
	"JwtAudience": "cloud-agent",
	"Stage":       "test",
}

// motoLacks are the resource types of the transformed template that moto's
// CloudFormation creates without listing them among the stack's resources
// (a permission becomes a statement of its function's policy, asserted in
// checkPermissions) or does not support at all (it skips them with a
// warning): the HTTP API and its stage, the queue's policy and the
// firing's asynchronous invocation config, asserted on the template.
var motoLacks = map[string]bool{
	"AWS::Lambda::Permission":        true,
	"AWS::ApiGatewayV2::Api":         true,
	"AWS::ApiGatewayV2::Stage":       true,
	"AWS::SQS::QueuePolicy":          true,
	"AWS::Lambda::EventInvokeConfig": true,
}

// TestTemplateDeploysOnMoto transforms template.yaml with the SAM
// translator, as `sam deploy` does, creates the stack on moto's
// CloudFormation, checks what it created, runs the handlers against the
// stack's table and parameter path (one start, one lookup, one firing),
// and deletes the stack.
func TestTemplateDeploysOnMoto(t *testing.T) {
	if err := exec.Command("python3", "-c", "import samtranslator").Run(); err != nil {
		t.Skip("the SAM translator is not installed (the Python package samtranslator, installed with cfn-lint): the template is not deployed")
	}
	endpoint, err := motoserver.URL()
	if err != nil {
		t.Skipf("moto is not available (%v): the template is not deployed", err)
	}
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
	body := transform(t, fmt.Sprintf("s3://%s/bootstrap.zip", bucket))
	var tpl struct {
		Resources map[string]struct {
			Type       string
			Properties map[string]any
		}
	}
	if err := json.Unmarshal([]byte(body), &tpl); err != nil {
		t.Fatal(err)
	}

	cfn := cloudformation.NewFromConfig(cfg)
	stack := fmt.Sprintf("cloud-agent-test-%d", time.Now().UnixNano())
	var params []cfntypes.Parameter
	for k, v := range deployParams {
		params = append(params, cfntypes.Parameter{ParameterKey: aws.String(k), ParameterValue: aws.String(v)})
	}
	if _, err := cfn.CreateStack(ctx, &cloudformation.CreateStackInput{
		StackName: aws.String(stack), TemplateBody: aws.String(body), Parameters: params,
		Capabilities: []cfntypes.Capability{cfntypes.CapabilityCapabilityIam},
	}); err != nil {
		t.Fatal(err)
	}
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
		if physical[id] == "" && !motoLacks[r.Type] {
			t.Errorf("the stack has no %s (%s)", id, r.Type)
		}
	}
	table := physical["SessionsTable"]
	if table == "" {
		t.Fatal("no table")
	}
	ddb := local.DynamoClient(endpoint)
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
	for _, fn := range []string{"SessionStartFunction", "AllocationLookupFunction", "TriggersFunction", "TriggerFireFunction"} {
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

	t.Run("handlers", func(t *testing.T) { runHandlers(t, endpoint, ddb, table) })

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

// transform runs the SAM translator on template.yaml with the stack's
// parameters, every function's code at codeURI.
func transform(t *testing.T, codeURI string) string {
	t.Helper()
	args := []string{filepath.Join("testdata", "samtransform", "transform.py"), filepath.Join("..", "..", "template.yaml"), codeURI}
	for k, v := range deployParams {
		args = append(args, k+"="+v)
	}
	cmd := exec.Command("python3", args...)
	cmd.Env = append(os.Environ(), "AWS_DEFAULT_REGION="+deployRegion)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("SAM translator: %v\n%s", err, stderr.String())
	}
	return string(out)
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
	for _, a := range []string{"PK", "SK", "ownerUserId", "listedAt", "dueShard", "nextRunAt"} {
		if attrs[a] != ddbtypes.ScalarAttributeTypeS {
			t.Errorf("attribute %s: %q", a, attrs[a])
		}
	}
	indexes := map[string]string{}
	for _, g := range d.GlobalSecondaryIndexes {
		indexes[aws.ToString(g.IndexName)] = keys(g.KeySchema) + " / " + string(g.Projection.ProjectionType)
	}
	want := map[string]string{
		"TriggersByUser": "ownerUserId HASH, listedAt RANGE / ALL",
		"DueTriggersAll": "dueShard HASH, nextRunAt RANGE / ALL",
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
	fireEnv := map[string]string{"FIRING_CONCURRENCY": "32"}
	for k, v := range env {
		fireEnv[k] = v
	}
	type want struct {
		memory, timeout int32
		env             map[string]string
	}
	fns := map[string]want{
		"SessionStartFunction":     {256, 10, env},
		"AllocationLookupFunction": {256, 10, env},
		"TriggersFunction":         {256, 10, env},
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
		"TriggersFunction": {"apigateway /*/*/v1/triggers", "apigateway /*/*/v1/triggers/*", "apigateway /*/DELETE/v1/triggers/*",
			"apigateway /*/GET/v1/triggers", "apigateway /*/GET/v1/triggers/*", "apigateway /*/POST/v1/triggers"},
		"TriggerFireFunction": {"events arn:aws:events:" + deployRegion + ":123456789012:rule/" + physical["TriggerFireFunctionEveryMinute"]},
	}
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

// checkSchedule checks the firing's rule: every minute, to the firing,
// with its retry policy and dead-letter queue.
func checkSchedule(t *testing.T, eb *eventbridge.Client, physical map[string]string, fireARN string) {
	ctx := context.Background()
	rule := physical["TriggerFireFunctionEveryMinute"]
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
		t.Errorf("retry policy %s, want 2 attempts within 300 s", mustJSON(p))
	}
	// The queue's physical id is its URL; its name ends it.
	queue := physical["TriggerFireDeadLetterQueue"]
	queue = queue[strings.LastIndex(queue, "/")+1:]
	if d := tg.DeadLetterConfig; d == nil || !strings.HasSuffix(aws.ToString(d.Arn), ":"+queue) || !strings.HasPrefix(aws.ToString(d.Arn), "arn:aws:sqs:") {
		t.Errorf("dead-letter config %s, the queue is %s", mustJSON(d), queue)
	}
}

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
	want := map[string]string{
		"/cloud-agent/test/allocation/default":    "String cloudflare-containers-standard-4",
		"/cloud-agent/test/allocation/selectable": "StringList cloudflare-containers-standard-3,cloudflare-containers-standard-4,vercel-small,vercel-large",
		"/cloud-agent/test/allocation/retired":    "StringList -",
		"/cloud-agent/test/provider/retired":      "StringList -",
		"/cloud-agent/test/selection/owners":      "StringList *",
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
	h := apitest.NewOn(t, local.DynamoClient(endpoint, store.Counting), ddb, table, func(o *ssm.Options) {
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
	c := h.Do(apitest.Call{Method: "POST", Path: "/v1/triggers", Claims: owner, Body: apitest.Body(map[string]any{
		"orgId": "o1", "schedule": map[string]any{"cron": "*/5 * * * *"}, "repository": repo, "agent": agent, "prompt": "Triage new issues.",
	}, nil)})
	if c.Status != 201 {
		t.Fatalf("trigger: %d %s", c.Status, c.Raw)
	}
	tid, _ := c.Body["triggerId"].(string)
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
	var sessions []string
	for _, it := range h.Items() {
		if strings.Contains(it, `"PK":{"S":"SESSION#`) {
			sessions = append(sessions, it)
		}
	}
	if len(sessions) != 2 || !slices.ContainsFunc(sessions, func(s string) bool { return strings.Contains(s, `"createdOnPlatform":{"S":"scheduled"}`) }) {
		t.Errorf("sessions in the stack's table: %v", sessions)
	}
}

func mustJSON(v any) string { b, _ := json.Marshal(v); return string(b) }
