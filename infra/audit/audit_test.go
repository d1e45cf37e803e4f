package audit

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"golang.org/x/sync/errgroup"

	"github.com/cloud-agent/control-plane/infra/local/dynamotest"
	"github.com/cloud-agent/control-plane/infra/local/faultproxy"
	"github.com/cloud-agent/control-plane/infra/local/localdb"
	"github.com/cloud-agent/control-plane/shared/allocation"
	"github.com/cloud-agent/control-plane/shared/commit"
	"github.com/cloud-agent/control-plane/shared/session"
	"github.com/cloud-agent/control-plane/shared/store"
	"github.com/cloud-agent/control-plane/shared/trigger"
	"github.com/cloud-agent/control-plane/shared/webhook"
)

func TestMain(m *testing.M) { dynamotest.Main(m) }

var now = time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)

// fixtures are the session and ledger fixtures of every item shape of
// contract section 6, and how many of them are invalid.
const fixtures = "../../shared/store/testdata"

// seed writes every session and ledger fixture (each invalid one under a
// key of its own) and a trigger of every fallback class, and returns the
// ids of the triggers that fall back under the built-in settings with
// vercel-large taken out of the selectable list (seedPolicy).
func seed(t *testing.T, c *dynamodb.Client, name string) (fallsBack []string) {
	t.Helper()
	ctx := context.Background()
	paths, _ := filepath.Glob(filepath.Join(fixtures, "*", "*.json"))
	// The fixtures are written a few at a time: moto answers each request
	// in milliseconds, and the audit's tests seed a table each.
	var g errgroup.Group
	g.SetLimit(8)
	for i, path := range paths {
		g.Go(func() error {
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			item, err := localdb.UnmarshalItem(data)
			if err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
			if strings.HasPrefix(filepath.Base(path), "invalid-") && !strings.Contains(path, "ledger") {
				item["PK"] = &types.AttributeValueMemberS{Value: fmt.Sprintf("SESSION#workspace_bad%d", i)}
			}
			_, err = c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(name), Item: item})
			return err
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	tbl := store.New(c, name)
	byoc := func(typ string) *allocation.Request {
		return &allocation.Request{Provider: allocation.RequestProvider{ID: allocation.Vercel, Account: allocation.AccountBYOC}, InstanceType: typ}
	}
	for _, s := range []struct {
		id, saved string
		req       *allocation.Request
		active    bool
		falls     bool
	}{
		{"trg_none", "", nil, true, false},
		{"trg_small", allocation.VercelSmall, nil, true, false},
		{"trg_byoc", "", byoc("small"), true, false},
		{"trg_shared", allocation.CloudflareShared, nil, true, true},
		{"trg_shared_paused", allocation.CloudflareShared, nil, false, true},
		{"trg_single", allocation.CloudflareSingle, nil, true, true},
		{"trg_isolated", allocation.IsolatedStandard, nil, true, true},
		{"trg_huge", "vercel-huge", nil, true, true},
		{"trg_bad_request", "", &allocation.Request{Provider: allocation.RequestProvider{ID: "aws", Account: "kilo"}, InstanceType: "x"}, true, true},
		{"trg_large", allocation.VercelLarge, nil, true, true},
		{"trg_byoc_large", "", byoc("large"), false, true},
		{"trg_paused", "", nil, false, false},
	} {
		tr := &trigger.Trigger{
			ID: s.id, UserID: "u1", Active: s.active, Cron: "0 9 * * 1-5", Timezone: "Europe/Berlin",
			Repository: session.Repository{Type: "github", Repo: "acme/app"}, Agent: session.Agent{Mode: "code", Model: "m"},
			Prompt: "p", SavedAllocation: s.saved, SavedRequest: s.req, CreatedAt: now, NextRunAt: now.Add(time.Hour),
		}
		if err := tbl.CreateTrigger(ctx, tr, 100); err != nil {
			t.Fatal(err)
		}
		if s.falls {
			fallsBack = append(fallsBack, s.id)
		}
	}
	// A webhook trigger (no schedule): counted in webhook.
	hook := &trigger.Trigger{
		ID: "trg_hook", UserID: "u1", Active: true,
		Webhook:    &trigger.Webhook{Verify: webhook.VerifyGitHub, Secret: trigger.Secret{Version: 1, CreatedAt: now}},
		Repository: session.Repository{Type: "github", Repo: "acme/app"}, Agent: session.Agent{Mode: "code", Model: "m"},
		Prompt: "p", CreatedAt: now,
	}
	if err := tbl.CreateTrigger(ctx, hook, 100); err != nil {
		t.Fatal(err)
	}
	// A trigger that does not decode: counted in the total only.
	if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(name), Item: map[string]types.AttributeValue{
		"PK": &types.AttributeValueMemberS{Value: "TRIGGER#trg_broken"}, "SK": &types.AttributeValueMemberS{Value: "TRIGGER"},
		"triggerId": &types.AttributeValueMemberS{Value: "trg_broken"}, "ownerUserId": &types.AttributeValueMemberS{Value: "u1"},
		"active": &types.AttributeValueMemberS{Value: "yes"}, "sandboxAllocation": &types.AttributeValueMemberS{Value: allocation.CloudflareShared},
	}}); err != nil {
		t.Fatal(err)
	}
	sort.Strings(fallsBack)
	return fallsBack
}

