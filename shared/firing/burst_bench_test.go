package firing_test

import (
	"context"
	"encoding/json/v2"
	"flag"
	"fmt"
	"maps"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"
	"github.com/google/uuid"

	"github.com/cloud-agent/control-plane/infra/local/apitest"
	"github.com/cloud-agent/control-plane/infra/local/dynamotest"
	"github.com/cloud-agent/control-plane/infra/local/faultproxy"
	"github.com/cloud-agent/control-plane/infra/local/localdb"
	"github.com/cloud-agent/control-plane/shared/app"
	"github.com/cloud-agent/control-plane/shared/firing"
	"github.com/cloud-agent/control-plane/shared/store"
)

// latency stands in for the network between Lambda and DynamoDB: the fault
// proxy adds it to every request of a burst.
const latency = 5 * time.Millisecond

// burstTable is a table with size triggers, all due every minute, reached
// through a fault proxy.
type burstTable struct {
	h   *apitest.Harness
	api *dynamodb.Client // the firing's, through the proxy
	// captureOnce keeps the firing's first transaction, and the trigger
	// it advances as it stood before (capture).
	captureOnce   sync.Once
	firingTx      *dynamodb.TransactWriteItemsInput
	firingTrigger map[string]types.AttributeValue
	endpoint      *dynamotest.Process
	proxy         *faultproxy.Process
	size          int
	at            time.Time // the minute last fired
}

// newBurstTable is an empty table, on an embedded endpoint in a process of
// its own, reached through a fault proxy in another: this process is then
// the firing, the SDK and the HTTP client alone.
func newBurstTable(b *testing.B) *burstTable {
	ep := dynamotest.Separate(b)
	bk := ep.Backend
	direct, name := dynamotest.Table(b, bk)
	p := faultproxy.Separate(b, bk.URL)
	bt := &burstTable{endpoint: ep, proxy: p, at: created.Truncate(time.Minute)}
	bt.api = localdb.Client(p.URL(), store.Counting, func(o *dynamodb.Options) {
		o.HTTPClient = app.HTTPClient() // the functions'
		o.APIOptions = append(o.APIOptions, bt.capture)
	})
	bt.h = apitest.NewOn(b, bt.api, direct, name)
	return bt
}

// capture keeps the first transaction the firing sends (a session, its
// ledger row, the trigger's advance, its run, the session's prompt and its
// live entry), and the trigger as it stood before it, for the floor.
func (bt *burstTable) capture(st *middleware.Stack) error {
	return st.Initialize.Add(middleware.InitializeMiddlewareFunc("CaptureFiring",
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			if tx, ok := in.Parameters.(*dynamodb.TransactWriteItemsInput); ok && len(tx.TransactItems) == 6 {
				bt.captureOnce.Do(func() {
					out, err := bt.h.Client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(bt.h.Table), Key: tx.TransactItems[2].Update.Key, ConsistentRead: aws.Bool(true)})
					if err == nil {
						bt.firingTx, bt.firingTrigger = tx, out.Item
					}
				})
			}
			return next.HandleInitialize(ctx, in)
		}), middleware.After)
}

// grow creates triggers of `* * * * *` through the API, 100 per owner (the
// limit), with no latency, until the table holds size of them, all due at
// the next minute.
func (bt *burstTable) grow(b *testing.B, size int) {
	bt.h.Triggers.Now = func() time.Time { return bt.at }
	for i := bt.size; i < size; i++ {
		bt.h.CreateTrigger(b, map[string]string{"sub": fmt.Sprintf("u%d", i/100)}, everyMinute)
	}
	bt.size = size
}

// inEnvironments makes the first n triggers name an environment of their
// owner's (one per owner, with two variables, a secret one among them, and
// a setup command, which each session keeps a snapshot of), and the rest
// name none, as a hand would (their counts of triggers are not kept).
func (bt *burstTable) inEnvironments(b *testing.B, n int) {
	ctx := context.Background()
	envs := map[string]string{} // by owner
	p := dynamodb.NewScanPaginator(bt.h.Client, &dynamodb.ScanInput{TableName: aws.String(bt.h.Table),
		FilterExpression: aws.String("SK = :t"), ExpressionAttributeValues: map[string]types.AttributeValue{":t": &types.AttributeValueMemberS{Value: "TRIGGER"}}})
	i := 0
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		if err != nil {
			b.Fatal(err)
		}
		for _, it := range out.Items {
			update := "REMOVE environmentId"
			values := map[string]types.AttributeValue(nil)
			if i < n {
				owner := it["ownerUserId"].(*types.AttributeValueMemberS).Value
				if envs[owner] == "" {
					envs[owner] = bt.h.CreateEnvironment(b, map[string]string{"sub": owner}, `{"name":"Node `+owner+` `+uuid.NewString()+`","setupCommands":["npm ci"],`+
						`"variables":{"NODE_ENV":{"value":"production"},"NPM_TOKEN":{"value":"npm_`+owner+`","secret":true}}}`)
				}
				update, values = "SET environmentId = :e", map[string]types.AttributeValue{":e": &types.AttributeValueMemberS{Value: envs[owner]}}
			}
			if _, err := bt.h.Client.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(bt.h.Table),
				Key: map[string]types.AttributeValue{"PK": it["PK"], "SK": it["SK"]}, UpdateExpression: aws.String(update), ExpressionAttributeValues: values}); err != nil {
				b.Fatal(err)
			}
			i++
		}
	}
}

