// Package store is the DynamoDB adapter: the one table of the contract, its
// fixed item shapes, and the transaction that writes a new session together
// with its operation ledger row. It is the only package that calls DynamoDB.
package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/cloud-agent/control-plane/shared/problem"
	"github.com/cloud-agent/control-plane/shared/session"
)

// Errors the caller acts on. Storage faults are problem errors with code
// service_unavailable.
var (
	// ErrNotFound: no such item.
	ErrNotFound = errors.New("store: not found")
	// ErrSessionExists: an item already has the new session's key.
	ErrSessionExists = errors.New("store: session exists")
	// ErrLedgerExists: the operation key's ledger row exists and has not
	// expired (or a concurrent transaction holds it); read it and judge it.
	ErrLedgerExists = errors.New("store: ledger row exists")
)

// Table is the sessions table.
type Table struct {
	client *dynamodb.Client
	name   string
}

// New returns the table name on the client. The client is built once per
// execution environment.
func New(client *dynamodb.Client, name string) *Table {
	return &Table{client: client, name: name}
}

func unavailable(op string, err error) error {
	return problem.Wrap(problem.ServiceUnavailable, "The service is temporarily unavailable. Try again shortly.", fmt.Errorf("%s: %w", op, err))
}

// CreateSession writes a new session; with a ledger row, the session and the
// row are written in one transaction, all or nothing: the session only where
// no item has its key, the row only where none exists or the existing one
// has expired by now.
func (t *Table) CreateSession(ctx context.Context, rec *session.Record, row *session.LedgerRow, now time.Time) error {
	sessionPut := &types.Put{
		TableName:           aws.String(t.name),
		Item:                session.Encode(rec),
		ConditionExpression: aws.String("attribute_not_exists(PK)"),
	}
	if row == nil {
		_, err := t.client.PutItem(ctx, &dynamodb.PutItemInput{
			TableName: sessionPut.TableName, Item: sessionPut.Item, ConditionExpression: sessionPut.ConditionExpression,
		})
		var ccf *types.ConditionalCheckFailedException
		switch {
		case errors.As(err, &ccf):
			return ErrSessionExists
		case err != nil:
			return unavailable("put session", err)
		}
		return nil
	}
	cond, err := expression.NewBuilder().WithCondition(
		expression.AttributeNotExists(expression.Name("PK")).Or(
			expression.Name("expiresAt").LessThanEqual(expression.Value(now.Unix())))).Build()
	if err != nil {
		return err
	}
	_, err = t.client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{
		TransactItems: []types.TransactWriteItem{
			{Put: sessionPut},
			{Put: &types.Put{
				TableName:                 aws.String(t.name),
				Item:                      session.EncodeLedger(row),
				ConditionExpression:       cond.Condition(),
				ExpressionAttributeNames:  cond.Names(),
				ExpressionAttributeValues: cond.Values(),
			}},
		},
	})
	return transactionError(err)
}

// transactionError maps a refused session-and-ledger transaction: a
// conflict or a failed condition on the ledger row means the row exists
// (real DynamoDB answers concurrent transactions on one item with
// TransactionConflict); a failed condition on the session means its key is
// taken; anything else is a fault.
func transactionError(err error) error {
	if err == nil {
		return nil
	}
	var tce *types.TransactionCanceledException
	if !errors.As(err, &tce) {
		var conflict *types.TransactionConflictException
		if errors.As(err, &conflict) {
			return ErrLedgerExists
		}
		return unavailable("create session", err)
	}
	reasons := tce.CancellationReasons
	code := func(i int) string {
		if i < len(reasons) && reasons[i].Code != nil {
			return *reasons[i].Code
		}
		return ""
	}
	switch {
	case code(1) == "ConditionalCheckFailed" || code(1) == "TransactionConflict" || code(0) == "TransactionConflict":
		return ErrLedgerExists
	case code(0) == "ConditionalCheckFailed":
		return ErrSessionExists
	}
	return unavailable("create session", err)
}

// GetSession reads a session, strongly consistent. A record that does not
// decode is a *session.InvalidRecordError.
func (t *Table) GetSession(ctx context.Context, sessionID string) (*session.Record, error) {
	item, err := t.get(ctx, session.Key(sessionID))
	if err != nil {
		return nil, err
	}
	return session.Decode(item)
}

// GetLedger reads a user's ledger row for an operation key, strongly
// consistent. An expired row is returned as it is: the caller judges it.
func (t *Table) GetLedger(ctx context.Context, userID, operationKey string) (*session.LedgerRow, error) {
	item, err := t.get(ctx, session.LedgerKey(userID, operationKey))
	if err != nil {
		return nil, err
	}
	return session.DecodeLedger(item)
}

func (t *Table) get(ctx context.Context, key session.Item) (session.Item, error) {
	out, err := t.client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(t.name), Key: key, ConsistentRead: aws.Bool(true)})
	if err != nil {
		return nil, unavailable("get item", err)
	}
	if len(out.Item) == 0 {
		return nil, ErrNotFound
	}
	return out.Item, nil
}
