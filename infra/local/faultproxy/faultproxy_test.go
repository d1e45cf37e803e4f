package faultproxy_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/cloud-agent/control-plane/infra/local/dynamo"
	"github.com/cloud-agent/control-plane/infra/local/faultproxy"
	"github.com/cloud-agent/control-plane/infra/local/localdb"
	"github.com/cloud-agent/control-plane/infra/local/paramstore"
)

func TestMain(m *testing.M) {
	faultproxy.Serve()
	os.Exit(m.Run())
}

// dynamoAttempts is how many attempts the DynamoDB client makes by default
// (one more than the SDK's general default of 3).
const dynamoAttempts = 4

// fast makes a client wait 1ms between attempts instead of the SDK's backoff
// (at least 1s after a throttle), keeping its retry budget.
func fast(r aws.Retryer) aws.Retryer { return retry.AddWithMaxBackoffDelay(r, time.Millisecond) }

// dynamo starts an embedded DynamoDB endpoint with an empty table keyed by
// PK and a proxy in front of it. It returns the proxy, a client that goes
// through the proxy, a client that goes straight to the endpoint, and the
// table's name.
func proxied(t *testing.T) (p *faultproxy.Proxy, viaProxy, direct *dynamodb.Client, table string) {
	t.Helper()
	d, err := dynamo.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close(context.Background()) })
	p = faultproxy.New(d.URL)
	t.Cleanup(p.Close)

	table = "faults"
	direct = localdb.Client(d.URL)
	_, err = direct.CreateTable(context.Background(), &dynamodb.CreateTableInput{
		TableName:            aws.String(table),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("PK"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("PK"), KeyType: types.KeyTypeHash}},
		BillingMode:          types.BillingModePayPerRequest,
	})
	if err != nil {
		t.Fatal(err)
	}
	viaProxy = localdb.Client(p.URL(), func(o *dynamodb.Options) { o.Retryer = fast(o.Retryer) })
	return p, viaProxy, direct, table
}

func key(pk string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{"PK": &types.AttributeValueMemberS{Value: pk}}
}

func put(c *dynamodb.Client, table, pk string) error {
	_, err := c.PutItem(context.Background(), &dynamodb.PutItemInput{
		TableName:           aws.String(table),
		Item:                key(pk),
		ConditionExpression: aws.String("attribute_not_exists(PK)"),
	})
	return err
}

// stored reports whether the item is in the table, read strongly
// consistent from c.
func stored(t *testing.T, c *dynamodb.Client, table, pk string) bool {
	t.Helper()
	out, err := c.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(table), Key: key(pk), ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	return out.Item != nil
}

// TestForwardsUnchanged: without faults, requests reach the endpoint and its
// answers, errors included, reach the client as they were.
func TestForwardsUnchanged(t *testing.T) {
	p, c, _, table := proxied(t)
	if err := put(c, table, "a"); err != nil {
		t.Fatal(err)
	}
	if !stored(t, c, table, "a") {
		t.Error("item not stored")
	}
	_, err := c.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String("missing"), Key: key("a")})
	var notFound *types.ResourceNotFoundException
	if !errors.As(err, &notFound) {
		t.Errorf("GetItem of a missing table: %v, want ResourceNotFoundException", err)
	}
	if got := p.Count(""); got != 3 {
		t.Errorf("%d requests, want 3", got)
	}
}

// TestOneFaultIsRetried: a single throttle or server error is retried by the
// SDK and the call then succeeds; faults queued for one operation leave the
// others alone.
func TestOneFaultIsRetried(t *testing.T) {
	for name, f := range map[string]faultproxy.Fault{"throttle": faultproxy.DynamoThrottle, "500": faultproxy.DynamoInternalError} {
		t.Run(name, func(t *testing.T) {
			p, c, _, table := proxied(t)
			p.Inject("GetItem", 1, f)
			if err := put(c, table, "a"); err != nil {
				t.Fatal(err)
			}
			if !stored(t, c, table, "a") {
				t.Error("item not read back")
			}
			if got := p.Count("PutItem"); got != 1 {
				t.Errorf("PutItem: %d attempts, want 1", got)
			}
			if got := p.Count("GetItem"); got != 2 {
				t.Errorf("GetItem: %d attempts, want 2", got)
			}
		})
	}
}

