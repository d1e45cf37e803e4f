package invocation

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strings"
	"sync/atomic"
	"time"
)

// Namespace is the CloudWatch namespace of every metric.
const Namespace = "CloudAgent/ControlPlane"

// DimFunction is the dimension of every metric: the function's name.
const DimFunction = "Function"

// DimVersion is the version of the function that ran, beside Function for
// the metrics that go by it (Metric.ByVersion): while a release shifts the
// traffic of an alias between two versions, it tells the new one's apart.
const DimVersion = "Version"

// The metrics on every line in an execution environment.
const (
	// ColdStart is 1 on the environment's first invocation, else 0.
	ColdStart = "ColdStart"
	// DynamoDBRequests is the number of DynamoDB requests the invocation
	// made.
	DynamoDBRequests = "DynamoDBRequests"
)

// Unit is a CloudWatch unit.
type Unit string

// The units the metrics use.
const (
	UnitCount   Unit = "Count"
	UnitSeconds Unit = "Seconds"
)

// units are every unit CloudWatch accepts.
var units = []Unit{
	"Seconds", "Microseconds", "Milliseconds", "Bytes", "Kilobytes", "Megabytes", "Gigabytes", "Terabytes",
	"Bits", "Kilobits", "Megabits", "Gigabits", "Terabits", "Percent", "Count",
	"Bytes/Second", "Kilobytes/Second", "Megabytes/Second", "Gigabytes/Second", "Terabytes/Second",
	"Bits/Second", "Kilobits/Second", "Megabits/Second", "Gigabits/Second", "Terabits/Second", "Count/Second", "None",
}

// Limits of the Embedded Metric Format and of CloudWatch.
const (
	maxDimensions      = 30   // dimensions in one dimension set
	maxMetrics         = 100  // metrics in one directive
	maxNameLength      = 255  // metric and dimension names
	maxDimensionLength = 1024 // dimension values
)

// maxValue bounds a metric's value: CloudWatch refuses any beyond 2^360
// either way.
var maxValue = math.Ldexp(1, 360)

// Dimension is a dimension of a metric and its value on the line.
type Dimension struct{ Name, Value string }

// Metric is one metric of an invocation: a value, published by the Function
// dimension alone and, when By names dimensions, by Function and those as
// well (a second dimension set); when ByVersion is set, by Function and
// Version as well (a further set).
type Metric struct {
	Name      string
	Unit      Unit
	Value     float64
	By        []Dimension
	ByVersion bool
}

// Count is a count of n by Function and, when by is not empty, by Function
// and by.
func Count(name string, n int, by ...Dimension) Metric {
	return Metric{Name: name, Unit: UnitCount, Value: float64(n), By: by}
}

// Metrics is one execution environment's part in the metrics of its
// invocations: the Function dimension of every metric, the Version
// dimension of those that go by it, and whether an invocation has begun,
// for ColdStart. Invocations may begin at once.
type Metrics struct {
	function, version string
	begun             atomic.Bool
}

// NewMetrics returns the metrics of an execution environment of the named
// function, at a version of it.
func NewMetrics(function, version string) *Metrics {
	return &Metrics{function: function, version: version}
}

// Begin returns a context that carries a new record of an invocation in the
// environment: its line carries the metrics, ColdStart 1 for the first
// invocation to begin and 0 for every other. A nil *Metrics begins a record
// outside any environment, as With does.
func (m *Metrics) Begin(ctx context.Context) (context.Context, *Record) {
	if m == nil {
		return With(ctx)
	}
	return with(ctx, &Record{env: m, cold: m.begun.CompareAndSwap(false, true)})
}

// emf is the _aws member of a line.
type emf struct {
	Timestamp         int64       `json:"Timestamp"`
	CloudWatchMetrics []directive `json:"CloudWatchMetrics"`
}

type directive struct {
	Namespace  string             `json:"Namespace"`
	Dimensions [][]string         `json:"Dimensions"`
	Metrics    []metricDefinition `json:"Metrics"`
}

type metricDefinition struct {
	Name string `json:"Name"`
	Unit Unit   `json:"Unit"`
}

// line is what the metrics of one line name: its dimensions with their
// values, and its metrics grouped by the dimensions they go by.
type line struct {
	dims    []Dimension // Function first
	version Dimension   // of the metrics that go by it
	groups  []group
}

// group is the metrics that go by the same dimensions beside Function: the
// By and ByVersion of its first.
type group struct {
	by        []Dimension
	byVersion bool
	metrics   []Metric
}

