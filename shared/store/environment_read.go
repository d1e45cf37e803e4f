package store

import (
	"context"
	"errors"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/cloud-agent/control-plane/shared/environment"
)

// GetEnvironment reads an environment, strongly consistent; ErrNotFound
// when there is none.
func (t *Table) GetEnvironment(ctx context.Context, id string) (*environment.Environment, error) {
	item, err := t.get(ctx, environmentKey(id))
	if err != nil {
		return nil, err
	}
	return decodeEnvironment(item)
}

// DefaultEnvironment is the id of the default environment of the owner of
// user's environments in org ("" for the user's own): "" for none.
// Strongly consistent.
func (t *Table) DefaultEnvironment(ctx context.Context, userID, orgID string) (string, error) {
	item, err := t.get(ctx, defaultKey(userID, orgID))
	switch {
	case errors.Is(err, ErrNotFound):
		return "", nil
	case err != nil:
		return "", err
	}
	e, err := decodeEnvironment(item)
	if err != nil {
		return "", err
	}
	return e.ID, nil
}

// ListEnvironments returns up to limit environments of the owner of
// user's environments in org ("" for the user's own), newest first, after
// the position (nil: from the start); more says whether others follow.
// The index is eventually consistent: an environment created a moment ago
// may show only a moment later.
func (t *Table) ListEnvironments(ctx context.Context, userID, orgID string, after *Position, limit int) (page []*environment.Environment, more bool, err error) {
	var x expr
	cond := x.name("environmentOwner") + " = " + x.value("owner", S(ownerOf(userID, orgID)))
	in := &dynamodb.QueryInput{
		TableName: aws.String(t.name), IndexName: aws.String(environmentsByOwner),
		KeyConditionExpression: &cond, ExpressionAttributeNames: x.names, ExpressionAttributeValues: x.values,
		ScanIndexForward: aws.Bool(false), Limit: aws.Int32(int32(limit + 1)),
	}
	if after != nil {
		in.ExclusiveStartKey = environmentKey(after.ID)
		in.ExclusiveStartKey["environmentOwner"] = S(ownerOf(userID, orgID))
		in.ExclusiveStartKey["environmentListedAt"] = S(listedAt(after.CreatedAt))
	}
	for {
		out, err := t.client.Query(ctx, in)
		if err != nil {
			return nil, false, failed("list environments", err)
		}
		for _, item := range out.Items {
			if len(page) == limit {
				return page, true, nil
			}
			e, err := decodeEnvironment(item)
			if err != nil {
				return nil, false, err
			}
			page = append(page, e)
		}
		if len(out.LastEvaluatedKey) == 0 {
			return page, false, nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}

// ReadEnvironments reads what the starts of sources resolve their
// environments from (environment.Source.Reads): the named environments and
// the owners' default pointers, strongly consistent, in one BatchGetItem
// for up to 100 items (batchGet). What does not exist is not found; an
// item that does not decode is a fault.
func (t *Table) ReadEnvironments(ctx context.Context, sources []environment.Source) (*environment.Found, error) {
	var keys []Item
	found := &environment.Found{ByID: map[string]*environment.Environment{}, Defaults: map[environment.Owner]*environment.Environment{}}
	for _, s := range sources {
		found.Reading(s)
		named, defaults := s.Reads()
		if named != "" {
			keys = append(keys, environmentKey(named))
		}
		for _, o := range defaults {
			keys = append(keys, defaultKey(o.UserID, o.OrgID))
		}
	}
	err := t.batchGet(ctx, "read environments", keys, nil, nil, func(item Item) error {
		e, err := decodeEnvironment(item)
		if err != nil {
			return err
		}
		if item["SK"].(*types.AttributeValueMemberS).Value == defaultSortKey {
			found.Defaults[e.DefaultOwner()] = e
		} else {
			found.ByID[e.ID] = e
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return found, nil
}
