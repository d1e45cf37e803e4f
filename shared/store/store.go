// Package store is the DynamoDB adapter: the one table of the contract, its
// fixed item shapes, and the transaction that writes a new session together
// with its operation ledger row. It is the only package that calls DynamoDB.
package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"

	"github.com/cloud-agent/control-plane/shared/invocation"
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

// failed maps an error the SDK gave up on: what the SDK itself retries
// (throttling, 5xx, a dropped or timed-out connection) is
// service_unavailable, to be tried again later; anything else (a missing
// table, a refused permission, a malformed request) is internal_error.
func failed(op string, err error) error {
	err = fmt.Errorf("%s: %w", op, err)
	if errors.Is(err, context.DeadlineExceeded) || retry.IsErrorRetryables(retry.DefaultRetryables).IsErrorRetryable(err) == aws.TrueTernary {
		return errBusy(err)
	}
	return problem.Wrap(problem.InternalError, "An unexpected error occurred.", err)
}

// transientReasons are the cancellation reasons of a transaction that a
// later try may not meet.
var transientReasons = []string{"ThrottlingError", "ProvisionedThroughputExceeded", "RequestLimitExceeded"}

// reason is the code of a canceled transaction's reason for item i, or "".
func reason(tce *types.TransactionCanceledException, i int) string {
	if i < len(tce.CancellationReasons) && tce.CancellationReasons[i].Code != nil {
		return *tce.CancellationReasons[i].Code
	}
	return ""
}

// transient reports whether a canceled transaction was refused for a
// reason that a later try may not meet (throttling).
func transient(tce *types.TransactionCanceledException) bool {
	for i := range tce.CancellationReasons {
		if slices.Contains(transientReasons, reason(tce, i)) {
			return true
		}
	}
	return false
}

// errBusy is the service_unavailable answer to a write that the table
// refused for now.
func errBusy(cause error) error {
	return problem.Wrap(problem.ServiceUnavailable, "The service is temporarily unavailable. Try again shortly.", cause)
}

// PutSession writes a new session on its own, only where no item has its
// key: ErrSessionExists otherwise.
func (t *Table) PutSession(ctx context.Context, rec *session.Record) error {
	_, err := t.client.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(t.name), Item: session.Encode(rec), ConditionExpression: aws.String(sessionIsNew),
	})
	var ccf *types.ConditionalCheckFailedException
	switch {
	case errors.As(err, &ccf):
		return ErrSessionExists
	case err != nil:
		return failed("put session", err)
	}
	return nil
}

// CreateSession writes a new session and its ledger row in one
// transaction, all or nothing: the session only where no item has its key,
// the row only where none exists or the existing one has expired by now.
// An advance, when given, goes in the same transaction (a trigger's slot
// moved on with the session it started). When the row exists the error is
// ErrLedgerExists and existing is the row as the refusal found it, or nil
// when the refusal did not carry it (a transaction conflict): read it then.
func (t *Table) CreateSession(ctx context.Context, rec *session.Record, row session.LedgerRow, now time.Time, adv *Advance) (existing *session.LedgerRow, err error) {
	cond := expression.AttributeNotExists(expression.Name("PK")).Or(
		expression.Name("expiresAt").LessThanEqual(expression.Value(now.Unix())))
	return t.writeSessionAndRow(ctx, rec, &row, cond, adv)
}

// ReplaceLedger starts afresh the session of an in-progress row whose lease
// has lapsed, or of a failed row: the session is written with the row's
// session id, and the row replaced, on the condition that its status,
// fingerprint, session id and lease are still those of old; an advance, when
// given, goes in the same transaction.
func (t *Table) ReplaceLedger(ctx context.Context, rec *session.Record, row session.LedgerRow, old *session.LedgerRow, adv *Advance) (existing *session.LedgerRow, err error) {
	var lease any
	if !old.LeaseUntil.IsZero() {
		lease = old.LeaseUntil.UnixMilli()
	}
	cond := unchanged("status", old.Status).
		And(unchanged("fingerprint", old.Fingerprint)).
		And(unchanged("sessionId", old.SessionID)).
		And(unchanged("leaseUntil", lease))
	return t.writeSessionAndRow(ctx, rec, &row, cond, adv)
}

