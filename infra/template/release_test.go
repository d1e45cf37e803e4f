package template_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"math"
	"math/bits"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cloud-agent/control-plane/infra/local/testkit"
	"github.com/cloud-agent/control-plane/infra/template"
	"github.com/cloud-agent/control-plane/shared/sessionevents"
)

// wantRelease is how each function's releases reach its traffic: the
// CodeDeploy configuration of its deployment group, and the alarms that
// roll a release back, by logical id.
var wantRelease = map[string]struct {
	config string
	alarms []string
}{
	"SessionStartFunction":     {"Canary10Percent15Minutes", []string{"ApiServerErrorRateAlarm", "SessionStartReleaseAlarm"}},
	"AllocationLookupFunction": {"Canary10Percent15Minutes", []string{"AllocationLookupReleaseAlarm", "ApiServerErrorRateAlarm"}},
	"TriggersFunction":         {"Canary10Percent15Minutes", []string{"ApiServerErrorRateAlarm", "TriggersReleaseAlarm"}},
	"TriggerHookFunction":      {"Canary10Percent15Minutes", []string{"ApiServerErrorRateAlarm", "TriggerHookReleaseAlarm"}},
	"EnvironmentsFunction":     {"Canary10Percent15Minutes", []string{"ApiServerErrorRateAlarm", "EnvironmentsReleaseAlarm"}},
	"RuntimeFunction":          {"Canary10Percent15Minutes", []string{"ApiServerErrorRateAlarm", "RuntimeReleaseAlarm"}},
	"TriggerFireFunction":      {"Linear10PercentEvery1Minute", []string{"FiringLagAlarm", "TriggerFireDeadLetterAlarm", "TriggerFireErrorsAlarm", "TriggerFireReleaseAlarm"}},
	"SessionEventsFunction":    {"Canary10Percent15Minutes", []string{"SessionEventsReleaseAlarm"}},
}

