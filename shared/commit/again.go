package commit

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/cloud-agent/control-plane/shared/problem"
)

// Tries is the one budget of a write conditioned on what it read (a
// trigger, a ledger row) that found it moved: it is read, judged and
// written this many times in all.
const Tries = 3

// pause is the shortest wait between two tries. Each wait is a random
// while from it to five times it, so that a transaction in flight can land
// and writers that met do not meet again at once.
const pause = 5 * time.Millisecond

// Again runs try, and again while its error is moved, with a pause
// between tries, at most Tries times. Once the budget is spent the error
// is spent; when ctx ends during a pause, spent wrapped with ctx's
// error.
func Again[T any](ctx context.Context, moved error, spent *problem.Error, try func() (T, error)) (T, error) {
	var zero T
	for i := range Tries {
		if i > 0 {
			select {
			case <-time.After(pause + rand.N(4*pause)):
			case <-ctx.Done():
				return zero, fmt.Errorf("%w: %w", spent, ctx.Err())
			}
		}
		v, err := try()
		if !errors.Is(err, moved) {
			return v, err
		}
	}
	return zero, spent
}
