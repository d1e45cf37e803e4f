package trigger

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/cloud-agent/control-plane/shared/problem"
	"github.com/robfig/cron/v3"
)

// createdAt is the creation time the tests judge the five-years rule from.
var createdAt = time.Date(2026, 6, 15, 12, 34, 56, 0, time.UTC)

func mustParse(t testing.TB, expr, zone string) *Schedule {
	t.Helper()
	s, err := ParseSchedule(expr, zone, createdAt)
	if err != nil {
		t.Fatalf("ParseSchedule(%q, %q): %v", expr, zone, err)
	}
	return s
}

func utc(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return t.UTC()
}

// slotsBetween lists the slots in [from, to] by stepping Next.
func slotsBetween(s *Schedule, from, to time.Time) []time.Time {
	var out []time.Time
	for t := s.Next(from.Add(-time.Nanosecond)); !t.IsZero() && !t.After(to); t = s.Next(t) {
		out = append(out, t)
	}
	return out
}

func formatSlots(ts []time.Time) string {
	parts := make([]string, len(ts))
	for i, t := range ts {
		parts[i] = t.Format(time.RFC3339)
	}
	return strings.Join(parts, " ")
}

func TestParseSchedule(t *testing.T) {
	tests := []struct {
		rule, expr, zone string
		detail           string // "" when valid; else a part of the detail
	}{
		{"five fields", "* * * * *", "UTC", ""},
		{"five fields, extra spaces", "  0   9 * *  1-5 ", "Europe/Berlin", ""},
		{"month and day names", "0 9 * jan,JUL-dec mon-FRI", "UTC", ""},
		{"day of week 7 is Sunday", "0 9 * * 7", "UTC", ""},
		{"day of week range to 7", "0 9 * * 5-7", "UTC", ""},
		{"day of week sun", "0 9 * * sun", "UTC", ""},
		{"day of week SUN", "0 9 * * SUN", "UTC", ""},
		{"steps", "*/15 */2 1-31/3 */6 */2", "UTC", ""},
		{"value with step", "5/15 * * * *", "UTC", ""},
		{"leap day is within five years", "0 0 29 2 *", "UTC", ""},
		{"four fields", "* * * *", "UTC", "must have five fields"},
		{"six fields: seconds", "0 * * * * *", "UTC", "must have five fields"},
		{"empty", "", "UTC", "must have five fields"},
		{"descriptor @daily", "@daily", "UTC", "descriptors"},
		{"descriptor @every", "@every 1m", "UTC", "descriptors"},
		{"TZ prefix", "TZ=UTC * * * * *", "UTC", "schedule.timezone"},
		{"CRON_TZ prefix", "CRON_TZ=Europe/Berlin * * * * *", "UTC", "schedule.timezone"},
		{"TZ prefix without a space", "TZ=UTC", "UTC", "schedule.timezone"},
		{"? refused", "0 0 ? * 1", "UTC", "not a valid cron"},
		{"L refused", "0 0 L * *", "UTC", "not a valid cron"},
		{"W refused", "0 0 15W * *", "UTC", "not a valid cron"},
		{"# refused", "0 0 * * 1#2", "UTC", "not a valid cron"},
		{"sign refused", "+5 * * * *", "UTC", "not a valid cron"},
		{"minute 60", "60 * * * *", "UTC", "not a valid cron"},
		{"hour 24", "0 24 * * *", "UTC", "not a valid cron"},
		{"day of month 0", "0 0 0 * *", "UTC", "not a valid cron"},
		{"day of month 32", "0 0 32 * *", "UTC", "not a valid cron"},
		{"month 13", "0 0 * 13 *", "UTC", "not a valid cron"},
		{"day of week 8", "0 0 * * 8", "UTC", "not a valid cron"},
		{"day of week 7-1 backwards", "0 0 * * 7-1", "UTC", "not a valid cron"},
		{"day of week 5-7/0", "0 0 * * 5-7/0", "UTC", "not a valid cron"},
		{"day of week 7-", "0 0 * * 7-", "UTC", "not a valid cron"},
		{"day of week 1-3-7", "0 0 * * 1-3-7", "UTC", "not a valid cron"},
		{"day of week 7/2/2", "0 0 * * 7/2/2", "UTC", "not a valid cron"},
		{"backwards range", "0 0 * * 5-1", "UTC", "not a valid cron"},
		{"unknown name", "0 0 * * funday", "UTC", "not a valid cron"},
		{"name in the minute field", "mon * * * *", "UTC", "not a valid cron"},
		{"step 0", "*/0 * * * *", "UTC", "not a valid cron"},
		{"February 30 never comes", "0 0 30 2 *", "UTC", "no time within five years"},
		{"April 31 never comes", "0 0 31 4 *", "UTC", "no time within five years"},
		{"empty list matches nothing", ", * * * *", "UTC", "no time within five years"},
		{"zone left empty", "* * * * *", "", "schedule.timezone must be an IANA"},
		{"zone Local", "* * * * *", "Local", "schedule.timezone must be an IANA"},
		{"the machine's localtime", "* * * * *", "localtime", "schedule.timezone must be an IANA"},
		{"the machine's posixrules", "* * * * *", "posixrules", "schedule.timezone must be an IANA"},
		{"a zone of the machine's posix tree", "* * * * *", "posix/Europe/Berlin", "schedule.timezone must be an IANA"},
		{"a zone of the machine's right tree", "* * * * *", "right/UTC", "schedule.timezone must be an IANA"},
		{"zone unknown", "* * * * *", "Not/AZone", "schedule.timezone must be an IANA"},
		{"zone path", "* * * * *", "../etc/passwd", "schedule.timezone must be an IANA"},
	}
	for _, tt := range tests {
		t.Run(tt.rule, func(t *testing.T) {
			s, err := ParseSchedule(tt.expr, tt.zone, createdAt)
			if tt.detail == "" {
				if err != nil {
					t.Fatalf("ParseSchedule(%q, %q): %v", tt.expr, tt.zone, err)
				}
				if s.Cron() != tt.expr || s.Timezone() != tt.zone {
					t.Fatalf("Cron, Timezone = %q, %q; want them as given", s.Cron(), s.Timezone())
				}
				return
			}
			var p *problem.Error
			if !errors.As(err, &p) || p.Code != problem.InvalidRequest || p.Cause != nil {
				t.Fatalf("ParseSchedule(%q, %q) = %v; want an invalid_request problem", tt.expr, tt.zone, err)
			}
			if !strings.Contains(p.Detail, tt.detail) {
				t.Fatalf("detail %q; want it to contain %q", p.Detail, tt.detail)
			}
			if !strings.HasPrefix(p.Detail, "schedule.cron ") && !strings.HasPrefix(p.Detail, "schedule.timezone ") {
				t.Fatalf("detail %q names neither schedule.cron nor schedule.timezone", p.Detail)
			}
		})
	}
}

