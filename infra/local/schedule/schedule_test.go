package schedule

import (
	"encoding/json"
	"os"
	"reflect"
	"sort"
	"testing"
	"time"
)

// TestScheduledEventShape: the Scheduled Event has the members and types
// of the sample in events/.
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