// TestReleasesShiftThroughAliases reads the SAM translator's output: one
// CodeDeploy application; per function a version, the alias
// template.ReleaseAlias on it whose updates are its deployment group's,
// and that group, with its configuration, automatic rollback and the
// alarms of wantRelease; and every way a function is invoked (the HTTP
// API's integrations, the schedule's target, the resource-based
// permissions, the asynchronous invocation config) and every Lambda
// metric an alarm watches naming the alias, never the function alone
// ($LATEST).
func TestReleasesShiftThroughAliases(t *testing.T) {
	needSAMTranslator(t, "the releases' aliases and deployment groups are not checked")
	tpl := decodeTemplate(t, transform(t, templatePath, "s3://code/bootstrap.zip", deployParams))
	resources, _ := tpl["Resources"].(map[string]any)
	ofType := func(typ string) []string {
		var ids []string
		for id, r := range resources {
			if dig(r, "Type") == typ {
				ids = append(ids, id)
			}
		}
		slices.Sort(ids)
		return ids
	}
	if apps := ofType("AWS::CodeDeploy::Application"); len(apps) != 1 || dig(resources, apps[0], "Properties", "ComputePlatform") != "Lambda" {
		t.Fatalf("CodeDeploy applications %v, want one for Lambda", apps)
	}
	app := ofType("AWS::CodeDeploy::Application")[0]
	if groups := ofType("AWS::CodeDeploy::DeploymentGroup"); len(groups) != len(wantRelease) {
		t.Errorf("deployment groups %v, want one per function", groups)
	}

	aliases := map[string]string{} // the alias's logical id, by function
	for fn, want := range wantRelease {
		alias, version, group := releaseOf(t, resources, fn)
		if alias == "" {
			continue
		}
		aliases[fn] = alias
		if dig(resources, version, "Type") != "AWS::Lambda::Version" || dig(resources, version, "Properties", "FunctionName", "Ref") != fn {
			t.Errorf("%s: the alias is on %s, not a version of the function", fn, testkit.JSON(dig(resources, alias, "Properties", "FunctionVersion")))
		}
		update := dig(resources, alias, "UpdatePolicy", "CodeDeployLambdaAliasUpdate")
		if dig(update, "ApplicationName", "Ref") != app || dig(resources, group, "Type") != "AWS::CodeDeploy::DeploymentGroup" {
			t.Errorf("%s: the alias is updated by %s, not by a deployment group of %s", fn, testkit.JSON(update), app)
			continue
		}
		g := dig(resources, group, "Properties")
		if got := fmt.Sprint(dig(g, "DeploymentConfigName", "Fn::Sub", 1, "ConfigName")); got != want.config || dig(g, "ApplicationName", "Ref") != app {
			t.Errorf("%s: deployed by %s of %v, want %s", fn, testkit.JSON(dig(g, "DeploymentConfigName")), dig(g, "ApplicationName"), want.config)
		}
		if rb := dig(g, "AutoRollbackConfiguration"); dig(rb, "Enabled") != true || !slices.Contains(list(dig(rb, "Events")), any("DEPLOYMENT_STOP_ON_ALARM")) {
			t.Errorf("%s: rollback %s, want automatic on alarm", fn, testkit.JSON(rb))
		}
		alarms := groupAlarms(t, resources, group)
		if dig(g, "AlarmConfiguration", "Enabled") != true || !slices.Equal(alarms, want.alarms) {
			t.Errorf("%s: rolled back by the alarms %v (%s), want %v", fn, alarms, testkit.JSON(dig(g, "AlarmConfiguration")), want.alarms)
		}
	}

	// Every way a function is invoked names its alias.
	for _, id := range ofType("AWS::Lambda::Permission") {
		if target := onAlias(aliases, dig(resources, id, "Properties", "FunctionName")); target != "" {
			t.Errorf("%s: %s", id, target)
		}
	}
	for _, id := range ofType("AWS::Events::Rule") {
		for _, tg := range list(dig(resources, id, "Properties", "Targets")) {
			if target := onAlias(aliases, dig(tg, "Arn")); target != "" {
				t.Errorf("%s: target %s", id, target)
			}
		}
	}
	for _, id := range ofType("AWS::Lambda::EventSourceMapping") {
		if target := onAlias(aliases, dig(resources, id, "Properties", "FunctionName")); target != "" {
			t.Errorf("%s: %s", id, target)
		}
	}
	for _, id := range ofType("AWS::Lambda::EventInvokeConfig") {
		if q := dig(resources, id, "Properties", "Qualifier"); q != template.ReleaseAlias {
			t.Errorf("%s: qualifier %v, want the alias %s", id, q, template.ReleaseAlias)
		}
	}
	integrations := 0
	for path, methods := range dig(resources, "HttpApi", "Properties", "Body", "paths").(map[string]any) {
		for method, op := range methods.(map[string]any) {
			uri, _ := dig(op, "x-amazon-apigateway-integration", "uri", "Fn::Sub").(string)
			refs := regexp.MustCompile(`\$\{([A-Za-z0-9]+)\}`).FindAllStringSubmatch(uri, -1)
			if len(refs) != 1 || !slices.Contains(slices.Collect(maps.Values(aliases)), refs[0][1]) {
				t.Errorf("%s %s: integration %q does not invoke a function's alias", method, path, uri)
			}
			integrations++
		}
	}
	if integrations == 0 {
		t.Error("the HTTP API has no integration")
	}

	// The alarms on Lambda's metrics watch the alias.
	for _, id := range ofType("AWS::CloudWatch::Alarm") {
		a, err := template.ReadAlarm(dig(resources, id, "Properties").(map[string]any))
		if err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		for _, m := range a.Metrics {
			if m.Namespace != "AWS/Lambda" {
				continue
			}
			fn, _ := strings.CutPrefix(m.Dimensions["FunctionName"], "!Ref ")
			if want := "!Sub ${" + fn + "}:" + template.ReleaseAlias; m.Dimensions["Resource"] != want {
				t.Errorf("%s: %s by %v, want Resource %s (the alias)", id, m.Name, m.Dimensions, want)
			}
		}
	}
}

