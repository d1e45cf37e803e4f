// Package sessionevents is the session events function (contract v7): it
// reads a batch of the table's stream, decides what each change of a
// session announces (package announce), derives each new session's token,
// puts the events on the sessions' bus in the order of the changes, and
// answers the records whose events were not put as the batch's item
// failures, so that Lambda hands them, and those after them, again:
// every event put at least once, none lost.
package sessionevents

import (
	"context"
	"encoding/json/v2"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/cloud-agent/control-plane/shared/announce"
	"github.com/cloud-agent/control-plane/shared/bus"
	"github.com/cloud-agent/control-plane/shared/invocation"
	"github.com/cloud-agent/control-plane/shared/session"
	"github.com/cloud-agent/control-plane/shared/store"
)

// Tokens derive sessions' tokens.
type Tokens interface {
	Token(ctx context.Context, sessionID string) (string, error)
}

// Bus puts events, and answers the indexes of those it could not put.
type Bus interface {
	Put(ctx context.Context, entries []bus.Entry) (refused []int, fault error)
}

// The metrics of every invocation, by Function: the events put, the
// records that announced nothing (another item, a change that is not a
// start or an outcome, a legacy or undecodable session), and the records
// whose events were not put (the batch's item failures).
const (
	MetricPut     = "EventsPut"
	MetricSkipped = "EventsSkipped"
	MetricFailed  = "EventsFailed"
)

// tokenConcurrency bounds the tokens derived at a time.
const tokenConcurrency = 8

// Service is the function's service.
type Service struct {
	Tokens  Tokens
	Bus     Bus
	APIURL  string // the API's URL, the launch read's base
	Log     *slog.Logger
	Metrics *invocation.Metrics
}

// change is a record that announces an event.
type change struct {
	record     int // its index in the batch
	detailType string
	rec        *session.Record
	token      string
	err        error
}

// Handle announces a batch's changes.
func (s *Service) Handle(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
	begun := time.Now()
	ctx, record := s.Metrics.Begin(ctx)
	changes, skipped := decide(ev.Records)
	s.tokens(ctx, changes)
	failed, fault := s.put(ctx, changes)
	var resp events.DynamoDBEventResponse
	var sessions []string
	for _, i := range failed {
		c := changes[i]
		resp.BatchItemFailures = append(resp.BatchItemFailures, events.DynamoDBBatchItemFailure{ItemIdentifier: ev.Records[c.record].Change.SequenceNumber})
		sessions = append(sessions, c.rec.SessionID)
	}
	unannounced := invocation.Count(MetricFailed, len(failed))
	unannounced.ByVersion = true // its release alarm watches the new version's
	invocation.Add(ctx, invocation.Count(MetricPut, len(changes)-len(failed)), invocation.Count(MetricSkipped, skipped), unannounced)
	attrs := []slog.Attr{
		slog.String("requestId", requestID(ctx)), slog.Int("records", len(ev.Records)),
		slog.Int("put", len(changes)-len(failed)), slog.Int("skipped", skipped), slog.Any("failed", sessions),
		slog.Int64("latencyMs", time.Since(begun).Milliseconds()),
	}
	level := slog.LevelInfo
	if fault != nil {
		level, attrs = slog.LevelError, append(attrs, slog.String("error", fault.Error()))
	}
	s.Log.LogAttrs(ctx, level, "announce", append(attrs, record.Attrs(time.Now())...)...)
	return resp, nil
}

// Announcing counts the records of a batch that announce an event: what
// Handle puts, less its item failures.
func Announcing(records []events.DynamoDBEventRecord) int {
	changes, _ := decide(records)
	return len(changes)
}

// decide reads each record's images and keeps those that announce an
// event, in order; the others are counted as skipped.
func decide(records []events.DynamoDBEventRecord) (changes []*change, skipped int) {
	for i, r := range records {
		next, err := store.StreamSession(r.Change.NewImage)
		if err != nil {
			skipped++
			continue
		}
		old, err := store.StreamSession(r.Change.OldImage)
		if err != nil { // a hand's edit mended: nothing this product wrote
			skipped++
			continue
		}
		if t := announce.Of(old, next); t != "" {
			changes = append(changes, &change{record: i, detailType: t, rec: next})
		} else {
			skipped++
		}
	}
	return changes, skipped
}

// tokens derives the token of each new session, a few at a time.
func (s *Service) tokens(ctx context.Context, changes []*change) {
	var wg sync.WaitGroup
	slots := make(chan struct{}, tokenConcurrency)
	for _, c := range changes {
		if c.detailType != announce.Started {
			continue
		}
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			c.token, c.err = s.Tokens.Token(ctx, c.rec.SessionID)
		})
	}
	wg.Wait()
}

// put puts the changes' events and returns the indexes of the changes
// whose event was not put (its token not derived, or the bus refused it),
// and a fault met on the way.
func (s *Service) put(ctx context.Context, changes []*change) (failed []int, fault error) {
	var entries []bus.Entry
	var of []int // the change of each entry
	for i, c := range changes {
		if c.err != nil {
			failed, fault = append(failed, i), c.err
			continue
		}
		var detail any
		if c.detailType == announce.Started {
			detail = announce.StartedOf(c.rec, s.APIURL, c.token)
		} else {
			detail = announce.EndedOf(c.rec)
		}
		b, err := json.Marshal(detail)
		if err != nil {
			failed, fault = append(failed, i), err
			continue
		}
		entries, of = append(entries, bus.Entry{Source: announce.Source, DetailType: c.detailType, Detail: b}), append(of, i)
	}
	refused, err := s.Bus.Put(ctx, entries)
	if err != nil {
		fault = err
	}
	for _, e := range refused {
		failed = append(failed, of[e])
	}
	slices.Sort(failed)
	return failed, fault
}

// requestID is the invocation's request id, or "" outside Lambda.
func requestID(ctx context.Context) string {
	if lc, ok := lambdacontext.FromContext(ctx); ok {
		return lc.AwsRequestID
	}
	return ""
}
