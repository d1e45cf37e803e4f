package store

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// TestDueTriggersShares: a share of the shards finds the due triggers of
// those shards only; shares that divide the shards between them find,
// together, what every shard finds, each trigger once.
func TestDueTriggersShares(t *testing.T) {
	forEachBackend(t, func(t *testing.T, tbl *Table, c *dynamodb.Client, name string) {
		ctx := context.Background()
		shards := map[string]string{}
		for i := 0; len(shards) < 48; i++ {
			tr := newTrigger(fmt.Sprintf("trg_%d", i), "u1", "", now)
			tr.NextRunAt = now
			if err := tbl.CreateTrigger(ctx, tr, 100); err != nil {
				t.Fatal(err)
			}
			shards[tr.ID] = shardOf(dueShardPrefix, tr.ID)
		}
		all, err := tbl.DueTriggers(ctx, now)
		if err != nil || len(all) != len(shards) {
			t.Fatalf("every shard: %d due of %d, %v", len(all), len(shards), err)
		}
		seen := map[string]int{}
		for k := range 3 {
			var share []int
			for s := k; s < DueShards; s += 3 {
				share = append(share, s)
			}
			due, err := tbl.DueTriggers(ctx, now, share...)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range due {
				seen[d.ID]++
				if !slices.ContainsFunc(share, func(s int) bool { return shardKey(dueShardPrefix, s) == shards[d.ID] }) {
					t.Errorf("share %v finds %s of %s", share, d.ID, shards[d.ID])
				}
			}
		}
		if len(seen) != len(shards) || slices.ContainsFunc(slices.Collect(maps.Values(seen)), func(n int) bool { return n != 1 }) {
			t.Errorf("the shares found %v, want each of %d once", seen, len(shards))
		}
	})
}