// releaseOf is how a function is released, by logical id: its alias
// template.ReleaseAlias (empty, and an error, when it has none or more
// than one), the version the alias runs, and the deployment group that
// updates the alias.
func releaseOf(t *testing.T, resources map[string]any, fn string) (alias, version, group string) {
	t.Helper()
	if alias = aliasOf(t, resources, fn); alias == "" {
		return "", "", ""
	}
	version, _ = dig(resources, alias, "Properties", "FunctionVersion", "Fn::GetAtt", 0).(string)
	group, _ = dig(resources, alias, "UpdatePolicy", "CodeDeployLambdaAliasUpdate", "DeploymentGroupName", "Ref").(string)
	return alias, version, group
}

// groupAlarms are the logical ids of the alarms a deployment group names,
// sorted.
func groupAlarms(t *testing.T, resources map[string]any, group string) []string {
	t.Helper()
	var alarms []string
	for _, a := range list(dig(resources, group, "Properties", "AlarmConfiguration", "Alarms")) {
		alarms = append(alarms, alarmID(t, resources, dig(a, "Name")))
	}
	slices.Sort(alarms)
	return alarms
}

// aliasOf is the logical id of a function's alias template.ReleaseAlias,
// empty (and an error) when it has none or more than one.
func aliasOf(t *testing.T, resources map[string]any, fn string) string {
	t.Helper()
	var found []string
	for id, r := range resources {
		if dig(r, "Type") == "AWS::Lambda::Alias" && dig(r, "Properties", "FunctionName", "Ref") == fn && dig(r, "Properties", "Name") == template.ReleaseAlias {
			found = append(found, id)
		}
	}
	if len(found) != 1 {
		t.Errorf("%s: aliases %s %v, want one", fn, template.ReleaseAlias, found)
		return ""
	}
	return found[0]
}

// alarmID is the logical id of the alarm a deployment group names: by Ref,
// or by its name as the alarm's AlarmName writes it.
func alarmID(t *testing.T, resources map[string]any, name any) string {
	t.Helper()
	if id, ok := dig(name, "Ref").(string); ok && dig(resources, id, "Type") == "AWS::CloudWatch::Alarm" {
		return id
	}
	for id, r := range resources {
		if dig(r, "Type") == "AWS::CloudWatch::Alarm" && testkit.JSON(dig(r, "Properties", "AlarmName")) == testkit.JSON(name) {
			return id
		}
	}
	t.Errorf("the deployment group's alarm %s is no alarm of the template", testkit.JSON(name))
	return testkit.JSON(name)
}

// onAlias says how a function reference misses the functions' aliases:
// empty when it is a Ref to one of them.
func onAlias(aliases map[string]string, ref any) string {
	if id, _ := dig(ref, "Ref").(string); slices.Contains(slices.Collect(maps.Values(aliases)), id) {
		return ""
	}
	return fmt.Sprintf("invokes %s, not a function's alias %s", testkit.JSON(ref), template.ReleaseAlias)
}

// shifts are the new version's share of a function's traffic in each
// minute of a deployment, by deployment configuration, until CodeDeploy
// ends it (and stops reading the alarms): a canary's 10% for 15 minutes;
// 10% more each minute, all of it at minute 9.
var shifts = map[string][]float64{
	"Canary10Percent15Minutes":    slices.Repeat([]float64{0.1}, 15),
	"Linear10PercentEvery1Minute": {0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9},
}

// The arithmetic of a release alarm: the data points of a minute reach
// the alarm metricDelay minutes later (Lambda's metrics, and the log
// lines' through CloudWatch Logs); an API function has at least
// apiRequests requests a minute, whatever its share of the API, and the
// firing one invocation; and a new version that fails everything it runs
// is taken back with a chance of at least sure.
const (
	metricDelay = 2
	apiRequests = 5
	sure        = 0.98
)

