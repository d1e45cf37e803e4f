package streampoll

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	dtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"

	"github.com/cloud-agent/control-plane/infra/local/dynamotest"
)

// The tests' harness: an embedded endpoint of the test's own with a table
// whose stream is NEW_AND_OLD_IMAGES, read over HTTP by the SDK's
// clients, and a function written in the test that keeps what it gets.

func init() {
	pollEvery = 20 * time.Millisecond
	retryAfter = 50 * time.Millisecond
}

// table is the tests' table.
const table = "Sessions"

type env struct {
	c   *dynamodb.Client
	sc  *dynamodbstreams.Client
	arn string
	dir string
}

func newEnv(t *testing.T) *env {
	t.Helper()
	c, _ := dynamotest.Empty(t)
	s := func(n string) dtypes.AttributeDefinition {
		return dtypes.AttributeDefinition{AttributeName: aws.String(n), AttributeType: dtypes.ScalarAttributeTypeS}
	}
	out, err := c.CreateTable(context.Background(), &dynamodb.CreateTableInput{
		TableName:            aws.String(table),
		AttributeDefinitions: []dtypes.AttributeDefinition{s("PK"), s("SK")},
		KeySchema: []dtypes.KeySchemaElement{{AttributeName: aws.String("PK"), KeyType: dtypes.KeyTypeHash},
			{AttributeName: aws.String("SK"), KeyType: dtypes.KeyTypeRange}},
		BillingMode:         dtypes.BillingModePayPerRequest,
		StreamSpecification: &dtypes.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: dtypes.StreamViewTypeNewAndOldImages},
	})
	if err != nil {
		t.Fatal(err)
	}
	o := c.Options()
	sc := dynamodbstreams.New(dynamodbstreams.Options{Region: o.Region, BaseEndpoint: o.BaseEndpoint, Credentials: o.Credentials})
	return &env{c: c, sc: sc, arn: aws.ToString(out.TableDescription.LatestStreamArn), dir: t.TempDir()}
}

// put writes the item PK pk, SK sk, and returns nothing; it fails the
// test on an error.
func (e *env) put(t *testing.T, pk, sk string) {
	t.Helper()
	_, err := e.c.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(table), Item: map[string]dtypes.AttributeValue{
		"PK": &dtypes.AttributeValueMemberS{Value: pk}, "SK": &dtypes.AttributeValueMemberS{Value: sk},
	}})
	if err != nil {
		t.Fatal(err)
	}
}

// fn is the function under the poller: it decodes each event as
// aws-lambda-go does and answers with answer (nil: success).
type fn struct {
	mu     sync.Mutex
	calls  [][]events.DynamoDBEventRecord // every invocation's records
	taken  []string                       // the sequence numbers of the invocations answered without an error
	answer func(call int, recs []events.DynamoDBEventRecord) ([]byte, error)
}

func (f *fn) invoke(ctx context.Context, ev []byte) ([]byte, error) {
	var e events.DynamoDBEvent
	if err := json.Unmarshal(ev, &e); err != nil {
		return nil, fmt.Errorf("the event does not decode: %w", err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, e.Records)
	var out []byte
	var err error
	if f.answer != nil {
		out, err = f.answer(len(f.calls), e.Records)
	}
	if err == nil {
		for _, r := range e.Records {
			f.taken = append(f.taken, r.Change.SequenceNumber)
		}
	}
	return out, err
}

// seqs are the sequence numbers taken so far.
func (f *fn) seqs() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.taken)
}

func (f *fn) invocations() [][]events.DynamoDBEventRecord {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

// poller is a poller of e's stream invoking f, with e's files.
func (e *env) poller(f *fn, m Mapping) *Poller {
	return &Poller{Streams: e.sc, StreamARN: e.arn, Mapping: m, Invoke: f.invoke,
		FunctionARN: "arn:aws:lambda:us-east-1:000000000000:function:SessionEventsFunction",
		Checkpoint:  filepath.Join(e.dir, "stream-checkpoint.json"), Failures: filepath.Join(e.dir, "failures.jsonl"),
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
}

// start runs p until the returned stop, which returns Run's error.
func start(t *testing.T, p *Poller) (stop func() error) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	var once sync.Once
	var err error
	stop = func() error {
		once.Do(func() { cancel(); err = <-done })
		return err
	}
	t.Cleanup(func() { _ = stop() })
	return stop
}

// waitFor waits until cond holds, or fails the test after 10 seconds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// streamSeqs are the sequence numbers of the stream, in order, read
// straight from the Streams API.
func (e *env) streamSeqs(t *testing.T) []string {
	t.Helper()
	ctx := context.Background()
	d, err := e.sc.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(e.arn)})
	if err != nil {
		t.Fatal(err)
	}
	it, err := e.sc.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{StreamArn: aws.String(e.arn),
		ShardId: d.StreamDescription.Shards[0].ShardId, ShardIteratorType: "TRIM_HORIZON"})
	if err != nil {
		t.Fatal(err)
	}
	out, err := e.sc.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: it.ShardIterator})
	if err != nil {
		t.Fatal(err)
	}
	var seqs []string
	for _, r := range out.Records {
		seqs = append(seqs, aws.ToString(r.Dynamodb.SequenceNumber))
	}
	return seqs
}

// shard is the stream's shard id.
func (e *env) shard(t *testing.T) string {
	t.Helper()
	d, err := e.sc.DescribeStream(context.Background(), &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(e.arn)})
	if err != nil {
		t.Fatal(err)
	}
	return aws.ToString(d.StreamDescription.Shards[0].ShardId)
}

// failures are the failure file's records.
func (e *env) failures(t *testing.T) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(e.dir, "failures.jsonl"))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	for line := range strings.Lines(string(b)) {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("failure line %q: %v", line, err)
		}
		out = append(out, m)
	}
	return out
}

// checkpointOf reads e's checkpoint file.
func (e *env) checkpointOf(t *testing.T) checkpoint {
	t.Helper()
	c, err := readCheckpoint(filepath.Join(e.dir, "stream-checkpoint.json"))
	if err != nil {
		t.Fatal(err)
	}
	return c
}
