package apitest_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/uuid"

	"github.com/cloud-agent/control-plane/infra/local/apitest"
	"github.com/cloud-agent/control-plane/infra/local/dynamo"
	"github.com/cloud-agent/control-plane/infra/local/dynamotest"
	"github.com/cloud-agent/control-plane/infra/local/localdb"
	"github.com/cloud-agent/control-plane/shared/allocation"
	"github.com/cloud-agent/control-plane/shared/app"
	"github.com/cloud-agent/control-plane/shared/environment"
	"github.com/cloud-agent/control-plane/shared/httpapi"
	"github.com/cloud-agent/control-plane/shared/invocation"
	"github.com/cloud-agent/control-plane/shared/store"
)

// seededSessions is how many sessions, each with its ledger row, the table
// holds while every operation is measured.
const seededSessions = 1000

var (
	benchCaller = map[string]string{"sub": "u1", "org_ids": "[o1 o2]"}
	benchBody   = map[string]any{
		"repository":  map[string]any{"type": "github", "repo": "acme/app", "branch": "main"},
		"agent":       map[string]any{"mode": "code", "model": "anthropic/claude"},
		"initialTurn": map[string]any{"prompt": "Fix the failing test in the parser."},
	}
)

// BenchmarkAgainstFloor measures, on the embedded endpoint and at one table
// size (seededSessions sessions with their ledger rows; what a fresh start
// writes is deleted again, untimed), each handler beside the bare DynamoDB
// requests it cannot do without, sent through the handlers' own client:
//
//   - start (POST /v1/sessions, a new operation key each time) beside the
//     BatchGetItem of the environments a start resolves its own from
//     (captured from a start) and a three-item TransactWriteItems of the
//     same items (session, row, prompt) under attribute_not_exists;
//   - start-in-environment (the same, for a caller whose default
//     environment holds two variables, a secret one among them, and a setup
//     command, which the session keeps a snapshot of) beside start: x-start
//     is its rate over a start's without an environment;
//   - replay (the same key again) beside what a replay needs on DynamoDB,
//     the environments' read, a transaction refused by the ledger row
//     (which hands the row back, on DynamoDB as on the embedded endpoint)
//     and a GetItem of the session;
//   - lookup (GET /v1/sessions/{id}/allocation) beside a consistent GetItem
//     of the session;
//   - delivery (POST /v1/hooks/{triggerId}, a GitHub delivery with a new
//     body, so a new key, each time) beside the BatchGetItem and the
//     TransactWriteItems of a new delivery, captured from the hook and sent
//     again as they are (what they put is deleted again, untimed);
//   - redelivery (the trigger's first delivery again) beside the
//     BatchGetItem of a redelivery, captured the same way.
//
// The handlers are wired as the functions wire them: settings cached (the
// harness's New rereads them at every request, which the functions never
// do), one JSON log line per request; the hook's secrets on the KMS
// stand-in, cached by the first delivery, and the minute's limit the most
// there is (its counter is not what is measured). The endpoint runs in
// this process, so allocs/op and B/op include its work, the floor's as
// much as the handler's. x-floor is the handler's rate over its floor's, the floor
// timed once beside each handler call (off the benchmark's timer), so that
// both meet the same load; the floor's own line gives its allocations.
// items and items-end are the table's size before and after.
func BenchmarkAgainstFloor(b *testing.B) {
	f := newFloorBench(b)
	run := func(name string, o floorOp, floors ...namedFloor) {
		b.Run(name, func(b *testing.B) { f.measure(b, o, floors) })
	}

	transact := floorOp{
		prepare: func(b testing.TB, i int) { f.nextClones(b, fmt.Sprintf("f-%09d", i)) },
		do: func(ctx context.Context) error {
			if _, err := f.client.BatchGetItem(ctx, f.startBatch); err != nil {
				return err
			}
			_, err := f.client.TransactWriteItems(ctx, f.transaction(f.clones[:]...))
			return err
		},
		cleanup: func(b testing.TB) { f.delete(b, f.clones[:]...) },
	}
	start := f.startOp(benchCaller, "n")
	run("transact-floor", transact)
	run("start", start, namedFloor{"x-floor", transact})
	run("start-in-environment", f.startOp(envCaller, "e"), namedFloor{"x-start", f.startOp(benchCaller, "m")})

	replayFloor := floorOp{
		prepare: func(b testing.TB, _ int) { f.nextClones(b, f.key) },
		do: func(ctx context.Context) error {
			if _, err := f.client.BatchGetItem(ctx, f.startBatch); err != nil {
				return err
			}
			_, err := f.client.TransactWriteItems(ctx, f.transaction(f.clones[:]...))
			var tce *types.TransactionCanceledException
			if !errors.As(err, &tce) {
				return fmt.Errorf("the ledger row did not refuse the transaction: %v", err)
			}
			return f.get(ctx, store.SessionKey(f.sessionID))
		},
	}
	run("replay-floor", replayFloor)
	run("replay", floorOp{
		handler: f.startAPI,
		event:   func() events.APIGatewayV2HTTPRequest { return f.startEvent(f.key) },
		status:  200,
	}, namedFloor{"x-floor", replayFloor})

	deliveryFloor := floorOp{
		do: func(ctx context.Context) error {
			if _, err := f.client.BatchGetItem(ctx, f.deliveryBatch); err != nil {
				return err
			}
			in := *f.deliveryTransact // a token of its own: the SDK sets one in its input
			_, err := f.client.TransactWriteItems(ctx, &in)
			return err
		},
		cleanup: func(b testing.TB) { f.delete(b, puts(f.deliveryTransact)...) },
	}
	var delivery events.APIGatewayV2HTTPRequest
	run("delivery-floor", deliveryFloor)
	run("delivery", floorOp{
		prepare: func(b testing.TB, i int) { delivery = f.hook.event(b, fmt.Sprintf("d-%09d", i)) },
		handler: f.hooks.api,
		event:   func() events.APIGatewayV2HTTPRequest { return delivery },
		status:  201,
		cleanup: func(b testing.TB) {
			_, tx := f.capture.last()
			if tx == nil {
				b.Fatal("the delivery wrote nothing")
			}
			f.delete(b, puts(tx)...)
		},
	}, namedFloor{"x-floor", deliveryFloor})

	redeliveryFloor := floorOp{do: func(ctx context.Context) error {
		_, err := f.client.BatchGetItem(ctx, f.redeliveryBatch)
		return err
	}}
	redelivery := f.hook.event(b, "d-seed")
	run("redelivery-floor", redeliveryFloor)
	run("redelivery", floorOp{
		handler: f.hooks.api,
		event:   func() events.APIGatewayV2HTTPRequest { return redelivery },
		status:  200,
	}, namedFloor{"x-floor", redeliveryFloor})

	getItem := floorOp{do: func(ctx context.Context) error { return f.get(ctx, store.SessionKey(f.sessionID)) }}
	run("getitem-floor", getItem)
	run("lookup", floorOp{
		handler: f.lookupAPI,
		event: func() events.APIGatewayV2HTTPRequest {
			return apitest.Event(apitest.Call{Method: "GET", Path: "/v1/sessions/" + f.sessionID + "/allocation", Claims: benchCaller})
		},
		status: 200,
	}, namedFloor{"x-floor", getItem})
}

