package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/cloud-agent/control-plane/shared/allocation"
	"github.com/cloud-agent/control-plane/shared/ledger"
	"github.com/cloud-agent/control-plane/shared/trigger"
)

// TestScan: a parallel scan in any number of segments hands over every
// item exactly once, decoded by its kind, across pages (moto pages at
// 1 MB), an item that does not decode with its error.
func TestScan(t *testing.T) {
	forEachBackend(t, func(t *testing.T, tbl *Table, c *dynamodb.Client, name string) {
		ctx := context.Background()
		want := map[string]ItemKind{}
		for i := range 6 {
			id := fmt.Sprintf("workspace_%d", i)
			if _, err := tbl.CreateSession(ctx, newRecord(id), *newRow("k"+id, id, now.Add(ledger.TTL)), now, nil); err != nil {
				t.Fatal(err)
			}
			want["SESSION#"+id] = KindSession
			want["OPERATION#u1#k"+id] = KindLedger
		}
		for i := range 14 { // 14 of about 90 KB: 1.3 MB
			tr := newTrigger(fmt.Sprintf("trg_%d", i), "u1", "", now)
			tr.Prompt = strings.Repeat("p", 90000)
			if err := tbl.CreateTrigger(ctx, tr, 100); err != nil {
				t.Fatal(err)
			}
			want["TRIGGER#"+tr.ID] = KindTrigger
		}
		want["TRIGGERS#USER#u1"] = KindOther // the owner's count
		// A session that does not decode: a flat record with no user.
		if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(name), Item: map[string]types.AttributeValue{
			"PK": &types.AttributeValueMemberS{Value: "SESSION#workspace_bad"}, "SK": &types.AttributeValueMemberS{Value: "METADATA"},
			"sessionId": &types.AttributeValueMemberS{Value: "workspace_bad"},
		}}); err != nil {
			t.Fatal(err)
		}
		want["SESSION#workspace_bad"] = KindSession
		for _, segments := range []int{1, 4, 7} {
			var mu sync.Mutex
			got := map[string]ItemKind{}
			seen, broken := 0, 0
			err := tbl.Scan(ctx, segments, func(items []Scanned) error {
				mu.Lock()
				defer mu.Unlock()
				for _, s := range items {
					seen++
					key := ""
					switch {
					case s.Err != nil:
						broken++
						key = "SESSION#workspace_bad"
					case s.Session != nil:
						key = "SESSION#" + s.Session.SessionID
					case s.Ledger != nil:
						key = "OPERATION#" + s.Ledger.UserID + "#" + s.Ledger.OperationKey
					case s.Trigger != nil:
						key = "TRIGGER#" + s.Trigger.ID
					default:
						key = "TRIGGERS#USER#u1"
					}
					got[key] = s.Kind
				}
				return nil
			})
			if err != nil || seen != len(want) || broken != 1 || fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("%d segments: %d items, %d broken, %v: %v", segments, seen, broken, got, err)
			}
		}
		stop := errors.New("stop")
		if err := tbl.Scan(ctx, 2, func([]Scanned) error { return stop }); !errors.Is(err, stop) {
			t.Errorf("visit's error: %v", err)
		}
	})
}

// TestClearSavedAllocation: the saved allocation goes, the version moves
// on, and a trigger changed since it was read (another version, paused,
// another saved allocation) or deleted is not written.
func TestClearSavedAllocation(t *testing.T) {
	forEachBackend(t, func(t *testing.T, tbl *Table, c *dynamodb.Client, name string) {
		ctx := context.Background()
		createDue(t, tbl)
		seen, err := tbl.GetTrigger(ctx, "trg_a")
		if err != nil {
			t.Fatal(err)
		}
		stale := *seen
		stale.Version--
		paused := *seen
		paused.Active = false
		other := *seen
		other.SavedAllocation = allocation.VercelLarge
		byoc := *seen
		byoc.SavedAllocation, byoc.SavedRequest = "", &allocation.Request{Provider: allocation.RequestProvider{ID: allocation.Vercel, Account: allocation.AccountBYOC}, InstanceType: "small"}
		for what, tr := range map[string]*trigger.Trigger{"an older version": &stale, "paused since": &paused, "another saved name": &other, "a request object instead": &byoc} {
			if err := tbl.ClearSavedAllocation(ctx, tr); !errors.Is(err, ErrTriggerMoved) {
				t.Errorf("%s: %v", what, err)
			}
		}
		if err := tbl.ClearSavedAllocation(ctx, seen); err != nil {
			t.Fatal(err)
		}
		got, err := tbl.GetTrigger(ctx, "trg_a")
		if err != nil || got.SavedAllocation != "" || got.SavedRequest != nil || got.Version != seen.Version+1 || got.NextRunAt != seen.NextRunAt {
			t.Errorf("%+v %v", got, err)
		}
		if err := tbl.ClearSavedAllocation(ctx, seen); !errors.Is(err, ErrTriggerMoved) {
			t.Errorf("a second clear of the same read: %v", err)
		}
		gone := *got
		gone.ID = "trg_gone"
		if err := tbl.ClearSavedAllocation(ctx, &gone); !errors.Is(err, ErrTriggerMoved) {
			t.Errorf("a deleted trigger: %v", err)
		}
		if _, err := tbl.GetTrigger(ctx, "trg_gone"); !errors.Is(err, ErrNotFound) {
			t.Errorf("clearing wrote a deleted trigger back: %v", err)
		}
	})
}
