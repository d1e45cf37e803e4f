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
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/aws/smithy-go"

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

// change is a record that announces an event, or a session's record
// that does not decode (err), which fails rather than be lost.
type change struct {
	record     int // its index in the batch
	sessionID  string
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
		sessions = append(sessions, c.sessionID)
	}
	unannounced := invocation.Count(MetricFailed, len(failed))
	unannounced.ByVersion = true // its release alarm watches the new version's
	put := len(changes) - len(failed)
	invocation.Add(ctx, invocation.Count(MetricPut, put), invocation.Count(MetricSkipped, skipped), unannounced)
	attrs := []slog.Attr{
		slog.String("requestId", requestID(ctx)), slog.Int("records", len(ev.Records)),
		slog.Int("put", put), slog.Int("skipped", skipped), slog.Any("failed", sessions),
		slog.Int64("latencyMs", time.Since(begun).Milliseconds()),
	}
	level := slog.LevelInfo
	if fault != nil {
		level, attrs = slog.LevelError, append(attrs, slog.String("error", faultText(fault)))
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
// event, in order, and those whose session does not decode (a writer this
// version does not know: they fail, to be handed again or replayed, never
// lost); the others are counted as skipped.
func decide(records []events.DynamoDBEventRecord) (changes []*change, skipped int) {
	for i, r := range records {
		next, err := store.StreamSession(r.Change.NewImage)
		var invalid *store.InvalidSessionError
		if errors.As(err, &invalid) {
			changes = append(changes, &change{record: i, sessionID: invalid.SessionID, err: err})
			continue
		}
		old, err := store.StreamSession(r.Change.OldImage)
		if err != nil { // a hand's edit mended: nothing this product wrote
			skipped++
			continue
		}
		if t := announce.Of(old, next); t != "" {
			changes = append(changes, &change{record: i, sessionID: next.SessionID, detailType: t, rec: next})
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

// put puts the changes' events, in order, up to the first that cannot be
// (its session does not decode, its token is not derived), and returns
// the indexes of the changes from the first not put on (that one, or the
// first the bus refused), all of which Lambda hands again: a session's
// later event never goes on alone ahead of an earlier one that failed.
func (s *Service) put(ctx context.Context, changes []*change) (failed []int, fault error) {
	var entries []bus.Entry
	first := len(changes)
	for i, c := range changes {
		var b []byte
		if c.err == nil {
			var detail any
			if c.detailType == announce.Started {
				detail = announce.StartedOf(c.rec, s.APIURL, c.token)
			} else {
				detail = announce.EndedOf(c.rec)
			}
			b, c.err = json.Marshal(detail)
		}
		if c.err != nil {
			first, fault = i, c.err
			break
		}
		entries = append(entries, bus.Entry{Source: announce.Source, DetailType: c.detailType, Detail: b})
	}
	refused, err := s.Bus.Put(ctx, entries)
	if err != nil {
		fault = err
	}
	if len(refused) > 0 {
		first = min(first, refused[0]) // in order: entry i is change i
	}
	for i := first; i < len(changes); i++ {
		failed = append(failed, i)
	}
	return failed, fault
}

// faultText is a fault as the line says it: an AWS service's error by its
// code alone (its message may quote what was sent), any other as it is.
func faultText(err error) string {
	var api smithy.APIError
	if errors.As(err, &api) {
		return api.ErrorCode()
	}
	return err.Error()
}

// requestID is the invocation's request id, or "" outside Lambda.
func requestID(ctx context.Context) string {
	if lc, ok := lambdacontext.FromContext(ctx); ok {
		return lc.AwsRequestID
	}
	return ""
}
