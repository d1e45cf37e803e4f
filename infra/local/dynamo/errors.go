package dynamo

import (
	"fmt"
	"net/http"
	"strings"
)

// apiError is an error answer: its __type, its message, and the members
// some errors carry.
type apiError struct {
	Type    string
	Message string
	// item is the item a failed condition met, when the request asked for
	// it (ReturnValuesOnConditionCheckFailure ALL_OLD).
	item item
	// reasons are a cancelled transaction's, one per action in order.
	reasons []cancellation
	// reason is the cancellation reason a transaction gives for this
	// error of one of its actions ("" when the error refuses the whole
	// transaction).
	reason string
	status int // 400 unless set
}

// cancellation is one action's reason in a cancelled transaction.
type cancellation struct {
	Code    string
	Message string
	Item    item
}

func (e *apiError) Error() string { return e.Type + ": " + e.Message }

// name is the error's type without its namespace, as the SDK reports it.
func (e *apiError) name() string { return e.Type[strings.LastIndexByte(e.Type, '#')+1:] }

const dynamoNS = "com.amazonaws.dynamodb.v20120810#"

func dynamoError(name, format string, args ...any) *apiError {
	return &apiError{Type: dynamoNS + name, Message: fmt.Sprintf(format, args...)}
}

func serializationError(format string, args ...any) *apiError {
	return &apiError{Type: "com.amazon.coral.service#SerializationException", Message: fmt.Sprintf(format, args...)}
}

func tableNotFound(name string) *apiError {
	return dynamoError("ResourceNotFoundException", "Requested resource not found: Table: %s not found", name)
}

func conditionFailed(old item, returnOld bool) *apiError {
	e := dynamoError("ConditionalCheckFailedException", "The conditional request failed")
	if returnOld {
		e.item = old
	}
	return e
}

// body is the error's answer.
func (e *apiError) body() []byte {
	b := []byte(`{"__type":`)
	b = appendString(b, e.Type)
	if e.reasons != nil {
		// DynamoDB names this member Message, with a capital.
		b = append(b, `,"Message":`...)
		b = appendString(b, e.Message)
		b = append(b, `,"CancellationReasons":[`...)
		for i, r := range e.reasons {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"Code":`...)
			b = appendString(b, r.Code)
			if r.Message != "" {
				b = append(b, `,"Message":`...)
				b = appendString(b, r.Message)
			}
			if r.Item != nil {
				b = append(b, `,"Item":`...)
				b = appendItem(b, r.Item)
			}
			b = append(b, '}')
		}
		return append(b, "]}"...)
	}
	b = append(b, `,"message":`...)
	b = appendString(b, e.Message)
	if e.item != nil {
		b = append(b, `,"Item":`...)
		b = appendItem(b, e.item)
	}
	return append(b, '}')
}

func (e *apiError) statusCode() int {
	if e.status != 0 {
		return e.status
	}
	return http.StatusBadRequest
}