// TestFaultsBeyondRetryBudgetFail: a fault on every attempt makes the call
// fail with the service's error (or, for a connection closed before
// forwarding, a failed send) once the SDK has used all its attempts, and
// the endpoint never keeps the write.
func TestFaultsBeyondRetryBudgetFail(t *testing.T) {
	for name, tc := range map[string]struct {
		fault faultproxy.Fault
		is    func(error) bool
	}{
		"throttle": {faultproxy.DynamoThrottle, func(err error) bool {
			var e *types.ProvisionedThroughputExceededException
			return errors.As(err, &e)
		}},
		"500": {faultproxy.DynamoInternalError, func(err error) bool {
			var e *types.InternalServerError
			return errors.As(err, &e)
		}},
		"drop": {faultproxy.Drop, func(err error) bool {
			var e *smithyhttp.RequestSendError
			return errors.As(err, &e)
		}},
	} {
		t.Run(name, func(t *testing.T) {
			p, c, direct, table := proxied(t)
			p.Inject("PutItem", dynamoAttempts, tc.fault)
			if err := put(c, table, "a"); !tc.is(err) {
				t.Fatalf("PutItem: %v", err)
			}
			if got := p.Count("PutItem"); got != dynamoAttempts {
				t.Errorf("%d attempts, want %d", got, dynamoAttempts)
			}
			if stored(t, direct, table, "a") {
				t.Error("item stored although every attempt was refused")
			}
		})
	}
}

// TestDropAfterIsALostAnswer: the endpoint applies the conditional PutItem
// but its answer is lost. The SDK treats the closed connection as a
// transient error and sends the PutItem again; that second attempt finds
// the item its first attempt wrote, so the caller gets
// ConditionalCheckFailedException for a write that did happen, exactly once.
func TestDropAfterIsALostAnswer(t *testing.T) {
	p, c, direct, table := proxied(t)
	p.Inject("PutItem", 1, faultproxy.DropAfter)
	err := put(c, table, "a")
	var failed *types.ConditionalCheckFailedException
	if !errors.As(err, &failed) {
		t.Fatalf("PutItem: %v, want ConditionalCheckFailedException", err)
	}
	if got := p.Count("PutItem"); got != 2 {
		t.Errorf("%d attempts, want 2", got)
	}
	if !stored(t, direct, table, "a") {
		t.Error("item not in the table")
	}
	out, err := direct.Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String(table)})
	if err != nil {
		t.Fatal(err)
	}
	if out.Count != 1 {
		t.Errorf("%d items, want 1", out.Count)
	}
}

// TestDelayOutlastsTimeout: an answer slower than the caller's deadline
// ends the call with the context's deadline error, without a retry.
func TestDelayOutlastsTimeout(t *testing.T) {
	p, c, _, table := proxied(t)
	p.Inject("GetItem", 1, faultproxy.Delay(200*time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: key("a")})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("GetItem: %v, want context.DeadlineExceeded", err)
	}
	if got := p.Count("GetItem"); got != 1 {
		t.Errorf("%d attempts, want 1", got)
	}
}

// TestStall: a stalled request ends the call with the caller's deadline
// and never reaches the backend.
func TestStall(t *testing.T) {
	p, c, direct, table := proxied(t)
	p.Inject("PutItem", 1, faultproxy.Stall)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: key("a")})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("PutItem: %v, want context.DeadlineExceeded", err)
	}
	if stored(t, direct, table, "a") {
		t.Error("the stalled put reached the table")
	}
}

// TestInjectEvery: a standing rule fails every k-th request of its
// operation, the SDK's retries included, until it is cleared; the other
// operations pass.
func TestInjectEvery(t *testing.T) {
	p, _, direct, table := proxied(t)
	once := localdb.Client(p.URL(), func(o *dynamodb.Options) { o.RetryMaxAttempts = 1 })
	p.InjectEvery("PutItem", 3, faultproxy.DynamoInternalError)
	var refused []int
	for i := range 9 {
		if err := put(once, table, string(rune('a'+i))); err != nil {
			refused = append(refused, i)
		}
	}
	if len(refused) != 3 || refused[0] != 2 || refused[1] != 5 || refused[2] != 8 {
		t.Errorf("refused %v, want [2 5 8]", refused)
	}
	if !stored(t, once, table, "a") || stored(t, direct, table, "c") {
		t.Error("a refused put was stored, or a passed one was not")
	}
	// Two rules count every request they match, whichever gives its fault.
	p.ClearEvery()
	p.InjectEvery("PutItem", 2, faultproxy.DynamoInternalError)
	p.InjectEvery("PutItem", 3, faultproxy.DynamoThrottle)
	refused = nil
	for i := range 6 {
		if err := put(once, table, string(rune('m'+i))); err != nil {
			refused = append(refused, i)
		}
	}
	if len(refused) != 4 || refused[0] != 1 || refused[1] != 2 || refused[2] != 3 || refused[3] != 5 {
		t.Errorf("refused %v, want [1 2 3 5]", refused)
	}
	p.ClearEvery()
	for i := range 3 {
		if err := put(once, table, string(rune('A'+i))); err != nil {
			t.Errorf("after ClearEvery: %v", err)
		}
	}
}

