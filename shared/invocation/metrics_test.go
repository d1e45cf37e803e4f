package invocation_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cloud-agent/control-plane/infra/local/emftest"
	"github.com/cloud-agent/control-plane/shared/invocation"
)

var now = time.Date(2026, 11, 30, 10, 5, 30, 123_000_000, time.UTC)

// write logs the record's members as one JSON line and returns it.
func write(r *invocation.Record) string {
	var buf bytes.Buffer
	slog.New(slog.NewJSONHandler(&buf, nil)).LogAttrs(context.Background(), slog.LevelInfo, "request", r.Attrs(now)...)
	return strings.TrimSpace(buf.String())
}

// TestEMFLine: the metrics of a line follow the Embedded Metric Format:
// _aws.Timestamp is the time of the line in epoch milliseconds; metrics that
// go by the same dimensions share one directive of the namespace, with
// [Function] and, for those that go by more, [Function, ...], and
// [Function, Version] for those that go by the version; every
// dimension and metric is a top-level member, dimensions strings and
// metrics numbers; ColdStart and DynamoDBRequests are on every line.
func TestEMFLine(t *testing.T) {
	m := invocation.NewMetrics("SessionStartFunction", "12")
	ctx, rec := m.Begin(context.Background())
	invocation.CountRequest(ctx)
	invocation.CountRequest(ctx)
	invocation.Add(ctx,
		invocation.Count("Starts", 1, invocation.Dimension{Name: "Provider", Value: "vercel"}, invocation.Dimension{Name: "Allocation", Value: "vercel/byoc/small"}),
		invocation.Count("Refusals", 1, invocation.Dimension{Name: "Code", Value: "not_found"}),
		invocation.Metric{Name: "FiringLag", Unit: invocation.UnitSeconds, Value: 2.5},
		invocation.Metric{Name: "Faults", Unit: invocation.UnitCount, Value: 1, By: []invocation.Dimension{{Name: "Code", Value: "not_found"}}, ByVersion: true},
		invocation.Metric{Name: "Failures", Unit: invocation.UnitCount, Value: 3, ByVersion: true},
	)
	raw := write(rec)
	line := emftest.Check(t, raw)
	if line.Timestamp != now.UnixMilli() {
		t.Errorf("timestamp %d, want %d", line.Timestamp, now.UnixMilli())
	}
	want := map[string]struct {
		value float64
		sets  []string
	}{
		"ColdStart":        {1, []string{"Function"}},
		"DynamoDBRequests": {2, []string{"Function"}},
		"FiringLag":        {2.5, []string{"Function"}},
		"Starts":           {1, []string{"Function", "Function,Provider,Allocation"}},
		"Refusals":         {1, []string{"Function", "Function,Code"}},
		"Faults":           {1, []string{"Function", "Function,Code", "Function,Version"}},
		"Failures":         {3, []string{"Function", "Function,Version"}},
	}
	for name, w := range want {
		if v, ok := line.Value(name); !ok || v != w.value || !slices.Equal(line.Sets(name), w.sets) {
			t.Errorf("%s: %v %v by %v, want %v by %v", name, v, ok, line.Sets(name), w.value, w.sets)
		}
	}
	if len(line.Directives) != 5 || len(line.Metrics()) != len(want) {
		t.Errorf("%d directives of %v: %s", len(line.Directives), line.Metrics(), raw)
	}
	dims := map[string]string{"Function": "SessionStartFunction", "Version": "12", "Provider": "vercel", "Allocation": "vercel/byoc/small", "Code": "not_found"}
	if got := line.Dimensions(); !mapsEqual(got, dims) {
		t.Errorf("dimensions %v, want %v", got, dims)
	}
	// The line's own members are as they were.
	if line.Members["dynamodbRequests"] != float64(2) || line.Members["warnings"] != nil {
		t.Errorf("%s", raw)
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestDirectiveLimit: more than 100 metrics that go by the same dimensions
// are split into directives of at most 100.
func TestDirectiveLimit(t *testing.T) {
	var ms []invocation.Metric
	for i := range 248 {
		ms = append(ms, invocation.Count(fmt.Sprintf("M%d", i), i))
	}
	ctx, rec := invocation.NewMetrics("f", "1").Begin(context.Background())
	invocation.Add(ctx, ms...)
	line := emftest.Check(t, write(rec))
	var sizes []int
	for _, d := range line.Directives {
		sizes = append(sizes, len(d.Metrics))
	}
	if !slices.Equal(sizes, []int{100, 100, 50}) || len(line.Metrics()) != 250 {
		t.Errorf("directives of %v metrics", sizes)
	}
	if v, _ := line.Value("M247"); v != 247 {
		t.Errorf("M247 is %v", v)
	}
}

// TestLeftOut: a metric that breaks the format's rules, or that would give
// a member of the line a second meaning or value, is left out, and the
// line's warnings say so; the rest of the line is valid.
func TestLeftOut(t *testing.T) {
	dims := func(n int) []invocation.Dimension {
		var ds []invocation.Dimension
		for i := range n {
			ds = append(ds, invocation.Dimension{Name: fmt.Sprintf("D%d", i), Value: "v"})
		}
		return ds
	}
	code := func(v string) invocation.Dimension { return invocation.Dimension{Name: "Code", Value: v} }
	rows := []struct {
		rule string
		m    invocation.Metric
		ok   bool
	}{
		{"a name of 255 characters", invocation.Count("N"+strings.Repeat("n", 254), 1), true},
		{"30 dimensions, Function among them", invocation.Count("Wide", 1, dims(29)...), true},
		{"a value of 2^360", invocation.Metric{Name: "Big", Unit: invocation.UnitCount, Value: math.Ldexp(1, 360)}, true},
		{"a dimension value of 1024 characters", invocation.Count("LongValue", 1, invocation.Dimension{Name: "Long", Value: strings.Repeat("v", 1024)}), true},
		{"an empty name", invocation.Count("", 1), false},
		{"a name of 256 characters", invocation.Count("N"+strings.Repeat("n", 255), 1), false},
		{"a lowercase name, as the line's own members are", invocation.Count("status", 1), false},
		{"a name with a space", invocation.Count("Cold Start", 1), false},
		{"a name not in ASCII", invocation.Count("Démarrages", 1), false},
		{"no unit", invocation.Metric{Name: "NoUnit", Value: 1}, false},
		{"a unit CloudWatch does not know", invocation.Metric{Name: "Far", Unit: "Furlongs", Value: 1}, false},
		{"NaN", invocation.Metric{Name: "NaN", Unit: invocation.UnitCount, Value: math.NaN()}, false},
		{"infinity", invocation.Metric{Name: "Inf", Unit: invocation.UnitCount, Value: math.Inf(1)}, false},
		{"a value beyond 2^360", invocation.Metric{Name: "Bigger", Unit: invocation.UnitCount, Value: -math.Ldexp(1, 361)}, false},
		{"31 dimensions", invocation.Count("Wider", 1, dims(30)...), false},
		{"an empty dimension value", invocation.Count("Empty", 1, code("")), false},
		{"a dimension value of spaces", invocation.Count("Spaces", 1, code("  ")), false},
		{"a dimension value of 1025 characters", invocation.Count("LongerValue", 1, invocation.Dimension{Name: "Longer", Value: strings.Repeat("v", 1025)}), false},
		{"a dimension value not in ASCII", invocation.Count("Accent", 1, code("é")), false},
		{"a dimension value with a control character", invocation.Count("Control", 1, code("a\nb")), false},
		{"a lowercase dimension name", invocation.Count("LowerDim", 1, invocation.Dimension{Name: "code", Value: "x"}), false},
		{"Function as a further dimension", invocation.Count("Again", 1, invocation.Dimension{Name: "Function", Value: "f"}), false},
		{"a dimension named twice", invocation.Count("Twice", 1, code("a"), code("a")), false},
		{"a dimension named as its metric", invocation.Count("Self", 1, invocation.Dimension{Name: "Self", Value: "x"}), false},
		{"by the version", invocation.Metric{Name: "Versioned", Unit: invocation.UnitCount, Value: 1, ByVersion: true}, true},
		{"by the version and a dimension Version", invocation.Metric{Name: "VersionTwice", Unit: invocation.UnitCount, Value: 1,
			By: []invocation.Dimension{{Name: "Version", Value: "1"}}, ByVersion: true}, false},
		{"a metric named Version by the version", invocation.Metric{Name: "Version", Unit: invocation.UnitCount, Value: 1, ByVersion: true}, false},
	}
	for _, r := range rows {
		t.Run(r.rule, func(t *testing.T) {
			ctx, rec := invocation.NewMetrics("f", "1").Begin(context.Background())
			invocation.Add(ctx, r.m)
			raw := write(rec)
			line := emftest.Check(t, raw)
			_, defined := line.Value(r.m.Name)
			warnings, _ := line.Members["warnings"].([]any)
			if defined != r.ok || len(warnings) != map[bool]int{true: 0, false: 1}[r.ok] {
				t.Errorf("defined %v, warnings %v: %.400s", defined, warnings, raw)
			}
			if len(line.Metrics()) != map[bool]int{true: 3, false: 2}[r.ok] {
				t.Errorf("metrics %v", line.Metrics())
			}
		})
	}
	// Conflicts with what the line holds already: the later metric is left
	// out.
	conflicts := []struct {
		rule   string
		first  invocation.Metric
		second invocation.Metric
	}{
		{"a metric defined twice", invocation.Count("Starts", 1), invocation.Count("Starts", 2)},
		{"a metric named as a dimension", invocation.Count("Refusals", 1, code("a")), invocation.Count("Code", 1)},
		{"a dimension named as a metric", invocation.Count("Starts", 1), invocation.Count("Refusals", 1, invocation.Dimension{Name: "Starts", Value: "x"})},
		{"a metric named Function", invocation.Count("Starts", 1), invocation.Count("Function", 1)},
		{"a metric named ColdStart", invocation.Count("Starts", 1), invocation.Count("ColdStart", 0)},
		{"a dimension with another value", invocation.Count("Refusals", 1, code("a")), invocation.Count("Faults", 1, code("b"))},
		{"a dimension Version with another value than the version's", invocation.Count("Refusals", 1, invocation.Dimension{Name: "Version", Value: "2"}),
			invocation.Metric{Name: "Faults", Unit: invocation.UnitCount, Value: 1, ByVersion: true}},
		{"a metric named Version, then one by the version", invocation.Count("Version", 1),
			invocation.Metric{Name: "Faults", Unit: invocation.UnitCount, Value: 1, ByVersion: true}},
		{"one by the version, then a metric named Version", invocation.Metric{Name: "Faults", Unit: invocation.UnitCount, Value: 1, ByVersion: true},
			invocation.Count("Version", 1)},
	}
	for _, c := range conflicts {
		t.Run(c.rule, func(t *testing.T) {
			ctx, rec := invocation.NewMetrics("f", "1").Begin(context.Background())
			invocation.Add(ctx, c.first, c.second)
			raw := write(rec)
			line := emftest.Check(t, raw)
			warnings, _ := line.Members["warnings"].([]any)
			if len(line.Metrics()) != 3 || len(warnings) != 1 {
				t.Errorf("metrics %v, warnings %v", line.Metrics(), warnings)
			}
			if v, _ := line.Value(c.first.Name); v != c.first.Value {
				t.Errorf("%s is %v, want %v", c.first.Name, v, c.first.Value)
			}
		})
	}
	// The same dimension with the same value is one member for both.
	ctx, rec := invocation.NewMetrics("f", "1").Begin(context.Background())
	invocation.Add(ctx, invocation.Count("Refusals", 1, code("a")), invocation.Count("Faults", 1, code("a")))
	if line := emftest.Check(t, write(rec)); len(line.Directives) != 2 || !slices.Equal(line.Sets("Faults"), []string{"Function", "Function,Code"}) {
		t.Errorf("%v", line.Directives)
	}
}

// TestUnnamedFunction: a Function dimension that breaks the rules leaves
// every metric out, and the line says so; a Version dimension that breaks
// them leaves out the metrics that go by it.
func TestUnnamedFunction(t *testing.T) {
	_, rec := invocation.NewMetrics("", "1").Begin(context.Background())
	raw := write(rec)
	if strings.Contains(raw, "_aws") || !strings.Contains(raw, `"warnings":["metrics left out: dimension Function: the value is not`) {
		t.Errorf("%s", raw)
	}
	ctx, rec := invocation.NewMetrics("f", "").Begin(context.Background())
	invocation.Add(ctx, invocation.Count("Refusals", 1), invocation.Metric{Name: "Faults", Unit: invocation.UnitCount, Value: 1, ByVersion: true})
	raw = write(rec)
	line := emftest.Check(t, raw)
	if _, ok := line.Value("Faults"); ok || !slices.Equal(line.Metrics(), []string{"ColdStart", "DynamoDBRequests", "Refusals"}) ||
		!strings.Contains(raw, `"warnings":["metric \"Faults\" left out: dimension Version: the value is not`) {
		t.Errorf("%s", raw)
	}
}

// TestColdStart: the first invocation to begin in an execution environment
// is its cold start, whatever begins at the same time; every other is not;
// each environment has its own.
func TestColdStart(t *testing.T) {
	m := invocation.NewMetrics("f", "1")
	recs := make([]*invocation.Record, 64)
	var wg sync.WaitGroup
	for i := range recs {
		wg.Go(func() { _, recs[i] = m.Begin(context.Background()) })
	}
	wg.Wait()
	cold := 0
	for _, r := range recs {
		v, _ := emftest.Check(t, write(r)).Value("ColdStart")
		cold += int(v)
	}
	if cold != 1 {
		t.Errorf("%d cold starts among %d invocations begun at once", cold, len(recs))
	}
	_, next := m.Begin(context.Background())
	if v, _ := emftest.Check(t, write(next)).Value("ColdStart"); v != 0 {
		t.Errorf("a later invocation: ColdStart %v", v)
	}
	_, other := invocation.NewMetrics("g", "1").Begin(context.Background())
	if v, _ := emftest.Check(t, write(other)).Value("ColdStart"); v != 1 {
		t.Errorf("another environment's first: ColdStart %v", v)
	}
}

// TestNoEnvironment: a record outside any execution environment (With, or
// a nil *Metrics) writes its members and no metric.
func TestNoEnvironment(t *testing.T) {
	var m *invocation.Metrics
	for name, begin := range map[string]func(context.Context) (context.Context, *invocation.Record){"With": invocation.With, "nil Metrics": m.Begin} {
		ctx, rec := begin(context.Background())
		invocation.CountRequest(ctx)
		invocation.Add(ctx, invocation.Count("Starts", 1))
		invocation.Warn(ctx, "setting ignored: x")
		raw := write(rec)
		if strings.Contains(raw, "_aws") || strings.Contains(raw, "Starts") || strings.Contains(raw, "ColdStart") ||
			!strings.Contains(raw, `"dynamodbRequests":1,"warnings":["setting ignored: x"]`) {
			t.Errorf("%s: %s", name, raw)
		}
	}
}

// BenchmarkAPILine is the metrics' part in writing a session start's line:
// the record's members rendered and written as JSON.
func BenchmarkAPILine(b *testing.B) {
	m := invocation.NewMetrics("SessionStartFunction", "1")
	log := slog.New(slog.NewJSONHandler(io.Discard, nil))
	for b.Loop() {
		ctx, rec := m.Begin(context.Background())
		invocation.CountRequest(ctx)
		invocation.Add(ctx, invocation.Count("Starts", 1,
			invocation.Dimension{Name: "Provider", Value: "cloudflare-containers"}, invocation.Dimension{Name: "Allocation", Value: "cloudflare-containers-standard-4"}))
		log.LogAttrs(ctx, slog.LevelInfo, "request", rec.Attrs(now)...)
	}
}

// BenchmarkLineWithoutMetrics is the same line outside an environment, for
// comparison.
func BenchmarkLineWithoutMetrics(b *testing.B) {
	log := slog.New(slog.NewJSONHandler(io.Discard, nil))
	for b.Loop() {
		ctx, rec := invocation.With(context.Background())
		invocation.CountRequest(ctx)
		log.LogAttrs(ctx, slog.LevelInfo, "request", rec.Attrs(now)...)
	}
}
