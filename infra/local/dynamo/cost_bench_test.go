package dynamo_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/cloud-agent/control-plane/infra/local/dynamo"
	"github.com/cloud-agent/control-plane/infra/local/localdb"
)

// costTable is a table of the template's shape on an endpoint of its own,
// seeded with size items: sessions, and one in four a trigger in both
// indexes, about 600 bytes each.
func costTable(b *testing.B, size int) (*dynamodb.Client, string) {
	b.Helper()
	ep, err := dynamo.Start("127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = ep.Close(context.Background()) })
	c := localdb.Client(ep.URL)
	ctx := context.Background()
	const name = "cost"
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	_, err = c.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:   aws.String(name),
		BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String("PK"), AttributeType: types.ScalarAttributeTypeS}, {AttributeName: aws.String("SK"), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String("dueShard"), AttributeType: types.ScalarAttributeTypeS}, {AttributeName: aws.String("nextRunAt"), AttributeType: types.ScalarAttributeTypeS},
		},
		KeySchema: []types.KeySchemaElement{{AttributeName: aws.String("PK"), KeyType: types.KeyTypeHash}, {AttributeName: aws.String("SK"), KeyType: types.KeyTypeRange}},
		GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{{IndexName: aws.String("Due"),
			KeySchema:  []types.KeySchemaElement{{AttributeName: aws.String("dueShard"), KeyType: types.KeyTypeHash}, {AttributeName: aws.String("nextRunAt"), KeyType: types.KeyTypeRange}},
			Projection: &types.Projection{ProjectionType: types.ProjectionTypeAll}}},
	})
	if err != nil {
		b.Fatal(err)
	}
	pad := s(strings.Repeat("x", 560))
	var batch []types.WriteRequest
	for i := range size {
		it := map[string]types.AttributeValue{"PK": s(fmt.Sprintf("SESSION#seed%d", i)), "SK": s("METADATA"), "filler": pad}
		if i%4 == 0 {
			it["PK"], it["SK"] = s(fmt.Sprintf("TRIGGER#seed%d", i)), s("TRIGGER")
			it["dueShard"], it["nextRunAt"] = s(fmt.Sprintf("DUE#%d", i%16)), s(fmt.Sprintf("2026-12-01T09:%02d:00Z", i%60))
		}
		batch = append(batch, types.WriteRequest{PutRequest: &types.PutRequest{Item: it}})
		if len(batch) == 25 || i == size-1 {
			if _, err := c.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{name: batch}}); err != nil {
				b.Fatal(err)
			}
			batch = nil
		}
	}
	return c, name
}

// BenchmarkCost: what one request costs on a table of 200 items and on one
// of 100,000, over HTTP with the SDK (the client's own work included).
// Each iteration touches other items than the last, the same 50 keys of each kind at
// either size. The goal is at most 2× at 100,000 what it is at 200.
func BenchmarkCost(b *testing.B) {
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	key := func(pk, sk string) map[string]types.AttributeValue {
		return map[string]types.AttributeValue{"PK": s(pk), "SK": s(sk)}
	}
	pad := s(strings.Repeat("x", 560))
	ops := []struct {
		name string
		do   func(ctx context.Context, c *dynamodb.Client, table string, i int) error
	}{
		{"get", func(ctx context.Context, c *dynamodb.Client, table string, i int) error {
			_, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: &table, Key: key(fmt.Sprintf("SESSION#seed%d", i%50*4+1), "METADATA"), ConsistentRead: aws.Bool(true)})
			return err
		}},
		{"put", func(ctx context.Context, c *dynamodb.Client, table string, i int) error {
			it := key(fmt.Sprintf("SESSION#seed%d", i%50*4+1), "METADATA")
			it["filler"] = pad
			_, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: &table, Item: it})
			return err
		}},
		{"update", func(ctx context.Context, c *dynamodb.Client, table string, i int) error {
			_, err := c.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: &table, Key: key(fmt.Sprintf("TRIGGER#seed%d", i%50*4), "TRIGGER"),
				UpdateExpression:          aws.String("SET nextRunAt = :n, version = if_not_exists(version, :zero) + :one"),
				ConditionExpression:       aws.String("attribute_exists(PK)"),
				ExpressionAttributeValues: map[string]types.AttributeValue{":n": s(fmt.Sprintf("2026-12-01T10:%02d:00Z", i%60)), ":zero": &types.AttributeValueMemberN{Value: "0"}, ":one": &types.AttributeValueMemberN{Value: "1"}}})
			return err
		}},
		{"transact", func(ctx context.Context, c *dynamodb.Client, table string, i int) error {
			put := func(pk, sk string) types.TransactWriteItem {
				it := key(pk, sk)
				it["filler"] = pad
				return types.TransactWriteItem{Put: &types.Put{TableName: &table, Item: it, ConditionExpression: aws.String("attribute_not_exists(PK) OR filler = :pad"),
					ExpressionAttributeValues: map[string]types.AttributeValue{":pad": pad}}}
			}
			n := i % 50
			_, err := c.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
				put(fmt.Sprintf("SESSION#new%d", n), "METADATA"),
				put(fmt.Sprintf("OPERATION#new%d", n), "LEDGER"),
				{Update: &types.Update{TableName: &table, Key: key(fmt.Sprintf("TRIGGER#seed%d", n*4), "TRIGGER"), UpdateExpression: aws.String("SET nextRunAt = :n"),
					ExpressionAttributeValues: map[string]types.AttributeValue{":n": s(fmt.Sprintf("2026-12-01T11:%02d:00Z", i%60))}}},
				put(fmt.Sprintf("TRIGGER#seed%d", n*4), fmt.Sprintf("RUN#%d", n)),
			}})
			return err
		}},
	}
	for _, size := range []int{200, 100000} {
		c, table := costTable(b, size)
		for _, op := range ops {
			b.Run(fmt.Sprintf("%s/items=%d", op.name, size), func(b *testing.B) {
				ctx := context.Background()
				b.ReportAllocs()
				for i := range b.N {
					if err := op.do(ctx, c, table, i); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
