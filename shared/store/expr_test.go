package store

import (
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cloud-agent/control-plane/shared/trigger"
)

// TestExprPlaceholders: every name and value an expression registers is
// used by its text, and every placeholder its text uses is registered
// (DynamoDB refuses either), whatever is unset.
func TestExprPlaceholders(t *testing.T) {
	at := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name  string
		write func(e *expr) string
	}{
		{"advance of a trigger at version 3", func(e *expr) string {
			return e.runUpdate(trigger.Run{At: at, SessionID: "s", Status: trigger.StatusFired}, at.Add(time.Hour)) + " " +
				e.unchangedSince(&trigger.Trigger{Active: true, NextRunAt: at, Version: 3})
		}},
		{"advance of an older writer's trigger, failed", func(e *expr) string {
			return e.runUpdate(trigger.Run{At: at, Status: trigger.StatusFailed, Error: "invalid_request"}, at.Add(time.Hour)) + " " +
				e.unchangedSince(&trigger.Trigger{})
		}},
		{"a row unchanged, lease unset", func(e *expr) string {
			return and(e.unchanged("status", S("in_progress")), e.unchanged("fingerprint", S("")), e.unchanged("leaseUntil", nil))
		}},
		{"absent or expired", func(e *expr) string { return e.absentOrExpired(at) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			var e expr
			text := c.write(&e)
			for _, p := range slices.Concat(slices.Collect(maps.Keys(e.names)), slices.Collect(maps.Keys(e.values))) {
				if !strings.Contains(text, p) {
					t.Errorf("%s is not used by %q", p, text)
				}
			}
			for _, word := range strings.FieldsFunc(text, func(r rune) bool { return strings.ContainsRune(" (),=<+", r) }) {
				_, name := e.names[word]
				_, value := e.values[word]
				if (word[0] == '#' && !name) || (word[0] == ':' && !value) {
					t.Errorf("%s is used by %q but not registered", word, text)
				}
			}
		})
	}
}
