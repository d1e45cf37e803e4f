package store

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/cloud-agent/control-plane/infra/local/localdb"
	"github.com/cloud-agent/control-plane/shared/allocation"
	"github.com/cloud-agent/control-plane/shared/problem"
	"github.com/cloud-agent/control-plane/shared/session"
	"github.com/cloud-agent/control-plane/shared/trigger"
	"github.com/cloud-agent/control-plane/shared/webhook"
)

func newTrigger(id, user, org string, created time.Time) *trigger.Trigger {
	return &trigger.Trigger{
		ID: id, UserID: user, OrgID: org, Active: true, Cron: "0 9 * * 1-5", Timezone: "Europe/Berlin",
		Repository: session.Repository{Type: "github", Repo: "acme/app", Branch: "main"},
		Agent:      session.Agent{Mode: "code", Model: "anthropic/claude"},
		Prompt:     "Update the dependencies.", SavedAllocation: allocation.VercelSmall,
		CreatedAt: created, NextRunAt: created.Add(time.Hour),
	}
}

// newWebhookTrigger is a token trigger with its own header, events, a
// current secret of version 2 and a previous one still valid.
func newWebhookTrigger(id, user string, created time.Time) *trigger.Trigger {
	tr := newTrigger(id, user, "", created)
	tr.Cron, tr.Timezone, tr.NextRunAt = "", "", time.Time{}
	tr.Webhook = &trigger.Webhook{
		Verify: webhook.VerifyToken, Events: []string{"push", "merge_request.open"}, Header: "X-Webhook-Secret",
		Secret:   trigger.Secret{Version: 2, CreatedAt: created},
		Previous: &trigger.Secret{Version: 1, CreatedAt: created.Add(-time.Hour), ValidUntil: created.Add(23 * time.Hour)},
	}
	return tr
}

// TestWebhookTriggerRoundTrip: a webhook trigger reads back as written, a
// sealed secret and an empty list of events included, with no schedule
// and out of the due index; its runs carry their delivery, event and
// prompt.
func TestWebhookTriggerRoundTrip(t *testing.T) {
	forEachBackend(t, func(t *testing.T, tbl *Table, c *dynamodb.Client, name string) {
		ctx := context.Background()
		gen := newWebhookTrigger("trg_g", "u1", now)
		imp := newWebhookTrigger("trg_i", "u1", now.Add(time.Second))
		imp.Webhook = &trigger.Webhook{Verify: webhook.VerifyStandard, Events: []string{}, Secret: trigger.Secret{Sealed: []byte{0, 1, 2, 0xff}, CreatedAt: now}}
		for _, tr := range []*trigger.Trigger{gen, imp} {
			if err := tbl.CreateTrigger(ctx, tr, 100); err != nil {
				t.Fatal(err)
			}
			got, err := tbl.GetTrigger(ctx, tr.ID)
			tr.Version = 1
			if err != nil || !reflect.DeepEqual(got, tr) {
				t.Fatalf("got %+v %v\nwant %+v", got, err, tr)
			}
			out, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(name), Key: triggerKey(tr.ID), ConsistentRead: aws.Bool(true)})
			if err != nil {
				t.Fatal(err)
			}
			for _, a := range []string{"cron", "timezone", "nextRunAt", "dueShard"} {
				if out.Item[a] != nil {
					t.Errorf("%s: a webhook trigger has %s", tr.ID, a)
				}
			}
		}
		due, err := tbl.DueTriggers(ctx, now.Add(48*time.Hour))
		if err != nil || len(due) != 0 {
			t.Errorf("due: %v %v", due, err)
		}
		run := trigger.Run{Kind: trigger.KindWebhook, ID: "workspace_r", At: now, SessionID: "workspace_r", Status: trigger.StatusFired,
			RecordedAt: now, Delivery: "72d3162e", Event: "push", Prompt: "Review.", PromptLength: 7}
		if err := tbl.PutRun(ctx, gen, run); err != nil {
			t.Fatal(err)
		}
		_, runs, _, err := tbl.ListRuns(ctx, gen.ID, "", 10, nil, now)
		if err != nil || len(runs) != 1 || !reflect.DeepEqual(runs[0], run) {
			t.Errorf("runs %+v %v", runs, err)
		}
	})
}

