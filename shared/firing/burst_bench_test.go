package firing_test

import (
	"context"
	"encoding/json/v2"
	"fmt"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/cloud-agent/control-plane/infra/local/apitest"
	"github.com/cloud-agent/control-plane/infra/local/dynamotest"
	"github.com/cloud-agent/control-plane/infra/local/faultproxy"
	"github.com/cloud-agent/control-plane/infra/local/localdb"
	"github.com/cloud-agent/control-plane/shared/firing"
	"github.com/cloud-agent/control-plane/shared/store"
)

// latency stands in for the network between Lambda and DynamoDB: the fault
// proxy adds it to every request of a burst.
const latency = 5 * time.Millisecond

// burstTable is a table with size triggers, all due every minute, reached
// through a fault proxy.
type burstTable struct {
	h        *apitest.Harness
	endpoint *dynamotest.Process
	proxy    *faultproxy.Proxy
	size     int
	at       time.Time // the minute last fired
}

// newBurstTable is an empty table, on an embedded endpoint in a process of
// its own, reached through a fault proxy.
func newBurstTable(b *testing.B) *burstTable {
	ep := dynamotest.Separate(b)
	bk := ep.Backend
	direct, name := dynamotest.Table(b, bk)
	p := faultproxy.New(bk.URL)
	b.Cleanup(p.Close)
	api := localdb.Client(p.URL(), store.Counting, func(o *dynamodb.Options) {
		// As many idle connections as requests at once, as lambdaenv keeps.
		o.HTTPClient = awshttp.NewBuildableClient().WithTransportOptions(func(t *http.Transport) { t.MaxIdleConnsPerHost = 256 })
	})
	return &burstTable{h: apitest.NewOn(b, api, direct, name), endpoint: ep, proxy: p, at: created.Truncate(time.Minute)}
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
	for len(deletes) > 0 {
		n := min(25, len(deletes))
		if _, err := c.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{bt.h.Table: deletes[:n]}}); err != nil {
			b.Fatal(err)
		}
		deletes = deletes[n:]
	}
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

// endpointTime is what the endpoint alone spends on one transaction of
// the firing's shape (a session, its ledger row, a trigger's update and
// its run) at the table's size, straight to it, one at a time: the
// endpoint's own share of each fired trigger.
func (bt *burstTable) endpointTime(b *testing.B) time.Duration {
	const n = 20
	ctx := context.Background()
	c, name := bt.h.Client, aws.String(bt.h.Table)
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	var spent time.Duration
	defer bt.deleteFloor(b, n)
	for i := range n {
		pad := strings.Repeat("x", 600) // about the size of a session and of its row
		items := []types.TransactWriteItem{
			{Put: &types.Put{TableName: name, Item: map[string]types.AttributeValue{"PK": s(fmt.Sprintf("SESSION#floor%d", i)), "SK": s("METADATA"), "pad": s(pad)}, ConditionExpression: aws.String("attribute_not_exists(PK)")}},
			{Put: &types.Put{TableName: name, Item: map[string]types.AttributeValue{"PK": s(fmt.Sprintf("OPERATION#floor%d", i)), "SK": s("LEDGER"), "pad": s(pad)}, ConditionExpression: aws.String("attribute_not_exists(PK)")}},
			{Update: &types.Update{TableName: name, Key: map[string]types.AttributeValue{"PK": s("TRIGGERS#USER#u0"), "SK": s("COUNT")},
				UpdateExpression: aws.String("SET probe = :v"), ExpressionAttributeValues: map[string]types.AttributeValue{":v": s(pad)}}},
			{Put: &types.Put{TableName: name, Item: map[string]types.AttributeValue{"PK": s("TRIGGER#floor"), "SK": s(fmt.Sprintf("RUN#floor%d", i)), "pad": s(pad[:200])}}},
		}
		begun := time.Now()
		if _, err := c.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items}); err != nil {
			b.Fatal(err)
		}
		spent += time.Since(begun)
	}
	return spent / n
}

