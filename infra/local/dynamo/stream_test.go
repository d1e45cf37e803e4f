package dynamo_test

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	stypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
	"github.com/aws/smithy-go"

	"github.com/cloud-agent/control-plane/infra/local/dynamo"
	"github.com/cloud-agent/control-plane/infra/local/localdb"
)

// The tests of the tables' streams: the DynamoDB Streams API served by the
// embedded endpoint, called by the SDK's dynamodbstreams client, as the
// local stack's poller calls it.

// streamsClient is a DynamoDB Streams client of the endpoint c calls,
// with c's region and credentials.
func streamsClient(c *dynamodb.Client, optFns ...func(*dynamodbstreams.Options)) *dynamodbstreams.Client {
	o := c.Options()
	return dynamodbstreams.New(dynamodbstreams.Options{Region: o.Region, BaseEndpoint: o.BaseEndpoint, Credentials: o.Credentials}, optFns...)
}

// testClock is a DB's clock that a test moves.
type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *testClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// streamEnv is an embedded endpoint of a test's own, with its clients.
type streamEnv struct {
	db    *dynamo.DB
	clock *testClock
	c     *dynamodb.Client
	sc    *dynamodbstreams.Client
}

// newStreamEnv serves a DB on a clock the test moves (from now).
func newStreamEnv(t *testing.T) *streamEnv {
	t.Helper()
	db := dynamo.New()
	clock := &testClock{now: time.Now()}
	dynamo.SetClock(db, clock.Now)
	srv := httptest.NewServer(db)
	t.Cleanup(srv.Close)
	c := localdb.Client(srv.URL)
	return &streamEnv{db: db, clock: clock, c: c, sc: streamsClient(c)}
}

// put puts an item in a table, or fails the test.
func (e *streamEnv) put(t *testing.T, table string, it map[string]types.AttributeValue) {
	t.Helper()
	if _, err := e.c.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(table), Item: it}); err != nil {
		t.Fatal(err)
	}
}

// horizon is a TRIM_HORIZON iterator of the stream.
func (e *streamEnv) horizon(t *testing.T, arn string) string {
	t.Helper()
	return iteratorAt(t, e.sc, arn, stypes.ShardIteratorTypeTrimHorizon, "")
}

// expect reads the shard from an iterator: its records must be want
// ("EVENT SK" each, see events).
func (e *streamEnv) expect(t *testing.T, it string, want ...string) {
	t.Helper()
	recs, _ := readAll(t, e.sc, it, 1000)
	if got := events(recs); !slices.Equal(got, want) {
		t.Errorf("read %v, want %v", got, want)
	}
}

// streamTable creates a table of keys PK and SK (strings) named name, with a
// stream of view type view ("" for none), and returns its stream's ARN.
func streamTable(t *testing.T, c *dynamodb.Client, name string, view types.StreamViewType) string {
	t.Helper()
	out, err := c.CreateTable(context.Background(), streamTableInput(name, view))
	if err != nil {
		t.Fatal(err)
	}
	return aws.ToString(out.TableDescription.LatestStreamArn)
}

// streamTableInput is the CreateTable of a table of keys PK and SK
// (strings) named name, with a stream of view type view ("" for none).
func streamTableInput(name string, view types.StreamViewType) *dynamodb.CreateTableInput {
	in := &dynamodb.CreateTableInput{
		TableName: aws.String(name), BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("PK"), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String("SK"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema: []types.KeySchemaElement{{AttributeName: aws.String("PK"), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String("SK"), KeyType: types.KeyTypeRange}},
	}
	if view != "" {
		in.StreamSpecification = &types.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: view}
	}
	return in
}

// av is an item of string attributes, given as name, value pairs.
func av(pairs ...string) map[string]types.AttributeValue {
	m := map[string]types.AttributeValue{}
	for i := 0; i+1 < len(pairs); i += 2 {
		m[pairs[i]] = &types.AttributeValueMemberS{Value: pairs[i+1]}
	}
	return m
}

// shardOf is the stream's shard: its id and its first sequence number.
func shardOf(t *testing.T, sc *dynamodbstreams.Client, arn string) (id, start string) {
	t.Helper()
	out, err := sc.DescribeStream(context.Background(), &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(arn)})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(out.StreamDescription.Shards); n != 1 {
		t.Fatalf("%d shards", n)
	}
	s := out.StreamDescription.Shards[0]
	return aws.ToString(s.ShardId), aws.ToString(s.SequenceNumberRange.StartingSequenceNumber)
}

