package dynamo_test

import (
	"context"
	"maps"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/cloud-agent/control-plane/infra/local/dynamo"
	"github.com/cloud-agent/control-plane/infra/local/localdb"
	"github.com/cloud-agent/control-plane/infra/template"
)

// TestSweep: the endpoint deletes, on its own, the items whose time to
// live has passed (a number of epoch seconds at or before now, and not more
// than five years past, as DynamoDB), from the table and its indexes;
// until it does, reads return them. Items without the attribute, with
// another type, or due later stay, and so does everything in a table
// without a time to live.
func TestSweep(t *testing.T) {
	ep, err := dynamo.Start("127.0.0.1:0", dynamo.SweepEvery(20*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer ep.Close(context.Background())
	c := localdb.Client(ep.URL)
	ctx := context.Background()
	for _, name := range []string{"with-ttl", "without-ttl"} {
		templateTable(t, c, name)
	}
	if _, err := c.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{TableName: aws.String("with-ttl"),
		TimeToLiveSpecification: &types.TimeToLiveSpecification{AttributeName: aws.String("expiresAt"), Enabled: aws.Bool(true)}}); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	n := func(at time.Time) types.AttributeValue {
		return &types.AttributeValueMemberN{Value: strconv.FormatInt(at.Unix(), 10)}
	}
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	items := map[string]types.AttributeValue{ // by PK: its expiresAt, nil for none
		"past":           n(now.Add(-time.Hour)),
		"now-ish":        n(now.Add(-time.Second)),
		"future":         n(now.Add(time.Hour)),
		"six-years-past": n(now.AddDate(-6, 0, 0)),
		"a-string":       s(strconv.FormatInt(now.Add(-time.Hour).Unix(), 10)),
		"none":           nil,
	}
	gone := map[string]bool{"past": true, "now-ish": true}
	for _, table := range []string{"with-ttl", "without-ttl"} {
		for pk, exp := range items {
			it := map[string]types.AttributeValue{"PK": s(pk), "SK": s("S"), "dueShard": s("DUE#1"), "nextRunAt": s(pk)}
			if exp != nil {
				it["expiresAt"] = exp
			}
			if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: it}); err != nil {
				t.Fatal(err)
			}
		}
	}
	// left are the items of the table, and of its index, by PK.
	left := func(table string) (items, indexed map[string]bool) {
		t.Helper()
		out, err := c.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true)})
		if err != nil {
			t.Fatal(err)
		}
		q, err := c.Query(ctx, &dynamodb.QueryInput{TableName: aws.String(table), IndexName: aws.String("DueTriggersAll"),
			KeyConditionExpression: aws.String("dueShard = :s"), ExpressionAttributeValues: map[string]types.AttributeValue{":s": s("DUE#1")}})
		if err != nil {
			t.Fatal(err)
		}
		pks := func(list []map[string]types.AttributeValue) map[string]bool {
			m := map[string]bool{}
			for _, it := range list {
				m[it["PK"].(*types.AttributeValueMemberS).Value] = true
			}
			return m
		}
		return pks(out.Items), pks(q.Items)
	}
	deadline := time.Now().Add(10 * time.Second)
	for got, _ := left("with-ttl"); len(got) != len(items)-len(gone) && time.Now().Before(deadline); got, _ = left("with-ttl") {
		time.Sleep(20 * time.Millisecond)
	}
	// Swept: what is left stays, and the index holds the same.
	got, indexed := left("with-ttl")
	if !maps.Equal(got, indexed) {
		t.Errorf("the table holds %v, its index %v", got, indexed)
	}
	for pk := range items {
		if got[pk] == gone[pk] {
			t.Errorf("with a time to live, %s: left %v", pk, got[pk])
		}
	}
	if got, indexed := left("without-ttl"); len(got) != len(items) || len(indexed) != len(items) {
		t.Errorf("without a time to live, %d of %d left", len(got), len(items))
	}
}

// tableOn serves db over HTTP for the test and creates the template's
// table in it.
func tableOn(t *testing.T, db *dynamo.DB) (*dynamodb.Client, string) {
	t.Helper()
	srv := httptest.NewServer(db)
	t.Cleanup(srv.Close)
	c := localdb.Client(srv.URL)
	templateTable(t, c, template.TableLogicalID)
	return c, template.TableLogicalID
}

// TestExpiredReadUntilSwept: an item whose time to live has passed is read,
// queried and scanned as any other until the sweep deletes it.
func TestExpiredReadUntilSwept(t *testing.T) {
	db := dynamo.New()
	c, table := tableOn(t, db)
	ctx := context.Background()
	if _, err := c.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{TableName: aws.String(table),
		TimeToLiveSpecification: &types.TimeToLiveSpecification{AttributeName: aws.String("expiresAt"), Enabled: aws.Bool(true)}}); err != nil {
		t.Fatal(err)
	}
	key := map[string]types.AttributeValue{"PK": &types.AttributeValueMemberS{Value: "p"}, "SK": &types.AttributeValueMemberS{Value: "s"}}
	it := map[string]types.AttributeValue{"PK": key["PK"], "SK": key["SK"], "expiresAt": &types.AttributeValueMemberN{Value: strconv.FormatInt(time.Now().Unix()-60, 10)}}
	if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: it}); err != nil {
		t.Fatal(err)
	}
	if out, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: key}); err != nil || out.Item == nil {
		t.Fatalf("before the sweep: %+v %v", out, err)
	}
	if n := db.Sweep(); n != 1 {
		t.Errorf("swept %d", n)
	}
	if out, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: key}); err != nil || out.Item != nil {
		t.Errorf("after the sweep: %+v %v", out, err)
	}
}

// TestSweepEveryRefusesNone: a sweep needs an interval.
func TestSweepEveryRefusesNone(t *testing.T) {
	if ep, err := dynamo.Start("127.0.0.1:0", dynamo.SweepEvery(0)); err == nil {
		_ = ep.Close(context.Background())
		t.Error("started with a sweep every 0")
	}
}
