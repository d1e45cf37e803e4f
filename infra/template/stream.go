package template

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// StreamMapping is an event source mapping of the template on the
// table's stream, as the local stack's poller runs it.
type StreamMapping struct {
	LogicalID  string
	FunctionID string // the function it invokes (its alias, in AWS)
	BatchSize  int
	Window     time.Duration
	// MaxRetries is -1 for no limit, as the mapping's -1 says.
	MaxRetries              int
	Bisect                  bool
	MaxRecordAge            time.Duration // 0: no limit
	ReportBatchItemFailures bool
	Filters                 []string // the FilterCriteria's patterns
}

// StreamMappings are the template's AWS::Lambda::EventSourceMapping
// resources, in the order of their logical ids. Locally a mapping's
// function is named by its logical id (a Ref to <Function>.Alias).
func StreamMappings(t *Template) []StreamMapping {
	all := t.GetAllLambdaEventSourceMappingResources()
	var out []StreamMapping
	for _, id := range slices.Sorted(maps.Keys(all)) {
		m := all[id]
		sm := StreamMapping{
			LogicalID: id, FunctionID: m.FunctionName, BatchSize: aws.ToInt(m.BatchSize),
			Window:     time.Duration(aws.ToInt(m.MaximumBatchingWindowInSeconds)) * time.Second,
			MaxRetries: -1, Bisect: aws.ToBool(m.BisectBatchOnFunctionError),
			MaxRecordAge:            time.Duration(aws.ToInt(m.MaximumRecordAgeInSeconds)) * time.Second,
			ReportBatchItemFailures: slices.Contains(m.FunctionResponseTypes, "ReportBatchItemFailures"),
		}
		if m.MaximumRetryAttempts != nil {
			sm.MaxRetries = *m.MaximumRetryAttempts
		}
		if sm.MaxRecordAge < 0 {
			sm.MaxRecordAge = 0
		}
		if f := m.FilterCriteria; f != nil {
			for _, p := range f.Filters {
				sm.Filters = append(sm.Filters, aws.ToString(p.Pattern))
			}
		}
		out = append(out, sm)
	}
	return out
}

// StreamSpecification is the table's stream as the template gives it,
// nil for none.
func StreamSpecification(t *Template, logicalID string) (*types.StreamSpecification, error) {
	tbl, err := t.GetDynamoDBTableWithName(logicalID)
	if err != nil || tbl.StreamSpecification == nil {
		return nil, err
	}
	return &types.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: types.StreamViewType(tbl.StreamSpecification.StreamViewType)}, nil
}

// EnsureStream gives the table named name the stream in (a table created
// from the template has it; one that existed before, at another endpoint,
// may not) and returns the stream's ARN. A table whose stream has
// another view type is refused: the functions read both images.
func EnsureStream(ctx context.Context, c *dynamodb.Client, name string, in *types.StreamSpecification) (string, error) {
	out, err := c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)})
	if err != nil {
		return "", fmt.Errorf("describing table %s: %w", name, err)
	}
	have := out.Table.StreamSpecification
	switch {
	case have != nil && aws.ToBool(have.StreamEnabled) && have.StreamViewType == in.StreamViewType:
		return aws.ToString(out.Table.LatestStreamArn), nil
	case have != nil && aws.ToBool(have.StreamEnabled):
		return "", fmt.Errorf("table %s streams %s, not the %s of template.yaml: delete it, or use another endpoint", name, have.StreamViewType, in.StreamViewType)
	}
	up, err := c.UpdateTable(ctx, &dynamodb.UpdateTableInput{TableName: aws.String(name), StreamSpecification: in})
	if err != nil {
		return "", fmt.Errorf("giving table %s its stream: %w", name, err)
	}
	return aws.ToString(up.TableDescription.LatestStreamArn), nil
}
