// Package streamevent holds the shapes Lambda gives a DynamoDB stream's
// records, shared by the local stack's event source mapping
// (infra/local/streampoll) and the replay of failed batches
// (infra/cmd/replayevents), so that both hand the session events
// function the same event: a Streams API record as an element of the
// event's Records (Of, Event), the function's batchItemFailures read by
// Lambda's rules (ItemFailures), and the on-failure destination's record
// of a batch given up on (Failure). It links nothing of the local stack.
package streamevent

import (
	"encoding/base64"
	jsonv2 "encoding/json/v2"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
)

// Record is a stream record as Lambda's event holds it.
type Record struct {
	Seq string    // its sequence number
	At  time.Time // its ApproximateCreationDateTime
	// JSON is the record as an element of the event's Records: a
	// mapping's filters match it, and the event is made of it.
	JSON map[string]any
}

// Of is a record of the Streams API as an element of the Records of
// Lambda's DynamoDB event: the members of aws-lambda-go's
// events.DynamoDBEventRecord, userIdentity's lowercased, and
// eventSourceARN the stream's.
func Of(r types.Record, streamARN string) (Record, error) {
	d := r.Dynamodb
	if d == nil || d.SequenceNumber == nil || d.ApproximateCreationDateTime == nil {
		return Record{}, fmt.Errorf("a stream record without its dynamodb member, sequence number or creation time")
	}
	change := map[string]any{
		"ApproximateCreationDateTime": float64(d.ApproximateCreationDateTime.UnixMilli()) / 1000,
		"Keys":                        attributes(d.Keys),
		"SequenceNumber":              *d.SequenceNumber,
		"SizeBytes":                   deref(d.SizeBytes),
		"StreamViewType":              string(d.StreamViewType),
	}
	if d.NewImage != nil {
		change["NewImage"] = attributes(d.NewImage)
	}
	if d.OldImage != nil {
		change["OldImage"] = attributes(d.OldImage)
	}
	m := map[string]any{
		"awsRegion": deref(r.AwsRegion), "dynamodb": change, "eventID": deref(r.EventID),
		"eventName": string(r.EventName), "eventSource": deref(r.EventSource),
		"eventVersion": deref(r.EventVersion), "eventSourceARN": streamARN,
	}
	if u := r.UserIdentity; u != nil {
		m["userIdentity"] = map[string]any{"principalId": deref(u.PrincipalId), "type": deref(u.Type)}
	}
	return Record{Seq: *d.SequenceNumber, At: *d.ApproximateCreationDateTime, JSON: m}, nil
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// attributes is an item (or its keys) in the event's attribute-value
// form: {"name": {"S": "…"}, …}.
func attributes(item map[string]types.AttributeValue) map[string]any {
	m := make(map[string]any, len(item))
	for name, v := range item {
		m[name] = attribute(v)
	}
	return m
}

// attribute is one attribute value in the event's form: binary values
// in standard base64, sets and lists as arrays, NULL as true.
func attribute(v types.AttributeValue) map[string]any {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return map[string]any{"S": v.Value}
	case *types.AttributeValueMemberN:
		return map[string]any{"N": v.Value}
	case *types.AttributeValueMemberB:
		return map[string]any{"B": base64.StdEncoding.EncodeToString(v.Value)}
	case *types.AttributeValueMemberBOOL:
		return map[string]any{"BOOL": v.Value}
	case *types.AttributeValueMemberNULL:
		return map[string]any{"NULL": true}
	case *types.AttributeValueMemberM:
		return map[string]any{"M": attributes(v.Value)}
	case *types.AttributeValueMemberL:
		l := make([]any, len(v.Value))
		for i, x := range v.Value {
			l[i] = attribute(x)
		}
		return map[string]any{"L": l}
	case *types.AttributeValueMemberSS:
		return map[string]any{"SS": members(v.Value, func(s string) string { return s })}
	case *types.AttributeValueMemberNS:
		return map[string]any{"NS": members(v.Value, func(s string) string { return s })}
	case *types.AttributeValueMemberBS:
		return map[string]any{"BS": members(v.Value, base64.StdEncoding.EncodeToString)}
	}
	// An unknown union member: what the SDK could not read, kept as
	// nothing rather than invented.
	return map[string]any{}
}

// members is a set's members as the event's array (of []any, so that the
// filters match its members as any array's).
func members[T any](set []T, f func(T) string) []any {
	l := make([]any, len(set))
	for i, x := range set {
		l[i] = f(x)
	}
	return l
}

// Event is the invocation's payload: {"Records": [...]}, as Lambda sends
// it for a DynamoDB stream.
func Event(batch []Record) ([]byte, error) {
	recs := make([]any, len(batch))
	for i, r := range batch {
		recs[i] = r.JSON
	}
	return jsonv2.Marshal(map[string]any{"Records": recs}, jsonv2.Deterministic(true))
}
