package dynamo_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/cloud-agent/control-plane/infra/local/childproc"
	"github.com/cloud-agent/control-plane/infra/local/dynamo"
	"github.com/cloud-agent/control-plane/infra/local/dynamotest"
	"github.com/cloud-agent/control-plane/infra/local/localdb"
	"github.com/cloud-agent/control-plane/infra/template"
)

// startTable serves the embedded endpoint with the template's table,
// without its time to live, and returns a client of it and its URL.
func startTable(t *testing.T) (*dynamodb.Client, string) {
	t.Helper()
	c, url := dynamotest.Empty(t)
	templateTable(t, c, template.TableLogicalID)
	return c, url
}

// templateTable creates a table of template.yaml's definition, named name.
func templateTable(t *testing.T, c *dynamodb.Client, name string) {
	t.Helper()
	tpl, err := template.Load("../../../template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	in, err := template.CreateTableInput(tpl, template.TableLogicalID, name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateTable(context.Background(), in); err != nil {
		t.Fatal(err)
	}
}

// createTables creates tables keyed by the string PK.
func createTables(t *testing.T, c *dynamodb.Client, names ...string) {
	t.Helper()
	for _, name := range names {
		if _, err := c.CreateTable(context.Background(), &dynamodb.CreateTableInput{
			TableName:            aws.String(name),
			BillingMode:          types.BillingModePayPerRequest,
			KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("PK"), KeyType: types.KeyTypeHash}},
			AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("PK"), AttributeType: types.ScalarAttributeTypeS}},
		}); err != nil {
			t.Fatal(err)
		}
	}
}

// wantAPIError fails the test unless err is the API error code.
func wantAPIError(t *testing.T, err error, code string) {
	t.Helper()
	var api smithy.APIError
	if !errors.As(err, &api) || api.ErrorCode() != code {
		t.Errorf("got %v, want %s", err, code)
	}
}

// rawDynamo posts one operation's body to the endpoint at url and
// returns the status and body of its answer, for what the SDK would not
// send or would not show.
func rawDynamo(t *testing.T, url, op, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	req.Header.Set("X-Amz-Target", "DynamoDB_20120810."+op)
	req.Header.Set("Content-Type", "application/x-amz-json-1.0")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(answer)
}

// dynamoCLI runs `aws dynamodb <args>` against the endpoint at url, with
// local credentials and no configuration of the machine's, and returns
// what it printed; the error carries its standard error. The test is
// skipped when the AWS CLI is not on the PATH.
func dynamoCLI(t *testing.T, url string, args ...string) (string, error) {
	t.Helper()
	path, err := exec.LookPath("aws")
	if err != nil {
		t.Skip("the AWS CLI (aws) is not on the PATH: the CLI checks of the embedded endpoint are skipped")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := childproc.CommandContext(ctx, path, append(append([]string{"dynamodb"}, args...),
		"--endpoint-url", url, "--region", "us-east-1", "--output", "json")...)
	dir := t.TempDir()
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AWS_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "AWS_ACCESS_KEY_ID=local", "AWS_SECRET_ACCESS_KEY=local", "AWS_PAGER=",
		"AWS_CONFIG_FILE="+filepath.Join(dir, "config"), "AWS_SHARED_CREDENTIALS_FILE="+filepath.Join(dir, "credentials"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return string(out), fmt.Errorf("aws dynamodb %s: %w: %s", strings.Join(args, " "), err, stderr.String())
	}
	return string(out), nil
}

// cliJSON runs dynamoCLI and reads its output into v; a failure fails the
// test.
func cliJSON(t *testing.T, v any, url string, args ...string) {
	t.Helper()
	out, err := dynamoCLI(t, url, args...)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(out), v); err != nil {
		t.Fatalf("aws dynamodb %s: %v: %s", strings.Join(args, " "), err, out)
	}
}

