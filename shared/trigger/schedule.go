// Package trigger owns scheduled triggers: their schedules (five-field cron in
// an IANA time zone, with the contract's daylight-saving rules) and their
// slots. Package firing fires them.
package trigger

import (
	"math/bits"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	_ "time/tzdata" // zone data built into the binaries: the Lambda image may have none

	"github.com/robfig/cron/v3"

	"github.com/cloud-agent/control-plane/shared/problem"
)

// starBit is robfig's mark of a field written as a bare * (or */1): the
// field is unrestricted.
const starBit = 1 << 63

const (
	detailFields     = "schedule.cron must have five fields: minute, hour, day of month, month, day of week."
	detailDescriptor = "schedule.cron does not accept descriptors such as @daily or @every: write five fields."
	detailZonePrefix = "schedule.cron cannot name a time zone: use schedule.timezone."
	detailSyntax     = "schedule.cron is not a valid cron expression: the fields take minute 0-59, hour 0-23, " +
		"day of month 1-31, month 1-12 or jan-dec, and day of week 0-7 (0 and 7 are Sunday) or sun-sat, " +
		"as values, ranges (1-5), lists (1,15) and steps (*/10); ?, L, W and # are not supported."
	detailNever = "schedule.cron matches no time within five years."
	detailZone  = "schedule.timezone must be an IANA time zone name such as Europe/Berlin."
)

// dayNames are the day-of-week names robfig accepts, Sunday first.
var dayNames = []string{"sun", "mon", "tue", "wed", "thu", "fri", "sat"}

// Schedule is a valid five-field cron expression in a time zone.
//
// Its slots are the instants at which it fires: each wall time the cron
// matches, in the zone. A matching wall time skipped by a daylight-saving
// change fires at the end of the gap (once, however many skipped times
// match); a matching wall time that occurs twice fires at its first
// occurrence only, unless the hour field is unrestricted (robfig's star bit:
// a bare * or */1), when both fire.
type Schedule struct {
	expr string
	zone string
	loc  *time.Location
	spec *cron.SpecSchedule
}

// ParseSchedule validates a cron expression and an IANA zone name as of now
// (the five-years rule is judged from now). The caller passes "UTC" when the
// zone was left out; "", "Local" and the names only a machine's zoneinfo
// directory holds are errors. Errors are invalid_request problems.
func ParseSchedule(expr, zone string, now time.Time) (*Schedule, error) {
	spec, detail := parseCron(expr)
	if detail != "" {
		return nil, problem.New(problem.InvalidRequest, detail)
	}
	if zone == "" || zone == "Local" || machineZone(zone) {
		return nil, problem.New(problem.InvalidRequest, detailZone)
	}
	loc, err := loadZone(zone)
	if err != nil {
		return nil, problem.New(problem.InvalidRequest, detailZone)
	}
	s := &Schedule{expr: expr, zone: zone, loc: loc, spec: spec}
	if s.Next(now).IsZero() {
		return nil, problem.New(problem.InvalidRequest, detailNever)
	}
	return s, nil
}

// machineZone reports whether a zone name is one of the files a machine's
// zoneinfo directory may hold beside the IANA names: tzcode's localtime
// (the machine's own zone, Local by another name) and posixrules, and its
// posix/ and right/ trees (right/ counts leap seconds). time.LoadLocation
// reads that directory before the zone data built into the binaries, so
// such a name would pass on one machine and fail on another.
func machineZone(name string) bool {
	return name == "localtime" || name == "posixrules" || strings.HasPrefix(name, "posix/") || strings.HasPrefix(name, "right/")
}

// zones caches the zones loaded so far by name: loading one parses its
// data, and the firing needs one per due trigger.
var zones sync.Map

func loadZone(name string) (*time.Location, error) {
	if loc, ok := zones.Load(name); ok {
		return loc.(*time.Location), nil
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, err
	}
	zones.Store(name, loc)
	return loc, nil
}

