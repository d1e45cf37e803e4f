package store

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/cloud-agent/control-plane/shared/trigger"
)

// hookRun is a webhook run received at now, before its session is set.
func hookRun() trigger.Run {
	return trigger.Run{Kind: trigger.KindWebhook, At: now, Status: trigger.StatusFired,
		Delivery: "d1", Event: "push", Prompt: "Look at push", PromptLength: 12, RecordedAt: now}
}

// TestDelivery: a delivery's session goes in with its run, the minute's
// counter and its key's marker; the read finds the trigger, the marker
// and the count; a second start of the key is refused with the marker
// that stands, nothing written; the limit refuses a new start; a refused
// start's failed run and marker go in without the counter; a trigger
// that moved refuses all of it.
func TestDelivery(t *testing.T) {
	forEachBackend(t, func(t *testing.T, tbl *Table, c *dynamodb.Client, name string) {
		ctx := context.Background()
		seen := newWebhookTrigger("trg_w", "u1", now)
		if err := tbl.CreateTrigger(ctx, seen, 100); err != nil {
			t.Fatal(err)
		}
		seen, _ = tbl.GetTrigger(ctx, "trg_w")
		d := &Delivery{Seen: seen, Run: hookRun(), Key: "trigger:trg_w:hook:k1", Limit: 2, Now: now}
		if _, err := tbl.CreateSession(ctx, newRecord("workspace_a"), *newRow(d.Key, "workspace_a", now.Add(24*time.Hour)), now, d); err != nil {
			t.Fatal(err)
		}
		read, err := tbl.ReadDelivery(ctx, "trg_w", []string{d.Key, "trigger:trg_w:hook:other"}, now)
		if err != nil {
			t.Fatal(err)
		}
		m, ok := read.Markers[d.Key]
		if read.Trigger == nil || read.Trigger.ID != "trg_w" || !ok || m.SessionID != "workspace_a" || m.Run == "" || len(read.Markers) != 1 || read.Started != 1 {
			t.Fatalf("read %+v", read)
		}
		_, runs, _, err := tbl.ListRuns(ctx, "trg_w", "", 10, nil, now)
		if err != nil || len(runs) != 1 || runs[0].SessionID != "workspace_a" || runs[0].ID != "workspace_a" || runs[0].Kind != trigger.KindWebhook || runs[0].Delivery != "d1" {
			t.Fatalf("runs %+v: %v", runs, err)
		}
		items := count(t, c, name)

		// The same key again, say a redelivery that read before the first
		// went in: the marker that stands, nothing written.
		err = tbl.PutSession(ctx, newRecord("workspace_b"), d)
		var de *DeliveredError
		if !errors.As(err, &de) || de.Marker != m {
			t.Fatalf("the key again: %v", err)
		}
		// Another delivery: the second of the minute passes, the third is
		// over the limit.
		if err := tbl.PutSession(ctx, newRecord("workspace_c"), &Delivery{Seen: seen, Run: hookRun(), Limit: 2, Now: now}); err != nil {
			t.Fatal(err)
		}
		if err := tbl.PutSession(ctx, newRecord("workspace_d"), &Delivery{Seen: seen, Run: hookRun(), Limit: 2, Now: now}); !errors.Is(err, ErrRateLimited) {
			t.Fatalf("over the limit: %v", err)
		}
		if got := count(t, c, name); got != items+2 {
			t.Errorf("%d items, want %d: the second delivery's session and run", got, items+2)
		}
		// A refused start of another key: its run and marker, not the
		// counter; again, the marker that stands.
		failed := &Delivery{Seen: seen, Run: hookRun(), Key: "trigger:trg_w:hook:k2", Now: now}
		failed.Run.ID, failed.Run.Status, failed.Run.Error, failed.Run.RecordedAt = "run_x", trigger.StatusFailed, "sandbox_allocation_retired", now
		if err := tbl.PutFailedDelivery(ctx, failed, "sandbox_allocation_retired", "Retired."); err != nil {
			t.Fatal(err)
		}
		if err := tbl.PutFailedDelivery(ctx, failed, "sandbox_allocation_retired", "Retired."); !errors.As(err, &de) || de.Marker.Error != "sandbox_allocation_retired" || de.Marker.Detail != "Retired." {
			t.Fatalf("the refused key again: %v", err)
		}
		read, _ = tbl.ReadDelivery(ctx, "trg_w", []string{failed.Key}, now)
		if read.Started != 2 || read.Markers[failed.Key].Error != "sandbox_allocation_retired" {
			t.Errorf("read %+v", read)
		}
		// A trigger that moved: nothing written.
		moved := *seen
		moved.Version--
		if err := tbl.PutSession(ctx, newRecord("workspace_e"), &Delivery{Seen: &moved, Run: hookRun(), Limit: 10, Now: now.Add(time.Minute)}); !errors.Is(err, ErrTriggerMoved) {
			t.Errorf("moved: %v", err)
		}
		if err := tbl.PutFailedDelivery(ctx, &Delivery{Seen: &moved, Run: failed.Run, Key: "trigger:trg_w:hook:k3", Now: now}, "x", "y"); !errors.Is(err, ErrTriggerMoved) {
			t.Errorf("moved, refused: %v", err)
		}
		// Nothing at all for an unknown trigger.
		if read, err := tbl.ReadDelivery(ctx, "trg_none", []string{d.Key}, now); err != nil || read.Trigger != nil || len(read.Markers) != 0 || read.Started != 0 {
			t.Errorf("unknown: %+v %v", read, err)
		}
	})
}

