package local_test

import (
	"context"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"github.com/aws/smithy-go/middleware"
	"gopkg.in/yaml.v3"

	"github.com/cloud-agent/control-plane/infra/local"
	"github.com/cloud-agent/control-plane/infra/local/apitest"
	"github.com/cloud-agent/control-plane/infra/local/dynamotest"
	"github.com/cloud-agent/control-plane/shared/store"
)

// The resources of template.yaml, as its policies write them.
const (
	tableARN    = "!GetAtt SessionsTable.Arn"
	indexARN    = "!Sub ${SessionsTable.Arn}/index/"
	settingsARN = "!Sub arn:${AWS::Partition}:ssm:${AWS::Region}:${AWS::AccountId}:parameter/cloud-agent/${Stage}"
	// deadLetters is what the firing's role grants for Lambda itself, not
	// for its code: Lambda sends a failed asynchronous invocation to the
	// on-failure destination with the function's role.
	deadLetters = "sqs:SendMessage !GetAtt TriggerFireDeadLetterQueue.Arn"
)

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

// TestLeastPrivilege: each function's policy in template.yaml grants
// exactly what its code uses, every action on the narrowest resource (the
// table, the index, the settings' path), no more and no less. Each
// function's handlers, wired as its main.go wires them, go every way the
// contract has for them over one table; what they send is recorded and
// compared with the policy.
func TestLeastPrivilege(t *testing.T) {
	b := dynamotest.Backends(t)[0]
	direct, name := dynamotest.Table(t, b)
	harness := map[string]*apitest.Harness{}
	used := map[string]*grants{}
	for _, fn := range []string{"SessionStartFunction", "AllocationLookupFunction", "TriggersFunction", "TriggerFireFunction"} {
		g := &grants{used: map[string]bool{}}
		used[fn] = g
		api := local.DynamoClient(b.URL, store.Counting, func(o *dynamodb.Options) { o.APIOptions = append(o.APIOptions, g.recordOn) })
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

	// The triggers: create, read, list, change, list runs, delete.
	trigger := func(cron string) string {
		return call("TriggersFunction", "POST", "/v1/triggers", `{"schedule":{"cron":"`+cron+`"},`+repo+`,"prompt":"p"}`, 201)["triggerId"].(string)
	}
	gone := trigger("0 9 * * *")
	call("TriggersFunction", "POST", "/v1/triggers", `{"schedule":{"cron":"0 9 * * *"},`+repo+`,"prompt":"p","sandboxAllocation":"vercel-small"}`, 201)
	call("TriggersFunction", "GET", "/v1/triggers/"+gone, "", 200)
	call("TriggersFunction", "GET", "/v1/triggers", "", 200)
	call("TriggersFunction", "PATCH", "/v1/triggers/"+gone, `{"active":false,"sandboxAllocation":"vercel-large"}`, 200)
	call("TriggersFunction", "GET", "/v1/triggers/"+gone+"/runs", "", 200)
	call("TriggersFunction", "DELETE", "/v1/triggers/"+gone, "", 204)

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

	data, err := os.ReadFile("../../template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	resources := child(child(doc.Content[0], "Resources"), "")
	for fn, g := range used {
		var granted []string
		for _, policy := range child(child(child(resources, fn), "Properties"), "Policies").Content {
			for _, st := range child(policy, "Statement").Content {
				if v := child(st, "Effect").Value; v != "Allow" {
					t.Errorf("%s: effect %s", fn, v)
				}
				for _, action := range scalars(child(st, "Action")) {
					for _, res := range scalars(child(st, "Resource")) {
						if g := action + " " + res; g != deadLetters || fn != "TriggerFireFunction" {
							granted = append(granted, g)
						}
					}
				}
			}
		}
		slices.Sort(granted)
		if got := g.sorted(); !slices.Equal(got, granted) {
			t.Errorf("%s uses\n%s\nits policy grants\n%s", fn, strings.Join(got, "\n"), strings.Join(granted, "\n"))
		}
	}
}

// child is the value of a mapping node's key ("" for the node itself).
func child(n *yaml.Node, key string) *yaml.Node {
	if n == nil || key == "" {
		return n
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return &yaml.Node{}
}

// scalars are a scalar's or a sequence's values, a tag such as !GetAtt
// written before its value.
func scalars(n *yaml.Node) []string {
	items := []*yaml.Node{n}
	if n.Kind == yaml.SequenceNode {
		items = n.Content
	}
	var out []string
	for _, it := range items {
		v := it.Value
		if strings.HasPrefix(it.Tag, "!") && !strings.HasPrefix(it.Tag, "!!") {
			v = it.Tag + " " + v
		}
		out = append(out, v)
	}
	return out
}