// reset deletes the sessions, ledger rows and runs that firing wrote, so
// that every burst meets a table of the same size.
func (bt *burstTable) reset(b *testing.B) {
	ctx := context.Background()
	c, name := bt.h.Client, aws.String(bt.h.Table)
	var deletes []types.WriteRequest
	p := dynamodb.NewScanPaginator(c, &dynamodb.ScanInput{TableName: name, ProjectionExpression: aws.String("PK, SK")})
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		if err != nil {
			b.Fatal(err)
		}
		for _, it := range out.Items {
			pk, sk := it["PK"].(*types.AttributeValueMemberS).Value, it["SK"].(*types.AttributeValueMemberS).Value
			if strings.HasPrefix(pk, "SESSION#") || strings.HasPrefix(pk, "OPERATION#") || strings.HasPrefix(sk, "RUN#") {
				deletes = append(deletes, types.WriteRequest{DeleteRequest: &types.DeleteRequest{Key: it}})
			}
		}
	}
	bt.write(b, deletes)
}

// items is the table's size.
func (bt *burstTable) items(b *testing.B) int {
	n := 0
	p := dynamodb.NewScanPaginator(bt.h.Client, &dynamodb.ScanInput{TableName: aws.String(bt.h.Table), Select: types.SelectCount})
	for p.HasMorePages() {
		out, err := p.NextPage(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		n += int(out.Count)
	}
	return n
}

// floorItems is the i-th transaction of the firing's shape (a session,
// its ledger row, a trigger's update, its run and the session's prompt),
// of items about the size of the firing's, on keys of their own.
func (bt *burstTable) floorItems(i int) []types.TransactWriteItem {
	name := aws.String(bt.h.Table)
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	pad := strings.Repeat("x", 600) // about the size of a session and of its row
	return []types.TransactWriteItem{
		{Put: &types.Put{TableName: name, Item: map[string]types.AttributeValue{"PK": s(fmt.Sprintf("SESSION#floor%d", i)), "SK": s("METADATA"), "pad": s(pad)}, ConditionExpression: aws.String("attribute_not_exists(PK)")}},
		{Put: &types.Put{TableName: name, Item: map[string]types.AttributeValue{"PK": s(fmt.Sprintf("OPERATION#floor%d", i)), "SK": s("LEDGER"), "pad": s(pad)}, ConditionExpression: aws.String("attribute_not_exists(PK)")}},
		{Update: &types.Update{TableName: name, Key: map[string]types.AttributeValue{"PK": s(fmt.Sprintf("TRIGGER#floor%d", i)), "SK": s("TRIGGER")},
			UpdateExpression: aws.String("SET probe = :v"), ExpressionAttributeValues: map[string]types.AttributeValue{":v": s(pad)}}},
		{Put: &types.Put{TableName: name, Item: map[string]types.AttributeValue{"PK": s(fmt.Sprintf("TRIGGER#floor%d", i)), "SK": s("RUN#floor"), "pad": s(pad[:200])}}},
		{Put: &types.Put{TableName: name, Item: map[string]types.AttributeValue{"PK": s(fmt.Sprintf("SESSION#floor%d", i)), "SK": s("PROMPT"), "pad": s(pad[:100])}}},
	}
}

// endpointTime is what the endpoint alone spends on one transaction of
// the firing's shape (floorItems) at the table's size, straight to it,
// one at a time: the endpoint's own share of each fired trigger.
func (bt *burstTable) endpointTime(b *testing.B) time.Duration {
	const n = 20
	var spent time.Duration
	defer bt.deleteFloor(b, n)
	for i := range n {
		begun := time.Now()
		if _, err := bt.h.Client.TransactWriteItems(context.Background(), &dynamodb.TransactWriteItemsInput{TransactItems: bt.floorItems(i)}); err != nil {
			b.Fatal(err)
		}
		spent += time.Since(begun)
	}
	return spent / n
}

// deleteFloor deletes the items of the first n floorItems.
func (bt *burstTable) deleteFloor(b *testing.B, n int) {
	var deletes []types.WriteRequest
	for i := range n {
		for _, it := range bt.floorItems(i) {
			var key map[string]types.AttributeValue
			if it.Put != nil {
				key = map[string]types.AttributeValue{"PK": it.Put.Item["PK"], "SK": it.Put.Item["SK"]}
			} else {
				key = it.Update.Key
			}
			deletes = append(deletes, types.WriteRequest{DeleteRequest: &types.DeleteRequest{Key: key}})
		}
	}
	bt.write(b, deletes)
}

// write sends the write requests, 25 at a time.
func (bt *burstTable) write(b *testing.B, writes []types.WriteRequest) {
	for len(writes) > 0 {
		n := min(25, len(writes))
		if _, err := bt.h.Client.BatchWriteItem(context.Background(), &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{bt.h.Table: writes[:n]}}); err != nil {
			b.Fatal(err)
		}
		writes = writes[n:]
	}
}

