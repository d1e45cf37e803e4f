package template_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"github.com/aws/smithy-go/middleware"
	"github.com/awslabs/goformation/v7/intrinsics"

	"github.com/cloud-agent/control-plane/infra/local/apitest"
	"github.com/cloud-agent/control-plane/infra/local/dynamotest"
	"github.com/cloud-agent/control-plane/infra/local/kms"
	"github.com/cloud-agent/control-plane/infra/local/localdb"
	"github.com/cloud-agent/control-plane/infra/local/testkit"
	"github.com/cloud-agent/control-plane/infra/template"
	"github.com/cloud-agent/control-plane/shared/app"
	"github.com/cloud-agent/control-plane/shared/bus"
	"github.com/cloud-agent/control-plane/shared/invocation"
	"github.com/cloud-agent/control-plane/shared/secrets"
	"github.com/cloud-agent/control-plane/shared/store"
	"github.com/cloud-agent/control-plane/shared/webhook"
)

// The resources that the code's requests name, as a policy's text
// (policyText) writes them.
const (
	tableARN    = "${SessionsTable.Arn}"
	indexARN    = "${SessionsTable.Arn}/index/"
	settingsARN = "arn:${AWS::Partition}:ssm:${AWS::Region}:${AWS::AccountId}:parameter/cloud-agent/${Stage}"
	busARN      = "${SessionsBus.Arn}"
)

// busName is the sessions' bus as the test's events function names it
// (the template gives the function the bus's name, which IAM authorizes
// as the bus's ARN).
const busName = "SessionsBus"

// basicExecution is the managed policy that SAM attaches to every role it
// makes for a function, for the function's logs.
const basicExecution = "managed policy arn:aws:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole"

// lambdaNeeds are the grants that a function's role may hold for Lambda
// itself, not for its code: Lambda sends a failed asynchronous invocation
// of the firing to its on-failure destination with the function's role
// (SAM grants it too, from the EventInvokeConfig); the session events
// function's event source mapping reads the table's stream, and sends a
// failed batch's shard and range to its queue, with the function's role
// (mappingGrants: each must be granted).
var lambdaNeeds = map[string][]string{
	"TriggerFireFunction": {"sqs:SendMessage ${TriggerFireDeadLetterQueue.Arn}"},
	"SessionEventsFunction": {
		"dynamodb:DescribeStream ${SessionsTable.StreamArn}", "dynamodb:GetRecords ${SessionsTable.StreamArn}",
		"dynamodb:GetShardIterator ${SessionsTable.StreamArn}", "dynamodb:ListStreams *",
		"sqs:SendMessage ${SessionEventsFailures.Arn}",
	},
}

// grants records, per function, the IAM grants that the AWS requests of
// its code need: each request's actions (a transaction's, those of its
// items) on the resources it names (the table, an index, the settings'
// path), as the SDK sends it.
type grants struct {
	mu   sync.Mutex
	used map[string]bool
}

func (g *grants) add(action, resource string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.used[action+" "+resource] = true
}

func (g *grants) sorted() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []string
	for k := range g.used {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// recordOn is an SDK middleware that records the grants of each request.
func (g *grants) recordOn(st *middleware.Stack) error {
	return st.Initialize.Add(middleware.InitializeMiddlewareFunc("RecordGrants",
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			switch p := in.Parameters.(type) {
			case *dynamodb.GetItemInput:
				g.add("dynamodb:GetItem", tableARN)
			case *dynamodb.BatchGetItemInput:
				g.add("dynamodb:BatchGetItem", tableARN)
			case *dynamodb.PutItemInput:
				g.add("dynamodb:PutItem", tableARN)
			case *dynamodb.UpdateItemInput:
				g.add("dynamodb:UpdateItem", tableARN)
			case *dynamodb.DeleteItemInput:
				g.add("dynamodb:DeleteItem", tableARN)
			case *dynamodb.QueryInput:
				if p.IndexName != nil {
					g.add("dynamodb:Query", indexARN+*p.IndexName)
				} else {
					g.add("dynamodb:Query", tableARN)
				}
			case *dynamodb.TransactWriteItemsInput:
				for _, it := range p.TransactItems {
					switch {
					case it.Put != nil:
						g.add("dynamodb:PutItem", tableARN)
					case it.Update != nil:
						g.add("dynamodb:UpdateItem", tableARN)
					case it.Delete != nil:
						g.add("dynamodb:DeleteItem", tableARN)
					case it.ConditionCheck != nil:
						g.add("dynamodb:ConditionCheckItem", tableARN)
					}
				}
			case *eventbridge.PutEventsInput:
				for _, e := range p.Entries {
					if name := aws.ToString(e.EventBusName); name == busName {
						g.add("events:PutEvents", busARN)
					} else {
						g.add("events:PutEvents", name)
					}
				}
			case *ssm.GetParametersByPathInput:
				// Authorized against the path asked for, not the
				// parameters returned.
				if aws.ToString(p.Path) == apitest.ConfigPath {
					g.add("ssm:GetParametersByPath", settingsARN)
				} else {
					g.add("ssm:GetParametersByPath", aws.ToString(p.Path))
				}
			default:
				g.add(middleware.GetOperationName(ctx), "an operation this test does not map")
			}
			return next.HandleInitialize(ctx, in)
		}), middleware.Before)
}

// errNotSent stops a request that the test records but does not send.
var errNotSent = errors.New("recorded, not sent")

// stopAfterRecording is an SDK middleware, after recordOn, that ends each
// request with errNotSent before it is signed or sent: what a request
// needs is recorded from what the code asks, with no endpoint to answer.
func stopAfterRecording(st *middleware.Stack) error {
	return st.Initialize.Add(middleware.InitializeMiddlewareFunc("StopAfterRecording",
		func(context.Context, middleware.InitializeInput, middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			return middleware.InitializeOutput{}, middleware.Metadata{}, errNotSent
		}), middleware.After)
}

