// Package bus puts the sessions' events on their EventBridge bus
// (contract v7), the only package that calls EventBridge: in calls of at
// most 10 entries and 256 KB, as PutEvents takes them, checking every
// entry of each answer (a call can succeed with entries refused) and
// putting again only the refused ones.
package bus

import (
	"context"
	"errors"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
)

// PutEvents' limits: entries a call, and a call's bytes as EventBridge
// counts an entry's (its source, detail type and detail; no time or
// resources are sent).
const (
	maxEntries = 10
	maxBytes   = 256 * 1024
)

// Tries is how many times an entry is put before it counts as refused;
// each try after the first waits backoff × 2^(try-2).
const (
	Tries   = 4
	backoff = 100 * time.Millisecond
)

// Entry is an event to put.
type Entry struct {
	Source, DetailType string
	Detail             []byte // a JSON object
}

func (e Entry) size() int { return len(e.Source) + len(e.DetailType) + len(e.Detail) }

// Bus is the bus named name on client, built once per execution
// environment. Safe for concurrent use.
type Bus struct {
	client *eventbridge.Client
	name   string
}

// New returns the bus name (a name or an ARN) on client.
func New(client *eventbridge.Client, name string) *Bus { return &Bus{client: client, name: name} }

// Put puts entries, each refused one again up to Tries times, and returns
// the indexes of those still refused, in order, and the fault of the last
// call that failed whole (after the SDK's own retries; its entries are
// refused), if any. It stops trying when ctx ends.
func (b *Bus) Put(ctx context.Context, entries []Entry) (refused []int, fault error) {
	pending := make([]int, len(entries))
	for i := range pending {
		pending[i] = i
	}
	for try := 1; try <= Tries && len(pending) > 0; try++ {
		if try > 1 && !sleep(ctx, backoff<<(try-2)) {
			break
		}
		var again []int
		for _, call := range calls(entries, pending) {
			r, err := b.put(ctx, entries, call)
			again = append(again, r...)
			if err != nil {
				fault = err
			}
		}
		pending = again
	}
	return pending, fault
}

// calls splits the pending entries into PutEvents calls, in order.
func calls(entries []Entry, pending []int) [][]int {
	var out [][]int
	var call []int
	bytes := 0
	for _, i := range pending {
		size := entries[i].size()
		if len(call) == maxEntries || len(call) > 0 && bytes+size > maxBytes {
			out, call, bytes = append(out, call), nil, 0
		}
		call, bytes = append(call, i), bytes+size
	}
	if len(call) > 0 {
		out = append(out, call)
	}
	return out
}

// put makes one call of the entries at call, and returns those refused,
// and the call's fault when it failed whole.
func (b *Bus) put(ctx context.Context, entries []Entry, call []int) ([]int, error) {
	in := make([]types.PutEventsRequestEntry, len(call))
	for k, i := range call {
		e := entries[i]
		in[k] = types.PutEventsRequestEntry{
			EventBusName: aws.String(b.name), Source: aws.String(e.Source),
			DetailType: aws.String(e.DetailType), Detail: aws.String(string(e.Detail)),
		}
	}
	out, err := b.client.PutEvents(ctx, &eventbridge.PutEventsInput{Entries: in})
	switch {
	case err != nil:
		return call, err
	case len(out.Entries) != len(call):
		return call, errors.New("PutEvents answered another number of entries than it was given")
	}
	var refused []int
	for k, res := range out.Entries {
		if res.ErrorCode != nil || res.EventId == nil {
			refused = append(refused, call[k])
		}
	}
	return refused, nil
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