// TestDynamoListTables: ListTables answers the tables the endpoint holds,
// in order, a page of Limit at a time after ExclusiveStartTableName, and
// forgets a deleted one.
func TestDynamoListTables(t *testing.T) {
	ctx := context.Background()
	t.Run("sdk", func(t *testing.T) {
		c, _ := dynamotest.Empty(t)
		out, err := c.ListTables(ctx, &dynamodb.ListTablesInput{})
		if err != nil || out.TableNames == nil || len(out.TableNames) != 0 {
			t.Fatalf("an empty endpoint: %+v %v", out, err)
		}
		createTables(t, c, "charlie", "alpha", "bravo")
		out, err = c.ListTables(ctx, &dynamodb.ListTablesInput{})
		if err != nil || !slices.Equal(out.TableNames, []string{"alpha", "bravo", "charlie"}) || out.LastEvaluatedTableName != nil {
			t.Errorf("all: %+v %v", out, err)
		}
		out, err = c.ListTables(ctx, &dynamodb.ListTablesInput{Limit: aws.Int32(2)})
		if err != nil || !slices.Equal(out.TableNames, []string{"alpha", "bravo"}) || aws.ToString(out.LastEvaluatedTableName) != "bravo" {
			t.Errorf("first page: %+v %v", out, err)
		}
		out, err = c.ListTables(ctx, &dynamodb.ListTablesInput{Limit: aws.Int32(2), ExclusiveStartTableName: out.LastEvaluatedTableName})
		if err != nil || !slices.Equal(out.TableNames, []string{"charlie"}) || out.LastEvaluatedTableName != nil {
			t.Errorf("last page: %+v %v", out, err)
		}
		var all []string
		for pages := dynamodb.NewListTablesPaginator(c, &dynamodb.ListTablesInput{Limit: aws.Int32(1)}); pages.HasMorePages(); {
			page, err := pages.NextPage(ctx)
			if err != nil {
				t.Fatal(err)
			}
			all = append(all, page.TableNames...)
		}
		if !slices.Equal(all, []string{"alpha", "bravo", "charlie"}) {
			t.Errorf("paginated: %v", all)
		}
		for _, limit := range []int32{0, 101} {
			_, err := c.ListTables(ctx, &dynamodb.ListTablesInput{Limit: aws.Int32(limit)})
			wantAPIError(t, err, "ValidationException")
		}
		if _, err := c.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String("bravo")}); err != nil {
			t.Fatal(err)
		}
		out, err = c.ListTables(ctx, &dynamodb.ListTablesInput{})
		if err != nil || !slices.Equal(out.TableNames, []string{"alpha", "charlie"}) {
			t.Errorf("after a delete: %+v %v", out, err)
		}
	})
	t.Run("cli", func(t *testing.T) {
		c, url := dynamotest.Empty(t)
		createTables(t, c, "charlie", "alpha", "bravo")
		var page struct {
			TableNames             []string
			LastEvaluatedTableName string
			NextToken              string
		}
		cliJSON(t, &page, url, "list-tables", "--page-size", "1")
		if !slices.Equal(page.TableNames, []string{"alpha", "bravo", "charlie"}) || page.NextToken != "" {
			t.Errorf("list-tables --page-size 1: %+v", page)
		}
		page.TableNames = nil
		cliJSON(t, &page, url, "list-tables", "--no-paginate", "--limit", "2")
		if !slices.Equal(page.TableNames, []string{"alpha", "bravo"}) || page.LastEvaluatedTableName != "bravo" {
			t.Errorf("list-tables --limit 2: %+v", page)
		}
		page = struct {
			TableNames             []string
			LastEvaluatedTableName string
			NextToken              string
		}{}
		cliJSON(t, &page, url, "list-tables", "--no-paginate", "--exclusive-start-table-name", "bravo")
		if !slices.Equal(page.TableNames, []string{"charlie"}) || page.LastEvaluatedTableName != "" {
			t.Errorf("list-tables --exclusive-start-table-name bravo: %+v", page)
		}
	})
}