// parseCron parses the five fields with robfig's standard parser, after
// refusing what the contract refuses and robfig accepts, and rewriting 7 in
// the day of week to 0. It returns the detail of the problem when the
// expression is not valid.
//
// Only ASCII letters and digits, *, ',', '-' and '/' may appear in a field:
// that refuses ?, # and the sign robfig's number parsing would take ("+5").
func parseCron(expr string) (*cron.SpecSchedule, string) {
	fields := strings.Fields(expr)
	switch {
	case strings.HasPrefix(strings.TrimSpace(expr), "@"):
		return nil, detailDescriptor
	case strings.Contains(expr, "="):
		return nil, detailZonePrefix
	case len(fields) != 5:
		return nil, detailFields
	}
	for _, f := range fields {
		if strings.IndexFunc(f, notCronRune) >= 0 {
			return nil, detailSyntax
		}
	}
	dow, ok := rewriteSeven(fields[4])
	if !ok {
		return nil, detailSyntax
	}
	fields[4] = dow
	sched, err := cron.ParseStandard(strings.Join(fields, " "))
	if err != nil {
		return nil, detailSyntax
	}
	return sched.(*cron.SpecSchedule), ""
}

func notCronRune(r rune) bool {
	return !('0' <= r && r <= '9' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' ||
		r == '*' || r == ',' || r == '-' || r == '/')
}

// rewriteSeven rewrites the parts of a day-of-week field that name day 7
// (Sunday, which robfig refuses) as lists of days 0-6: "5-7" becomes "5,6,0",
// "1-7/2" "1,3,5,0", and "7/2" "0" (robfig reads a single value with a step
// as running to the maximum). Parts that do not name 7 are left for robfig
// as they are, so "*", "*/2" and "mon-fri" keep robfig's exact meaning. It
// reports false when a part naming 7 is not a valid range.
func rewriteSeven(field string) (string, bool) {
	parts := strings.Split(field, ",")
	for i, part := range parts {
		rangeAndStep := strings.Split(part, "/")
		lowAndHigh := strings.Split(rangeAndStep[0], "-")
		if !slices.ContainsFunc(lowAndHigh, isSeven) {
			continue
		}
		if len(rangeAndStep) > 2 || len(lowAndHigh) > 2 {
			return "", false
		}
		low, lowOK := dayNumber(lowAndHigh[0])
		high, highOK := low, lowOK
		if len(lowAndHigh) == 2 {
			high, highOK = dayNumber(lowAndHigh[1])
		}
		step := 1
		if len(rangeAndStep) == 2 {
			n, err := strconv.Atoi(rangeAndStep[1])
			if err != nil || n < 1 {
				return "", false
			}
			step = min(n, 8) // any longer step takes the first day only
			if len(lowAndHigh) == 1 {
				high = 7
			}
		}
		if !lowOK || !highOK || low > high {
			return "", false
		}
		var days []string
		for d := low; d <= high; d += step {
			days = append(days, strconv.Itoa(d%7))
		}
		parts[i] = strings.Join(days, ",")
	}
	return strings.Join(parts, ","), true
}

func isSeven(s string) bool {
	n, err := strconv.Atoi(s)
	return err == nil && n == 7
}

// dayNumber reads a day of week, 0-7 or a name, as robfig does.
func dayNumber(s string) (int, bool) {
	for i, name := range dayNames {
		if strings.EqualFold(s, name) {
			return i, true
		}
	}
	n, err := strconv.Atoi(s)
	return n, err == nil && 0 <= n && n <= 7
}

// Cron returns the cron expression as given.
func (s *Schedule) Cron() string { return s.expr }

// Timezone returns the zone name as given.
func (s *Schedule) Timezone() string { return s.zone }

// Next is the first slot strictly after t; zero when there is none within
// five years of t. It is in UTC, a whole minute.
func (s *Schedule) Next(t time.Time) time.Time {
	var next time.Time
	s.scan(t.Truncate(time.Minute).Add(time.Minute), t.AddDate(5, 0, 0), func(first, _ time.Time, _ int) bool {
		next = first
		return false
	})
	return next
}

// Latest is the latest slot in [from, at] and how many slots lie in
// [from, at]; zero and 0 when none. The slot is in UTC, a whole minute.
func (s *Schedule) Latest(from, at time.Time) (slot time.Time, count int) {
	s.scan(from, at, func(_, last time.Time, n int) bool {
		slot, count = last, count+n
		return true
	})
	return slot, count
}