// seedPolicy is the built-in settings with vercel-large not selectable.
func seedPolicy() *allocation.Policy {
	p, _ := allocation.NewPolicy(allocation.Config{Selectable: []string{
		allocation.ContainersStandard3, allocation.ContainersStandard4, allocation.VercelSmall}})
	return p
}

// seedReport is what the seed holds under seedPolicy, counted by hand
// from the fixtures (see each fixture's sandbox: its id, kind, provider,
// allocation and route).
var seedReport = Report{
	// 16 valid and 27 invalid sessions, 9 ledger rows (one invalid), 14
	// triggers (one invalid, one webhook) and the owner's trigger count.
	Scanned: 16 + 27 + 9 + 14 + 1,
	Sessions: Sessions{
		// byoc, cloudflare-single, code-review, current, kilo request,
		// unset attributes
		Current: 6,
		// flat, flat with no sandbox, flat with NULL version attributes
		LegacyFlat: 3,
		SharedKind: 1, // shared kind on an sbx- id
		RouteKey:   1, // usr- id with its route
		// the flat record's org_9__u1, the owner-key record's
		RawOwnerKey: 2,
		// crv- (flat), ses-
		LegacyIsolatedPrefix: 2,
		SbxNoKind:            1,
		Invalid:              27,
		// the three flat, cloudflare-single, ses-, no sandbox, owner key,
		// route key, sbx- without kind, shared allocation, shared kind:
		// all on cloudflare, stored or by absence
		OnRetiredProvider: 11,
		// cloudflare-shared: stored (2), or by a shared id class (3)
		OnRetiredAllocation: 5,
	},
	Ledger: Ledger{
		Completed: 5, InProgress: 2, Failed: 1,
		// the shared kind, the route of a legacy shared id
		RecordsShared: 2,
		// the shared kind (rule 2), the legacy shared id on cloudflare
		// (rule 3)
		RecordsRetired: 2,
	},
	Triggers: Triggers{
		Total:   14,
		Paused:  3,
		Webhook: 1,
		Fallback: Fallbacks{
			Retired:         2, // cloudflare-shared, active and paused
			ProviderRetired: 2, // cloudflare-single, isolated-standard
			Unknown:         2, // a name, an object
			NotSelectable:   2, // vercel-large by name and as a byoc object
		},
	},
	Uncounted: Uncounted{Ledger: 1, Triggers: 1, Other: 1},
}