// TestLeastPrivilege: each function's role grants exactly what its code
// uses, every action on the narrowest resource (the table, the index, the
// settings' path), no more and no less, from every source of grants.
// What the code uses is recorded once (usedGrants); then template.yaml,
// as written and as the SAM translator transforms it, is judged against
// it, and so is each of a set of mutations of it, each of which must be
// refused by both judgements.
func TestLeastPrivilege(t *testing.T) {
	used := usedGrants(t)
	written, err := os.ReadFile(templatePath)
	if err != nil {
		t.Fatal(err)
	}
	const startPolicies = "      Description: Starts sessions (POST /v1/sessions).\n      Policies:\n"
	const lookupDeployment = "\n\n  AllocationLookupFunction:\n    Type: AWS::Serverless::Function\n    Metadata:\n      BuildMethod: makefile\n" +
		"    Properties:\n      DeploymentPreference:\n        Type: Canary10Percent15Minutes\n"
	const eventsEnv = "          API_URL: !Sub https://${HttpApi}.execute-api.${AWS::Region}.${AWS::URLSuffix}\n"
	const eventsPolicies = eventsEnv + "      Policies:\n"
	const runtimeTable = "              Action: [dynamodb:GetItem, dynamodb:Query, dynamodb:UpdateItem, dynamodb:DeleteItem]\n"
	mutations := []struct{ name, old, new string }{
		{name: "the template as it is"},
		{"DynamoDBCrudPolicy in the start's Policies", startPolicies, startPolicies + "        - DynamoDBCrudPolicy: {TableName: !Ref SessionsTable}\n"},
		{"AmazonDynamoDBFullAccess's ARN in the start's Policies", startPolicies, startPolicies + "        - arn:aws:iam::aws:policy/AmazonDynamoDBFullAccess\n"},
		{"AmazonDynamoDBFullAccess by name in the start's Policies", startPolicies, startPolicies + "        - AmazonDynamoDBFullAccess\n"},
		{"a queue SAM makes as the firing's on-failure destination", "            Destination: !GetAtt TriggerFireDeadLetterQueue.Arn\n", ""},
		{"Tracing: Active on the start", startPolicies, "      Tracing: Active\n" + startPolicies},
		{"an SQS queue as an event source of the start", "\n\n  AllocationLookupFunction:\n", `
        Queued:
          Type: SQS
          Properties:
            Queue: !GetAtt StartQueue.Arn

  StartQueue:
    Type: AWS::SQS::Queue

  AllocationLookupFunction:
`},
		{"an AWS::IAM::Policy granting dynamodb:Scan to the triggers' role", "\nResources:\n", `
Resources:
  TriggersScanPolicy:
    Type: AWS::IAM::Policy
    Properties:
      PolicyName: scan
      Roles: [!Ref TriggersFunctionRole]
      PolicyDocument:
        Statement:
          - Effect: Allow
            Action: dynamodb:Scan
            Resource: !GetAtt SessionsTable.Arn
`},
		{"every resource in the lookup's policy", "Action: dynamodb:GetItem\n              Resource: !GetAtt SessionsTable.Arn\n",
			"Action: dynamodb:GetItem\n              Resource: [!GetAtt SessionsTable.Arn, \"*\"]\n"},
		{"a CodeDeploy role of its own, with every right, for the lookup's deployments", lookupDeployment, `

  LookupDeployRole:
    Type: AWS::IAM::Role
    Properties:
      AssumeRolePolicyDocument:
        Statement:
          - Effect: Allow
            Principal: {Service: codedeploy.amazonaws.com}
            Action: sts:AssumeRole
      ManagedPolicyArns: [arn:aws:iam::aws:policy/AdministratorAccess]

` + lookupDeployment[2:] + "        Role: !GetAtt LookupDeployRole.Arn\n"},
		{"every KMS key for the hook's Decrypt", "              Action: kms:Decrypt\n              Resource: !GetAtt WebhookSecretsKey.Arn\n",
			"              Action: kms:Decrypt\n              Resource: \"*\"\n"},
		{"dynamodb:Scan on the hook function", "Action: [dynamodb:BatchGetItem, dynamodb:GetItem, dynamodb:PutItem, dynamodb:UpdateItem, dynamodb:ConditionCheckItem]",
			"Action: [dynamodb:Scan, dynamodb:BatchGetItem, dynamodb:GetItem, dynamodb:PutItem, dynamodb:UpdateItem, dynamodb:ConditionCheckItem]"},
		{"kms:Decrypt beside kms:Encrypt for the environments' role in EnvironmentSecretsKey's policy",
			"              AWS: !GetAtt EnvironmentsFunctionRole.Arn\n            Action: kms:Encrypt\n",
			"              AWS: !GetAtt EnvironmentsFunctionRole.Arn\n            Action: [kms:Encrypt, kms:Decrypt]\n"},
		{"events:PutEvents on every bus", "              Action: events:PutEvents\n              Resource: !GetAtt SessionsBus.Arn\n",
			"              Action: events:PutEvents\n              Resource: \"*\"\n"},
		{"kms:GenerateMac on WebhookKey for the events function", "              Action: events:PutEvents\n              Resource: !GetAtt SessionsBus.Arn\n",
			"              Action: events:PutEvents\n              Resource: !GetAtt SessionsBus.Arn\n            - Effect: Allow\n              Action: kms:GenerateMac\n              Resource: !GetAtt WebhookKey.Arn\n"},
		{"every stream of the account for the events function", "              Action: [dynamodb:DescribeStream, dynamodb:GetRecords, dynamodb:GetShardIterator]\n              Resource: !GetAtt SessionsTable.StreamArn\n",
			"              Action: [dynamodb:DescribeStream, dynamodb:GetRecords, dynamodb:GetShardIterator]\n              Resource: \"*\"\n"},
		{"the stream's failures sent to the firing's dead-letter queue", "          Destination: !GetAtt SessionEventsFailures.Arn\n",
			"          Destination: !GetAtt TriggerFireDeadLetterQueue.Arn\n"},
		{"the stream's failures without a destination, the queue still granted", "      DestinationConfig:\n        OnFailure:\n          Destination: !GetAtt SessionEventsFailures.Arn\n", ""},
		{"the bus policy allowing rather than denying", "        Effect: Deny\n        Principal: \"*\"\n", "        Effect: Allow\n        Principal: \"*\"\n"},
		{"SAM's DynamoDB event on the events function, beside the mapping", eventsPolicies, eventsEnv + "      Events:\n        Stream:\n          Type: DynamoDB\n" +
			"          Properties:\n            Stream: !GetAtt SessionsTable.StreamArn\n            StartingPosition: TRIM_HORIZON\n      Policies:\n"},
		{"dynamodb:Scan on the runtime function", runtimeTable, strings.Replace(runtimeTable, "[dynamodb:GetItem,", "[dynamodb:Scan, dynamodb:GetItem,", 1)},
		{"dynamodb:Query taken from the runtime function, which its launch read needs", runtimeTable, strings.Replace(runtimeTable, " dynamodb:Query,", "", 1)},
		{"kms:Decrypt on EnvironmentSecretsKey for the runtime role in the key's policy", "          - !If\n            - HasExecutionPlaneRole\n",
			"          - Sid: TheRuntimeFunctionDecrypts\n            Effect: Allow\n            Principal:\n              AWS: !GetAtt RuntimeFunctionRole.Arn\n" +
				"            Action: kms:Decrypt\n            Resource: \"*\"\n          - !If\n            - HasExecutionPlaneRole\n"},
		{"dynamodb:Query taken from the firing's policy", `            - Effect: Allow
              Action: dynamodb:Query
              Resource: !Sub ${SessionsTable.Arn}/index/DueTriggersAll
`, ""},
	}
	texts := make([]string, len(mutations))
	inputs := make([]samInput, len(mutations))
	for i, c := range mutations {
		texts[i] = string(written)
		if c.old != "" {
			if n := strings.Count(texts[i], c.old); n != 1 {
				t.Fatalf("%s: the mutation's text is %d times in the template, not once:\n%s", c.name, n, c.old)
			}
			texts[i] = strings.Replace(texts[i], c.old, c.new, 1)
		}
		inputs[i] = samInput{texts[i], "s3://code/bootstrap.zip", deployParams}
	}
	var transformed []string // every mutation's in one run of the translator
	if samTranslator() {
		transformed = transformAll(t, inputs)
	}
	for i, c := range mutations {
		t.Run(c.name, func(t *testing.T) {
			text := texts[i]
			t.Run("as written", func(t *testing.T) {
				long, err := template.ProcessYAML([]byte(text), &intrinsics.ProcessorOptions{NoProcess: true})
				if err != nil {
					t.Fatal(err)
				}
				verdict(t, c.old != "", judgeWritten(decodeTemplate(t, string(long)), used))
			})
			t.Run("as SAM transforms it", func(t *testing.T) {
				needSAMTranslator(t, "the transformed template is not judged")
				verdict(t, c.old != "", judgeTransformed(decodeTemplate(t, transformed[i]), used))
			})
		})
	}
}