// TestTriggerRoundTrip: a trigger reads back as written, a byoc request
// and a last run included.
func TestTriggerRoundTrip(t *testing.T) {
	forEachBackend(t, func(t *testing.T, tbl *Table, c *dynamodb.Client, name string) {
		ctx := context.Background()
		tr := newTrigger("trg_a", "u1", "o1", now)
		tr.SavedAllocation = ""
		tr.SavedRequest = &allocation.Request{Provider: allocation.RequestProvider{ID: allocation.Vercel, Account: allocation.AccountBYOC}, InstanceType: "small"}
		tr.LastRun = trigger.Run{At: now.Add(-time.Hour), SessionID: "workspace_x", Status: "fallback"}
		tr.Repository.Branch = ""
		tr.Agent.Variant = "fast"
		if err := tbl.CreateTrigger(ctx, tr, 100); err != nil {
			t.Fatal(err)
		}
		got, err := tbl.GetTrigger(ctx, "trg_a")
		tr.Version = 1 // a new trigger's
		if err != nil || !reflect.DeepEqual(got, tr) {
			t.Fatalf("got %+v %v\nwant %+v", got, err, tr)
		}
		if _, err := tbl.GetTrigger(ctx, "trg_none"); !errors.Is(err, ErrNotFound) {
			t.Errorf("unknown trigger: %v", err)
		}
	})
}

// TestConcurrentTriggerLimit: triggers created at once never pass the
// limit.
func TestConcurrentTriggerLimit(t *testing.T) {
	onEmbedded(t, func(t *testing.T, tbl *Table, c *dynamodb.Client, name string) {
		const limit = 3
		var created, refused atomic.Int32
		var wg sync.WaitGroup
		for i := range 6 {
			wg.Go(func() {
				switch err := tbl.CreateTrigger(context.Background(), newTrigger(fmt.Sprintf("trg_%d", i), "u1", "", now), limit); {
				case err == nil:
					created.Add(1)
				case errors.Is(err, ErrTriggerLimit):
					refused.Add(1)
				default:
					t.Errorf("create: %v", err)
				}
			})
		}
		wg.Wait()
		if created.Load() != limit || refused.Load() != 6-limit {
			t.Fatalf("created %d, refused %d", created.Load(), refused.Load())
		}
	})
}

// TestTriggerLimit: at most limit triggers per owner (the org when there
// is one, else the user); a refused trigger writes nothing, and deleting
// one makes room again.
func TestTriggerLimit(t *testing.T) {
	forEachBackend(t, func(t *testing.T, tbl *Table, c *dynamodb.Client, name string) {
		ctx := context.Background()
		const limit = 3
		for i := range limit {
			if err := tbl.CreateTrigger(ctx, newTrigger(fmt.Sprintf("trg_%d", i), "u1", "", now), limit); err != nil {
				t.Fatal(err)
			}
		}
		if err := tbl.CreateTrigger(ctx, newTrigger("trg_over", "u1", "", now), limit); !errors.Is(err, ErrTriggerLimit) {
			t.Fatalf("over the limit: %v", err)
		}
		if _, err := tbl.GetTrigger(ctx, "trg_over"); !errors.Is(err, ErrNotFound) {
			t.Errorf("a refused trigger was written: %v", err)
		}
		// The org's triggers count apart from the user's.
		if err := tbl.CreateTrigger(ctx, newTrigger("trg_org", "u1", "o1", now), limit); err != nil {
			t.Errorf("org trigger: %v", err)
		}
		page, _, err := tbl.ListTriggers(ctx, "u1", nil, 100, func(*trigger.Trigger) bool { return true })
		if err != nil {
			t.Fatal(err)
		}
		var victim *trigger.Trigger
		for _, tr := range page {
			if tr.OrgID == "" {
				victim = tr
			}
		}
		if err := tbl.DeleteTrigger(ctx, victim); err != nil {
			t.Fatal(err)
		}
		if err := tbl.DeleteTrigger(ctx, victim); !errors.Is(err, ErrNotFound) {
			t.Errorf("second delete: %v", err)
		}
		if err := tbl.CreateTrigger(ctx, newTrigger("trg_again", "u1", "", now), limit); err != nil {
			t.Errorf("after a delete: %v", err)
		}
	})
}

