package httpapi

import (
	"context"
	"encoding/base64"
	"fmt"
	"log/slog"
	"mime"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/cloud-agent/control-plane/shared/invocation"
	"github.com/cloud-agent/control-plane/shared/problem"
)

// MaxBody is the largest body accepted: decoded, or, on a public route,
// as it arrived.
const MaxBody = 256 << 10

// Request is one matched request with its caller.
type Request struct {
	Event     *events.APIGatewayV2HTTPRequest
	Caller    Caller
	Params    map[string]string // path parameters, by the names in the route's pattern
	Body      []byte            // decoded; empty when there is none, nil on a public route
	RequestID string
}

// Header returns a request header and whether it was sent; the gateway
// lower-cases their names.
func (r *Request) Header(name string) (string, bool) {
	v, ok := r.Event.Headers[strings.ToLower(name)]
	return v, ok
}

// MergePatchType refuses a PATCH body of a Content-Type other than
// application/merge-patch+json or application/json (none: read as JSON).
func (r *Request) MergePatchType() error {
	ct, ok := r.Header("Content-Type")
	if !ok {
		return nil
	}
	if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/merge-patch+json" && mt != "application/json" {
		return problem.New(problem.InvalidRequest, "Content-Type must be application/merge-patch+json or application/json.")
	}
	return nil
}

// Query returns a query string parameter.
func (r *Request) Query(name string) (string, bool) {
	v, ok := r.Event.QueryStringParameters[name]
	return v, ok
}

// Handler answers a matched request.
type Handler func(ctx context.Context, r *Request) (Response, error)

// Route is a method and a path pattern whose {name} segments match any
// non-empty segment.
type Route struct {
	Method  string
	Pattern string
	Handle  Handler
	// Public is a route without the authorizer (the webhook routes): it
	// has no caller, another method of its path is 405 without one, and
	// its handler judges the body itself, in its own order of checks
	// (Request.Body is nil: MaxBody, DecodeBody).
	Public bool
}

// The metrics of a problem answer, by the dimension Code, its code.
const (
	// Refusals counts a 4xx problem.
	Refusals = "Refusals"
	// Faults counts a 5xx, by Version as well: a release's alarm counts
	// the new version's.
	Faults = "Faults"
	// DimCode is a problem's code.
	DimCode = "Code"
)

// API answers the events of a function's routes.
type API struct {
	routes  []Route
	log     *slog.Logger
	metrics *invocation.Metrics
}

// New returns an API over the routes that logs to log, its lines without
// metrics until WithMetrics gives it an execution environment's.
func New(log *slog.Logger, routes ...Route) *API { return &API{routes: routes, log: log} }

// WithMetrics returns a copy of the API whose lines carry the metrics of
// the execution environment m.
func (a *API) WithMetrics(m *invocation.Metrics) *API {
	b := *a
	b.metrics = m
	return &b
}

// Handle answers one event, in the contract's order of checks: an unknown
// route (404), the caller (401), a known path with another method (405),
// the body size (413), then the handler (a public route's: with no caller,
// the body as it arrived). It never
// returns an error to Lambda: every failure is a problem+json response,
// with the request id. It logs one JSON line per invocation: the request
// id, the route, the status, a problem's code, and for a 5xx its cause;
// what the invocation gathered (invocation.Record.Attrs), the metrics
// Refusals (a 4xx problem) or Faults (a 5xx) by Code among them, Faults by
// the function's Version too.
func (a *API) Handle(ctx context.Context, ev events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	start := time.Now()
	ctx, record := a.metrics.Begin(ctx)
	r := &Request{Event: &ev, RequestID: ev.RequestContext.RequestID}
	route, resp, err := a.serve(ctx, r)
	if err != nil {
		resp = problemResponse(err, r.RequestID)
	}
	out, merr := encode(resp)
	if merr != nil {
		// The answer cannot be sent: internal_error takes its place, for
		// the same request.
		err = merr
		resp = problemResponse(err, r.RequestID)
		out, _ = encode(resp) // a problem body always marshals
	}
	attrs := []slog.Attr{
		slog.String("requestId", r.RequestID),
		slog.String("route", route),
		slog.Int("status", out.StatusCode),
		slog.Int64("latencyMs", time.Since(start).Milliseconds()),
	}
	if p, ok := resp.Body.(ProblemBody); ok {
		attrs = append(attrs, slog.String("code", string(p.Code)))
		m := invocation.Count(Refusals, 1, invocation.Dimension{Name: DimCode, Value: string(p.Code)})
		if out.StatusCode >= 500 {
			m.Name, m.ByVersion = Faults, true
		}
		invocation.Add(ctx, m)
	}
	level := slog.LevelInfo
	if out.StatusCode >= 500 {
		level = slog.LevelError
		if err != nil {
			attrs = append(attrs, slog.String("error", err.Error()))
		}
	}
	a.log.LogAttrs(ctx, level, "request", append(attrs, record.Attrs(time.Now())...)...)
	return out, nil
}