// scan visits the slots in [lo, hi] in instant order, in runs: a run is
// the slots of one civil day within one zone period, given by its first and
// last slot and how many it holds. It stops when visit returns false.
//
// It walks the zone's periods of constant offset: within one, a wall time
// maps to one instant. At the start of a period that follows a gap, the
// skipped wall times that match make one slot at the start; at the start of
// one that follows a fold, the wall times the previous period already had are
// left out unless the hour field is unrestricted.
func (s *Schedule) scan(lo, hi time.Time, visit func(first, last time.Time, n int) bool) {
	for u := ceilMinute(lo); !u.After(hi); {
		local := u.In(s.loc)
		_, off := local.Zone()
		start, end := local.ZoneBounds()
		start = start.UTC()
		from := wall(u, off)
		if !start.IsZero() {
			_, before := start.Add(-time.Nanosecond).In(s.loc).Zone()
			if before < off && u.Equal(start) && s.matchesAny(wall(start, before), from.Add(-time.Nanosecond)) {
				if !visit(start, start, 1) {
					return
				}
				from = from.Add(time.Minute) // the first wall time after the gap fires with it
			}
			if before > off && s.spec.Hour&starBit == 0 {
				from = later(from, wall(start, before))
			}
		}
		until := hi
		if !end.IsZero() && !end.After(hi) {
			until = end.Add(-time.Nanosecond)
		}
		shift := time.Duration(off) * time.Second
		if !s.walk(from, wall(until, off), func(first, last time.Time, n int) bool {
			return visit(first.Add(-shift), last.Add(-shift), n)
		}) || end.IsZero() {
			return
		}
		u = end
	}
}

// walk visits the wall times in [lo, hi] that the cron matches (wall times
// are written as UTC times), in runs of one civil day, and reports false when
// visit stopped it by returning false. Days that the month, day of month and
// day of week rule out are skipped without looking at their hours.
func (s *Schedule) walk(lo, hi time.Time, visit func(first, last time.Time, n int) bool) bool {
	lo = ceilMinute(lo)
	for day := lo.Truncate(24 * time.Hour); !day.After(hi); {
		y, m, _ := day.Date()
		if s.spec.Month&(1<<uint(m)) == 0 {
			day = time.Date(y, m+1, 1, 0, 0, 0, 0, time.UTC)
			continue
		}
		next := day.AddDate(0, 0, 1)
		if s.dayMatches(day) {
			a, b := 0, 24*60-1
			if lo.After(day) {
				a = int(lo.Sub(day) / time.Minute)
			}
			if hi.Before(next) {
				b = int(hi.Sub(day) / time.Minute)
			}
			if first, last, n := s.minutes(a, b); n > 0 &&
				!visit(day.Add(time.Duration(first)*time.Minute), day.Add(time.Duration(last)*time.Minute), n) {
				return false
			}
		}
		day = next
	}
	return true
}

// matchesAny reports whether the cron matches a wall time in [lo, hi].
func (s *Schedule) matchesAny(lo, hi time.Time) bool {
	return !s.walk(lo, hi, func(time.Time, time.Time, int) bool { return false })
}

// dayMatches applies robfig's day rule to a civil date: when either day
// field is unrestricted both must match, otherwise either.
func (s *Schedule) dayMatches(day time.Time) bool {
	dom := s.spec.Dom&(1<<uint(day.Day())) != 0
	dow := s.spec.Dow&(1<<uint(day.Weekday())) != 0
	if s.spec.Dom&starBit != 0 || s.spec.Dow&starBit != 0 {
		return dom && dow
	}
	return dom || dow
}

// minutes returns the first and last minute of a day, counted from
// midnight, that the hour and minute fields match within [a, b], and how
// many they match.
func (s *Schedule) minutes(a, b int) (first, last, n int) {
	for h := a / 60; h <= b/60; h++ {
		if s.spec.Hour&(1<<uint(h)) == 0 {
			continue
		}
		low, high := max(a-h*60, 0), min(b-h*60, 59)
		m := s.spec.Minute & (1<<uint(high+1) - 1) &^ (1<<uint(low) - 1)
		if m == 0 {
			continue
		}
		if n == 0 {
			first = h*60 + bits.TrailingZeros64(m)
		}
		last = h*60 + 63 - bits.LeadingZeros64(m)
		n += bits.OnesCount64(m)
	}
	return first, last, n
}

// wall is the wall time of instant t at a zone offset in seconds, written as
// a UTC time.
func wall(t time.Time, offset int) time.Time {
	return t.Add(time.Duration(offset) * time.Second).UTC()
}

// ceilMinute is the first whole minute at or after t.
func ceilMinute(t time.Time) time.Time {
	m := t.Truncate(time.Minute)
	if m.Before(t) {
		m = m.Add(time.Minute)
	}
	return m.UTC()
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
