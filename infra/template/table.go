package template

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

// CreateTableInput builds the CreateTable request for the template's table
// resource, named name: its keys, attribute definitions, global
// secondary indexes and stream. Billing is on demand, as in the template.
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
	if in.StreamSpecification, err = StreamSpecification(t, logicalID); err != nil {
		return nil, err
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

// EnsureTable creates the table unless it exists, and gives it the time to
// live ttl (nil: none) unless it has it. It does not wait for the table to
// become active: DynamoDB-compatible local endpoints create tables at
// once. Each start finishes what an earlier one left undone: a table
// created by a start whose UpdateTimeToLive failed gets its time to live
// from the next. A table that exists without one of the indexes in in, or
// with its time to live on another attribute, is refused: the trigger
// routes and the firing would fail on it, or its items would never expire.
func EnsureTable(ctx context.Context, c *dynamodb.Client, in *dynamodb.CreateTableInput, ttl *dynamodb.UpdateTimeToLiveInput) (created bool, err error) {
	name := aws.ToString(in.TableName)
	out, err := c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: in.TableName})
	var missing *types.ResourceNotFoundException
	switch {
	case err == nil:
		for _, want := range in.GlobalSecondaryIndexes {
			if !slices.ContainsFunc(out.Table.GlobalSecondaryIndexes, func(g types.GlobalSecondaryIndexDescription) bool {
				return aws.ToString(g.IndexName) == aws.ToString(want.IndexName)
			}) {
				return false, fmt.Errorf("table %s exists without the index %s of template.yaml: delete it, or use another endpoint",
					name, aws.ToString(want.IndexName))
			}
		}
	case !errors.As(err, &missing):
		return false, fmt.Errorf("describing table %s: %w", name, err)
	default:
		if _, err := c.CreateTable(ctx, in); err != nil {
			return false, fmt.Errorf("creating table %s: %w", name, err)
		}
		created = true
	}
	if ttl == nil {
		return created, nil
	}
	return created, ensureTimeToLive(ctx, c, ttl)
}

// ensureTimeToLive gives the table the time to live ttl unless it has it.
func ensureTimeToLive(ctx context.Context, c *dynamodb.Client, ttl *dynamodb.UpdateTimeToLiveInput) error {
	name, want := aws.ToString(ttl.TableName), aws.ToString(ttl.TimeToLiveSpecification.AttributeName)
	out, err := c.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: ttl.TableName})
	if err != nil {
		return fmt.Errorf("reading the time to live of table %s: %w", name, err)
	}
	// Only an enabled time to live (or one being enabled) is kept; a
	// disabled one, or one being disabled, is set again (DynamoDB refuses
	// the latter until it is disabled, and the next start tries again).
	d := out.TimeToLiveDescription
	switch {
	case d == nil || d.TimeToLiveStatus != types.TimeToLiveStatusEnabled && d.TimeToLiveStatus != types.TimeToLiveStatusEnabling:
	case aws.ToString(d.AttributeName) == want:
		return nil
	default:
		return fmt.Errorf("table %s has its time to live on %s, not on %s of template.yaml: delete it, or use another endpoint",
			name, aws.ToString(d.AttributeName), want)
	}
	if _, err := c.UpdateTimeToLive(ctx, ttl); err != nil {
		return fmt.Errorf("setting the time to live of table %s (the next start sets it again): %w", name, err)
	}
	return nil
}
