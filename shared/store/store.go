// Package store is the DynamoDB adapter, the only package that calls
// DynamoDB: the one table of the contract, the transaction that writes a
// new session together with its operation ledger row (this file), the
// triggers' items, reads and writes (trigger_*.go, advance.go, due.go),
// their runs (run_item.go, runs.go), a webhook delivery's read, marker
// and counter (delivery.go), the reads of many items at once (batch.go:
// environments, sessions' outcomes) and the scan of every item (scan.go).
// Every item is read with AttrReader; every error of the SDK is
// read by refusalOf (errors.go); every key is built in keys.go, or beside
// its codec (SessionKey, LedgerKey).
package store

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"

	"github.com/cloud-agent/control-plane/shared/invocation"
	"github.com/cloud-agent/control-plane/shared/ledger"
	"github.com/cloud-agent/control-plane/shared/session"
)

// Counting is a client option that counts every DynamoDB operation the
// client sends against the counter in the operation's context.
func Counting(o *dynamodb.Options) {
	o.APIOptions = append(o.APIOptions, func(st *middleware.Stack) error {
		return st.Initialize.Add(middleware.InitializeMiddlewareFunc("RequestCount",
			func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				invocation.CountRequest(ctx)
				return next.HandleInitialize(ctx, in)
			}), middleware.Before)
	})
}

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

// PutSession writes a new session without a ledger row, only where no
// item has its key: ErrSessionExists otherwise. What goes beside it, when
// given, its launch items and its live entry go in the same transaction
// (newSession).
func (t *Table) PutSession(ctx context.Context, rec *session.Record, beside Beside) error {
	put, launch, err := newSession(t.name, rec, beside)
	if err != nil {
		return err
	}
	if beside == nil && launch == nil {
		_, err := t.client.PutItem(ctx, &dynamodb.PutItemInput{
			TableName: put.Put.TableName, Item: put.Put.Item, ConditionExpression: put.Put.ConditionExpression,
		})
		return putSessionError(err, nil)
	}
	items := []types.TransactWriteItem{put}
	if beside != nil {
		items = append(items, beside.items(t.name, rec)...)
	}
	_, err = t.client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: append(items, launch...)})
	return putSessionError(err, beside)
}

// CreateSession writes a new session and its ledger row in one
// transaction, all or nothing: the session only where no item has its key,
// the row only where none exists or the existing one has expired by now.
// An advance, when given, goes in the same transaction (a trigger's slot
// moved on with the session it started). When the row exists the error is
// ErrLedgerExists and existing is the row as the refusal found it, or nil
// when the refusal did not carry it (a transaction conflict): read it then.
func (t *Table) CreateSession(ctx context.Context, rec *session.Record, row ledger.Row, now time.Time, adv Beside) (existing *ledger.Row, err error) {
	var e expr
	cond := e.absentOrExpired(now)
	return t.writeSessionAndRow(ctx, rec, &row, &e, cond, adv)
}

// ReplaceLedger starts afresh the session of an in-progress row whose lease
// has lapsed, or of a failed row: the session is written with the row's
// session id, and the row replaced, on the condition that its status,
// fingerprint, session id and lease are still those of old; an advance, when
// given, goes in the same transaction.
func (t *Table) ReplaceLedger(ctx context.Context, rec *session.Record, row ledger.Row, old *ledger.Row, adv Beside) (existing *ledger.Row, err error) {
	var lease types.AttributeValue
	if !old.LeaseUntil.IsZero() {
		lease = N(old.LeaseUntil.UnixMilli())
	}
	var e expr
	cond := and(e.unchanged("status", S(old.Status)), e.unchanged("fingerprint", S(old.Fingerprint)),
		e.unchanged("sessionId", S(old.SessionID)), e.unchanged("leaseUntil", lease))
	return t.writeSessionAndRow(ctx, rec, &row, &e, cond, adv)
}

const sessionIsNew = "attribute_not_exists(PK)"

// writeSessionAndRow writes the session, its row on the condition
// rowCond (whose names and values e holds), what goes beside them and
// the session's launch items and live entry, last.
func (t *Table) writeSessionAndRow(ctx context.Context, rec *session.Record, row *ledger.Row, e *expr, rowCond string, adv Beside) (*ledger.Row, error) {
	put, launch, err := newSession(t.name, rec, adv)
	if err != nil {
		return nil, err
	}
	items := []types.TransactWriteItem{put,
		{Put: &types.Put{
			TableName:                           aws.String(t.name),
			Item:                                EncodeLedger(row),
			ConditionExpression:                 &rowCond,
			ExpressionAttributeNames:            e.names,
			ExpressionAttributeValues:           e.values,
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		}},
	}
	if adv != nil {
		items = append(items, adv.items(t.name, rec)...)
	}
	return transactionError(t.transact(ctx, append(items, launch...)), adv)
}

// putSessionError maps the answer to a session written without a ledger
// row (items: the session, then what goes beside it, if any): a failed
// condition on the session means its key is taken; a refusal of what goes
// beside it is what that says it is.
func putSessionError(err error, beside Beside) error {
	r := refusalOf(err)
	switch {
	case err == nil:
		return nil
	case r.on(0, condition):
		return ErrSessionExists
	}
	if beside != nil {
		if err := beside.refused(r, 1); err != nil {
			return err
		}
	}
	return r.fault("put session")
}

// GetSession reads a session, strongly consistent. A record that does not
// decode is a *InvalidSessionError.
func (t *Table) GetSession(ctx context.Context, sessionID string) (*session.Record, error) {
	item, err := t.get(ctx, SessionKey(sessionID))
	if err != nil {
		return nil, err
	}
	return DecodeSession(item)
}

// GetLedger reads a user's ledger row for an operation key, strongly
// consistent. An expired row is returned as it is: the caller judges it.
func (t *Table) GetLedger(ctx context.Context, userID, operationKey string) (*ledger.Row, error) {
	item, err := t.get(ctx, LedgerKey(userID, operationKey))
	if err != nil {
		return nil, err
	}
	return DecodeLedger(item)
}

func (t *Table) get(ctx context.Context, key Item) (Item, error) {
	out, err := t.client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(t.name), Key: key, ConsistentRead: aws.Bool(true)})
	if err != nil {
		return nil, failed("get item", err)
	}
	if len(out.Item) == 0 {
		return nil, ErrNotFound
	}
	return out.Item, nil
}
