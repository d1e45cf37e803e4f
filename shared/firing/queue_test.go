package firing

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/cloud-agent/control-plane/shared/store"
	"github.com/cloud-agent/control-plane/shared/trigger"
)

// TestQueueOrder: the workers take what the shards' queries have found
// longest due first, whatever the order in which the shards answered, an
// entry that did not decode before any; once the reserve has begun they
// take nothing, and what is left is the rest, with the queries' faults;
// once the queries ended and all was taken, a worker stops.
func TestQueueOrder(t *testing.T) {
	at := func(m int) store.Due {
		id := time.Date(2026, 11, 30, 10, m, 0, 0, time.UTC)
		return store.Due{ID: id.Format("15:04"), Trigger: &trigger.Trigger{ID: id.Format("15:04"), NextRunAt: id}}
	}
	q := newQueue()
	q.add([]store.Due{at(5), at(7)})
	q.add([]store.Due{at(1), {ID: "undecoded"}, at(6)})
	var took []string
	for range 3 {
		d, ok := q.take(time.Time{})
		if !ok {
			t.Fatal("nothing to take")
		}
		took = append(took, d.ID)
	}
	if want := []string{"undecoded", "10:01", "10:05"}; !slices.Equal(took, want) {
		t.Errorf("took %v, want %v", took, want)
	}
	if _, ok := q.take(time.Now().Add(-time.Second)); ok {
		t.Error("a trigger taken once the reserve had begun")
	}
	fault := errors.New("a shard's query failed")
	q.close(fault)
	rest, err := q.rest()
	if len(rest) != 2 || rest[0].ID != "10:06" || rest[1].ID != "10:07" || !errors.Is(err, fault) {
		t.Errorf("rest %v, %v", rest, err)
	}
	q.due = nil
	if _, ok := q.take(time.Time{}); ok {
		t.Error("a trigger taken from an empty queue whose queries ended")
	}
}
