// Package schedule runs the template's schedules locally, as EventBridge
// would: Run invokes the function of each schedule with a rate(N unit)
// expression at every period (cron() schedules are not run locally), with
// the Scheduled Event that Event builds (the one the gateway's
// POST /_local/schedule/<LogicalId> sends too), through the rule target's
// InputTransformer when it has one. For development and tests only.
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

// Run invokes the function of each rate schedule at the start of every
// period, as EventBridge would, until ctx ends; wait returns once every
// invocation it started has returned. Schedules due at the same time
// invoke their functions at once, and invoke (lambdarun's emulator takes
// one invocation at a time) runs those of one function one after another.
func Run(ctx context.Context, fns []template.Function, invoke lambdarun.Invoker, log *slog.Logger) (wait func()) {
	var wg sync.WaitGroup
	for _, fn := range fns {
		for _, sc := range fn.Schedules {
			every, err := parseRate(sc.Expression)
			if err != nil {
				log.Warn("schedule not run locally", "function", fn.LogicalID, "schedule", sc.ID, "reason", err.Error())
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
					invokeAt(ctx, fn.LogicalID, sc, next, invoke, log)
				}
			})
		}
	}
	return wg.Wait
}

// invokeAt invokes the function fn with what the schedule sends at t, and
// logs the result.
func invokeAt(ctx context.Context, fn string, sc template.Schedule, t time.Time, invoke lambdarun.Invoker, log *slog.Logger) {
	ev, err := Target(sc, t)
	if err == nil {
		ev, err = invoke(ctx, fn, ev)
	}
	if err != nil {
		log.Error("scheduled invocation failed", "function", fn, "schedule", sc.ID, "error", err.Error())
		return
	}
	log.Info("scheduled invocation", "function", fn, "schedule", sc.ID, "result", string(ev))
}

// Event is the EventBridge "Scheduled Event" of the rule id at t.
func Event(id string, t time.Time) []byte {
	b, _ := json.Marshal(map[string]any{
		"version": "0", "id": uuid.NewString(), "detail-type": "Scheduled Event", "source": "aws.events",
		"account": "000000000000", "time": t.UTC().Format("2006-01-02T15:04:05Z"), "region": "us-east-1",
		"resources": []string{"arn:aws:events:us-east-1:000000000000:rule/" + id}, "detail": map[string]any{},
	})
	return b
}

// Target is what the schedule's target receives at t: the Scheduled Event,
// through the target's InputTransformer when it has one. Locally the
// transformer takes top-level paths ($.name) only, and each placeholder
// stands alone: "<name>" or <name>, the value as JSON.
func Target(sc template.Schedule, t time.Time) ([]byte, error) {
	ev := Event(sc.ID, t)
	if sc.Input == nil {
		return ev, nil
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(ev, &members); err != nil {
		return nil, err
	}
	out := sc.Input.Template
	for name, path := range sc.Input.Paths {
		member, ok := strings.CutPrefix(path, "$.")
		v, found := members[member]
		if !ok || !found || strings.ContainsAny(member, ".[*") {
			return nil, fmt.Errorf("schedule %s: the path %q of <%s> is not a member of the Scheduled Event", sc.ID, path, name)
		}
		out = strings.ReplaceAll(out, `"<`+name+`>"`, "<"+name+">")
		out = strings.ReplaceAll(out, "<"+name+">", string(v))
	}
	if !json.Valid([]byte(out)) {
		return nil, fmt.Errorf("schedule %s: the input template does not give JSON: %s", sc.ID, out)
	}
	return []byte(out), nil
}
