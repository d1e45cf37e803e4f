package store

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/cloud-agent/control-plane/shared/outcome"
	"github.com/cloud-agent/control-plane/shared/session"
	"github.com/cloud-agent/control-plane/shared/trigger"
)

// TestRunSections: a session's trigger, claim and outcome sections (contract
// v7) read back as written, in metadata; a section that breaks its shape
// makes the record session_record_invalid.
func TestRunSections(t *testing.T) {
	at := now.Truncate(time.Second)
	rec := newRecord("workspace_run")
	rec.Trigger = &session.TriggerRef{ID: "trg_a", Kind: trigger.KindWebhook, Slot: at, RunKey: "RUN#2026-12-06T10:00:00.000Z#workspace_run"}
	rec.Claim = &outcome.Claim{Runner: "runner-1", ClaimedAt: at, HeartbeatAt: at.Add(time.Minute)}
	rec.Outcome = &outcome.Outcome{Status: outcome.Failed, Error: &outcome.Error{Code: "tests_failed", Message: "3 failed"},
		EndedAt: at.Add(2 * time.Minute), ReportedAt: at.Add(3 * time.Minute), Revision: 2}
	item := EncodeSession(rec)
	md := item["metadata"].(*types.AttributeValueMemberM).Value
	for _, section := range []string{"trigger", "claim", "outcome"} {
		if _, ok := md[section].(*types.AttributeValueMemberM); !ok {
			t.Errorf("metadata.%s is not a map: %v", section, md[section])
		}
	}
	got, err := DecodeSession(item)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Trigger, rec.Trigger) || !reflect.DeepEqual(got.Claim, rec.Claim) || !reflect.DeepEqual(got.Outcome, rec.Outcome) {
		t.Errorf("read back %+v %+v %+v", got.Trigger, got.Claim, got.Outcome)
	}
	plain, err := DecodeSession(EncodeSession(newRecord("workspace_plain")))
	if err != nil || plain.Trigger != nil || plain.Claim != nil || plain.Outcome != nil {
		t.Errorf("a session without them: %+v, %v", plain, err)
	}
	for _, r := range []struct {
		rule    string
		section string
		value   types.AttributeValue
	}{
		{"an unknown status", "outcome", M(Item{"status": S("done"), "endedAt": S("2026-12-06T10:00:00Z"), "reportedAt": S("2026-12-06T10:00:00Z"), "revision": N(1)})},
		{"no revision", "outcome", M(Item{"status": S("completed"), "endedAt": S("2026-12-06T10:00:00Z"), "reportedAt": S("2026-12-06T10:00:00Z")})},
		{"a time out of layout", "outcome", M(Item{"status": S("completed"), "endedAt": S("yesterday"), "reportedAt": S("2026-12-06T10:00:00Z"), "revision": N(1)})},
		{"a runner out of its characters", "claim", M(Item{"runner": S("a b"), "claimedAt": S("2026-12-06T10:00:00Z"), "heartbeatAt": S("2026-12-06T10:00:00Z")})},
		{"a section of another type", "trigger", S("trg_a")},
	} {
		bad := EncodeSession(newRecord("workspace_bad"))
		bad["metadata"].(*types.AttributeValueMemberM).Value[r.section] = r.value
		var invalid *InvalidSessionError
		if _, err := DecodeSession(bad); !errors.As(err, &invalid) || invalid.UserID != "u1" {
			t.Errorf("%s: %v", r.rule, err)
		}
	}
}