// TestBefore: what Before's function writes lands before the request it
// precedes: here a conditional put then finds the item taken.
func TestBefore(t *testing.T) {
	p, c, direct, table := proxied(t)
	p.Inject("PutItem", 1, faultproxy.Before(func() {
		if err := put(direct, table, "a"); err != nil {
			t.Error(err)
		}
	}))
	var failed *types.ConditionalCheckFailedException
	if err := put(c, table, "a"); !errors.As(err, &failed) {
		t.Fatalf("PutItem: %v, want ConditionalCheckFailedException", err)
	}
}

// TestLatency: with a latency set, every forwarded request waits it out: a
// caller whose deadline is shorter gets the context's deadline error.
func TestLatency(t *testing.T) {
	p, c, _, table := proxied(t)
	p.SetLatency(200 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: key("a")}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("GetItem: %v, want context.DeadlineExceeded", err)
	}
	p.SetLatency(0)
	if stored(t, c, table, "a") {
		t.Error("no item was put")
	}
}

// TestSeparate: a proxy in a process of its own forwards to its target,
// and its latency is set from this one.
func TestSeparate(t *testing.T) {
	d, err := dynamo.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close(context.Background()) })
	p := faultproxy.Separate(t, d.URL)
	c := localdb.Client(p.URL())
	ctx := context.Background()
	if _, err := c.ListTables(ctx, &dynamodb.ListTablesInput{}); err != nil {
		t.Fatalf("ListTables through the proxy's process: %v", err)
	}
	if err := p.SetLatency(200 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if _, err := c.ListTables(short, &dynamodb.ListTablesInput{}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("ListTables: %v, want context.DeadlineExceeded", err)
	}
	if err := p.SetLatency(0); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ListTables(ctx, &dynamodb.ListTablesInput{}); err != nil {
		t.Fatalf("ListTables without the latency: %v", err)
	}
}

// TestSSMThrottle: Parameter Store throttling is retried, and fails the call
// with ThrottlingException once the client's 3 attempts are used up.
func TestSSMThrottle(t *testing.T) {
	const path = "/faults"
	srv := httptest.NewServer(&paramstore.Server{File: filepath.Join(t.TempDir(), "none.json"), Path: path})
	t.Cleanup(srv.Close)
	p := faultproxy.New(srv.URL)
	t.Cleanup(p.Close)
	c := ssm.New(ssm.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(p.URL()),
		Credentials:  credentials.NewStaticCredentialsProvider("local", "local", ""),
	}, func(o *ssm.Options) { o.Retryer = fast(o.Retryer) })
	get := func() error {
		_, err := c.GetParametersByPath(context.Background(), &ssm.GetParametersByPathInput{Path: aws.String(path)})
		return err
	}

	p.Inject("GetParametersByPath", 1, faultproxy.SSMThrottle)
	if err := get(); err != nil {
		t.Fatal(err)
	}
	if got := p.Count("GetParametersByPath"); got != 2 {
		t.Errorf("%d attempts, want 2", got)
	}

	p.Inject("GetParametersByPath", 3, faultproxy.SSMThrottle)
	var apiErr smithy.APIError
	if err := get(); !errors.As(err, &apiErr) || apiErr.ErrorCode() != "ThrottlingException" {
		t.Fatalf("GetParametersByPath: %v, want ThrottlingException", err)
	}
	if got := p.Count("GetParametersByPath"); got != 2+3 {
		t.Errorf("%d attempts in all, want 5", got)
	}
}
