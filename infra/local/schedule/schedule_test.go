package schedule

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/cloud-agent/control-plane/infra/template"
)

// TestScheduledEventShape: the Scheduled Event, and what each of the
// template's schedules sends, have the members and types of the sample in
// events/.
func TestScheduledEventShape(t *testing.T) {
	sample, err := os.ReadFile("../../../events/TriggerFireFunction/scheduled-event.json")
	if err != nil {
		t.Fatal(err)
	}
	keys := func(b []byte) []string {
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		var k []string
		for name, v := range m {
			k = append(k, name+":"+reflect.TypeOf(v).String())
		}
		sort.Strings(k)
		return k
	}
	if a, b := keys(sample), keys(Event("F", time.Now())); !reflect.DeepEqual(a, b) {
		t.Errorf("sample %v\nevent %v", a, b)
	}
	for _, sc := range firingSchedules(t, "1") {
		ev, err := Target(sc, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if a, b := keys(sample), keys(ev); !reflect.DeepEqual(a, b) {
			t.Errorf("sample %v\n%s sends %v", a, sc.ID, b)
		}
	}
}

func firingSchedules(t *testing.T, k string) []template.Schedule {
	t.Helper()
	tpl, err := template.LoadWith("../../../template.yaml", map[string]string{"FiringSchedules": k})
	if err != nil {
		t.Fatal(err)
	}
	fns, err := template.Functions(tpl)
	if err != nil {
		t.Fatal(err)
	}
	for _, fn := range fns {
		if fn.LogicalID == "TriggerFireFunction" {
			return fn.Schedules
		}
	}
	t.Fatal("no firing")
	return nil
}

// TestTarget: with FiringSchedules 4, the local stack runs four schedules
// of the firing, each sending a Scheduled Event of the time it runs at,
// with an id of its own, whose detail names its share; the shares cover
// every shard once. A transformer the local stack cannot fill is an
// error, not a wrong event.
func TestTarget(t *testing.T) {
	at := time.Date(2026, 11, 30, 10, 1, 0, 0, time.UTC)
	var covered []int
	ids := map[string]bool{}
	scs := firingSchedules(t, "4")
	if len(scs) != 4 {
		t.Fatalf("%d schedules", len(scs))
	}
	for _, sc := range scs {
		b, err := Target(sc, at)
		var ev events.EventBridgeEvent
		var detail struct{ Shards []int }
		if err == nil {
			err = json.Unmarshal(b, &ev)
		}
		if err == nil {
			err = json.Unmarshal(ev.Detail, &detail)
		}
		if err != nil || !ev.Time.Equal(at) || ev.Source != "aws.events" || ev.DetailType != "Scheduled Event" || ev.ID == "" || ids[ev.ID] ||
			!slices.Equal(ev.Resources, []string{"arn:aws:events:us-east-1:000000000000:rule/" + sc.ID}) {
			t.Errorf("%s: %s %v", sc.ID, b, err)
		}
		ids[ev.ID] = true
		covered = append(covered, detail.Shards...)
	}
	slices.Sort(covered)
	for i, s := range covered {
		if s != i || len(covered) != 16 {
			t.Fatalf("the schedules cover %v", covered)
		}
	}
	for name, in := range map[string]template.Input{
		"a nested path":   {Paths: map[string]string{"x": "$.detail.x"}, Template: `{"x":<x>}`},
		"no such member":  {Paths: map[string]string{"x": "$.nothing"}, Template: `{"x":<x>}`},
		"not a JSON path": {Paths: map[string]string{"x": "time"}, Template: `{"x":<x>}`},
		"within a string": {Paths: map[string]string{"x": "$.time"}, Template: `{"x":"at <x>"}`},
		"not JSON":        {Template: `{"x":`},
	} {
		if b, err := Target(template.Schedule{ID: "R", Input: &in}, at); err == nil {
			t.Errorf("%s: %s", name, b)
		}
	}
}

// TestParseRate: the schedule expressions the local stack runs.
func TestParseRate(t *testing.T) {
	for expr, want := range map[string]time.Duration{"rate(1 minute)": time.Minute, "rate(5 minutes)": 5 * time.Minute, "rate(2 hours)": 2 * time.Hour, "rate(1 day)": 24 * time.Hour} {
		if got, err := parseRate(expr); err != nil || got != want {
			t.Errorf("%s: %v %v", expr, got, err)
		}
	}
	for _, bad := range []string{"cron(* * * * ? *)", "rate(0 minutes)", "rate(1 week)", "rate(x minutes)"} {
		if _, err := parseRate(bad); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}

// TestInvokeAt: a schedule invokes its function with what its target
// receives, and logs the result; a target the local stack cannot fill
// invokes nothing and logs why.
func TestInvokeAt(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&buf, nil))
	var got [][]byte
	invoke := func(_ context.Context, fn string, ev []byte) ([]byte, error) {
		if fn != "TriggerFireFunction" {
			t.Errorf("invoked %s", fn)
		}
		got = append(got, ev)
		return []byte(`{"due":0}`), nil
	}
	at := time.Date(2026, 11, 30, 10, 1, 0, 0, time.UTC)
	for _, sc := range firingSchedules(t, "2") {
		invokeAt(context.Background(), "TriggerFireFunction", sc, at, invoke, log)
		if want, _ := Target(sc, at); len(got) == 0 || !bytes.Equal(bytes.SplitN(got[len(got)-1], []byte(`"time"`), 2)[1], bytes.SplitN(want, []byte(`"time"`), 2)[1]) {
			t.Errorf("%s sent %s, want %s", sc.ID, got, want)
		}
	}
	if len(got) != 2 || strings.Count(buf.String(), `"msg":"scheduled invocation","function":"TriggerFireFunction","schedule":"FiringSchedule`) != 2 {
		t.Errorf("%d invocations, logged %s", len(got), buf.String())
	}
	buf.Reset()
	invokeAt(context.Background(), "TriggerFireFunction", template.Schedule{ID: "R", Input: &template.Input{Template: "{"}}, at, invoke, log)
	if len(got) != 2 || !strings.Contains(buf.String(), `"msg":"scheduled invocation failed"`) {
		t.Errorf("%d invocations, logged %s", len(got), buf.String())
	}
}
