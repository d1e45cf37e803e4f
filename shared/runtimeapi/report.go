package runtimeapi

import (
	"context"
	"errors"
	"net/http"

	"github.com/cloud-agent/control-plane/shared/httpapi"
	"github.com/cloud-agent/control-plane/shared/invocation"
	"github.com/cloud-agent/control-plane/shared/jsonbody"
	"github.com/cloud-agent/control-plane/shared/outcome"
	"github.com/cloud-agent/control-plane/shared/problem"
	"github.com/cloud-agent/control-plane/shared/session"
	"github.com/cloud-agent/control-plane/shared/store"
)

// rounds is how many times a claim or a report reads the session and
// writes on what it read: a write that met another (a heartbeat, the
// sweep's mark, a concurrent report) is judged again on what it finds.
const rounds = 2

var errBusy = problem.New(problem.ServiceUnavailable, "The session is busy. Try again shortly.")

// ClaimAnswer is a claim's answer.
type ClaimAnswer struct {
	SessionID string             `json:"sessionId"`
	Claim     *session.ClaimView `json:"claim"`
	Deadline  string             `json:"deadline"`
}

// claim takes a runner's claim of the session, or its heartbeat.
func (s *Service) claim(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
	rec, body, err := s.authorized(ctx, r, s.Table.GetSession)
	if err != nil {
		return httpapi.Response{}, err
	}
	var b struct {
		Runner *string `json:"runner"`
	}
	if err := jsonbody.Decode(body, &b); err != nil {
		return httpapi.Response{}, err
	}
	var m problem.Members
	runner := m.Required("runner", b.Runner)
	if runner != "" && !outcome.ValidRunner(runner) {
		m.Fail("runner", "must be 1 to 128 of A-Z, a-z, 0-9, _, ., : and -")
	}
	if err := m.Err(); err != nil {
		return httpapi.Response{}, err
	}
	timeout, err := s.Settings.OutcomeTimeout(ctx)
	if err != nil {
		return httpapi.Response{}, err
	}
	for round := range rounds {
		d, err := outcome.ClaimFor(runner, rec.Claim, rec.Outcome, s.now())
		switch {
		case errors.Is(err, outcome.ErrClaimed):
			return httpapi.Response{}, outcome.ErrClaimed.With("claim", session.ClaimOf(d.Claim))
		case err != nil:
			return httpapi.Response{}, err
		case !d.Write: // the same second's claim again: nothing moves
		default:
			if err := s.Table.WriteClaim(ctx, rec, d.Claim); err != nil {
				if rec, err = s.again(ctx, rec, round, err); err != nil {
					return httpapi.Response{}, err
				}
				continue
			}
			metric := MetricClaims
			if rec.Claim != nil {
				metric = MetricHeartbeats
			}
			invocation.Add(ctx, invocation.Count(metric, 1))
		}
		return httpapi.Response{Status: http.StatusOK, Body: ClaimAnswer{SessionID: rec.SessionID, Claim: session.ClaimOf(d.Claim),
			Deadline: outcome.Deadline(rec.CreatedAt, d.Claim, timeout).UTC().Format(session.TimeFormat)}}, nil
	}
	return httpapi.Response{}, errBusy
}

// OutcomeAnswer is a report's answer.
type OutcomeAnswer struct {
	SessionID string               `json:"sessionId"`
	Outcome   *session.OutcomeView `json:"outcome"`
}

// report records how the session's run ended: on the session and, while
// it exists, on its trigger run, in one transaction.
func (s *Service) report(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
	rec, body, err := s.authorized(ctx, r, s.Table.GetSession)
	if err != nil {
		return httpapi.Response{}, err
	}
	rep, err := outcome.ParseReport(body, rec.CreatedAt, s.now())
	if err != nil {
		return httpapi.Response{}, err
	}
	for round := range rounds {
		d, err := outcome.Judge(rep, rec.Outcome, rec.Claim, s.now())
		switch {
		case errors.Is(err, outcome.ErrClaimed):
			return httpapi.Response{}, outcome.ErrClaimed.With("claim", session.ClaimOf(rec.Claim))
		case errors.Is(err, outcome.ErrRecorded):
			return httpapi.Response{}, outcome.ErrRecorded.With("outcome", session.OutcomeOf(d.Outcome))
		case d.Write:
			if err := s.write(ctx, rec, d.Outcome); err != nil {
				if rec, err = s.again(ctx, rec, round, err); err != nil {
					return httpapi.Response{}, err
				}
				continue
			}
			invocation.Add(ctx, invocation.Count(MetricReports, 1, invocation.Dimension{Name: DimStatus, Value: d.Outcome.Status}))
		}
		return httpapi.Response{Status: http.StatusOK, Body: OutcomeAnswer{SessionID: rec.SessionID, Outcome: session.OutcomeOf(d.Outcome)}}, nil
	}
	return httpapi.Response{}, errBusy
}

// write writes the outcome o on the session seen and its trigger run; a
// run that is gone (expired, its trigger deleted) is never recreated: the
// outcome is written on the session alone.
func (s *Service) write(ctx context.Context, seen *session.Record, o *outcome.Outcome) error {
	err := s.Table.WriteOutcome(ctx, seen, o, true, s.now())
	if errors.Is(err, store.ErrRunGone) {
		return s.Table.WriteOutcome(ctx, seen, o, false, s.now())
	}
	return err
}

// again reads the session once more after a write that met another
// (store.ErrSessionMoved), to judge it again, unless that was the last
// round's (errBusy: at most rounds reads and writes); any other error is
// as it came.
func (s *Service) again(ctx context.Context, seen *session.Record, round int, err error) (*session.Record, error) {
	switch {
	case !errors.Is(err, store.ErrSessionMoved):
		return nil, err
	case round == rounds-1:
		return nil, errBusy
	}
	return s.Table.GetSession(ctx, seen.SessionID)
}
