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
	"github.com/cloud-agent/control-plane/shared/environment"
	"github.com/cloud-agent/control-plane/shared/session"
	"github.com/cloud-agent/control-plane/shared/store"
	"github.com/cloud-agent/control-plane/shared/trigger"
	"github.com/cloud-agent/control-plane/shared/webhook"
)

func TestMain(m *testing.M) { dynamotest.Main(m) }

var now = time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)

// fixtures are the session and ledger fixtures of every item shape of
// contract section 6, and how many of them are invalid, and beside them
// the environment fixtures (v7).
const fixtures = "../../shared/store/testdata"

// seed writes every session and ledger fixture (each invalid one under a
// key of its own), the environment fixtures (two environments, one of
// them saved on cloudflare-shared, and a default pointer that is no
// environment), a trigger of every fallback class and an environment of
// every other class, and returns the ids of the triggers and environments
// that fall back under the built-in settings with vercel-large taken out
// of the selectable list (seedPolicy).
func seed(t *testing.T, c *dynamodb.Client, name string) (fallsBack []string) {
	t.Helper()
	ctx := context.Background()
	paths, _ := filepath.Glob(filepath.Join(fixtures, "*", "*.json"))
	environments, _ := filepath.Glob(filepath.Join(fixtures, "environment-*.json"))
	paths = append(paths, environments...)
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
	// The fixture saved on cloudflare-shared falls back; the other classes
	// are environments of u2, none its default.
	fallsBack = append(fallsBack, sharedEraEnvironment)
	for _, s := range []struct {
		id, saved string
		req       *allocation.Request
		falls     bool
	}{
		{"env_small", allocation.VercelSmall, nil, false},
		{"env_single", allocation.CloudflareSingle, nil, true},
		{"env_bad_request", "", &allocation.Request{Provider: allocation.RequestProvider{ID: "aws", Account: "kilo"}, InstanceType: "x"}, true},
		{"env_large", allocation.VercelLarge, nil, true},
	} {
		e := newEnvironment(s.id, "u2", "")
		e.SavedAllocation, e.SavedRequest = s.saved, s.req
		if err := tbl.WriteEnvironment(ctx, store.EnvironmentChange{Next: e, Limit: 100}); err != nil {
			t.Fatal(err)
		}
		if s.falls {
			fallsBack = append(fallsBack, s.id)
		}
	}
	// An environment that does not decode (it has no name): counted in the
	// total only.
	if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(name), Item: map[string]types.AttributeValue{
		"PK": &types.AttributeValueMemberS{Value: "ENVIRONMENT#env_broken"}, "SK": &types.AttributeValueMemberS{Value: "ENVIRONMENT"},
		"environmentId": &types.AttributeValueMemberS{Value: "env_broken"}, "ownerUserId": &types.AttributeValueMemberS{Value: "u1"},
		"sandboxAllocation": &types.AttributeValueMemberS{Value: allocation.CloudflareShared},
	}}); err != nil {
		t.Fatal(err)
	}
	sort.Strings(fallsBack)
	return fallsBack
}

// sharedEraEnvironment is the id of the environment fixture saved on
// cloudflare-shared (environment-shared-era.json).
const sharedEraEnvironment = "env_2b0e6c1a-7f3d-4a58-9c41-8e5d2f6a1b37"

// newEnvironment is an environment of user in org ("" for none), named
// after its id, with a plain variable, a secret one and a setup command.
func newEnvironment(id, user, org string) *environment.Environment {
	return &environment.Environment{
		ID: id, OwnerUserID: user, OrgID: org, Name: id,
		Variables:     map[string]environment.Variable{"NODE_ENV": {Value: "test"}, "TOKEN": {Secret: true, Sealed: []byte("sealed:" + id)}},
		SetupCommands: []string{"npm ci"}, CreatedAt: now, UpdatedAt: now, Version: 1,
	}
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
	// triggers (one invalid, one webhook), the owner's trigger count, 7
	// environments (one invalid), a default pointer, and u2's 4 name
	// claims and count of environments.
	Scanned: 16 + 27 + 9 + 14 + 1 + 7 + 1 + 4 + 1,
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
	Environments: Environments{
		// the two fixtures, four of u2, the one that does not decode; not
		// the default pointer
		Total: 7,
		Fallback: Fallbacks{
			Retired:         1, // the shared-era fixture
			ProviderRetired: 1, // cloudflare-single
			Unknown:         1, // an object
			NotSelectable:   1, // vercel-large
		},
	},
	Uncounted: Uncounted{Ledger: 1, Triggers: 1, Environments: 1, Other: 1 + 1 + 4 + 1},
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
		// sessions, the failed ledger row, the trigger and the
		// environment that saved it.
		p, _ := allocation.NewPolicy(allocation.Config{RetiredAllocations: []string{allocation.VercelSmall}})
		r, err = Scan(ctx, tbl, p, 1, nil)
		if err != nil {
			t.Fatal(err)
		}
		if r.Sessions.OnRetiredAllocation != 7 || r.Ledger.RecordsRetired != 3 || r.Triggers.Fallback.Retired != 3 || r.Triggers.Fallback.NotSelectable != 0 ||
			r.Environments.Fallback != (Fallbacks{Retired: 2, ProviderRetired: 1, Unknown: 1}) {
			t.Errorf("vercel-small retired: %+v %+v %+v %+v", r.Sessions, r.Ledger, r.Triggers, r.Environments)
		}
	})
}

