package problem

import (
	"context"
	"math/rand/v2"
	"time"
)

// Pause waits a random while from d to 5d before an item that moved under
// a conditioned write (a trigger, a ledger row) is read again, so
// that a transaction in flight on it can land and writers that met do not
// meet again at once. When ctx ends first the error is
// service_unavailable with detail.
func Pause(ctx context.Context, d time.Duration, detail string) error {
	select {
	case <-time.After(d + rand.N(4*d)):
		return nil
	case <-ctx.Done():
		return Wrap(ServiceUnavailable, detail, ctx.Err())
	}
}