// TestDynamoTimeToLive: the endpoint keeps the TTL a table was given with
// UpdateTimeToLive, as the template's (expiresAt, enabled), and
// DescribeTimeToLive reports it ENABLED, or DISABLED; it refuses what
// DynamoDB refuses.
func TestDynamoTimeToLive(t *testing.T) {
	ctx := context.Background()
	tpl, err := template.Load("../../../template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := tpl.GetDynamoDBTableWithName(template.TableLogicalID)
	if err != nil || tbl.TimeToLiveSpecification == nil || tbl.TimeToLiveSpecification.AttributeName == nil {
		t.Fatalf("the template's table has no TTL: %v", err)
	}
	attr := *tbl.TimeToLiveSpecification.AttributeName
	t.Run("sdk", func(t *testing.T) {
		c, url := startTable(t)
		name := aws.String(template.TableLogicalID)
		describe := func() *types.TimeToLiveDescription {
			t.Helper()
			out, err := c.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: name})
			if err != nil {
				t.Fatal(err)
			}
			return out.TimeToLiveDescription
		}
		update := func(attribute string, enabled bool) error {
			_, err := c.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{TableName: name,
				TimeToLiveSpecification: &types.TimeToLiveSpecification{AttributeName: aws.String(attribute), Enabled: aws.Bool(enabled)}})
			return err
		}
		if d := describe(); d.TimeToLiveStatus != types.TimeToLiveStatusDisabled || d.AttributeName != nil {
			t.Errorf("before: %+v", d)
		}
		out, err := c.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{TableName: name,
			TimeToLiveSpecification: &types.TimeToLiveSpecification{AttributeName: aws.String(attr), Enabled: aws.Bool(tbl.TimeToLiveSpecification.Enabled)}})
		if err != nil || aws.ToString(out.TimeToLiveSpecification.AttributeName) != attr || !aws.ToBool(out.TimeToLiveSpecification.Enabled) {
			t.Fatalf("enable: %+v %v", out, err)
		}
		if d := describe(); d.TimeToLiveStatus != types.TimeToLiveStatusEnabled || aws.ToString(d.AttributeName) != attr {
			t.Errorf("enabled: %+v", d)
		}
		wantAPIError(t, update(attr, true), "ValidationException")
		wantAPIError(t, update("other", false), "ValidationException")
		if err := update(attr, false); err != nil {
			t.Fatal(err)
		}
		if d := describe(); d.TimeToLiveStatus != types.TimeToLiveStatusDisabled || d.AttributeName != nil {
			t.Errorf("disabled: %+v", d)
		}
		wantAPIError(t, update(attr, false), "ValidationException")
		// The SDK refuses to send these.
		for _, body := range []string{`{"TableName":"SessionsTable"}`, `{"TableName":"SessionsTable","TimeToLiveSpecification":{"Enabled":true}}`} {
			if code, answer := rawDynamo(t, url, "UpdateTimeToLive", body); code != 400 || !strings.Contains(answer, "ValidationException") {
				t.Errorf("%s: %d %s", body, code, answer)
			}
		}
		_, err = c.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String("missing")})
		wantAPIError(t, err, "ResourceNotFoundException")
		wantAPIError(t, func() error {
			_, err := c.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{TableName: aws.String("missing"),
				TimeToLiveSpecification: &types.TimeToLiveSpecification{AttributeName: aws.String(attr), Enabled: aws.Bool(true)}})
			return err
		}(), "ResourceNotFoundException")
	})
	t.Run("cli", func(t *testing.T) {
		_, url := startTable(t)
		var d struct{ TimeToLiveDescription map[string]string }
		cliJSON(t, &d, url, "describe-time-to-live", "--table-name", template.TableLogicalID)
		if want := map[string]string{"TimeToLiveStatus": "DISABLED"}; !reflect.DeepEqual(d.TimeToLiveDescription, want) {
			t.Errorf("before: %v", d.TimeToLiveDescription)
		}
		if _, err := dynamoCLI(t, url, "update-time-to-live", "--table-name", template.TableLogicalID,
			"--time-to-live-specification", "Enabled=true,AttributeName="+attr); err != nil {
			t.Fatal(err)
		}
		cliJSON(t, &d, url, "describe-time-to-live", "--table-name", template.TableLogicalID)
		if want := map[string]string{"TimeToLiveStatus": "ENABLED", "AttributeName": attr}; !reflect.DeepEqual(d.TimeToLiveDescription, want) {
			t.Errorf("enabled: %v", d.TimeToLiveDescription)
		}
	})
}

// TestDynamoTableActive: every table description says ACTIVE (DELETING
// for a deleted table) with each index ACTIVE, so that the SDK's waiters
// and `aws dynamodb wait` return at once; it carries no null or empty
// member.
func TestDynamoTableActive(t *testing.T) {
	ctx := context.Background()
	tpl, err := template.Load("../../../template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	in, err := template.CreateTableInput(tpl, template.TableLogicalID, template.TableLogicalID)
	if err != nil {
		t.Fatal(err)
	}
	t.Run("sdk", func(t *testing.T) {
		c, _ := dynamotest.Empty(t)
		created, err := c.CreateTable(ctx, in)
		// DynamoDB answers CREATING, and ACTIVE once the table is made.
		if err != nil || created.TableDescription.TableStatus != types.TableStatusCreating {
			t.Fatalf("created: %+v %v", created, err)
		}
		if err := dynamodb.NewTableExistsWaiter(c).Wait(ctx, &dynamodb.DescribeTableInput{TableName: in.TableName}, 10*time.Second); err != nil {
			t.Fatalf("TableExistsWaiter: %v", err)
		}
		out, err := c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: in.TableName})
		if err != nil || out.Table.TableStatus != types.TableStatusActive || len(out.Table.GlobalSecondaryIndexes) != len(in.GlobalSecondaryIndexes) {
			t.Fatalf("described: %+v %v", out, err)
		}
		for _, g := range out.Table.GlobalSecondaryIndexes {
			if g.IndexStatus != types.IndexStatusActive {
				t.Errorf("index %s: %q", aws.ToString(g.IndexName), g.IndexStatus)
			}
		}
		deleted, err := c.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: in.TableName})
		if err != nil || deleted.TableDescription.TableStatus != types.TableStatusDeleting {
			t.Fatalf("deleted: %+v %v", deleted, err)
		}
		if err := dynamodb.NewTableNotExistsWaiter(c).Wait(ctx, &dynamodb.DescribeTableInput{TableName: in.TableName}, 10*time.Second); err != nil {
			t.Errorf("TableNotExistsWaiter: %v", err)
		}
	})
	t.Run("cli", func(t *testing.T) {
		_, url := startTable(t)
		if _, err := dynamoCLI(t, url, "wait", "table-exists", "--table-name", template.TableLogicalID); err != nil {
			t.Fatal(err)
		}
		out, err := dynamoCLI(t, url, "describe-table", "--table-name", template.TableLogicalID)
		if err != nil {
			t.Fatal(err)
		}
		var d struct {
			Table struct {
				TableStatus            string
				GlobalSecondaryIndexes []struct{ IndexName, IndexStatus string }
			}
		}
		if err := json.Unmarshal([]byte(out), &d); err != nil || d.Table.TableStatus != "ACTIVE" || len(d.Table.GlobalSecondaryIndexes) != 3 {
			t.Fatalf("%v: %s", err, out)
		}
		for _, g := range d.Table.GlobalSecondaryIndexes {
			if g.IndexStatus != "ACTIVE" {
				t.Errorf("index %s: %q", g.IndexName, g.IndexStatus)
			}
		}
		if strings.Contains(out, `""`) || strings.Contains(out, "null") {
			t.Errorf("null or empty members: %s", out)
		}
		if _, err := dynamoCLI(t, url, "delete-table", "--table-name", template.TableLogicalID); err != nil {
			t.Fatal(err)
		}
		if _, err := dynamoCLI(t, url, "wait", "table-not-exists", "--table-name", template.TableLogicalID); err != nil {
			t.Error(err)
		}
	})
}

