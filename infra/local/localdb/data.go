package localdb

import (
	"bufio"
	"bytes"
	"context"
	jsonv2 "encoding/json/v2"
	"fmt"
	"os"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// UnmarshalItem reads one item in DynamoDB JSON, the form that
// `aws dynamodb put-item --item file://…` takes:
// {"PK":{"S":"…"},"n":{"N":"1"},"m":{"M":{…}}}, as fixtures, the test
// harnesses and the local stack's data file hold items. The SDK's
// attributevalue.UnmarshalMapJSON reads it after two checks of what the
// SDK lets pass: every value, at any depth, has exactly one of DynamoDB's
// ten types and is not null (the SDK would take one of two types at
// random, and keep an empty, unknown or null value); and the text is JSON
// as encoding/json/v2 reads it (no name repeated in an object, valid
// UTF-8).
func UnmarshalItem(data []byte) (map[string]types.AttributeValue, error) {
	var raw map[string]any
	if err := jsonv2.Unmarshal(data, &raw); err != nil {
		return nil, err
	}
	if err := checkAttributes(raw); err != nil {
		return nil, err
	}
	return attributevalue.UnmarshalMapJSON(data)
}

// checkAttributes reports an attribute of m whose value, at any depth,
// does not have exactly one type.
func checkAttributes(m map[string]any) error {
	for name, v := range m {
		if err := checkValue(v); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	return nil
}

func checkValue(v any) error {
	typed, _ := v.(map[string]any)
	if len(typed) != 1 {
		return fmt.Errorf("an attribute value has exactly one type, got %d", len(typed))
	}
	for typ, x := range typed {
		if x == nil {
			return fmt.Errorf("%q is null", typ)
		}
		switch typ {
		case "S", "N", "B", "BOOL", "NULL", "SS", "NS", "BS":
		case "M":
			m, _ := x.(map[string]any)
			return checkAttributes(m)
		case "L":
			l, _ := x.([]any)
			for i, e := range l {
				if err := checkValue(e); err != nil {
					return fmt.Errorf("[%d]: %w", i, err)
				}
			}
		default:
			return fmt.Errorf("unknown attribute type %q", typ)
		}
	}
	return nil
}

// LoadItems puts the items of a data file (one item in DynamoDB JSON a
// line) into the table; a missing file is no items.
func LoadItems(ctx context.Context, c *dynamodb.Client, table, path string) (int, error) {
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	n := 0
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for lineNo := 1; sc.Scan(); lineNo++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		item, err := UnmarshalItem(line)
		if err != nil {
			return n, fmt.Errorf("%s line %d: %w", path, lineNo, err)
		}
		if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: item}); err != nil {
			return n, err
		}
		n++
	}
	return n, sc.Err()
}

// SaveItems writes every item of the table to a data file, one item in
// DynamoDB JSON a line.
func SaveItems(ctx context.Context, c *dynamodb.Client, table, path string) (int, error) {
	var buf bytes.Buffer
	n := 0
	pages := dynamodb.NewScanPaginator(c, &dynamodb.ScanInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true)})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return n, err
		}
		for _, item := range page.Items {
			line, err := attributevalue.MarshalMapJSON(item)
			if err != nil {
				return n, err
			}
			buf.Write(line)
			buf.WriteByte('\n')
			n++
		}
	}
	return n, os.WriteFile(path, buf.Bytes(), 0o600)
}