// spent is what this process spent over some work: CPU time, and the
// heap's allocations and bytes.
type spent struct {
	cpu           time.Duration
	allocs, bytes uint64
}

// measure is what this process has spent so far.
func measure(b *testing.B) spent {
	b.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return spent{cpu: time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), allocs: ms.Mallocs, bytes: ms.TotalAlloc}
}

func (s spent) since(before spent) spent {
	return spent{cpu: s.cpu - before.cpu, allocs: s.allocs - before.allocs, bytes: s.bytes - before.bytes}
}

func (s spent) add(o spent) spent {
	return spent{cpu: s.cpu + o.cpu, allocs: s.allocs + o.allocs, bytes: s.bytes + o.bytes}
}

// report reports what n triggers cost, each: CPU (cpu-µs/trigger),
// allocations (allocs/trigger) and bytes (B/trigger).
func (s spent) report(b *testing.B, n int) {
	b.ReportMetric(float64(s.cpu.Microseconds())/float64(n), "cpu-µs/trigger")
	b.ReportMetric(float64(s.allocs)/float64(n), "allocs/trigger")
	b.ReportMetric(float64(s.bytes)/float64(n), "B/trigger")
}

// burstProfile names the files of a CPU profile of each burst's firing
// alone (not the table's growth), suffixed with the burst's size and
// concurrency, and of the floor's calls (suffixed floor-CONCURRENCY):
// `go test -bench BenchmarkBurst -args -burstprofile=FILE`.
var burstProfile = flag.String("burstprofile", "", "write a CPU profile of each burst's firing to `file`.SIZE-CONCURRENCY, and of the floor's calls to `file`.floor-CONCURRENCY")

// fired is what one burst took: its time, the DynamoDB requests its log
// line counts, what this process (the firing, the SDK and the HTTP
// client) spent, and the CPU time the endpoint's and the proxy's
// processes spent (on the same cores).
type fired struct {
	took, endpointCPU, proxyCPU time.Duration
	self                        spent
	requests                    int
}

// fire fires the next minute's burst at the concurrency.
func (bt *burstTable) fire(b *testing.B, concurrency int) fired {
	bt.at = bt.at.Add(time.Minute)
	f := *bt.h.Firing
	f.Concurrency = concurrency
	f.Now = func() time.Time { return bt.at }
	bt.setLatency(b, latency)
	defer bt.setLatency(b, 0)
	if *burstProfile != "" {
		stop := startProfile(b, fmt.Sprintf("%s.%d-%d", *burstProfile, bt.size, concurrency))
		defer stop()
	}
	runtime.GC() // the untimed work's garbage is not the burst's
	self, endpointCPU, proxyCPU := measure(b), bt.endpointCPU(b), bt.proxyCPU(b)
	begun := time.Now()
	sum, err := f.Handle(context.Background(), events.EventBridgeEvent{Source: "aws.events", DetailType: "Scheduled Event", Time: bt.at})
	took := time.Since(begun)
	selfAfter, endpointAfter, proxyAfter := measure(b), bt.endpointCPU(b), bt.proxyCPU(b)
	if err != nil || sum != (firing.Summary{Due: bt.size, Fired: bt.size}) {
		b.Fatalf("%+v %v", sum, err)
	}
	var line struct {
		DynamodbRequests int `json:"dynamodbRequests"`
	}
	if err := json.Unmarshal([]byte(bt.h.LastLog()), &line); err != nil {
		b.Fatal(err)
	}
	return fired{took: took, self: selfAfter.since(self), endpointCPU: endpointAfter - endpointCPU, proxyCPU: proxyAfter - proxyCPU, requests: line.DynamodbRequests}
}

