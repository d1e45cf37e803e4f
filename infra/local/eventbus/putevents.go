package eventbus

import (
	"bytes"
	"encoding/json/jsontext"
	"encoding/json/v2"
	"fmt"
	"io"
	"math"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/google/uuid"
)

// target is PutEvents's X-Amz-Target (EventBridge's Smithy service name
// and the operation).
const target = "AWSEvents.PutEvents"

// EventBridge's limits on a PutEvents call: at most 10 entries, and a
// total entry size (entrySize) of at most 256 KB, 262,144 bytes (its
// quotas say at most 256 KB, the size page "less than 256KB": a call of
// exactly 256 KB is accepted).
const (
	maxEntries = 10
	maxSize    = 256 << 10
)

// maxBody is the stand-in's own bound on a request body: 10 entries of
// at most 256 KB in all, even with every byte escaped in JSON, fit.
const maxBody = 4 << 20

// The error types the stand-in answers: a call's, as {"__type",
// "message"}, and an entry's, in its ErrorCode.
const (
	errValidation       = "ValidationException"            // a call over EventBridge's limits
	errSerialization    = "SerializationException"         // a body that is not PutEvents's JSON
	errUnknownOperation = "UnknownOperationException"      // another X-Amz-Target
	errTooLarge         = "RequestEntityTooLargeException" // a body over maxBody
	errInternalFailure  = "InternalFailure"                // an entry refused (Faults.RefuseNext)
	errThrottling       = "ThrottlingException"            // an entry throttled (Faults.ThrottleNext)
	errInvalidArgument  = "InvalidArgument"                // an entry without Source, DetailType or Detail
	errMalformedDetail  = "MalformedDetail"                // a Detail that is not a JSON object
	errBusNotFound      = "ResourceNotFoundException"      // an entry for another bus
)

// statuses are the HTTP statuses of a call's errors.
var statuses = map[string]int{
	errValidation:       http.StatusBadRequest,
	errSerialization:    http.StatusBadRequest,
	errUnknownOperation: http.StatusBadRequest,
	errTooLarge:         http.StatusRequestEntityTooLarge,
}

// input is PutEvents's request; members it does not read are ignored.
type input struct {
	Entries []entry
}

// entry is a PutEventsRequestEntry. Time is in seconds since the epoch,
// as the JSON protocol sends a timestamp.
type entry struct {
	Time         *float64
	Source       *string
	DetailType   *string
	Detail       *string
	EventBusName *string
	Resources    []string
}

// result is a PutEventsResultEntry: an EventId, or an error.
type result struct {
	EventId      string `json:",omitempty"`
	ErrorCode    string `json:",omitempty"`
	ErrorMessage string `json:",omitempty"`
}

type output struct {
	Entries          []result
	FailedEntryCount int
}

// ServeHTTP answers PutEvents (POST /, X-Amz-Target AWSEvents.PutEvents,
// AWS JSON 1.1) as EventBridge does.
func (b *Bus) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	status, out := http.StatusOK, []byte(nil)
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	switch {
	case err != nil:
		status, out = answerError(errTooLarge, fmt.Sprintf("the request body is over %d bytes, the local stand-in's limit", maxBody))
	case r.Header.Get("X-Amz-Target") != target:
		status, out = answerError(errUnknownOperation, "only PutEvents is served locally")
	default:
		status, out = b.putEvents(body)
	}
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	w.Header().Set("X-Amzn-Requestid", uuid.NewString())
	w.WriteHeader(status)
	_, _ = w.Write(out)
}

func answerError(typ, msg string) (int, []byte) {
	data, _ := json.Marshal(map[string]string{"__type": typ, "message": msg})
	return statuses[typ], data
}