// iteratorAt is an iterator of the stream's shard of the type given, at
// the sequence number seq where the type takes one.
func iteratorAt(t *testing.T, sc *dynamodbstreams.Client, arn string, typ stypes.ShardIteratorType, seq string) string {
	t.Helper()
	shard, _ := shardOf(t, sc, arn)
	in := &dynamodbstreams.GetShardIteratorInput{StreamArn: aws.String(arn), ShardId: aws.String(shard), ShardIteratorType: typ}
	if seq != "" {
		in.SequenceNumber = aws.String(seq)
	}
	out, err := sc.GetShardIterator(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	return aws.ToString(out.ShardIterator)
}

// readAll reads the shard from an iterator, limit records a call, until
// a call answers none; it returns the records and the last iterator.
func readAll(t *testing.T, sc *dynamodbstreams.Client, it string, limit int32) ([]stypes.Record, string) {
	t.Helper()
	var all []stypes.Record
	for it != "" {
		out, err := sc.GetRecords(context.Background(), &dynamodbstreams.GetRecordsInput{ShardIterator: aws.String(it), Limit: aws.Int32(limit)})
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, out.Records...)
		it = aws.ToString(out.NextShardIterator)
		if len(out.Records) == 0 {
			break
		}
	}
	return all, it
}

// events are the records as "EVENT SK", in order.
func events(recs []stypes.Record) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		sk, _ := r.Dynamodb.Keys["SK"].(*stypes.AttributeValueMemberS)
		out[i] = string(r.EventName) + " " + sk.Value
	}
	return out
}

// apiCode is the error code of an SDK error, "" for none, or "HTTP n"
// for an answer that is no API error.
func apiCode(err error) string {
	var api smithy.APIError
	var resp *awshttp.ResponseError
	switch {
	case errors.As(err, &api):
		return api.ErrorCode()
	case errors.As(err, &resp):
		return fmt.Sprintf("HTTP %d", resp.HTTPStatusCode())
	case err != nil:
		return err.Error()
	}
	return ""
}

// TestStreamIteratorTypes: each iterator type starts where DynamoDB
// Streams' API Reference (GetShardIterator) says: TRIM_HORIZON at the
// oldest record, LATEST just after the newest, AT_SEQUENCE_NUMBER at the
// record of that number, AFTER_SEQUENCE_NUMBER at the one after it,
// AT_TIMESTAMP at the first record written at or after the time. Each
// then reads what was written after it was issued too.
func TestStreamIteratorTypes(t *testing.T) {
	for _, c := range []struct {
		typ  stypes.ShardIteratorType
		seq  int // the index of the record whose sequence number it takes, or -1
		want []string
	}{
		{stypes.ShardIteratorTypeTrimHorizon, -1, []string{"INSERT a", "INSERT b", "INSERT c", "INSERT d"}},
		{stypes.ShardIteratorTypeLatest, -1, []string{"INSERT d"}},
		{stypes.ShardIteratorTypeAtSequenceNumber, 1, []string{"INSERT b", "INSERT c", "INSERT d"}},
		{stypes.ShardIteratorTypeAfterSequenceNumber, 1, []string{"INSERT c", "INSERT d"}},
		{stypes.ShardIteratorTypeAtTimestamp, -1, []string{"INSERT c", "INSERT d"}},
	} {
		t.Run(string(c.typ), func(t *testing.T) {
			e := newStreamEnv(t)
			ctx := context.Background()
			arn := streamTable(t, e.c, "iterators", types.StreamViewTypeKeysOnly)
			var atC time.Time
			for _, sk := range []string{"a", "b", "c"} {
				if sk == "c" {
					e.clock.Add(5 * time.Second)
					atC = e.clock.Now()
				}
				e.put(t, "iterators", av("PK", "p", "SK", sk))
			}
			seq := ""
			if c.seq >= 0 {
				recs, _ := readAll(t, e.sc, e.horizon(t, arn), 1000)
				seq = aws.ToString(recs[c.seq].Dynamodb.SequenceNumber)
			}
			shard, _ := shardOf(t, e.sc, arn)
			in := &dynamodbstreams.GetShardIteratorInput{StreamArn: aws.String(arn), ShardId: aws.String(shard), ShardIteratorType: c.typ}
			if seq != "" {
				in.SequenceNumber = aws.String(seq)
			}
			if c.typ == stypes.ShardIteratorTypeAtTimestamp {
				in.Timestamp = aws.Time(atC.Add(-time.Second))
			}
			it, err := e.sc.GetShardIterator(ctx, in)
			if err != nil {
				t.Fatal(err)
			}
			e.put(t, "iterators", av("PK", "p", "SK", "d"))
			e.expect(t, aws.ToString(it.ShardIterator), c.want...)
		})
	}
}