// TestListTriggers: a user's triggers, newest first, a page at a time,
// with only those keep accepts; another user's never.
func TestListTriggers(t *testing.T) {
	forEachBackend(t, func(t *testing.T, tbl *Table, c *dynamodb.Client, name string) {
		ctx := context.Background()
		for i := range 7 {
			org := ""
			if i%3 == 0 {
				org = "o2"
			}
			if err := tbl.CreateTrigger(ctx, newTrigger(fmt.Sprintf("trg_%d", i), "u1", org, now.Add(time.Duration(i)*time.Minute)), 100); err != nil {
				t.Fatal(err)
			}
		}
		if err := tbl.CreateTrigger(ctx, newTrigger("trg_other", "u2", "", now), 100); err != nil {
			t.Fatal(err)
		}
		noO2 := func(tr *trigger.Trigger) bool { return tr.OrgID != "o2" }
		var ids []string
		var after *Position
		for pages := 0; ; pages++ {
			page, more, err := tbl.ListTriggers(ctx, "u1", after, 2, noO2)
			if err != nil {
				t.Fatal(err)
			}
			for _, tr := range page {
				ids = append(ids, tr.ID)
			}
			if !more {
				break
			}
			last := page[len(page)-1]
			after = &Position{ID: last.ID, CreatedAt: last.CreatedAt}
		}
		want := []string{"trg_5", "trg_4", "trg_2", "trg_1"}
		if !reflect.DeepEqual(ids, want) {
			t.Errorf("pages %v, want %v", ids, want)
		}
	})
}

// TestDueTriggers: the active triggers due at a time, from every shard,
// longest due first, each as stored; inactive ones and later ones never.
func TestDueTriggers(t *testing.T) {
	forEachBackend(t, func(t *testing.T, tbl *Table, c *dynamodb.Client, name string) {
		ctx := context.Background()
		want := map[string]bool{}
		for i := range 40 {
			tr := newTrigger(fmt.Sprintf("trg_%d", i), "u1", "", now)
			tr.NextRunAt = now.Add(time.Duration(i%4-2) * time.Minute) // -2, -1, 0, +1 minutes
			tr.Active = i%5 != 0
			if tr.Active && i%4 != 3 {
				want[tr.ID] = true
			}
			if err := tbl.CreateTrigger(ctx, tr, 100); err != nil {
				t.Fatal(err)
			}
		}
		due, err := tbl.DueTriggers(ctx, now)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]bool{}
		last := -3
		for _, d := range due {
			id := d.ID
			got[id] = true
			if stored, err := tbl.GetTrigger(ctx, id); err != nil || !reflect.DeepEqual(d.Trigger, stored) {
				t.Errorf("%s: the index shows %+v, stored %+v %v", id, d.Trigger, stored, err)
			}
			var i int
			fmt.Sscanf(id, "trg_%d", &i)
			if i%4-2 < last {
				t.Errorf("%s comes after a trigger due later: %v", id, due)
			}
			last = i%4 - 2
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("due %v, want %v", got, want)
		}
	})
}

// TestDueTriggersPages: a shard whose due triggers are over a page of a
// query (1 MB) is read to its end. moto pages as DynamoDB does; the
// embedded endpoint answers in one page.
func TestDueTriggersPages(t *testing.T) {
	forEachBackend(t, func(t *testing.T, tbl *Table, c *dynamodb.Client, name string) {
		want := map[string]bool{}
		for i := 0; len(want) < 14; i++ { // 14 of about 90 KB: 1.3 MB in shard 0
			id := fmt.Sprintf("trg_%d", i)
			if shardOf(dueShardPrefix, id) != shardKey(dueShardPrefix, 0) {
				continue
			}
			tr := newTrigger(id, "u1", "", now)
			tr.NextRunAt = now
			tr.Prompt = strings.Repeat("p", 90000)
			if err := tbl.CreateTrigger(context.Background(), tr, 100); err != nil {
				t.Fatal(err)
			}
			want[id] = true
		}
		due, err := tbl.DueTriggers(context.Background(), now)
		got := map[string]bool{}
		for _, d := range due {
			got[d.ID] = d.Trigger != nil && len(d.Trigger.Prompt) == 90000
		}
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%d due of %d: %v", len(got), len(want), err)
		}
	})
}

