package store

import (
	"context"
	"errors"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/cloud-agent/control-plane/shared/environment"
	"github.com/cloud-agent/control-plane/shared/invocation"
)

func newEnvironment(id, name, user, org string, created time.Time) *environment.Environment {
	return &environment.Environment{
		ID: id, OwnerUserID: user, OrgID: org, Name: name,
		Variables:     map[string]environment.Variable{"NODE_ENV": {Value: "test"}, "TOKEN": {Secret: true, Sealed: []byte("sealed:" + id)}},
		SetupCommands: []string{"make"}, CreatedAt: created, UpdatedAt: created.Truncate(time.Second), Version: 1,
	}
}

// renamed is e with another name, one version on.
func renamed(e *environment.Environment, name string) *environment.Environment {
	next := *e
	next.Name, next.Version, next.Variables = name, e.Version+1, maps.Clone(e.Variables)
	return &next
}

// TestEnvironmentWrites: a create claims its name among its owner's
// without regard to case and counts against the owner's limit; a rename
// moves the claim; the default pointer follows the default and its
// content; a write on what moved since it was read, a delete of one in
// use or gone, each is refused and writes nothing.
func TestEnvironmentWrites(t *testing.T) {
	forEachBackend(t, func(t *testing.T, tbl *Table, c *dynamodb.Client, name string) {
		ctx := context.Background()
		write := func(ch EnvironmentChange, want error) {
			t.Helper()
			before := count(t, c, name)
			err := tbl.WriteEnvironment(ctx, ch)
			if !errors.Is(err, want) {
				t.Fatalf("wrote with %v, want %v", err, want)
			}
			if want != nil && count(t, c, name) != before {
				t.Fatalf("a refused write changed the table")
			}
		}
		isDefault := func(user, org, want string) {
			t.Helper()
			if id, err := tbl.DefaultEnvironment(ctx, user, org); err != nil || id != want {
				t.Fatalf("the default of %s/%s is %q (%v), want %q", user, org, id, err, want)
			}
		}
		a := newEnvironment("env_a", "Node", "u1", "", now)
		write(EnvironmentChange{Next: a, IsDefault: true, Limit: 2}, nil)
		isDefault("u1", "", "env_a")
		write(EnvironmentChange{Next: newEnvironment("env_x", "nODE", "u1", "", now), Limit: 2}, ErrEnvironmentNameTaken)
		// Another owner may take the name: the org's, another user's.
		write(EnvironmentChange{Next: newEnvironment("env_o", "Node", "u1", "o1", now), Limit: 2}, nil)
		write(EnvironmentChange{Next: newEnvironment("env_u", "node", "u2", "", now), Limit: 2}, nil)
		isDefault("u1", "o1", "")
		b := newEnvironment("env_b", "Go", "u1", "", now.Add(time.Second))
		write(EnvironmentChange{Next: b, Limit: 2}, nil)
		write(EnvironmentChange{Next: newEnvironment("env_c", "Rust", "u1", "", now), Limit: 2}, ErrEnvironmentLimit)

		// The default's content changes: the pointer's copy follows.
		a2 := renamed(a, "NODE")
		write(EnvironmentChange{Seen: a, Next: a2, WasDefault: true, IsDefault: true}, nil)
		pointer, err := tbl.get(ctx, defaultKey("u1", ""))
		if err != nil {
			t.Fatal(err)
		}
		if got, err := decodeEnvironment(pointer); err != nil || got.Name != "NODE" || got.Version != 2 {
			t.Fatalf("the pointer holds %+v (%v)", got, err)
		}
		write(EnvironmentChange{Seen: a, Next: renamed(a, "Deno"), WasDefault: true, IsDefault: true}, ErrEnvironmentMoved)
		write(EnvironmentChange{Seen: b, Next: renamed(b, "node"), Limit: 2}, ErrEnvironmentNameTaken)
		// b was read as no default; it became one since: its change is
		// judged again, never left with a stale copy.
		write(EnvironmentChange{Seen: b, IsDefault: true, Next: b}, nil)
		isDefault("u1", "", "env_b")
		write(EnvironmentChange{Seen: b, Next: renamed(b, "Golang")}, ErrEnvironmentMoved)
		write(EnvironmentChange{Seen: a2, Next: renamed(a2, "Deno"), WasDefault: true, IsDefault: true}, ErrEnvironmentMoved)
		// The rename frees the old name.
		write(EnvironmentChange{Seen: b, Next: renamed(b, "Golang"), WasDefault: true, IsDefault: true}, nil)
		write(EnvironmentChange{Next: newEnvironment("env_d", "go", "u1", "", now), Limit: 3}, nil)

		// Delete: one that triggers name is in use; the default goes
		// with its pointer; one gone is not found.
		used, err := tbl.GetEnvironment(ctx, "env_d")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: &name, Key: environmentKey("env_d"),
			UpdateExpression: ptr("SET triggers = :one"), ExpressionAttributeValues: Item{":one": N(1)}}); err != nil {
			t.Fatal(err)
		}
		write(EnvironmentChange{Seen: used}, ErrEnvironmentInUse)
		gone, _ := tbl.GetEnvironment(ctx, "env_b")
		write(EnvironmentChange{Seen: gone, WasDefault: true}, nil)
		isDefault("u1", "", "")
		write(EnvironmentChange{Seen: gone}, ErrNotFound)
		if _, err := tbl.GetEnvironment(ctx, "env_b"); !errors.Is(err, ErrNotFound) {
			t.Errorf("read a deleted environment: %v", err)
		}
		// Its name and its place under the limit are free again.
		write(EnvironmentChange{Next: newEnvironment("env_e", "golang", "u1", "", now), Limit: 3}, nil)
	})
}