// TestDynamoTableID holds a table's TableId to DynamoDB's (API Reference,
// TableDescription: "TableId: Unique identifier for the table for which
// the backup was created"; DynamoDB's are random UUIDs): the same from
// CreateTable to DeleteTable, and another for another table, even of the
// same name.
func TestDynamoTableID(t *testing.T) {
	ctx := context.Background()
	c, _ := dynamotest.Empty(t)
	uuidV4 := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	describe := func(name string) string {
		t.Helper()
		out, err := c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)})
		if err != nil {
			t.Fatal(err)
		}
		return aws.ToString(out.Table.TableId)
	}
	create := func(name string) string {
		t.Helper()
		out, err := c.CreateTable(ctx, &dynamodb.CreateTableInput{
			TableName:            aws.String(name),
			BillingMode:          types.BillingModePayPerRequest,
			KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("PK"), KeyType: types.KeyTypeHash}},
			AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("PK"), AttributeType: types.ScalarAttributeTypeS}},
		})
		if err != nil {
			t.Fatal(err)
		}
		return aws.ToString(out.TableDescription.TableId)
	}
	id := create("one")
	if !uuidV4.MatchString(id) {
		t.Fatalf("TableId %q is not a UUID", id)
	}
	if got := describe("one"); got != id {
		t.Errorf("DescribeTable's TableId %q, CreateTable's %q", got, id)
	}
	if other := create("two"); other == id || !uuidV4.MatchString(other) {
		t.Errorf("another table's TableId %q (the first's %q)", other, id)
	}
	deleted, err := c.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String("one")})
	if err != nil || aws.ToString(deleted.TableDescription.TableId) != id {
		t.Fatalf("DeleteTable: %+v %v, want TableId %q", deleted, err, id)
	}
	if again := create("one"); again == id {
		t.Errorf("a new table of the same name has the old one's TableId %q", id)
	}
}

