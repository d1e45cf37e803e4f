package trigger

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/cloud-agent/control-plane/shared/problem"
)

// FuzzParseSchedule: parsing never panics; a refusal is an invalid_request
// problem about schedule.cron or schedule.timezone; a schedule's next slot
// is strictly after now, in UTC, a whole minute, and the only slot from now
// to it.
func FuzzParseSchedule(f *testing.F) {
	for _, seed := range [][2]string{
		{"* * * * *", "UTC"},
		{"30 2 * * *", "Europe/Berlin"},
		{"*/15 1-3 * * 0,7", "Australia/Lord_Howe"},
		{"0 0 29 2 *", "America/Santiago"},
		{"5/15 0 */2 jan-mar 5-7", "America/New_York"},
		{"0 0 30 2 *", "UTC"},
		{"TZ=UTC", "UTC"},
		{"@every 1m", "UTC"},
		{"0 0 ? * 1#2", "Local"},
		{"1-7/2 * L * 7/2", ""},
	} {
		f.Add(seed[0], seed[1])
	}
	at := time.Date(2026, 6, 15, 12, 34, 56, 789, time.UTC)
	f.Fuzz(func(t *testing.T, expr, zone string) {
		s, err := ParseSchedule(expr, zone, at)
		if err != nil {
			var p *problem.Error
			if !errors.As(err, &p) || p.Code != problem.InvalidRequest || !strings.HasPrefix(p.Detail, "schedule.") {
				t.Fatalf("ParseSchedule(%q, %q) = %v; want an invalid_request problem about the schedule", expr, zone, err)
			}
			return
		}
		next := s.Next(at)
		if !next.After(at) || next.Location() != time.UTC || !next.Truncate(time.Minute).Equal(next) {
			t.Fatalf("%q in %q: Next = %v; want a whole UTC minute after %v", expr, zone, next, at)
		}
		if slot, n := s.Latest(at, next); !slot.Equal(next) || n != 1 {
			t.Fatalf("%q in %q: Latest(now, Next) = %v, %d; want %v, 1", expr, zone, slot, n, next)
		}
	})
}