func fallbackIDs(fbs []Fallback) []string {
	var ids []string
	for _, fb := range fbs {
		ids = append(ids, fb.ID())
	}
	sort.Strings(ids)
	return ids
}

// items reads every item of the table, by its keys ("PK SK").
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
			out[it["PK"].(*types.AttributeValueMemberS).Value+" "+it["SK"].(*types.AttributeValueMemberS).Value] = it
		}
	}
	return out
}

// clearedID is the id of the trigger or environment whose item has the
// keys ("PK SK"); "" for another item.
func clearedID(keys string) string {
	for _, prefix := range []string{"TRIGGER#", "ENVIRONMENT#"} {
		sk := strings.TrimSuffix(prefix, "#")
		if id, ok := strings.CutPrefix(keys, prefix); ok && strings.HasSuffix(id, " "+sk) {
			return strings.TrimSuffix(id, " "+sk)
		}
	}
	return ""
}

// number is a number attribute of an item.
func number(t *testing.T, it map[string]types.AttributeValue, name string) int {
	t.Helper()
	n, ok := it[name].(*types.AttributeValueMemberN)
	if !ok {
		t.Fatalf("%s is %v", name, it[name])
	}
	var v int
	fmt.Sscan(n.Value, &v)
	return v
}

// setItem sets attributes of an item, and moves its version on, as a
// change by another writer.
func setItem(t *testing.T, c *dynamodb.Client, name, pk, sk, set string, values map[string]types.AttributeValue) {
	t.Helper()
	values[":one"] = &types.AttributeValueMemberN{Value: "1"}
	if _, err := c.UpdateItem(context.Background(), &dynamodb.UpdateItemInput{TableName: aws.String(name),
		Key:              map[string]types.AttributeValue{"PK": &types.AttributeValueMemberS{Value: pk}, "SK": &types.AttributeValueMemberS{Value: sk}},
		UpdateExpression: aws.String("SET " + set + ", version = version + :one"), ExpressionAttributeValues: values,
	}); err != nil {
		t.Fatal(err)
	}
}