// putItems puts items of the keys PK, SK into the template's table.
func putItems(t *testing.T, c *dynamodb.Client, keys ...[2]string) {
	t.Helper()
	for _, k := range keys {
		if _, err := c.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(template.TableLogicalID), Item: map[string]types.AttributeValue{
			"PK": &types.AttributeValueMemberS{Value: k[0]}, "SK": &types.AttributeValueMemberS{Value: k[1]},
		}}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestDynamoSelectCount: a Scan or a Query with Select COUNT answers the
// count and no items; every Scan and Query answers a Count, 0 included.
func TestDynamoSelectCount(t *testing.T) {
	ctx := context.Background()
	table := aws.String(template.TableLogicalID)
	keys := [][2]string{{"a", "1"}, {"a", "2"}, {"a", "3"}, {"b", "1"}}
	query := func(pk string) *dynamodb.QueryInput {
		return &dynamodb.QueryInput{TableName: table, Select: types.SelectCount, KeyConditionExpression: aws.String("PK = :pk"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":pk": &types.AttributeValueMemberS{Value: pk}}}
	}
	t.Run("sdk", func(t *testing.T) {
		c, url := startTable(t)
		putItems(t, c, keys...)
		scan, err := c.Scan(ctx, &dynamodb.ScanInput{TableName: table, Select: types.SelectCount})
		if err != nil || scan.Count != 4 || scan.Items != nil {
			t.Errorf("scan: %+v %v", scan, err)
		}
		scan, err = c.Scan(ctx, &dynamodb.ScanInput{TableName: table, Select: types.SelectCount, Limit: aws.Int32(3)})
		if err != nil || scan.Count != 3 || scan.Items != nil || scan.LastEvaluatedKey == nil {
			t.Errorf("scan with a limit: %+v %v", scan, err)
		}
		q, err := c.Query(ctx, query("a"))
		if err != nil || q.Count != 3 || q.Items != nil {
			t.Errorf("query: %+v %v", q, err)
		}
		all, err := c.Scan(ctx, &dynamodb.ScanInput{TableName: table})
		if err != nil || all.Count != 4 || len(all.Items) != 4 {
			t.Errorf("scan of the items: %+v %v", all, err)
		}
		// The SDK reads a missing Count as 0: the wire must carry it.
		if code, body := rawDynamo(t, url, "Query", `{"TableName":"SessionsTable","Select":"COUNT",`+
			`"KeyConditionExpression":"PK = :pk","ExpressionAttributeValues":{":pk":{"S":"none"}}}`); code != 200 || body != `{"Count":0,"ScannedCount":0}` {
			t.Errorf("a count of none: %d %s", code, body)
		}
	})
	t.Run("cli", func(t *testing.T) {
		c, url := startTable(t)
		putItems(t, c, keys...)
		for _, args := range [][]string{
			{"scan", "--table-name", template.TableLogicalID, "--select", "COUNT"},
			{"query", "--table-name", template.TableLogicalID, "--select", "COUNT", "--key-condition-expression", "PK = :pk",
				"--expression-attribute-values", `{":pk":{"S":"a"}}`},
			{"query", "--table-name", template.TableLogicalID, "--select", "COUNT", "--key-condition-expression", "PK = :pk",
				"--expression-attribute-values", `{":pk":{"S":"none"}}`},
		} {
			var out map[string]any
			cliJSON(t, &out, url, args...)
			if _, ok := out["Items"]; ok || out["Count"] == nil {
				t.Errorf("%v: %v", args, out)
			}
		}
		var out struct{ Count int }
		cliJSON(t, &out, url, "scan", "--table-name", template.TableLogicalID, "--select", "COUNT")
		if out.Count != 4 {
			t.Errorf("scan --select COUNT: %d", out.Count)
		}
	})
}

// TestDynamoPutItemReturnValues: PutItem answers no attributes unless
// ReturnValues is ALL_OLD, and then the item it replaced (none for a new
// one); it refuses any other ReturnValues.
func TestDynamoPutItemReturnValues(t *testing.T) {
	ctx := context.Background()
	item := func(x string) map[string]types.AttributeValue {
		return map[string]types.AttributeValue{"PK": &types.AttributeValueMemberS{Value: "a"}, "SK": &types.AttributeValueMemberS{Value: "1"},
			"x": &types.AttributeValueMemberN{Value: x}, "l": &types.AttributeValueMemberL{Value: []types.AttributeValue{}}}
	}
	t.Run("sdk", func(t *testing.T) {
		c, _ := startTable(t)
		put := func(x string, rv types.ReturnValue) (*dynamodb.PutItemOutput, error) {
			return c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(template.TableLogicalID), Item: item(x), ReturnValues: rv})
		}
		key := map[string]types.AttributeValue{"PK": &types.AttributeValueMemberS{Value: "a"}, "SK": &types.AttributeValueMemberS{Value: "1"}}
		for _, step := range []struct {
			x  string
			rv types.ReturnValue
		}{{"1", ""}, {"2", types.ReturnValueNone}} { // a new item, then a replaced one
			if out, err := put(step.x, step.rv); err != nil || out.Attributes != nil {
				t.Errorf("ReturnValues %q: %+v %v", step.rv, out, err)
			}
		}
		if _, err := c.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(template.TableLogicalID), Key: key}); err != nil {
			t.Fatal(err)
		}
		if out, err := put("2", types.ReturnValueAllOld); err != nil || out.Attributes != nil {
			t.Errorf("ALL_OLD of a new item: %+v %v", out, err)
		}
		out, err := put("3", types.ReturnValueAllOld)
		old := item("2")
		if err != nil || !reflect.DeepEqual(out.Attributes, old) {
			t.Errorf("ALL_OLD of a replaced item: %+v %v", out, err)
		}
		got, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(template.TableLogicalID), Key: key})
		if err != nil || got.Item["x"].(*types.AttributeValueMemberN).Value != "3" {
			t.Errorf("stored: %+v %v", got, err)
		}
		_, err = c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(template.TableLogicalID), Item: item("4"), ReturnValues: types.ReturnValueAllOld,
			ConditionExpression: aws.String("attribute_not_exists(PK)")})
		wantAPIError(t, err, "ConditionalCheckFailedException")
		for _, rv := range []types.ReturnValue{types.ReturnValueAllNew, types.ReturnValueUpdatedOld} {
			_, err := put("5", rv)
			wantAPIError(t, err, "ValidationException")
		}
	})
	t.Run("cli", func(t *testing.T) {
		_, url := startTable(t)
		args := []string{"put-item", "--table-name", template.TableLogicalID, "--item", `{"PK":{"S":"a"},"SK":{"S":"1"},"x":{"N":"1"}}`}
		if out, err := dynamoCLI(t, url, args...); err != nil || out != "" {
			t.Errorf("put-item printed %q: %v", out, err)
		}
		var out struct{ Attributes map[string]map[string]string }
		cliJSON(t, &out, url, append(args, "--return-values", "ALL_OLD")...)
		if want := map[string]map[string]string{"PK": {"S": "a"}, "SK": {"S": "1"}, "x": {"N": "1"}}; !reflect.DeepEqual(out.Attributes, want) {
			t.Errorf("put-item --return-values ALL_OLD: %v", out.Attributes)
		}
	})
}