// floorBench is the table and the handlers under measurement.
type floorBench struct {
	// client is the one the handlers use (the local endpoint's options,
	// requests counted); the floor's requests go through it too. direct seeds and
	// cleans up, uncounted.
	client, direct *dynamodb.Client
	table          string
	startAPI       *httpapi.API
	lookupAPI      *httpapi.API
	log            *lastLine

	// The session, ledger row and prompt a start wrote, and its key: the
	// replay and the lookup read them; and the start's read of the
	// environments.
	written        [3]store.Item
	sessionID, key string
	startBatch     *dynamodb.BatchGetItemInput
	// Copies of them under new keys, for the floor's writes.
	clones [3]store.Item

	// The webhook trigger and its hook; the requests of a redelivery and
	// of a new delivery, captured from the hook's, which the floors send
	// again.
	hooks                          *hookStack
	hook                           benchHook
	capture                        *capture
	redeliveryBatch, deliveryBatch *dynamodb.BatchGetItemInput
	deliveryTransact               *dynamodb.TransactWriteItemsInput
}

func newFloorBench(b testing.TB) *floorBench {
	b.Helper()
	// An endpoint of its own, so that no other table shares its lock.
	d, err := dynamo.Start("127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = d.Close(context.Background()) })
	direct, name := dynamotest.Table(b, dynamotest.Backend{Name: "embedded", URL: d.URL})
	f := &floorBench{direct: direct, table: name, log: &lastLine{}, capture: &capture{}}
	f.client = localdb.Client(d.URL, store.Counting, f.capture.option)
	cfg := benchSettings(b, hookLimit)
	tbl := store.New(f.client, name)
	logger := slog.New(slog.NewJSONHandler(f.log, nil))
	routes := app.Build(app.Parts{Log: logger, Table: tbl, Settings: cfg}).Routes()
	f.startAPI = httpapi.New(logger, routes[app.SessionStart.ID]...).WithMetrics(invocation.NewMetrics(app.SessionStart.ID, "$LATEST"))
	f.lookupAPI = httpapi.New(logger, routes[app.AllocationLookup.ID]...).WithMetrics(invocation.NewMetrics(app.AllocationLookup.ID, "$LATEST"))
	f.hooks = newHookStack(b, tbl, cfg, f.log)

	f.key = fmt.Sprintf("s-%09d", 0)
	resp, err := f.startAPI.Handle(context.Background(), f.startEvent(f.key))
	if err != nil || resp.StatusCode != 201 {
		b.Fatalf("seeding start: %d %s %v", resp.StatusCode, resp.Body, err)
	}
	var body struct{ SessionID string }
	if err := json.Unmarshal([]byte(resp.Body), &body); err != nil {
		b.Fatal(err)
	}
	f.sessionID = body.SessionID
	f.startBatch, _ = f.capture.last()
	f.written = [3]store.Item{f.read(b, store.SessionKey(f.sessionID)), f.read(b, store.LedgerKey(benchCaller["sub"], f.key)),
		f.read(b, store.Item{"PK": &types.AttributeValueMemberS{Value: "SESSION#" + f.sessionID}, "SK": &types.AttributeValueMemberS{Value: "PROMPT"}})}
	f.seedEnvironment(b, tbl)
	f.seed(b)
	f.seedHook(b)
	return f
}

// seedHook stores the webhook trigger, delivers its first delivery (kept:
// its redelivery is measured), and captures the requests of a redelivery
// and of another new delivery (whose writes are deleted again), which
// the floors send again.
func (f *floorBench) seedHook(b testing.TB) {
	f.hook = f.hooks.newTrigger(b, benchCaller["sub"])
	f.deliver(b, f.hook.event(b, "d-seed"), 201)
	f.deliver(b, f.hook.event(b, "d-seed"), 200)
	f.redeliveryBatch, _ = f.capture.last()
	f.deliver(b, f.hook.event(b, "d-probe"), 201)
	f.deliveryBatch, f.deliveryTransact = f.capture.last()
	if f.redeliveryBatch == nil || f.deliveryBatch == nil || f.deliveryTransact == nil {
		b.Fatal("the deliveries' requests were not captured")
	}
	f.delete(b, puts(f.deliveryTransact)...)
}

// deliver sends a delivery to the hook and checks its status.
func (f *floorBench) deliver(b testing.TB, ev events.APIGatewayV2HTTPRequest, status int) {
	resp, err := f.hooks.api.Handle(context.Background(), ev)
	if err != nil || resp.StatusCode != status {
		b.Fatalf("seeding a delivery: %d %s %v", resp.StatusCode, resp.Body, err)
	}
}

// startEvent is a start with an operation key.
func (f *floorBench) startEvent(key string) events.APIGatewayV2HTTPRequest {
	return apitest.Event(apitest.Call{Method: "POST", Path: "/v1/sessions", Claims: benchCaller,
		Body: apitest.Body(benchBody, map[string]any{"operationKey": key})})
}

// clone is the start's session, row and prompt as another start with a
// new session id and key would write them: the same attributes, each of
// the same length.
func (f *floorBench) clone(tb testing.TB, key string) [3]store.Item {
	id := "workspace_" + uuid.NewString()
	swap := strings.NewReplacer(f.sessionID, id, allocation.SandboxID(f.sessionID), allocation.SandboxID(id),
		"#"+f.key, "#"+key)
	var out [3]store.Item
	for i, item := range f.written {
		data, err := attributevalue.MarshalMapJSON(item)
		if err != nil {
			tb.Fatal(err)
		}
		if out[i], err = localdb.UnmarshalItem([]byte(swap.Replace(string(data)))); err != nil {
			tb.Fatal(err)
		}
	}
	return out
}

func (f *floorBench) nextClones(tb testing.TB, key string) { f.clones = f.clone(tb, key) }

// startOp is a fresh start of caller (a new operation key, prefix and the
// iteration, each time), its writes deleted again, untimed.
func (f *floorBench) startOp(caller map[string]string, prefix string) floorOp {
	var key string
	var answer events.APIGatewayV2HTTPResponse
	return floorOp{
		prepare: func(_ testing.TB, i int) { key = fmt.Sprintf("%s-%09d", prefix, i) },
		handler: f.startAPI,
		event: func() events.APIGatewayV2HTTPRequest {
			return apitest.Event(apitest.Call{Method: "POST", Path: "/v1/sessions", Claims: caller,
				Body: apitest.Body(benchBody, map[string]any{"operationKey": key})})
		},
		answer: &answer,
		status: 201,
		cleanup: func(b testing.TB) {
			var body struct{ SessionID string }
			_ = json.Unmarshal([]byte(answer.Body), &body)
			session := func(sk string) store.Item {
				return store.Item{"PK": &types.AttributeValueMemberS{Value: "SESSION#" + body.SessionID}, "SK": &types.AttributeValueMemberS{Value: sk}}
			}
			f.delete(b, session("METADATA"), session("PROMPT"), session("ENV_SNAPSHOT"), store.LedgerKey(caller["sub"], key))
		},
	}
}

// envCaller is the caller whose default environment a start runs in.
var envCaller = map[string]string{"sub": "u-env", "org_ids": "[o1 o2]"}

// seedEnvironment saves envCaller's default environment: a plain and a
// secret variable (its ciphertext as long as KMS's for its value) and a
// setup command.
func (f *floorBench) seedEnvironment(tb testing.TB, tbl *store.Table) {
	now := time.Now().UTC()
	e := &environment.Environment{
		ID: "env_" + uuid.NewString(), OwnerUserID: envCaller["sub"], Name: "Node 22",
		Variables: map[string]environment.Variable{
			"NODE_ENV":  {Value: "production"},
			"NPM_TOKEN": {Secret: true, Sealed: make([]byte, 190)},
		},
		SetupCommands: []string{"npm ci"}, CreatedAt: now, UpdatedAt: now.Truncate(time.Second), Version: 1,
	}
	if err := tbl.WriteEnvironment(context.Background(), store.EnvironmentChange{Next: e, IsDefault: true, Limit: 100}); err != nil {
		tb.Fatal(err)
	}
}

// seed fills the table up to seededSessions sessions with their rows.
func (f *floorBench) seed(tb testing.TB) {
	var batch []types.WriteRequest
	flush := func() {
		in := &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{f.table: batch}}
		for len(in.RequestItems) > 0 {
			out, err := f.direct.BatchWriteItem(context.Background(), in)
			if err != nil {
				tb.Fatal(err)
			}
			in.RequestItems = out.UnprocessedItems
		}
		batch = batch[:0]
	}
	for i := 1; i < seededSessions; i++ {
		for _, it := range f.clone(tb, fmt.Sprintf("s-%09d", i)) {
			batch = append(batch, types.WriteRequest{PutRequest: &types.PutRequest{Item: it}})
		}
		if len(batch) == 24 {
			flush()
		}
	}
	if len(batch) > 0 {
		flush()
	}
}