// TestRewrite: a dry run changes nothing; the rewrite clears the saved
// allocation of exactly the triggers and environments that fall back,
// moves their version on (and an environment's updatedAt) and changes
// nothing else; a second scan finds none to clear, and a second rewrite
// none to change. One changed since the scan is read again and judged
// again; one deleted since is left alone.
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
				t.Errorf("dry run: %s %s", o.ID(), o.Result)
			}
		}
		if !reflect.DeepEqual(items(t, c, name), before) {
			t.Fatal("a dry run changed the table")
		}
		// Since the scan: trg_huge fired (its version moved on), trg_large
		// now saves an allocation that runs, trg_single was deleted; the
		// shared-era environment was edited (its version moved on),
		// env_large now saves an allocation that runs, env_single was
		// deleted.
		moved, _ := tbl.GetTrigger(ctx, "trg_huge")
		if err := tbl.RecordRun(ctx, moved, trigger.Run{At: now, Status: trigger.StatusFallback, SessionID: "workspace_x"}, now.Add(24*time.Hour)); err != nil {
			t.Fatal(err)
		}
		small := map[string]types.AttributeValue{":a": &types.AttributeValueMemberS{Value: allocation.VercelSmall}}
		setItem(t, c, name, "TRIGGER#trg_large", "TRIGGER", "sandboxAllocation = :a", small)
		setItem(t, c, name, "ENVIRONMENT#env_large", "ENVIRONMENT", "sandboxAllocation = :a", small)
		setItem(t, c, name, "ENVIRONMENT#"+sharedEraEnvironment, "ENVIRONMENT", "description = :d",
			map[string]types.AttributeValue{":d": &types.AttributeValueMemberS{Value: "edited"}})
		single, _ := tbl.GetTrigger(ctx, "trg_single")
		if err := tbl.DeleteTrigger(ctx, single); err != nil {
			t.Fatal(err)
		}
		singleEnv, _ := tbl.GetEnvironment(ctx, "env_single")
		if err := tbl.WriteEnvironment(ctx, store.EnvironmentChange{Seen: singleEnv}); err != nil {
			t.Fatal(err)
		}
		before = items(t, c, name)
		started := time.Now().UTC().Truncate(time.Second)
		results := map[string]string{}
		for _, o := range Rewrite(ctx, tbl, p, r.Fallbacks, false) {
			results[o.ID()] = o.Result
			if o.Err != nil {
				t.Errorf("%s: %v", o.ID(), o.Err)
			}
		}
		want := map[string]string{}
		for _, id := range fallsBack {
			want[id] = Cleared
		}
		want["trg_large"], want["trg_single"], want["env_large"], want["env_single"] = Kept, Gone, Kept, Gone
		if !reflect.DeepEqual(results, want) {
			t.Errorf("results %v, want %v", results, want)
		}
		after := items(t, c, name)
		if len(after) != len(before) {
			t.Errorf("%d items after the rewrite, %d before", len(after), len(before))
		}
		for keys, it := range before {
			id := clearedID(keys)
			if results[id] != Cleared {
				if !reflect.DeepEqual(after[keys], it) {
					t.Errorf("%s changed", keys)
				}
				continue
			}
			cleared := after[keys]
			for _, k := range []string{"sandboxAllocation", "sandboxAllocationRequest"} {
				if _, ok := cleared[k]; ok {
					t.Errorf("%s keeps %s", keys, k)
				}
			}
			moves := map[string]bool{"sandboxAllocation": true, "sandboxAllocationRequest": true, "version": true}
			if strings.HasPrefix(id, "env_") {
				moves["updatedAt"] = true
				if at, _ := time.Parse(time.RFC3339, cleared["updatedAt"].(*types.AttributeValueMemberS).Value); at.Before(started) {
					t.Errorf("%s: updatedAt %v, before the rewrite", keys, at)
				}
			}
			for k, av := range it {
				if !moves[k] && !reflect.DeepEqual(cleared[k], av) {
					t.Errorf("%s: %s changed", keys, k)
				}
			}
			if len(cleared) != len(it)-1 {
				t.Errorf("%s: %d attributes after, %d before", keys, len(cleared), len(it))
			}
			if was, is := number(t, it, "version"), number(t, cleared, "version"); is != was+1 {
				t.Errorf("%s: version %d after %d", keys, is, was)
			}
		}
		r, err = Scan(ctx, tbl, p, 4, nil)
		if err != nil || len(r.Fallbacks) != 0 || r.Triggers.Fallback != (Fallbacks{}) || r.Environments.Fallback != (Fallbacks{}) {
			t.Errorf("after the rewrite: %+v %+v %v", r.Triggers, r.Environments, err)
		}
		if out := Rewrite(ctx, tbl, p, r.Fallbacks, false); len(out) != 0 {
			t.Errorf("a second rewrite: %+v", out)
		}
	})
}