// render renders metrics as the members of one line in Embedded Metric
// Format, with timestamp now: the _aws member with one directive per group
// of at most 100 metrics that go by the same dimensions, then each
// dimension and each metric as a member of its own. A metric that breaks
// the format's rules, or that names a member the line has already given
// another meaning or value, is left out; left says why.
func render(now time.Time, function, version Dimension, metrics []Metric) (attrs []slog.Attr, left []string) {
	if err := checkDimension(function); err != nil {
		return nil, []string{"metrics left out: " + err.Error()}
	}
	l := line{dims: make([]Dimension, 1, 4), version: version, groups: make([]group, 0, 4)}
	l.dims[0] = function
	for _, m := range metrics {
		if err := l.add(m); err != nil {
			left = append(left, fmt.Sprintf("metric %.100q left out: %v", m.Name, err))
		}
	}
	meta := emf{Timestamp: now.UnixMilli(), CloudWatchMetrics: make([]directive, 0, len(l.groups))}
	attrs = make([]slog.Attr, 0, 1+len(l.dims)+len(metrics))
	attrs = append(attrs, slog.Attr{}) // _aws, below
	for _, d := range l.dims {
		attrs = append(attrs, slog.String(d.Name, d.Value))
	}
	for _, g := range l.groups {
		sets := [][]string{{function.Name}}
		if len(g.by) > 0 {
			set := make([]string, 1, 1+len(g.by))
			set[0] = function.Name
			for _, d := range g.by {
				set = append(set, d.Name)
			}
			sets = append(sets, set)
		}
		if g.byVersion {
			sets = append(sets, []string{function.Name, version.Name})
		}
		for chunk := range slices.Chunk(g.metrics, maxMetrics) {
			d := directive{Namespace: Namespace, Dimensions: sets, Metrics: make([]metricDefinition, len(chunk))}
			for i, m := range chunk {
				d.Metrics[i] = metricDefinition{m.Name, m.Unit}
				attrs = append(attrs, slog.Float64(m.Name, m.Value))
			}
			meta.CloudWatchMetrics = append(meta.CloudWatchMetrics, d)
		}
	}
	attrs[0] = slog.Any("_aws", meta)
	return attrs, left
}

// add adds a metric to the line, or says why it cannot go on it.
func (l *line) add(m Metric) error {
	switch {
	case !validName(m.Name):
		return fmt.Errorf("the name is not 1 to %d characters of PascalCase ASCII", maxNameLength)
	case !slices.Contains(units, m.Unit):
		return fmt.Errorf("unit %.100q is not a CloudWatch unit", m.Unit)
	case math.IsNaN(m.Value) || math.Abs(m.Value) > maxValue:
		return fmt.Errorf("value %v is not a number CloudWatch accepts", m.Value)
	case 1+len(m.By) > maxDimensions:
		return fmt.Errorf("%d dimensions, more than %d", 1+len(m.By), maxDimensions)
	case l.named(m.Name):
		return fmt.Errorf("the line has a member %s already", m.Name)
	}
	dims := m.By
	if m.ByVersion {
		dims = append(slices.Clip(m.By), l.version)
	}
	known := len(l.dims)
	for i, d := range dims {
		if err := l.addDimension(m.Name, dims, i, d); err != nil {
			l.dims = l.dims[:known]
			return err
		}
	}
	i := slices.IndexFunc(l.groups, func(g group) bool {
		return g.byVersion == m.ByVersion && slices.EqualFunc(g.by, m.By, func(a, b Dimension) bool { return a.Name == b.Name })
	})
	if i < 0 {
		l.groups = append(l.groups, group{by: m.By, byVersion: m.ByVersion})
		i = len(l.groups) - 1
	}
	l.groups[i].metrics = append(l.groups[i].metrics, m)
	return nil
}

// addDimension adds d, the i-th of the dimensions dims of a metric, to the
// line's, unless the line has it already with the same value.
func (l *line) addDimension(metric string, dims []Dimension, i int, d Dimension) error {
	if err := checkDimension(d); err != nil {
		return err
	}
	switch {
	case d.Name == l.dims[0].Name || d.Name == metric || slices.ContainsFunc(dims[:i], func(o Dimension) bool { return o.Name == d.Name }):
		return fmt.Errorf("dimension %s is named twice", d.Name)
	case l.metric(d.Name):
		return fmt.Errorf("dimension %s is a metric of the line", d.Name)
	}
	switch j := slices.IndexFunc(l.dims, func(o Dimension) bool { return o.Name == d.Name }); {
	case j < 0:
		l.dims = append(l.dims, d)
	case l.dims[j].Value != d.Value:
		return fmt.Errorf("dimension %s has another value on the line", d.Name)
	}
	return nil
}

// named reports whether the line has a dimension or metric of that name.
func (l *line) named(name string) bool {
	return l.metric(name) || slices.ContainsFunc(l.dims, func(d Dimension) bool { return d.Name == name })
}

// metric reports whether the line has a metric of that name.
func (l *line) metric(name string) bool {
	return slices.ContainsFunc(l.groups, func(g group) bool {
		return slices.ContainsFunc(g.metrics, func(m Metric) bool { return m.Name == name })
	})
}

// checkDimension checks a dimension's name and value against CloudWatch's
// rules: a value is 1 to 1024 printable ASCII characters, not all spaces.
func checkDimension(d Dimension) error {
	if !validName(d.Name) {
		return fmt.Errorf("dimension %.100q: the name is not 1 to %d characters of PascalCase ASCII", d.Name, maxNameLength)
	}
	if len(d.Value) > maxDimensionLength || strings.TrimSpace(d.Value) == "" ||
		strings.ContainsFunc(d.Value, func(r rune) bool { return r < ' ' || r > '~' }) {
		return fmt.Errorf("dimension %s: the value is not 1 to %d printable ASCII characters", d.Name, maxDimensionLength)
	}
	return nil
}

// validName reports whether a metric's or dimension's name is PascalCase
// ASCII (a capital letter, then letters and digits) of at most 255
// characters: within the format's rules for names, and never one of the
// line's other members, which are lowercase.
func validName(name string) bool {
	if name == "" || len(name) > maxNameLength || name[0] < 'A' || name[0] > 'Z' {
		return false
	}
	return !strings.ContainsFunc(name, func(r rune) bool {
		return (r < 'A' || r > 'Z') && (r < 'a' || r > 'z') && (r < '0' || r > '9')
	})
}
