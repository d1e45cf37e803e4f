package template

// What the template's alarms and dashboard must be, and how to read them:
// shared by the template tests (template.yaml as written) and the deploy
// test (what moto's CloudFormation created from it).

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/awslabs/goformation/v7/intrinsics"

	hookpkg "github.com/cloud-agent/control-plane/shared/hook"
	"github.com/cloud-agent/control-plane/shared/sessionevents"
)

// MetricNamespace is the namespace of the functions' own metrics, which
// their log lines carry in Embedded Metric Format.
const MetricNamespace = "CloudAgent/ControlPlane"

// APIFunctions are the functions behind the HTTP API, FiringFunction the
// firing, EventsFunction the session events function, by logical id.
var (
	APIFunctions   = []string{"SessionStartFunction", "AllocationLookupFunction", "TriggersFunction", "TriggerHookFunction", "EnvironmentsFunction", "RuntimeFunction"}
	FiringFunction = "TriggerFireFunction"
	EventsFunction = "SessionEventsFunction"
)

// ReleaseAlias is the alias every function is published through: what
// the API, the schedule and the alarms invoke and watch.
const ReleaseAlias = "live"

// AlarmMetric is a metric an alarm evaluates. A dimension's value is
// written as in the template: "!Ref <LogicalId>", "!GetAtt
// <LogicalId>.<Attribute>", "!Sub <string>", or a literal.
type AlarmMetric struct {
	Namespace, Name, Stat string
	Period                int
	Dimensions            map[string]string
}

// Alarm is what an alarm evaluates and when it goes into ALARM.
type Alarm struct {
	// Metrics holds the alarm's one metric, or the metrics of its metric
	// math, in the order the template lists them.
	Metrics []AlarmMetric
	// Expression is the metric math that returns the alarm's data; empty
	// for an alarm on one metric.
	Expression                           string
	Comparison                           string
	Threshold                            float64
	EvaluationPeriods, DatapointsToAlarm int
	TreatMissingData                     string
	// Quiet is an alarm that notifies no one (no AlarmActions, no
	// OKActions): a release alarm, which CodeDeploy reads.
	Quiet bool
}

func ref(id string) string    { return "!Ref " + id }
func getAtt(id string) string { return "!GetAtt " + id }
func sub(s string) string     { return "!Sub " + s }

func throttles(metric, index string) AlarmMetric {
	m := AlarmMetric{"AWS/DynamoDB", metric, "Sum", 60, map[string]string{"TableName": ref(TableLogicalID)}}
	if index != "" {
		m.Dimensions["GlobalSecondaryIndexName"] = index
	}
	return m
}

// version is the number of the version a function's alias live runs, as
// the template writes it (SAM resolves <Function>.Version to the version
// it publishes).
func version(fn string) string { return getAtt(fn + ".Version.Version") }

// onVersion is a Lambda metric of the version a function's alias live runs.
func onVersion(name, fn string) AlarmMetric {
	return AlarmMetric{"AWS/Lambda", name, "Sum", 60, map[string]string{
		"FunctionName": ref(fn), "Resource": sub("${" + fn + "}:" + ReleaseAlias), "ExecutedVersion": version(fn)}}
}

// apiRelease is the release alarm of an API function: 10% or more of the
// requests of the version its alias runs failed (5xx answers and Lambda
// errors) in 2 of 10 minutes.
func apiRelease(fn string) Alarm {
	return Alarm{
		Metrics: []AlarmMetric{
			{MetricNamespace, "Faults", "Sum", 60, map[string]string{"Function": ref(fn), "Version": version(fn)}},
			onVersion("Errors", fn), onVersion("Invocations", fn),
		},
		Expression: "100 * (FILL(faults, 0) + FILL(errors, 0)) / invocations",
		Comparison: "GreaterThanOrEqualToThreshold", Threshold: 10, EvaluationPeriods: 10, DatapointsToAlarm: 2,
		TreatMissingData: "notBreaching", Quiet: true,
	}
}