// TestReleaseAlarmsSeeTheNewVersion reads the SAM translator's output: the
// deployment group of each function names a release alarm, which watches
// the version the function's alias runs (the new one, while the group
// shifts the alias) and nothing else: Lambda's Errors by FunctionName,
// Resource <function>:live and ExecutedVersion, and for an API function
// its 5xx answers, Faults by Function and Version. By the arithmetic, a
// new version that fails every request it gets (as errors, or as 5xx
// answers) breaches the alarm in every minute it gets one, however few,
// and one that fails none never does; no data (no request) is not
// breaching; the alarm's periods fit in the deployment, and at the
// traffic of each minute of the shift it goes into ALARM before the
// deployment ends with a chance of at least sure.
func TestReleaseAlarmsSeeTheNewVersion(t *testing.T) {
	needSAMTranslator(t, "the release alarms are not checked")
	tpl := decodeTemplate(t, transform(t, templatePath, "s3://code/bootstrap.zip", deployParams))
	resources, _ := tpl["Resources"].(map[string]any)
	for fn, want := range wantRelease {
		_, version, group := releaseOf(t, resources, fn)
		if version == "" {
			continue
		}
		own := ownFailures(fn)
		alarms := groupAlarms(t, resources, group)
		seen := false
		for _, id := range alarms {
			props, _ := dig(resources, id, "Properties").(map[string]any)
			a, err := template.ReadAlarm(props)
			if err != nil {
				t.Fatalf("%s: %v", id, err)
			}
			if !onNewVersion(a, fn, version) {
				continue
			}
			seen = true
			counts := map[string]bool{}
			for _, m := range a.Metrics {
				counts[m.Namespace+" "+m.Name] = true
			}
			if !counts["AWS/Lambda Errors"] || own != "" && !counts[template.MetricNamespace+" "+own] {
				t.Errorf("%s, %s: counts %v, want Lambda's Errors and the failures it counts itself (%q)", fn, id, slices.Sorted(maps.Keys(counts)), own)
			}
			checkReleaseArithmetic(t, fn+", "+id, a, queryIDs(props), shifts[want.config], own)
		}
		if !seen {
			t.Errorf("%s: none of the alarms %v of its deployment group watches the version its alias runs (%s) alone", fn, alarms, version)
		}
	}
}

// ownFailures is the metric of a function's log lines that counts the
// failures it answers without a Lambda error: an API function's 5xx
// answers (Faults), the session events function's records unannounced,
// answered as batch item failures (EventsFailed); none for the firing.
func ownFailures(fn string) string {
	switch {
	case slices.Contains(template.APIFunctions, fn):
		return "Faults"
	case fn == template.EventsFunction:
		return sessionevents.MetricFailed
	}
	return ""
}

// onNewVersion reports whether every metric of an alarm is of fn's version
// version alone: Lambda's by FunctionName, Resource (the alias) and
// ExecutedVersion, the log lines' by Function and Version.
func onNewVersion(a template.Alarm, fn, version string) bool {
	v := "!GetAtt " + version + ".Version"
	lambda := map[string]string{"FunctionName": "!Ref " + fn, "Resource": "!Sub ${" + fn + "}:" + template.ReleaseAlias, "ExecutedVersion": v}
	lines := map[string]string{"Function": "!Ref " + fn, "Version": v}
	for _, m := range a.Metrics {
		switch {
		case m.Namespace == "AWS/Lambda" && maps.Equal(m.Dimensions, lambda):
		case m.Namespace == template.MetricNamespace && maps.Equal(m.Dimensions, lines):
		default:
			return false
		}
	}
	return len(a.Metrics) > 0
}

// queryIDs are the ids of an alarm's metric queries, in the order of
// template.Alarm's Metrics; the one metric of an alarm without metric math
// has none, and is "metric" here.
func queryIDs(props map[string]any) []string {
	ids := []string{"metric"}
	if queries := list(props["Metrics"]); len(queries) > 0 {
		ids = nil
		for _, q := range queries {
			if dig(q, "Expression") == nil {
				ids = append(ids, fmt.Sprint(dig(q, "Id")))
			}
		}
	}
	return ids
}