// TestRewriteDefaultEnvironment: clearing the saved allocation of an
// owner's default environment clears it in the owner's default pointer
// too, in the same write, and the default stays; clearing another's
// leaves the pointer as it is. An environment that became the default
// after the scan is written with its pointer as well.
func TestRewriteDefaultEnvironment(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, c *dynamodb.Client, name string) {
		ctx := context.Background()
		tbl := store.New(c, name)
		// u3's default saves cloudflare-shared, another of u3's an unknown
		// name; org o3's default runs as saved, and another of o3's saves
		// cloudflare-single.
		for _, s := range []struct {
			id, user, org, saved string
			isDefault            bool
		}{
			{"env_default", "u3", "", allocation.CloudflareShared, true},
			{"env_other", "u3", "", "vercel-huge", false},
			{"env_org_default", "u3", "o3", allocation.VercelSmall, true},
			{"env_org_single", "u3", "o3", allocation.CloudflareSingle, false},
		} {
			e := newEnvironment(s.id, s.user, s.org)
			e.SavedAllocation = s.saved
			if err := tbl.WriteEnvironment(ctx, store.EnvironmentChange{Next: e, IsDefault: s.isDefault, Limit: 100}); err != nil {
				t.Fatal(err)
			}
		}
		p := seedPolicy()
		r, err := Scan(ctx, tbl, p, 2, nil)
		if err != nil {
			t.Fatal(err)
		}
		if ids := fallbackIDs(r.Fallbacks); !reflect.DeepEqual(ids, []string{"env_default", "env_org_single", "env_other"}) || r.Environments.Total != 4 {
			t.Fatalf("fallbacks %v, %+v", ids, r.Environments)
		}
		// Since the scan, env_org_single became o3's default.
		orgSingle, _ := tbl.GetEnvironment(ctx, "env_org_single")
		if err := tbl.WriteEnvironment(ctx, store.EnvironmentChange{Seen: orgSingle, Next: orgSingle, IsDefault: true}); err != nil {
			t.Fatal(err)
		}
		for _, o := range Rewrite(ctx, tbl, p, r.Fallbacks, false) {
			if o.Result != Cleared || o.Err != nil {
				t.Errorf("%s: %s %v", o.ID(), o.Result, o.Err)
			}
		}
		for _, w := range []struct{ user, org, id string }{{"u3", "", "env_default"}, {"u3", "o3", "env_org_single"}} {
			def, err := tbl.DefaultEnvironment(ctx, w.user, w.org)
			if err != nil || def != w.id {
				t.Fatalf("the default of %s/%s is %q (%v), want %s", w.user, w.org, def, err, w.id)
			}
			e, _ := tbl.GetEnvironment(ctx, w.id)
			copied := pointer(t, c, name, w.user, w.org)
			if e.SavedAllocation != "" || e.Version != 2 || copied["sandboxAllocation"] != nil || number(t, copied, "version") != 2 ||
				!reflect.DeepEqual(copied["updatedAt"], &types.AttributeValueMemberS{Value: e.UpdatedAt.Format(time.RFC3339)}) {
				t.Errorf("%s: %+v, its pointer %v", w.id, e, copied)
			}
		}
		if e, _ := tbl.GetEnvironment(ctx, "env_other"); e.SavedAllocation != "" || e.Version != 2 {
			t.Errorf("env_other: %+v", e)
		}
		// The scan after the rewrite finds nothing to clear: the pointers,
		// copies of the defaults, are no environments.
		if r, err := Scan(ctx, tbl, p, 2, nil); err != nil || len(r.Fallbacks) != 0 || r.Environments.Total != 4 {
			t.Errorf("after the rewrite: %+v %v", r, err)
		}
	})
}

// pointer is the default pointer item of user in org ("" for none).
func pointer(t *testing.T, c *dynamodb.Client, name, user, org string) map[string]types.AttributeValue {
	t.Helper()
	owner := "u#" + user
	if org != "" {
		owner = "o#" + org
	}
	it, ok := items(t, c, name)["DEFAULTENV#"+owner+" DEFAULTENV"]
	if !ok {
		t.Fatalf("no default pointer for %s", owner)
	}
	return it
}

// TestRewriteChanging: a trigger or an environment whose write is refused
// at every try (commit.Tries), as when changes keep landing first, is read
// again after each, left as it was and reported changing, to be run
// again; the next rewrite clears it.
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
	p := faultproxy.New(b.Endpoint(t))
	t.Cleanup(p.Close)
	tbl := store.New(localdb.Client(p.URL()), name)
	for _, w := range []struct {
		kind, write string
		refused     faultproxy.Fault
		// reads is how many reads the tries make: a trigger's, again
		// after each refusal; an environment's, again after each
		// refusal, and its owner's default pointer before each try.
		reads int
	}{
		{"trigger", "UpdateItem", faultproxy.Status(http.StatusBadRequest,
			"com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException", "The conditional request failed"), commit.Tries - 1},
		{"environment", "TransactWriteItems", faultproxy.DynamoConflict, 2*commit.Tries - 1},
	} {
		var one []Fallback
		for _, fb := range r.Fallbacks {
			if fb.Kind() == w.kind {
				one = append(one, fb)
				break
			}
		}
		before := items(t, c, name)
		p.Inject(w.write, commit.Tries, w.refused)
		var out []Outcome
		requests := p.Requests(func() { out = Rewrite(ctx, tbl, policy, one, false) })
		if len(out) != 1 || out[0].Result != Changing || out[0].Err != nil {
			t.Fatalf("%s: %+v", w.kind, out)
		}
		if !reflect.DeepEqual(items(t, c, name), before) {
			t.Errorf("a %s that kept changing was written", w.kind)
		}
		if requests[w.write] != commit.Tries || requests["GetItem"] != w.reads {
			t.Errorf("%s: %v, want %d writes and %d reads", w.kind, requests, commit.Tries, w.reads)
		}
		if out := Rewrite(ctx, tbl, policy, one, false); len(out) != 1 || out[0].Result != Cleared {
			t.Errorf("%s, run again: %+v", w.kind, out)
		}
	}
}

func forEachBackend(t *testing.T, f func(t *testing.T, c *dynamodb.Client, name string)) {
	dynamotest.ForEach(t, dynamotest.Backends(t), func(t *testing.T, c *dynamodb.Client, name string) {
		t.Parallel()
		f(t, c, name)
	})
}
