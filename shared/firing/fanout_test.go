package firing_test

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/cloud-agent/control-plane/infra/local/apitest"
	"github.com/cloud-agent/control-plane/shared/firing"
	"github.com/cloud-agent/control-plane/shared/store"
)

// shares divides the shards between k schedules as template.yaml does:
// shard s to schedule s mod k.
func shares(k int) [][]int {
	out := make([][]int, k)
	for s := range store.DueShards {
		out[s%k] = append(out[s%k], s)
	}
	return out
}

// shardedBurst creates triggers of cron, due at their next slot, until
// every shard holds at least one and there are at least burstSize; it
// returns their ids by shard.
func shardedBurst(t *testing.T, h *apitest.Harness, cron string) map[int][]string {
	t.Helper()
	byShard := map[int][]string{}
	for n := 0; n < burstSize || len(byShard) < store.DueShards; n++ {
		if n == 190 {
			t.Fatalf("%d triggers cover %d shards", n, len(byShard))
		}
		// The org holds at most 100 triggers: the rest are the user's own.
		var set map[string]any
		if n >= 95 {
			set = map[string]any{"orgId": nil}
		}
		id := newTrigger(t, h, cron, set)
		s := shardOf(t, h, id)
		byShard[s] = append(byShard[s], id)
	}
	return byShard
}

var dueShardAttr = regexp.MustCompile(`"dueShard":\{"S":"DUE#([0-9]+)"\}`)

// shardOf is the shard of the due index that holds the trigger id.
func shardOf(t *testing.T, h *apitest.Harness, id string) int {
	t.Helper()
	for _, it := range h.Items() {
		if strings.Contains(it, `"PK":{"S":"TRIGGER#`+id+`"}`) {
			if m := dueShardAttr.FindStringSubmatch(it); m != nil {
				n, _ := strconv.Atoi(m[1])
				return n
			}
		}
	}
	t.Fatalf("%s is in no shard", id)
	return 0
}

func allIDs(byShard map[int][]string) []string {
	var ids []string
	for _, s := range byShard {
		ids = append(ids, s...)
	}
	return ids
}

// fireShares invokes the firing once for each share at once (nil: the
// plain Scheduled Event, every shard), with the event of at and the clock
// at it; the summaries are in the order of the shares.
func fireShares(t *testing.T, h *apitest.Harness, at time.Time, shares [][]int) []firing.Summary {
	t.Helper()
	sums := make([]firing.Summary, len(shares))
	var wg sync.WaitGroup
	for i, share := range shares {
		ev := events.EventBridgeEvent{Source: "aws.events", DetailType: "Scheduled Event", Time: at, Detail: json.RawMessage(`{}`)}
		if share != nil {
			ev.Detail, _ = json.Marshal(map[string]any{"shards": share})
		}
		wg.Go(func() {
			f := *h.Firing
			f.Concurrency = 8
			f.Now = func() time.Time { return at }
			var err error
			if sums[i], err = f.Handle(context.Background(), ev); err != nil {
				t.Errorf("share %v: %v", share, err)
			}
		})
	}
	wg.Wait()
	return sums
}

func total(sums []firing.Summary) firing.Summary {
	var s firing.Summary
	for _, x := range sums {
		s.Due += x.Due
		s.Fired += x.Fired
		s.Duplicates += x.Duplicates
		s.Skipped += x.Skipped
		s.Fallbacks += x.Fallbacks
		s.Failed += x.Failed
	}
	return s
}

// inShares counts the triggers of byShard in each share.
func inShares(byShard map[int][]string, shares [][]int) []int {
	n := make([]int, len(shares))
	for i, share := range shares {
		for _, s := range share {
			n[i] += len(byShard[s])
		}
	}
	return n
}

// TestFanOut: K = 4 invocations at once, each with its share, against one
// table, fire every due trigger once; each invocation finds exactly the
// triggers of its shards, and names them in its log line, so that together
// they cover every shard.
func TestFanOut(t *testing.T) {
	h := setup(t, apitest.New(t, nil))
	byShard := shardedBurst(t, h, "*/5 * * * *")
	ids := allIDs(byShard)
	sh := shares(4)
	sums := fireShares(t, h, burstSlot, sh)
	want := inShares(byShard, sh)
	for i, sum := range sums {
		if sum != (firing.Summary{Due: want[i], Fired: want[i]}) {
			t.Errorf("share %v: %+v, want %d fired", sh[i], sum, want[i])
		}
	}
	if got := total(sums); got.Fired != len(ids) {
		t.Errorf("fired %d of %d", got.Fired, len(ids))
	}
	exactlyOnce(t, h, ids)
	var covered []int
	for _, raw := range h.Logs() {
		var line struct {
			Msg    string `json:"msg"`
			Shards []int  `json:"shards"`
		}
		if json.Unmarshal([]byte(raw), &line) == nil && line.Msg == "fire" {
			covered = append(covered, line.Shards...)
		}
	}
	slices.Sort(covered)
	if !slices.Equal(covered, shares(1)[0]) {
		t.Errorf("the log lines name the shards %v, want each once", covered)
	}
}