// TestDynamoTablesChangeUnderLoad: tables created, described and deleted
// while items are written and read elsewhere on the endpoint; under the
// race detector, any unordered access fails the test.
func TestDynamoTablesChangeUnderLoad(t *testing.T) {
	ctx := context.Background()
	c, _ := startTable(t)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 20 {
				name := aws.String(fmt.Sprintf("load%d-%d", w, i))
				in := &dynamodb.CreateTableInput{TableName: name, BillingMode: types.BillingModePayPerRequest,
					KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("PK"), KeyType: types.KeyTypeHash}},
					AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("PK"), AttributeType: types.ScalarAttributeTypeS}}}
				if _, err := c.CreateTable(ctx, in); err != nil {
					t.Error(err)
				}
				if _, err := c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: name}); err != nil {
					t.Error(err)
				}
				if _, err := c.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: name}); err != nil {
					t.Error(err)
				}
			}
		})
		wg.Go(func() {
			for i := range 20 {
				if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(template.TableLogicalID), Item: map[string]types.AttributeValue{
					"PK": &types.AttributeValueMemberS{Value: fmt.Sprint(w)}, "SK": &types.AttributeValueMemberS{Value: fmt.Sprint(i)}}}); err != nil {
					t.Error(err)
				}
				if _, err := c.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(template.TableLogicalID), Select: types.SelectCount}); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	out, err := c.ListTables(ctx, &dynamodb.ListTablesInput{})
	if err != nil || !slices.Equal(out.TableNames, []string{template.TableLogicalID}) {
		t.Errorf("left: %+v %v", out, err)
	}
}

