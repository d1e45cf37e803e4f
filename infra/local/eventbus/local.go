package eventbus

import (
	"encoding/json/v2"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/google/uuid"

	"github.com/cloud-agent/control-plane/infra/local/gateway"
	"github.com/cloud-agent/control-plane/shared/jsonbody"
	"github.com/cloud-agent/control-plane/shared/problem"
)

// The local routes, and the longest wait a list may ask for.
const (
	listPath   = "/_local/events"
	faultsPath = "/_local/events/faults"
	maxWait    = 20
)

// maxFaultsBody bounds a faults body: a valid one is a few bytes.
const maxFaultsBody = 1 << 10

// ServeLocal answers the bus's local routes, with no token: GET
// /_local/events lists the kept events, POST /_local/events/faults sets
// the faults. Another method is 405 with Allow, another path 404, each
// a problem+json as the gateway answers its own.
func (b *Bus) ServeLocal(w http.ResponseWriter, r *http.Request) {
	route := map[string]struct {
		method string
		serve  func(http.ResponseWriter, *http.Request)
	}{listPath: {http.MethodGet, b.serveList}, faultsPath: {http.MethodPost, b.serveFaults}}
	rt, ok := route[r.URL.Path]
	switch {
	case !ok:
		refuse(w, http.StatusNotFound, problem.NotFound, "There is no such route.")
	case r.Method != rt.method:
		w.Header().Set("Allow", rt.method)
		refuse(w, http.StatusMethodNotAllowed, problem.MethodNotAllowed, "Only "+rt.method+" is allowed here.")
	default:
		rt.serve(w, r)
	}
}

// refuse answers a problem+json, with a request id of its own.
func refuse(w http.ResponseWriter, status int, code problem.Code, detail string) {
	gateway.WriteProblem(w, uuid.NewString(), status, code, detail)
}

// list is the list's answer.
type list struct {
	Events []Event `json:"events"`
}

// gone is the list's answer to an after that is not a kept event's id:
// no events, and the id of the oldest kept one, or null when none is
// kept (a list without after, which may wait, is then the way on).
type gone struct {
	Events []Event `json:"events"`
	Oldest *string `json:"oldest"`
}

// serveList answers GET /_local/events?after=<id>&wait=<seconds>: 200
// with the events put after the event after (all kept ones without it),
// held up to wait seconds when there are none yet; 410 when after is not
// a kept event's id.
func (b *Bus) serveList(w http.ResponseWriter, r *http.Request) {
	after, wait, detail := listQuery(r.URL.Query())
	if detail != "" {
		refuse(w, http.StatusBadRequest, problem.InvalidRequest, detail)
		return
	}
	events, oldest, ok := b.Events(r.Context(), after, wait)
	if !ok {
		g := gone{Events: []Event{}}
		if oldest != "" {
			g.Oldest = &oldest
		}
		writeJSON(w, http.StatusGone, g)
		return
	}
	writeJSON(w, http.StatusOK, list{Events: events})
}

// listQuery reads the list's query: after, an event's id, and wait, an
// integer number of seconds from 0 to maxWait; each at most once. detail
// says what is wrong, or is "".
func listQuery(q url.Values) (after string, wait time.Duration, detail string) {
	if len(q["after"]) > 1 || len(q["wait"]) > 1 {
		return "", 0, "after and wait may each be given once."
	}
	if vs, ok := q["after"]; ok {
		if after = vs[0]; after == "" {
			return "", 0, "after must be an event's id."
		}
	}
	if vs, ok := q["wait"]; ok {
		n, err := strconv.Atoi(vs[0])
		if err != nil || n < 0 || n > maxWait || vs[0] != strconv.Itoa(n) {
			return "", 0, "wait must be an integer from 0 to 20 (seconds)."
		}
		wait = time.Duration(n) * time.Second
	}
	return after, wait, ""
}

// serveFaults answers POST /_local/events/faults {"refuseNext": n,
// "throttleNext": n}, read strictly (a member left out is 0): it sets the
// faults pending and answers them.
func (b *Bus) serveFaults(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxFaultsBody+1))
	if err != nil || len(body) > maxFaultsBody {
		refuse(w, http.StatusBadRequest, problem.InvalidRequest, "The body must be {\"refuseNext\": n, \"throttleNext\": n}.")
		return
	}
	var in Faults
	if err := jsonbody.Decode(body, &in); err != nil {
		var p *problem.Error
		if !errors.As(err, &p) {
			p = problem.New(problem.InvalidRequest, "The body must be {\"refuseNext\": n, \"throttleNext\": n}.")
		}
		refuse(w, p.Code.Status(), p.Code, p.Detail)
		return
	}
	if in.RefuseNext < 0 || in.ThrottleNext < 0 {
		refuse(w, http.StatusBadRequest, problem.InvalidRequest, "refuseNext and throttleNext must be integers of 0 or more.")
		return
	}
	writeJSON(w, http.StatusOK, b.SetFaults(in))
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	data, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(data)
}