// TestFiveYearsFromNow: the five-years rule is judged from the time given.
func TestFiveYearsFromNow(t *testing.T) {
	// 2097-03-01: the next 29 February is in 2104 (2100 is no leap year).
	if _, err := ParseSchedule("0 0 29 2 *", "UTC", utc("2097-03-01T00:00:00Z")); err == nil {
		t.Fatal("29 February accepted in 2097; the next one is more than five years away")
	}
	s := mustParse(t, "0 0 29 2 *", "UTC")
	if got := s.Next(utc("2097-03-01T00:00:00Z")); !got.IsZero() {
		t.Fatalf("Next from 2097-03-01 = %v; want zero (none within five years)", got)
	}
}

// TestDayOfWeekSeven: 7 is Sunday, and a rewritten field means what the
// same days written 0-6 mean.
func TestDayOfWeekSeven(t *testing.T) {
	tests := []struct{ rule, dow, same string }{
		{"7 is 0", "7", "0"},
		{"range to 7", "5-7", "5,6,0"},
		{"range to 7 with a step", "1-7/2", "1,3,5,0"},
		{"name to 7", "fri-7", "5,6,0"},
		{"7 with a step runs to 7", "7/2", "0"},
		{"0-7 is every day, restricted", "0-7", "0-6"},
		{"7 in a list", "1,7", "1,0"},
		{"07", "07", "0"},
		{"7-7", "7-7", "sun"},
		{"a step longer than the range", "6-7/100", "6"},
		{"SUN", "SUN", "0"},
		{"parts without 7 kept", "*/2,7", "*/2,0"},
	}
	from := utc("2026-06-01T00:00:00Z")
	to := utc("2026-08-01T00:00:00Z")
	for _, tt := range tests {
		t.Run(tt.rule, func(t *testing.T) {
			for _, dom := range []string{"*", "13"} {
				got := slotsBetween(mustParse(t, "0 12 "+dom+" * "+tt.dow, "UTC"), from, to)
				want := slotsBetween(mustParse(t, "0 12 "+dom+" * "+tt.same, "UTC"), from, to)
				if formatSlots(got) != formatSlots(want) || len(got) == 0 {
					t.Fatalf("day of week %q (day of month %s): %s; want %s", tt.dow, dom, formatSlots(got), formatSlots(want))
				}
			}
		})
	}
}