// TestScanCounts: every item shape counts in its class, under the
// settings; a setting that retires an allocation moves sessions, ledger
// rows and triggers into the retired classes.
func TestScanCounts(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, c *dynamodb.Client, name string) {
		ctx := context.Background()
		fallsBack := seed(t, c, name)
		tbl := store.New(c, name)
		pages := 0
		r, err := Scan(ctx, tbl, seedPolicy(), 4, func(int) { pages++ })
		if err != nil {
			t.Fatal(err)
		}
		got := *r
		got.Fallbacks = nil
		if !reflect.DeepEqual(got, seedReport) {
			t.Errorf("got  %+v\nwant %+v", got, seedReport)
		}
		if ids := fallbackIDs(r.Fallbacks); !reflect.DeepEqual(ids, fallsBack) {
			t.Errorf("fallbacks %v, want %v", ids, fallsBack)
		}
		if pages < 4 {
			t.Errorf("%d pages from 4 segments", pages)
		}
		// vercel-small retired: the kilo request and unset-attributes
		// sessions, the failed ledger row, the trigger that saved it.
		p, _ := allocation.NewPolicy(allocation.Config{RetiredAllocations: []string{allocation.VercelSmall}})
		r, err = Scan(ctx, tbl, p, 1, nil)
		if err != nil {
			t.Fatal(err)
		}
		if r.Sessions.OnRetiredAllocation != 7 || r.Ledger.RecordsRetired != 3 || r.Triggers.Fallback.Retired != 3 || r.Triggers.Fallback.NotSelectable != 0 {
			t.Errorf("vercel-small retired: %+v %+v %+v", r.Sessions, r.Ledger, r.Triggers)
		}
	})
}

func fallbackIDs(fbs []Fallback) []string {
	var ids []string
	for _, fb := range fbs {
		ids = append(ids, fb.Trigger.ID)
	}
	sort.Strings(ids)
	return ids
}

// items reads every item of the table, by key.
func items(t *testing.T, c *dynamodb.Client, name string) map[string]map[string]types.AttributeValue {
	t.Helper()
	out := map[string]map[string]types.AttributeValue{}
	p := dynamodb.NewScanPaginator(c, &dynamodb.ScanInput{TableName: aws.String(name), ConsistentRead: aws.Bool(true)})
	for p.HasMorePages() {
		page, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range page.Items {
			out[it["PK"].(*types.AttributeValueMemberS).Value] = it
		}
	}
	return out
}

// TestRewrite: a dry run changes nothing; the rewrite clears the saved
// allocation of exactly the triggers that fall back, moves their version
// on and changes nothing else; a second scan finds none to clear, and a
// second rewrite none to change. A trigger changed since the scan is read
// again and judged again; one deleted since is left alone.
func TestRewrite(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, c *dynamodb.Client, name string) {
		ctx := context.Background()
		fallsBack := seed(t, c, name)
		tbl := store.New(c, name)
		p := seedPolicy()
		r, err := Scan(ctx, tbl, p, 4, nil)
		if err != nil {
			t.Fatal(err)
		}
		before := items(t, c, name)
		for _, o := range Rewrite(ctx, tbl, p, r.Fallbacks, true) {
			if o.Result != Cleared {
				t.Errorf("dry run: %s %s", o.Trigger.ID, o.Result)
			}
		}
		if !reflect.DeepEqual(items(t, c, name), before) {
			t.Fatal("a dry run changed the table")
		}
		// Since the scan: trg_huge fired (its version moved on), trg_large
		// now saves an allocation that runs, trg_single was deleted.
		moved, _ := tbl.GetTrigger(ctx, "trg_huge")
		if err := tbl.RecordRun(ctx, moved, trigger.Run{At: now, Status: trigger.StatusFallback, SessionID: "workspace_x"}, now.Add(24*time.Hour)); err != nil {
			t.Fatal(err)
		}
		if _, err := c.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(name),
			Key:              map[string]types.AttributeValue{"PK": &types.AttributeValueMemberS{Value: "TRIGGER#trg_large"}, "SK": &types.AttributeValueMemberS{Value: "TRIGGER"}},
			UpdateExpression: aws.String("SET sandboxAllocation = :a, version = version + :one"),
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":a": &types.AttributeValueMemberS{Value: allocation.VercelSmall}, ":one": &types.AttributeValueMemberN{Value: "1"}},
		}); err != nil {
			t.Fatal(err)
		}
		single, _ := tbl.GetTrigger(ctx, "trg_single")
		if err := tbl.DeleteTrigger(ctx, single); err != nil {
			t.Fatal(err)
		}
		before = items(t, c, name)
		results := map[string]string{}
		for _, o := range Rewrite(ctx, tbl, p, r.Fallbacks, false) {
			results[o.Trigger.ID] = o.Result
			if o.Err != nil {
				t.Errorf("%s: %v", o.Trigger.ID, o.Err)
			}
		}
		want := map[string]string{}
		for _, id := range fallsBack {
			want[id] = Cleared
		}
		want["trg_large"], want["trg_single"] = Kept, Gone
		if !reflect.DeepEqual(results, want) {
			t.Errorf("results %v, want %v", results, want)
		}
		after := items(t, c, name)
		for pk, it := range before {
			id := strings.TrimPrefix(pk, "TRIGGER#")
			if results[id] != Cleared {
				if !reflect.DeepEqual(after[pk], it) {
					t.Errorf("%s changed", pk)
				}
				continue
			}
			cleared := after[pk]
			v := func(it map[string]types.AttributeValue) string {
				return it["version"].(*types.AttributeValueMemberN).Value
			}
			if _, ok := cleared["sandboxAllocation"]; ok {
				t.Errorf("%s keeps sandboxAllocation", pk)
			}
			if _, ok := cleared["sandboxAllocationRequest"]; ok {
				t.Errorf("%s keeps sandboxAllocationRequest", pk)
			}
			for k, av := range it {
				if k != "sandboxAllocation" && k != "sandboxAllocationRequest" && k != "version" && !reflect.DeepEqual(cleared[k], av) {
					t.Errorf("%s: %s changed", pk, k)
				}
			}
			var was, is int
			fmt.Sscan(v(it), &was)
			fmt.Sscan(v(cleared), &is)
			if is != was+1 {
				t.Errorf("%s: version %d after %d", pk, is, was)
			}
		}
		r, err = Scan(ctx, tbl, p, 4, nil)
		if err != nil || len(r.Fallbacks) != 0 || r.Triggers.Fallback != (Fallbacks{}) {
			t.Errorf("after the rewrite: %+v %v", r.Triggers, err)
		}
		if out := Rewrite(ctx, tbl, p, r.Fallbacks, false); len(out) != 0 {
			t.Errorf("a second rewrite: %+v", out)
		}
	})
}

