package eventbus

import (
	"context"
	"encoding/json/jsontext"
	"encoding/json/v2"
	"io"
	"log/slog"
	"slices"
	"sync"
	"time"
)

// The region and account of the stand-in: the functions' AWS_REGION
// (lambdarun.Environment) and the local stack's account, as the KMS
// stand-in's key ARNs have them.
const (
	region  = "us-east-1"
	account = "000000000000"
)

// keep is how many events a bus keeps: past it, the oldest is dropped.
const keep = 1000

// Event is an event put on the bus, as EventBridge hands one to a target.
type Event struct {
	Version    string         `json:"version"`
	ID         string         `json:"id"` // the EventId PutEvents answered
	DetailType string         `json:"detail-type"`
	Source     string         `json:"source"`
	Account    string         `json:"account"`
	Time       string         `json:"time"` // RFC 3339, UTC, whole seconds
	Region     string         `json:"region"`
	Resources  []string       `json:"resources"`
	Detail     jsontext.Value `json:"detail"` // always an object
}

// Faults are the entries still to fail, counted in entries, not calls,
// among those that would otherwise be put: the next RefuseNext entries
// fail with InternalFailure, then the next ThrottleNext with
// ThrottlingException.
type Faults struct {
	RefuseNext   int `json:"refuseNext"`
	ThrottleNext int `json:"throttleNext"`
}

// Bus stands in for one EventBridge event bus: ServeHTTP answers
// PutEvents, ServeLocal the local routes. It is safe for concurrent use.
type Bus struct {
	name    string
	log     *slog.Logger
	mu      sync.Mutex
	events  []Event           // oldest first, at most keep
	first   uint64            // the sequence number of events[0]
	seq     map[string]uint64 // each kept event's sequence number, by id
	faults  Faults
	changed chan struct{} // closed, and replaced, when events are put
}

// New is an empty bus of that name, which writes one JSON line for each
// event put to logs (safe for concurrent writes, as an *os.File is).
func New(name string, logs io.Writer) *Bus {
	return &Bus{name: name, log: slog.New(slog.NewJSONHandler(logs, nil)), seq: map[string]uint64{}, changed: make(chan struct{})}
}

// Name is the bus's name, which PutEvents entries must give.
func (b *Bus) Name() string { return b.name }

// ARN is the bus's ARN, which entries may give instead of its name.
func (b *Bus) ARN() string {
	return "arn:aws:events:" + region + ":" + account + ":event-bus/" + b.name
}

// SetFaults replaces the faults pending and answers them.
func (b *Bus) SetFaults(f Faults) Faults {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.faults = f
	return b.faults
}

// fault takes the next entry's fault, if any: its error code, or "".
// The caller holds mu.
func (b *Bus) fault() string {
	switch {
	case b.faults.RefuseNext > 0:
		b.faults.RefuseNext--
		return errInternalFailure
	case b.faults.ThrottleNext > 0:
		b.faults.ThrottleNext--
		return errThrottling
	}
	return ""
}

// add keeps e, dropping the oldest event past keep, and logs it. The
// caller holds mu, and wakes the waiters once it has added a call's
// events.
func (b *Bus) add(e Event) {
	b.events = append(b.events, e)
	b.seq[e.ID] = b.first + uint64(len(b.events)-1)
	if len(b.events) > keep {
		delete(b.seq, b.events[0].ID)
		b.events[0] = Event{}
		b.events = b.events[1:]
		b.first++
	}
	b.log.Info("event put", "bus", b.name, "detailType", e.DetailType, "source", e.Source, "id", e.ID, "detail", withoutToken(e.Detail))
}

// wake tells the waiters that events were put. The caller holds mu.
func (b *Bus) wake() {
	close(b.changed)
	b.changed = make(chan struct{})
}

// Events are the kept events put after the event after (all of them
// when after is ""), oldest first, and the id of the oldest kept event
// ("" when none is kept). ok is false when after is not a kept event's
// id: it is unknown, or was dropped. With nothing to answer and wait
// above zero, it waits up to wait for an event, or until ctx ends.
func (b *Bus) Events(ctx context.Context, after string, wait time.Duration) (events []Event, oldest string, ok bool) {
	var timeout <-chan time.Time
	if wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		timeout = t.C
	}
	for {
		b.mu.Lock()
		events, oldest, ok = b.since(after)
		changed := b.changed
		b.mu.Unlock()
		if !ok || len(events) > 0 || timeout == nil {
			return events, oldest, ok
		}
		select {
		case <-changed:
		case <-timeout:
			return events, oldest, ok
		case <-ctx.Done():
			return events, oldest, ok
		}
	}
}

// since is Events without the wait. The caller holds mu.
func (b *Bus) since(after string) ([]Event, string, bool) {
	oldest := ""
	if len(b.events) > 0 {
		oldest = b.events[0].ID
	}
	if after == "" {
		return slices.Clone(b.events), oldest, true
	}
	s, ok := b.seq[after]
	if !ok {
		return nil, oldest, false
	}
	return slices.Clone(b.events[s-b.first+1:]), oldest, true
}

// withoutToken is a detail as it may be logged: without launch.token,
// the session's token, wherever launch is an object. It is never logged.
func withoutToken(detail jsontext.Value) jsontext.Value {
	var members map[string]jsontext.Value
	if err := json.Unmarshal(detail, &members); err != nil {
		return jsontext.Value(`{}`) // never met: a detail is checked to be an object
	}
	var launch map[string]jsontext.Value
	if raw, ok := members["launch"]; ok && raw.Kind() == '{' && json.Unmarshal(raw, &launch) == nil {
		delete(launch, "token")
		members["launch"], _ = json.Marshal(launch, json.Deterministic(true))
	}
	out, _ := json.Marshal(members, json.Deterministic(true))
	return out
}