// TestDynamoUpdateRemove: an update's REMOVE clause removes the top-level
// attributes it names, by placeholder or by name, beside its SET clause,
// from the item, its index entries and the new attributes it returns;
// a refused condition removes nothing.
func TestDynamoUpdateRemove(t *testing.T) {
	ctx := context.Background()
	c, _ := startTable(t)
	key := map[string]types.AttributeValue{"PK": &types.AttributeValueMemberS{Value: "TRIGGER#trg_a"}, "SK": &types.AttributeValueMemberS{Value: "TRIGGER"}}
	put := func() {
		item := map[string]types.AttributeValue{"a": &types.AttributeValueMemberS{Value: "1"}, "b": &types.AttributeValueMemberS{Value: "2"},
			"dueShard": &types.AttributeValueMemberS{Value: "DUE#0"}, "nextRunAt": &types.AttributeValueMemberS{Value: "2026-11-30T10:00:00Z"}}
		maps.Copy(item, key)
		if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(template.TableLogicalID), Item: item}); err != nil {
			t.Fatal(err)
		}
	}
	attrs := func() []string {
		got, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(template.TableLogicalID), Key: key, ConsistentRead: aws.Bool(true)})
		if err != nil {
			t.Fatal(err)
		}
		return slices.Sorted(maps.Keys(got.Item))
	}
	for _, expr := range []string{"SET v = :one REMOVE a, #d", "REMOVE a,#d SET v = :one", "remove  a , #d\nset v = :one"} {
		put()
		out, err := c.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: aws.String(template.TableLogicalID), Key: key, UpdateExpression: aws.String(expr),
			ExpressionAttributeNames:  map[string]string{"#d": "dueShard"},
			ExpressionAttributeValues: map[string]types.AttributeValue{":one": &types.AttributeValueMemberN{Value: "1"}},
			ReturnValues:              types.ReturnValueAllNew,
		})
		if err != nil {
			t.Fatalf("%q: %v", expr, err)
		}
		if got := fmt.Sprint(attrs()); got != "[PK SK b nextRunAt v]" {
			t.Errorf("%q: the item has %s", expr, got)
		}
		if _, a := out.Attributes["a"]; a || out.Attributes["v"] == nil {
			t.Errorf("%q: ALL_NEW %v", expr, out.Attributes)
		}
		due, err := c.Query(ctx, &dynamodb.QueryInput{TableName: aws.String(template.TableLogicalID), IndexName: aws.String("DueTriggersAll"),
			KeyConditionExpression:    aws.String("dueShard = :s"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":s": &types.AttributeValueMemberS{Value: "DUE#0"}}})
		if err != nil || len(due.Items) != 0 {
			t.Errorf("%q: the due index still has %d: %v", expr, len(due.Items), err)
		}
	}
	put()
	_, err := c.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(template.TableLogicalID), Key: key,
		UpdateExpression: aws.String("REMOVE a"), ConditionExpression: aws.String("attribute_not_exists(b)")})
	wantAPIError(t, err, "ConditionalCheckFailedException")
	if got := fmt.Sprint(attrs()); got != "[PK SK a b dueShard nextRunAt]" {
		t.Errorf("a refused update removed: %s", got)
	}
	// The updates of a transaction, and a refused transaction.
	other := map[string]types.AttributeValue{"PK": &types.AttributeValueMemberS{Value: "X"}, "SK": &types.AttributeValueMemberS{Value: "Y"}}
	for _, refused := range []bool{true, false} {
		cond := aws.String("attribute_exists(PK)")
		if refused {
			cond = aws.String("attribute_not_exists(PK)")
		}
		_, err := c.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
			{Update: &types.Update{TableName: aws.String(template.TableLogicalID), Key: key, UpdateExpression: aws.String("SET v = :one REMOVE a, #d"),
				ExpressionAttributeNames:  map[string]string{"#d": "dueShard"},
				ExpressionAttributeValues: map[string]types.AttributeValue{":one": &types.AttributeValueMemberN{Value: "1"}}, ConditionExpression: cond}},
			{Put: &types.Put{TableName: aws.String(template.TableLogicalID), Item: other}},
		}})
		want := "[PK SK b nextRunAt v]"
		if refused {
			wantAPIError(t, err, "TransactionCanceledException")
			want = "[PK SK a b dueShard nextRunAt]"
		} else if err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprint(attrs()); got != want {
			t.Errorf("transaction (refused %t): the item has %s", refused, got)
		}
	}
}

// TestDynamoParallelScan: the segments of a parallel scan together hand
// over every item once, pages included; Segment and TotalSegments are
// checked as DynamoDB checks them.
func TestDynamoParallelScan(t *testing.T) {
	ctx := context.Background()
	c, url := startTable(t)
	for i := range 40 {
		if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(template.TableLogicalID), Item: map[string]types.AttributeValue{
			"PK": &types.AttributeValueMemberS{Value: fmt.Sprintf("SESSION#%d", i)}, "SK": &types.AttributeValueMemberS{Value: "METADATA"}}}); err != nil {
			t.Fatal(err)
		}
	}
	seen := map[string]int{}
	for seg := range int32(3) {
		p := dynamodb.NewScanPaginator(c, &dynamodb.ScanInput{TableName: aws.String(template.TableLogicalID), Limit: aws.Int32(7),
			Segment: aws.Int32(seg), TotalSegments: aws.Int32(3)})
		for p.HasMorePages() {
			page, err := p.NextPage(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, item := range page.Items {
				seen[item["PK"].(*types.AttributeValueMemberS).Value]++
			}
		}
	}
	if len(seen) != 40 {
		t.Errorf("%d items of 40", len(seen))
	}
	for pk, n := range seen {
		if n != 1 {
			t.Errorf("%s handed over %d times", pk, n)
		}
	}
	for _, body := range []string{
		`{"TableName":"SessionsTable","Segment":0}`,
		`{"TableName":"SessionsTable","TotalSegments":2}`,
		`{"TableName":"SessionsTable","Segment":2,"TotalSegments":2}`,
		`{"TableName":"SessionsTable","Segment":0,"TotalSegments":0}`,
	} {
		if status, answer := rawDynamo(t, url, "Scan", body); status != http.StatusBadRequest || !strings.Contains(answer, "ValidationException") {
			t.Errorf("%s: %d %s", body, status, answer)
		}
	}
}

