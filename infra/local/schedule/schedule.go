// Package schedule runs the functions' Schedule events locally, as
// EventBridge would: Run invokes each function that has a rate(N unit)
// schedule at every period (cron() schedules are not run locally), with
// the Scheduled Event that Event builds and that the gateway's
// POST /_local/schedule/<LogicalId> sends too. For development and tests
// only.
package schedule

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/cloud-agent/control-plane/infra/local/lambdarun"
	"github.com/cloud-agent/control-plane/infra/template"
)

// parseRate reads a schedule expression of the form rate(N unit), the form
// the local stack runs; cron() expressions are not run locally (use
// POST /_local/schedule/<LogicalId>).
func parseRate(expr string) (time.Duration, error) {
	inner, ok := strings.CutPrefix(expr, "rate(")
	inner, ok2 := strings.CutSuffix(inner, ")")
	fields := strings.Fields(inner)
	if !ok || !ok2 || len(fields) != 2 {
		return 0, fmt.Errorf("%q is not rate(N unit)", expr)
	}
	n, err := strconv.Atoi(fields[0])
	if err != nil || n < 1 {
		return 0, fmt.Errorf("%q: the rate must be a positive whole number", expr)
	}
	units := map[string]time.Duration{"minute": time.Minute, "minutes": time.Minute, "hour": time.Hour, "hours": time.Hour, "day": 24 * time.Hour, "days": 24 * time.Hour}
	unit, ok := units[fields[1]]
	if !ok {
		return 0, fmt.Errorf("%q: unknown unit %q", expr, fields[1])
	}
	return time.Duration(n) * unit, nil
}

// Run invokes each function with a rate schedule at the start of
// every period, as EventBridge would, until ctx ends; wait returns once
// every invocation it started has returned.
func Run(ctx context.Context, fns []template.Function, invoke lambdarun.Invoker, log *slog.Logger) (wait func()) {
	var wg sync.WaitGroup
	for _, fn := range fns {
		for _, expr := range fn.Schedules {
			every, err := parseRate(expr)
			if err != nil {
				log.Warn("schedule not run locally", "function", fn.LogicalID, "reason", err.Error())
				continue
			}
			wg.Go(func() {
				for {
					next := time.Now().Truncate(every).Add(every)
					select {
					case <-ctx.Done():
						return
					case <-time.After(time.Until(next)):
					}
					out, err := invoke(ctx, fn.LogicalID, Event(fn.LogicalID, next))
					if err != nil {
						log.Error("scheduled invocation failed", "function", fn.LogicalID, "error", err.Error())
						continue
					}
					log.Info("scheduled invocation", "function", fn.LogicalID, "result", string(out))
				}
			})
		}
	}
	return wg.Wait
}

// Event is the EventBridge "Scheduled Event" of a function's schedule at
// t.
func Event(functionID string, t time.Time) []byte {
	b, _ := json.Marshal(map[string]any{
		"version": "0", "id": uuid.NewString(), "detail-type": "Scheduled Event", "source": "aws.events",
		"account": "000000000000", "time": t.UTC().Format("2006-01-02T15:04:05Z"), "region": "us-east-1",
		"resources": []string{"arn:aws:events:us-east-1:000000000000:rule/" + functionID + "-schedule"}, "detail": map[string]any{},
	})
	return b
}
