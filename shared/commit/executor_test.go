package commit_test

import (
	"context"
	"errors"
	"testing"

	"github.com/cloud-agent/control-plane/shared/commit"
	"github.com/cloud-agent/control-plane/shared/problem"
)

var (
	errMoved = errors.New("moved")
	errOther = errors.New("a fault")
	errSpent = problem.New(problem.ServiceUnavailable, "It kept changing.")
)

// TestAgain: a try whose read moved is tried again, Tries times in all,
// then the budget's error; anything else ends it at once.
func TestAgain(t *testing.T) {
	for _, row := range []struct {
		rule  string
		moves int   // how many tries meet a move before one does not
		last  error // what that one returns
		tries int
		want  error
	}{
		{"the first try's answer", 0, nil, 1, nil},
		{"a fault ends it", 0, errOther, 1, errOther},
		{"a move, then an answer", 1, nil, 2, nil},
		{"moves, then a fault", commit.Tries - 1, errOther, commit.Tries, errOther},
		{"every try moved", commit.Tries, nil, commit.Tries, errSpent},
	} {
		t.Run(row.rule, func(t *testing.T) {
			tries := 0
			v, err := commit.Again(t.Context(), errMoved, errSpent, func() (int, error) {
				tries++
				if tries <= row.moves {
					return -1, errMoved
				}
				return tries, row.last
			})
			if tries != row.tries || !errors.Is(err, row.want) || row.want == nil && err != nil {
				t.Fatalf("%d tries, %v; want %d, %v", tries, err, row.tries, row.want)
			}
			if err == nil && v != tries {
				t.Errorf("value %d, want the last try's %d", v, tries)
			}
		})
	}
}

// TestAgainStopped: a context that ends during a pause ends the tries with
// the budget's error, its cause the context's.
func TestAgainStopped(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	tries := 0
	_, err := commit.Again(ctx, errMoved, errSpent, func() (int, error) {
		tries++
		cancel()
		return 0, errMoved
	})
	var pe *problem.Error
	if tries != 1 || !errors.Is(err, context.Canceled) || !errors.As(err, &pe) || pe != errSpent {
		t.Fatalf("%d tries, %v", tries, err)
	}
}