// TestRobfigParity: away from daylight saving, Next is robfig's Next, for a
// hand list and random expressions from a fixed seed (day of week 0-6, which
// robfig takes).
func TestRobfigParity(t *testing.T) {
	exprs := []string{
		"* * * * *", "*/2 * * * *", "5/15 * * * *", "0 */2 * * *", "0 0 */2 * 1", "0 0 * * 1",
		"0 0 1 * *", "0 0 1 * 1", "0 0 */1 * 1", "0 0 1-31 * 1", "0 0 13 * 5", "30 4 1,15 * 5",
		"0 0 29 2 *", "0 0 29 2 1", "0 0 31 * *", "59 23 31 12 *", "0 9 * * mon-fri",
		"0 9 * jan,jul sun", "15 14 1 * *", "0 22 * * 1-5", "23 0-20/2 * * *", "5 4 * * sun",
		"0 0,12 1 */2 *", "0 4 8-14 * *", "0 0 1,15 * 3", "*/7 */5 */3 */2 */3",
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 300 {
		exprs = append(exprs, randomExpr(rng))
	}
	starts := []time.Time{
		utc("2026-01-01T00:00:00Z"), utc("2026-02-28T23:59:30Z"), utc("2027-12-31T23:59:59.5Z"),
		utc("2028-02-29T12:34:00Z"), createdAt,
	}
	for _, expr := range exprs {
		theirs, err := cron.ParseStandard(expr)
		if err != nil {
			t.Fatalf("robfig refuses %q: %v", expr, err)
		}
		ours, err := ParseSchedule(expr, "UTC", createdAt)
		if err != nil {
			if next := theirs.Next(createdAt); !next.IsZero() && next.Before(createdAt.AddDate(5, 0, 0)) {
				t.Fatalf("%q refused (%v), but robfig fires at %v", expr, err, next)
			}
			continue
		}
		for _, start := range append(starts, randomTime(rng), randomTime(rng)) {
			want, got := start, start
			for range 5 {
				want, got = theirs.Next(want), ours.Next(got)
				if !got.Equal(want) {
					t.Fatalf("%q from %v: Next = %v; robfig %v", expr, start, got, want)
				}
			}
		}
	}
}

// randomExpr makes a five-field expression robfig parses, in its ranges.
func randomExpr(rng *rand.Rand) string {
	months := []string{"jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"}
	field := func(low, high int, names []string) string {
		value := func(n int) string {
			if names != nil && rng.IntN(3) == 0 {
				return names[n-low]
			}
			return fmt.Sprint(n)
		}
		var parts []string
		for range 1 + rng.IntN(2) {
			a := low + rng.IntN(high-low+1)
			b := a + rng.IntN(high-a+1)
			step := 1 + rng.IntN(max(1, (high-low)/2))
			switch rng.IntN(7) {
			case 0:
				return "*"
			case 1:
				parts = append(parts, fmt.Sprintf("*/%d", step))
			case 2:
				parts = append(parts, value(a))
			case 3:
				parts = append(parts, value(a)+"-"+value(b))
			case 4:
				parts = append(parts, fmt.Sprintf("%s-%s/%d", value(a), value(b), step))
			case 5:
				parts = append(parts, fmt.Sprintf("%s/%d", value(a), step))
			default:
				parts = append(parts, value(a), value(b))
			}
		}
		return strings.Join(parts, ",")
	}
	return strings.Join([]string{
		field(0, 59, nil), field(0, 23, nil), field(1, 31, nil), field(1, 12, months), field(0, 6, dayNames),
	}, " ")
}

func randomTime(rng *rand.Rand) time.Time {
	return utc("2026-01-01T00:00:00Z").Add(time.Duration(rng.Int64N(int64(4 * 365 * 24 * time.Hour))))
}

// TestMatching: which days and minutes an expression matches.
func TestMatching(t *testing.T) {
	tests := []struct {
		rule, expr, from, to string
		want                 []string
	}{
		{"*/2 restricts the day of month: either day field matches", "0 0 */2 * 1", "2026-07-01T00:00:00Z", "2026-07-31T23:59:00Z", []string{
			"01", "03", "05", "06", "07", "09", "11", "13", "15", "17", "19", "20", "21", "23", "25", "27", "29", "31"}},
		{"day of month * : only the day of week", "0 0 * * 1", "2026-07-01T00:00:00Z", "2026-07-31T23:59:00Z", []string{"06", "13", "20", "27"}},
		{"day of week * : only the day of month", "0 0 1 * *", "2026-07-01T00:00:00Z", "2026-07-31T23:59:00Z", []string{"01"}},
		{"both restricted: either", "0 0 1 * 1", "2026-07-01T00:00:00Z", "2026-07-31T23:59:00Z", []string{"01", "06", "13", "20", "27"}},
		{"*/1 is robfig's star: both must match", "0 0 */1 * 1", "2026-07-01T00:00:00Z", "2026-07-31T23:59:00Z", []string{"06", "13", "20", "27"}},
		{"1-31 restricts: either", "0 0 1-31 * 1", "2026-07-01T00:00:00Z", "2026-07-03T23:59:00Z", []string{"01", "02", "03"}},
	}
	for _, tt := range tests {
		t.Run(tt.rule, func(t *testing.T) {
			var days []string
			for _, s := range slotsBetween(mustParse(t, tt.expr, "UTC"), utc(tt.from), utc(tt.to)) {
				days = append(days, s.Format("02"))
			}
			if strings.Join(days, " ") != strings.Join(tt.want, " ") {
				t.Fatalf("days %v; want %v", days, tt.want)
			}
		})
	}
	t.Run("5/15 is every 15 minutes from 5", func(t *testing.T) {
		got := slotsBetween(mustParse(t, "5/15 * * * *", "UTC"), utc("2026-07-01T10:00:00Z"), utc("2026-07-01T10:59:00Z"))
		if want := "2026-07-01T10:05:00Z 2026-07-01T10:20:00Z 2026-07-01T10:35:00Z 2026-07-01T10:50:00Z"; formatSlots(got) != want {
			t.Fatalf("%s; want %s", formatSlots(got), want)
		}
	})
}

// TestDaylightSaving: the slots around daylight-saving changes, in UTC.
func TestDaylightSaving(t *testing.T) {
	tests := []struct {
		rule, expr, zone, from, to string
		want                       string
	}{
		// Europe/Berlin: 2026-03-29 02:00 CET -> 03:00 CEST at 01:00Z.
		{"skipped time fires at the end of the gap", "30 2 * * *", "Europe/Berlin", "2026-03-28T00:00:00Z", "2026-03-30T23:59:00Z",
			"2026-03-28T01:30:00Z 2026-03-29T01:00:00Z 2026-03-30T00:30:00Z"},
		{"all skipped times fire once", "* 2 * * *", "Europe/Berlin", "2026-03-28T23:00:00Z", "2026-03-29T21:59:00Z",
			"2026-03-29T01:00:00Z"},
		{"two skipped times fire once", "0,30 2 * * *", "Europe/Berlin", "2026-03-28T23:00:00Z", "2026-03-29T21:59:00Z",
			"2026-03-29T01:00:00Z"},
		{"a skipped time and the first time after the gap fire once", "30 2,3 * * *", "Europe/Berlin", "2026-03-28T23:00:00Z", "2026-03-29T21:59:00Z",
			"2026-03-29T01:00:00Z 2026-03-29T01:30:00Z"},
		{"every minute across the gap", "* * * * *", "Europe/Berlin", "2026-03-29T00:58:00Z", "2026-03-29T01:02:00Z",
			"2026-03-29T00:58:00Z 2026-03-29T00:59:00Z 2026-03-29T01:00:00Z 2026-03-29T01:01:00Z 2026-03-29T01:02:00Z"},
		// Europe/Berlin: 2026-10-25 03:00 CEST -> 02:00 CET at 01:00Z.
		{"a time that occurs twice fires at its first occurrence", "30 2 * * *", "Europe/Berlin", "2026-10-24T22:00:00Z", "2026-10-25T22:59:00Z",
			"2026-10-25T00:30:00Z"},
		{"hour *: both occurrences fire", "30 * * * *", "Europe/Berlin", "2026-10-24T23:00:00Z", "2026-10-25T02:59:00Z",
			"2026-10-24T23:30:00Z 2026-10-25T00:30:00Z 2026-10-25T01:30:00Z 2026-10-25T02:30:00Z"},
		{"hour restricted: each minute once", "*/30 2 * * *", "Europe/Berlin", "2026-10-24T22:00:00Z", "2026-10-25T22:59:00Z",
			"2026-10-25T00:00:00Z 2026-10-25T00:30:00Z"},
		{"hour 0-23 is restricted", "30 0-23 * * *", "Europe/Berlin", "2026-10-25T00:00:00Z", "2026-10-25T02:59:00Z",
			"2026-10-25T00:30:00Z 2026-10-25T02:30:00Z"},
		{"hour */1 is robfig's star: both fire", "30 */1 * * *", "Europe/Berlin", "2026-10-25T00:00:00Z", "2026-10-25T01:59:00Z",
			"2026-10-25T00:30:00Z 2026-10-25T01:30:00Z"},
		// America/New_York: 2026-03-08 02:00 EST -> 03:00 EDT; 2026-11-01 02:00 EDT -> 01:00 EST.
		{"New York gap", "30 2 * * *", "America/New_York", "2026-03-08T05:00:00Z", "2026-03-09T03:59:00Z",
			"2026-03-08T07:00:00Z"},
		{"New York fold, hour restricted", "30 1 * * *", "America/New_York", "2026-11-01T04:00:00Z", "2026-11-02T04:59:00Z",
			"2026-11-01T05:30:00Z"},
		{"New York fold, hour *", "30 * * * *", "America/New_York", "2026-11-01T05:00:00Z", "2026-11-01T06:59:00Z",
			"2026-11-01T05:30:00Z 2026-11-01T06:30:00Z"},
		// Australia/Lord_Howe: 30-minute changes. 2026-04-05 02:00 +11 -> 01:30 +1030; 2026-10-04 02:00 +1030 -> 02:30 +11.
		{"Lord Howe half-hour fold, hour restricted", "45 1 * * *", "Australia/Lord_Howe", "2026-04-04T13:00:00Z", "2026-04-04T16:59:00Z",
			"2026-04-04T14:45:00Z"},
		{"Lord Howe half-hour fold, hour *", "45 * * * *", "Australia/Lord_Howe", "2026-04-04T14:00:00Z", "2026-04-04T15:59:00Z",
			"2026-04-04T14:45:00Z 2026-04-04T15:15:00Z"},
		{"Lord Howe before the fold", "15 1 * * *", "Australia/Lord_Howe", "2026-04-04T13:00:00Z", "2026-04-04T16:59:00Z",
			"2026-04-04T14:15:00Z"},
		{"Lord Howe half-hour gap", "15 2 * * *", "Australia/Lord_Howe", "2026-10-03T13:00:00Z", "2026-10-04T12:59:00Z",
			"2026-10-03T15:30:00Z"},
		{"Lord Howe gap and the time after it", "*/15 2 * * *", "Australia/Lord_Howe", "2026-10-03T13:00:00Z", "2026-10-04T12:59:00Z",
			"2026-10-03T15:30:00Z 2026-10-03T15:45:00Z"},
		// America/Santiago: 2026-09-06 24:00 -04 -> 01:00 -03 (midnight skipped); 2026-04-04 24:00 -03 -> 23:00 -04.
		{"skipped midnight fires at 01:00", "0 0 * * *", "America/Santiago", "2026-09-05T00:00:00Z", "2026-09-07T23:59:00Z",
			"2026-09-05T04:00:00Z 2026-09-06T04:00:00Z 2026-09-07T03:00:00Z"},
		{"skipped midnight on the day's own weekday", "0 0 * * sun", "America/Santiago", "2026-09-01T00:00:00Z", "2026-09-13T23:59:00Z",
			"2026-09-06T04:00:00Z 2026-09-13T03:00:00Z"},
		{"skipped midnight and 01:00 fire once", "0 0,1 6 9 *", "America/Santiago", "2026-09-01T00:00:00Z", "2026-09-30T23:59:00Z",
			"2026-09-06T04:00:00Z"},
		{"Saturday 23:30 twice fires once", "30 23 * * sat", "America/Santiago", "2026-04-01T00:00:00Z", "2026-04-07T23:59:00Z",
			"2026-04-05T02:30:00Z"},
		{"fold before midnight, hour *", "30 * * * *", "America/Santiago", "2026-04-05T02:00:00Z", "2026-04-05T04:59:00Z",
			"2026-04-05T02:30:00Z 2026-04-05T03:30:00Z 2026-04-05T04:30:00Z"},
		// America/Havana: 2026-03-08 00:00 -05 -> 01:00 -04; 2026-11-01 01:00 -04 -> 00:00 -05.
		{"Havana skipped midnight", "15 0 * * *", "America/Havana", "2026-03-07T00:00:00Z", "2026-03-08T23:59:00Z",
			"2026-03-07T05:15:00Z 2026-03-08T05:00:00Z"},
		{"Havana fold after midnight", "15 0 * * *", "America/Havana", "2026-11-01T00:00:00Z", "2026-11-01T23:59:00Z",
			"2026-11-01T04:15:00Z"},
		// America/Nuuk: 2026-03-28 23:00 -02 -> 2026-03-29 00:00 -01 at 01:00Z: a gap at the end of a day.
		{"a gap at the end of a day fires on the next day, merged with its midnight", "0,30 0,23 28,29 3 *", "America/Nuuk", "2026-03-28T00:00:00Z", "2026-03-30T01:00:00Z",
			"2026-03-28T02:00:00Z 2026-03-28T02:30:00Z 2026-03-29T01:00:00Z 2026-03-29T01:30:00Z 2026-03-30T00:00:00Z 2026-03-30T00:30:00Z"},
	}
	for _, tt := range tests {
		t.Run(tt.rule, func(t *testing.T) {
			s := mustParse(t, tt.expr, tt.zone)
			from, to := utc(tt.from), utc(tt.to)
			got := slotsBetween(s, from, to)
			if formatSlots(got) != tt.want {
				t.Fatalf("%s in %s:\n got %s\nwant %s", tt.expr, tt.zone, formatSlots(got), tt.want)
			}
			last, n := s.Latest(from, to)
			if n != len(got) || !last.Equal(got[len(got)-1]) {
				t.Fatalf("Latest = %v, %d; want %v, %d", last, n, got[len(got)-1], len(got))
			}
		})
	}
}

// TestOracle: around every 2026 change of the test zones, the slots are
// those of a minute-by-minute reading of the rules, with robfig matching the
// wall times.
func TestOracle(t *testing.T) {
	zones := []string{"Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "America/Santiago", "America/Havana", "America/Nuuk", "Pacific/Chatham"}
	exprs := []string{
		"* * * * *", "30 * * * *", "*/7 * * * *", "0 0 * * *", "30 2 * * *", "* 2 * * *", "0,30 0,1,2,3,23 * * *",
		"*/15 */2 * * *", "45 1 * * *", "0 0 * * 0", "15 2,3 1-7 * 6", "59 23 * * *", "50 2 * * *", "10-20 1-3 * * *",
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for _, zone := range zones {
		loc, err := time.LoadLocation(zone)
		if err != nil {
			t.Fatal(err)
		}
		for _, change := range changes(loc, 2026) {
			from, to := change.Add(-36*time.Hour), change.Add(36*time.Hour)
			for _, expr := range exprs {
				want := oracle(t, expr, loc, from, to)
				s := mustParse(t, expr, zone)
				if got := slotsBetween(s, from, to); formatSlots(got) != formatSlots(want) {
					t.Fatalf("%s in %s around %v: %s", expr, zone, change, difference(got, want))
				}
				for range 20 {
					a := from.Add(time.Duration(rng.Int64N(int64(72 * time.Hour))))
					b := a.Add(time.Duration(rng.Int64N(int64(to.Sub(a)) + 1)))
					var in []time.Time
					for _, w := range want {
						if !w.Before(a) && !w.After(b) {
							in = append(in, w)
						}
					}
					last, n := s.Latest(a, b)
					if n != len(in) || (n > 0 && !last.Equal(in[n-1])) || (n == 0 && !last.IsZero()) {
						t.Fatalf("%s in %s: Latest(%v, %v) = %v, %d; want %d slots: %s", expr, zone, a, b, last, n, len(in), formatSlots(in))
					}
				}
			}
		}
	}
}

// difference tells where two lists of slots part.
func difference(got, want []time.Time) string {
	for i := range min(len(got), len(want)) {
		if !got[i].Equal(want[i]) {
			return fmt.Sprintf("slot %d is %v; want %v", i, got[i], want[i])
		}
	}
	return fmt.Sprintf("%d slots; want %d", len(got), len(want))
}

// changes lists the instants the zone's offset changes in a year.
func changes(loc *time.Location, year int) []time.Time {
	var out []time.Time
	for u := time.Date(year, 1, 1, 0, 0, 0, 0, time.UTC); u.Year() == year; {
		_, end := u.In(loc).ZoneBounds()
		if end.IsZero() || end.Year() != year {
			break
		}
		out = append(out, end)
		u = end
	}
	return out
}

// oracle reads the rules minute by minute: an instant is a slot when its
// wall time matches and has not occurred before (or the hour field is *), or
// when a matching wall time was skipped just before it.
func oracle(t *testing.T, expr string, loc *time.Location, from, to time.Time) []time.Time {
	t.Helper()
	spec, err := cron.ParseStandard(expr)
	if err != nil {
		t.Fatal(err)
	}
	matches := func(w time.Time) bool { return spec.Next(w.Add(-time.Second)).Equal(w) }
	hourStar := strings.Fields(expr)[1] == "*"
	civil := func(u time.Time) time.Time {
		l := u.In(loc)
		return time.Date(l.Year(), l.Month(), l.Day(), l.Hour(), l.Minute(), 0, 0, time.UTC)
	}
	seen := map[time.Time]bool{}
	var out []time.Time
	start := from.Add(-48 * time.Hour)
	prev := civil(start.Add(-time.Minute))
	for u := start; !u.After(to); u = u.Add(time.Minute) {
		w := civil(u)
		slot := matches(w) && (hourStar || !seen[w])
		for g := prev.Add(time.Minute); g.Before(w); g = g.Add(time.Minute) {
			slot = slot || matches(g)
		}
		seen[w], prev = true, w
		if slot && !u.Before(from) {
			out = append(out, u.UTC())
		}
	}
	return out
}

func TestLatest(t *testing.T) {
	every5 := mustParse(t, "*/5 * * * *", "Europe/Berlin")
	tests := []struct {
		rule     string
		from, at string
		want     string // "" for none
		count    int
	}{
		{"from a slot to ten slots later: the tenth, eleven slots", "2026-07-01T10:00:00Z", "2026-07-01T10:50:00Z", "2026-07-01T10:50:00Z", 11},
		{"at between slots", "2026-07-01T10:00:00Z", "2026-07-01T10:54:59Z", "2026-07-01T10:50:00Z", 11},
		{"from between slots", "2026-07-01T10:00:01Z", "2026-07-01T10:50:00Z", "2026-07-01T10:50:00Z", 10},
		{"from equal to at, on a slot", "2026-07-01T10:05:00Z", "2026-07-01T10:05:00Z", "2026-07-01T10:05:00Z", 1},
		{"none in range", "2026-07-01T10:01:00Z", "2026-07-01T10:04:59Z", "", 0},
		{"at before from", "2026-07-01T10:10:00Z", "2026-07-01T10:00:00Z", "", 0},
		{"a day", "2026-07-01T00:00:00Z", "2026-07-01T23:59:59Z", "2026-07-01T23:55:00Z", 288},
		{"across the spring gap: one hour less", "2026-03-28T23:00:00Z", "2026-03-29T21:59:59Z", "2026-03-29T21:55:00Z", 276},
		{"across the fall fold: hour * fires both", "2026-10-24T22:00:00Z", "2026-10-25T22:59:59Z", "2026-10-25T22:55:00Z", 300},
	}
	for _, tt := range tests {
		t.Run(tt.rule, func(t *testing.T) {
			slot, n := every5.Latest(utc(tt.from), utc(tt.at))
			var want time.Time
			if tt.want != "" {
				want = utc(tt.want)
			}
			if !slot.Equal(want) || n != tt.count || slot.Location() != time.UTC {
				t.Fatalf("Latest = %v, %d; want %v, %d", slot, n, want, tt.count)
			}
		})
	}
	t.Run("thirty days of every minute", func(t *testing.T) {
		s := mustParse(t, "* * * * *", "UTC")
		slot, n := s.Latest(utc("2026-06-01T00:00:00Z"), utc("2026-07-01T00:00:00Z"))
		if !slot.Equal(utc("2026-07-01T00:00:00Z")) || n != 30*24*60+1 {
			t.Fatalf("Latest = %v, %d", slot, n)
		}
	})
}

// TestNextStrictlyAfter: Next is strictly after t, in UTC, a whole minute.
func TestNextStrictlyAfter(t *testing.T) {
	s := mustParse(t, "*/5 * * * *", "Asia/Kolkata")
	tests := []struct{ rule, t, want string }{
		{"on a slot: the next one", "2026-07-01T10:05:00Z", "2026-07-01T10:10:00Z"},
		{"a nanosecond before a slot: that slot", "2026-07-01T10:04:59.999999999Z", "2026-07-01T10:05:00Z"},
		{"a nanosecond after a slot: the next one", "2026-07-01T10:05:00.000000001Z", "2026-07-01T10:10:00Z"},
		{"a time in another zone", "2026-07-01T15:35:30+05:30", "2026-07-01T10:10:00Z"},
	}
	for _, tt := range tests {
		t.Run(tt.rule, func(t *testing.T) {
			at, err := time.Parse(time.RFC3339Nano, tt.t)
			if err != nil {
				t.Fatal(err)
			}
			got := s.Next(at)
			if !got.Equal(utc(tt.want)) || got.Location() != time.UTC || got.Nanosecond() != 0 || got.Second() != 0 {
				t.Fatalf("Next(%s) = %v; want %s in UTC", tt.t, got, tt.want)
			}
		})
	}
}

func BenchmarkNext(b *testing.B) {
	for _, expr := range []string{"0 9 * * 1-5", "* * * * *", "0 0 29 2 *"} {
		s := mustParse(b, expr, "Europe/Berlin")
		b.Run(expr, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				s.Next(createdAt)
			}
		})
	}
}

// BenchmarkLatest: a trigger down for 30 days on every minute, across a
// daylight-saving change.
func BenchmarkLatest(b *testing.B) {
	s := mustParse(b, "* * * * *", "Europe/Berlin")
	from, at := utc("2026-03-15T00:00:00Z"), utc("2026-04-14T00:00:00Z")
	b.ReportAllocs()
	for b.Loop() {
		s.Latest(from, at)
	}
}