// startProfile starts a CPU profile to the file; stop ends it.
func startProfile(b *testing.B, file string) (stop func()) {
	out, err := os.Create(file)
	if err != nil {
		b.Fatal(err)
	}
	if err := pprof.StartCPUProfile(out); err != nil {
		b.Fatal(err)
	}
	return func() {
		pprof.StopCPUProfile()
		if err := out.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

func (bt *burstTable) setLatency(b *testing.B, d time.Duration) {
	if err := bt.proxy.SetLatency(d); err != nil {
		b.Fatal(err)
	}
}

// proxyCPU is the CPU time the proxy's process has spent so far.
func (bt *burstTable) proxyCPU(b *testing.B) time.Duration {
	cpu, err := bt.proxy.CPU()
	if err != nil {
		b.Fatal(err)
	}
	return cpu
}

// endpointCPU is the CPU time the endpoint's process has spent so far.
func (bt *burstTable) endpointCPU(b *testing.B) time.Duration {
	cpu, err := bt.endpoint.CPU()
	if err != nil {
		b.Fatal(err)
	}
	return cpu
}

// BenchmarkBurst: size triggers due in one minute, fired by one
// invocation (its collector at the functions' app.GCPercent), on
// the embedded endpoint behind the fault proxy at 5 ms per request, each
// in a process of its own: 2,000 at concurrency 32 and 1,
// then 10,000 at 32, over one table grown from the first size to the next
// (the sessions, rows and runs of a burst are deleted before the next,
// untimed); then the SDK's floor. Run it with -benchtime=1x: one
// iteration is one burst. Metrics: the burst's seconds and triggers per
// second; its floor, the latency alone (the burst's size over the
// concurrency, times 5 ms); the DynamoDB requests the burst made (the 16
// shard queries, and the transactions, each carrying the new sessions of
// several slots: store.Table.Grouped); the table's items; what the endpoint
// alone spends on one transaction of the firing's shape (endpoint-ms,
// before the burst and after it); the CPU this process (cpu-s) and the
// endpoint's and the proxy's processes (endpoint-cpu-s, proxy-cpu-s) spend
// on the burst; and what this process
// spends per fired trigger (cpu-µs/trigger, allocs/trigger, B/trigger).
// The floor (transact-floor) is the bare TransactWriteItems call of one
// trigger's slot sent alone (as the firing sends a lone slot), its first
// one captured and sent again on keys of its own (floorTx), 2,000 times
// at concurrency 32, through the same client and proxy: what this
// process spends per call is what the SDK and the HTTP client cost a
// slot that has a transaction of its own.
func BenchmarkBurst(b *testing.B) {
	percent := debug.SetGCPercent(app.GCPercent) // the collector as the functions run it
	b.Cleanup(func() { debug.SetGCPercent(percent) })
	bt := newBurstTable(b) // grown from one size to the next
	for _, run := range []struct {
		size, concurrency int
		environments      bool
	}{{2000, 32, false}, {2000, 1, false}, {2000, 32, true}, {10000, 32, false}} {
		size, c := run.size, run.concurrency
		name := fmt.Sprintf("triggers=%d/concurrency=%d", size, c)
		if run.environments {
			name += "/environments"
		}
		b.Run(name, func(b *testing.B) {
			bt.grow(b, size)
			if run.environments {
				bt.inEnvironments(b, size)
				defer bt.inEnvironments(b, 0)
			}
			var sum fired
			var endpoint time.Duration
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				b.StopTimer()
				bt.reset(b)
				endpoint += bt.endpointTime(b) / 2
				b.StartTimer()
				f := bt.fire(b, c)
				sum.took += f.took
				sum.self = sum.self.add(f.self)
				sum.endpointCPU += f.endpointCPU
				sum.proxyCPU += f.proxyCPU
				sum.requests += f.requests
				b.StopTimer()
				endpoint += bt.endpointTime(b) / 2
			}
			bt.reset(b)
			endpoint /= time.Duration(b.N)
			burst := sum.took.Seconds() / float64(b.N)
			b.ReportMetric(burst, "s/burst")
			b.ReportMetric(float64(size)/burst, "triggers/s")
			b.ReportMetric(float64((size+c-1)/c)*latency.Seconds(), "floor-s")
			b.ReportMetric(float64(sum.requests)/float64(b.N), "requests")
			b.ReportMetric(sum.self.cpu.Seconds()/float64(b.N), "cpu-s")
			b.ReportMetric(sum.endpointCPU.Seconds()/float64(b.N), "endpoint-cpu-s")
			b.ReportMetric(sum.proxyCPU.Seconds()/float64(b.N), "proxy-cpu-s")
			b.ReportMetric(float64(bt.items(b)), "items")
			b.ReportMetric(endpoint.Seconds()*1000, "endpoint-ms")
			sum.self.report(b, size*b.N)
		})
	}
	b.Run("transact-floor/concurrency=32", func(b *testing.B) {
		const n, c = 2000, 32
		var sum spent
		b.ReportAllocs()
		for range b.N {
			sum = sum.add(bt.transactFloor(b, n, c))
		}
		sum.report(b, n*b.N)
	})
}

// floorTx is the i-th copy of the firing's first transaction (capture),
// on keys of its own: the session's, its row's, and a copy of the
// trigger's, which floorTrigger puts.
func (bt *burstTable) floorTx(i int) *dynamodb.TransactWriteItemsInput {
	items := make([]types.TransactWriteItem, len(bt.firingTx.TransactItems))
	for j, it := range bt.firingTx.TransactItems {
		if it.Put != nil {
			put := *it.Put
			put.Item = maps.Clone(put.Item)
			put.Item["PK"] = rekey(put.Item["PK"], i)
			it.Put = &put
		} else {
			update := *it.Update
			update.Key = maps.Clone(update.Key)
			update.Key["PK"] = rekey(update.Key["PK"], i)
			it.Update = &update
		}
		items[j] = it
	}
	return &dynamodb.TransactWriteItemsInput{TransactItems: items}
}

// rekey is the i-th floor copy of a partition key.
func rekey(pk types.AttributeValue, i int) types.AttributeValue {
	return &types.AttributeValueMemberS{Value: fmt.Sprintf("%s-floor%d", pk.(*types.AttributeValueMemberS).Value, i)}
}

// floorKeys are the keys of the items that the floor's i-th transaction
// writes (the trigger's copy included).
func (bt *burstTable) floorKeys(i int) []map[string]types.AttributeValue {
	var keys []map[string]types.AttributeValue
	for _, it := range bt.floorTx(i).TransactItems {
		if it.Put != nil {
			keys = append(keys, map[string]types.AttributeValue{"PK": it.Put.Item["PK"], "SK": it.Put.Item["SK"]})
		} else {
			keys = append(keys, it.Update.Key)
		}
	}
	return keys
}

// transactFloor sends n copies of the firing's first transaction
// (floorTx), c at a time, through the firing's client and the proxy at
// its latency, each on a copy of the trigger as it stood before the
// firing, and returns what this process spent on them. The copies are
// put before and every item deleted after, untimed.
func (bt *burstTable) transactFloor(b *testing.B, n, c int) spent {
	b.StopTimer()
	if bt.firingTx == nil { // no burst has run yet
		bt.grow(b, n)
		bt.fire(b, c)
	}
	bt.reset(b)
	inputs := make([]*dynamodb.TransactWriteItemsInput, n)
	var puts, deletes []types.WriteRequest
	for i := range inputs {
		inputs[i] = bt.floorTx(i)
		copied := maps.Clone(bt.firingTrigger)
		copied["PK"] = inputs[i].TransactItems[2].Update.Key["PK"]
		puts = append(puts, types.WriteRequest{PutRequest: &types.PutRequest{Item: copied}})
		for _, key := range bt.floorKeys(i) {
			deletes = append(deletes, types.WriteRequest{DeleteRequest: &types.DeleteRequest{Key: key}})
		}
	}
	bt.write(b, puts)
	bt.setLatency(b, latency)
	if *burstProfile != "" {
		defer startProfile(b, fmt.Sprintf("%s.floor-%d", *burstProfile, c))()
	}
	b.StartTimer()
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, c)
	runtime.GC() // the untimed work's garbage is not the floor's
	before := measure(b)
	for range c {
		wg.Go(func() {
			for i := next.Add(1) - 1; i < int64(n); i = next.Add(1) - 1 {
				if _, err := bt.api.TransactWriteItems(context.Background(), inputs[i]); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	took := measure(b).since(before)
	b.StopTimer()
	bt.setLatency(b, 0)
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	bt.write(b, deletes)
	b.StartTimer()
	return took
}