// TestStreamOrder: a stream holds every change in the order of the writes,
// whatever wrote it (PutItem, UpdateItem, DeleteItem, BatchWriteItem, and
// each item of a TransactWriteItems in the transaction's order), with
// sequence numbers that are decimal and increase; pages of GetRecords
// (Limit) read them all, once each.
func TestStreamOrder(t *testing.T) {
	e := newStreamEnv(t)
	ctx := context.Background()
	const table = "ordered"
	arn := streamTable(t, e.c, table, types.StreamViewTypeNewAndOldImages)
	streamTable(t, e.c, "other", types.StreamViewTypeKeysOnly)
	// want are the records the writes make, as the items are (held).
	var want []string
	held := map[string]bool{}
	wrote := func(sk string, deleted bool) {
		switch {
		case deleted && held[sk]:
			want = append(want, "REMOVE "+sk)
		case !deleted && held[sk]:
			want = append(want, "MODIFY "+sk)
		case !deleted:
			want = append(want, "INSERT "+sk)
		}
		held[sk] = !deleted
	}
	must := func(_ any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	for i := range 150 {
		sk, n := fmt.Sprintf("k%02d", i%23), strconv.Itoa(i)
		switch i % 5 {
		case 0:
			must(e.c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: av("PK", "p", "SK", sk, "n", n)}))
			wrote(sk, false)
		case 1:
			must(e.c.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(table), Key: av("PK", "p", "SK", sk),
				UpdateExpression: aws.String("SET n = :n"), ExpressionAttributeValues: av(":n", n)}))
			wrote(sk, false)
		case 2:
			// The other table's stream takes its own records.
			must(e.c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("other"), Item: av("PK", "p", "SK", sk)}))
			must(e.c.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(table), Key: av("PK", "p", "SK", sk)}))
			wrote(sk, true)
		case 3:
			z, a := fmt.Sprintf("k%02d", (i+7)%23), fmt.Sprintf("k%02d", (i+3)%23)
			must(e.c.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
				{Put: &types.Put{TableName: aws.String(table), Item: av("PK", "p", "SK", z, "n", n)}},
				{Put: &types.Put{TableName: aws.String("other"), Item: av("PK", "p", "SK", z)}},
				{ConditionCheck: &types.ConditionCheck{TableName: aws.String(table), Key: av("PK", "p", "SK", sk),
					ConditionExpression: aws.String("attribute_exists(PK) OR attribute_not_exists(PK)")}},
				{Delete: &types.Delete{TableName: aws.String(table), Key: av("PK", "p", "SK", a)}},
			}}))
			wrote(z, false)
			wrote(a, true)
		case 4:
			z, a := fmt.Sprintf("k%02d", (i+11)%23), fmt.Sprintf("k%02d", (i+5)%23)
			must(e.c.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{table: {
				{PutRequest: &types.PutRequest{Item: av("PK", "p", "SK", z, "n", n)}},
				{DeleteRequest: &types.DeleteRequest{Key: av("PK", "p", "SK", a)}},
			}}}))
			wrote(z, false)
			wrote(a, true)
		}
	}
	recs, _ := readAll(t, e.sc, e.horizon(t, arn), 7)
	if got := events(recs); !slices.Equal(got, want) {
		t.Fatalf("the stream holds %d records:\n%v\nwant %d:\n%v", len(got), got, len(want), want)
	}
	prev, ids := new(big.Int), map[string]bool{}
	for i, r := range recs {
		n, ok := new(big.Int).SetString(aws.ToString(r.Dynamodb.SequenceNumber), 10)
		if !ok || n.Cmp(prev) <= 0 {
			t.Fatalf("record %d: sequence number %s after %s", i, aws.ToString(r.Dynamodb.SequenceNumber), prev)
		}
		prev = n
		if id := aws.ToString(r.EventID); ids[id] || id == "" {
			t.Fatalf("record %d: eventID %q again", i, id)
		}
		ids[aws.ToString(r.EventID)] = true
	}
}

