// Package reqcount counts the DynamoDB requests one invocation makes: the
// invocation puts a counter in its context, and the store's client adds to
// it for every operation it sends.
package reqcount

import (
	"context"
	"sync/atomic"
)

type key struct{}

// Counter counts requests.
type Counter struct{ n atomic.Int64 }

// Count is the number of requests so far.
func (c *Counter) Count() int { return int(c.n.Load()) }

// With returns a context that carries a new counter.
func With(ctx context.Context) (context.Context, *Counter) {
	c := &Counter{}
	return context.WithValue(ctx, key{}, c), c
}

// Add counts one request against the context's counter, if it has one.
func Add(ctx context.Context) {
	if c, ok := ctx.Value(key{}).(*Counter); ok {
		c.n.Add(1)
	}
}