// TestDeliveryRefusals: what refused a delivery's transaction, item by
// item, as real DynamoDB answers it (a conflict the emulators never
// produce included): the session and its row, then the check, the run,
// the counter and the marker.
func TestDeliveryRefusals(t *testing.T) {
	reason := func(code string) types.CancellationReason { return types.CancellationReason{Code: aws.String(code)} }
	marker := encodeMarker("trg_w", "k", Marker{SessionID: "workspace_a", Run: "RUN#x"}, now)
	none, ccf, conflict := reason("None"), reason("ConditionalCheckFailed"), reason("TransactionConflict")
	withOld := ccf
	withOld.Item = marker
	rows := []struct {
		rule    string
		reasons []types.CancellationReason
		want    error // a sentinel, or nil for a *DeliveredError
	}{
		{"the marker stands, handed back", []types.CancellationReason{none, ccf, none, none, none, withOld}, nil},
		{"the marker stands and the minute is full: the marker answers", []types.CancellationReason{none, ccf, none, none, ccf, withOld}, nil},
		{"the marker stands, not handed back: read again", []types.CancellationReason{none, ccf, none, none, none, ccf}, ErrTriggerMoved},
		{"a conflict on the marker: read again", []types.CancellationReason{none, none, none, none, none, conflict}, ErrTriggerMoved},
		{"the minute is full", []types.CancellationReason{none, none, none, none, ccf, none}, ErrRateLimited},
		{"a conflict on the counter: read again", []types.CancellationReason{none, none, none, none, conflict, none}, ErrTriggerMoved},
		{"the trigger moved", []types.CancellationReason{none, none, ccf, none, none, none}, ErrTriggerMoved},
		{"a conflict on the ledger row alone: the row exists", []types.CancellationReason{none, conflict, none, none, none, none}, ErrLedgerExists},
	}
	for _, r := range rows {
		t.Run(r.rule, func(t *testing.T) {
			_, err := transactionError(&types.TransactionCanceledException{CancellationReasons: r.reasons}, &Delivery{Key: "k", Now: now})
			var de *DeliveredError
			if r.want == nil && (!errors.As(err, &de) || de.Marker.SessionID != "workspace_a") || r.want != nil && !errors.Is(err, r.want) {
				t.Errorf("got %v, want %v", err, r.want)
			}
		})
	}
	// A refused start's write: the check, the run, the marker.
	if err := failedDeliveryError(&types.TransactionCanceledException{CancellationReasons: []types.CancellationReason{none, none, conflict}}, true, now); !errors.Is(err, ErrTriggerMoved) {
		t.Errorf("a conflict on a refused start's marker: %v", err)
	}
	if err := failedDeliveryError(&types.TransactionCanceledException{CancellationReasons: []types.CancellationReason{none, none, withOld}}, true, now); !errors.As(err, new(*DeliveredError)) {
		t.Errorf("a refused start's marker stands: %v", err)
	}
}