// TestStreamImages: a record holds what its stream's view type says (API
// Reference, StreamSpecification): KEYS_ONLY the keys alone, NEW_IMAGE the
// item after the change (none for a REMOVE), OLD_IMAGE the item before it
// (none for an INSERT), NEW_AND_OLD_IMAGES both; and, whatever the type,
// DynamoDB Streams' members: eventVersion 1.1, eventSource aws:dynamodb,
// the region, the time to the second, the view type and a size.
func TestStreamImages(t *testing.T) {
	first, second := av("PK", "p", "SK", "s", "v", "1"), av("PK", "p", "SK", "s", "v", "2")
	keys := av("PK", "p", "SK", "s")
	type images struct {
		old, new map[string]types.AttributeValue
	}
	for _, c := range []struct {
		view types.StreamViewType
		want [3]images // INSERT, MODIFY, REMOVE
	}{
		{types.StreamViewTypeKeysOnly, [3]images{}},
		{types.StreamViewTypeNewImage, [3]images{{nil, first}, {nil, second}, {}}},
		{types.StreamViewTypeOldImage, [3]images{{}, {first, nil}, {second, nil}}},
		{types.StreamViewTypeNewAndOldImages, [3]images{{nil, first}, {first, second}, {second, nil}}},
	} {
		t.Run(string(c.view), func(t *testing.T) {
			e := newStreamEnv(t)
			ctx := context.Background()
			arn := streamTable(t, e.c, "images", c.view)
			before := e.clock.Now().Unix()
			for _, it := range []map[string]types.AttributeValue{first, second} {
				e.put(t, "images", it)
			}
			if _, err := e.c.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String("images"), Key: keys}); err != nil {
				t.Fatal(err)
			}
			recs, _ := readAll(t, e.sc, e.horizon(t, arn), 1000)
			if got := events(recs); !slices.Equal(got, []string{"INSERT s", "MODIFY s", "REMOVE s"}) {
				t.Fatalf("events %v", got)
			}
			for i, r := range recs {
				d := r.Dynamodb
				checkImage(t, r, "Keys", d.Keys, keys)
				checkImage(t, r, "OldImage", d.OldImage, c.want[i].old)
				checkImage(t, r, "NewImage", d.NewImage, c.want[i].new)
				at := aws.ToTime(d.ApproximateCreationDateTime).Unix()
				if aws.ToString(r.EventVersion) != "1.1" || aws.ToString(r.EventSource) != "aws:dynamodb" || aws.ToString(r.AwsRegion) != "us-east-1" ||
					d.StreamViewType != stypes.StreamViewType(c.view) || aws.ToInt64(d.SizeBytes) < 1 || at < before || at > before+1 || r.UserIdentity != nil {
					t.Errorf("%s: version %s, source %s, region %s, view %s, size %d, at %d (from %d), identity %v", r.EventName, aws.ToString(r.EventVersion),
						aws.ToString(r.EventSource), aws.ToString(r.AwsRegion), d.StreamViewType, aws.ToInt64(d.SizeBytes), at, before, r.UserIdentity)
				}
			}
		})
	}
}

// checkImage says how a record's image differs from want (nil: none).
func checkImage(t *testing.T, r stypes.Record, name string, got map[string]stypes.AttributeValue, want map[string]types.AttributeValue) {
	t.Helper()
	render := map[string]string{}
	for n, v := range got {
		s, _ := v.(*stypes.AttributeValueMemberS)
		render[n] = s.Value
	}
	wanted := map[string]string{}
	for n, v := range want {
		wanted[n] = v.(*types.AttributeValueMemberS).Value
	}
	if (got == nil) != (want == nil) || fmt.Sprint(render) != fmt.Sprint(wanted) {
		t.Errorf("%s: %s %v, want %v", r.EventName, name, render, wanted)
	}
}
