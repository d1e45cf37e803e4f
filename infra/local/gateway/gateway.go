// Package gateway stands in for the HTTP API locally (Gateway): it routes
// requests by template.yaml's HttpApi events to the functions and builds
// payload 2.0 events the way API Gateway does, with AWS's limits and its
// own answers, and runs a function's schedule on demand. It trusts
// unverified tokens (DevToken makes one): for development and tests only.
package gateway

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"
	"github.com/google/uuid"

	"github.com/cloud-agent/control-plane/infra/local/lambdarun"
	"github.com/cloud-agent/control-plane/infra/local/schedule"
	"github.com/cloud-agent/control-plane/infra/template"
	"github.com/cloud-agent/control-plane/shared/httpapi"
	"github.com/cloud-agent/control-plane/shared/problem"
)

// Gateway stands in for the HTTP API locally: it routes requests by the
// template's HttpApi events and builds payload 2.0 events the way API
// Gateway does. On routes behind the JWT authorizer it takes the claims from
// the bearer token's payload WITHOUT checking its signature, expiry, issuer
// or audience: this is for local development only. It also answers
// POST /_local/schedule/<LogicalId>, which runs a function's schedule now,
// and hands /_local/events and what is under it to Events.
type Gateway struct {
	Routes    []template.Route
	Scheduled map[string]bool // functions with a Schedule event
	Invoke    lambdarun.Invoker
	// Events, when set, answers /_local/events and the paths under it
	// (the local event bus's list and faults), with no token.
	Events http.Handler
	Now    func() time.Time
	Log    *slog.Logger // where a function's failure is told, with the request id
}

// The limits AWS enforces before any function runs (docs/bad-input.md,
// Bodies): an HTTP API takes a body of at most 10 MB, and Lambda a
// synchronous invocation of at most 6 MB, counted on the whole event. Both
// count a MB as 1,048,576 bytes.
const (
	maxGatewayBody   = 10 << 20
	maxInvokePayload = 6 << 20
)

// The answers of API Gateway itself to a body over its limit, and to an
// event that Lambda refuses (an integration failure); neither is
// problem+json.
const (
	bodyTooLarge        = "HTTP content length exceeded 10485760 bytes."
	internalServerError = `{"message":"Internal Server Error"}`
)

// readBody reads a request's body, up to one byte over API Gateway's
// limit, into a buffer sized once by its Content-Length when it has one.
func readBody(r *http.Request) ([]byte, error) {
	var buf bytes.Buffer
	if r.ContentLength > 0 {
		buf.Grow(int(min(r.ContentLength, maxGatewayBody+1)) + bytes.MinRead)
	}
	_, err := buf.ReadFrom(io.LimitReader(r.Body, maxGatewayBody+1))
	return buf.Bytes(), err
}

// eventsPath is where the local event bus's routes are.
const eventsPath = "/_local/events"

