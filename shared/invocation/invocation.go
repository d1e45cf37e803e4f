// Package invocation gathers what one invocation writes on its one log
// line besides its outcome: the DynamoDB requests it made (the store's
// client counts them) and the warnings met on the way (a settings refresh
// that failed, a setting ignored). The invocation puts a Record in its
// context; the code it calls adds to it.
package invocation

import (
	"context"
	"sync"
	"sync/atomic"
)

type key struct{}

// Record is what an invocation gathered so far.
type Record struct {
	requests atomic.Int64
	mu       sync.Mutex
	warnings []string
}

// With returns a context that carries a new record.
func With(ctx context.Context) (context.Context, *Record) {
	r := &Record{}
	return context.WithValue(ctx, key{}, r), r
}

// CountRequest counts one DynamoDB request against the context's record,
// if it has one.
func CountRequest(ctx context.Context) {
	if r, ok := ctx.Value(key{}).(*Record); ok {
		r.requests.Add(1)
	}
}

// Warn adds a warning to the context's record, if it has one.
func Warn(ctx context.Context, warning string) {
	if r, ok := ctx.Value(key{}).(*Record); ok {
		r.mu.Lock()
		r.warnings = append(r.warnings, warning)
		r.mu.Unlock()
	}
}

// Requests is the number of DynamoDB requests so far.
func (r *Record) Requests() int { return int(r.requests.Load()) }

// Warnings are the warnings so far.
func (r *Record) Warnings() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.warnings...)
}
