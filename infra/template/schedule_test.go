package template

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cloud-agent/control-plane/infra/local/testkit"
	"github.com/cloud-agent/control-plane/shared/store"
)

// maxFiringSchedules is FiringSchedules' largest value: a schedule for
// each shard.
const maxFiringSchedules = store.DueShards

// firingShare is the share of the firing schedule n of k: the shards s
// with s mod k = n.
func firingShare(n, k int) []int {
	var out []int
	for s := n; s < store.DueShards; s += k {
		out = append(out, s)
	}
	return out
}

// TestTemplateSchedule: the firing has FiringSchedules schedules (1 by
// default, 1 to 16), each every minute with its share of the shards, the
// shares dividing the shards between them; no other function has a
// schedule, and none is a SAM Schedule event (whose Input would replace
// the event's time).
func TestTemplateSchedule(t *testing.T) {
	for k := 1; k <= maxFiringSchedules; k++ {
		tpl, err := LoadWith("../../template.yaml", map[string]string{"FiringSchedules": strconv.Itoa(k)})
		if err != nil {
			t.Fatal(err)
		}
		fns, err := Functions(tpl)
		if err != nil {
			t.Fatal(err)
		}
		for _, fn := range fns {
			if fn.LogicalID != "TriggerFireFunction" {
				if fn.Schedules != nil {
					t.Errorf("%s: schedules %+v", fn.LogicalID, fn.Schedules)
				}
				continue
			}
			if len(fn.Schedules) != k {
				t.Fatalf("K = %d: %d schedules", k, len(fn.Schedules))
			}
			var ids, covered []int
			for _, sc := range fn.Schedules {
				var id int
				if _, err := fmt.Sscanf(sc.ID, "FiringSchedule%d", &id); err != nil {
					t.Fatalf("K = %d: schedule %s", k, sc.ID)
				}
				ids = append(ids, id)
				got := shareOf(t, sc)
				if sc.Expression != "rate(1 minute)" || !slices.Equal(got, firingShare(id, k)) {
					t.Errorf("K = %d: %s %s fires %v, want %v", k, sc.ID, sc.Expression, got, firingShare(id, k))
				}
				covered = append(covered, got...)
			}
			slices.Sort(ids)
			slices.Sort(covered)
			if !slices.Equal(ids, firingShare(0, 1)[:k]) || !slices.Equal(covered, firingShare(0, 1)) {
				t.Errorf("K = %d: the schedules %v cover the shards %v", k, ids, covered)
			}
		}
	}
	for _, bad := range []string{"0", "17", "4.0", ""} {
		if _, err := LoadWith("../../template.yaml", map[string]string{"FiringSchedules": bad}); err == nil {
			t.Errorf("FiringSchedules %q accepted", bad)
		}
	}
	if _, err := LoadWith("../../template.yaml", map[string]string{"NoSuchParameter": "1"}); err == nil {
		t.Error("an unknown parameter accepted")
	}
	for _, fn := range loadFunctions(t) {
		if fn.LogicalID == "TriggerFireFunction" && (len(fn.Schedules) != 1 || !slices.Equal(shareOf(t, fn.Schedules[0]), firingShare(0, 1))) {
			t.Errorf("by default: %+v, want one schedule of every shard", fn.Schedules)
		}
	}
}

