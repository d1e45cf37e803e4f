// Package emftest checks a log line against the rules of CloudWatch
// Embedded Metric Format, for tests: the rules as the format's
// specification and CloudWatch state them, written out here apart from the
// code that renders the lines.
package emftest

import (
	"encoding/json/v2"
	"math"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/cloud-agent/control-plane/shared/invocation"
)

// units are the units a metric definition may name.
var units = []string{
	"Seconds", "Microseconds", "Milliseconds", "Bytes", "Kilobytes", "Megabytes", "Gigabytes", "Terabytes",
	"Bits", "Kilobits", "Megabits", "Gigabits", "Terabits", "Percent", "Count",
	"Bytes/Second", "Kilobytes/Second", "Megabytes/Second", "Gigabytes/Second", "Terabytes/Second",
	"Bits/Second", "Kilobits/Second", "Megabits/Second", "Gigabits/Second", "Terabits/Second", "Count/Second", "None",
}

// Line is a log line whose metrics passed the checks.
type Line struct {
	Members    map[string]any // every member of the line
	Timestamp  int64          // _aws.Timestamp, epoch milliseconds
	Directives []Directive
}

// Directive is one member of _aws.CloudWatchMetrics.
type Directive struct {
	Namespace  string
	Dimensions [][]string
	Metrics    []struct{ Name, Unit string }
}

// Check parses a JSON log line and checks its metrics, failing t at the
// first broken rule: the line is one JSON object, without repeated
// members; _aws holds exactly Timestamp (whole epoch milliseconds) and
// CloudWatchMetrics (at least one directive); each directive holds exactly
// Namespace (invocation.Namespace), Dimensions (at least one set, each of
// at most 30 names) and Metrics (1 to 100 definitions of a Name and a
// valid Unit); every name is 1 to 255 characters and a top-level member of
// the line, a dimension's a string of 1 to 1024 printable ASCII characters
// not all spaces, a metric's a number; and no metric is defined twice.
func Check(t testing.TB, line string) *Line {
	t.Helper()
	var members map[string]any
	if err := json.Unmarshal([]byte(line), &members); err != nil {
		t.Fatalf("not one JSON object without repeated members: %v: %s", err, line)
	}
	raw, ok := members["_aws"].(map[string]any)
	if !ok {
		t.Fatalf("no _aws object: %s", line)
	}
	only(t, raw, "_aws", "Timestamp", "CloudWatchMetrics")
	var meta struct {
		Timestamp         float64
		CloudWatchMetrics []map[string]any
	}
	remarshal(t, raw, &meta)
	if meta.Timestamp <= 0 || meta.Timestamp != math.Trunc(meta.Timestamp) {
		t.Fatalf("_aws.Timestamp %v is not whole epoch milliseconds", meta.Timestamp)
	}
	if len(meta.CloudWatchMetrics) == 0 {
		t.Fatalf("no directive: %s", line)
	}
	l := &Line{Members: members, Timestamp: int64(meta.Timestamp)}
	defined := map[string]bool{}
	for _, raw := range meta.CloudWatchMetrics {
		l.Directives = append(l.Directives, checkDirective(t, raw, members, defined))
	}
	if t.Failed() {
		t.FailNow()
	}
	return l
}

// checkDirective checks one directive of a line of members, whose
// metrics so far are defined.
func checkDirective(t testing.TB, raw, members map[string]any, defined map[string]bool) Directive {
	t.Helper()
	only(t, raw, "directive", "Namespace", "Dimensions", "Metrics")
	var d Directive
	remarshal(t, raw, &d)
	if d.Namespace != invocation.Namespace {
		t.Errorf("namespace %q, want %q", d.Namespace, invocation.Namespace)
	}
	if len(d.Dimensions) == 0 {
		t.Errorf("a directive without a dimension set: %v", raw)
	}
	for _, set := range d.Dimensions {
		if len(set) > 30 {
			t.Errorf("a dimension set of %d names, more than 30: %v", len(set), set)
		}
		for _, name := range set {
			checkName(t, name)
			v, ok := members[name].(string)
			if !ok || len(v) > 1024 || strings.TrimSpace(v) == "" || strings.ContainsFunc(v, func(r rune) bool { return r < ' ' || r > '~' }) {
				t.Errorf("dimension %s is %#v, not a member of 1 to 1024 printable ASCII characters", name, members[name])
			}
		}
	}
	if len(d.Metrics) == 0 || len(d.Metrics) > 100 {
		t.Errorf("a directive of %d metrics, not 1 to 100", len(d.Metrics))
	}
	for i, m := range d.Metrics {
		only(t, raw["Metrics"].([]any)[i].(map[string]any), "metric definition", "Name", "Unit")
		checkName(t, m.Name)
		if _, ok := members[m.Name].(float64); !ok {
			t.Errorf("metric %s is %#v, not a number member", m.Name, members[m.Name])
		}
		if !slices.Contains(units, m.Unit) {
			t.Errorf("metric %s: unit %q is not a CloudWatch unit", m.Name, m.Unit)
		}
		if defined[m.Name] {
			t.Errorf("metric %s is defined twice", m.Name)
		}
		defined[m.Name] = true
	}
	return d
}

// Value is the value of a metric the line defines, and whether it does.
func (l *Line) Value(name string) (float64, bool) {
	if l.directive(name) == nil {
		return 0, false
	}
	v, _ := l.Members[name].(float64)
	return v, true
}

// Sets are the dimension sets of a metric the line defines, each as its
// names joined with commas (nil when it does not define it).
func (l *Line) Sets(name string) []string {
	d := l.directive(name)
	if d == nil {
		return nil
	}
	var sets []string
	for _, set := range d.Dimensions {
		sets = append(sets, strings.Join(set, ","))
	}
	return sets
}

// Dimensions are the dimensions of the line and their values.
func (l *Line) Dimensions() map[string]string {
	dims := map[string]string{}
	for _, d := range l.Directives {
		for _, set := range d.Dimensions {
			for _, name := range set {
				dims[name] = l.Members[name].(string)
			}
		}
	}
	return dims
}

// Metrics are the names of the metrics the line defines, in order.
func (l *Line) Metrics() []string {
	var names []string
	for _, d := range l.Directives {
		for _, m := range d.Metrics {
			names = append(names, m.Name)
		}
	}
	return names
}

func (l *Line) directive(metric string) *Directive {
	for i, d := range l.Directives {
		for _, m := range d.Metrics {
			if m.Name == metric {
				return &l.Directives[i]
			}
		}
	}
	return nil
}

// only checks that an object of the format holds no member but those named.
func only(t testing.TB, obj map[string]any, what string, names ...string) {
	t.Helper()
	for k := range obj {
		if !slices.Contains(names, k) {
			t.Errorf("%s holds the member %q, which the format does not define", what, k)
		}
	}
}

func checkName(t testing.TB, name string) {
	t.Helper()
	if n := utf8.RuneCountInString(name); n == 0 || n > 255 {
		t.Errorf("name %q is not 1 to 255 characters", name)
	}
}

func remarshal(t testing.TB, in, out any) {
	t.Helper()
	b, err := json.Marshal(in)
	if err == nil {
		err = json.Unmarshal(b, out)
	}
	if err != nil {
		t.Fatalf("%v: %v", in, err)
	}
}
