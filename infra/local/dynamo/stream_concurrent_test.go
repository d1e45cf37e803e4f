package dynamo_test

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	stypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
)

// TestStreamConcurrentWrites: writers on many items at once, and a reader
// polling the stream as they write, as the local stack's poller does:
// every write is read once, and each item's in the order it was written
// (DynamoDB Streams: "each stream record appears exactly once", "in the
// same sequence as the actual modifications to the item").
func TestStreamConcurrentWrites(t *testing.T) {
	e := newStreamEnv(t)
	ctx := context.Background()
	const table, writers, writes = "concurrent", 8, 40
	arn := streamTable(t, e.c, table, types.StreamViewTypeNewImage)
	it := e.horizon(t, arn)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range writes {
				if _, err := e.c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table),
					Item: av("PK", "p", "SK", fmt.Sprintf("w%d", w), "n", strconv.Itoa(i))}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	var recs []stypes.Record
	for finished := false; !finished; {
		select {
		case <-done:
			finished = true
		default:
		}
		out, err := e.sc.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: aws.String(it), Limit: aws.Int32(25)})
		if err != nil {
			t.Fatal(err)
		}
		recs, it = append(recs, out.Records...), aws.ToString(out.NextShardIterator)
	}
	rest, _ := readAll(t, e.sc, it, 1000)
	recs = append(recs, rest...)
	next := map[string]int{}
	for _, r := range recs {
		sk := r.Dynamodb.Keys["SK"].(*stypes.AttributeValueMemberS).Value
		n, _ := strconv.Atoi(r.Dynamodb.NewImage["n"].(*stypes.AttributeValueMemberS).Value)
		if n != next[sk] {
			t.Fatalf("%s: write %d read after %d", sk, n, next[sk]-1)
		}
		next[sk]++
	}
	if len(recs) != writers*writes {
		t.Errorf("%d records of %d writes", len(recs), writers*writes)
	}
}
