package runtimeapi_test

import (
	"context"
	"encoding/json/v2"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/cloud-agent/control-plane/infra/local/apitest"
	"github.com/cloud-agent/control-plane/infra/local/dynamotest"
	"github.com/cloud-agent/control-plane/infra/local/localdb"
	"github.com/cloud-agent/control-plane/infra/local/testkit"
	"github.com/cloud-agent/control-plane/shared/session"
)

// TestConcurrentClaims: 20 runners claiming one session at once settle on
// one: one claim answered 200, every other 409 naming it (or 503 for a
// write that kept meeting others, which a retry settles).
func TestConcurrentClaims(t *testing.T) {
	h, _ := harness(t, nil)
	id, token := start(t, h, "")
	results := make([]apitest.Result, 20)
	var wg sync.WaitGroup
	for i := range results {
		wg.Go(func() { results[i] = claim(h, id, token, fmt.Sprintf("r%d", i)) })
	}
	wg.Wait()
	winners := map[string]int{}
	for _, r := range results {
		switch r.Status {
		case 200:
			winners[r.Body["claim"].(map[string]any)["runner"].(string)]++
		case 409:
			winners[r.Body["claim"].(map[string]any)["runner"].(string)] += 0
		case 503:
		default:
			t.Fatalf("%d %s", r.Status, r.Raw)
		}
	}
	if len(winners) != 1 {
		t.Errorf("claims settled on %v", winners)
	}
	rec := h.Session(id)
	if _, ok := winners[rec.Claim.Runner]; !ok {
		t.Errorf("the stored claim %+v is not the answered one %v", rec.Claim, winners)
	}
}

// TestConcurrentReports: 20 reports of different outcomes settle on one:
// every 200 answers it, every other is 409 with it (or 503), and the
// session keeps it with revision 1. At once on the embedded endpoint,
// which isolates transactions as DynamoDB does; moto does not (a
// transaction there can pass its condition beside another's write,
// docs/local.md), so there the 20 go one after another, and
// TestConditionedOutcome holds the writes' conditions on both.
func TestConcurrentReports(t *testing.T) {
	for _, b := range dynamotest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			h, _ := harness(t, &b)
			id, token := start(t, h, "")
			results := make([]apitest.Result, 20)
			var wg sync.WaitGroup
			for i := range results {
				body := []string{`{"status":"completed"}`, `{"status":"failed","error":{"code":"e` + fmt.Sprint(i) + `","message":"m"}}`}[i%2]
				if b.Name == "moto" {
					results[i] = report(h, id, token, body)
					continue
				}
				wg.Go(func() { results[i] = report(h, id, token, body) })
			}
			wg.Wait()
			settled(t, h, id, results)
		})
	}
}

// settled checks that reports settled on the one outcome stored.
func settled(t *testing.T, h *apitest.Harness, id string, results []apitest.Result) {
	t.Helper()
	stored := h.Session(id).Outcome
	if stored == nil || stored.Revision != 1 {
		t.Fatalf("stored %+v", stored)
	}
	var view map[string]any // the stored outcome as answered, its members sorted as the answers' are
	if err := json.Unmarshal([]byte(testkit.JSON(session.OutcomeOf(stored))), &view); err != nil {
		t.Fatal(err)
	}
	want := testkit.JSON(view)
	for _, r := range results {
		switch {
		case r.Status == 503:
		case r.Status != 200 && r.Status != 409:
			t.Fatalf("%d %s", r.Status, r.Raw)
		case testkit.JSON(r.Body["outcome"]) != want:
			t.Errorf("an answer %s, the stored outcome %s", r.Raw, want)
		}
	}
}

// TestReplacesTimedOut: a report after a timed_out mark replaces it, once.
func TestReplacesTimedOut(t *testing.T) {
	h, _ := harness(t, nil)
	id, token := start(t, h, "")
	h.SetItem("SESSION#"+id, "METADATA", "metadata.outcome", &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{
		"status": &types.AttributeValueMemberS{Value: "timed_out"}, "revision": &types.AttributeValueMemberN{Value: "1"},
		"endedAt": &types.AttributeValueMemberS{Value: "2026-12-06T10:00:00Z"}, "reportedAt": &types.AttributeValueMemberS{Value: "2026-12-06T10:00:00Z"},
		"error": &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{
			"code": &types.AttributeValueMemberS{Value: "no_outcome_reported"}, "message": &types.AttributeValueMemberS{Value: "m"}}},
	}})
	if r := report(h, id, token, `{"status":"completed"}`); r.Status != 200 || r.Body["outcome"].(map[string]any)["status"] != "completed" {
		t.Fatalf("%d %s", r.Status, r.Raw)
	}
	if o := h.Session(id).Outcome; o.Revision != 2 {
		t.Errorf("revision %d", o.Revision)
	}
	if r := report(h, id, token, `{"status":"failed","error":{"code":"x","message":"m"}}`); r.Status != 409 {
		t.Errorf("a second replacement: %d %s", r.Status, r.Raw)
	}
}

// TestTriggerRun: the outcome of a trigger's session is written on its run
// too, in the same transaction; the run of a deleted trigger is not
// recreated, and the session's outcome is written alone.
func TestTriggerRun(t *testing.T) {
	h, _ := harness(t, nil)
	tr := h.CreateTrigger(t, owner, `{"schedule":{"cron":"0 9 * * *"},"repository":{"type":"github","repo":"acme/app"},"agent":{"mode":"code","model":"m"},"prompt":"p"}`)
	run := func() (string, string) {
		r := h.Do(apitest.Call{Method: "POST", Path: "/v1/triggers/" + tr + "/run", Claims: owner})
		if r.Status != 201 {
			t.Fatalf("run now: %d %s", r.Status, r.Raw)
		}
		id := r.Body["session"].(map[string]any)["sessionId"].(string)
		token, err := h.Tokens.Token(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		return id, token
	}
	runItems := func() []string {
		var out []string
		for _, it := range h.Items() {
			if strings.Contains(it, `"SK":{"S":"RUN#`) {
				out = append(out, it)
			}
		}
		return out
	}
	id, token := run()
	if r := report(h, id, token, `{"status":"completed"}`); r.Status != 200 {
		t.Fatalf("%d %s", r.Status, r.Raw)
	}
	if items := runItems(); len(items) != 1 || !strings.Contains(items[0], `"outcome":{"M":{`) || !strings.Contains(items[0], `"completed"`) {
		t.Errorf("the run %v", items)
	}
	gone, goneToken := run()
	if r := h.Do(apitest.Call{Method: "DELETE", Path: "/v1/triggers/" + tr, Claims: owner}); r.Status != 204 {
		t.Fatalf("delete: %d", r.Status)
	}
	for _, it := range runItems() { // expired, as the table's TTL deletes runs
		item, err := localdb.UnmarshalItem([]byte(it))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := h.Client.DeleteItem(context.Background(), &dynamodb.DeleteItemInput{TableName: &h.Table,
			Key: map[string]types.AttributeValue{"PK": item["PK"], "SK": item["SK"]}}); err != nil {
			t.Fatal(err)
		}
	}
	if r := report(h, gone, goneToken, `{"status":"interrupted"}`); r.Status != 200 || h.Session(gone).Outcome.Status != "interrupted" {
		t.Errorf("a deleted trigger's session: %d %s", r.Status, r.Raw)
	}
	if items := runItems(); len(items) != 0 {
		t.Errorf("a run recreated: %v", items)
	}
}
