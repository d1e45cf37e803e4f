package store

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/cloud-agent/control-plane/infra/local/dynamotest"
	"github.com/cloud-agent/control-plane/infra/local/faultproxy"
	"github.com/cloud-agent/control-plane/infra/local/localdb"
	"github.com/cloud-agent/control-plane/shared/allocation"
	"github.com/cloud-agent/control-plane/shared/environment"
)

// sharedRequest is a saved byoc object naming the shared-era account.
var sharedRequest = &allocation.Request{Provider: allocation.RequestProvider{ID: allocation.Cloudflare, Account: "shared"}, InstanceType: "standard"}

// TestClearEnvironmentAllocation: the saved allocation (a name or an
// object) goes, the version moves on by one and updatedAt to now, the
// rest stays (the count of triggers included); the default's pointer
// follows, another's is left alone; an environment changed since it was
// read, or deleted, is not written.
func TestClearEnvironmentAllocation(t *testing.T) {
	forEachBackend(t, func(t *testing.T, tbl *Table, c *dynamodb.Client, name string) {
		ctx := context.Background()
		later := now.Add(90 * time.Minute)
		a := newEnvironment("env_a", "Node", "u1", "", now)
		a.SavedAllocation = allocation.CloudflareShared
		b := newEnvironment("env_b", "Go", "u1", "", now)
		b.SavedRequest = sharedRequest
		for _, ch := range []EnvironmentChange{{Next: a, IsDefault: true, Limit: 10}, {Next: b, Limit: 10}} {
			if err := tbl.WriteEnvironment(ctx, ch); err != nil {
				t.Fatal(err)
			}
		}
		// Two triggers name a.
		if _, err := c.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: &name, Key: environmentKey("env_a"),
			UpdateExpression: ptr("SET triggers = :two"), ExpressionAttributeValues: Item{":two": N(2)}}); err != nil {
			t.Fatal(err)
		}
		seenA, err := tbl.GetEnvironment(ctx, "env_a")
		if err != nil {
			t.Fatal(err)
		}
		stale := *seenA
		stale.Version--
		before := items(t, c, name)
		if err := tbl.ClearEnvironmentAllocation(ctx, &stale, later); !errors.Is(err, ErrEnvironmentMoved) {
			t.Errorf("an older version: %v", err)
		}
		if !reflect.DeepEqual(items(t, c, name), before) {
			t.Fatal("a refused clear changed the table")
		}

		if err := tbl.ClearEnvironmentAllocation(ctx, seenA, later); err != nil {
			t.Fatal(err)
		}
		got, err := tbl.GetEnvironment(ctx, "env_a")
		want := *seenA
		want.SavedAllocation, want.Version, want.UpdatedAt = "", seenA.Version+1, later
		if err != nil || !reflect.DeepEqual(got, &want) {
			t.Errorf("cleared: %+v %v\nwant %+v", got, err, &want)
		}
		pointer := defaultCopy(t, tbl, "u1", "")
		want.Triggers = 0 // the pointer's copy holds no count
		if !reflect.DeepEqual(pointer, &want) {
			t.Errorf("the pointer holds %+v\nwant %+v", pointer, &want)
		}
		if err := tbl.ClearEnvironmentAllocation(ctx, seenA, later); !errors.Is(err, ErrEnvironmentMoved) {
			t.Errorf("a second clear of the same read: %v", err)
		}

		// b is no default: the pointer, a's, is left as it is.
		seenB, _ := tbl.GetEnvironment(ctx, "env_b")
		if err := tbl.ClearEnvironmentAllocation(ctx, seenB, later); err != nil {
			t.Fatal(err)
		}
		if got, err := tbl.GetEnvironment(ctx, "env_b"); err != nil || got.SavedRequest != nil || got.Version != 2 {
			t.Errorf("cleared: %+v %v", got, err)
		}
		if again := defaultCopy(t, tbl, "u1", ""); !reflect.DeepEqual(again, pointer) {
			t.Errorf("another's pointer changed: %+v", again)
		}

		gone := *seenB
		gone.ID = "env_gone"
		if err := tbl.ClearEnvironmentAllocation(ctx, &gone, later); !errors.Is(err, ErrEnvironmentMoved) {
			t.Errorf("a deleted environment: %v", err)
		}
		if _, err := tbl.GetEnvironment(ctx, "env_gone"); !errors.Is(err, ErrNotFound) {
			t.Errorf("clearing wrote a deleted environment back: %v", err)
		}
	})
}