// shareOf is the detail.shards of the event a schedule sends, its
// placeholders filled.
func shareOf(t *testing.T, sc Schedule) []int {
	t.Helper()
	if sc.Input == nil {
		t.Fatalf("%s sends the plain Scheduled Event", sc.ID)
	}
	want := map[string]string{"id": "$.id", "account": "$.account", "time": "$.time", "region": "$.region", "resources": "$.resources"}
	if !reflect.DeepEqual(sc.Input.Paths, want) {
		t.Errorf("%s: paths %v, want %v", sc.ID, sc.Input.Paths, want)
	}
	filled := strings.NewReplacer(`"<id>"`, `"i"`, `"<account>"`, `"1"`, `"<time>"`, `"2026-11-30T10:00:00Z"`, `"<region>"`, `"r"`, `<resources>`, `["a"]`).Replace(sc.Input.Template)
	var ev struct {
		Version    string   `json:"version"`
		ID         string   `json:"id"`
		DetailType string   `json:"detail-type"`
		Source     string   `json:"source"`
		Account    string   `json:"account"`
		Time       string   `json:"time"`
		Region     string   `json:"region"`
		Resources  []string `json:"resources"`
		Detail     struct {
			Shards []int `json:"shards"`
		} `json:"detail"`
	}
	if err := json.Unmarshal([]byte(filled), &ev); err != nil {
		t.Fatalf("%s: %v: %s", sc.ID, err, filled)
	}
	if ev.Version != "0" || ev.ID != "i" || ev.DetailType != "Scheduled Event" || ev.Source != "aws.events" || ev.Account != "1" ||
		ev.Time != "2026-11-30T10:00:00Z" || ev.Region != "r" || !slices.Equal(ev.Resources, []string{"a"}) {
		t.Errorf("%s sends %s", sc.ID, filled)
	}
	return ev.Detail.Shards
}

// TestTemplateFiringRules: every firing schedule is the first with its
// number changed: the same rule (every minute, to the firing's alias,
// retried and then sent to the dead-letter queue, which lets every rule
// send to it) and the same permission, on the condition that it exists.
func TestTemplateFiringRules(t *testing.T) {
	tpl := rawTemplate(t)
	resources := tpl["Resources"].(map[string]any)
	first := testkit.JSON(map[string]any{"rule": resources["FiringSchedule0"], "permission": resources["FiringSchedule0Permission"]})
	rules := resourcesOfType(tpl, "AWS::Events::Rule")
	if len(rules) != maxFiringSchedules {
		t.Errorf("%d rules, want %d", len(rules), maxFiringSchedules)
	}
	policy := testkit.JSON(resources["TriggerFireDeadLetterQueuePolicy"])
	for n := range maxFiringSchedules {
		id := fmt.Sprint("FiringSchedule", n)
		got := testkit.JSON(map[string]any{"rule": resources[id], "permission": resources[id+"Permission"]})
		want := strings.ReplaceAll(first, "Schedule0", fmt.Sprint("Schedule", n))
		if n > 0 {
			var w map[string]map[string]any
			_ = json.Unmarshal([]byte(want), &w)
			w["rule"]["Condition"], w["permission"]["Condition"] = id, id
			want = testkit.JSON(w)
		}
		if got != want {
			t.Errorf("%s differs from FiringSchedule0:\n%s\nwant\n%s", id, got, want)
		}
		if !strings.Contains(policy, `"`+id+`.Arn"`) && !strings.Contains(policy, `"`+id+`","Arn"`) {
			t.Errorf("the dead-letter queue's policy does not let %s send to it: %s", id, policy)
		}
	}
	target := testkit.JSON(resources["FiringSchedule0"].(map[string]any)["Properties"])
	for _, want := range []string{`"Arn":{"Ref":"TriggerFireFunction.Alias"}`, `"MaximumRetryAttempts":2`, `"DeadLetterConfig":{"Arn":{"Fn::GetAtt":"TriggerFireDeadLetterQueue.Arn"}}`} {
		if !strings.Contains(target, want) {
			t.Errorf("the firing's target lacks %s: %s", want, target)
		}
	}
	fire := testkit.JSON(resources["TriggerFireFunction"].(map[string]any)["Properties"].(map[string]any)["EventInvokeConfig"])
	if !strings.Contains(fire, `"MaximumRetryAttempts":2`) || !strings.Contains(fire, `"Type":"SQS"`) {
		t.Errorf("failed invocations are not retried into the queue: %s", fire)
	}
}

// TestSAMScheduleRefused: a SAM Schedule event is refused, not left
// unrun: the local stack runs the schedules written as rules.
func TestSAMScheduleRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "template.yaml")
	body := "Transform: AWS::Serverless-2016-10-31\nResources:\n  F:\n    Type: AWS::Serverless::Function\n    Properties:\n      Events:\n        E:\n          Type: Schedule\n          Properties: {Schedule: rate(1 minute)}\n"
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadFunctions(path); err == nil || !strings.Contains(err.Error(), "AWS::Events::Rule") {
		t.Errorf("%v", err)
	}
}
