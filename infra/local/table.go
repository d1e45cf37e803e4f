package local

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	cfddb "github.com/awslabs/goformation/v7/cloudformation/dynamodb"
)

// TableLogicalID is the template's table resource; locally the table has
// this name too.
const TableLogicalID = "SessionsTable"

// DynamoAddr is where `make run` serves its embedded DynamoDB endpoint,
// and where `make audit` reads the local stack's table.
const DynamoAddr = "127.0.0.1:8000"

// CreateTableInput builds the CreateTable request for the template's table
// resource, named name: its keys, attribute definitions and global
// secondary indexes. Billing is on demand, as in the template.
func CreateTableInput(t *Template, logicalID, name string) (*dynamodb.CreateTableInput, error) {
	tbl, err := t.GetDynamoDBTableWithName(logicalID)
	if err != nil {
		return nil, err
	}
	in := &dynamodb.CreateTableInput{
		TableName:   aws.String(name),
		BillingMode: types.BillingModePayPerRequest,
		KeySchema:   keySchema(tbl.KeySchema),
	}
	for _, a := range tbl.AttributeDefinitions {
		in.AttributeDefinitions = append(in.AttributeDefinitions, types.AttributeDefinition{
			AttributeName: aws.String(a.AttributeName), AttributeType: types.ScalarAttributeType(a.AttributeType),
		})
	}
	for _, g := range tbl.GlobalSecondaryIndexes {
		p := &types.Projection{ProjectionType: types.ProjectionTypeAll}
		if g.Projection != nil {
			if g.Projection.ProjectionType != nil {
				p.ProjectionType = types.ProjectionType(*g.Projection.ProjectionType)
			}
			p.NonKeyAttributes = g.Projection.NonKeyAttributes
		}
		in.GlobalSecondaryIndexes = append(in.GlobalSecondaryIndexes, types.GlobalSecondaryIndex{
			IndexName: aws.String(g.IndexName), KeySchema: keySchema(g.KeySchema), Projection: p,
		})
	}
	return in, nil
}

// TimeToLiveInput is the UpdateTimeToLive request that gives the table
// named name the template's time to live; nil when the template sets none.
func TimeToLiveInput(t *Template, logicalID, name string) (*dynamodb.UpdateTimeToLiveInput, error) {
	tbl, err := t.GetDynamoDBTableWithName(logicalID)
	if err != nil {
		return nil, err
	}
	ttl := tbl.TimeToLiveSpecification
	if ttl == nil || ttl.AttributeName == nil {
		return nil, nil
	}
	return &dynamodb.UpdateTimeToLiveInput{
		TableName:               aws.String(name),
		TimeToLiveSpecification: &types.TimeToLiveSpecification{AttributeName: ttl.AttributeName, Enabled: aws.Bool(ttl.Enabled)},
	}, nil
}

func keySchema(ks []cfddb.Table_KeySchema) []types.KeySchemaElement {
	out := make([]types.KeySchemaElement, len(ks))
	for i, k := range ks {
		out[i] = types.KeySchemaElement{AttributeName: aws.String(k.AttributeName), KeyType: types.KeyType(k.KeyType)}
	}
	return out
}

// EnsureTable creates the table unless it exists. It does not wait for the
// table to become active: DynamoDB-compatible local endpoints create tables
// at once. A table that
// exists without one of the indexes in is refused: the trigger routes and
// the firing would fail on it at every call.
func EnsureTable(ctx context.Context, c *dynamodb.Client, in *dynamodb.CreateTableInput) (created bool, err error) {
	out, err := c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: in.TableName})
	var missing *types.ResourceNotFoundException
	switch {
	case err == nil:
		for _, want := range in.GlobalSecondaryIndexes {
			if !slices.ContainsFunc(out.Table.GlobalSecondaryIndexes, func(g types.GlobalSecondaryIndexDescription) bool {
				return aws.ToString(g.IndexName) == aws.ToString(want.IndexName)
			}) {
				return false, fmt.Errorf("table %s exists without the index %s of template.yaml: delete it, or use another endpoint",
					aws.ToString(in.TableName), aws.ToString(want.IndexName))
			}
		}
		return false, nil
	case !errors.As(err, &missing):
		return false, fmt.Errorf("describing table %s: %w", *in.TableName, err)
	}
	if _, err := c.CreateTable(ctx, in); err != nil {
		return false, fmt.Errorf("creating table %s: %w", *in.TableName, err)
	}
	return true, nil
}
