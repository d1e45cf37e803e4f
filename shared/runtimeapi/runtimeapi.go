// Package runtimeapi is the runtime routes (contract v7), through which
// the execution plane, holding a session's token, reads what the session
// was started with, claims it and keeps its claim alive, and reports how
// its run ended. Each route checks in the contract's order: the body's
// size (413), the id and the Authorization header's shape (401 with no
// read), the session, read strongly consistently (401 with no KMS call
// when absent, legacy or undecodable), the token, compared in constant
// time with the one the session token key derives, and its life (401);
// then the body (400) and the route's own answer. Every 401 is the same
// answer and writes nothing.
package runtimeapi

import (
	"context"
	"crypto/subtle"
	"errors"
	"log/slog"
	"strings"
	"time"

	"github.com/cloud-agent/control-plane/shared/allocation"
	"github.com/cloud-agent/control-plane/shared/httpapi"
	"github.com/cloud-agent/control-plane/shared/ids"
	"github.com/cloud-agent/control-plane/shared/invocation"
	"github.com/cloud-agent/control-plane/shared/outcome"
	"github.com/cloud-agent/control-plane/shared/problem"
	"github.com/cloud-agent/control-plane/shared/session"
	"github.com/cloud-agent/control-plane/shared/store"
)

// Table is what the routes read and write of the table.
type Table interface {
	GetSession(ctx context.Context, sessionID string) (*session.Record, error)
	ReadLaunch(ctx context.Context, sessionID string) (*session.Record, error)
	WriteClaim(ctx context.Context, seen *session.Record, claim *outcome.Claim) error
	WriteOutcome(ctx context.Context, seen *session.Record, o *outcome.Outcome, run bool, now time.Time) error
}

// Settings are the settings the routes read.
type Settings interface {
	Policy(ctx context.Context) (*allocation.Policy, error)
	OutcomeTimeout(ctx context.Context) (time.Duration, error)
}

// Tokens derive sessions' tokens.
type Tokens interface {
	Token(ctx context.Context, sessionID string) (string, error)
}

// Service is the runtime routes' service.
type Service struct {
	Table    Table
	Settings Settings
	Tokens   Tokens
	// SecretsKey is the ARN of the key that sealed environments' secret
	// values, named beside each ciphertext the launch read answers.
	SecretsKey string
	// Now defaults to the clock.
	Now func() time.Time
}

// The metrics of the runtime routes' lines: claims (a first claim),
// heartbeats (the same runner's claim again), reports by the Status
// reported, and each 401 by its Reason.
const (
	MetricClaims       = "Claims"
	MetricHeartbeats   = "Heartbeats"
	MetricReports      = "Reports"
	MetricUnauthorized = "Unauthorized"
	DimStatus          = "Status"
	DimReason          = "Reason"
)

// Routes are the runtime routes, without the JWT authorizer.
func (s *Service) Routes() []httpapi.Route {
	return []httpapi.Route{
		{Method: "GET", Pattern: "/v1/runtime/sessions/{sessionId}", Handle: s.launch, Public: true},
		{Method: "POST", Pattern: "/v1/runtime/sessions/{sessionId}/claim", Handle: s.claim, Public: true},
		{Method: "POST", Pattern: "/v1/runtime/sessions/{sessionId}/outcome", Handle: s.report, Public: true},
	}
}

var errUnauthorized = problem.New(problem.Unauthorized, "The session token is not valid for this session.")

// The reasons of a 401, on the line and its metric; never the token.
const (
	reasonMalformed = "malformed"       // the id or the header's shape
	reasonUnknown   = "unknown_session" // absent, legacy or undecodable
	reasonToken     = "wrong_token"
	reasonExpired   = "expired_token"
)

// unauthorized is the one 401, its reason noted on the line.
func unauthorized(ctx context.Context, reason string) error {
	invocation.Note(ctx, slog.String("unauthorized", reason))
	invocation.Add(ctx, invocation.Count(MetricUnauthorized, 1, invocation.Dimension{Name: DimReason, Value: reason}))
	return errUnauthorized
}

// authorized reads the session the request names with read, once the
// request has passed every check up to its body: the decoded body's size,
// the id's and the token's shapes, the session, the token and its life;
// it returns the decoded body, or its decoding's error.
func (s *Service) authorized(ctx context.Context, r *httpapi.Request, read func(context.Context, string) (*session.Record, error)) (*session.Record, []byte, error) {
	ev := r.Event
	body, undecodable := httpapi.DecodeBody(ev) // an undecodable body is 400, after the token
	if undecodable == nil && len(body) > httpapi.MaxBody {
		return nil, nil, httpapi.ErrTooLarge
	}
	id := r.Params["sessionId"]
	token, ok := bearer(ev.Headers["authorization"])
	if !ids.IsSessionID(id) || !ok {
		return nil, nil, unauthorized(ctx, reasonMalformed)
	}
	invocation.Note(ctx, slog.String("sessionId", id))
	rec, err := read(ctx, id)
	var invalid *store.InvalidSessionError
	switch {
	case errors.Is(err, store.ErrNotFound), errors.As(err, &invalid), err == nil && rec.Legacy():
		return nil, nil, unauthorized(ctx, reasonUnknown)
	case err != nil:
		return nil, nil, err
	}
	want, err := s.Tokens.Token(ctx, id)
	switch {
	case err != nil:
		return nil, nil, err
	case subtle.ConstantTimeCompare([]byte(token), []byte(want)) != 1:
		return nil, nil, unauthorized(ctx, reasonToken)
	case !outcome.TokenLive(rec.CreatedAt, rec.Claim, rec.Outcome, s.now()):
		return nil, nil, unauthorized(ctx, reasonExpired)
	}
	return rec, body, undecodable
}

// bearer is the session token of an Authorization header: Bearer and a
// token of the right shape, sent once (API Gateway joins a repeated
// header's values with commas, which no token holds).
func bearer(header string) (string, bool) {
	scheme, token, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || !outcome.WellFormedToken(token) {
		return "", false
	}
	return token, true
}

func (s *Service) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}
