package template_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/cloud-agent/control-plane/infra/local/dynamotest"
	"github.com/cloud-agent/control-plane/infra/local/localdb"
	"github.com/cloud-agent/control-plane/infra/template"
	"github.com/cloud-agent/control-plane/shared/allocation"
	"github.com/cloud-agent/control-plane/shared/store"
)

// templateTable is the CreateTable and UpdateTimeToLive requests of the
// template's table.
func templateTable(t *testing.T) (*dynamodb.CreateTableInput, *dynamodb.UpdateTimeToLiveInput) {
	t.Helper()
	tpl, err := template.Load("../../template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	in, err := template.CreateTableInput(tpl, template.TableLogicalID, template.TableLogicalID)
	if err != nil {
		t.Fatal(err)
	}
	ttl, err := template.TimeToLiveInput(tpl, template.TableLogicalID, template.TableLogicalID)
	if err != nil {
		t.Fatal(err)
	}
	return in, ttl
}

// startTable serves the embedded endpoint with the template's table,
// without its time to live, and returns a client of it and its URL.
func startTable(t *testing.T) (*dynamodb.Client, string) {
	t.Helper()
	c, url := dynamotest.Empty(t)
	in, _ := templateTable(t)
	for i, want := range []bool{true, false} {
		created, err := template.EnsureTable(context.Background(), c, in, nil)
		if err != nil || created != want {
			t.Fatalf("EnsureTable #%d: created=%v err=%v", i+1, created, err)
		}
	}
	return c, url
}

// TestOlderTableRefused: a table that exists without the template's
// indexes (an older local one) is refused with a clear error, not used.
func TestOlderTableRefused(t *testing.T) {
	c, _ := dynamotest.Empty(t)
	in, _ := templateTable(t)
	older := *in
	older.GlobalSecondaryIndexes = older.GlobalSecondaryIndexes[:1]
	// Only the attributes its keys use are defined, as DynamoDB requires.
	used := map[string]bool{}
	for _, k := range append(slices.Clone(older.KeySchema), older.GlobalSecondaryIndexes[0].KeySchema...) {
		used[aws.ToString(k.AttributeName)] = true
	}
	older.AttributeDefinitions = slices.DeleteFunc(slices.Clone(older.AttributeDefinitions), func(a types.AttributeDefinition) bool {
		return !used[aws.ToString(a.AttributeName)]
	})
	if _, err := c.CreateTable(context.Background(), &older); err != nil {
		t.Fatal(err)
	}
	if _, err := template.EnsureTable(context.Background(), c, in, nil); err == nil || !strings.Contains(err.Error(), "without the index") {
		t.Errorf("%v", err)
	}
}

// TestTimeToLiveOnAnotherAttributeRefused: a table whose time to live is on
// another attribute than the template's is refused, not changed: its
// items would never expire by expiresAt.
func TestTimeToLiveOnAnotherAttributeRefused(t *testing.T) {
	c, _ := dynamotest.Empty(t)
	in, ttl := templateTable(t)
	if _, err := template.EnsureTable(context.Background(), c, in, nil); err != nil {
		t.Fatal(err)
	}
	other := *ttl
	other.TimeToLiveSpecification = &types.TimeToLiveSpecification{AttributeName: aws.String("ttl"), Enabled: aws.Bool(true)}
	if _, err := c.UpdateTimeToLive(context.Background(), &other); err != nil {
		t.Fatal(err)
	}
	if _, err := template.EnsureTable(context.Background(), c, in, ttl); err == nil || !strings.Contains(err.Error(), "time to live on ttl, not on expiresAt") {
		t.Errorf("%v", err)
	}
}

// TestTableFromTemplate: the table is created from the template's
// definition, with its string keys PK and SK.
func TestTableFromTemplate(t *testing.T) {
	c, _ := startTable(t)
	out, err := c.DescribeTable(context.Background(), &dynamodb.DescribeTableInput{TableName: aws.String(template.TableLogicalID)})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, k := range out.Table.KeySchema {
		keys = append(keys, *k.AttributeName+":"+string(k.KeyType))
	}
	if len(keys) != 2 || keys[0] != "PK:HASH" || keys[1] != "SK:RANGE" {
		t.Errorf("keys %v", keys)
	}
}

// putAndGet writes every fixture of a folder into the table as the CLI would
// put it, reads each back strongly consistent, and hands both to check.
func putAndGet(t *testing.T, c *dynamodb.Client, dir string, check func(name string, put, got map[string]types.AttributeValue)) {
	t.Helper()
	ctx := context.Background()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		item, err := localdb.UnmarshalItem(data)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(template.TableLogicalID), Item: item}); err != nil {
			t.Fatalf("%s: %v", e.Name(), err)
		}
		got, err := c.GetItem(ctx, &dynamodb.GetItemInput{
			TableName: aws.String(template.TableLogicalID), Key: map[string]types.AttributeValue{"PK": item["PK"], "SK": item["SK"]}, ConsistentRead: aws.Bool(true),
		})
		if err != nil {
			t.Fatal(err)
		}
		check(e.Name(), item, got.Item)
	}
}

// TestFixturesRoundTripTheEndpoint: every stored session and ledger row
// fixture, put into the table, reads back and decodes (or fails to decode)
// exactly as it does in memory.
func TestFixturesRoundTripTheEndpoint(t *testing.T) {
	c, _ := startTable(t)
	p := allocation.DefaultPolicy()
	putAndGet(t, c, "../../shared/store/testdata/items", func(name string, put, got map[string]types.AttributeValue) {
		want, wantErr := store.DecodeSession(put)
		rec, gotErr := store.DecodeSession(got)
		if (wantErr == nil) != (gotErr == nil) {
			t.Fatalf("%s: in memory %v, from the endpoint %v", name, wantErr, gotErr)
		}
		if wantErr == nil {
			a, _ := json.Marshal(want.View(p))
			b, _ := json.Marshal(rec.View(p))
			if string(a) != string(b) {
				t.Errorf("%s:\n in memory %s\nendpoint  %s", name, a, b)
			}
		}
	})
	putAndGet(t, c, "../../shared/store/testdata/ledger", func(name string, put, got map[string]types.AttributeValue) {
		want, wantErr := store.DecodeLedger(put)
		row, gotErr := store.DecodeLedger(got)
		if (wantErr == nil) != (gotErr == nil) {
			t.Fatalf("%s: in memory %v, from the endpoint %v", name, wantErr, gotErr)
		}
		a, _ := json.Marshal(want)
		b, _ := json.Marshal(row)
		if wantErr == nil && string(a) != string(b) {
			t.Errorf("%s:\n in memory %s\nendpoint  %s", name, a, b)
		}
	})
}