// putEvents answers a PutEvents body: a call over the limits is a
// ValidationException; otherwise each entry is put, or fails on its own.
func (b *Bus) putEvents(body []byte) (int, []byte) {
	var in input
	if len(bytes.TrimSpace(body)) > 0 {
		if err := json.Unmarshal(body, &in); err != nil {
			return answerError(errSerialization, err.Error())
		}
	}
	if msg := callLimits(in.Entries); msg != "" {
		return answerError(errValidation, msg)
	}
	now := time.Now()
	out := output{Entries: make([]result, len(in.Entries))}
	events := make([]*Event, len(in.Entries))
	for i, e := range in.Entries {
		if code, msg := b.check(e); code != "" {
			out.Entries[i] = result{ErrorCode: code, ErrorMessage: msg}
			continue
		}
		events[i] = newEvent(e, now)
	}
	b.mu.Lock()
	for i, e := range events {
		if e == nil {
			continue
		}
		if code := b.fault(); code != "" {
			out.Entries[i] = result{ErrorCode: code, ErrorMessage: faultMessages[code]}
			continue
		}
		b.add(*e)
		out.Entries[i] = result{EventId: e.ID}
	}
	b.wake()
	b.mu.Unlock()
	for _, r := range out.Entries {
		if r.ErrorCode != "" {
			out.FailedEntryCount++
		}
	}
	data, _ := json.Marshal(out)
	return http.StatusOK, data
}

// faultMessages are the messages of the entries Faults makes fail.
var faultMessages = map[string]string{
	errInternalFailure: "Internal failure (a fault injected locally).",
	errThrottling:      "Request is throttled (a fault injected locally).",
}

// callLimits is why a call is over EventBridge's limits, worded as
// AWS words it, or "".
func callLimits(entries []entry) string {
	switch {
	case entries == nil:
		return "1 validation error detected: Value null at 'entries' failed to satisfy constraint: Member must not be null"
	case len(entries) < 1:
		return "1 validation error detected: Value '[]' at 'entries' failed to satisfy constraint: Member must have length greater than or equal to 1"
	case len(entries) > maxEntries:
		return "1 validation error detected: Value at 'entries' failed to satisfy constraint: Member must have length less than or equal to 10"
	}
	size := 0
	for _, e := range entries {
		size += entrySize(e)
	}
	if size > maxSize {
		return "Total size of the entries in the request is over the limit."
	}
	return ""
}

// entrySize is an entry's size as EventBridge computes it ("Calculating
// PutEvents event entry size"): 14 bytes for Time when it is given, and
// the UTF-8 bytes of Source, DetailType, Detail and each of Resources.
func entrySize(e entry) int {
	n := len(aws.ToString(e.Source)) + len(aws.ToString(e.DetailType)) + len(aws.ToString(e.Detail))
	if e.Time != nil {
		n += 14
	}
	for _, r := range e.Resources {
		n += len(r)
	}
	return n
}

// check is why an entry fails on its own: its error code and message, or
// "". An entry for another bus fails with ResourceNotFoundException.
// EventBridge's documentation does not say what it answers then (the
// default bus is taken when EventBusName is left out); the stand-in
// serves one bus, so an entry for any other, the default included, is
// refused, with the code EventBridge gives an unknown bus elsewhere,
// rather than accepted and lost.
func (b *Bus) check(e entry) (code, msg string) {
	if bus := aws.ToString(e.EventBusName); bus != b.name && bus != b.ARN() {
		if bus == "" {
			bus = "default"
		}
		return errBusNotFound, "Event bus " + bus + " does not exist."
	}
	for _, m := range []struct {
		name  string
		value *string
	}{{"Source", e.Source}, {"DetailType", e.DetailType}, {"Detail", e.Detail}} {
		if aws.ToString(m.value) == "" {
			return errInvalidArgument, "Parameter " + m.name + " is not valid. Reason: " + m.name + " is a required argument."
		}
	}
	if d := jsontext.Value(*e.Detail); !d.IsValid() || d.Kind() != '{' {
		return errMalformedDetail, "Detail is malformed."
	}
	return "", ""
}

// newEvent is the event an accepted entry puts, as of now when it gives
// no Time.
func newEvent(e entry, now time.Time) *Event {
	at := now
	if e.Time != nil {
		sec, frac := math.Modf(*e.Time)
		at = time.Unix(int64(sec), int64(frac*1e9))
	}
	detail := jsontext.Value(*e.Detail).Clone()
	_ = detail.Compact() // valid: check said so
	resources := e.Resources
	if resources == nil {
		resources = []string{}
	}
	return &Event{
		Version: "0", ID: uuid.NewString(), DetailType: *e.DetailType, Source: *e.Source, Account: account,
		Time: at.UTC().Format("2006-01-02T15:04:05Z"), Region: region, Resources: resources, Detail: detail,
	}
}
