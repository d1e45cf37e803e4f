package store

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/cloud-agent/control-plane/shared/outcome"
)

// TestConditionedOutcome: a report's and a claim's writes are conditioned
// on the session as read: a second write from the same stale read is
// ErrSessionMoved and changes nothing, on both backends.
func TestConditionedOutcome(t *testing.T) {
	forEachBackend(t, func(t *testing.T, tbl *Table, c *dynamodb.Client, name string) {
		ctx := context.Background()
		rec := newRecord("workspace_cond")
		if err := tbl.PutSession(ctx, rec, nil); err != nil {
			t.Fatal(err)
		}
		seen, err := tbl.GetSession(ctx, rec.SessionID)
		if err != nil {
			t.Fatal(err)
		}
		first := &outcome.Outcome{Status: outcome.Completed, EndedAt: now, ReportedAt: now, Revision: 1}
		second := &outcome.Outcome{Status: outcome.Failed, EndedAt: now, ReportedAt: now, Revision: 1}
		if err := tbl.WriteOutcome(ctx, seen, first, false, now); err != nil {
			t.Fatal(err)
		}
		if err := tbl.WriteOutcome(ctx, seen, second, false, now); !errors.Is(err, ErrSessionMoved) {
			t.Errorf("a second outcome from a stale read: %v", err)
		}
		if err := tbl.WriteClaim(ctx, seen, &outcome.Claim{Runner: "r1", ClaimedAt: now, HeartbeatAt: now}); !errors.Is(err, ErrSessionMoved) {
			t.Errorf("a claim from a stale read: %v", err)
		}
		got, err := tbl.GetSession(ctx, rec.SessionID)
		if err != nil || got.Outcome == nil || got.Outcome.Status != outcome.Completed || got.Claim != nil {
			t.Errorf("stored %+v %+v: %v", got.Outcome, got.Claim, err)
		}
		// A report read before a runner's claim went in meets the claim.
		other := newRecord("workspace_claimed")
		if err := tbl.PutSession(ctx, other, nil); err != nil {
			t.Fatal(err)
		}
		stale, _ := tbl.GetSession(ctx, other.SessionID)
		if err := tbl.WriteClaim(ctx, stale, &outcome.Claim{Runner: "r1", ClaimedAt: now, HeartbeatAt: now}); err != nil {
			t.Fatal(err)
		}
		if err := tbl.WriteOutcome(ctx, stale, first, false, now); !errors.Is(err, ErrSessionMoved) {
			t.Errorf("a report read before the claim: %v", err)
		}
	})
}