// forEachBackend runs f on a fresh table of every backend, the backends
// at once.
// TestRewriteChanging: a trigger whose write is refused at every try
// (commit.Tries), as when changes keep landing first, is read again after
// each, left as it was and reported changing, to be run again; the next
// rewrite clears it.
func TestRewriteChanging(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := dynamotest.Backends(t)[0]
	c, name := dynamotest.Table(t, b)
	seed(t, c, name)
	policy := seedPolicy()
	r, err := Scan(ctx, store.New(c, name), policy, 4, nil)
	if err != nil || len(r.Fallbacks) == 0 {
		t.Fatalf("%d fallbacks: %v", len(r.Fallbacks), err)
	}
	one := r.Fallbacks[:1]
	p := faultproxy.New(b.Endpoint(t))
	t.Cleanup(p.Close)
	tbl := store.New(localdb.Client(p.URL()), name)
	before := items(t, c, name)
	p.Inject("UpdateItem", commit.Tries, faultproxy.Status(http.StatusBadRequest,
		"com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException", "The conditional request failed"))
	out := Rewrite(ctx, tbl, policy, one, false)
	if len(out) != 1 || out[0].Result != Changing || out[0].Err != nil {
		t.Fatalf("%+v", out)
	}
	if !reflect.DeepEqual(items(t, c, name), before) {
		t.Error("a trigger that kept changing was written")
	}
	if p.Count("UpdateItem") != commit.Tries || p.Count("GetItem") != commit.Tries-1 {
		t.Errorf("%d writes and %d reads, want %d and %d", p.Count("UpdateItem"), p.Count("GetItem"), commit.Tries, commit.Tries-1)
	}
	if out := Rewrite(ctx, tbl, policy, one, false); len(out) != 1 || out[0].Result != Cleared {
		t.Errorf("run again: %+v", out)
	}
}

func forEachBackend(t *testing.T, f func(t *testing.T, c *dynamodb.Client, name string)) {
	dynamotest.ForEach(t, dynamotest.Backends(t), func(t *testing.T, c *dynamodb.Client, name string) {
		t.Parallel()
		f(t, c, name)
	})
}