// createDue creates trg_a of u1, due now, and returns it as read.
func createDue(t *testing.T, tbl *Table) *trigger.Trigger {
	t.Helper()
	tr := newTrigger("trg_a", "u1", "", now)
	tr.NextRunAt = now
	if err := tbl.CreateTrigger(context.Background(), tr, 100); err != nil {
		t.Fatal(err)
	}
	seen, err := tbl.GetTrigger(context.Background(), "trg_a")
	if err != nil {
		t.Fatal(err)
	}
	return seen
}

// TestRecordRun: a run moves the next slot on and the version with it, on
// the condition that the trigger is as it was read: a stale read (a late
// retry, another invocation first), a paused, changed or deleted trigger
// is never written.
func TestRecordRun(t *testing.T) {
	forEachBackend(t, func(t *testing.T, tbl *Table, c *dynamodb.Client, name string) {
		ctx := context.Background()
		seen := createDue(t, tbl)
		slot := now.Add(2 * time.Minute) // a later slot: missed ones are skipped
		if err := tbl.RecordRun(ctx, seen, trigger.Run{At: slot, SessionID: "workspace_1", Status: "fired"}, slot.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		got, _ := tbl.GetTrigger(ctx, "trg_a")
		if !got.NextRunAt.Equal(slot.Add(time.Hour)) || got.LastRun != (trigger.Run{At: slot, SessionID: "workspace_1", Status: "fired"}) || got.Version != seen.Version+1 {
			t.Fatalf("%+v", got)
		}
		// The same read again (a late retry of the slot) changes nothing.
		if err := tbl.RecordRun(ctx, seen, trigger.Run{At: slot, Status: "failed", Error: "internal_error"}, slot.Add(time.Hour)); !errors.Is(err, ErrTriggerMoved) {
			t.Errorf("a stale read: %v", err)
		}
		if again, _ := tbl.GetTrigger(ctx, "trg_a"); !reflect.DeepEqual(again, got) {
			t.Errorf("moved: %+v", again)
		}
		// Changed since it was read: another version, another next run.
		for _, change := range []func(tr *trigger.Trigger){
			func(tr *trigger.Trigger) { tr.Version++ },
			func(tr *trigger.Trigger) { tr.NextRunAt = tr.NextRunAt.Add(-time.Minute) },
		} {
			stale := *got
			change(&stale)
			if err := tbl.RecordRun(ctx, &stale, trigger.Run{At: slot, Status: "fired"}, slot.Add(2*time.Hour)); !errors.Is(err, ErrTriggerMoved) {
				t.Errorf("%+v: %v", stale, err)
			}
		}
		// A failed run clears the session.
		next := slot.Add(time.Hour)
		if err := tbl.RecordRun(ctx, got, trigger.Run{At: next, Status: "failed", Error: "invalid_request"}, next.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		got, _ = tbl.GetTrigger(ctx, "trg_a")
		if got.LastRun != (trigger.Run{At: next, Status: "failed", Error: "invalid_request"}) {
			t.Errorf("%+v", got.LastRun)
		}
		// Stopped since it was read.
		if err := tbl.Park(ctx, "trg_a", nil, trigger.Run{Status: trigger.StatusFailed, Error: "invalid_request"}); err != nil {
			t.Fatal(err)
		}
		if err := tbl.RecordRun(ctx, got, trigger.Run{At: next.Add(time.Hour), Status: "fired"}, next.Add(2*time.Hour)); !errors.Is(err, ErrTriggerMoved) {
			t.Errorf("a stopped trigger: %v", err)
		}
		if err := tbl.DeleteTrigger(ctx, got); err != nil {
			t.Fatal(err)
		}
		if err := tbl.RecordRun(ctx, got, trigger.Run{At: next.Add(time.Hour), Status: "fired"}, next.Add(2*time.Hour)); !errors.Is(err, ErrTriggerMoved) {
			t.Errorf("deleted trigger: %v", err)
		}
		if _, err := tbl.GetTrigger(ctx, "trg_a"); !errors.Is(err, ErrNotFound) {
			t.Errorf("the run wrote a deleted trigger back: %v", err)
		}
	})
}

// TestRecordRunUnversioned: an older writer's trigger, stored without a
// version, is recorded and gets its first version.
func TestRecordRunUnversioned(t *testing.T) {
	forEachBackend(t, func(t *testing.T, tbl *Table, c *dynamodb.Client, name string) {
		ctx := context.Background()
		tr := newTrigger("trg_a", "u1", "", now)
		tr.NextRunAt = now
		item := encodeTrigger(tr)
		if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(name), Item: item}); err != nil {
			t.Fatal(err)
		}
		if err := tbl.RecordRun(ctx, tr, trigger.Run{At: now, Status: "fired"}, now.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		if got, _ := tbl.GetTrigger(ctx, "trg_a"); got.Version != 1 || !got.NextRunAt.Equal(now.Add(time.Hour)) {
			t.Errorf("%+v", got)
		}
	})
}

// TestAdvance: a trigger's advance goes in the transaction of the session
// it fired: all three items or none. A trigger changed since it was seen
// refuses the whole transaction.
func TestAdvance(t *testing.T) {
	forEachBackend(t, func(t *testing.T, tbl *Table, c *dynamodb.Client, name string) {
		ctx := context.Background()
		seen := createDue(t, tbl)
		adv := &Advance{Seen: seen, Run: trigger.Run{At: now, Status: "fallback"}, Next: now.Add(time.Hour)}
		if _, err := tbl.CreateSession(ctx, newRecord("workspace_a"), *newRow("trigger:trg_a:1", "workspace_a", now.Add(24*time.Hour)), now, adv); err != nil {
			t.Fatal(err)
		}
		got, _ := tbl.GetTrigger(ctx, "trg_a")
		if got.LastRun != (trigger.Run{At: now, SessionID: "workspace_a", Status: "fallback"}) || !got.NextRunAt.Equal(now.Add(time.Hour)) || got.Version != seen.Version+1 {
			t.Errorf("%+v", got)
		}
		// The same advance again, with another session and key: refused,
		// nothing written.
		_, err := tbl.CreateSession(ctx, newRecord("workspace_b"), *newRow("trigger:trg_a:2", "workspace_b", now.Add(24*time.Hour)), now, adv)
		if !errors.Is(err, ErrTriggerMoved) {
			t.Fatalf("a stale advance: %v", err)
		}
		if _, err := tbl.GetSession(ctx, "workspace_b"); !errors.Is(err, ErrNotFound) {
			t.Errorf("the session was written: %v", err)
		}
		if _, err := tbl.GetLedger(ctx, "u1", "trigger:trg_a:2"); !errors.Is(err, ErrNotFound) {
			t.Errorf("the row was written: %v", err)
		}
		if again, _ := tbl.GetTrigger(ctx, "trg_a"); !reflect.DeepEqual(again, got) {
			t.Errorf("moved: %+v", again)
		}
	})
}

// TestTriggerItemShape: the stored trigger items of the fixtures decode
// to what they hold, and a trigger encodes back to the same item, its due
// shard included.
func TestTriggerItemShape(t *testing.T) {
	for name, want := range map[string]*trigger.Trigger{
		"trigger-weekdays": {
			ID: "trg_9b2e4f61-0c3a-4d8e-b5f7-1a6c3e9d2b40", UserID: "u1", OrgID: "o1", Active: true,
			Cron: "0 9 * * 1-5", Timezone: "Europe/Berlin",
			Repository: session.Repository{Type: "github", Repo: "acme/app", Branch: "main"},
			Agent:      session.Agent{Mode: "code", Model: "anthropic/claude"},
			Prompt:     "Update the dependencies and open a pull request.", SavedAllocation: "vercel-large",
			CreatedAt: time.Date(2026, 11, 20, 15, 12, 0, 123456789, time.UTC), NextRunAt: time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC),
			LastRun: trigger.Run{At: time.Date(2026, 11, 27, 8, 0, 0, 0, time.UTC), SessionID: "workspace_3f0c8a52-7d4e-4b1a-9c6f-2e8d5a1b7c90", Status: "fired"},
		},
		"trigger-byoc": {
			ID: "trg_4d7a1e39-8b2c-4f05-9e6d-3c1b0a8f7e52", UserID: "u1", Active: true, Cron: "30 6 * * *", Timezone: "UTC",
			Repository:   session.Repository{Type: "gitlab", URL: "https://gitlab.com/group/project.git"},
			Agent:        session.Agent{Mode: "code", Model: "anthropic/claude", Variant: "fast"},
			Prompt:       "Summarise yesterday's merge requests.",
			SavedRequest: &allocation.Request{Provider: allocation.RequestProvider{ID: allocation.Vercel, Account: allocation.AccountBYOC}, InstanceType: "small"},
			CreatedAt:    time.Date(2026, 11, 20, 15, 12, 0, 500000000, time.UTC), NextRunAt: time.Date(2026, 11, 30, 6, 30, 0, 0, time.UTC),
		},
		"trigger-webhook-github": {
			ID: "trg_5c1d9e27-8a4b-4f3e-9d62-7b0a1e4c8f15", UserID: "u1", OrgID: "o1", Active: true,
			Webhook: &trigger.Webhook{Verify: webhook.VerifyGitHub, Events: []string{"pull_request.opened"},
				Secret: trigger.Secret{Version: 1, CreatedAt: time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)}},
			Repository: session.Repository{Type: "github", Repo: "acme/app"},
			Agent:      session.Agent{Mode: "code", Model: "anthropic/claude"},
			Prompt:     "Review pull request {{body.pull_request.number}}: {{json body.pull_request.title}}",
			CreatedAt:  time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC), Version: 1,
		},
	} {
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile("testdata/" + name + ".json")
			if err != nil {
				t.Fatal(err)
			}
			item, err := localdb.UnmarshalItem(data)
			if err != nil {
				t.Fatal(err)
			}
			got, err := decodeTrigger(item)
			if err != nil || !reflect.DeepEqual(got, want) {
				t.Fatalf("decoded %+v %v\nwant %+v", got, err, want)
			}
			encoded := encodeTrigger(want)
			delete(item, "lastError") // stored NULL: unset
			if !reflect.DeepEqual(encoded, item) {
				a, _ := attributevalue.MarshalMapJSON(encoded)
				t.Errorf("encoded %s", a)
			}
		})
	}
}