// verdict fails the test when the template as it is has violations, or
// when a mutation of it has none.
func verdict(t *testing.T, mutated bool, violations []string) {
	t.Helper()
	switch {
	case mutated && len(violations) == 0:
		t.Error("the mutation passes the judgement")
	case mutated:
		t.Logf("refused:\n%s", strings.Join(violations, "\n"))
	case len(violations) > 0:
		t.Errorf("violations of least privilege:\n%s", strings.Join(violations, "\n"))
	}
}

// decodeTemplate decodes a template in JSON.
func decodeTemplate(t *testing.T, text string) map[string]any {
	t.Helper()
	var tpl map[string]any
	if err := json.Unmarshal([]byte(text), &tpl); err != nil {
		t.Fatal(err)
	}
	return tpl
}

// usedGrants are the grants that each function's code needs, sorted, by
// function. Each function's handlers, wired as its main.go wires them, go
// every way the contract has for them over one table; what they send is
// recorded.
func usedGrants(t *testing.T) map[string][]string {
	b := dynamotest.Backends(t)[0]
	direct, name := dynamotest.Table(t, b)
	harness := map[string]*apitest.Harness{}
	used := map[string]*grants{}
	for _, fn := range []string{"SessionStartFunction", "AllocationLookupFunction", "TriggersFunction", "TriggerHookFunction", "TriggerFireFunction", "EnvironmentsFunction", "SessionEventsFunction", "RuntimeFunction"} {
		g := &grants{used: map[string]bool{}}
		used[fn] = g
		api := localdb.Client(b.URL, store.Counting, func(o *dynamodb.Options) { o.APIOptions = append(o.APIOptions, g.recordOn) })
		harness[fn] = apitest.NewOn(t, api, direct, name, func(o *ssm.Options) { o.APIOptions = append(o.APIOptions, g.recordOn) })
	}
	user := map[string]string{"sub": "u1", "org_ids": "[o1]"}
	call := func(fn, method, path, body string, want int) map[string]any {
		t.Helper()
		r := harness[fn].Do(apitest.Call{Method: method, Path: path, Claims: user, Body: body})
		if r.Status != want {
			t.Fatalf("%s %s %s: %d %s", fn, method, path, r.Status, r.Raw)
		}
		return r.Body
	}
	repo := `"repository":{"type":"github","repo":"acme/app"},"agent":{"mode":"code","model":"m"}`

	// The start: without a key, with a key, its replay.
	call("SessionStartFunction", "POST", "/v1/sessions", `{`+repo+`}`, 201)
	started := call("SessionStartFunction", "POST", "/v1/sessions", `{"operationKey":"k1",`+repo+`}`, 201)
	call("SessionStartFunction", "POST", "/v1/sessions", `{"operationKey":"k1",`+repo+`}`, 200)

	// The lookup and the allocations.
	call("AllocationLookupFunction", "GET", "/v1/sessions/"+started["sessionId"].(string)+"/allocation", "", 200)
	call("AllocationLookupFunction", "GET", "/v1/allocations", "", 200)

	// The triggers: create, read, list, change, start now (without a key,
	// with one, its replay, a refusal), list runs, delete.
	trigger := func(cron string) string {
		return call("TriggersFunction", "POST", "/v1/triggers", `{"schedule":{"cron":"`+cron+`"},`+repo+`,"prompt":"p"}`, 201)["triggerId"].(string)
	}
	gone := trigger("0 9 * * *")
	call("TriggersFunction", "POST", "/v1/triggers", `{"schedule":{"cron":"0 9 * * *"},`+repo+`,"prompt":"p","sandboxAllocation":"vercel-small"}`, 201)
	call("TriggersFunction", "GET", "/v1/triggers/"+gone, "", 200)
	call("TriggersFunction", "GET", "/v1/triggers", "", 200)
	call("TriggersFunction", "PATCH", "/v1/triggers/"+gone, `{"active":false,"sandboxAllocation":"vercel-large"}`, 200)
	now := func(key string, want int) {
		t.Helper()
		c := apitest.Call{Method: "POST", Path: "/v1/triggers/" + gone + "/run", Claims: user}
		if key != "" {
			c.Headers = map[string]string{"Idempotency-Key": key}
		}
		if r := harness["TriggersFunction"].Do(c); r.Status != want {
			t.Fatalf("TriggersFunction POST %s: %d %s", c.Path, r.Status, r.Raw)
		}
	}
	now("", 201)
	now("n1", 201)
	now("n1", 200)
	harness["TriggersFunction"].SetTrigger(gone, "repository.repo", &types.AttributeValueMemberS{Value: "not a repo"})
	now("n2", 400) // recorded as a failed manual run
	harness["TriggersFunction"].SetTrigger(gone, "repository.repo", &types.AttributeValueMemberS{Value: "acme/app"})
	call("TriggersFunction", "GET", "/v1/triggers/"+gone+"/runs", "", 200)
	call("TriggersFunction", "DELETE", "/v1/triggers/"+gone, "", 204)

	// Webhook triggers: one with a generated secret (derived), its
	// rotation and a start now (its secrets in clear), one with a sender's
	// own (sealed); then their deliveries (the secrets derived and
	// opened), a redelivery and a refused one.
	hooked := call("TriggersFunction", "POST", "/v1/triggers", `{"webhook":{"verify":"github"},`+repo+`,"prompt":"Review {{event}}"}`, 201)["triggerId"].(string)
	const own = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	imported := call("TriggersFunction", "POST", "/v1/triggers", `{"webhook":{"verify":"standard","secret":"`+own+`"},`+repo+`,"prompt":"Handle {{event}}"}`, 201)["triggerId"].(string)
	call("TriggersFunction", "POST", "/v1/triggers/"+hooked+"/secret", "", 200)
	now2 := apitest.Call{Method: "POST", Path: "/v1/triggers/" + imported + "/run", Claims: user}
	if r := harness["TriggersFunction"].Do(now2); r.Status != 201 {
		t.Fatalf("start now of a webhook trigger: %d %s", r.Status, r.Raw)
	}
	deliver := func(id string, mode webhook.VerifyMode, secret, body string, want int) {
		t.Helper()
		headers, err := webhook.DeliveryProof(mode, secret, "msg_"+strconv.Itoa(len(body)), time.Now(), []byte(body))
		if err != nil {
			t.Fatal(err)
		}
		headers["x-github-event"] = "push"
		if r := harness["TriggerHookFunction"].Deliver(apitest.Call{Method: "POST", Path: "/v1/hooks/" + id, Headers: headers, Body: body}); r.Status != want {
			t.Fatalf("delivery to %s: %d %s", id, r.Status, r.Raw)
		}
	}
	rotated, err := harness["TriggerHookFunction"].Secrets.Derive(context.Background(), hooked, 2)
	if err != nil {
		t.Fatal(err)
	}
	deliver(hooked, webhook.VerifyGitHub, rotated, `{"a":1}`, 201)
	deliver(hooked, webhook.VerifyGitHub, rotated, `{"a":1}`, 200)
	// A row whose marker is gone (a hand's delete) is judged by the
	// ledger, which reads the row's session.
	marks, err := direct.Query(context.Background(), &dynamodb.QueryInput{TableName: aws.String(name),
		KeyConditionExpression:    aws.String("PK = :pk AND begins_with(SK, :hook)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": &types.AttributeValueMemberS{Value: "TRIGGER#" + hooked}, ":hook": &types.AttributeValueMemberS{Value: "HOOK#"}}})
	if err != nil || len(marks.Items) != 1 {
		t.Fatalf("the delivery's marker: %v %v", marks, err)
	}
	if _, err := direct.DeleteItem(context.Background(), &dynamodb.DeleteItemInput{TableName: aws.String(name),
		Key: map[string]types.AttributeValue{"PK": marks.Items[0]["PK"], "SK": marks.Items[0]["SK"]}}); err != nil {
		t.Fatal(err)
	}
	deliver(hooked, webhook.VerifyGitHub, rotated, `{"a":1}`, 200)
	deliver(imported, webhook.VerifyStandard, own, `{"type":"x"}`, 201)
	harness["TriggersFunction"].SetTrigger(hooked, "repository.repo", &types.AttributeValueMemberS{Value: "not a repo"})
	deliver(hooked, webhook.VerifyGitHub, rotated, `{"a":2}`, 400) // recorded as a failed webhook run

	// Environments: a user's, with a secret variable (encrypted), made the
	// default, and an org's; one read, both lists, a change (a secret
	// replaced, the default given up), a delete.
	env := call("EnvironmentsFunction", "POST", "/v1/environments", `{"name":"web","variables":{"NODE_ENV":{"value":"production"},`+
		`"NPM_TOKEN":{"value":"s3cret","secret":true}},"setupCommands":["npm ci"],"default":true}`, 201)["environmentId"].(string)
	call("EnvironmentsFunction", "POST", "/v1/environments", `{"orgId":"o1","name":"web","sandboxAllocation":"vercel-small"}`, 201)
	call("EnvironmentsFunction", "GET", "/v1/environments/"+env, "", 200)
	call("EnvironmentsFunction", "GET", "/v1/environments", "", 200)
	call("EnvironmentsFunction", "GET", "/v1/environments?orgId=o1", "", 200)
	call("EnvironmentsFunction", "PATCH", "/v1/environments/"+env, `{"variables":{"NPM_TOKEN":{"value":"n3w"}},"default":false}`, 200)
	call("EnvironmentsFunction", "DELETE", "/v1/environments/"+env, "", 204)

	// The firing: a slot fired, a duplicate, a trigger stopped.
	fired, stopped := trigger("* * * * *"), trigger("* * * * *")
	set := func(id, attr string, v types.AttributeValue) {
		t.Helper()
		_, err := direct.UpdateItem(context.Background(), &dynamodb.UpdateItemInput{
			TableName: aws.String(name),
			Key: map[string]types.AttributeValue{
				"PK": &types.AttributeValueMemberS{Value: "TRIGGER#" + id}, "SK": &types.AttributeValueMemberS{Value: "TRIGGER"},
			},
			UpdateExpression: aws.String("SET #a = :v"), ExpressionAttributeNames: map[string]string{"#a": attr},
			ExpressionAttributeValues: map[string]types.AttributeValue{":v": v},
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	fire := func(at time.Time) {
		t.Helper()
		f := harness["TriggerFireFunction"].Firing
		f.Now = func() time.Time { return at }
		if _, err := f.Handle(context.Background(), events.EventBridgeEvent{Time: at}); err != nil {
			t.Fatal(err)
		}
	}
	slot := time.Now().UTC().Truncate(time.Minute).Add(2 * time.Minute)
	fire(slot)
	set(fired, "nextRunAt", &types.AttributeValueMemberS{Value: slot.Format(time.RFC3339)})
	set(stopped, "cron", &types.AttributeValueMemberS{Value: "0 9 L * *"})
	set(stopped, "nextRunAt", &types.AttributeValueMemberS{Value: slot.Format(time.RFC3339)})
	fire(slot) // a duplicate (its ledger row and session read, its run recorded), and a trigger stopped

	announce(t, harness["SessionEventsFunction"], used["SessionEventsFunction"])
	runtime(t, harness, user, repo)
	out := map[string][]string{}
	for fn, g := range used {
		for _, asked := range harness[fn].KMS.Used() {
			op, key, _ := strings.Cut(asked, " ")
			g.add("kms:"+op, "${"+strings.TrimPrefix(key, "alias/")+".Arn}")
		}
		out[fn] = g.sorted()
	}
	return out
}

// announce runs the session events function, built as its main.go builds
// it (app.Build), on the sample stream batch of a new session: its token
// derived on the harness's KMS stand-in, its event put on the bus through
// an EventBridge client whose requests g records and stops before they
// are sent (stopAfterRecording), so that the record is answered as a
// batch item failure.
func announce(t *testing.T, h *apitest.Harness, g *grants) {
	t.Helper()
	data, err := os.ReadFile("../../events/SessionEventsFunction/stream-insert-valid.json")
	if err != nil {
		t.Fatal(err)
	}
	var batch events.DynamoDBEvent
	if err := json.Unmarshal(data, &batch); err != nil {
		t.Fatal(err)
	}
	eb := eventbridge.New(eventbridge.Options{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("local", "local", ""),
		APIOptions: []func(*middleware.Stack) error{g.recordOn, stopAfterRecording}})
	fns := app.Build(app.Parts{Log: slog.New(slog.DiscardHandler), Tokens: secrets.NewSessionTokens(kms.Client(h.KMS.URL), "alias/SessionTokenKey"),
		Bus: bus.New(eb, busName), APIURL: "https://api.example.com", Metrics: invocation.NewMetrics("SessionEventsFunction", "$LATEST")})
	resp, err := fns.Events.Handle(context.Background(), batch)
	if err != nil || len(resp.BatchItemFailures) != len(batch.Records) {
		t.Fatalf("the session events of the sample batch: %+v %v, want every record a failure, its put stopped", resp, err)
	}
}

// runtime runs the runtime routes on the harness of RuntimeFunction every
// way that sends something else to AWS: a launch read, a claim and its
// heartbeat, a report, the report of a trigger's session whose run exists
// and of one whose run is gone (expired: its report writes the session
// alone), and a 401 (a wrong token). The sessions are started, and their
// tokens derived, on the other functions' harnesses, so that only the
// runtime routes' own requests are recorded as theirs.
func runtime(t *testing.T, harness map[string]*apitest.Harness, user map[string]string, repo string) {
	t.Helper()
	h, tokens := harness["RuntimeFunction"], harness["SessionEventsFunction"].Tokens
	call := func(method, path, id, body string, want int) {
		t.Helper()
		token, err := tokens.Token(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if want == 401 {
			token = "sst_" + strings.Repeat("A", 43)
		}
		c := apitest.Call{Method: method, Path: "/v1/runtime/sessions/" + id + path, Body: body, Headers: map[string]string{"Authorization": "Bearer " + token}}
		if r := h.Do(c); r.Status != want {
			t.Fatalf("RuntimeFunction %s %s: %d %s", method, c.Path, r.Status, r.Raw)
		}
	}
	start := harness["SessionStartFunction"].Do(apitest.Call{Method: "POST", Path: "/v1/sessions", Claims: user, Body: `{` + repo + `}`})
	id, _ := start.Body["sessionId"].(string)
	call("GET", "", id, "", 200)
	call("POST", "/claim", id, `{"runner":"r1"}`, 200)
	call("POST", "/claim", id, `{"runner":"r1"}`, 200) // a heartbeat
	call("POST", "/outcome", id, `{"status":"completed","runner":"r1"}`, 200)
	call("GET", "", id, "", 401)

	triggers := harness["TriggersFunction"]
	tr := triggers.CreateTrigger(t, user, `{"schedule":{"cron":"0 9 * * *"},`+repo+`,"prompt":"p"}`)
	run := func() string {
		t.Helper()
		r := triggers.Do(apitest.Call{Method: "POST", Path: "/v1/triggers/" + tr + "/run", Claims: user})
		id, _ := r.Body["session"].(map[string]any)["sessionId"].(string)
		if r.Status != 201 || id == "" {
			t.Fatalf("a start now: %d %s", r.Status, r.Raw)
		}
		return id
	}
	kept, gone := run(), run()
	call("POST", "/outcome", kept, `{"status":"failed","error":{"code":"tests_failed","message":"m"}}`, 200)
	expireRun(t, triggers, tr, h.Session(gone).Trigger.RunKey)
	call("POST", "/outcome", gone, `{"status":"interrupted"}`, 200)
}

// expireRun makes trigger tr's run at key runKey expired, as the table's
// TTL would soon delete it: a report no longer writes it.
func expireRun(t *testing.T, h *apitest.Harness, tr, runKey string) {
	t.Helper()
	_, err := h.Client.UpdateItem(context.Background(), &dynamodb.UpdateItemInput{TableName: aws.String(h.Table),
		Key: map[string]types.AttributeValue{
			"PK": &types.AttributeValueMemberS{Value: "TRIGGER#" + tr}, "SK": &types.AttributeValueMemberS{Value: runKey},
		},
		UpdateExpression: aws.String("SET expiresAt = :past"), ConditionExpression: aws.String("attribute_exists(PK)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":past": &types.AttributeValueMemberN{Value: "1"}},
	})
	if err != nil {
		t.Fatal(err)
	}
}

// judgeWritten judges a template as written (short-form intrinsics in long
// form, none resolved), without the SAM translator, which alone would show
// what most properties grant: a function's grants must all be inline
// policy documents in its Policies, SQS destinations of its
// EventInvokeConfig (SAM grants sqs:SendMessage on each) and KMS key
// policies' statements that name its role (keyGrants); its other
// properties, and those of the functions' Globals, must be among quiet,
// its events of the quietEvents types. It reports every way the grants
// differ from what the code uses, every property and event outside these,
// and every function whose code is not run.
func judgeWritten(tpl map[string]any, used map[string][]string) []string {
	var v []string
	resources, _ := tpl["Resources"].(map[string]any)
	globals, _ := dig(tpl, "Globals", "Function").(map[string]any)
	v = append(v, unjudged("Globals", globals)...)
	for fn, needed := range used {
		props, _ := dig(tpl, "Resources", fn, "Properties").(map[string]any)
		v = append(v, unjudged(fn, props, "Policies", "Events", "EventInvokeConfig", "DeploymentPreference")...)
		v = append(v, deploymentPreference(fn, props["DeploymentPreference"])...)
		events, _ := props["Events"].(map[string]any)
		for name, e := range events {
			if t, _ := dig(e, "Type").(string); !slices.Contains(quietEvents, t) {
				v = append(v, fmt.Sprintf("%s: event %s of type %s, by which SAM may grant its role more", fn, name, testkit.JSON(dig(e, "Type"))))
			}
		}
		granted, bad := invokeGrants(fn, props["EventInvokeConfig"])
		v = append(v, bad...)
		for _, p := range list(props["Policies"]) {
			if dig(p, "Statement") == nil {
				v = append(v, fmt.Sprintf("%s: policy %s is not an inline policy document with a Statement", fn, testkit.JSON(p)))
				continue
			}
			g, bad := statements(fn, p)
			granted, v = append(granted, g...), append(v, bad...)
		}
		for id, r := range resources {
			if dig(r, "Type") == "AWS::KMS::Key" {
				g, bad := keyGrants(fn, id, r, fn+"Role")
				granted, v = append(granted, g...), append(v, bad...)
			}
		}
		mapped, bad := mappingGrants(fn, resources)
		v = append(append(v, bad...), compare(fn, needed, mapped, granted)...)
	}
	for id, r := range resources {
		switch _, judged := used[id]; {
		case dig(r, "Type") == "AWS::Serverless::Function" && !judged:
			v = append(v, fmt.Sprintf("%s: a function whose code is not run", id))
		case dig(r, "Type") == "AWS::Serverless::Connector":
			v = append(v, fmt.Sprintf("%s: a connector, which adds policies to its source's role", id))
		}
		for fn := range used {
			if references(r, fn+"Role") && dig(r, "Type") != "AWS::KMS::Key" && !restricts(r) { // a key's: keyGrants
				v = append(v, fmt.Sprintf("%s: names %sRole, the role SAM makes for %s", id, fn, fn))
			}
		}
	}
	slices.Sort(v)
	return v
}

// quiet are the properties of a function, or of the functions' Globals,
// from which SAM grants its role nothing (AutoPublishAlias makes a
// version and an alias); quietEvents are the types of
// event from which it grants the role nothing (an HTTP API's route and a
// schedule's rule invoke the function by its resource policy). Any other
// property (Tracing, VpcConfig, DeadLetterQueue, a Role...) or event type
// (SQS, Kinesis, DynamoDB...) may grant the role more.
var (
	quiet       = []string{"Architectures", "AutoPublishAlias", "CodeUri", "Description", "Environment", "Handler", "MemorySize", "Runtime", "Timeout"}
	quietEvents = []string{"HttpApi", "Schedule"}
)

// unjudged reports the properties of a function (or of the functions'
// Globals) that are neither quiet nor among those judged.
func unjudged(where string, props map[string]any, judged ...string) []string {
	var v []string
	for key, val := range props {
		if !slices.Contains(quiet, key) && !slices.Contains(judged, key) {
			v = append(v, fmt.Sprintf("%s: %s %s, a property by which SAM may grant its role more", where, key, testkit.JSON(val)))
		}
	}
	return v
}

// deploymentPreference reports what in a function's DeploymentPreference
// may grant more than SAM's CodeDeploy service role (codeDeployRole): a
// role of its own, a hook (a function CodeDeploy invokes, with grants of
// its own), or any key but the deployment's type, its alarms and whether
// it is enabled.
func deploymentPreference(fn string, pref any) []string {
	var v []string
	m, _ := pref.(map[string]any)
	for key, val := range m {
		if key != "Type" && key != "Alarms" && key != "Enabled" {
			v = append(v, fmt.Sprintf("%s: DeploymentPreference %s %s, by which SAM may grant a role more", fn, key, testkit.JSON(val)))
		}
	}
	return v
}

// codeDeployRole is the role SAM makes for CodeDeploy when a function has
// a DeploymentPreference, as the translator writes it: assumed by
// CodeDeploy alone, with the managed policy for Lambda deployments (it
// shifts an alias's weights, reads the alarms and invokes no function)
// and no policy of its own.
const codeDeployRole = `{"AssumeRolePolicyDocument":{"Statement":[{"Action":["sts:AssumeRole"],"Effect":"Allow","Principal":{"Service":["codedeploy.amazonaws.com"]}}],"Version":"2012-10-17"},` +
	`"ManagedPolicyArns":["arn:aws:iam::aws:policy/service-role/AWSCodeDeployRoleForLambda"]}`

// invokeGrants are the grants that SAM gives a function's role for its
// EventInvokeConfig: sqs:SendMessage on each SQS queue it names as a
// destination. Any other destination (a queue SAM makes, where none is
// named, a topic, a function...), and any key but the retries', cannot be
// read as grants.
func invokeGrants(fn string, config any) (granted, bad []string) {
	m, _ := config.(map[string]any)
	for key, val := range m {
		switch key {
		case "MaximumRetryAttempts", "MaximumEventAgeInSeconds":
		case "DestinationConfig":
			destinations, _ := val.(map[string]any)
			for when, d := range destinations {
				if (when == "OnSuccess" || when == "OnFailure") && dig(d, "Type") == "SQS" && dig(d, "Destination") != nil {
					granted = append(granted, "sqs:SendMessage "+policyText(dig(d, "Destination")))
				} else {
					bad = append(bad, fmt.Sprintf("%s: EventInvokeConfig destination %s %s names no SQS queue", fn, when, testkit.JSON(d)))
				}
			}
		default:
			bad = append(bad, fmt.Sprintf("%s: EventInvokeConfig %s %s", fn, key, testkit.JSON(val)))
		}
	}
	return granted, bad
}

// judgeTransformed judges the SAM translator's output: each function's
// grants are the inline policies and the managed policies of its role,
// and the policies of every AWS::IAM::Policy, AWS::IAM::ManagedPolicy and
// AWS::IAM::RolePolicy attached to it, and the statements of KMS key
// policies that name it (keyGrants). Any other resource that names the
// role is a violation too, and so is any role but the functions' and
// CodeDeploy's exactly as SAM makes it (codeDeployRole). It reports every
// way the grants differ from what the code uses.
func judgeTransformed(tpl map[string]any, used map[string][]string) []string {
	var v []string
	resources, _ := tpl["Resources"].(map[string]any)
	for id, r := range resources {
		if _, fn := used[strings.TrimSuffix(id, "Role")]; dig(r, "Type") != "AWS::IAM::Role" || fn {
			continue
		}
		if got := testkit.JSON(dig(r, "Properties")); id != "CodeDeployServiceRole" || got != codeDeployRole {
			v = append(v, fmt.Sprintf("%s: a role beyond the functions' and CodeDeploy's as SAM makes it: %s", id, got))
		}
	}
	for fn, needed := range used {
		role, _ := dig(resources, fn, "Properties", "Role", "Fn::GetAtt", 0).(string)
		if dig(resources, role, "Type") != "AWS::IAM::Role" {
			v = append(v, fmt.Sprintf("%s: its role %s is not a role of the template", fn, testkit.JSON(dig(resources, fn, "Properties", "Role"))))
			continue
		}
		var granted []string
		for _, arn := range list(dig(resources, role, "Properties", "ManagedPolicyArns")) {
			granted = append(granted, "managed policy "+policyText(arn))
		}
		for _, p := range list(dig(resources, role, "Properties", "Policies")) {
			g, bad := statements(fn, dig(p, "PolicyDocument"))
			granted, v = append(granted, g...), append(v, bad...)
		}
		for id, r := range resources {
			if id == fn || id == role || !references(r, role) {
				continue
			}
			switch dig(r, "Type") {
			case "AWS::KMS::Key":
				g, bad := keyGrants(fn, id, r, role)
				granted, v = append(granted, g...), append(v, bad...)
				continue
			case "AWS::Events::EventBusPolicy":
				if restricts(r) {
					continue
				}
			case "AWS::IAM::Policy", "AWS::IAM::ManagedPolicy", "AWS::IAM::RolePolicy":
				if references(dig(r, "Properties", "Roles"), role) || references(dig(r, "Properties", "RoleName"), role) {
					g, bad := statements(fn+" by "+id, dig(r, "Properties", "PolicyDocument"))
					granted, v = append(granted, g...), append(v, bad...)
					continue
				}
			}
			v = append(v, fmt.Sprintf("%s: names %s, the role of %s, other than to attach a policy to it", id, role, fn))
		}
		mapped, bad := mappingGrants(fn, resources)
		v = append(append(v, bad...), compare(fn, needed, mapped, granted)...)
	}
	slices.Sort(v)
	return v
}

// restricts tells whether a resource is an EventBridge bus's policy that
// only denies: naming a role there takes from what it may do, never adds.
func restricts(r any) bool {
	props, _ := dig(r, "Properties").(map[string]any)
	if dig(r, "Type") != "AWS::Events::EventBusPolicy" || props["Statement"] == nil {
		return false
	}
	for k := range props {
		if k != "EventBusName" && k != "StatementId" && k != "Statement" {
			return false // Action, Principal, Condition: the legacy form, which allows
		}
	}
	for _, st := range list(props["Statement"]) {
		if dig(st, "Effect") != "Deny" {
			return false
		}
	}
	return true
}

// mappingProperties are the properties of an event source mapping read
// by mappingGrants or granting nothing (how it batches, retries and
// filters).
var mappingProperties = []string{"FunctionName", "EventSourceArn", "DestinationConfig", "StartingPosition", "BatchSize",
	"MaximumBatchingWindowInSeconds", "FunctionResponseTypes", "BisectBatchOnFunctionError", "MaximumRetryAttempts",
	"MaximumRecordAgeInSeconds", "FilterCriteria", "Enabled", "ParallelizationFactor"}

// mappingGrants are the grants that the event source mappings invoking a
// function (by name, or by its alias as written or as SAM names it) need
// of its role, with which Lambda reads the source and sends a failed
// batch away: on a DynamoDB stream (an Fn::GetAtt of its StreamArn),
// DescribeStream, GetRecords and GetShardIterator on it and ListStreams,
// which names no resource; on an SQS queue as the on-failure destination,
// sqs:SendMessage. It reports each need that lambdaNeeds does not hold (a
// mapping that would have the role granted more), and any other source,
// destination or property.
func mappingGrants(fn string, resources map[string]any) (needs, bad []string) {
	for id, r := range resources {
		props, _ := dig(r, "Properties").(map[string]any)
		if dig(r, "Type") != "AWS::Lambda::EventSourceMapping" || !references(props["FunctionName"], fn) && !references(props["FunctionName"], fn+"Alias"+template.ReleaseAlias) {
			continue
		}
		for k, val := range props {
			if !slices.Contains(mappingProperties, k) {
				bad = append(bad, fmt.Sprintf("%s: mapping %s has %s %s", fn, id, k, testkit.JSON(val)))
			}
		}
		source := policyText(props["EventSourceArn"])
		if !strings.HasSuffix(source, ".StreamArn}") {
			bad = append(bad, fmt.Sprintf("%s: mapping %s reads %s, not a table's stream", fn, id, source))
		}
		var need []string
		for _, a := range []string{"dynamodb:DescribeStream", "dynamodb:GetRecords", "dynamodb:GetShardIterator"} {
			need = append(need, a+" "+source)
		}
		need = append(need, "dynamodb:ListStreams *")
		destinations, _ := props["DestinationConfig"].(map[string]any)
		for when, d := range destinations {
			queue, isArn := strings.CutSuffix(strings.TrimPrefix(policyText(dig(d, "Destination")), "${"), ".Arn}")
			if when != "OnFailure" || !isArn || dig(resources, queue, "Type") != "AWS::SQS::Queue" {
				bad = append(bad, fmt.Sprintf("%s: mapping %s sends to %s %s, not an SQS queue's on failure", fn, id, when, testkit.JSON(d)))
			}
			need = append(need, "sqs:SendMessage "+policyText(dig(d, "Destination")))
		}
		for _, g := range need {
			if !slices.Contains(lambdaNeeds[fn], g) {
				bad = append(bad, fmt.Sprintf("%s: mapping %s needs %s of its role, which lambdaNeeds does not hold", fn, id, g))
			}
		}
		needs = append(needs, need...)
	}
	return needs, bad
}

// statements are the grants of a policy document, each action on each
// resource ("action resource"), and what in it cannot be read as grants.
// A statement's Condition only narrows it (kms_test.go judges those of
// the KMS grants).
func statements(who string, doc any) (granted, bad []string) {
	for _, st := range list(dig(doc, "Statement")) {
		m, _ := st.(map[string]any)
		for k := range m {
			if k != "Sid" && k != "Effect" && k != "Action" && k != "Resource" && k != "Condition" {
				bad = append(bad, fmt.Sprintf("%s: statement %s has %s", who, testkit.JSON(st), k))
			}
		}
		if m["Effect"] != "Allow" {
			bad = append(bad, fmt.Sprintf("%s: statement %s is not Allow", who, testkit.JSON(st)))
		}
		for _, action := range list(m["Action"]) {
			for _, res := range list(m["Resource"]) {
				granted = append(granted, policyText(action)+" "+policyText(res))
			}
		}
	}
	return granted, bad
}

// keyGrants are the grants that the policy of the KMS key key gives a
// function's role, each action on the key ("action ${<key>.Arn}"), by the
// statements that name the role as their principal; and what cannot be
// read so: a statement that names it beside another principal, that is not
// an Allow of actions on the key ("*"), or any other mention of the role.
// Its conditions only narrow it (kms_test.go judges them).
func keyGrants(fn, key string, r any, role string) (granted, bad []string) {
	props, _ := dig(r, "Properties").(map[string]any)
	for k, val := range props {
		if k != "KeyPolicy" && references(val, role) {
			bad = append(bad, fmt.Sprintf("%s: %s's %s names %s", fn, key, k, role))
		}
	}
	for _, st := range list(dig(props, "KeyPolicy", "Statement")) {
		m, _ := st.(map[string]any)
		if !references(m["Principal"], role) {
			if references(st, role) {
				bad = append(bad, fmt.Sprintf("%s: %s's statement %s names %s other than as its principal", fn, key, testkit.JSON(st), role))
			}
			continue
		}
		principal, _ := m["Principal"].(map[string]any)
		for k := range m {
			if !slices.Contains([]string{"Sid", "Effect", "Principal", "Action", "Resource", "Condition"}, k) {
				bad = append(bad, fmt.Sprintf("%s: %s's statement %s has %s", fn, key, testkit.JSON(st), k))
			}
		}
		if m["Effect"] != "Allow" || m["Resource"] != "*" || len(principal) != 1 || len(list(principal["AWS"])) != 1 {
			bad = append(bad, fmt.Sprintf("%s: %s's statement %s is not an Allow on the key to %s alone", fn, key, testkit.JSON(st), role))
		}
		for _, action := range list(m["Action"]) {
			granted = append(granted, policyText(action)+" ${"+key+".Arn}")
		}
	}
	return granted, bad
}

// compare reports the grants beyond what a function's code uses and
// what SAM and Lambda need of its role, and what its code uses, or its
// event source mappings need (mapped, from mappingGrants), that is not
// granted. A function with a mapping may hold of lambdaNeeds only what
// its mappings need. Grants compare as text: a wildcard is a grant of its
// own.
func compare(fn string, needed, mapped, granted []string) []string {
	allowed := map[string]bool{basicExecution: true}
	lambda := lambdaNeeds[fn]
	if len(mapped) > 0 {
		lambda = mapped
	}
	for _, g := range slices.Concat(needed, lambda) {
		allowed[g] = true
	}
	var v []string
	for _, g := range granted {
		if !allowed[g] {
			v = append(v, fmt.Sprintf("%s: grants %s, which neither its code nor Lambda uses", fn, g))
		}
	}
	for _, g := range needed {
		if !slices.Contains(granted, g) {
			v = append(v, fmt.Sprintf("%s: does not grant %s, which its code uses", fn, g))
		}
	}
	for _, g := range mapped {
		if !slices.Contains(granted, g) {
			v = append(v, fmt.Sprintf("%s: does not grant %s, which its event source mapping needs", fn, g))
		}
	}
	return v
}

// policyText is a policy's value as text: a string as it is, a Ref or an
// Fn::GetAtt as Fn::Sub writes it (${SessionsTable.Arn}), an Fn::Sub with
// its variables substituted, anything else as JSON.
func policyText(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	if m, ok := v.(map[string]any); ok && len(m) == 1 {
		if id, ok := m["Ref"].(string); ok {
			return "${" + id + "}"
		}
		if a, ok := m["Fn::GetAtt"].(string); ok {
			return "${" + a + "}"
		}
		if a := list(m["Fn::GetAtt"]); len(a) == 2 {
			return fmt.Sprintf("${%v.%v}", a[0], a[1])
		}
		if s, ok := m["Fn::Sub"].(string); ok {
			return s
		}
		if a := list(m["Fn::Sub"]); len(a) == 2 {
			s, _ := a[0].(string)
			vars, _ := a[1].(map[string]any)
			for k, val := range vars {
				s = strings.ReplaceAll(s, "${"+k+"}", policyText(val))
			}
			return s
		}
	}
	return testkit.JSON(v)
}

// references tells whether a value names a resource: by Ref, by
// Fn::GetAtt, or in an Fn::Sub, at any depth.
func references(v any, id string) bool {
	switch x := v.(type) {
	case map[string]any:
		if len(x) == 1 && (x["Ref"] != nil || x["Fn::GetAtt"] != nil || x["Fn::Sub"] != nil) {
			if t := policyText(x); strings.Contains(t, "${"+id+"}") || strings.Contains(t, "${"+id+".") {
				return true
			}
		}
		for _, e := range x {
			if references(e, id) {
				return true
			}
		}
	case []any:
		for _, e := range x {
			if references(e, id) {
				return true
			}
		}
	}
	return false
}

// dig is the value at a path of map keys and list indexes, nil where the
// path leads nowhere.
func dig(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[k]
		case int:
			l, _ := v.([]any)
			if k >= len(l) {
				return nil
			}
			v = l[k]
		}
	}
	return v
}

// list is a list's items, or a single value as a list of one (a policy
// may write one action, resource or statement without a list).
func list(v any) []any {
	switch x := v.(type) {
	case nil:
		return nil
	case []any:
		return x
	}
	return []any{v}
}
