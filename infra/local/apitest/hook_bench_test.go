package apitest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"github.com/aws/smithy-go/middleware"
	"github.com/google/uuid"

	"github.com/cloud-agent/control-plane/infra/local/apitest"
	"github.com/cloud-agent/control-plane/infra/local/dynamo"
	"github.com/cloud-agent/control-plane/infra/local/dynamotest"
	"github.com/cloud-agent/control-plane/infra/local/kms"
	"github.com/cloud-agent/control-plane/infra/local/localdb"
	"github.com/cloud-agent/control-plane/infra/local/paramstore"
	"github.com/cloud-agent/control-plane/shared/app"
	"github.com/cloud-agent/control-plane/shared/httpapi"
	"github.com/cloud-agent/control-plane/shared/invocation"
	"github.com/cloud-agent/control-plane/shared/secrets"
	"github.com/cloud-agent/control-plane/shared/session"
	"github.com/cloud-agent/control-plane/shared/settings"
	"github.com/cloud-agent/control-plane/shared/store"
	"github.com/cloud-agent/control-plane/shared/trigger"
	"github.com/cloud-agent/control-plane/shared/webhook"
)

// benchSettings are the settings params, served by the SSM stand-in and
// cached as the functions cache them (settings.DefaultTTL).
func benchSettings(tb testing.TB, params []settings.Parameter) *settings.Settings {
	tb.Helper()
	if params == nil {
		params = []settings.Parameter{}
	}
	data, err := json.Marshal(params)
	if err != nil {
		tb.Fatal(err)
	}
	file := filepath.Join(tb.TempDir(), "settings.json")
	if err := os.WriteFile(file, data, 0o600); err != nil {
		tb.Fatal(err)
	}
	ssmSrv := httptest.NewServer(&paramstore.Server{File: file, Path: apitest.ConfigPath})
	tb.Cleanup(ssmSrv.Close)
	sm := ssm.New(ssm.Options{Region: "us-east-1", BaseEndpoint: aws.String(ssmSrv.URL),
		Credentials: credentials.NewStaticCredentialsProvider("local", "local", "")})
	return settings.New(sm, apitest.ConfigPath, settings.DefaultTTL)
}

// hookLimit is webhook/deliveries-per-minute in the benchmarks, the most
// there is: the minute's limit is not what they measure.
var hookLimit = []settings.Parameter{{Name: "webhook/deliveries-per-minute", Type: "String",
	Value: fmt.Sprint(settings.MaxDeliveriesPerMinute)}}

// hookStack is the hook function's handler as functions/triggerhook wires
// it, over a table, with the secrets' keys on the KMS stand-in.
type hookStack struct {
	api     *httpapi.API
	table   *store.Table
	secrets *secrets.Keys
	kms     *kms.TestServer
}

func newHookStack(tb testing.TB, tbl *store.Table, cfg *settings.Settings, log io.Writer) *hookStack {
	tb.Helper()
	ts := kms.NewTestServer(tb, nil)
	keys := secrets.New(kms.Client(ts.URL), "alias/WebhookKey", "alias/WebhookSecretsKey")
	logger := slog.New(slog.NewJSONHandler(log, nil))
	routes := app.Build(app.Parts{Log: logger, Table: tbl, Settings: cfg, Secrets: keys}).Routes()
	api := httpapi.New(logger, routes[app.TriggerHook.ID]...).WithMetrics(invocation.NewMetrics(app.TriggerHook.ID, "$LATEST"))
	return &hookStack{api: api, table: tbl, secrets: keys, kms: ts}
}

// benchHook is a stored webhook trigger (verify github, every event) and
// its secret in clear.
type benchHook struct{ id, secret string }