// TestTriggerCountConflict: two writes on one owner's count at once
// conflict on real DynamoDB (the emulators never do), and a throttled one
// may pass later: both are service_unavailable, never internal_error.
func TestTriggerCountConflict(t *testing.T) {
	r := func(code string) types.CancellationReason { return types.CancellationReason{Code: aws.String(code)} }
	for _, row := range []struct {
		rule string
		err  error
		want problem.Code
	}{
		{"conflict on the count", &types.TransactionCanceledException{CancellationReasons: []types.CancellationReason{r("None"), r("TransactionConflict")}}, problem.ServiceUnavailable},
		{"conflict on the trigger", &types.TransactionCanceledException{CancellationReasons: []types.CancellationReason{r("TransactionConflict"), r("None")}}, problem.ServiceUnavailable},
		{"throttled", &types.TransactionCanceledException{CancellationReasons: []types.CancellationReason{r("None"), r("ThrottlingError")}}, problem.ServiceUnavailable},
		{"conflict exception", &types.TransactionConflictException{}, problem.ServiceUnavailable},
		{"a validation error", &types.TransactionCanceledException{CancellationReasons: []types.CancellationReason{r("ValidationError"), r("None")}}, problem.InternalError},
	} {
		t.Run(row.rule, func(t *testing.T) {
			if got := problem.CodeOf(countError("create trigger", row.err)); got != row.want {
				t.Errorf("%s, want %s", got, row.want)
			}
		})
	}
}