func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	requestID := uuid.NewString() // the event's, the problem's and the log's
	if id, ok := strings.CutPrefix(r.URL.Path, "/_local/schedule/"); ok && r.Method == http.MethodPost {
		g.schedule(w, r, id, requestID)
		return
	}
	if p := r.URL.Path; g.Events != nil && (p == eventsPath || strings.HasPrefix(p, eventsPath+"/")) {
		g.Events.ServeHTTP(w, r)
		return
	}
	// A body over API Gateway's limit is refused before the request is
	// routed: the answer is the HTTP front end's, whatever the route.
	body, err := readBody(r)
	if err != nil {
		WriteProblem(w, requestID, http.StatusBadRequest, problem.InvalidRequest, "The body could not be read.")
		return
	}
	if len(body) > maxGatewayBody {
		writeGatewayError(w, http.StatusRequestEntityTooLarge, "text; charset=utf-8", bodyTooLarge)
		return
	}
	route, params, ok := g.match(r.Method, r.URL.EscapedPath())
	if !ok {
		WriteProblem(w, requestID, http.StatusNotFound, problem.NotFound, "There is no such route.")
		return
	}
	var auth *events.APIGatewayV2HTTPRequestContextAuthorizerDescription
	if route.JWT {
		claims, err := bearerClaims(r.Header.Get("Authorization"))
		if err != nil {
			WriteProblem(w, requestID, http.StatusUnauthorized, problem.Unauthorized, "A bearer token with a JSON payload is required.")
			return
		}
		jwt := &events.APIGatewayV2HTTPRequestContextAuthorizerJWTDescription{Claims: renderClaims(claims)}
		if scope, ok := claims["scope"].(string); ok {
			jwt.Scopes = strings.Fields(scope)
		}
		auth = &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{JWT: jwt}
	}
	ev := g.event(r, route, params, body, auth, requestID)
	payload, _ := json.Marshal(ev)
	if len(payload) > maxInvokePayload {
		g.failed(route.Function, requestID, fmt.Errorf("the event of %d bytes is over the invocation limit of %d bytes", len(payload), maxInvokePayload))
		writeGatewayError(w, http.StatusInternalServerError, "application/json", internalServerError)
		return
	}
	out, err := g.Invoke(r.Context(), route.Function, payload)
	if err != nil {
		g.failed(route.Function, requestID, err)
		WriteProblem(w, requestID, http.StatusBadGateway, problem.InternalError, "The function failed.")
		return
	}
	writeFunctionResponse(w, out, requestID)
}

// match finds the route API Gateway would choose: a path with the most
// literal segments first, then the exact method over ANY.
func (g *Gateway) match(method, path string) (template.Route, map[string]string, bool) {
	best, bestScore := template.Route{}, -1
	var bestParams map[string]string
	for _, rt := range g.Routes {
		if rt.Method != method && rt.Method != "ANY" {
			continue
		}
		params, literals, ok := matchPath(rt.Path, path)
		if !ok {
			continue
		}
		score := literals * 2
		if rt.Method == method {
			score++
		}
		if !greedy(rt.Path) {
			score += greedyRank // API Gateway tries a greedy route last
		}
		if score > bestScore {
			best, bestScore, bestParams = rt, score, params
		}
	}
	return best, bestParams, bestScore >= 0
}

// greedyRank puts every route without a greedy segment above every one
// with one.
const greedyRank = 1 << 20

// greedy reports whether a route's path ends in a {name+} segment.
func greedy(path string) bool { return strings.HasSuffix(path, "+}") }

// matchPath matches a path to a route's pattern: literal segments
// exactly, a {name} segment to one segment, and a last {name+} segment
// (greedy) to the one or more segments left, its parameter the rest of
// the path as sent. literals counts the literal segments.
func matchPath(pattern, path string) (params map[string]string, literals int, ok bool) {
	ps, xs := strings.Split(pattern, "/"), strings.Split(path, "/")
	params = map[string]string{}
	if greedy(pattern) {
		n := len(ps) - 1
		if len(xs) <= n || slices.Contains(xs[n:], "") {
			return nil, 0, false
		}
		params[strings.Trim(ps[n], "{+}")] = strings.Join(xs[n:], "/")
		ps, xs = ps[:n], xs[:n]
	}
	if len(ps) != len(xs) {
		return nil, 0, false
	}
	for i, p := range ps {
		if name, isParam := strings.CutPrefix(p, "{"); isParam {
			if xs[i] == "" {
				return nil, 0, false
			}
			v, err := url.PathUnescape(xs[i])
			if err != nil {
				v = xs[i]
			}
			params[strings.TrimSuffix(name, "}")] = v
			continue
		}
		if p != xs[i] {
			return nil, 0, false
		}
		literals++
	}
	return params, literals, true
}

