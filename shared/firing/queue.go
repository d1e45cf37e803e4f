package firing

import (
	"sync"
	"time"

	"github.com/cloud-agent/control-plane/shared/store"
)

// queue holds the due triggers the shards' queries have found and no
// worker has taken yet, longest due first.
type queue struct {
	mu    sync.Mutex
	ready *sync.Cond // a trigger was added, or the queries ended
	due   []store.Due
	ended bool
	err   error // the queries' faults, once they ended
}

func newQueue() *queue {
	q := &queue{}
	q.ready = sync.NewCond(&q.mu)
	return q
}

// add adds a shard's due triggers.
func (q *queue) add(found []store.Due) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.due = append(q.due, found...)
	store.SortDue(q.due)
	q.ready.Broadcast()
}

// close says that the queries have ended, with their faults.
func (q *queue) close(err error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.ended, q.err = true, err
	q.ready.Broadcast()
}

// take waits for a due trigger and takes the longest due; false once the
// queries have ended and every trigger was taken, or once stop (zero:
// never) has begun.
func (q *queue) take(stop time.Time) (store.Due, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.due) == 0 && !q.ended {
		q.ready.Wait()
	}
	if len(q.due) == 0 || !stop.IsZero() && !time.Now().Before(stop) {
		return store.Due{}, false
	}
	d := q.due[0]
	q.due = q.due[1:]
	return d, true
}

// rest waits for the queries to end and returns the triggers no worker
// took, and the queries' faults.
func (q *queue) rest() ([]store.Due, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for !q.ended {
		q.ready.Wait()
	}
	return q.due, q.err
}
