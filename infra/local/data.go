package local

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/cloud-agent/control-plane/shared/ddbjson"
)

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
		item, err := ddbjson.Unmarshal(line)
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
			line, err := ddbjson.Marshal(item)
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

// SettingsFromTemplate is the template's SSM parameters under configPath,
// named relative to it: the settings a new local settings file starts
// with.
func SettingsFromTemplate(t *Template, configPath string) []Parameter {
	var out []Parameter
	for _, p := range t.GetAllSSMParameterResources() {
		if p.Name == nil {
			continue
		}
		if name, ok := strings.CutPrefix(*p.Name, configPath+"/"); ok {
			out = append(out, Parameter{Name: name, Type: p.Type, Value: p.Value})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
