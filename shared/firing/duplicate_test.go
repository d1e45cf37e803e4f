package firing_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/cloud-agent/control-plane/infra/local/apitest"
	"github.com/cloud-agent/control-plane/shared/firing"
)

// setSlotRow sets string attributes of the ledger row of a trigger's slot
// (the trigger's user is u1), as an older writer, or a hand, might have
// left them. The row must exist.
func setSlotRow(h *apitest.Harness, id string, slot time.Time, set map[string]string) error {
	var parts []string
	names, values := map[string]string{}, map[string]types.AttributeValue{}
	for name, v := range set {
		i := strconv.Itoa(len(parts))
		names["#a"+i], values[":v"+i] = name, &types.AttributeValueMemberS{Value: v}
		parts = append(parts, "#a"+i+" = :v"+i)
	}
	_, err := h.Client.UpdateItem(context.Background(), &dynamodb.UpdateItemInput{
		TableName: aws.String(h.Table),
		Key: map[string]types.AttributeValue{
			"PK": &types.AttributeValueMemberS{Value: "OPERATION#u1#trigger:" + id + ":" + slot.Format(time.RFC3339)},
			"SK": &types.AttributeValueMemberS{Value: "LEDGER"},
		},
		UpdateExpression:          aws.String("SET " + strings.Join(parts, ", ")),
		ConditionExpression:       aws.String("attribute_exists(PK)"),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: values,
	})
	return err
}

// TestDuplicateSessionGone: a slot whose ledger row names a session that
// is gone is a duplicate recorded with the row's session and the status
// the trigger runs with now: fallback when its saved allocation falls
// back, fired otherwise.
func TestDuplicateSessionGone(t *testing.T) {
	h := setup(t, apitest.New(t, nil))
	plain := newTrigger(t, h, "*/5 * * * *", nil)
	saved := newTrigger(t, h, "*/5 * * * *", nil)
	h.SetTrigger(saved, "sandboxAllocation", &types.AttributeValueMemberS{Value: "cloudflare-shared"})
	slot := time.Date(2026, 11, 30, 10, 5, 0, 0, time.UTC)
	if sum, err := fire(t, h, slot, slot); err != nil || sum != (firing.Summary{Due: 2, Fired: 2, Fallbacks: 1}) {
		t.Fatalf("%+v %v", sum, err)
	}
	want := map[string]string{plain: "fired", saved: "fallback"}
	for id := range want {
		if err := setSlotRow(h, id, slot, map[string]string{"sessionId": "workspace_gone"}); err != nil {
			t.Fatal(err)
		}
		rewind(t, h, id, slot)
	}
	if sum, err := fire(t, h, slot, slot); err != nil || sum != (firing.Summary{Due: 2, Duplicates: 2}) {
		t.Fatalf("%+v %v", sum, err)
	}
	for id, status := range want {
		if tr := read(t, h, id); tr["lastRunStatus"] != status || tr["lastSessionId"] != "workspace_gone" {
			t.Errorf("want %s: %v", status, tr)
		}
	}
}