// event builds the payload 2.0 event of a request.
func (g *Gateway) event(r *http.Request, route template.Route, params map[string]string, body []byte, auth *events.APIGatewayV2HTTPRequestContextAuthorizerDescription, requestID string) events.APIGatewayV2HTTPRequest {
	now := g.now().UTC()
	headers := map[string]string{}
	for name, vs := range r.Header {
		if strings.EqualFold(name, "Cookie") {
			continue
		}
		headers[strings.ToLower(name)] = strings.Join(vs, ",")
	}
	headers["host"] = r.Host
	query := queryParameters(r.URL.RawQuery)
	var cookies []string
	for _, line := range r.Header.Values("Cookie") {
		for _, c := range strings.Split(line, ";") {
			if c = strings.TrimSpace(c); c != "" {
				cookies = append(cookies, c)
			}
		}
	}
	sourceIP, _, _ := net.SplitHostPort(r.RemoteAddr)
	ev := events.APIGatewayV2HTTPRequest{
		Version: "2.0", RouteKey: route.Key(), RawPath: r.URL.EscapedPath(), RawQueryString: r.URL.RawQuery,
		Cookies: cookies, Headers: headers, QueryStringParameters: query,
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			RouteKey: route.Key(), AccountID: "000000000000", Stage: "$default", RequestID: requestID,
			Authorizer: auth, APIID: "local", DomainName: r.Host, DomainPrefix: strings.Split(r.Host, ".")[0],
			Time: now.Format("02/Jan/2006:15:04:05 -0700"), TimeEpoch: now.UnixMilli(),
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{
				Method: r.Method, Path: r.URL.Path, Protocol: r.Proto, SourceIP: sourceIP, UserAgent: r.UserAgent(),
			},
		},
	}
	if len(params) > 0 {
		ev.PathParameters = params
	}
	if len(body) > 0 {
		if textual(r.Header.Get("Content-Type")) && utf8.Valid(body) {
			ev.Body = string(body)
		} else {
			ev.Body, ev.IsBase64Encoded = base64.StdEncoding.EncodeToString(body), true
		}
	}
	return ev
}

func (g *Gateway) now() time.Time {
	if g.Now != nil {
		return g.Now()
	}
	return time.Now()
}

// queryParameters splits a raw query string as API Gateway does: each pair
// decoded on its own (a pair that does not decode is kept as sent), the
// values of a repeated name joined with commas.
func queryParameters(raw string) map[string]string {
	if raw == "" {
		return nil
	}
	out := map[string]string{}
	for _, pair := range strings.Split(raw, "&") {
		if pair == "" {
			continue
		}
		k, v, _ := strings.Cut(pair, "=")
		k, v = unescape(k), unescape(v)
		if prev, ok := out[k]; ok {
			v = prev + "," + v
		}
		out[k] = v
	}
	return out
}

func unescape(s string) string {
	if u, err := url.QueryUnescape(s); err == nil {
		return u
	}
	return s
}

// textual reports whether a content type is text, which API Gateway passes
// as it is; anything else, a form or a body without a content type
// included, arrives base64-encoded.
func textual(contentType string) bool {
	ct := strings.ToLower(contentType)
	return strings.HasPrefix(ct, "text/") || strings.Contains(ct, "json") || strings.Contains(ct, "xml")
}

// bearerClaims decodes a token's payload, unverified. Like the HTTP API's
// JWT authorizer, it takes the token with or without the "Bearer " prefix.
func bearerClaims(authorization string) (map[string]any, error) {
	token := strings.TrimPrefix(authorization, "Bearer ")
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return nil, errors.New("not a JWT")
	}
	payload, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[1], "="))
	if err != nil {
		return nil, err
	}
	d := json.NewDecoder(strings.NewReader(string(payload)))
	d.UseNumber()
	var claims map[string]any
	if err := d.Decode(&claims); err != nil {
		return nil, err
	}
	return claims, nil
}

// renderClaims renders claims as the HTTP API's JWT authorizer does: every
// value a string, an array as "[a b]".
func renderClaims(claims map[string]any) map[string]string {
	out := make(map[string]string, len(claims))
	for k, v := range claims {
		switch x := v.(type) {
		case string:
			out[k] = x
		case []any:
			parts := make([]string, len(x))
			for i, e := range x {
				parts[i] = fmt.Sprint(e)
			}
			out[k] = "[" + strings.Join(parts, " ") + "]"
		default:
			b, _ := json.Marshal(x)
			out[k] = string(b)
		}
	}
	return out
}

