package localdb_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/cloud-agent/control-plane/infra/local/dynamotest"
	"github.com/cloud-agent/control-plane/infra/local/localdb"
)

func TestMain(m *testing.M) { dynamotest.Main(m) }

// everyType is an item holding every attribute type, nested in a map and
// a list.
const everyType = `{"PK":{"S":"SESSION#a"},"SK":{"S":"METADATA"},"n":{"N":"1.5"},"b":{"B":"AQI="},"t":{"BOOL":true},"z":{"NULL":true},` +
	`"ss":{"SS":["a","b"]},"ns":{"NS":["1"]},"bs":{"BS":["AQ=="]},"m":{"M":{"x":{"L":[{"S":"y"},{"N":"2"}]}}}}`

// TestItemRoundTrip: every attribute type reads and writes back unchanged.
func TestItemRoundTrip(t *testing.T) {
	item, err := localdb.UnmarshalItem([]byte(everyType))
	if err != nil {
		t.Fatal(err)
	}
	out, err := attributevalue.MarshalMapJSON(item)
	if err != nil {
		t.Fatal(err)
	}
	var a, b any
	_ = json.Unmarshal([]byte(everyType), &a)
	_ = json.Unmarshal(out, &b)
	if !reflect.DeepEqual(a, b) {
		t.Errorf("got %s", out)
	}
}

// TestItemRejects: malformed DynamoDB JSON is an error, the values the
// SDK alone would let pass (several types, none, an unknown or a null one,
// at any depth) included.
func TestItemRejects(t *testing.T) {
	for _, in := range []string{
		`[]`, `{} {}`, `{"a":{"S":1}}`, `{"a":{"L":[{"S":1}]}}`,
		`{"a":{"S":"x","N":"1"}}`, `{"a":{}}`, `{"a":{"X":"1"}}`, `{"a":null}`, `{"a":{"S":null}}`, `{"a":{"M":null}}`,
		`{"a":{"M":{"b":{"S":"x","N":"1"}}}}`, `{"a":{"L":[{}]}}`, `{"a":{"L":[{"S":"x"},{"Y":"1"}]}}`,
		`{"a":{"S":"x","S":"y"}}`, `{"a":{"S":"x"},"a":{"S":"y"}}`, "{\"a\":{\"S\":\"\xff\"}}",
	} {
		if item, err := localdb.UnmarshalItem([]byte(in)); err == nil {
			t.Errorf("%s: no error, read %v", in, item)
		}
	}
}

// TestDataFileRoundTrip: a data file, loaded into the table and saved
// again, holds the same items, blank lines aside.
func TestDataFileRoundTrip(t *testing.T) {
	c, table := dynamotest.Table(t, dynamotest.Backends(t)[0])
	ctx := context.Background()
	dir := t.TempDir()
	lines := []string{everyType, `{"PK":{"S":"TRIGGER#trg_a"},"SK":{"S":"TRIGGER"},"prompt":{"S":"Say \"hello\" in <b>bold</b> & café \u2028."}}`}
	in := filepath.Join(dir, "in.jsonl")
	if err := os.WriteFile(in, []byte(strings.Join(lines, "\n\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if n, err := localdb.LoadItems(ctx, c, table, in); err != nil || n != 2 {
		t.Fatalf("loaded %d: %v", n, err)
	}
	out := filepath.Join(dir, "out.jsonl")
	if n, err := localdb.SaveItems(ctx, c, table, out); err != nil || n != 2 {
		t.Fatalf("saved %d: %v", n, err)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	saved := map[string]map[string]types.AttributeValue{}
	for line := range bytes.Lines(data) {
		item, err := localdb.UnmarshalItem(line)
		if err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		saved[item["PK"].(*types.AttributeValueMemberS).Value] = item
	}
	for _, line := range lines {
		want, _ := localdb.UnmarshalItem([]byte(line))
		if got := saved[want["PK"].(*types.AttributeValueMemberS).Value]; !reflect.DeepEqual(got, want) {
			t.Errorf("saved %v\nwant %v", got, want)
		}
	}
}