// checkReleaseArithmetic checks a release alarm against a new version that
// gets n requests in a minute, for any n, and fails them all (as Lambda
// errors, or as the failures it counts itself, own: an API function's
// 5xx answers, the session events function's records unannounced) or
// none, and against the shift of the traffic (share, the new version's
// share each minute): apiRequests a minute for an API function and for
// the session events function (each start's session is a batch of its
// own, at a 1-second window), the firing's one invocation otherwise.
func checkReleaseArithmetic(t *testing.T, where string, a template.Alarm, ids []string, share []float64, own string) {
	t.Helper()
	if a.TreatMissingData != "notBreaching" {
		t.Errorf("%s: missing data %q: a minute without a request to the new version is not breaching", where, a.TreatMissingData)
	}
	period := a.Metrics[0].Period
	for _, m := range a.Metrics {
		if m.Period != period || period%60 != 0 || m.Stat != "Sum" {
			t.Fatalf("%s: %s %s by the %s of %d seconds: want the sums of the same whole minutes", where, m.Namespace, m.Name, m.Stat, m.Period)
		}
	}
	if minutes := a.EvaluationPeriods * period / 60; minutes > len(share) {
		t.Errorf("%s: evaluates %d minutes, longer than the deployment's %d", where, minutes, len(share))
	}
	for _, n := range []float64{1, 2, 5, 100, 10000} {
		failures := map[string]float64{"errors": n}
		if own != "" {
			failures[own] = n
		}
		for how, failed := range failures {
			if !breaches(t, a, ids, n, failed, how == own) {
				t.Errorf("%s: %v requests of the new version in a minute, all failed (%s): not breaching", where, n, how)
			}
		}
		if breaches(t, a, ids, n, 0, false) || own != "" && breaches(t, a, ids, n, 0, true) {
			t.Errorf("%s: %v requests of the new version in a minute, none failed: breaching", where, n)
		}
	}
	requests := 1.0 // the firing's invocation a minute
	if own != "" {
		requests = apiRequests
	}
	ran := make([]float64, len(share)) // the chance that the new version gets a request in each minute
	for m, s := range share {
		ran[m] = 1 - math.Pow(1-s, requests)
	}
	if p := tripChance(ran, period/60, a.EvaluationPeriods, a.DatapointsToAlarm); p < sure {
		t.Errorf("%s: %d of %d periods of %d seconds: a new version that fails every request (%v a minute) is taken back with a chance of %.3f, want %v", where, a.DatapointsToAlarm, a.EvaluationPeriods, period, requests, p, sure)
	}
}

// breaches reports whether an alarm's data point breaches its threshold
// in a minute when the new version got n requests and failed failed of
// them, as failures it counts itself (answers: Faults for 5xx answers,
// EventsFailed for records unannounced, on the log lines) or as Lambda
// errors. Lambda reports Invocations and Errors whenever it invoked the
// version; the log lines carry Faults only for a 5xx, EventsFailed on
// every line.
func breaches(t *testing.T, a template.Alarm, ids []string, n, failed float64, answers bool) bool {
	t.Helper()
	values := map[string]float64{}
	for i, m := range a.Metrics {
		switch {
		case m.Namespace == "AWS/Lambda" && m.Name == "Invocations":
			values[ids[i]] = n
		case m.Namespace == "AWS/Lambda" && m.Name == "Errors" && answers:
			values[ids[i]] = 0
		case m.Namespace == "AWS/Lambda" && m.Name == "Errors":
			values[ids[i]] = failed
		case m.Namespace == template.MetricNamespace && m.Name == "Faults" && answers && failed > 0:
			values[ids[i]] = failed
		case m.Namespace == template.MetricNamespace && m.Name == "Faults":
		case m.Namespace == template.MetricNamespace && m.Name == sessionevents.MetricFailed && answers:
			values[ids[i]] = failed
		case m.Namespace == template.MetricNamespace && m.Name == sessionevents.MetricFailed:
			values[ids[i]] = 0
		default:
			t.Fatalf("the release alarm watches %s %s, which the test gives no value", m.Namespace, m.Name)
		}
	}
	v, ok := values[ids[0]]
	if a.Expression != "" {
		v, ok = evaluate(t, a.Expression, values)
	}
	if !ok {
		return false // not breaching, as TreatMissingData says
	}
	switch a.Comparison {
	case "GreaterThanOrEqualToThreshold":
		return v >= a.Threshold
	case "GreaterThanThreshold":
		return v > a.Threshold
	}
	t.Fatalf("comparison %s: a release alarm counts failures", a.Comparison)
	return false
}