// WantAlarms are the template's alarms, by logical id.
var WantAlarms = map[string]Alarm{
	// Each function's release alarm, on the version its alias runs.
	"SessionStartReleaseAlarm":     apiRelease("SessionStartFunction"),
	"AllocationLookupReleaseAlarm": apiRelease("AllocationLookupFunction"),
	"TriggersReleaseAlarm":         apiRelease("TriggersFunction"),
	"TriggerHookReleaseAlarm":      apiRelease("TriggerHookFunction"),
	"EnvironmentsReleaseAlarm":     apiRelease("EnvironmentsFunction"),
	"RuntimeReleaseAlarm":          apiRelease("RuntimeFunction"),
	"TriggerFireReleaseAlarm": {
		Metrics:    []AlarmMetric{onVersion("Errors", FiringFunction)},
		Comparison: "GreaterThanOrEqualToThreshold", Threshold: 1, EvaluationPeriods: 1, DatapointsToAlarm: 1,
		TreatMissingData: "notBreaching", Quiet: true,
	},
	// The version the session events function's alias runs left a record
	// unannounced, or failed, in 2 of 10 minutes.
	"SessionEventsReleaseAlarm": {
		Metrics: []AlarmMetric{
			{MetricNamespace, sessionevents.MetricFailed, "Sum", 60, map[string]string{"Function": ref(EventsFunction), "Version": version(EventsFunction)}},
			onVersion("Errors", EventsFunction),
		},
		Expression: "FILL(failed, 0) + FILL(errors, 0)",
		Comparison: "GreaterThanOrEqualToThreshold", Threshold: 1, EvaluationPeriods: 10, DatapointsToAlarm: 2,
		TreatMissingData: "notBreaching", Quiet: true,
	},
	// Any batch of the stream in the session events' failure queue.
	"SessionEventsFailuresAlarm": {
		Metrics:    []AlarmMetric{{"AWS/SQS", "ApproximateNumberOfMessagesVisible", "Maximum", 60, map[string]string{"QueueName": getAtt("SessionEventsFailures.QueueName")}}},
		Comparison: "GreaterThanOrEqualToThreshold", Threshold: 1, EvaluationPeriods: 1, DatapointsToAlarm: 1,
		TreatMissingData: "notBreaching",
	},
	// The mapping's oldest record waited over an hour, in 3 of 5 minutes.
	"SessionEventsIteratorAgeAlarm": {
		Metrics: []AlarmMetric{{"AWS/Lambda", "IteratorAge", "Maximum", 60, map[string]string{
			"FunctionName": ref(EventsFunction), "Resource": sub("${" + EventsFunction + "}:" + ReleaseAlias)}}},
		Comparison: "GreaterThanThreshold", Threshold: 3600000, EvaluationPeriods: 5, DatapointsToAlarm: 3,
		TreatMissingData: "notBreaching",
	},
	// Any message in the firing's dead-letter queue.
	"TriggerFireDeadLetterAlarm": {
		Metrics:    []AlarmMetric{{"AWS/SQS", "ApproximateNumberOfMessagesVisible", "Maximum", 60, map[string]string{"QueueName": getAtt("TriggerFireDeadLetterQueue.QueueName")}}},
		Comparison: "GreaterThanOrEqualToThreshold", Threshold: 1, EvaluationPeriods: 1, DatapointsToAlarm: 1,
		TreatMissingData: "notBreaching",
	},
	// The firing's alias failed in 3 of 5 minutes, whichever version ran.
	"TriggerFireErrorsAlarm": {
		Metrics: []AlarmMetric{{"AWS/Lambda", "Errors", "Sum", 60, map[string]string{
			"FunctionName": ref(FiringFunction), "Resource": sub("${" + FiringFunction + "}:" + ReleaseAlias)}}},
		Comparison: "GreaterThanOrEqualToThreshold", Threshold: 1, EvaluationPeriods: 5, DatapointsToAlarm: 3,
		TreatMissingData: "notBreaching",
	},
	// A due trigger waited over 2 minutes, twice in a row; no data is a
	// firing that did not run.
	"FiringLagAlarm": {
		Metrics:    []AlarmMetric{{MetricNamespace, "FiringLag", "Maximum", 60, map[string]string{"Function": ref(FiringFunction)}}},
		Comparison: "GreaterThanThreshold", Threshold: 120, EvaluationPeriods: 2, DatapointsToAlarm: 2,
		TreatMissingData: "breaching",
	},
	// 5% of the API's requests answered 5xx, counted against at least 40
	// requests per 5 minutes, in 2 of 3 windows.
	"ApiServerErrorRateAlarm": {
		Metrics: []AlarmMetric{
			{"AWS/ApiGateway", "5xx", "Sum", 300, map[string]string{"ApiId": ref("HttpApi")}},
			{"AWS/ApiGateway", "Count", "Sum", 300, map[string]string{"ApiId": ref("HttpApi")}},
		},
		Expression: "100 * FILL(errors, 0) / IF(requests < 40, 40, requests)",
		Comparison: "GreaterThanOrEqualToThreshold", Threshold: 5, EvaluationPeriods: 3, DatapointsToAlarm: 2,
		TreatMissingData: "notBreaching",
	},
	// Throttle events on the table or any index in 2 of 5 minutes.
	"SessionsTableThrottleAlarm": {
		Metrics: []AlarmMetric{
			throttles("ReadThrottleEvents", ""), throttles("WriteThrottleEvents", ""),
			throttles("ReadThrottleEvents", "TriggersByUser"), throttles("WriteThrottleEvents", "TriggersByUser"),
			throttles("ReadThrottleEvents", "DueTriggersAll"), throttles("WriteThrottleEvents", "DueTriggersAll"),
			throttles("ReadThrottleEvents", "EnvironmentsByOwner"), throttles("WriteThrottleEvents", "EnvironmentsByOwner"),
		},
		Expression: "FILL(tableRead, 0) + FILL(tableWrite, 0) + FILL(byUserRead, 0) + FILL(byUserWrite, 0) + FILL(dueRead, 0) + FILL(dueWrite, 0) + " +
			"FILL(byOwnerRead, 0) + FILL(byOwnerWrite, 0)",
		Comparison: "GreaterThanOrEqualToThreshold", Threshold: 1, EvaluationPeriods: 5, DatapointsToAlarm: 2,
		TreatMissingData: "notBreaching",
	},
}

