package template_test

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/cloud-agent/control-plane/infra/template"
)

// wantRelease is how each function's releases reach its traffic: the
// CodeDeploy configuration of its deployment group, and the alarms that
// roll a release back, by logical id.
var wantRelease = map[string]struct {
	config string
	alarms []string
}{
	"SessionStartFunction":     {"Canary10Percent15Minutes", []string{"ApiServerErrorRateAlarm"}},
	"AllocationLookupFunction": {"Canary10Percent15Minutes", []string{"ApiServerErrorRateAlarm"}},
	"TriggersFunction":         {"Canary10Percent15Minutes", []string{"ApiServerErrorRateAlarm"}},
	"TriggerFireFunction":      {"Linear10PercentEvery1Minute", []string{"FiringLagAlarm", "TriggerFireDeadLetterAlarm", "TriggerFireErrorsAlarm"}},
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
		alias := aliasOf(t, resources, fn)
		if alias == "" {
			continue
		}
		aliases[fn] = alias
		version, _ := dig(resources, alias, "Properties", "FunctionVersion", "Fn::GetAtt", 0).(string)
		if dig(resources, version, "Type") != "AWS::Lambda::Version" || dig(resources, version, "Properties", "FunctionName", "Ref") != fn {
			t.Errorf("%s: the alias is on %s, not a version of the function", fn, mustJSON(dig(resources, alias, "Properties", "FunctionVersion")))
		}
		update := dig(resources, alias, "UpdatePolicy", "CodeDeployLambdaAliasUpdate")
		group, _ := dig(update, "DeploymentGroupName", "Ref").(string)
		if dig(update, "ApplicationName", "Ref") != app || dig(resources, group, "Type") != "AWS::CodeDeploy::DeploymentGroup" {
			t.Errorf("%s: the alias is updated by %s, not by a deployment group of %s", fn, mustJSON(update), app)
			continue
		}
		g := dig(resources, group, "Properties")
		if got := fmt.Sprint(dig(g, "DeploymentConfigName", "Fn::Sub", 1, "ConfigName")); got != want.config || dig(g, "ApplicationName", "Ref") != app {
			t.Errorf("%s: deployed by %s of %v, want %s", fn, mustJSON(dig(g, "DeploymentConfigName")), dig(g, "ApplicationName"), want.config)
		}
		if rb := dig(g, "AutoRollbackConfiguration"); dig(rb, "Enabled") != true || !slices.Contains(list(dig(rb, "Events")), any("DEPLOYMENT_STOP_ON_ALARM")) {
			t.Errorf("%s: rollback %s, want automatic on alarm", fn, mustJSON(rb))
		}
		var alarms []string
		for _, a := range list(dig(g, "AlarmConfiguration", "Alarms")) {
			alarms = append(alarms, alarmID(t, resources, dig(a, "Name")))
		}
		slices.Sort(alarms)
		if dig(g, "AlarmConfiguration", "Enabled") != true || !slices.Equal(alarms, want.alarms) {
			t.Errorf("%s: rolled back by the alarms %v (%s), want %v", fn, alarms, mustJSON(dig(g, "AlarmConfiguration")), want.alarms)
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
		if dig(r, "Type") == "AWS::CloudWatch::Alarm" && mustJSON(dig(r, "Properties", "AlarmName")) == mustJSON(name) {
			return id
		}
	}
	t.Errorf("the deployment group's alarm %s is no alarm of the template", mustJSON(name))
	return mustJSON(name)
}

// onAlias says how a function reference misses the functions' aliases:
// empty when it is a Ref to one of them.
func onAlias(aliases map[string]string, ref any) string {
	if id, _ := dig(ref, "Ref").(string); slices.Contains(slices.Collect(maps.Values(aliases)), id) {
		return ""
	}
	return fmt.Sprintf("invokes %s, not a function's alias %s", mustJSON(ref), template.ReleaseAlias)
}
