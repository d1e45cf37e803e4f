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

	"github.com/cloud-agent/control-plane/shared/allocation"
	"github.com/cloud-agent/control-plane/shared/ledger"
	"github.com/cloud-agent/control-plane/shared/trigger"
)

// TestScan: a parallel scan in any number of segments hands over every
// item exactly once, decoded by its kind, across pages (moto pages at
// 1 MB), an item that does not decode with its error. An environment's
// item is an environment; the items beside an owner's environments (its
// default pointer, a copy of the default, its name claims, its count) are
// other items.
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
		// The default environment of u1, saved on the shared allocation:
		// its item, and beside it the pointer, the name claim and the
		// count.
		e := newEnvironment("env_a", "Node", "u1", "", now)
		e.SavedAllocation = allocation.CloudflareShared
		if err := tbl.WriteEnvironment(ctx, EnvironmentChange{Next: e, IsDefault: true, Limit: 10}); err != nil {
			t.Fatal(err)
		}
		want["ENVIRONMENT#env_a"] = KindEnvironment
		// The owner's trigger count, the environments' pointer, claim and
		// count.
		const others = 4
		// A session that does not decode: a flat record with no user; an
		// environment that does not decode: no name.
		for _, item := range []Item{
			{"PK": S("SESSION#workspace_bad"), "SK": S("METADATA"), "sessionId": S("workspace_bad")},
			{"PK": S("ENVIRONMENT#env_bad"), "SK": S("ENVIRONMENT"), "environmentId": S("env_bad"), "ownerUserId": S("u1")},
		} {
			if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(name), Item: item}); err != nil {
				t.Fatal(err)
			}
		}
		wantBroken := map[ItemKind]int{KindSession: 1, KindEnvironment: 1}
		for _, segments := range []int{1, 4, 7} {
			var mu sync.Mutex
			got := map[string]ItemKind{}
			broken := map[ItemKind]int{}
			seen, other := 0, 0
			err := tbl.Scan(ctx, segments, func(items []Scanned) error {
				mu.Lock()
				defer mu.Unlock()
				for _, s := range items {
					seen++
					switch {
					case s.Err != nil:
						broken[s.Kind]++
					case s.Session != nil:
						got["SESSION#"+s.Session.SessionID] = s.Kind
					case s.Ledger != nil:
						got["OPERATION#"+s.Ledger.UserID+"#"+s.Ledger.OperationKey] = s.Kind
					case s.Trigger != nil:
						got["TRIGGER#"+s.Trigger.ID] = s.Kind
					case s.Environment != nil:
						got["ENVIRONMENT#"+s.Environment.ID] = s.Kind
						if s.Environment.SavedAllocation != allocation.CloudflareShared {
							t.Errorf("the environment's allocation, as stored: %q", s.Environment.SavedAllocation)
						}
					case s.Kind == KindOther:
						other++
					}
				}
				return nil
			})
			if err != nil || seen != len(want)+others+2 || other != others || fmt.Sprint(broken) != fmt.Sprint(wantBroken) || fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("%d segments: %d items, %d other, broken %v, %v: %v", segments, seen, other, broken, got, err)
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