// TestFanOutOverlapping: two schedules overlapping by mistake (the four of
// K = 4 and a plain one of every shard, at once) still fire each trigger
// once: the rest find it taken, or no longer due.
func TestFanOutOverlapping(t *testing.T) {
	h := setup(t, apitest.New(t, nil))
	ids := allIDs(shardedBurst(t, h, "*/5 * * * *"))
	got := total(fireShares(t, h, burstSlot, append(shares(4), nil)))
	if got.Fired != len(ids) || got.Failed != 0 || got.Due != got.Fired+got.Duplicates {
		t.Errorf("%+v for %d triggers", got, len(ids))
	}
	exactlyOnce(t, h, ids)
}

// TestFanOutChangingK: K changing between minutes leaves no trigger
// unfired: K = 2 fires the first minute; in the second, mid-deploy, only
// the first of K = 2's schedules runs; K = 4 fires the third, and the
// triggers the second minute missed fire there, their missed slot skipped.
func TestFanOutChangingK(t *testing.T) {
	h := setup(t, apitest.New(t, nil))
	byShard := shardedBurst(t, h, "* * * * *")
	ids := allIDs(byShard)
	m1 := created.Truncate(time.Minute).Add(time.Minute)
	if got := total(fireShares(t, h, m1, shares(2))); got != (firing.Summary{Due: len(ids), Fired: len(ids)}) {
		t.Errorf("K = 2: %+v for %d triggers", got, len(ids))
	}
	half := inShares(byShard, shares(2))
	if got := total(fireShares(t, h, m1.Add(time.Minute), shares(2)[:1])); got != (firing.Summary{Due: half[0], Fired: half[0]}) {
		t.Errorf("mid-deploy: %+v, want %d", got, half[0])
	}
	m3 := m1.Add(2 * time.Minute)
	if got := total(fireShares(t, h, m3, shares(4))); got != (firing.Summary{Due: len(ids), Fired: len(ids), Skipped: half[1]}) {
		t.Errorf("K = 4: %+v, want %d fired, %d skipped", got, len(ids), half[1])
	}
	for _, id := range ids {
		if tr := read(t, h, id); tr["lastRunAt"] != m3.Format(time.RFC3339) || tr["lastRunStatus"] != "fired" {
			t.Errorf("%s: %v", id, tr)
		}
	}
	if n := len(h.Sessions()); n != 2*len(ids)+half[0] {
		t.Errorf("%d sessions, want %d", n, 2*len(ids)+half[0])
	}
}

// TestBadShare: a detail that names no valid share fires nothing and
// returns an error, with a summary of zeros, so that the alarms see the
// misconfigured schedule.
func TestBadShare(t *testing.T) {
	h := setup(t, apitest.New(t, nil))
	id := newTrigger(t, h, "*/5 * * * *", nil)
	for _, detail := range []string{
		`{"shards":[]}`, `{"shards":null}`, `{"shards":[16]}`, `{"shards":[-1]}`, `{"shards":[1,1]}`,
		`{"shards":["1"]}`, `{"shards":[1.5]}`, `{"shards":3}`, `[1]`, `"x"`,
		// as strict as every other parser: a repeated, unknown or
		// differently spelled member
		`{"shards":[1],"shards":[2]}`, `{"shards":[1],"other":[1]}`, `{"other":[1]}`, `{"Shards":[1]}`,
	} {
		f := *h.Firing
		f.Now = func() time.Time { return burstSlot }
		sum, err := f.Handle(context.Background(), events.EventBridgeEvent{Source: "aws.events", DetailType: "Scheduled Event", Time: burstSlot, Detail: json.RawMessage(detail)})
		if err == nil || sum != (firing.Summary{}) || !strings.Contains(err.Error(), "detail") {
			t.Errorf("%s: %+v %v", detail, sum, err)
		}
		logs := h.Logs()
		if l := logs[len(logs)-1]; !strings.Contains(l, `"level":"ERROR"`) || !strings.Contains(l, `"error":"the event's detail`) {
			t.Errorf("%s: logged %s", detail, l)
		}
	}
	if tr := read(t, h, id); tr["lastRunAt"] != nil || len(h.Sessions()) != 0 {
		t.Errorf("a bad share fired: %v", tr)
	}
}

// TestEveryShardByDefault: a Scheduled Event whose detail names no shard
// (absent, null or {}) fires every shard.
func TestEveryShardByDefault(t *testing.T) {
	for _, detail := range []string{"", "null", "{}", " { } "} {
		t.Run(fmt.Sprintf("%q", detail), func(t *testing.T) {
			h := setup(t, apitest.New(t, nil))
			ids := allIDs(shardedBurst(t, h, "*/5 * * * *"))
			f := *h.Firing
			f.Now = func() time.Time { return burstSlot }
			sum, err := f.Handle(context.Background(), events.EventBridgeEvent{Source: "aws.events", DetailType: "Scheduled Event", Time: burstSlot, Detail: json.RawMessage(detail)})
			if err != nil || sum != (firing.Summary{Due: len(ids), Fired: len(ids)}) {
				t.Errorf("%+v %v for %d", sum, err, len(ids))
			}
		})
	}
}