// rawTemplate is template.yaml as written: its short-form intrinsics in
// long form (`!Ref X` is {"Ref": "X"}), none of them resolved.
func rawTemplate(t *testing.T) map[string]any {
	t.Helper()
	data, err := os.ReadFile("../../template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	out, err := processYAML(data, &intrinsics.ProcessorOptions{NoProcess: true})
	if err != nil {
		t.Fatal(err)
	}
	var tpl map[string]any
	if err := json.Unmarshal(out, &tpl); err != nil {
		t.Fatal(err)
	}
	return tpl
}

// resourcesOfType returns the properties of the template's resources of
// one type, by logical id.
func resourcesOfType(tpl map[string]any, typ string) map[string]map[string]any {
	out := map[string]map[string]any{}
	resources, _ := tpl["Resources"].(map[string]any)
	for id, r := range resources {
		r, _ := r.(map[string]any)
		if r["Type"] == typ {
			props, _ := r["Properties"].(map[string]any)
			out[id] = props
		}
	}
	return out
}

// intrinsicText writes a property value as the template does: a literal as
// it is, {"Ref": "X"} as "!Ref X", {"Fn::GetAtt": ["X", "Y"]} (or "X.Y")
// as "!GetAtt X.Y", {"Fn::Sub": "s"} as "!Sub s"; anything else as JSON.
func intrinsicText(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case map[string]any:
		if len(v) == 1 {
			if id, ok := v["Ref"].(string); ok {
				return ref(id)
			}
			if s, ok := v["Fn::Sub"].(string); ok {
				return sub(s)
			}
			switch att := v["Fn::GetAtt"].(type) {
			case string:
				return getAtt(att)
			case []any:
				if len(att) == 2 {
					return getAtt(fmt.Sprint(att[0], ".", att[1]))
				}
			}
		}
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// ReadAlarm reads an alarm's properties, with their values as the template
// writes them (intrinsicText), into what it evaluates and whether it
// notifies anyone. It fails on a
// metric math query that returns data beside the expression, or on a
// metric that the expression does not use.
func ReadAlarm(props map[string]any) (Alarm, error) {
	num := func(k string, m map[string]any) int { f, _ := m[k].(float64); return int(f) }
	str := func(k string, m map[string]any) string { s, _ := m[k].(string); return s }
	dims := func(m map[string]any) map[string]string {
		out := map[string]string{}
		list, _ := m["Dimensions"].([]any)
		for _, d := range list {
			d, _ := d.(map[string]any)
			out[str("Name", d)] = intrinsicText(d["Value"])
		}
		return out
	}
	a := Alarm{
		Comparison:        str("ComparisonOperator", props),
		EvaluationPeriods: num("EvaluationPeriods", props),
		DatapointsToAlarm: num("DatapointsToAlarm", props),
		TreatMissingData:  str("TreatMissingData", props),
		Quiet:             props["AlarmActions"] == nil && props["OKActions"] == nil,
	}
	a.Threshold, _ = props["Threshold"].(float64)
	queries, _ := props["Metrics"].([]any)
	if len(queries) == 0 {
		a.Metrics = []AlarmMetric{{str("Namespace", props), str("MetricName", props), str("Statistic", props), num("Period", props), dims(props)}}
		return a, nil
	}
	var ids []string
	for _, q := range queries {
		q, _ := q.(map[string]any)
		returns, ok := q["ReturnData"].(bool)
		if !ok {
			returns = true // CloudWatch's default
		}
		if e := str("Expression", q); e != "" {
			if !returns || a.Expression != "" {
				return a, fmt.Errorf("expression %s: exactly one query returns data, the expression", str("Id", q))
			}
			a.Expression = e
			continue
		}
		if returns {
			return a, fmt.Errorf("metric %s returns data: only the expression may", str("Id", q))
		}
		stat, _ := q["MetricStat"].(map[string]any)
		metric, _ := stat["Metric"].(map[string]any)
		a.Metrics = append(a.Metrics, AlarmMetric{str("Namespace", metric), str("MetricName", metric), str("Stat", stat), num("Period", stat), dims(metric)})
		ids = append(ids, str("Id", q))
	}
	for _, id := range ids {
		if !regexp.MustCompile(`\b` + regexp.QuoteMeta(id) + `\b`).MatchString(a.Expression) {
			return a, fmt.Errorf("the expression %q does not use the metric %s", a.Expression, id)
		}
	}
	return a, nil
}

// DashboardMetric is a metric a dashboard's widgets graph: a line of a
// metric widget, or the metrics that a SEARCH expression finds. For a
// SEARCH, Dimensions holds every dimension of its schema, with the value
// its search term requires ("a OR b" for either), or "" for any.
type DashboardMetric struct {
	Namespace, Name, Stat string
	Dimensions            map[string]string
	Search                bool
}

func (m DashboardMetric) String() string {
	var d []string
	for k, v := range m.Dimensions {
		d = append(d, k+"="+v)
	}
	sort.Strings(d)
	search := ""
	if m.Search {
		search = " (SEARCH)"
	}
	return fmt.Sprintf("%s %s %s [%s]%s", m.Namespace, m.Name, m.Stat, strings.Join(d, ", "), search)
}

// Dashboard is what a dashboard body shows.
type Dashboard struct {
	Metrics []DashboardMetric
	// Alarms are the ARNs of the alarm status widgets.
	Alarms []string
	// Regions are the regions of the metric widgets.
	Regions []string
}

var (
	searchExpr = regexp.MustCompile(`^SEARCH\('\{([^}]*)\}\s*(.*?)\s*',\s*'(\w+)',\s*\d+\)$`)
	searchTerm = regexp.MustCompile(`(\w+)="([^"]*)"`)
)

// ReadDashboard reads a dashboard body (JSON, its references substituted).
// Every line of a metric widget names its namespace (no "." shorthand),
// and every expression but metric math over the widget's own lines is a
// SEARCH of a schema.
func ReadDashboard(body string) (Dashboard, error) {
	var d Dashboard
	var doc struct {
		Widgets []struct {
			Type       string
			Properties struct {
				Region, Stat string
				Metrics      [][]any
				Alarms       []string
			}
		}
	}
	dec := json.NewDecoder(strings.NewReader(body))
	if err := dec.Decode(&doc); err != nil {
		return d, err
	}
	if dec.More() {
		return d, fmt.Errorf("data after the body's JSON")
	}
	for i, w := range doc.Widgets {
		switch w.Type {
		case "alarm":
			d.Alarms = append(d.Alarms, w.Properties.Alarms...)
		case "metric":
			d.Regions = append(d.Regions, w.Properties.Region)
			for _, line := range w.Properties.Metrics {
				m, err := readLine(line, w.Properties.Stat)
				if err != nil {
					return d, fmt.Errorf("widget %d: %w", i, err)
				}
				if m.Name != "" {
					d.Metrics = append(d.Metrics, m)
				}
			}
		}
	}
	return d, nil
}

// readLine reads a line of a metric widget: [namespace, name, dimension
// name, value, ..., {options}], or [{"expression": ...}].
func readLine(line []any, stat string) (DashboardMetric, error) {
	m := DashboardMetric{Stat: stat, Dimensions: map[string]string{}}
	if len(line) == 0 {
		return m, fmt.Errorf("an empty line")
	}
	if opts, ok := line[len(line)-1].(map[string]any); ok {
		if s, ok := opts["stat"].(string); ok {
			m.Stat = s
		}
		line = line[:len(line)-1]
		if len(line) == 0 {
			expr, _ := opts["expression"].(string)
			if !strings.HasPrefix(expr, "SEARCH(") {
				return DashboardMetric{}, nil // metric math over the widget's lines
			}
			s := searchExpr.FindStringSubmatch(expr)
			if s == nil {
				return m, fmt.Errorf("a SEARCH without a schema, a term and a statistic: %s", expr)
			}
			m.Search, m.Stat = true, s[3]
			schema := strings.Split(s[1], ",")
			m.Namespace = schema[0]
			for _, dim := range schema[1:] {
				m.Dimensions[dim] = ""
			}
			for _, term := range searchTerm.FindAllStringSubmatch(s[2], -1) {
				switch _, inSchema := m.Dimensions[term[1]]; {
				case term[1] == "MetricName":
					m.Name = term[2]
				case !inSchema:
					return m, fmt.Errorf("a SEARCH filters on %s, not in its schema: %s", term[1], expr)
				case m.Dimensions[term[1]] == "":
					m.Dimensions[term[1]] = term[2]
				default:
					m.Dimensions[term[1]] += " OR " + term[2]
				}
			}
			if m.Name == "" {
				return m, fmt.Errorf("a SEARCH without MetricName: %s", expr)
			}
			return m, nil
		}
	}
	var names []string
	for _, v := range line {
		s, ok := v.(string)
		if !ok {
			return m, fmt.Errorf("a line of strings and then its options: %v", line)
		}
		names = append(names, s)
	}
	if len(names) < 2 || len(names)%2 != 0 || names[0] == "." || names[1] == "." {
		return m, fmt.Errorf("a line that is not namespace, name and dimension pairs: %v", names)
	}
	m.Namespace, m.Name = names[0], names[1]
	for i := 2; i < len(names); i += 2 {
		m.Dimensions[names[i]] = names[i+1]
	}
	return m, nil
}

// WantDashboard is what the dashboard must show, with fn giving the value
// of the Function dimension of a function (by logical id) and resolve the
// value of an alarm metric's dimension (as the template writes it): the
// functions' metrics of the Embedded Metric Format, by function, by
// allocation and by code, and every alarm's metrics.
func WantDashboard(fn func(logicalID string) string, resolve func(string) string) []DashboardMetric {
	var want []DashboardMetric
	add := func(name, stat string, dims map[string]string, search bool) {
		want = append(want, DashboardMetric{MetricNamespace, name, stat, dims, search})
	}
	var apiFns []string
	for _, id := range APIFunctions {
		apiFns = append(apiFns, fn(id))
	}
	start, hook := fn("SessionStartFunction"), fn("TriggerHookFunction")
	for _, name := range []string{"Starts", "Replays"} {
		add(name, "Sum", map[string]string{"Function": start}, false)
	}
	// A delivery's session is a start too, by provider and allocation.
	add("Starts", "Sum", map[string]string{"Function": hook}, false)
	add("Starts", "Sum", map[string]string{"Function": start + " OR " + hook, "Provider": "", "Allocation": ""}, true)
	add("Replays", "Sum", map[string]string{"Function": start, "Provider": "", "Allocation": ""}, true)
	add(hookpkg.Deliveries, "Sum", map[string]string{"Function": hook}, false)
	add(hookpkg.Deliveries, "Sum", map[string]string{"Function": hook, hookpkg.DimOutcome: ""}, true)
	for _, name := range []string{"Refusals", "Faults"} {
		for _, f := range apiFns {
			add(name, "Sum", map[string]string{"Function": f}, false)
		}
		add(name, "Sum", map[string]string{"Function": strings.Join(apiFns, " OR "), "Code": ""}, true)
	}
	for _, name := range []string{"Due", "Fired", "Duplicates", "Skipped", "Fallbacks", "Failed", "TimedOut"} {
		add(name, "Sum", map[string]string{"Function": fn(FiringFunction)}, false)
	}
	add("FiringLag", "Maximum", map[string]string{"Function": fn(FiringFunction)}, false)
	for _, name := range []string{sessionevents.MetricPut, sessionevents.MetricSkipped, sessionevents.MetricFailed} {
		add(name, "Sum", map[string]string{"Function": fn(EventsFunction)}, false)
	}
	for _, id := range append(slices.Clone(APIFunctions), FiringFunction) {
		add("ColdStart", "Sum", map[string]string{"Function": fn(id)}, false)
		add("DynamoDBRequests", "Sum", map[string]string{"Function": fn(id)}, false)
	}
	// The session events function makes no DynamoDB request.
	add("ColdStart", "Sum", map[string]string{"Function": fn(EventsFunction)}, false)
	var ids []string
	for id := range WantAlarms {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		for _, m := range WantAlarms[id].Metrics {
			dims := map[string]string{}
			for k, v := range m.Dimensions {
				dims[k] = resolve(v)
			}
			want = append(want, DashboardMetric{m.Namespace, m.Name, m.Stat, dims, false})
		}
	}
	return want
}

// MissingMetrics returns the metrics of want that got lacks.
func MissingMetrics(got, want []DashboardMetric) []string {
	have := map[string]bool{}
	for _, m := range got {
		have[m.String()] = true
	}
	var missing []string
	for _, m := range want {
		if !have[m.String()] {
			missing = append(missing, m.String())
		}
	}
	return missing
}
