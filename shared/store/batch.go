package store

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// maxBatchKeys is the most keys DynamoDB reads in one BatchGetItem.
const maxBatchKeys = 100

// Keys DynamoDB leaves unprocessed (it was throttled) are read again at
// most batchTries times, after batchBackoff, doubling, as AWS advises;
// then the read is service_unavailable.
const (
	batchTries   = 3
	batchBackoff = 50 * time.Millisecond
)

// batchGet reads the items of keys (a key given twice is read once),
// strongly consistent, in one BatchGetItem for up to 100 keys, reading
// again, a few times, the keys DynamoDB leaves unprocessed; with projection (its names
// in names), only those attributes. Each item found is given to each, in
// no particular order; an item that is not found is not. op names the
// read in a fault; an error of each ends the read.
func (t *Table) batchGet(ctx context.Context, op string, keys []Item, projection *string, names map[string]string, each func(Item) error) error {
	keys = distinctKeys(keys)
	for tries := 0; len(keys) > 0; {
		n := min(len(keys), maxBatchKeys)
		out, err := t.client.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: map[string]types.KeysAndAttributes{
			t.name: {Keys: keys[:n], ConsistentRead: aws.Bool(true), ProjectionExpression: projection, ExpressionAttributeNames: names},
		}})
		if err != nil {
			return failed(op, err)
		}
		left := out.UnprocessedKeys[t.name].Keys
		if len(left) > 0 {
			if tries++; tries > batchTries {
				return errBusy(fmt.Errorf("%s: keys left unprocessed %d times", op, batchTries))
			}
			select {
			case <-ctx.Done():
				return failed(op, ctx.Err())
			case <-time.After(batchBackoff << (tries - 1)):
			}
		}
		keys = append(keys[n:], left...)
		for _, item := range out.Responses[t.name] {
			if err := each(item); err != nil {
				return err
			}
		}
	}
	return nil
}

// distinctKeys is keys without repeats (DynamoDB refuses a BatchGetItem
// that names a key twice), in their order.
func distinctKeys(keys []Item) []Item {
	seen := make(map[[2]string]bool, len(keys))
	var out []Item
	for _, k := range keys {
		pk, _ := k["PK"].(*types.AttributeValueMemberS)
		sk, _ := k["SK"].(*types.AttributeValueMemberS)
		if id := [2]string{pk.Value, sk.Value}; !seen[id] {
			seen[id] = true
			out = append(out, k)
		}
	}
	return out
}