// newTrigger stores a webhook trigger of user u with a generated secret.
func (s *hookStack) newTrigger(tb testing.TB, u string) benchHook {
	tb.Helper()
	now := time.Now().UTC()
	tr := &trigger.Trigger{
		ID: "trg_" + uuid.NewString(), UserID: u, Active: true,
		Repository: session.Repository{Type: "github", Repo: "acme/app"},
		Agent:      session.Agent{Mode: "code", Model: "anthropic/claude"},
		Prompt:     "Review pull request {{ body.pull_request.number }}: {{ json body.pull_request.title }} ({{ event }})",
		CreatedAt:  now.Add(-time.Hour), Version: 1,
		Webhook: &trigger.Webhook{Verify: webhook.VerifyGitHub, Secret: trigger.Secret{Version: 1, CreatedAt: now.Add(-time.Hour)}},
	}
	ctx := context.Background()
	if err := s.table.CreateTrigger(ctx, tr, 100); err != nil {
		tb.Fatal(err)
	}
	secret, err := s.secrets.Derive(ctx, tr.ID, 1)
	if err != nil {
		tb.Fatal(err)
	}
	return benchHook{tr.ID, secret}
}

// hookBody is a GitHub pull request event's body, with the delivery's id
// in its title.
const hookBody = `{"action":"opened","number":7,"pull_request":{"number":7,"title":"Add a README (%s)","user":{"login":"octocat"}},"repository":{"full_name":"acme/app"}}`

// event is a GitHub delivery to the trigger, signed, with the delivery id
// delivery, which its body holds: a GitHub delivery's key is its body's
// SHA-256, so one id is one key.
func (hk benchHook) event(tb testing.TB, delivery string) events.APIGatewayV2HTTPRequest {
	body := fmt.Sprintf(hookBody, delivery)
	headers, err := webhook.DeliveryProof(webhook.VerifyGitHub, hk.secret, "", time.Now(), []byte(body))
	if err != nil {
		tb.Fatal(err)
	}
	headers["X-GitHub-Event"], headers["X-GitHub-Delivery"] = "pull_request", delivery
	return apitest.Event(apitest.Call{Method: "POST", Path: "/v1/hooks/" + hk.id, Headers: headers, Body: body})
}

// capture keeps the last BatchGetItem and TransactWriteItems input a
// client sent: the floor of a delivery sends the same again.
type capture struct {
	mu       sync.Mutex
	batch    *dynamodb.BatchGetItemInput
	transact *dynamodb.TransactWriteItemsInput
}

func (c *capture) option(o *dynamodb.Options) {
	o.APIOptions = append(o.APIOptions, func(st *middleware.Stack) error {
		return st.Initialize.Add(middleware.InitializeMiddlewareFunc("Capture",
			func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				c.mu.Lock()
				switch p := in.Parameters.(type) {
				case *dynamodb.BatchGetItemInput: // a copy: the store sets the unprocessed keys in it
					cp := *p
					cp.RequestItems = maps.Clone(p.RequestItems)
					c.batch = &cp
				case *dynamodb.TransactWriteItemsInput:
					cp := *p // without its idempotency token: the SDK draws a new one for each
					cp.TransactItems, cp.ClientRequestToken = slices.Clone(p.TransactItems), nil
					c.transact = &cp
				}
				c.mu.Unlock()
				return next.HandleInitialize(ctx, in)
			}), middleware.After)
	})
}

// last is what was captured, and forgets it.
func (c *capture) last() (*dynamodb.BatchGetItemInput, *dynamodb.TransactWriteItemsInput) {
	c.mu.Lock()
	defer c.mu.Unlock()
	b, t := c.batch, c.transact
	c.batch, c.transact = nil, nil
	return b, t
}

// puts are the items a transaction puts (its session, ledger row, run
// and marker). The trigger's counter of the minute, which it updates,
// stays: the benchmarks' limit is the most there is.
func puts(in *dynamodb.TransactWriteItemsInput) []store.Item {
	var items []store.Item
	for _, it := range in.TransactItems {
		if it.Put != nil {
			items = append(items, it.Put.Item)
		}
	}
	return items
}

// Deliveries is the size of BenchmarkDeliveries: deliveries sent at once,
// to triggers triggers, each key delivered twice.
const (
	deliveries        = 1000
	deliveryTriggers  = 100
	deliveriesPerKey  = 2
	keysPerTrigger    = deliveries / deliveriesPerKey / deliveryTriggers
	deliveryConnsIdle = 256
)