// transaction is the floor of a start's write: its items, each under
// attribute_not_exists; the row's refusal returns the row.
func (f *floorBench) transaction(items ...store.Item) *dynamodb.TransactWriteItemsInput {
	in := &dynamodb.TransactWriteItemsInput{}
	for _, it := range items {
		in.TransactItems = append(in.TransactItems, types.TransactWriteItem{Put: &types.Put{TableName: aws.String(f.table), Item: it,
			ConditionExpression: aws.String("attribute_not_exists(PK)"), ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld}})
	}
	return in
}

// get is a consistent GetItem that must find its item.
func (f *floorBench) get(ctx context.Context, key store.Item) error {
	out, err := f.client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(f.table), Key: key, ConsistentRead: aws.Bool(true)})
	if err == nil && len(out.Item) == 0 {
		err = errors.New("no item")
	}
	return err
}

func (f *floorBench) read(tb testing.TB, key store.Item) store.Item {
	out, err := f.direct.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(f.table), Key: key, ConsistentRead: aws.Bool(true)})
	if err != nil || len(out.Item) == 0 {
		tb.Fatalf("reading %v: %v", key, err)
	}
	return out.Item
}

// delete removes the items with the keys of items (whole items or keys).
func (f *floorBench) delete(tb testing.TB, items ...store.Item) {
	var reqs []types.WriteRequest
	for _, it := range items {
		reqs = append(reqs, types.WriteRequest{DeleteRequest: &types.DeleteRequest{Key: store.Item{"PK": it["PK"], "SK": it["SK"]}}})
	}
	if _, err := f.direct.BatchWriteItem(context.Background(), &dynamodb.BatchWriteItemInput{
		RequestItems: map[string][]types.WriteRequest{f.table: reqs}}); err != nil {
		tb.Fatal(err)
	}
}