func (a *API) serve(ctx context.Context, r *Request) (route string, resp Response, err error) {
	method, path := r.Event.RequestContext.HTTP.Method, r.Event.RawPath
	if path == "" {
		path = r.Event.RequestContext.HTTP.Path
	}
	var allow []string
	public := false
	for _, rt := range a.routes {
		params, ok := match(rt.Pattern, path)
		if !ok {
			continue
		}
		if rt.Method != method {
			allow = append(allow, rt.Method)
			public = public || rt.Public
			continue
		}
		r.Params = params
		route = rt.Method + " " + rt.Pattern
		resp, err = a.call(ctx, rt, r)
		return route, resp, err
	}
	if len(allow) == 0 {
		return "unmatched", Response{}, problem.New(problem.NotFound, "There is no such resource.")
	}
	// A known path with another method: the caller comes first (401), as
	// the authorizer in front of every route but the public ones answers
	// it in AWS.
	if _, err := callerFrom(r.Event); err != nil && !public {
		return "unmatched", Response{}, err
	}
	slices.Sort(allow)
	resp = problemResponse(problem.New(problem.MethodNotAllowed, "The method is not allowed on this resource."), r.RequestID)
	resp.Headers["Allow"] = strings.Join(allow, ", ")
	return "unmatched", resp, nil
}

func (a *API) call(ctx context.Context, rt Route, r *Request) (resp Response, err error) {
	defer func() {
		if p := recover(); p != nil {
			// The panic's type and where it was, never its value: that
			// may hold request data.
			err = fmt.Errorf("panic of type %T: %s", p, debug.Stack())
		}
	}()
	if rt.Public {
		return rt.Handle(ctx, r)
	}
	caller, err := callerFrom(r.Event)
	if err != nil {
		return Response{}, err
	}
	r.Caller = caller
	if r.Body, err = DecodeBody(r.Event); err != nil {
		return Response{}, err
	}
	if len(r.Body) > MaxBody {
		return Response{}, ErrTooLarge
	}
	return rt.Handle(ctx, r)
}

// ErrTooLarge is a body over MaxBody.
var ErrTooLarge = problem.New(problem.PayloadTooLarge, "The body is larger than 256 KiB.")

// DecodeBody is the event's body, decoded when the event says it is
// base64: invalid_request when it does not decode.
func DecodeBody(ev *events.APIGatewayV2HTTPRequest) ([]byte, error) {
	if !ev.IsBase64Encoded {
		return []byte(ev.Body), nil
	}
	body, err := base64.StdEncoding.DecodeString(ev.Body)
	if err != nil {
		return nil, problem.New(problem.InvalidRequest, "The body is not valid base64.")
	}
	return body, nil
}

// match matches a path against a pattern and returns the path parameters.
func match(pattern, path string) (map[string]string, bool) {
	ps, xs := strings.Split(pattern, "/"), strings.Split(path, "/")
	if len(ps) != len(xs) {
		return nil, false
	}
	params := map[string]string{}
	for i, p := range ps {
		if name, ok := strings.CutPrefix(p, "{"); ok {
			if xs[i] == "" {
				return nil, false
			}
			params[strings.TrimSuffix(name, "}")] = xs[i]
			continue
		}
		if p != xs[i] {
			return nil, false
		}
	}
	return params, true
}
