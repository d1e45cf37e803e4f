package store

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/cloud-agent/control-plane/shared/allocation"
	"github.com/cloud-agent/control-plane/shared/environment"
)

func sampleEnvironment() *environment.Environment {
	at := time.Date(2026, 12, 6, 9, 0, 0, 123456789, time.UTC)
	return &environment.Environment{
		ID: "env_a", OwnerUserID: "u1", OrgID: "o1", Name: "Node", Description: "CI-like",
		Variables: map[string]environment.Variable{
			"NODE_ENV":  {Value: "production"},
			"EMPTY":     {},
			"NPM_TOKEN": {Secret: true, Sealed: []byte{1, 2, 3}},
		},
		SetupCommands: []string{"npm ci", "npm run build"},
		SavedRequest:  &allocation.Request{Provider: allocation.RequestProvider{ID: "vercel", Account: "byoc"}, InstanceType: "small"},
		CreatedAt:     at, UpdatedAt: at.Add(time.Hour).Truncate(time.Second), Version: 2, Triggers: 3,
	}
}

// TestEnvironmentItem: an environment and its owner's default pointer
// decode as they were encoded, neither in a trigger's index, the pointer
// in no index; a secret is kept as its ciphertext alone,
// and one not yet sealed is never encoded.
func TestEnvironmentItem(t *testing.T) {
	e := sampleEnvironment()
	item, err := encodeEnvironment(e)
	if err != nil {
		t.Fatal(err)
	}
	secret := item["variables"].(*types.AttributeValueMemberM).Value["NPM_TOKEN"].(*types.AttributeValueMemberM).Value
	if _, clear := secret["value"]; clear {
		t.Error("a secret variable has a value attribute")
	}
	got, err := decodeEnvironment(item)
	if err != nil || !reflect.DeepEqual(got, e) {
		t.Fatalf("%+v %v, want %+v", got, err, e)
	}
	pointer, err := encodeDefault(e)
	if err != nil || pointer["PK"].(*types.AttributeValueMemberS).Value != "DEFAULTENV#o#o1" || pointer["SK"].(*types.AttributeValueMemberS).Value != "DEFAULTENV" {
		t.Fatalf("%v %v", pointer["PK"], err)
	}
	// The copy is out of the listing (its creation to the second) and
	// counts no triggers.
	copied := *e
	copied.CreatedAt, copied.Triggers = e.CreatedAt.Truncate(time.Second), 0
	if got, err := decodeEnvironment(pointer); err != nil || !reflect.DeepEqual(got, &copied) {
		t.Errorf("the pointer's copy: %+v %v", got, err)
	}
	for _, a := range []string{"environmentOwner", "environmentListedAt", "listedAt", "triggers"} {
		if _, ok := pointer[a]; ok {
			t.Errorf("the pointer holds %s", a)
		}
	}
	if _, ok := item["listedAt"]; ok {
		t.Error("an environment is in the triggers' index")
	}
	own := *e
	own.OrgID = ""
	if k := defaultKey(own.OwnerUserID, own.OrgID)["PK"].(*types.AttributeValueMemberS).Value; k != "DEFAULTENV#u#u1" {
		t.Errorf("a user's pointer %s", k)
	}
	unsealed := sampleEnvironment()
	unsealed.Variables["NPM_TOKEN"] = environment.Variable{Value: "npm_clear", Secret: true}
	if _, err := encodeEnvironment(unsealed); !errors.Is(err, errUnsealed) {
		t.Errorf("an unsealed secret encoded: %v", err)
	}
}

// TestEnvironmentItemStrict: what does not decode, by rule.
func TestEnvironmentItemStrict(t *testing.T) {
	variable := func(m Item) Item {
		return Item{"variables": M(Item{"X": M(m)})}
	}
	rows := []struct {
		rule   string
		change Item // attributes put over a valid item; nil values delete
	}{
		{"a secret in clear", variable(Item{"secret": Bool(true), "value": S("clear"), "sealed": &types.AttributeValueMemberB{Value: []byte{1}}})},
		{"a secret without its ciphertext", variable(Item{"secret": Bool(true)})},
		{"a variable that is not a map", Item{"variables": M(Item{"X": S("x")})}},
		{"a plain value of the wrong type", variable(Item{"secret": Bool(false), "value": N(1)})},
		{"no name", Item{"name": nil}},
		{"no owner", Item{"ownerUserId": nil}},
		{"an id that differs from the key", Item{"environmentId": S("env_b")}},
		{"another key", Item{"PK": S("TRIGGER#env_a"), "SK": S("TRIGGER")}},
		{"setup commands that are not a list", Item{"setupCommands": S("npm ci")}},
		{"a version that is not a number", Item{"version": S("2")}},
	}
	for _, r := range rows {
		t.Run(r.rule, func(t *testing.T) {
			item, _ := encodeEnvironment(sampleEnvironment())
			for k, v := range r.change {
				if v == nil {
					delete(item, k)
				} else {
					item[k] = v
				}
			}
			if got, err := decodeEnvironment(item); err == nil {
				t.Errorf("decoded: %+v", got)
			}
		})
	}
}

// TestEnvironmentFixtures: shared-era environments decode and answer
// their saved allocation as stored: cloudflare-shared by name, or a
// request map as it is.
func TestEnvironmentFixtures(t *testing.T) {
	e, err := decodeEnvironment(fixture(t, "", "environment-shared-era"))
	if err != nil || e.SavedAllocation != allocation.CloudflareShared || !e.Variables["NPM_TOKEN"].Secret ||
		string(e.Variables["NPM_TOKEN"].Sealed) != "\x01\x02\x03\x04\x05\x06\x07\x08" || e.Variables["NODE_ENV"].Value != "production" {
		t.Errorf("shared-era: %+v %v", e, err)
	}
	d, err := decodeEnvironment(fixture(t, "", "environment-request-shared"))
	if err != nil || d.SavedRequest == nil || d.SavedRequest.Provider.ID != allocation.Cloudflare || d.Triggers != 2 || d.Version != 3 {
		t.Errorf("request-shared: %+v %v", d, err)
	}
}

// FuzzDecodeEnvironment: no stored item makes the decoder panic, and
// whatever decodes keeps no secret in clear.
func FuzzDecodeEnvironment(f *testing.F) {
	f.Add("env_a", "u1", "NPM_TOKEN", true, []byte{1}, "")
	f.Add("env_a", "u1", "NODE_ENV", false, []byte(nil), "production")
	f.Fuzz(func(t *testing.T, id, owner, name string, secret bool, sealed []byte, value string) {
		v := Item{"secret": Bool(secret)}
		if sealed != nil {
			v["sealed"] = &types.AttributeValueMemberB{Value: sealed}
		}
		if value != "" {
			v["value"] = S(value)
		}
		item := Item{"PK": S(environmentPrefix + id), "SK": S(environmentSortKey), "environmentId": S(id),
			"ownerUserId": S(owner), "name": S("n"), "variables": M(Item{name: M(v)})}
		e, err := decodeEnvironment(item)
		if err != nil {
			return
		}
		for _, got := range e.Variables {
			if got.Secret && (got.Value != "" || got.Sealed == nil) {
				t.Fatalf("a secret in clear, or without its ciphertext: %+v", got)
			}
		}
	})
}