// evaluate is the value of a metric math expression over the values of
// its metrics by id, a missing one absent: numbers, ids, + - * / and
// comparisons, FILL and IF. ok is false for no data point: a missing
// metric outside FILL, or a division by 0.
func evaluate(t *testing.T, expr string, values map[string]float64) (v float64, ok bool) {
	t.Helper()
	root, err := parser.ParseExpr(expr)
	if err != nil {
		t.Fatalf("%q: %v", expr, err)
	}
	truth := func(b bool) float64 {
		if b {
			return 1
		}
		return 0
	}
	var eval func(e ast.Expr) (float64, bool)
	eval = func(e ast.Expr) (float64, bool) {
		switch e := e.(type) {
		case *ast.BasicLit:
			if v, err := strconv.ParseFloat(e.Value, 64); err == nil {
				return v, true
			}
		case *ast.Ident:
			v, ok := values[e.Name]
			return v, ok
		case *ast.ParenExpr:
			return eval(e.X)
		case *ast.BinaryExpr:
			x, okX := eval(e.X)
			y, okY := eval(e.Y)
			if !okX || !okY {
				return 0, false
			}
			switch e.Op {
			case token.ADD:
				return x + y, true
			case token.SUB:
				return x - y, true
			case token.MUL:
				return x * y, true
			case token.QUO:
				return x / y, y != 0
			case token.LSS:
				return truth(x < y), true
			case token.GTR:
				return truth(x > y), true
			}
		case *ast.CallExpr:
			switch fn, _ := e.Fun.(*ast.Ident); {
			case fn != nil && fn.Name == "FILL" && len(e.Args) == 2:
				if v, ok := eval(e.Args[0]); ok {
					return v, true
				}
				return eval(e.Args[1])
			case fn != nil && fn.Name == "IF" && len(e.Args) == 3:
				if c, ok := eval(e.Args[0]); !ok {
					return 0, false
				} else if c != 0 {
					return eval(e.Args[1])
				}
				return eval(e.Args[2])
			}
		}
		t.Fatalf("%q: %s is not metric math the test evaluates", expr, expr[e.Pos()-1:e.End()-1])
		return 0, false
	}
	return eval(root)
}

// tripChance is the chance that an alarm of datapoints of evaluation
// periods of periodMinutes goes into ALARM before a deployment of
// len(ran) minutes ends, when the new version fails everything it runs and
// runs in minute m with the chance ran[m]: a period breaches when it ran
// in one of its minutes, and only periods whose data reached the alarm
// (metricDelay) count.
func tripChance(ran []float64, periodMinutes, evaluation, datapoints int) float64 {
	var breach []float64 // by period
	for start := 0; start+periodMinutes <= len(ran)-metricDelay; start += periodMinutes {
		none := 1.0
		for _, r := range ran[start : start+periodMinutes] {
			none *= 1 - r
		}
		breach = append(breach, 1-none)
	}
	chance := 0.0
	for pattern := range 1 << len(breach) { // the periods that breached, a bit each
		p := 1.0
		for i, b := range breach {
			if pattern>>i&1 == 1 {
				p *= b
			} else {
				p *= 1 - b
			}
		}
		for end := range breach {
			window := pattern >> max(0, end-evaluation+1) & (1<<min(evaluation, end+1) - 1)
			if bits.OnesCount(uint(window)) >= datapoints {
				chance += p
				break
			}
		}
	}
	return chance
}
