package store

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/cloud-agent/control-plane/shared/session"
)

// TestLaunchItems: a new session started in an environment keeps, in its
// one transaction, the environment's reference in its metadata, its
// prompt (PROMPT) and the environment as it was (ENV_SNAPSHOT: plain
// values, secret ones as their ciphertext, setup commands), both
// expiring 30 days after the start; a session read back carries the
// reference and no launch. With a ledger row too.
func TestLaunchItems(t *testing.T) {
	forEachBackend(t, func(t *testing.T, tbl *Table, c *dynamodb.Client, name string) {
		ctx := context.Background()
		env := newEnvironment("env_a", "Node", "u1", "", now)
		prompt := "Fix the build."
		for i, write := range []func(rec *session.Record) error{
			func(rec *session.Record) error { return tbl.PutSession(ctx, rec, nil) },
			func(rec *session.Record) error {
				_, err := tbl.CreateSession(ctx, rec, *newRow("k", rec.SessionID, now.Add(time.Hour)), now, nil)
				return err
			},
		} {
			rec := newRecord([]string{"workspace_put", "workspace_keyed"}[i])
			rec.Environment = &session.EnvironmentRef{ID: env.ID, Name: env.Name, Version: env.Version}
			rec.Launch = &session.Launch{Prompt: &prompt, Environment: env}
			if err := write(rec); err != nil {
				t.Fatal(err)
			}
			got, err := tbl.GetSession(ctx, rec.SessionID)
			if err != nil || got.Environment == nil || *got.Environment != *rec.Environment || got.Launch != nil {
				t.Fatalf("read back %+v: %v", got, err)
			}
			out, err := c.Query(ctx, &dynamodb.QueryInput{TableName: aws.String(name), ConsistentRead: aws.Bool(true),
				KeyConditionExpression: aws.String("PK = :pk"), ExpressionAttributeValues: Item{":pk": S("SESSION#" + rec.SessionID)}})
			if err != nil || len(out.Items) != 4 { // METADATA, PROMPT, ENV_SNAPSHOT, LIVE
				t.Fatalf("%d items: %v", len(out.Items), err)
			}
			expires := N(now.Add(30 * 24 * time.Hour).Unix())
			for _, item := range out.Items {
				switch item["SK"].(*types.AttributeValueMemberS).Value {
				case "PROMPT":
					if item["initialTurn"].(*types.AttributeValueMemberM).Value["prompt"].(*types.AttributeValueMemberS).Value != prompt || !same(item["expiresAt"], expires) {
						t.Errorf("PROMPT %v", item)
					}
				case "ENV_SNAPSHOT":
					vars := item["variables"].(*types.AttributeValueMemberM).Value
					secret := vars["TOKEN"].(*types.AttributeValueMemberM).Value
					if string(secret["sealed"].(*types.AttributeValueMemberB).Value) != "sealed:env_a" || secret["value"] != nil ||
						!same(item["version"], N(1)) || !same(item["expiresAt"], expires) || len(item["setupCommands"].(*types.AttributeValueMemberL).Value) != 1 {
						t.Errorf("ENV_SNAPSHOT %v", item)
					}
				case "LIVE":
					shard := item["dueShard"].(*types.AttributeValueMemberS).Value
					if !strings.HasPrefix(shard, "LIVE#") || item["nextRunAt"].(*types.AttributeValueMemberS).Value != formatTime(rec.CreatedAt) {
						t.Errorf("LIVE %v", item)
					}
				}
			}
		}
	})
}

// same reports whether two number attributes are equal.
func same(a, b types.AttributeValue) bool {
	x, ok := a.(*types.AttributeValueMemberN)
	return ok && x.Value == b.(*types.AttributeValueMemberN).Value
}