// TestDynamoSparseIndex: an item that loses the key of an index, by a
// PutItem that leaves it out, an UpdateItem or a transaction that removes
// it, leaves the index, and a later delete leaves every other entry of
// the index in place.
func TestDynamoSparseIndex(t *testing.T) {
	ctx := context.Background()
	c, _ := startTable(t)
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	key := func(id string) map[string]types.AttributeValue {
		return map[string]types.AttributeValue{"PK": s("TRIGGER#" + id), "SK": s("TRIGGER")}
	}
	put := func(id string, due bool) {
		item := key(id)
		item["nextRunAt"] = s("2026-11-30T10:0" + fmt.Sprint(int(id[0]-'a')) + ":00Z") // each its own place in the index
		if id == "g" {
			item["nextRunAt"] = s("2026-11-30T09:59:00Z")
		}
		if due {
			item["dueShard"] = s("DUE#0")
		}
		if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(template.TableLogicalID), Item: item}); err != nil {
			t.Fatal(err)
		}
	}
	due := func() string {
		out, err := c.Query(ctx, &dynamodb.QueryInput{TableName: aws.String(template.TableLogicalID), IndexName: aws.String("DueTriggersAll"),
			KeyConditionExpression: aws.String("dueShard = :s"), ExpressionAttributeValues: map[string]types.AttributeValue{":s": s("DUE#0")}})
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, it := range out.Items {
			ids = append(ids, strings.TrimPrefix(it["PK"].(*types.AttributeValueMemberS).Value, "TRIGGER#"))
		}
		slices.Sort(ids)
		return fmt.Sprint(ids)
	}
	for _, id := range []string{"a", "b", "c", "d", "e", "f", "g"} {
		put(id, true)
	}
	put("b", false) // a PutItem without the index's key
	if _, err := c.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(template.TableLogicalID), Key: key("d"), UpdateExpression: aws.String("REMOVE dueShard")}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Update: &types.Update{TableName: aws.String(template.TableLogicalID), Key: key("f"), UpdateExpression: aws.String("REMOVE dueShard")}},
	}}); err != nil {
		t.Fatal(err)
	}
	if got := due(); got != "[a c e g]" {
		t.Errorf("due %s, want [a c e g]", got)
	}
	for _, id := range []string{"b", "d", "f"} {
		if _, err := c.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(template.TableLogicalID), Key: key(id)}); err != nil {
			t.Fatal(err)
		}
	}
	if got := due(); got != "[a c e g]" {
		t.Errorf("after the deletes: due %s, want [a c e g]", got)
	}
	put("b", true)
	if got := due(); got != "[a b c e g]" {
		t.Errorf("put back: due %s", got)
	}
}

// TestEmptyListsAndMaps: an empty list or map attribute reads back as it
// was written, typed, as DynamoDB keeps it, at any depth.
func TestEmptyListsAndMaps(t *testing.T) {
	c, _ := startTable(t)
	ctx := context.Background()
	item, _ := localdb.UnmarshalItem([]byte(`{"PK":{"S":"SESSION#x"},"SK":{"S":"METADATA"},"secret":{"S":"s3cret"},` +
		`"l":{"L":[]},"m":{"M":{}},"deep":{"M":{"e":{"L":[]},"keep":{"S":"v"}}},"list":{"L":[{"M":{}},{"S":"a"}]}}`))
	if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(template.TableLogicalID), Item: item}); err != nil {
		t.Fatal(err)
	}
	key := map[string]types.AttributeValue{"PK": item["PK"], "SK": item["SK"]}
	got, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(template.TableLogicalID), Key: key})
	if err != nil {
		t.Fatal(err)
	}
	scan, err := c.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(template.TableLogicalID)})
	if err != nil || len(scan.Items) != 1 {
		t.Fatal(err)
	}
	for _, it := range []map[string]types.AttributeValue{got.Item, scan.Items[0]} {
		if !reflect.DeepEqual(it, item) {
			b, _ := attributevalue.MarshalMapJSON(it)
			t.Errorf("got %s", b)
		}
	}
}

// TestDynamoChecksum: the embedded endpoint sends the CRC32 of each body,
// as real DynamoDB does, so that the functions' clients check it without
// a warning.
func TestDynamoChecksum(t *testing.T) {
	d, err := dynamo.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close(context.Background())
	req, _ := http.NewRequest("POST", d.URL, strings.NewReader(`{"TableName":"none"}`))
	req.Header.Set("X-Amz-Target", "DynamoDB_20120810.DescribeTable")
	req.Header.Set("Content-Type", "application/x-amz-json-1.0")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if got, want := resp.Header.Get("X-Amz-Crc32"), strconv.FormatUint(uint64(crc32.ChecksumIEEE(body)), 10); got != want || len(body) == 0 {
		t.Errorf("X-Amz-Crc32 %q, want %q for %s", got, want, body)
	}
}
