package store

import (
	"context"
	"errors"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/cloud-agent/control-plane/shared/trigger"
)

// GetTrigger reads a trigger, strongly consistent.
func (t *Table) GetTrigger(ctx context.Context, id string) (*trigger.Trigger, error) {
	item, err := t.get(ctx, triggerKey(id))
	if err != nil {
		return nil, err
	}
	return decodeTrigger(item)
}

// Position is where a page of items listed newest first ended: the last
// item's id and creation.
type Position struct {
	ID        string
	CreatedAt time.Time
}

// ListTriggers returns up to limit of a user's triggers that keep accepts,
// newest first, after the position (nil: from the start). more says
// whether further accepted triggers follow. The index is eventually
// consistent: a trigger created a moment ago may show only a moment later.
func (t *Table) ListTriggers(ctx context.Context, userID string, after *Position, limit int, keep func(*trigger.Trigger) bool) (page []*trigger.Trigger, more bool, err error) {
	kc, err := expression.NewBuilder().WithKeyCondition(expression.Key("ownerUserId").Equal(expression.Value(userID))).Build()
	if err != nil {
		return nil, false, err
	}
	in := &dynamodb.QueryInput{
		TableName: aws.String(t.name), IndexName: aws.String(triggersByUser),
		KeyConditionExpression: kc.KeyCondition(), ExpressionAttributeNames: kc.Names(), ExpressionAttributeValues: kc.Values(),
		ScanIndexForward: aws.Bool(false), Limit: aws.Int32(int32(limit + 1)),
	}
	if after != nil {
		in.ExclusiveStartKey = triggerKey(after.ID)
		in.ExclusiveStartKey["ownerUserId"] = S(userID)
		in.ExclusiveStartKey["listedAt"] = S(listedAt(after.CreatedAt))
	}
	for {
		out, err := t.client.Query(ctx, in)
		if err != nil {
			return nil, false, failed("list triggers", err)
		}
		for _, item := range out.Items {
			tr, err := decodeTrigger(item)
			var invalid *InvalidTriggerError
			switch {
			case errors.As(err, &invalid) && !keep(invalid.Trigger()):
				continue // not the caller's: it does not exist for them
			case err != nil:
				return nil, false, err
			case !keep(tr):
				continue
			}
			if len(page) == limit {
				return page, true, nil
			}
			page = append(page, tr)
		}
		if len(out.LastEvaluatedKey) == 0 {
			return page, false, nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}
