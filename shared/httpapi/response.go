package httpapi

import (
	"encoding/json/v2"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"

	"github.com/aws/aws-lambda-go/events"

	"github.com/cloud-agent/control-plane/shared/problem"
)

// Response is what a handler answers: a status, a body to encode as JSON
// (nil for none) and extra headers.
type Response struct {
	Status  int
	Body    any
	Headers map[string]string
}

// ProblemBody is an application/problem+json body: the functions', and
// the local gateway's own.
type ProblemBody struct {
	Type      string       `json:"type"`
	Title     string       `json:"title"`
	Status    int          `json:"status"`
	Code      problem.Code `json:"code"`
	Detail    string       `json:"detail"`
	RequestID string       `json:"requestId"`
	// Extension are the problem's extension members (problem.Error's).
	Extension map[string]any `json:",embed"`
}

// NewProblemBody is the problem+json body of a status, a code and a
// detail, for the request requestID.
func NewProblemBody(status int, code problem.Code, detail, requestID string) ProblemBody {
	return ProblemBody{Type: "about:blank", Title: http.StatusText(status), Status: status, Code: code, Detail: detail, RequestID: requestID}
}

// unexpectedDetail is the detail of every error that carries no code: the
// cause goes to the log only.
const unexpectedDetail = "An unexpected error occurred."

// encode turns a response into the gateway's shape. Every response carries
// Cache-Control: no-store. A body that does not marshal is an error that
// names its type and the marshaller's error type, never the values.
func encode(r Response) (events.APIGatewayV2HTTPResponse, error) {
	out := events.APIGatewayV2HTTPResponse{StatusCode: r.Status, Headers: map[string]string{"Cache-Control": "no-store"}}
	for k, v := range r.Headers {
		out.Headers[k] = v
	}
	if r.Body != nil {
		b, err := json.Marshal(r.Body)
		if err != nil {
			return events.APIGatewayV2HTTPResponse{}, fmt.Errorf("the response body, a %T, does not marshal: %T", r.Body, err)
		}
		out.Body = string(b)
		if _, set := out.Headers["Content-Type"]; !set {
			out.Headers["Content-Type"] = "application/json"
		}
	}
	return out, nil
}

// problemResponse is the problem+json answer for err: its code and detail
// when it is a *problem.Error, internal_error otherwise.
func problemResponse(err error, requestID string) Response {
	code, detail := problem.InternalError, unexpectedDetail
	var pe *problem.Error
	if errors.As(err, &pe) {
		code, detail = pe.Code, pe.Detail
	}
	status := code.Status()
	body := NewProblemBody(status, code, detail, requestID)
	if pe != nil {
		body.Extension = pe.Extension
	}
	r := Response{
		Status:  status,
		Body:    body,
		Headers: map[string]string{"Content-Type": "application/problem+json"},
	}
	switch {
	case pe != nil && pe.RetryAfter > 0:
		r.Headers["Retry-After"] = strconv.Itoa(int(math.Ceil(pe.RetryAfter.Seconds())))
	case code == problem.ServiceUnavailable:
		r.Headers["Retry-After"] = "1"
	}
	return r
}

// Nullable is s as an answer's member that may be null: nil for "".
func Nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
