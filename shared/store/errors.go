package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/cloud-agent/control-plane/shared/ledger"
	"github.com/cloud-agent/control-plane/shared/problem"
)

// Errors the caller acts on. Storage faults are problem errors with code
// service_unavailable (a later try may pass) or internal_error.
var (
	// ErrNotFound: no such item.
	ErrNotFound = errors.New("store: not found")
	// ErrSessionExists: an item already has the new session's key.
	ErrSessionExists = errors.New("store: session exists")
	// ErrLedgerExists: the operation key's ledger row exists and has not
	// expired (or a concurrent transaction holds it); read it and judge it.
	ErrLedgerExists = ledger.ErrRowExists
	// ErrTriggerLimit: the owner already has the most triggers allowed.
	ErrTriggerLimit = errors.New("store: trigger limit reached")
	// ErrTriggerMoved: the trigger is gone, or it changed since it was
	// read (another invocation recorded its slot, say): read it again.
	ErrTriggerMoved = errors.New("store: trigger moved on")
	// ErrEnvironmentGone: a trigger's write names an environment that is
	// gone.
	ErrEnvironmentGone = errors.New("store: environment gone")
)

// refused is why an item of a write was refused.
type refused int

const (
	notRefused   refused = iota
	condition            // its condition failed
	conflict             // it met another transaction
	throttled            // the table refused it for now
	otherRefusal         // a reason that no later try mends (a validation error, say)
)

// reasons are the cancellation reasons of a transaction, by their codes.
var reasons = map[string]refused{
	"None":                          notRefused,
	"ConditionalCheckFailed":        condition,
	"TransactionConflict":           conflict,
	"ThrottlingError":               throttled,
	"ProvisionedThroughputExceeded": throttled,
	"RequestLimitExceeded":          throttled,
}

// refusal is what an error of the SDK says about a write, read once by
// refusalOf: each operation decides on it, without the SDK's types.
type refusal struct {
	err error
	// items are the reasons, by item, of a canceled transaction; a single
	// write whose condition failed has one, condition.
	items []refused
	// old is, by item of a canceled transaction, what a failed condition
	// handed back (ALL_OLD), when it did.
	old []Item
	// conflicted: the write met another transaction, which item not said.
	conflicted bool
	// retryable: what the SDK itself retries (throttling, 5xx, a dropped
	// or timed-out connection), given up on.
	retryable bool
}

// refusalOf reads an error of the SDK; the zero refusal for nil.
func refusalOf(err error) refusal {
	r := refusal{err: err}
	var tce *types.TransactionCanceledException
	var ccf *types.ConditionalCheckFailedException
	var tc *types.TransactionConflictException
	switch {
	case err == nil:
		return r
	case errors.As(err, &tce):
		for _, c := range tce.CancellationReasons {
			why, known := reasons[aws.ToString(c.Code)]
			if !known {
				why = otherRefusal
			}
			r.items = append(r.items, why)
			r.old = append(r.old, c.Item)
		}
	case errors.As(err, &ccf):
		r.items = []refused{condition}
	case errors.As(err, &tc):
		r.conflicted = true
	}
	r.retryable = errors.Is(err, context.DeadlineExceeded) ||
		retry.IsErrorRetryables(retry.DefaultRetryables).IsErrorRetryable(err) == aws.TrueTernary
	return r
}

// on reports whether item i was refused for why.
func (r refusal) on(i int, why refused) bool { return i < len(r.items) && r.items[i] == why }

// refusedFrom reports whether an item, from index from on, was refused
// for one of whys.
func (r refusal) refusedFrom(from int, whys ...refused) bool {
	for i := from; i < len(r.items); i++ {
		for _, why := range whys {
			if r.items[i] == why {
				return true
			}
		}
	}
	return false
}

// fault is the error of a write or read that no rule of the operation
// explains: service_unavailable when a later try may pass (throttled,
// or what the SDK retries), else internal_error (a missing table, a
// refused permission, a malformed request); nil for no error.
func (r refusal) fault(op string) error {
	if r.err == nil {
		return nil
	}
	err := fmt.Errorf("%s: %w", op, r.err)
	if r.retryable || r.refusedFrom(0, throttled) {
		return errBusy(err)
	}
	return problem.Wrap(problem.InternalError, "An unexpected error occurred.", err)
}

// failed is the fault of an operation that no refusal explains (a read).
func failed(op string, err error) error { return refusalOf(err).fault(op) }

// errBusy is the service_unavailable answer to a write that the table
// refused for now.
func errBusy(cause error) error {
	return problem.Wrap(problem.ServiceUnavailable, "The service is temporarily unavailable. Try again shortly.", cause)
}

// transactionError maps the answer to a session-and-ledger transaction
// (items: the session, its row, then what goes beside them, if any). A
// failed condition on the session means its key is taken: its id is new,
// so by an earlier attempt of this same write whose answer was lost, or,
// for a replaced row, by the start that replaced it first. A refusal of
// what goes beside them is what that says it is (a trigger's advance or
// check: the trigger moved on). A conflict or a failed condition on the
// ledger row means the row exists (real DynamoDB answers concurrent
// transactions on one item with TransactionConflict), and a failed
// condition carries the row. Anything else is a fault.
func transactionError(err error, beside Beside) (*ledger.Row, error) {
	r := refusalOf(err)
	switch {
	case err == nil:
		return nil, nil
	case r.on(0, condition):
		return nil, ErrSessionExists
	}
	if beside != nil {
		if err := beside.refused(r, 2); err != nil {
			return nil, err
		}
	}
	switch {
	case r.on(1, condition):
		if item := r.old[1]; len(item) > 0 {
			if row, err := DecodeLedger(item); err == nil {
				return row, ErrLedgerExists
			}
		}
		return nil, ErrLedgerExists
	case r.conflicted || r.on(0, conflict) || r.on(1, conflict):
		return nil, ErrLedgerExists
	}
	return nil, r.fault("create session")
}