// deleteFloor deletes the items endpointTime wrote.
func (bt *burstTable) deleteFloor(b *testing.B, n int) {
	for i := range n {
		for _, key := range [][2]string{{fmt.Sprintf("SESSION#floor%d", i), "METADATA"}, {fmt.Sprintf("OPERATION#floor%d", i), "LEDGER"}, {"TRIGGER#floor", fmt.Sprintf("RUN#floor%d", i)}} {
			_, err := bt.h.Client.DeleteItem(context.Background(), &dynamodb.DeleteItemInput{TableName: aws.String(bt.h.Table), Key: map[string]types.AttributeValue{
				"PK": &types.AttributeValueMemberS{Value: key[0]}, "SK": &types.AttributeValueMemberS{Value: key[1]},
			}})
			if err != nil {
				b.Fatal(err)
			}
		}
	}
}

// fired is what one burst took: its time, the DynamoDB requests its log
// line counts, and the CPU time spent by this process (the firing, the
// SDK and the fault proxy) and by the endpoint's.
type fired struct {
	took, cpu, endpointCPU time.Duration
	requests               int
}

// fire fires the next minute's burst at the concurrency.
func (bt *burstTable) fire(b *testing.B, concurrency int) fired {
	bt.at = bt.at.Add(time.Minute)
	f := *bt.h.Firing
	f.Concurrency = concurrency
	f.Now = func() time.Time { return bt.at }
	bt.proxy.SetLatency(latency)
	defer bt.proxy.SetLatency(0)
	cpu, endpointCPU := bt.cpu(b)
	begun := time.Now()
	sum, err := f.Handle(context.Background(), events.EventBridgeEvent{Source: "aws.events", DetailType: "Scheduled Event", Time: bt.at})
	took := time.Since(begun)
	cpuAfter, endpointAfter := bt.cpu(b)
	if err != nil || sum != (firing.Summary{Due: bt.size, Fired: bt.size}) {
		b.Fatalf("%+v %v", sum, err)
	}
	var line struct {
		DynamodbRequests int `json:"dynamodbRequests"`
	}
	if err := json.Unmarshal([]byte(bt.h.LastLog()), &line); err != nil {
		b.Fatal(err)
	}
	return fired{took: took, cpu: cpuAfter - cpu, endpointCPU: endpointAfter - endpointCPU, requests: line.DynamodbRequests}
}

// cpu is the CPU time this process and the endpoint's have spent so far.
func (bt *burstTable) cpu(b *testing.B) (self, endpoint time.Duration) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	endpoint, err := bt.endpoint.CPU()
	if err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), endpoint
}

// BenchmarkBurst: size triggers due in one minute, fired by one
// invocation, on the embedded endpoint behind the fault proxy at 5 ms per
// request: 2,000 at concurrency 32 and 1, then 10,000 at 32, over one
// table grown from the first size to the next (the sessions, rows and
// runs of a burst are deleted before the next, untimed). Run it with
// -benchtime=1x: one iteration is one burst. Metrics: the burst's seconds
// and triggers per second; its floor, the latency alone (the burst's size
// over the concurrency, times 5 ms); the DynamoDB requests beyond one per
// fired trigger (the 16 shard queries); the table's items; and what the
// endpoint alone spends on one transaction of the firing's shape
// (endpoint-ms, before the burst and after it).
func BenchmarkBurst(b *testing.B) {
	bt := newBurstTable(b) // grown from one size to the next
	for _, run := range []struct{ size, concurrency int }{{2000, 32}, {2000, 1}, {10000, 32}} {
		bt.grow(b, run.size)
		size, c := run.size, run.concurrency
		b.Run(fmt.Sprintf("triggers=%d/concurrency=%d", size, c), func(b *testing.B) {
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
				sum.cpu += f.cpu
				sum.endpointCPU += f.endpointCPU
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
			b.ReportMetric(float64(sum.requests)/float64(b.N)-float64(size), "extra-requests")
			b.ReportMetric(sum.cpu.Seconds()/float64(b.N), "cpu-s")
			b.ReportMetric(sum.endpointCPU.Seconds()/float64(b.N), "endpoint-cpu-s")
			b.ReportMetric(float64(bt.items(b)), "items")
			b.ReportMetric(endpoint.Seconds()*1000, "endpoint-ms")
		})
	}
}
