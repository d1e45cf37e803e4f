package firing

import (
	"bytes"
	"encoding/json/jsontext"
	"encoding/json/v2"
	"fmt"
	"slices"

	"github.com/cloud-agent/control-plane/shared/store"
)

// share reads the shards of the due index that a Scheduled Event names in
// its detail, {"shards": [n, ...]}: each a whole number from 0 to
// store.DueShards-1, none repeated, at least one. A detail that is absent,
// null or {} (EventBridge's own Scheduled Event) names every shard. A
// detail is read as strictly as every other body here: anything but one
// object whose only member is shards (a repeated, unknown or differently
// spelled member included), or shards that break the rule, is an error:
// the schedule is misconfigured, and the invocation fires nothing.
func share(detail []byte) ([]int, error) {
	all := make([]int, store.DueShards)
	for i := range all {
		all[i] = i
	}
	if len(bytes.TrimSpace(detail)) == 0 {
		return all, nil
	}
	var members struct { // null leaves it empty
		Shards jsontext.Value `json:"shards"`
	}
	if err := json.Unmarshal(detail, &members, json.RejectUnknownMembers(true)); err != nil {
		return nil, fmt.Errorf("the event's detail is not a JSON object whose only member is shards: %w", err)
	}
	raw := members.Shards
	if len(raw) == 0 {
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