// TestPark: a parked trigger is inactive, out of the due index, with its
// failure recorded, and stays readable; a deleted one is not written back.
// One that decoded is parked on the condition that it is as read, with
// its slot's run; one changed since (mended by a change, say) is not.
func TestPark(t *testing.T) {
	forEachBackend(t, func(t *testing.T, tbl *Table, c *dynamodb.Client, name string) {
		ctx := context.Background()
		seen := createDue(t, tbl)
		changed := *seen
		changed.Cron = "*/5 * * * *"
		if err := tbl.UpdateTrigger(ctx, seen, &changed); err != nil {
			t.Fatal(err)
		}
		if err := tbl.Park(ctx, "trg_a", seen, seen.Parked("invalid_request", now)); !errors.Is(err, ErrTriggerMoved) {
			t.Errorf("changed since it was read: %v", err)
		}
		if got, _ := tbl.GetTrigger(ctx, "trg_a"); !got.Active {
			t.Errorf("parked though changed: %+v", got)
		}
		if err := tbl.Park(ctx, "trg_a", &changed, changed.Parked("invalid_request", now)); err != nil {
			t.Fatal(err)
		}
		got, err := tbl.GetTrigger(ctx, "trg_a")
		if err != nil || got.LastRun != (trigger.Run{At: now, Status: "failed", Error: "invalid_request"}) || got.Active || got.Version != changed.Version+1 {
			t.Errorf("%+v %v", got, err)
		}
		if due, err := tbl.DueTriggers(ctx, now); err != nil || len(due) != 0 {
			t.Errorf("a parked trigger is due: %v %v", due, err)
		}
		_, runs, _, err := tbl.ListRuns(ctx, "trg_a", "", 10, nil, now)
		if err != nil || len(runs) != 1 || runs[0] != (trigger.Run{At: now, Status: "failed", Error: "invalid_request", RecordedAt: now}) {
			t.Errorf("runs %+v: %v", runs, err)
		}
		// One that does not decode: as long as it exists, with no run.
		if err := tbl.Park(ctx, "trg_a", nil, trigger.Run{Status: trigger.StatusFailed, Error: "internal_error"}); err != nil {
			t.Fatal(err)
		}
		if got, _ := tbl.GetTrigger(ctx, "trg_a"); got.LastRun.Error != "internal_error" || got.Version != changed.Version+1 {
			t.Errorf("%+v", got)
		}
		if err := tbl.Park(ctx, "trg_gone", nil, trigger.Run{Status: trigger.StatusFailed, Error: "invalid_request"}); err != nil {
			t.Errorf("a deleted trigger: %v", err)
		}
		if _, err := tbl.GetTrigger(ctx, "trg_gone"); !errors.Is(err, ErrNotFound) {
			t.Errorf("parking wrote a deleted trigger back: %v", err)
		}
	})
}