// unchanged is the condition that an attribute still holds v, or, when v
// is "" (a string), is still unset: absent, NULL or the empty string, as
// the codec reads it; when v is nil (a number), absent or NULL. (A number
// is never compared with "": the embedded endpoint refuses that.)
func unchanged(name string, v any) expression.ConditionBuilder {
	n := expression.Name(name)
	unset := expression.AttributeNotExists(n).Or(expression.AttributeType(n, expression.Null))
	switch v {
	case nil:
		return unset
	case "":
		return unset.Or(n.Equal(expression.Value("")))
	}
	return n.Equal(expression.Value(v))
}

const sessionIsNew = "attribute_not_exists(PK)"

func (t *Table) writeSessionAndRow(ctx context.Context, rec *session.Record, row *session.LedgerRow, rowCond expression.ConditionBuilder, adv *Advance) (*session.LedgerRow, error) {
	cond, err := expression.NewBuilder().WithCondition(rowCond).Build()
	if err != nil {
		return nil, err
	}
	items := []types.TransactWriteItem{
		{Put: &types.Put{
			TableName:           aws.String(t.name),
			Item:                session.Encode(rec),
			ConditionExpression: aws.String(sessionIsNew),
		}},
		{Put: &types.Put{
			TableName:                           aws.String(t.name),
			Item:                                session.EncodeLedger(row),
			ConditionExpression:                 cond.Condition(),
			ExpressionAttributeNames:            cond.Names(),
			ExpressionAttributeValues:           cond.Values(),
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		}},
	}
	if adv != nil {
		more, err := adv.items(t.name, rec.SessionID)
		if err != nil {
			return nil, err
		}
		items = append(items, more...)
	}
	_, err = t.client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
	return transactionError(err)
}

// transactionError maps a refused session-and-ledger transaction (items:
// the session, its row, and a trigger's advance and its run if any). A failed condition
// on the session means its key is taken: its id is new, so by an earlier
// attempt of this same write whose answer was lost, or, for a replaced row,
// by the start that replaced it first. A failed condition or a conflict on
// the advance means the trigger moved on. A conflict or a failed condition
// on the ledger row means the row exists (real DynamoDB answers concurrent
// transactions on one item with TransactionConflict), and a failed
// condition carries the row. Anything else is a fault.
func transactionError(err error) (*session.LedgerRow, error) {
	if err == nil {
		return nil, nil
	}
	var tce *types.TransactionCanceledException
	if !errors.As(err, &tce) {
		var conflict *types.TransactionConflictException
		if errors.As(err, &conflict) {
			return nil, ErrLedgerExists
		}
		return nil, failed("create session", err)
	}
	code := func(i int) string { return reason(tce, i) }
	switch {
	case code(0) == "ConditionalCheckFailed":
		return nil, ErrSessionExists
	case refusedFrom(tce, 2):
		// The advance or the slot's run (items 2 and on) failed a
		// condition or met another transaction: the trigger moved.
		return nil, ErrTriggerMoved
	case code(1) == "ConditionalCheckFailed":
		if item := tce.CancellationReasons[1].Item; len(item) > 0 {
			if row, err := session.DecodeLedger(item); err == nil {
				return row, ErrLedgerExists
			}
		}
		return nil, ErrLedgerExists
	case code(1) == "TransactionConflict" || code(0) == "TransactionConflict":
		return nil, ErrLedgerExists
	case transient(tce):
		return nil, errBusy(err)
	}
	return nil, failed("create session", err)
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
		return nil, failed("get item", err)
	}
	if len(out.Item) == 0 {
		return nil, ErrNotFound
	}
	return out.Item, nil
}