// items counts the table's items.
func (f *floorBench) items(tb testing.TB) int {
	return scanCount(tb, f.direct, &dynamodb.ScanInput{TableName: aws.String(f.table)})
}

// scanCount counts the items a scan finds.
func scanCount(tb testing.TB, c *dynamodb.Client, in *dynamodb.ScanInput) int {
	n := 0
	in.Select = types.SelectCount
	p := dynamodb.NewScanPaginator(c, in)
	for p.HasMorePages() {
		out, err := p.NextPage(context.Background())
		if err != nil {
			tb.Fatal(err)
		}
		n += int(out.Count)
	}
	return n
}

// floorOp is one measured operation: a handler's event (its status and
// requests checked, from its log line), or do, the bare requests of a
// floor (counted by the client). prepare and cleanup run untimed.
type floorOp struct {
	prepare func(b testing.TB, i int)
	handler *httpapi.API
	event   func() events.APIGatewayV2HTTPRequest
	status  int
	answer  *events.APIGatewayV2HTTPResponse
	do      func(ctx context.Context) error
	cleanup func(b testing.TB)
}

// namedFloor is a floor a handler is compared with, and the name of the
// ratio.
type namedFloor struct {
	metric string
	op     floorOp
}

// once runs o once, as iteration i, and returns how long it took and the
// DynamoDB requests it made. When timed, the operation itself, and only
// it, runs on the benchmark's timer.
func (f *floorBench) once(b *testing.B, o floorOp, i int, timed bool) (time.Duration, int) {
	if o.prepare != nil {
		o.prepare(b, i)
	}
	var ev events.APIGatewayV2HTTPRequest
	if o.event != nil {
		ev = o.event()
	}
	ctx, rec := invocation.With(b.Context())
	var answer events.APIGatewayV2HTTPResponse
	var err error
	if timed {
		b.StartTimer()
	}
	t0 := time.Now()
	if o.handler != nil {
		answer, err = o.handler.Handle(ctx, ev)
	} else {
		err = o.do(ctx)
	}
	d := time.Since(t0)
	if timed {
		b.StopTimer()
	}
	requests := rec.Requests()
	if o.handler != nil {
		if err != nil || answer.StatusCode != o.status {
			b.Fatalf("%d %s %v", answer.StatusCode, answer.Body, err)
		}
		requests = f.log.requests(b)
	} else if err != nil {
		b.Fatal(err)
	}
	if o.answer != nil {
		*o.answer = answer
	}
	if o.cleanup != nil {
		o.cleanup(b)
	}
	return d, requests
}