// TestInvalidTrigger: an item that does not decode is an
// InvalidTriggerError with its id (from the key) and its owner when still
// readable; its reason names the attribute, never the stored value.
func TestInvalidTrigger(t *testing.T) {
	good := encodeTrigger(newTrigger("trg_a", "u1", "o1", now))
	for _, row := range []struct {
		rule  string
		name  string
		value types.AttributeValue
	}{
		{"a time that is not one", "nextRunAt", &types.AttributeValueMemberS{Value: "next tuesday"}},
		{"a flag of another type", "active", &types.AttributeValueMemberS{Value: "next tuesday"}},
		{"a version that is not a number", "version", &types.AttributeValueMemberS{Value: "next tuesday"}},
		{"a section of another type", "agent", &types.AttributeValueMemberS{Value: "next tuesday"}},
		{"a nested attribute of another type", "repository", &types.AttributeValueMemberM{Value: Item{
			"type": &types.AttributeValueMemberBOOL{Value: true}, "repo": &types.AttributeValueMemberS{Value: "next tuesday"},
		}}},
		{"an id that differs from the key", "triggerId", &types.AttributeValueMemberS{Value: "trg_b"}},
	} {
		t.Run(row.rule, func(t *testing.T) {
			item := Item{}
			for k, v := range good {
				item[k] = v
			}
			item[row.name] = row.value
			_, err := decodeTrigger(item)
			var invalid *InvalidTriggerError
			if !errors.As(err, &invalid) || invalid.ID != "trg_a" || invalid.UserID != "u1" || invalid.OrgID != "o1" {
				t.Fatalf("%#v", err)
			}
			if strings.Contains(err.Error(), "tuesday") || strings.Contains(err.Error(), "trg_b") {
				t.Errorf("the reason shows the stored value: %v", err)
			}
			if !strings.Contains(err.Error(), row.name) {
				t.Errorf("the reason does not name %s: %v", row.name, err)
			}
		})
	}
}