// TestClearEnvironmentAllocationDefaultMoved: the default moving between
// the read of the pointer and the write refuses the write, whichever way
// it moved, so that the pointer never holds a stale copy; read again, the
// write goes through.
func TestClearEnvironmentAllocationDefaultMoved(t *testing.T) {
	b := dynamotest.Backends(t)[0]
	c, name := dynamotest.Table(t, b)
	p := faultproxy.New(b.Endpoint(t))
	t.Cleanup(p.Close)
	ctx := context.Background()
	tbl, direct := New(localdb.Client(p.URL()), name), New(c, name)
	a := newEnvironment("env_a", "Node", "u1", "", now)
	a.SavedAllocation = allocation.CloudflareShared
	o := newEnvironment("env_o", "Go", "u1", "", now)
	for _, ch := range []EnvironmentChange{{Next: a, IsDefault: true, Limit: 10}, {Next: o, Limit: 10}} {
		if err := direct.WriteEnvironment(ctx, ch); err != nil {
			t.Fatal(err)
		}
	}
	makeDefault := func(id string, was bool) func() {
		return func() {
			e, err := direct.GetEnvironment(ctx, id)
			if err == nil {
				err = direct.WriteEnvironment(ctx, EnvironmentChange{Seen: e, Next: e, WasDefault: was, IsDefault: true})
			}
			if err != nil {
				t.Error(err)
			}
		}
	}
	// Read as the default; another becomes the default before the write.
	p.Inject("TransactWriteItems", 1, faultproxy.Before(makeDefault("env_o", false)))
	if err := tbl.ClearEnvironmentAllocation(ctx, a, now); !errors.Is(err, ErrEnvironmentMoved) {
		t.Errorf("the default moved away: %v", err)
	}
	// Read as no default; it becomes the default again before the write.
	p.Inject("TransactWriteItems", 1, faultproxy.Before(makeDefault("env_a", false)))
	if err := tbl.ClearEnvironmentAllocation(ctx, a, now); !errors.Is(err, ErrEnvironmentMoved) {
		t.Errorf("the default moved to it: %v", err)
	}
	if got, _ := direct.GetEnvironment(ctx, "env_a"); got.SavedAllocation != allocation.CloudflareShared || got.Version != 1 {
		t.Errorf("a refused clear wrote: %+v", got)
	}
	if err := tbl.ClearEnvironmentAllocation(ctx, a, now); err != nil {
		t.Fatal(err)
	}
	if pointer := defaultCopy(t, direct, "u1", ""); pointer.ID != "env_a" || pointer.SavedAllocation != "" || pointer.Version != 2 {
		t.Errorf("the pointer holds %+v", pointer)
	}
}

// defaultCopy is the environment the default pointer of user in org
// holds.
func defaultCopy(t *testing.T, tbl *Table, user, org string) *environment.Environment {
	t.Helper()
	item, err := tbl.get(context.Background(), defaultKey(user, org))
	if err != nil {
		t.Fatal(err)
	}
	e, err := decodeEnvironment(item)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// items reads every item of a small table (one page), by its keys.
func items(t *testing.T, c *dynamodb.Client, name string) map[string]Item {
	t.Helper()
	out, err := c.Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String(name), ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	all := map[string]Item{}
	for _, it := range out.Items {
		all[it["PK"].(*types.AttributeValueMemberS).Value+" "+it["SK"].(*types.AttributeValueMemberS).Value] = it
	}
	return all
}