// BenchmarkDeliveries sends 1,000 webhook deliveries at once to 100
// triggers through the hook function's handler, wired as the function
// wires it (settings cached, secrets cached after each trigger's first
// derivation, one log line a delivery), on the embedded endpoint: 500
// delivery keys, 5 a trigger, each sent twice, the two copies at the same
// time. Then it holds the outcome to exactly once: each key has exactly one
// session, both its answers name it (one 201 and one 200, or a 503 a
// sender retries: retried counts those), each trigger one run per key, and
// the table holds 500 sessions more. ms/delivery is the burst's time over
// its deliveries; p50-ms and p99-ms one delivery's latency from the release
// to its answer, requests/delivery the DynamoDB requests the lines logged.
// The triggers' secrets are derived (and cached) before the burst, as a
// warm execution environment holds them. One iteration is one burst: run
// it with -benchtime=1x.
func BenchmarkDeliveries(b *testing.B) {
	b.Run(fmt.Sprintf("deliveries=%d/triggers=%d", deliveries, deliveryTriggers), benchDeliveries)
}

func benchDeliveries(b *testing.B) {
	d, err := dynamo.Start("127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = d.Close(context.Background()) })
	direct, name := dynamotest.Table(b, dynamotest.Backend{Name: "embedded", URL: d.URL})
	client := localdb.Client(d.URL, store.Counting, func(o *dynamodb.Options) {
		// As many idle connections as requests at once, as the functions keep (app.HTTPClient).
		o.HTTPClient = awshttp.NewBuildableClient().WithTransportOptions(func(t *http.Transport) { t.MaxIdleConnsPerHost = deliveryConnsIdle })
	})
	lines := &requestLines{}
	s := newHookStack(b, store.New(client, name), benchSettings(b, hookLimit), lines)
	hooks := make([]benchHook, deliveryTriggers)
	for i := range hooks {
		hooks[i] = s.newTrigger(b, fmt.Sprintf("u%d", i))
	}
	// One delivery to each trigger first, of a key of its own, so that the
	// secrets are cached as a warm environment's are.
	for _, hk := range hooks {
		if resp, err := s.api.Handle(context.Background(), hk.event(b, "warm-"+hk.id)); err != nil || resp.StatusCode != 201 {
			b.Fatalf("warming %s: %d %s %v", hk.id, resp.StatusCode, resp.Body, err)
		}
	}
	kmsBefore := s.kms.Calls.Load()

	type sent struct {
		hook    benchHook
		key     string
		ev      events.APIGatewayV2HTTPRequest
		status  int
		session string
		took    time.Duration
		retried int
	}
	var total time.Duration
	var lat []time.Duration
	retried, requests := 0, 0
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		all := make([]*sent, 0, deliveries)
		for t, hk := range hooks {
			for k := range keysPerTrigger {
				key := fmt.Sprintf("burst-%d-%03d-%d", i, t, k)
				for range deliveriesPerKey {
					all = append(all, &sent{hook: hk, key: key, ev: hk.event(b, key)})
				}
			}
		}
		sessionsBefore := countSessions(b, direct, name)
		lines.reset()
		release := make(chan struct{})
		var wg sync.WaitGroup
		var t0 time.Time
		for _, d := range all {
			wg.Go(func() {
				<-release
				for {
					resp, err := s.api.Handle(context.Background(), d.ev)
					if err != nil {
						d.status = -1
						return
					}
					if resp.StatusCode == 503 && d.retried < 5 { // busy: a sender retries
						d.retried++
						continue
					}
					d.status = resp.StatusCode
					var body struct{ SessionID string }
					_ = json.Unmarshal([]byte(resp.Body), &body)
					d.session = body.SessionID
					d.took = time.Since(t0)
					return
				}
			})
		}
		b.StartTimer()
		t0 = time.Now()
		close(release)
		wg.Wait()
		took := time.Since(t0)
		b.StopTimer()
		total += took
		requests += lines.total()

		// Exactly once: per key one session, named by both answers, one 201.
		byKey := map[string][]*sent{}
		for _, d := range all {
			byKey[d.key] = append(byKey[d.key], d)
			lat = append(lat, d.took)
			retried += d.retried
		}
		for key, ds := range byKey {
			created := 0
			for _, d := range ds {
				if d.status == 201 {
					created++
				}
				if d.status != 201 && d.status != 200 || d.session == "" || d.session != ds[0].session {
					b.Fatalf("key %s: answers %d %q and %d %q", key, ds[0].status, ds[0].session, d.status, d.session)
				}
			}
			if created != 1 {
				b.Fatalf("key %s: %d answers 201", key, created)
			}
		}
		if got := countSessions(b, direct, name) - sessionsBefore; got != len(byKey) {
			b.Fatalf("%d new sessions for %d delivery keys", got, len(byKey))
		}
		// One run per key: each trigger's runs of this burst, by delivery.
		for t, hk := range hooks {
			_, rs, _, err := s.table.ListRuns(context.Background(), hk.id, "", 100, nil, time.Now())
			if err != nil {
				b.Fatal(err)
			}
			seen := map[string]string{}
			for _, r := range rs {
				if !strings.HasPrefix(r.Delivery, fmt.Sprintf("burst-%d-%03d-", i, t)) {
					continue
				}
				if _, dup := seen[r.Delivery]; dup {
					b.Fatalf("trigger %s: two runs of delivery %s", hk.id, r.Delivery)
				}
				seen[r.Delivery] = r.SessionID
				if ds := byKey[r.Delivery]; r.SessionID != ds[0].session {
					b.Fatalf("trigger %s: the run of %s names session %s, its answers %s", hk.id, r.Delivery, r.SessionID, ds[0].session)
				}
			}
			if len(seen) != keysPerTrigger {
				b.Fatalf("trigger %s: %d runs for %d keys", hk.id, len(seen), keysPerTrigger)
			}
		}
		b.StartTimer()
	}
	b.StopTimer()
	n := float64(len(lat))
	slices.Sort(lat)
	ms := func(q float64) float64 { return float64(lat[int(q*float64(len(lat)-1))]) / 1e6 }
	b.ReportMetric(total.Seconds()/float64(b.N), "s/burst")
	b.ReportMetric(total.Seconds()*1e3/n, "ms/delivery")
	b.ReportMetric(n/total.Seconds(), "deliveries/s")
	b.ReportMetric(ms(0.50), "p50-ms")
	b.ReportMetric(ms(0.99), "p99-ms")
	b.ReportMetric(float64(requests)/n, "requests/delivery")
	b.ReportMetric(float64(retried), "retried")
	b.ReportMetric(float64(s.kms.Calls.Load()-kmsBefore), "kms-calls")
}

// countSessions counts the table's sessions.
func countSessions(tb testing.TB, c *dynamodb.Client, table string) int {
	return scanCount(tb, c, &dynamodb.ScanInput{TableName: aws.String(table),
		FilterExpression:          aws.String("begins_with(PK, :s) AND SK = :k"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":s": &types.AttributeValueMemberS{Value: "SESSION#"}, ":k": &types.AttributeValueMemberS{Value: "METADATA"}}})
}

// requestLines sums the DynamoDB requests of the log lines written to it,
// from many deliveries at once.
type requestLines struct {
	mu       sync.Mutex
	requests int
}

func (l *requestLines) Write(p []byte) (int, error) {
	var line struct{ DynamodbRequests int }
	_ = json.Unmarshal(p, &line)
	l.mu.Lock()
	l.requests += line.DynamodbRequests
	l.mu.Unlock()
	return len(p), nil
}

func (l *requestLines) reset() { l.mu.Lock(); l.requests = 0; l.mu.Unlock() }

func (l *requestLines) total() int { l.mu.Lock(); defer l.mu.Unlock(); return l.requests }