// TestTriggerAttributeCase: attributes are read by their exact names, at
// every depth: one whose name differs only in case is another attribute,
// ignored as unknown ones are, never read as the right one. The due
// index's copies decode the same way.
func TestTriggerAttributeCase(t *testing.T) {
	good := encodeTrigger(newTrigger("trg_a", "u1", "o1", now))
	// miscased is good with the attribute at path (dot-separated) renamed
	// to wrong, and the right one kept when keep says so.
	miscased := func(path, wrong string, keep bool) Item {
		item := maps.Clone(good)
		parent, name := item, path
		if section, field, nested := strings.Cut(path, "."); nested {
			inner := maps.Clone(item[section].(*types.AttributeValueMemberM).Value)
			item[section] = &types.AttributeValueMemberM{Value: inner}
			parent, name = inner, field
		}
		parent[wrong] = &types.AttributeValueMemberS{Value: "wrongly cased"}
		if !keep {
			delete(parent, name)
		}
		return item
	}
	for _, row := range []struct {
		rule  string
		item  Item
		check func(*trigger.Trigger) bool
	}{
		{"Prompt is not prompt", miscased("prompt", "Prompt", false), func(tr *trigger.Trigger) bool { return tr.Prompt == "" }},
		{"beside prompt, Prompt is ignored", miscased("prompt", "Prompt", true), func(tr *trigger.Trigger) bool { return tr.Prompt == "Update the dependencies." }},
		{"CRON is not cron", miscased("cron", "CRON", false), func(tr *trigger.Trigger) bool { return tr.Cron == "" }},
		{"in a map, Type is not type", miscased("repository.type", "Type", false), func(tr *trigger.Trigger) bool {
			return tr.Repository == session.Repository{Repo: "acme/app", Branch: "main"}
		}},
	} {
		t.Run(row.rule, func(t *testing.T) {
			for range 20 { // map order must not matter
				tr, err := decodeTrigger(row.item)
				if err != nil || !row.check(tr) {
					t.Fatalf("%+v %v", tr, err)
				}
			}
		})
	}
	t.Run("ownerUserID is not ownerUserId", func(t *testing.T) {
		_, err := decodeTrigger(miscased("ownerUserId", "ownerUserID", false))
		var invalid *InvalidTriggerError
		if !errors.As(err, &invalid) || invalid.ID != "trg_a" || invalid.UserID != "" {
			t.Fatalf("%#v", err)
		}
	})
	forEachBackend(t, func(t *testing.T, tbl *Table, c *dynamodb.Client, name string) {
		ctx := context.Background()
		for id, rename := range map[string][2]string{"trg_p": {"prompt", "Prompt"}, "trg_o": {"ownerUserId", "ownerUserID"}} {
			tr := newTrigger(id, "u1", "", now)
			tr.NextRunAt = now
			item := encodeTrigger(tr)
			item[rename[1]] = item[rename[0]]
			delete(item, rename[0])
			if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(tbl.name), Item: item}); err != nil {
				t.Fatal(err)
			}
		}
		due, err := tbl.DueTriggers(ctx, now)
		got := map[string]*trigger.Trigger{}
		for _, d := range due {
			got[d.ID] = d.Trigger
		}
		if err != nil || len(got) != 2 || got["trg_p"] == nil || got["trg_p"].Prompt != "" || got["trg_o"] != nil {
			t.Errorf("%v %v", got, err)
		}
	})
}
