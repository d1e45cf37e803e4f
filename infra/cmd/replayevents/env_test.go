package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	dtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	stypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
	kmssdk "github.com/aws/aws-sdk-go-v2/service/kms"

	"github.com/cloud-agent/control-plane/infra/local/dynamotest"
	"github.com/cloud-agent/control-plane/infra/local/eventbus"
	"github.com/cloud-agent/control-plane/infra/local/kms"
	"github.com/cloud-agent/control-plane/infra/local/streampoll"
	"github.com/cloud-agent/control-plane/shared/allocation"
	"github.com/cloud-agent/control-plane/shared/outcome"
	"github.com/cloud-agent/control-plane/shared/session"
	"github.com/cloud-agent/control-plane/shared/store"
)

// The tests' harness: an embedded DynamoDB endpoint with the table and
// its stream (NEW_AND_OLD_IMAGES), the KMS stand-in and the event bus
// stand-in, all over HTTP with the SDK's clients; the command run as
// make replay-events runs it locally.

func init() { emptyPause = time.Millisecond }

type env struct {
	c      *dynamodb.Client
	url    string // the DynamoDB endpoint's
	arn    string // the stream's
	kms    *kms.TestServer
	bus    *eventbus.Bus
	events string // the bus stand-in's URL
	dir    string
}

func newEnv(t *testing.T) *env {
	t.Helper()
	c, url := dynamotest.Empty(t)
	s := func(n string) dtypes.AttributeDefinition {
		return dtypes.AttributeDefinition{AttributeName: aws.String(n), AttributeType: dtypes.ScalarAttributeTypeS}
	}
	out, err := c.CreateTable(context.Background(), &dynamodb.CreateTableInput{
		TableName:            aws.String(localTable),
		AttributeDefinitions: []dtypes.AttributeDefinition{s("PK"), s("SK")},
		KeySchema: []dtypes.KeySchemaElement{{AttributeName: aws.String("PK"), KeyType: dtypes.KeyTypeHash},
			{AttributeName: aws.String("SK"), KeyType: dtypes.KeyTypeRange}},
		BillingMode:         dtypes.BillingModePayPerRequest,
		StreamSpecification: &dtypes.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: dtypes.StreamViewTypeNewAndOldImages},
	})
	if err != nil {
		t.Fatal(err)
	}
	b := eventbus.New(localBus, io.Discard)
	srv := httptest.NewServer(b)
	t.Cleanup(srv.Close)
	return &env{c: c, url: url, arn: aws.ToString(out.TableDescription.LatestStreamArn),
		kms: kms.NewTestServer(t, nil), bus: b, events: srv.URL, dir: t.TempDir()}
}

var created = time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)

func newSession(id string) *session.Record {
	a, _ := allocation.ByName(allocation.ContainersStandard4)
	return &session.Record{SessionID: id, SchemaVersion: 2, UserID: "u1", CreatedAt: created, CreatedOnPlatform: "cli",
		Sandbox: session.Sandbox{ID: allocation.SandboxID(id), Kind: allocation.KindIsolated, Provider: a.Provider(), ProviderStored: true, Allocation: a}}
}

// write puts an item into the table.
func (e *env) write(t *testing.T, item store.Item) {
	t.Helper()
	if _, err := e.c.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(localTable), Item: item}); err != nil {
		t.Fatal(err)
	}
}

// sessions writes what the stream then holds, in order: a new session
// a (announced), a's prompt (skipped), a new session b (announced), b's
// claim (skipped), b's outcome (announced).
func (e *env) sessions(t *testing.T) {
	a, b := newSession("workspace_a"), newSession("workspace_b")
	e.write(t, store.EncodeSession(a))
	prompt := store.SessionKey("workspace_a")
	prompt["SK"] = store.S("PROMPT")
	e.write(t, prompt)
	e.write(t, store.EncodeSession(b))
	b.Claim = &outcome.Claim{Runner: "r1", ClaimedAt: created, HeartbeatAt: created}
	e.write(t, store.EncodeSession(b))
	b.Outcome = &outcome.Outcome{Status: outcome.Completed, EndedAt: created, ReportedAt: created, Revision: 1}
	e.write(t, store.EncodeSession(b))
}

// streams is a client of the stream.
func (e *env) streams() *dynamodbstreams.Client {
	o := e.c.Options()
	return dynamodbstreams.New(dynamodbstreams.Options{Region: o.Region, BaseEndpoint: o.BaseEndpoint, Credentials: o.Credentials})
}

// giveUp runs the local mapping's poller over the stream with a function
// that always fails and no retry, until it has written the failure file:
// the file the command reads by default.
func (e *env) giveUp(t *testing.T) string {
	t.Helper()
	failures := filepath.Join(e.dir, "session-events-failures.jsonl")
	p := &streampoll.Poller{Streams: e.streams(), StreamARN: e.arn, FunctionARN: "arn:aws:lambda:us-east-1:000000000000:function:SessionEventsFunction",
		Mapping:    streampoll.Mapping{BatchSize: 100, Window: 100 * time.Millisecond, ReportBatchItemFailures: true},
		Invoke:     func(context.Context, []byte) ([]byte, error) { return nil, errors.New("the function is down") },
		Checkpoint: filepath.Join(e.dir, "stream-checkpoint.json"), Failures: failures, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	defer func() { cancel(); <-done }()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if b, _ := os.ReadFile(failures); bytes.HasSuffix(b, []byte("\n")) {
			return failures
		}
		if time.Now().After(deadline) {
			t.Fatal("the poller wrote no failure")
		}
	}
}

// options are the command's local options on e, as make run's would be.
func (e *env) options() options {
	return options{Failures: filepath.Join(e.dir, "session-events-failures.jsonl"), Table: localTable, Endpoint: e.url,
		Alias: "live", KMSEndpoint: e.kms.URL, EventsEndpoint: e.events, TokenKey: localTokenKey, Bus: localBus, APIURL: localAPI}
}

// run1 runs the command with o: its stdout, its stderr and its error.
func run1(t *testing.T, o options) (string, string, error) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), o, &stdout, &stderr)
	return stdout.String(), stderr.String(), err
}

// kmsClient is a client of e's KMS stand-in.
func kmsClient(e *env) *kmssdk.Client { return kms.Client(e.kms.URL) }

// shard is the stream's one shard.
func (e *env) shard(t *testing.T) string {
	t.Helper()
	d, err := e.streams().DescribeStream(context.Background(), &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(e.arn)})
	if err != nil || len(d.StreamDescription.Shards) != 1 {
		t.Fatal(d, err)
	}
	return aws.ToString(d.StreamDescription.Shards[0].ShardId)
}

// streamSeqs are the stream's sequence numbers, in order, read from its
// trim horizon.
func (e *env) streamSeqs(t *testing.T) []string {
	t.Helper()
	ctx, sc := context.Background(), e.streams()
	it, err := sc.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{StreamArn: aws.String(e.arn), ShardId: aws.String(e.shard(t)),
		ShardIteratorType: stypes.ShardIteratorTypeTrimHorizon})
	if err != nil {
		t.Fatal(err)
	}
	out, err := sc.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: it.ShardIterator})
	if err != nil {
		t.Fatal(err)
	}
	var seqs []string
	for _, r := range out.Records {
		seqs = append(seqs, aws.ToString(r.Dynamodb.SequenceNumber))
	}
	if len(seqs) != 5 {
		t.Fatalf("the stream holds %v", seqs)
	}
	return seqs
}