// DevToken is an unsigned token with the claims, for local calls.
func DevToken(claims map[string]any) string {
	enc := func(v any) string {
		b, _ := json.Marshal(v)
		return base64.RawURLEncoding.EncodeToString(b)
	}
	return enc(map[string]string{"alg": "none", "typ": "JWT"}) + "." + enc(claims) + "."
}

// writeFunctionResponse writes a payload 2.0 response as API Gateway does
// (which reads headers, not multiValueHeaders, in this format).
func writeFunctionResponse(w http.ResponseWriter, out []byte, requestID string) {
	var resp events.APIGatewayV2HTTPResponse
	if err := json.Unmarshal(out, &resp); err != nil || resp.StatusCode == 0 {
		WriteProblem(w, requestID, http.StatusBadGateway, problem.InternalError, "The function's answer is not an HTTP response.")
		return
	}
	for k, v := range resp.Headers {
		w.Header().Set(k, v)
	}
	for _, c := range resp.Cookies {
		w.Header().Add("Set-Cookie", c)
	}
	body := []byte(resp.Body)
	if resp.IsBase64Encoded {
		if b, err := base64.StdEncoding.DecodeString(resp.Body); err == nil {
			body = b
		}
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(body)
}

// WriteProblem answers with a problem+json of the gateway's own, as its
// local routes do too (the event bus's, package eventbus).
func WriteProblem(w http.ResponseWriter, requestID string, status int, code problem.Code, detail string) {
	w.Header().Set("Content-Type", "application/problem+json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(httpapi.NewProblemBody(status, code, detail, requestID))
}

// writeGatewayError answers as API Gateway itself does, in its own format.
func writeGatewayError(w http.ResponseWriter, status int, contentType, body string) {
	w.Header().Set("Content-Type", contentType)
	w.WriteHeader(status)
	_, _ = io.WriteString(w, body)
}

// failed tells why a function failed: the answer says only that it did.
func (g *Gateway) failed(function, requestID string, err error) {
	if g.Log != nil {
		g.Log.Error("function failed", "function", function, "requestId", requestID, "error", err.Error())
	}
}

// maxAhead is how far ahead of the clock a schedule's event may be: the
// firing ignores one further ahead (contract, section 5).
const maxAhead = 5 * time.Minute

// schedule runs a function's schedule now, or as of the body's time, at
// most maxAhead ahead of the clock.
func (g *Gateway) schedule(w http.ResponseWriter, r *http.Request, id, requestID string) {
	if !g.Scheduled[id] {
		WriteProblem(w, requestID, http.StatusNotFound, problem.NotFound, "No function of that name has a schedule.")
		return
	}
	at := g.now()
	var in struct {
		Time *string `json:"time"`
	}
	if body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20)); len(strings.TrimSpace(string(body))) > 0 {
		if err := json.Unmarshal(body, &in); err != nil {
			WriteProblem(w, requestID, http.StatusBadRequest, problem.InvalidRequest, "The body must be {\"time\": \"<RFC 3339>\"}.")
			return
		}
	}
	if in.Time != nil {
		t, err := time.Parse(time.RFC3339, *in.Time)
		if err != nil {
			WriteProblem(w, requestID, http.StatusBadRequest, problem.InvalidRequest, "time must be an RFC 3339 time.")
			return
		}
		if t.Sub(at) > maxAhead {
			WriteProblem(w, requestID, http.StatusBadRequest, problem.InvalidRequest,
				"time is more than 5 minutes ahead of the clock: the firing ignores such an event, so nothing would fire. "+
					"To try a trigger now, set its nextRunAt to the current minute, or move its schedule to a minute just ahead, "+
					"and run the schedule (README, \"Trying a trigger locally\").")
			return
		}
		at = t
	}
	out, err := g.Invoke(r.Context(), id, schedule.Event(id, at))
	if err != nil {
		g.failed(id, requestID, err)
		WriteProblem(w, requestID, http.StatusBadGateway, problem.InternalError, "The function returned an error.")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(out)
}
