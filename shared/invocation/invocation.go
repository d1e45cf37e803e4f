// Package invocation gathers what one invocation writes on its one log
// line besides its outcome: the DynamoDB requests it made (the store's
// client counts them), the warnings met on the way (a settings refresh
// that failed, a setting ignored), the members its code notes, and its metrics, which the line carries
// in CloudWatch Embedded Metric Format. The invocation puts a Record in its
// context (Metrics.Begin in an execution environment, With outside any);
// the code it calls adds to it.
package invocation

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

type key struct{}

// Record is what an invocation gathered so far.
type Record struct {
	requests atomic.Int64
	// env is the execution environment whose metrics the line carries;
	// nil for none. cold is whether the invocation is its first.
	env      *Metrics
	cold     bool
	mu       sync.Mutex
	warnings []string
	metrics  []Metric
	notes    []slog.Attr
}

// With returns a context that carries a new record outside any execution
// environment: its line carries no metrics (Metrics.Begin makes one that
// does).
func With(ctx context.Context) (context.Context, *Record) {
	return with(ctx, &Record{})
}

func with(ctx context.Context, r *Record) (context.Context, *Record) {
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

// Add adds metrics to the context's record, if it has one.
func Add(ctx context.Context, metrics ...Metric) {
	if r, ok := ctx.Value(key{}).(*Record); ok {
		r.mu.Lock()
		r.metrics = append(r.metrics, metrics...)
		r.mu.Unlock()
	}
}

// Note adds members to the line of the context's record, if it has one:
// what the code met that the line names (a delivery's trigger and event),
// never a body, a secret or a stored item.
func Note(ctx context.Context, attrs ...slog.Attr) {
	if r, ok := ctx.Value(key{}).(*Record); ok {
		r.mu.Lock()
		r.notes = append(r.notes, attrs...)
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

// Attrs are the members the record adds to the invocation's one line, as
// of now: dynamodbRequests, what Note added, warnings when there are any, and, in an
// execution environment, the metrics in Embedded Metric Format with
// timestamp now (a metric that breaks the format's rules is left out, and
// a warning says so).
func (r *Record) Attrs(now time.Time) []slog.Attr {
	requests := r.Requests()
	r.mu.Lock()
	attrs := append([]slog.Attr{slog.Int("dynamodbRequests", requests)}, r.notes...)
	r.mu.Unlock()
	warnings := r.Warnings()
	var metrics []slog.Attr
	if r.env != nil {
		r.mu.Lock()
		all := append([]Metric{Count(ColdStart, boolValue(r.cold)), Count(DynamoDBRequests, requests)}, r.metrics...)
		r.mu.Unlock()
		var left []string
		metrics, left = render(now, Dimension{DimFunction, r.env.function}, Dimension{DimVersion, r.env.version}, all)
		warnings = append(warnings, left...)
	}
	if len(warnings) > 0 {
		attrs = append(attrs, slog.Any("warnings", warnings))
	}
	return append(attrs, metrics...)
}

func boolValue(b bool) int {
	if b {
		return 1
	}
	return 0
}