func ptr(s string) *string { return &s }

// TestListEnvironments: an owner's environments, newest first, a page at
// a time, and no one else's: the user's own apart from the org's; the
// pointer's copy is never listed.
func TestListEnvironments(t *testing.T) {
	forEachBackend(t, func(t *testing.T, tbl *Table, c *dynamodb.Client, name string) {
		ctx := context.Background()
		for i, id := range []string{"env_1", "env_2", "env_3"} {
			e := newEnvironment(id, id, "u1", "", now.Add(time.Duration(i)*time.Millisecond))
			if err := tbl.WriteEnvironment(ctx, EnvironmentChange{Next: e, IsDefault: i == 1, Limit: 10}); err != nil {
				t.Fatal(err)
			}
		}
		if err := tbl.WriteEnvironment(ctx, EnvironmentChange{Next: newEnvironment("env_org", "o", "u1", "o1", now), Limit: 10}); err != nil {
			t.Fatal(err)
		}
		var got []string
		var after *Position
		for {
			page, more, err := tbl.ListEnvironments(ctx, "u1", "", after, 2)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range page {
				got = append(got, e.ID)
			}
			if !more {
				break
			}
			last := page[len(page)-1]
			after = &Position{ID: last.ID, CreatedAt: last.CreatedAt}
		}
		if want := []string{"env_3", "env_2", "env_1"}; !slices.Equal(got, want) {
			t.Errorf("listed %v, want %v", got, want)
		}
		org, _, err := tbl.ListEnvironments(ctx, "u9", "o1", nil, 10)
		if err != nil || len(org) != 1 || org[0].ID != "env_org" {
			t.Errorf("the org's: %v %v", org, err)
		}
	})
}

// TestReadEnvironments: one strongly consistent BatchGetItem reads the
// named environments and the owners' default pointers of many starts;
// what is missing is not found.
func TestReadEnvironments(t *testing.T) {
	forEachBackend(t, func(t *testing.T, tbl *Table, c *dynamodb.Client, name string) {
		ctx := context.Background()
		for _, ch := range []EnvironmentChange{
			{Next: newEnvironment("env_u", "mine", "u1", "", now), IsDefault: true, Limit: 10},
			{Next: newEnvironment("env_o", "ours", "u2", "o1", now), IsDefault: true, Limit: 10},
			{Next: newEnvironment("env_n", "named", "u1", "", now), Limit: 10},
		} {
			if err := tbl.WriteEnvironment(ctx, ch); err != nil {
				t.Fatal(err)
			}
		}
		rctx, record := invocation.With(ctx)
		found, err := New(dynamodb.New(c.Options(), Counting), name).ReadEnvironments(rctx, []environment.Source{
			{UserID: "u1", OrgID: "o1"}, {UserID: "u3", Named: "env_n"}, {UserID: "u1", Named: "env_gone"}, {UserID: "u4", Delivery: true},
		})
		if err != nil || record.Requests() != 1 {
			t.Fatalf("%v, %d requests", err, record.Requests())
		}
		if len(found.ByID) != 1 || found.ByID["env_n"] == nil || len(found.Defaults) != 2 ||
			found.Defaults[environment.Owner{UserID: "u1"}].ID != "env_u" || found.Defaults[environment.Owner{OrgID: "o1"}].ID != "env_o" {
			t.Errorf("found %+v", found)
		}
		if e, err := found.Resolve(environment.Source{UserID: "u3", Named: "env_n"}); !errors.Is(err, environment.ErrNotFound) {
			t.Errorf("another user's named one: %v %v", e, err)
		}
	})
}

// TestImportedWithoutVersion: an environment an importer wrote without a
// version is changed as read (its version absent), and then has one.
func TestImportedWithoutVersion(t *testing.T) {
	onEmbedded(t, func(t *testing.T, tbl *Table, c *dynamodb.Client, name string) {
		ctx := context.Background()
		if err := tbl.WriteEnvironment(ctx, EnvironmentChange{Next: newEnvironment("env_i", "Imported", "u1", "", now), Limit: 10}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: &name, Key: environmentKey("env_i"), UpdateExpression: ptr("REMOVE version")}); err != nil {
			t.Fatal(err)
		}
		seen, err := tbl.GetEnvironment(ctx, "env_i")
		if err != nil || seen.Version != 0 {
			t.Fatalf("%+v %v", seen, err)
		}
		next := renamed(seen, "Imported, renamed")
		if err := tbl.WriteEnvironment(ctx, EnvironmentChange{Seen: seen, Next: next}); err != nil {
			t.Fatal(err)
		}
		if got, _ := tbl.GetEnvironment(ctx, "env_i"); got.Version != 1 || got.Name != "Imported, renamed" {
			t.Errorf("%+v", got)
		}
	})
}
