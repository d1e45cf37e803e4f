package firing

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/cloud-agent/control-plane/shared/store"
)

// share reads the shards of the due index that a Scheduled Event names in
// its detail, {"shards": [n, ...]}: each a whole number from 0 to
// store.DueShards-1, none repeated, at least one. A detail that is absent,
// null or an object without shards ({}, EventBridge's own Scheduled
// Event) names every shard; other members are not the firing's and are
// ignored. A detail that is not an object, or shards that break the rule,
// is an error: the schedule is misconfigured, and the invocation fires
// nothing.
func share(detail json.RawMessage) ([]int, error) {
	all := make([]int, store.DueShards)
	for i := range all {
		all[i] = i
	}
	if d := bytes.TrimSpace(detail); len(d) == 0 || string(d) == "null" {
		return all, nil
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(detail, &members); err != nil {
		return nil, fmt.Errorf("the event's detail is not a JSON object: %w", err)
	}
	raw, ok := members["shards"]
	if !ok {
		return all, nil
	}
	var shards []int
	if err := json.Unmarshal(raw, &shards); err != nil || len(shards) == 0 {
		return nil, fmt.Errorf("the event's detail.shards is not a list of at least one whole number: %s", raw)
	}
	for i, s := range shards {
		if s < 0 || s >= store.DueShards || slices.Contains(shards[:i], s) {
			return nil, fmt.Errorf("the event's detail.shards %s names a shard out of 0 to %d, or one twice", raw, store.DueShards-1)
		}
	}
	return shards, nil
}