// measure runs o sequentially and reports its rate, latencies, requests
// and the table's size before and after. Each floor runs once beside each
// run of o, off the benchmark's timer and in alternating order, so that
// the ratio of o's rate to the floor's compares the two under the same
// load and the same garbage.
func (f *floorBench) measure(b *testing.B, o floorOp, floors []namedFloor) {
	before := f.items(b)
	runtime.GC() // no garbage of the previous operation is collected on this one's time
	var lat []time.Duration
	floorTime := make([]time.Duration, len(floors))
	requests := 0
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		timeFloors := func() {
			for j, fl := range floors {
				d, _ := f.once(b, fl.op, i, false)
				floorTime[j] += d
			}
		}
		if i%2 == 1 {
			timeFloors()
		}
		d, n := f.once(b, o, i, true)
		lat = append(lat, d)
		requests += n
		if i%2 == 0 {
			timeFloors()
		}
		b.StartTimer()
	}
	b.StopTimer()
	var total time.Duration
	for _, d := range lat {
		total += d
	}
	slices.Sort(lat)
	ms := func(q float64) float64 { return float64(lat[int(q*float64(len(lat)-1))]) / 1e6 }
	b.ReportMetric(float64(len(lat))/total.Seconds(), "ops/s")
	b.ReportMetric(ms(0.50), "p50-ms")
	b.ReportMetric(ms(0.99), "p99-ms")
	b.ReportMetric(float64(requests)/float64(len(lat)), "requests/op")
	for j, fl := range floors {
		b.ReportMetric(floorTime[j].Seconds()/total.Seconds(), fl.metric)
	}
	b.ReportMetric(float64(before), "items")
	b.ReportMetric(float64(f.items(b)), "items-end")
}

// lastLine keeps the last log line the API wrote.
type lastLine struct{ line []byte }

func (l *lastLine) Write(p []byte) (int, error) {
	l.line = append(l.line[:0], p...)
	return len(p), nil
}

// requests is the DynamoDB requests the last line logged.
func (l *lastLine) requests(b *testing.B) int {
	var line struct {
		DynamodbRequests *int
	}
	if err := json.Unmarshal(l.line, &line); err != nil || line.DynamodbRequests == nil {
		b.Fatalf("log line %q: %v", l.line, err)
	}
	return *line.DynamodbRequests
}
