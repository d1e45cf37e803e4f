package dynamo_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cloud-agent/control-plane/infra/local/dynamo"
	"github.com/cloud-agent/control-plane/infra/local/motoserver"
)

// TestFidelity holds DynamoDB's documented validations and answers, one
// case each, for the operations the product uses. Every request is sent
// raw over HTTP, so that what the SDK would refuse client-side still
// reaches the endpoint. The table runs on the embedded endpoint and, when
// moto_server is installed, on moto. DynamoDB's documentation is the truth:
// where moto differs, the case says how (its moto note), and on moto the
// test checks that it still differs, so that the note stays true.
//
// The names this file declares at the package's level begin with
// "fidelity" (embeddedURL aside), so that they leave the package's other
// tests theirs; the request helpers are local to fidelityCases.
func TestFidelity(t *testing.T) {
	cases := fidelityCases()
	seen := map[string]bool{}
	for _, c := range cases {
		if seen[c.name] {
			t.Fatalf("two cases are named %s", c.name)
		}
		seen[c.name] = true
	}
	t.Run("embedded", func(t *testing.T) {
		runFidelity(t, fidelityEndpoint{url: embeddedURL(t)}, cases)
	})
	t.Run("moto", func(t *testing.T) {
		runFidelity(t, fidelityEndpoint{url: motoserver.URL(t), moto: true}, cases)
	})
}

// embeddedURL starts the embedded DynamoDB endpoint for the test and
// returns its URL: the one place that chooses the endpoint under test.
func embeddedURL(t *testing.T) string {
	t.Helper()
	ep, err := dynamo.Start("127.0.0.1:0")
	if err != nil {
		t.Fatalf("embedded DynamoDB endpoint: %v", err)
	}
	t.Cleanup(func() { _ = ep.Close(context.Background()) })
	return ep.URL
}

// fidelityCase is one documented validation or answer of DynamoDB.
type fidelityCase struct {
	name string
	// doc is the documentation the case holds: the page, and a short quote.
	doc string
	// ttl has the case's table's time to live enabled on expiresAt first.
	ttl bool
	// setup runs first, in order; each request must succeed.
	setup []fidelityCall
	// call is the request under test, and want DynamoDB's documented answer.
	call fidelityCall
	want fidelityAnswer
	// then are requests sent after call, each with its documented answer
	// (what call left in the table).
	then []fidelityStep
	// moto, when set, says how moto differs from the documented answer;
	// on moto the case then checks that it still does, as noted.
	moto *fidelityMoto
}

// fidelityMoto is how moto differs from DynamoDB's documented answer: the
// note, and the answer moto gives instead (to call, and to the then steps
// where they differ).
type fidelityMoto struct {
	note string
	want fidelityAnswer
	then []fidelityAnswer
}

// fidelityCall is a request: the operation (X-Amz-Target
// DynamoDB_20120810.<op>) and its JSON body, where {{T}} stands for the
// case's table's name.
type fidelityCall struct {
	op, body string
}

// fidelityStep is a request and its answer.
type fidelityStep struct {
	call fidelityCall
	want fidelityAnswer
}

// fidelityAnswer is what DynamoDB answers: success (HTTP 200) or, when err
// is set, the error of that type (the part of __type after '#') with HTTP
// 400; and the members the answer must hold.
type fidelityAnswer struct {
	err string
	// status, when set, is the only thing checked: an answer's HTTP status
	// (for a moto answer that is no DynamoDB answer, HTTP 500).
	status int
	// msg, when set, is a part of the error's message (only where the
	// message is well known).
	msg    string
	checks []fidelityCheck
}

// fidelityCheck is a member of an answer, named by a path of member names
// and list indexes separated by dots ("Items.0.SK.S").
type fidelityCheck struct {
	path string
	kind string // "has", "lacks", "eq" or "len"
	want string // for eq, a JSON value ({{T}} stands for the table name)
	n    int    // for len, the number of members or elements
}

// fidelityTable is the CreateTable of a case's table: the project's key
// schema and indexes.
const fidelityTable = `{"TableName":"{{T}}","BillingMode":"PAY_PER_REQUEST",
	"AttributeDefinitions":[
		{"AttributeName":"PK","AttributeType":"S"},{"AttributeName":"SK","AttributeType":"S"},
		{"AttributeName":"ownerUserId","AttributeType":"S"},{"AttributeName":"listedAt","AttributeType":"S"},
		{"AttributeName":"dueShard","AttributeType":"S"},{"AttributeName":"nextRunAt","AttributeType":"S"}],
	"KeySchema":[{"AttributeName":"PK","KeyType":"HASH"},{"AttributeName":"SK","KeyType":"RANGE"}],
	"GlobalSecondaryIndexes":[
		{"IndexName":"TriggersByUser","Projection":{"ProjectionType":"ALL"},
		 "KeySchema":[{"AttributeName":"ownerUserId","KeyType":"HASH"},{"AttributeName":"listedAt","KeyType":"RANGE"}]},
		{"IndexName":"DueTriggersAll","Projection":{"ProjectionType":"ALL"},
		 "KeySchema":[{"AttributeName":"dueShard","KeyType":"HASH"},{"AttributeName":"nextRunAt","KeyType":"RANGE"}]}]}`

// fidelityTTL enables the time to live of a case's table on expiresAt.
var fidelityTTL = fidelityCall{"UpdateTimeToLive", `{"TableName":"{{T}}","TimeToLiveSpecification":{"AttributeName":"expiresAt","Enabled":true}}`}

func fidelityCases() []fidelityCase {
	// Answers and their members.
	const (
		validation  = "ValidationException"
		conditional = "ConditionalCheckFailedException"
		canceled    = "TransactionCanceledException"
		notFound    = "ResourceNotFoundException"
		inUse       = "ResourceInUseException"
	)
	has := func(path string) fidelityCheck { return fidelityCheck{path: path, kind: "has"} }
	lacks := func(path string) fidelityCheck { return fidelityCheck{path: path, kind: "lacks"} }
	eq := func(path, jsonValue string) fidelityCheck {
		return fidelityCheck{path: path, kind: "eq", want: jsonValue}
	}
	length := func(path string, n int) fidelityCheck { return fidelityCheck{path: path, kind: "len", n: n} }
	ok := func(checks ...fidelityCheck) fidelityAnswer { return fidelityAnswer{checks: checks} }
	fails := func(typ string, checks ...fidelityCheck) fidelityAnswer {
		return fidelityAnswer{err: typ, checks: checks}
	}
	// How moto differs: it accepts the request, or it fails with HTTP 500.
	motoAccepts := func(note string) *fidelityMoto { return &fidelityMoto{note: note, want: ok()} }
	motoBreaks := func(note string) *fidelityMoto {
		return &fidelityMoto{note: note, want: fidelityAnswer{status: http.StatusInternalServerError}}
	}

	// Requests. Keys and items are JSON; the case's table is {{T}}.
	req := func(op, body string) fidelityCall { return fidelityCall{op, body} }
	put := func(item string) fidelityCall {
		return req("PutItem", `{"TableName":"{{T}}","Item":`+item+`}`)
	}
	get := func(key string) fidelityCall {
		return req("GetItem", `{"TableName":"{{T}}","Key":`+key+`}`)
	}
	// item is an item of partition "p" with sort key sk and more
	// attributes (JSON members, without braces).
	item := func(sk string, more string) string {
		if more != "" {
			more = "," + more
		}
		return `{"PK":{"S":"p"},"SK":{"S":"` + sk + `"}` + more + `}`
	}
	// key is the key of the item of partition "p" with sort key sk.
	key := func(sk string) string { return item(sk, "") }
	// abc puts the items a, b and c of partition "p", with v "1", "2", "3".
	abc := func() []fidelityCall {
		return []fidelityCall{
			put(item("a", `"v":{"S":"1"}`)),
			put(item("b", `"v":{"S":"2"}`)),
			put(item("c", `"v":{"S":"3"}`)),
		}
	}
	// update is an UpdateItem of the item with sort key sk; rest are the
	// request's other members (JSON, without braces).
	update := func(sk, rest string) fidelityCall {
		return req("UpdateItem", `{"TableName":"{{T}}","Key":`+key(sk)+`,`+rest+`}`)
	}
	// query is a Query of the table; rest are the request's other members.
	query := func(rest string) fidelityCall {
		return req("Query", `{"TableName":"{{T}}",`+rest+`}`)
	}
	// scan is a Scan of the table; rest are the request's other members,
	// each after a comma.
	scan := func(rest string) fidelityCall {
		return req("Scan", `{"TableName":"{{T}}"`+rest+`}`)
	}
	// bigItem is an item of exactly size bytes by DynamoDB's measure, the
	// UTF-8 lengths of names and values: "PK"+"p", "SK"+"s", "d"+its value.
	bigItem := func(size int) string {
		return `{"PK":{"S":"p"},"SK":{"S":"s"},"d":{"S":"` + strings.Repeat("x", size-7) + `"}}`
	}
	// nested is a value of depth maps nested in one another around a string.
	nested := func(depth int) string {
		return strings.Repeat(`{"M":{"m":`, depth) + `{"S":"x"}` + strings.Repeat(`}}`, depth)
	}
	// transactPuts is a TransactWriteItems of n puts of distinct items.
	transactPuts := func(n int) fidelityCall {
		actions := make([]string, n)
		for i := range actions {
			actions[i] = `{"Put":{"TableName":"{{T}}","Item":` + key(fmt.Sprint(i)) + `}}`
		}
		return req("TransactWriteItems", `{"TransactItems":[`+strings.Join(actions, ",")+`]}`)
	}
	// batchPuts is a BatchWriteItem of n puts of distinct items.
	batchPuts := func(n int) fidelityCall {
		reqs := make([]string, n)
		for i := range reqs {
			reqs[i] = `{"PutRequest":{"Item":` + key(fmt.Sprint(i)) + `}}`
		}
		return req("BatchWriteItem", `{"RequestItems":{"{{T}}":[`+strings.Join(reqs, ",")+`]}}`)
	}
	// inCondition is a PutItem whose condition holds v IN (n values).
	inCondition := func(n int) fidelityCall {
		names := make([]string, n)
		values := make([]string, n)
		for i := range names {
			names[i] = fmt.Sprintf(":v%d", i)
			values[i] = fmt.Sprintf(`":v%d":{"S":"%d"}`, i, i)
		}
		return req("PutItem", `{"TableName":"{{T}}","Item":`+key("a")+
			`,"ConditionExpression":"attribute_not_exists(v) OR v IN (`+strings.Join(names, ",")+`)"`+
			`,"ExpressionAttributeValues":{`+strings.Join(values, ",")+`}}`)
	}
	// paddedCondition is a PutItem whose condition expression is n bytes
	// long.
	paddedCondition := func(n int) fidelityCall {
		cond := "attribute_not_exists(PK)"
		cond += strings.Repeat(" ", n-len(cond))
		return req("PutItem", `{"TableName":"{{T}}","Item":`+key("a")+`,"ConditionExpression":"`+cond+`"}`)
	}
	// tokenPut is a TransactWriteItems with the client token tok that puts
	// the item of sort key sk, unless it exists.
	tokenPut := func(tok, sk string) string {
		return `{"ClientRequestToken":"` + tok + `","TransactItems":[{"Put":{"TableName":"{{T}}","Item":` + key(sk) + `,"ConditionExpression":"attribute_not_exists(PK)"}}]}`
	}
	// otherTable creates the table {{T}}-<suffix> with the hash key K of
	// type typ, and no index.
	otherTable := func(suffix, typ string) fidelityCall {
		return req("CreateTable", `{"TableName":"{{T}}-`+suffix+`","BillingMode":"PAY_PER_REQUEST",
			"AttributeDefinitions":[{"AttributeName":"K","AttributeType":"`+typ+`"}],
			"KeySchema":[{"AttributeName":"K","KeyType":"HASH"}]}`)
	}

	// The documentation the cases hold.
	const (
		quotaValues  = `Service quotas, Attribute values: "Empty String and Binary attribute values are allowed, if the attribute is not used as a key attribute for a table or index. ... An attribute value cannot be an an empty Set"`
		putItemKey   = `PutItem, Item: "You must provide all of the attributes for the primary key ... If you specify any attributes that are part of an index key, then the data types for those attributes must match those of the schema in the table's attribute definition."`
		keyMember    = `GetItem/DeleteItem/UpdateItem, Key: "For the primary key, you must provide all of the attributes ... For a composite primary key, you must provide values for both the partition key and the sort key."`
		union        = `AttributeValue: "This data type is a UNION, so only one of the following members can be specified when used or returned."`
		numbers      = `Supported data types, Number: "Numbers can have up to 38 digits of precision. Exceeding this results in an exception ... Positive range: 1E-130 to 9.9999999999999999999999999999999999999E+125 ... Leading and trailing zeroes are trimmed."`
		setsUnique   = `Supported data types, Sets: "Each value within a set must be unique."`
		itemSize     = `Service quotas, Item size: "The maximum item size in DynamoDB is 400 KB, which includes both attribute name binary length (UTF-8 length) and attribute value lengths"`
		updateSyntax = `Update expressions: "update-expression ::= [ SET action [, action] ... ] [ REMOVE action [, action] ...] [ ADD action [, action] ... ] [ DELETE action [, action] ...]"`
		overlap      = `Update expressions / UpdateItem: an update expression's document paths may not overlap (ValidationException "Two document paths overlap with each other")`
		clientToken  = `TransactWriteItems, ClientRequestToken: "Providing a ClientRequestToken makes the call to TransactWriteItems idempotent, meaning that multiple identical calls have the same effect as one single call. ... A client request token is valid for 10 minutes after the first request that uses it is completed ... If you submit a request with the same client token but a change in other parameters within the 10-minute idempotency window, DynamoDB returns an IdempotentParameterMismatch exception."`
		keyUpdate    = `UpdateItem, UpdateExpression: key attributes cannot be updated ("Cannot update attribute ... This attribute is part of the key")`
		names        = `Expression attribute names: "An expression attribute name is a placeholder that you use in an Amazon DynamoDB expression as an alternative to an actual attribute name. An expression attribute name must begin with a pound sign (#)"`
		values       = `Expression attribute values: "An expression attribute value must begin with a colon (:) and be followed by one or more alphanumeric characters."`
		unused       = `Expression attribute names/values: every name and value given must be used by an expression of the request ("Value provided in ExpressionAttributeNames/ExpressionAttributeValues unused in expressions")`
		reserved     = `Reserved words: "If you need to write an expression containing an attribute name that conflicts with a DynamoDB reserved word, you can define an expression attribute name to use in the place of the reserved word." (STATUS is reserved)`
		condFailed   = `PutItem/UpdateItem/DeleteItem, Errors: "ConditionalCheckFailedException: A condition specified in the operation could not be evaluated." ReturnValuesOnConditionCheckFailure: "An optional parameter that returns the item attributes for an operation that failed a condition check." ConditionalCheckFailedException, Item: "Item which caused the ConditionalCheckFailedException."`
		putReturn    = `PutItem, ReturnValues: "NONE - If ReturnValues is not specified, or if its value is NONE, then nothing is returned. ALL_OLD - If PutItem overwrote an attribute name-value pair, then the content of the old item is returned. ... The ReturnValues parameter is used by several DynamoDB operations; however, PutItem does not recognize any values other than NONE or ALL_OLD."`
		updateReturn = `UpdateItem, ReturnValues: "NONE ... ALL_OLD - Returns all of the attributes of the item, as they appeared before the UpdateItem operation. UPDATED_OLD - Returns only the updated attributes, as they appeared before the UpdateItem operation. ALL_NEW - Returns all of the attributes of the item, as they appear after the UpdateItem operation. UPDATED_NEW - Returns only the updated attributes, as they appear after the UpdateItem operation."`
		deleteReturn = `DeleteItem, ReturnValues: "ALL_OLD - The content of the old item is returned. ... The ReturnValues parameter is used by several DynamoDB operations; however, DeleteItem does not recognize any values other than NONE or ALL_OLD."`
		keyCondition = `Query, KeyConditionExpression: "The condition must perform an equality test on a single partition key value. The condition can optionally perform one of several comparison tests on a single sort key value ... a = b, a < b, a <= b, a > b, a >= b, a BETWEEN b AND c, begins_with (a, substr)"`
		queryLimit   = `Query/Scan, Limit: "The maximum number of items to evaluate (not necessarily the number of matching items) ... Valid Range: Minimum value of 1."`
		lastKey      = `Query/Scan, LastEvaluatedKey: "The primary key of the item where the operation stopped, inclusive of the previous result set ... If LastEvaluatedKey is empty, then the "last page" of results has been processed and there is no more data to be retrieved."`
		segments     = `Scan, Segment: "If you provide Segment, you must also provide TotalSegments ... The value for Segment must be greater than or equal to 0, and less than the value provided for TotalSegments." TotalSegments: "Valid Range: Minimum value of 1. Maximum value of 1000000."`
		transact     = `TransactWriteItems, TransactItems: "Array Members: Minimum number of 1 item. Maximum number of 100 items." Service quotas: "No two actions in a transaction can work against the same item in the same table."`
		cancellation = `TransactionCanceledException: "Transaction cancellation reasons are ordered in the order of requested items, if an item has no error it will have None code and Null message. Cancellation reason codes and possible error messages: No Errors: Code: None, Message: null. Conditional Check Failed: Code: ConditionalCheckFailed, Message: The conditional request failed." Put/Update/Delete/ConditionCheck, ReturnValuesOnConditionCheckFailure: "Use ReturnValuesOnConditionCheckFailure to get the item attributes if the ... condition fails." CancellationReason, Item: "Item in the request which caused the transaction to get cancelled."`
		batch        = `BatchWriteItem: "The individual PutItem and DeleteItem operations specified in BatchWriteItem are atomic ... DynamoDB rejects the entire batch write operation: ... You try to perform multiple operations on the same item in the same BatchWriteItem request ... There are more than 25 requests in the batch." RequestItems: "Map Entries: Maximum number of 25 items."`
		tableNames   = `Naming rules: "Table names and index names must be between 3 and 255 characters long, and can contain only the following characters: a-z A-Z 0-9 _ - ."`
		missingTable = `Errors: "ResourceNotFoundException: The operation tried to access a nonexistent table or index. The resource might not be specified correctly, or its status might not be ACTIVE."`
		listLimit    = `ListTables, Limit: "A maximum number of table names to return. If this parameter is not specified, the limit is 100. Valid Range: Minimum value of 1. Maximum value of 100."`
		ttlQuota     = `Service quotas, UpdateTimeToLive: "This change can take up to one hour to fully process. Any additional UpdateTimeToLive calls for the same table during this one hour duration result in a ValidationException."`
		errorTypes   = `Error handling, the low-level API: an error answer is HTTP 400 with "__type" naming the exception, e.g. "com.amazon.coral.service#UnknownOperationException", SerializationException for a body that is not the operation's JSON, ValidationException for a parameter that is missing or out of range`
	)
	// Start keys, and the message for an empty string as a key attribute's
	// value (without what precedes and follows it).
	const (
		startKey      = `Query, ExclusiveStartKey: "The primary key of the first item that this operation will evaluate. Use the value that was returned for LastEvaluatedKey in the previous operation." (a key the request's key condition does not keep is refused: "The provided starting key does not match the range key predicate" for its sort key, "The provided starting key is outside query boundaries based on provided conditions" for another partition)`
		indexStartKey = `(on an index LastEvaluatedKey holds the table's primary key attributes and the index's key attributes, and so must a start key)`
		emptyKey      = "The AttributeValue for a key attribute cannot contain an empty string value."
	)
	k2048 := strings.Repeat("k", 2048)
	s1024 := strings.Repeat("s", 1024)
	return []fidelityCase{
		// --- Key attribute values ---

		// An empty string is refused in the partition key.
		{name: "put_empty_string_partition_key", doc: quotaValues,
			call: put(`{"PK":{"S":""},"SK":{"S":"a"}}`), want: fails(validation)},
		// An empty string is refused in the sort key.
		{name: "put_empty_string_sort_key", doc: quotaValues,
			call: put(`{"PK":{"S":"p"},"SK":{"S":""}}`), want: fails(validation)},
		// An empty binary is refused in a binary key attribute.
		{name: "put_empty_binary_key", moto: motoAccepts("moto accepts an empty binary in a binary key attribute"),
			doc:   quotaValues,
			setup: []fidelityCall{otherTable("b", "B")},
			call:  req("PutItem", `{"TableName":"{{T}}-b","Item":{"K":{"B":""}}}`), want: fails(validation)},
		// An empty string is refused in an index's key attribute.
		{name: "put_empty_string_index_key", doc: quotaValues,
			call: put(item("a", `"ownerUserId":{"S":""},"listedAt":{"S":"1"}`)), want: fails(validation)},
		// A key attribute of another type than its definition is refused.
		{name: "put_key_wrong_type", doc: putItemKey,
			call: put(`{"PK":{"N":"1"},"SK":{"S":"a"}}`), want: fails(validation)},
		// An index key attribute of another type than its definition is refused.
		{name: "put_index_key_wrong_type", moto: motoAccepts("moto accepts an index key attribute of another type than its definition"),
			doc:  putItemKey,
			call: put(item("a", `"ownerUserId":{"N":"1"},"listedAt":{"S":"1"}`)), want: fails(validation)},
		// An item without its sort key is refused.
		{name: "put_missing_sort_key", doc: putItemKey,
			call: put(`{"PK":{"S":"p"},"v":{"S":"x"}}`), want: fails(validation)},
		// An item without its partition key is refused.
		{name: "put_missing_partition_key", doc: putItemKey,
			call: put(`{"SK":{"S":"a"},"v":{"S":"x"}}`), want: fails(validation)},
		// A Key without the sort key is refused.
		{name: "get_key_missing_sort_key", doc: keyMember,
			call: get(`{"PK":{"S":"p"}}`), want: fails(validation)},
		// A Key with an attribute besides the key's is refused (GetItem).
		{name: "get_key_extra_attribute", doc: keyMember,
			call: get(item("a", `"v":{"S":"x"}`)), want: fails(validation)},
		// A Key with an attribute besides the key's is refused (DeleteItem).
		{name: "delete_key_extra_attribute", doc: keyMember,
			call: req("DeleteItem", `{"TableName":"{{T}}","Key":`+item("a", `"v":{"S":"x"}`)+`}`), want: fails(validation)},
		// A Key with an attribute besides the key's is refused (UpdateItem).
		{name: "update_key_extra_attribute", doc: keyMember,
			call: req("UpdateItem", `{"TableName":"{{T}}","Key":`+item("a", `"v":{"S":"x"}`)+`,"UpdateExpression":"SET w = :w","ExpressionAttributeValues":{":w":{"S":"y"}}}`),
			want: fails(validation)},
		// A Key attribute of another type than its definition is refused.
		{name: "get_key_wrong_type", moto: motoAccepts("moto accepts a Key attribute of another type than its definition"),
			doc:  keyMember,
			call: get(`{"PK":{"S":"p"},"SK":{"N":"1"}}`), want: fails(validation)},
		// An empty string in a Key is refused.
		{name: "get_key_empty_string", doc: quotaValues,
			call: get(`{"PK":{"S":""},"SK":{"S":"a"}}`), want: fails(validation)},
		// An empty string in a Key is refused (DeleteItem).
		{name: "delete_key_empty_string", moto: motoAccepts("moto accepts an empty string in a DeleteItem key"),
			doc:  quotaValues,
			call: req("DeleteItem", `{"TableName":"{{T}}","Key":{"PK":{"S":"p"},"SK":{"S":""}}}`),
			want: fidelityAnswer{err: validation, msg: emptyKey + " Key: SK"}},
		// An empty string in a Key is refused (UpdateItem).
		{name: "update_key_empty_string", moto: motoAccepts("moto accepts an empty string in an UpdateItem key"),
			doc:  quotaValues,
			call: req("UpdateItem", `{"TableName":"{{T}}","Key":{"PK":{"S":""},"SK":{"S":"a"}},"UpdateExpression":"SET v = :v","ExpressionAttributeValues":{":v":{"S":"x"}}}`),
			want: fidelityAnswer{err: validation, msg: emptyKey + " Key: PK"}},
		// An update that leaves an index key attribute empty is refused, in
		// the words DynamoDB has for an update.
		{name: "update_sets_index_key_empty", doc: quotaValues,
			setup: []fidelityCall{put(item("a", `"ownerUserId":{"S":"u"},"listedAt":{"S":"1"}`))},
			call:  update("a", `"UpdateExpression":"SET ownerUserId = :e","ExpressionAttributeValues":{":e":{"S":""}}`),
			want:  fidelityAnswer{err: validation, msg: "The update expression attempted to update a secondary index key to a value that is not supported. " + emptyKey},
			then:  []fidelityStep{{get(key("a")), ok(eq("Item.ownerUserId.S", `"u"`))}}},
		// An empty string in a Key is refused (BatchGetItem).
		{name: "batch_get_key_empty_string", moto: motoAccepts("moto accepts an empty string in a BatchGetItem key"),
			doc:  quotaValues,
			call: req("BatchGetItem", `{"RequestItems":{"{{T}}":{"Keys":[{"PK":{"S":""},"SK":{"S":"a"}}]}}}`),
			want: fidelityAnswer{err: validation, msg: emptyKey + " Key: PK"}},
		// An empty string in a DeleteRequest's key is refused (BatchWriteItem).
		{name: "batch_delete_key_empty_string", moto: motoAccepts("moto accepts an empty string in a DeleteRequest key"),
			doc:  quotaValues,
			call: req("BatchWriteItem", `{"RequestItems":{"{{T}}":[{"DeleteRequest":{"Key":{"PK":{"S":"p"},"SK":{"S":""}}}}]}}`),
			want: fidelityAnswer{err: validation, msg: emptyKey + " Key: SK"}},
		// An empty string in a PutRequest's index key attribute is refused (BatchWriteItem).
		{name: "batch_put_empty_string_index_key", doc: quotaValues,
			call: req("BatchWriteItem", `{"RequestItems":{"{{T}}":[{"PutRequest":{"Item":`+item("a", `"ownerUserId":{"S":""}`)+`}}]}}`),
			want: fidelityAnswer{err: validation, msg: "A value specified for a secondary index key is not supported. " + emptyKey + " IndexName: TriggersByUser, IndexKey: ownerUserId"}},
		// An empty string in a Get's key is refused (TransactGetItems).
		{name: "transact_get_key_empty_string", moto: motoAccepts("moto accepts an empty string in a TransactGetItems key"),
			doc:  quotaValues,
			call: req("TransactGetItems", `{"TransactItems":[{"Get":{"TableName":"{{T}}","Key":{"PK":{"S":""},"SK":{"S":"a"}}}}]}`),
			want: fidelityAnswer{err: validation, msg: emptyKey + " Key: PK"}},
		// An empty string in an Update's key refuses the whole transaction, not an action of it.
		{name: "transact_update_key_empty_string", doc: quotaValues,
			call: req("TransactWriteItems", `{"TransactItems":[{"Update":{"TableName":"{{T}}","Key":{"PK":{"S":""},"SK":{"S":"a"}},"UpdateExpression":"SET v = :v","ExpressionAttributeValues":{":v":{"S":"x"}}}}]}`),
			want: fidelityAnswer{err: validation, msg: emptyKey + " Key: PK"}},
		// An Update that leaves an index key attribute empty refuses the
		// whole transaction, where other refusals of its result cancel it.
		{name: "transact_update_sets_index_key_empty", doc: quotaValues,
			setup: []fidelityCall{put(item("a", `"ownerUserId":{"S":"u"},"listedAt":{"S":"1"}`))},
			call: req("TransactWriteItems", `{"TransactItems":[{"Update":{"TableName":"{{T}}","Key":`+key("a")+
				`,"UpdateExpression":"SET ownerUserId = :e","ExpressionAttributeValues":{":e":{"S":""}}}}]}`),
			want: fidelityAnswer{err: validation, msg: "The update expression attempted to update a secondary index key to a value that is not supported. " + emptyKey}},
		// An empty string in a Delete's key is refused (TransactWriteItems).
		{name: "transact_delete_key_empty_string", moto: motoAccepts("moto accepts an empty string in a transaction's Delete key"),
			doc:  quotaValues,
			call: req("TransactWriteItems", `{"TransactItems":[{"Delete":{"TableName":"{{T}}","Key":{"PK":{"S":"p"},"SK":{"S":""}}}}]}`),
			want: fidelityAnswer{err: validation, msg: emptyKey + " Key: SK"}},
		// An empty string in a ConditionCheck's key is refused (TransactWriteItems).
		{name: "transact_check_key_empty_string", moto: &fidelityMoto{note: "moto judges a ConditionCheck of an empty string key as a failed condition", want: fails(canceled)},
			doc:  quotaValues,
			call: req("TransactWriteItems", `{"TransactItems":[{"ConditionCheck":{"TableName":"{{T}}","Key":{"PK":{"S":"p"},"SK":{"S":""}},"ConditionExpression":"attribute_exists(PK)"}}]}`),
			want: fidelityAnswer{err: validation, msg: emptyKey + " Key: SK"}},
		// A partition key value of 2048 bytes is accepted.
		{name: "partition_key_2048_bytes", doc: `Service quotas, Partition key length: "The minimum length of a partition key value is 1 byte. The maximum length is 2048 bytes."`,
			call: put(`{"PK":{"S":"` + k2048 + `"},"SK":{"S":"a"}}`), want: ok()},
		// A partition key value of 2049 bytes is refused.
		{name: "partition_key_over_2048_bytes", doc: `Service quotas, Partition key length: "The maximum length is 2048 bytes."`,
			call: put(`{"PK":{"S":"` + k2048 + `k"},"SK":{"S":"a"}}`), want: fails(validation)},
		// A sort key value of 1024 bytes is accepted.
		{name: "sort_key_1024_bytes", doc: `Service quotas, Sort key length: "The minimum length of a sort key value is 1 byte. The maximum length is 1024 bytes."`,
			call: put(`{"PK":{"S":"p"},"SK":{"S":"` + s1024 + `"}}`), want: ok()},
		// A sort key value of 1025 bytes is refused.
		{name: "sort_key_over_1024_bytes", doc: `Service quotas, Sort key length: "The maximum length is 1024 bytes."`,
			call: put(`{"PK":{"S":"p"},"SK":{"S":"` + s1024 + `s"}}`), want: fails(validation)},
		// A partition key's length is its UTF-8 bytes: 1025 two-byte characters are over 2048 bytes.
		{name: "partition_key_length_in_utf8_bytes", doc: `Service quotas, String: "DynamoDB determines the length of a String using its UTF-8 bytes."`,
			call: put(`{"PK":{"S":"` + strings.Repeat("é", 1025) + `"},"SK":{"S":"a"}}`), want: fails(validation)},

		// --- Item size ---

		// An item of exactly 400 KB is accepted.
		{name: "item_exactly_400kb", moto: &fidelityMoto{note: "moto refuses items over 405,000 bytes, its own bound below 400 KB (409,600 bytes)", want: fails(validation)},
			doc:  itemSize,
			call: put(bigItem(400 * 1024)), want: ok()},
		// An item of 400 KB and one byte is refused.
		{name: "item_over_400kb", doc: itemSize,
			call: put(bigItem(400*1024 + 1)), want: fails(validation)},
		// An update that makes an item larger than 400 KB (400,000 bytes and
		// 9,701 more) is refused, and leaves the item.
		{name: "update_over_400kb", doc: itemSize,
			setup: []fidelityCall{put(bigItem(400000))},
			call:  req("UpdateItem", `{"TableName":"{{T}}","Key":{"PK":{"S":"p"},"SK":{"S":"s"}},"UpdateExpression":"SET e = :e","ExpressionAttributeValues":{":e":{"S":"`+strings.Repeat("x", 9700)+`"}}}`),
			want:  fails(validation),
			then:  []fidelityStep{{get(`{"PK":{"S":"p"},"SK":{"S":"s"}}`), ok(has("Item.d"), lacks("Item.e"))}}},

		// --- Attribute names ---

		// An empty attribute name is refused.
		{name: "attribute_name_empty", moto: motoAccepts("moto accepts an empty attribute name"),
			doc:  `Naming rules: "Attribute names must be at least one character long"`,
			call: put(item("a", `"":{"S":"x"}`)), want: fails(validation)},
		// An attribute name longer than 64 KB is refused.
		{name: "attribute_name_over_64kb", moto: motoAccepts("moto accepts an attribute name longer than 64 KB"),
			doc:  `Service quotas, Attribute names: "an attribute name must be at least one character long, but no greater than 64 KB long."`,
			call: put(item("a", `"`+strings.Repeat("n", 64*1024+1)+`":{"S":"x"}`)), want: fails(validation)},
		// An index key attribute name longer than 255 bytes is refused.
		{name: "index_key_name_over_255_bytes", moto: motoAccepts("moto accepts an index key attribute name longer than 255 bytes"),
			doc: `Service quotas, Attribute names: "These attribute names must be no greater than 255 characters long: Secondary index partition key names. Secondary index sort key names."`,
			call: req("CreateTable", `{"TableName":"{{T}}-n","BillingMode":"PAY_PER_REQUEST",
				"AttributeDefinitions":[{"AttributeName":"K","AttributeType":"S"},{"AttributeName":"`+strings.Repeat("g", 256)+`","AttributeType":"S"}],
				"KeySchema":[{"AttributeName":"K","KeyType":"HASH"}],
				"GlobalSecondaryIndexes":[{"IndexName":"G1","Projection":{"ProjectionType":"ALL"},"KeySchema":[{"AttributeName":"`+strings.Repeat("g", 256)+`","KeyType":"HASH"}]}]}`),
			want: fails(validation)},

		// --- Attribute values ---

		// An empty string in a non-key attribute is kept.
		{name: "empty_string_non_key", doc: quotaValues,
			call: put(item("a", `"s":{"S":""}`)), want: ok(),
			then: []fidelityStep{{get(key("a")), ok(eq("Item.s.S", `""`))}}},
		// An empty binary in a non-key attribute is kept.
		{name: "empty_binary_non_key", doc: quotaValues,
			call: put(item("a", `"b":{"B":""}`)), want: ok(),
			then: []fidelityStep{{get(key("a")), ok(eq("Item.b.B", `""`))}}},
		// Empty strings inside a set, a list and a map are kept.
		{name: "empty_string_inside_collections", doc: `Service quotas, Attribute values: "Empty String and Binary values are allowed inside Set, List, and Map types."`,
			call: put(item("a", `"ss":{"SS":["","x"]},"l":{"L":[{"S":""}]},"m":{"M":{"e":{"S":""}}}`)), want: ok(),
			then: []fidelityStep{{get(key("a")), ok(length("Item.ss.SS", 2), eq("Item.l.L.0.S", `""`), eq("Item.m.M.e.S", `""`))}}},
		// An empty list and an empty map are kept.
		{name: "empty_list_and_map", doc: `Service quotas, Attribute values: "However, empty Lists and Maps are allowed."`,
			call: put(item("a", `"l":{"L":[]},"m":{"M":{}}`)), want: ok(),
			then: []fidelityStep{{get(key("a")), ok(length("Item.l.L", 0), length("Item.m.M", 0))}}},
		// An empty string set is refused.
		{name: "empty_string_set", doc: quotaValues,
			call: put(item("a", `"ss":{"SS":[]}`)), want: fails(validation)},
		// An empty number set is refused.
		{name: "empty_number_set", doc: quotaValues,
			call: put(item("a", `"ns":{"NS":[]}`)), want: fails(validation)},
		// An empty binary set is refused.
		{name: "empty_binary_set", moto: motoAccepts("moto accepts an empty binary set (it refuses the empty string and number sets)"),
			doc:  quotaValues,
			call: put(item("a", `"bs":{"BS":[]}`)), want: fails(validation)},
		// A string set with the same element twice is refused.
		{name: "duplicate_string_set_element", moto: motoAccepts("moto accepts a set with an element twice"),
			doc:  setsUnique,
			call: put(item("a", `"ss":{"SS":["x","x"]}`)), want: fails(validation)},
		// A number set with the same element twice is refused.
		{name: "duplicate_number_set_element", moto: motoAccepts("moto accepts a set with an element twice"),
			doc:  setsUnique,
			call: put(item("a", `"ns":{"NS":["1","1"]}`)), want: fails(validation)},
		// A number set with two spellings of one number is refused.
		{name: "duplicate_number_set_equal_numbers", moto: motoAccepts("moto accepts a set with an element twice"),
			doc:  setsUnique + " (1 and 1.0 are the same number)",
			call: put(item("a", `"ns":{"NS":["1","1.0"]}`)), want: fails(validation)},
		// A binary set with the same element twice is refused.
		{name: "duplicate_binary_set_element", moto: motoAccepts("moto accepts a set with an element twice"),
			doc:  setsUnique,
			call: put(item("a", `"bs":{"BS":["AQ==","AQ=="]}`)), want: fails(validation)},
		// An AttributeValue with two types is refused.
		{name: "attribute_value_two_types", moto: motoAccepts("moto accepts an AttributeValue with two types"),
			doc:  union,
			call: put(item("a", `"v":{"S":"x","N":"1"}`)), want: fails(validation)},
		// An AttributeValue with no type is refused.
		{name: "attribute_value_no_type", moto: motoBreaks("moto answers an AttributeValue with no type with HTTP 500"),
			doc:  union,
			call: put(item("a", `"v":{}`)), want: fails(validation)},
		// Maps nested 30 deep are accepted.
		{name: "nested_30_levels", doc: `Service quotas, Nested attribute depth: "DynamoDB supports nested attributes up to 32 levels deep."`,
			call: put(item("a", `"m":`+nested(30))), want: ok()},
		// Maps nested 35 deep are refused.
		{name: "nested_over_32_levels", moto: motoAccepts("moto accepts maps nested deeper than 32 levels"),
			doc:  `Service quotas, Nested attribute depth: "DynamoDB supports nested attributes up to 32 levels deep."`,
			call: put(item("a", `"m":`+nested(35))), want: fails(validation)},

		// --- Numbers ---

		// A number of 38 significant digits is kept exactly.
		{name: "number_38_digits", doc: numbers,
			call: put(item("a", `"n":{"N":"12345678901234567890123456789012345678"}`)), want: ok(),
			then: []fidelityStep{{get(key("a")), ok(eq("Item.n.N", `"12345678901234567890123456789012345678"`))}}},
		// A number of 39 significant digits is refused.
		{name: "number_39_digits", moto: motoAccepts("moto accepts a number of more than 38 digits"),
			doc:  numbers,
			call: put(item("a", `"n":{"N":"123456789012345678901234567890123456789"}`)), want: fails(validation)},
		// Trailing zeros of an integer are not digits of precision.
		{name: "number_trailing_zeros_not_precision", doc: numbers + " (1E+40 has one digit of precision)",
			call: put(item("a", `"n":{"N":"10000000000000000000000000000000000000000"}`)), want: ok()},
		// The largest positive number is accepted.
		{name: "number_largest", doc: numbers,
			call: put(item("a", `"n":{"N":"9.9999999999999999999999999999999999999E+125"}`)), want: ok()},
		// A number of magnitude 1E+126 is refused.
		{name: "number_overflow", moto: motoAccepts("moto accepts a number over DynamoDB's range"),
			doc:  numbers,
			call: put(item("a", `"n":{"N":"1E+126"}`)), want: fails(validation)},
		// A negative number of magnitude 1E+126 is refused.
		{name: "number_negative_overflow", moto: motoAccepts("moto accepts a number over DynamoDB's range"),
			doc:  numbers + ` "Negative range: -9.9999999999999999999999999999999999999E+125 to -1E-130"`,
			call: put(item("a", `"n":{"N":"-1E+126"}`)), want: fails(validation)},
		// The smallest positive number is accepted.
		{name: "number_smallest", doc: numbers,
			call: put(item("a", `"n":{"N":"1E-130"}`)), want: ok()},
		// A number of magnitude 1E-131 is refused.
		{name: "number_underflow", doc: numbers,
			call: put(item("a", `"n":{"N":"1E-131"}`)), want: fails(validation)},
		// Leading and trailing zeros are trimmed.
		{name: "number_zeros_trimmed", moto: &fidelityMoto{note: "moto keeps a number as it was written, leading and trailing zeros included", want: ok(), then: []fidelityAnswer{ok(eq("Item.n.N", `"0100.50"`))}},
			doc:  numbers,
			call: put(item("a", `"n":{"N":"0100.50"}`)), want: ok(),
			then: []fidelityStep{{get(key("a")), ok(eq("Item.n.N", `"100.5"`))}}},
		// Leading and trailing zeros of a negative fraction are trimmed.
		{name: "number_negative_zeros_trimmed", moto: &fidelityMoto{note: "moto keeps a number as it was written, leading and trailing zeros included", want: ok(), then: []fidelityAnswer{ok(eq("Item.n.N", `"-0.0100"`))}},
			doc:  numbers,
			call: put(item("a", `"n":{"N":"-0.0100"}`)), want: ok(),
			then: []fidelityStep{{get(key("a")), ok(eq("Item.n.N", `"-0.01"`))}}},
		// Negative zero reads back as zero.
		{name: "number_negative_zero", moto: &fidelityMoto{note: "moto keeps -0 as it was written", want: ok(), then: []fidelityAnswer{ok(eq("Item.n.N", `"-0"`))}},
			doc:  numbers + " (zero has no sign)",
			call: put(item("a", `"n":{"N":"-0"}`)), want: ok(),
			then: []fidelityStep{{get(key("a")), ok(eq("Item.n.N", `"0"`))}}},
		// A number with an exponent but no digits after the e is refused.
		{name: "number_invalid_exponent", doc: numbers + ` (a number is a decimal or E notation)`,
			call: put(item("a", `"n":{"N":"1e"}`)), want: fails(validation)},
		// A number that is not a number is refused.
		{name: "number_invalid_letters", doc: numbers,
			call: put(item("a", `"n":{"N":"abc"}`)), want: fails(validation)},
		// A number with a leading space is refused.
		{name: "number_invalid_space", doc: numbers,
			call: put(item("a", `"n":{"N":" 1"}`)), want: fails(validation)},
		// An empty number is refused.
		{name: "number_invalid_empty", doc: numbers,
			call: put(item("a", `"n":{"N":""}`)), want: fails(validation)},
		// NaN is not a number DynamoDB stores.
		{name: "number_invalid_nan", doc: numbers,
			call: put(item("a", `"n":{"N":"NaN"}`)), want: fails(validation)},

		// --- Expressions ---

		// An update expression that does not parse is refused.
		{name: "update_expression_syntax_error", doc: updateSyntax,
			call: update("a", `"UpdateExpression":"SET v =","ExpressionAttributeValues":{":v":{"S":"x"}}`), want: fails(validation)},
		// A condition expression that does not parse is refused.
		{name: "condition_expression_syntax_error", moto: motoBreaks("moto answers a condition expression that does not parse with HTTP 500"),
			doc:  `Condition expressions, syntax: "condition-expression ::= operand comparator operand | operand BETWEEN operand AND operand | ... function | condition AND condition | ..."`,
			call: req("PutItem", `{"TableName":"{{T}}","Item":`+key("a")+`,"ConditionExpression":"attribute_not_exists("}`), want: fails(validation)},
		// A #name that ExpressionAttributeNames does not define is refused.
		{name: "undefined_expression_name", moto: motoBreaks("moto answers an undefined #name in an update expression with HTTP 500"),
			doc:  names,
			call: update("a", `"UpdateExpression":"SET #v = :v","ExpressionAttributeValues":{":v":{"S":"x"}}`), want: fails(validation)},
		// A :value that ExpressionAttributeValues does not define is refused.
		{name: "undefined_expression_value", doc: values,
			call: update("a", `"UpdateExpression":"SET v = :v"`), want: fails(validation)},
		// An ExpressionAttributeNames entry no expression uses is refused.
		{name: "unused_expression_name", doc: unused,
			call: update("a", `"UpdateExpression":"SET v = :v","ExpressionAttributeNames":{"#u":"u"},"ExpressionAttributeValues":{":v":{"S":"x"}}`), want: fails(validation)},
		// An ExpressionAttributeValues entry no expression uses is refused.
		{name: "unused_expression_value", doc: unused,
			call: update("a", `"UpdateExpression":"SET v = :v","ExpressionAttributeValues":{":v":{"S":"x"},":u":{"S":"y"}}`), want: fails(validation)},
		// An ExpressionAttributeNames key without # is refused.
		{name: "expression_name_without_hash", doc: names,
			call: update("a", `"UpdateExpression":"SET #v = :v","ExpressionAttributeNames":{"#v":"v","w":"w"},"ExpressionAttributeValues":{":v":{"S":"x"}}`), want: fails(validation)},
		// An expression attribute name longer than 255 bytes is refused.
		{name: "expression_name_over_255_bytes", moto: motoAccepts("moto accepts an expression attribute name longer than 255 bytes"),
			doc:  `Service quotas, Expression parameters: "The maximum length of any single expression attribute name or expression attribute value is 255 bytes."`,
			call: update("a", `"UpdateExpression":"SET #`+strings.Repeat("n", 255)+` = :v","ExpressionAttributeNames":{"#`+strings.Repeat("n", 255)+`":"v"},"ExpressionAttributeValues":{":v":{"S":"x"}}`),
			want: fails(validation)},
		// An expression value that is not a valid AttributeValue (an empty set) is refused.
		{name: "expression_value_empty_set", moto: motoAccepts("moto accepts an empty set as an expression attribute value"),
			doc:  quotaValues,
			call: update("a", `"UpdateExpression":"SET v = :v","ExpressionAttributeValues":{":v":{"SS":[]}}`), want: fails(validation)},
		// An expression of 4 KB is accepted.
		{name: "expression_4kb", doc: `Service quotas, Expression parameters: "The maximum length of any expression string is 4 KB."`,
			call: paddedCondition(4096), want: ok()},
		// An expression longer than 4 KB is refused.
		{name: "expression_over_4kb", moto: motoAccepts("moto accepts an expression longer than 4 KB"),
			doc:  `Service quotas, Expression parameters: "The maximum length of any expression string is 4 KB."`,
			call: paddedCondition(4097), want: fails(validation)},
		// IN with 100 operands is accepted.
		{name: "in_100_operands", doc: `Service quotas, Expression parameters: "The maximum number of operands for the IN comparator is 100."`,
			call: inCondition(100), want: ok()},
		// IN with 101 operands is refused.
		{name: "in_over_100_operands", moto: motoAccepts("moto accepts IN with more than 100 operands"),
			doc:  `Service quotas, Expression parameters: "The maximum number of operands for the IN comparator is 100."`,
			call: inCondition(101), want: fails(validation)},
		// A reserved word used bare in a condition expression is refused.
		{name: "reserved_word_in_condition", doc: reserved,
			call: req("PutItem", `{"TableName":"{{T}}","Item":`+key("a")+`,"ConditionExpression":"attribute_not_exists(status)"}`), want: fails(validation)},
		// A reserved word used bare in an update expression is refused.
		{name: "reserved_word_in_update", doc: reserved,
			call: update("a", `"UpdateExpression":"SET status = :v","ExpressionAttributeValues":{":v":{"S":"x"}}`), want: fails(validation)},
		// A reserved word used bare in a projection expression is refused.
		{name: "reserved_word_in_projection", doc: reserved,
			call: req("GetItem", `{"TableName":"{{T}}","Key":`+key("a")+`,"ProjectionExpression":"status"}`), want: fails(validation)},
		// A reserved word through an expression attribute name is accepted.
		{name: "reserved_word_through_name", doc: reserved,
			call: update("a", `"UpdateExpression":"SET #s = :v","ExpressionAttributeNames":{"#s":"status"},"ExpressionAttributeValues":{":v":{"S":"x"}}`), want: ok(),
			then: []fidelityStep{{get(key("a")), ok(eq("Item.status.S", `"x"`))}}},
		// SET of a key attribute is refused.
		{name: "update_sets_key_attribute", doc: keyUpdate,
			setup: []fidelityCall{put(key("a"))},
			call:  update("a", `"UpdateExpression":"SET SK = :v","ExpressionAttributeValues":{":v":{"S":"b"}}`), want: fails(validation)},
		// REMOVE of a key attribute is refused.
		{name: "update_removes_key_attribute", doc: keyUpdate,
			setup: []fidelityCall{put(key("a"))},
			call:  update("a", `"UpdateExpression":"REMOVE PK"`), want: fails(validation)},
		// A path and a path inside it in one update are refused.
		{name: "update_paths_overlap", doc: overlap,
			call: update("a", `"UpdateExpression":"SET m = :m, m.x = :x","ExpressionAttributeValues":{":m":{"M":{}},":x":{"S":"x"}}`), want: fails(validation)},
		// SET of the same path twice is refused.
		{name: "update_same_path_twice", doc: overlap,
			call: update("a", `"UpdateExpression":"SET v = :x, v = :y","ExpressionAttributeValues":{":x":{"S":"x"},":y":{"S":"y"}}`), want: fails(validation)},
		// SET and REMOVE of the same path are refused.
		{name: "update_set_and_remove_same_path", doc: overlap,
			call: update("a", `"UpdateExpression":"SET v = :x REMOVE v","ExpressionAttributeValues":{":x":{"S":"x"}}`), want: fails(validation)},
		// A clause keyword twice is refused.
		{name: "update_clause_twice", doc: `Update expressions: "You can include any of these clauses in an update expression, in any order. However, each action keyword can appear only once."`,
			call: update("a", `"UpdateExpression":"SET v = :x SET w = :y","ExpressionAttributeValues":{":x":{"S":"x"},":y":{"S":"y"}}`), want: fails(validation)},
		// + on a string is refused.
		{name: "update_plus_on_string", doc: `Update expressions, Incrementing and decrementing numeric attributes: "You can add to or subtract from an existing numeric attribute. To do this, use the + (plus) and - (minus) operators."`,
			setup: []fidelityCall{put(item("a", `"v":{"S":"x"}`))},
			call:  update("a", `"UpdateExpression":"SET v = v + :one","ExpressionAttributeValues":{":one":{"N":"1"}}`), want: fails(validation)},
		// + adds numbers.
		{name: "update_plus", doc: `Update expressions: "You can also use SET to add or subtract from an attribute that is of type Number."`,
			setup: []fidelityCall{put(item("a", `"n":{"N":"5"}`))},
			call:  update("a", `"UpdateExpression":"SET n = n + :d","ExpressionAttributeValues":{":d":{"N":"3"}},"ReturnValues":"UPDATED_NEW"`),
			want:  ok(eq("Attributes.n.N", `"8"`))},
		// - subtracts numbers.
		{name: "update_minus", doc: `Update expressions: "You can also use SET to add or subtract from an attribute that is of type Number."`,
			setup: []fidelityCall{put(item("a", `"n":{"N":"5"}`))},
			call:  update("a", `"UpdateExpression":"SET n = n - :d","ExpressionAttributeValues":{":d":{"N":"3"}},"ReturnValues":"UPDATED_NEW"`),
			want:  ok(eq("Attributes.n.N", `"2"`))},
		// Every action reads the item as it was before the update.
		{name: "update_actions_read_old_item", doc: `Update expressions: "When an update expression contains multiple actions, DynamoDB evaluates every action against the item's attribute values as they were before the update."`,
			setup: []fidelityCall{put(item("a", `"v":{"S":"old"}`))},
			call:  update("a", `"UpdateExpression":"SET v = :new, w = v","ExpressionAttributeValues":{":new":{"S":"new"}},"ReturnValues":"ALL_NEW"`),
			want:  ok(eq("Attributes.v.S", `"new"`), eq("Attributes.w.S", `"old"`))},
		// ADD of a number to a missing attribute sets it.
		{name: "update_add_number_to_missing", doc: `Update expressions, ADD: "Use the ADD action in an update expression to add a new attribute and its values to an item." ("Assume that the QuantityOnHand attribute does not exist. The following example sets QuantityOnHand to 5")`,
			call: update("a", `"UpdateExpression":"ADD c :one","ExpressionAttributeValues":{":one":{"N":"1"}},"ReturnValues":"ALL_NEW"`),
			want: ok(eq("Attributes.c.N", `"1"`))},
		// ADD of a number to a number adds it.
		{name: "update_add_number", doc: `Update expressions, ADD: "If the attribute is a number, and the value you are adding is also a number, then the value is mathematically added to the existing attribute."`,
			setup: []fidelityCall{put(item("a", `"c":{"N":"5"}`))},
			call:  update("a", `"UpdateExpression":"ADD c :two","ExpressionAttributeValues":{":two":{"N":"2"}},"ReturnValues":"UPDATED_NEW"`),
			want:  ok(eq("Attributes.c.N", `"7"`))},
		// ADD of a set to a set adds its elements.
		{name: "update_add_to_set", doc: `Update expressions, ADD: "If the attribute is a set, and the value you are adding is also a set, then the value is appended to the existing set."`,
			setup: []fidelityCall{put(item("a", `"ss":{"SS":["x"]}`))},
			call:  update("a", `"UpdateExpression":"ADD ss :s","ExpressionAttributeValues":{":s":{"SS":["x","y"]}},"ReturnValues":"UPDATED_NEW"`),
			want:  ok(length("Attributes.ss.SS", 2))},
		// ADD of a string is refused.
		{name: "update_add_string", doc: `Update expressions, ADD: "The ADD action only supports number and set data types."`,
			call: update("a", `"UpdateExpression":"ADD s :v","ExpressionAttributeValues":{":v":{"S":"x"}}`), want: fails(validation)},
		// ADD of a number to a string attribute is refused.
		{name: "update_add_number_to_string", doc: `Update expressions, ADD: "The path element is the document path to an attribute. The attribute must be either a Number or a set data type."`,
			setup: []fidelityCall{put(item("a", `"v":{"S":"x"}`))},
			call:  update("a", `"UpdateExpression":"ADD v :one","ExpressionAttributeValues":{":one":{"N":"1"}}`), want: fails(validation)},
		// DELETE removes elements from a set.
		{name: "update_delete_from_set", doc: `Update expressions, DELETE: "Use the DELETE action in an update expression to remove one or more elements from a set."`,
			setup: []fidelityCall{put(item("a", `"ss":{"SS":["x","y"]}`))},
			call:  update("a", `"UpdateExpression":"DELETE ss :s","ExpressionAttributeValues":{":s":{"SS":["x"]}},"ReturnValues":"ALL_NEW"`),
			want:  ok(eq("Attributes.ss.SS", `["y"]`))},
		// DELETE of a number is refused.
		{name: "update_delete_number", doc: `Update expressions, DELETE: "The DELETE action only supports Set data types."`,
			setup: []fidelityCall{put(item("a", `"n":{"N":"5"}`))},
			call:  update("a", `"UpdateExpression":"DELETE n :one","ExpressionAttributeValues":{":one":{"N":"1"}}`), want: fails(validation)},
		// DELETE of a number set from a string set is refused.
		{name: "update_delete_other_set_type", doc: `Update expressions, DELETE: "The path element is the document path to an attribute. The attribute must be a set data type. The subset is one or more elements that you want to delete from path. You must specify subset as a set type."`,
			setup: []fidelityCall{put(item("a", `"ss":{"SS":["x"]}`))},
			call:  update("a", `"UpdateExpression":"DELETE ss :n","ExpressionAttributeValues":{":n":{"NS":["1"]}}`), want: fails(validation)},
		// REMOVE of a top-level attribute removes it from the stored item.
		{name: "update_remove_top_level", doc: `Update expressions, REMOVE: "Use the REMOVE action in an update expression to remove one or more attributes from an item in Amazon DynamoDB."`,
			setup: []fidelityCall{put(item("a", `"v":{"S":"x"},"w":{"S":"y"}`)), update("a", `"UpdateExpression":"REMOVE v"`)},
			call:  get(key("a")), want: ok(lacks("Item.v"), eq("Item.w.S", `"y"`))},
		// REMOVE of a missing attribute does nothing.
		{name: "update_remove_missing", doc: `Update expressions, REMOVE: "(If the attributes do not exist, nothing happens.)"`,
			setup: []fidelityCall{put(item("a", `"w":{"S":"y"}`))},
			call:  update("a", `"UpdateExpression":"REMOVE v","ReturnValues":"ALL_NEW"`), want: ok(eq("Attributes.w.S", `"y"`), lacks("Attributes.v"))},
		// REMOVE of a list element shifts the elements after it.
		{name: "update_remove_list_element", doc: `Update expressions, Removing elements from a list: "After removing Hammer and Nails, the remaining elements are shifted."`,
			setup: []fidelityCall{put(item("a", `"l":{"L":[{"S":"x"},{"S":"y"},{"S":"z"}]}`))},
			call:  update("a", `"UpdateExpression":"REMOVE l[1]","ReturnValues":"ALL_NEW"`),
			want:  ok(length("Attributes.l.L", 2), eq("Attributes.l.L.1.S", `"z"`))},
		// SET of a list element past the end appends it.
		{name: "update_set_list_index_past_end", doc: `Update expressions, Adding elements to a list: "When you use SET to update a list element, the contents of that element are replaced with the new data that you specify. If the element does not already exist, SET appends the new element at the end of the list."`,
			setup: []fidelityCall{put(item("a", `"l":{"L":[{"S":"x"}]}`))},
			call:  update("a", `"UpdateExpression":"SET l[5] = :v","ExpressionAttributeValues":{":v":{"S":"y"}},"ReturnValues":"ALL_NEW"`),
			want:  ok(length("Attributes.l.L", 2), eq("Attributes.l.L.1.S", `"y"`))},
		// SET of a path under a missing map is refused.
		{name: "update_set_under_missing_map", doc: `Update expressions / document paths: a nested path is updated only where its parent exists ("The document path provided in the update expression is invalid for update")`,
			setup: []fidelityCall{put(key("a"))},
			call:  update("a", `"UpdateExpression":"SET m.x = :v","ExpressionAttributeValues":{":v":{"S":"x"}}`), want: fails(validation)},
		// if_not_exists gives the value when the attribute is missing.
		{name: "update_if_not_exists_missing", doc: `Update expressions: "If the item does not contain an attribute at the specified path, then if_not_exists evaluates to value; otherwise, it evaluates to path."`,
			call: update("a", `"UpdateExpression":"SET v = if_not_exists(v, :v)","ExpressionAttributeValues":{":v":{"S":"new"}},"ReturnValues":"ALL_NEW"`),
			want: ok(eq("Attributes.v.S", `"new"`))},
		// if_not_exists keeps the attribute when it is there.
		{name: "update_if_not_exists_present", doc: `Update expressions: "If the item does not contain an attribute at the specified path, then if_not_exists evaluates to value; otherwise, it evaluates to path."`,
			setup: []fidelityCall{put(item("a", `"v":{"S":"old"}`))},
			call:  update("a", `"UpdateExpression":"SET v = if_not_exists(v, :v)","ExpressionAttributeValues":{":v":{"S":"new"}},"ReturnValues":"ALL_NEW"`),
			want:  ok(eq("Attributes.v.S", `"old"`))},
		// list_append appends the second list to the first.
		{name: "update_list_append", doc: `Update expressions: "The function takes two lists as input and appends all elements from list2 to list1."`,
			setup: []fidelityCall{put(item("a", `"l":{"L":[{"S":"x"}]}`))},
			call:  update("a", `"UpdateExpression":"SET l = list_append(l, :v)","ExpressionAttributeValues":{":v":{"L":[{"S":"y"}]}},"ReturnValues":"ALL_NEW"`),
			want:  ok(eq("Attributes.l.L", `[{"S":"x"},{"S":"y"}]`))},
		// list_append with the operands swapped prepends.
		{name: "update_list_append_prepend", doc: `Update expressions: "we will append one more element to the beginning of RelatedItems. To do this, we will swap the order of the list_append elements."`,
			setup: []fidelityCall{put(item("a", `"l":{"L":[{"S":"x"}]}`))},
			call:  update("a", `"UpdateExpression":"SET l = list_append(:v, l)","ExpressionAttributeValues":{":v":{"L":[{"S":"y"}]}},"ReturnValues":"ALL_NEW"`),
			want:  ok(eq("Attributes.l.L", `[{"S":"y"},{"S":"x"}]`))},
		// list_append of a string is refused.
		{name: "update_list_append_non_list", doc: `Update expressions: "list_append (list1, list2) The function takes two lists as input"`,
			setup: []fidelityCall{put(item("a", `"v":{"S":"x"}`))},
			call:  update("a", `"UpdateExpression":"SET v = list_append(v, :v)","ExpressionAttributeValues":{":v":{"L":[{"S":"y"}]}}`), want: fails(validation)},
		// UpdateItem of a missing item creates it.
		{name: "update_creates_item", doc: `UpdateItem: "Edits an existing item's attributes, or adds a new item to the table if it does not already exist."`,
			call: update("a", `"UpdateExpression":"SET v = :v","ExpressionAttributeValues":{":v":{"S":"x"}}`), want: ok(),
			then: []fidelityStep{{get(key("a")), ok(eq("Item.v.S", `"x"`), eq("Item.PK.S", `"p"`))}}},

		// --- Condition expressions ---

		// A failed condition is ConditionalCheckFailedException, without the item.
		{name: "put_condition_fails", doc: condFailed,
			setup: []fidelityCall{put(item("a", `"v":{"S":"old"}`))},
			call:  req("PutItem", `{"TableName":"{{T}}","Item":`+item("a", `"v":{"S":"new"}`)+`,"ConditionExpression":"attribute_not_exists(PK)"}`),
			want:  fails(conditional, lacks("Item")),
			then:  []fidelityStep{{get(key("a")), ok(eq("Item.v.S", `"old"`))}}},
		// With ReturnValuesOnConditionCheckFailure ALL_OLD the failure holds the item.
		{name: "put_condition_fails_all_old", doc: condFailed,
			setup: []fidelityCall{put(item("a", `"v":{"S":"old"}`))},
			call:  req("PutItem", `{"TableName":"{{T}}","Item":`+item("a", `"v":{"S":"new"}`)+`,"ConditionExpression":"attribute_not_exists(PK)","ReturnValuesOnConditionCheckFailure":"ALL_OLD"}`),
			want:  fails(conditional, eq("Item.v.S", `"old"`), eq("Item.SK.S", `"a"`))},
		// An UpdateItem's failed condition holds the item with ALL_OLD.
		{name: "update_condition_fails_all_old", doc: condFailed,
			setup: []fidelityCall{put(item("a", `"v":{"S":"old"}`))},
			call:  update("a", `"UpdateExpression":"SET v = :new","ConditionExpression":"v = :other","ExpressionAttributeValues":{":new":{"S":"new"},":other":{"S":"other"}},"ReturnValuesOnConditionCheckFailure":"ALL_OLD"`),
			want:  fails(conditional, eq("Item.v.S", `"old"`))},
		// A DeleteItem's failed condition leaves the item.
		{name: "delete_condition_fails", doc: condFailed,
			setup: []fidelityCall{put(item("a", `"v":{"S":"old"}`))},
			call:  req("DeleteItem", `{"TableName":"{{T}}","Key":`+key("a")+`,"ConditionExpression":"attribute_exists(w)","ReturnValuesOnConditionCheckFailure":"ALL_OLD"}`),
			want:  fails(conditional, eq("Item.v.S", `"old"`)),
			then:  []fidelityStep{{get(key("a")), ok(has("Item"))}}},
		// A condition on a missing item fails, and there is no item to return.
		{name: "update_condition_on_missing_item", doc: condFailed,
			call: update("a", `"UpdateExpression":"SET v = :v","ConditionExpression":"attribute_exists(PK)","ExpressionAttributeValues":{":v":{"S":"x"}},"ReturnValuesOnConditionCheckFailure":"ALL_OLD"`),
			want: fails(conditional, lacks("Item")),
			then: []fidelityStep{{get(key("a")), ok(lacks("Item"))}}},
		// A condition that holds lets the write through.
		{name: "put_condition_holds", doc: `Condition expressions: "To prevent a new item from replacing an existing item, use a conditional expression that contains the attribute_not_exists function with the name of the attribute being used as the partition key for the table."`,
			call: req("PutItem", `{"TableName":"{{T}}","Item":`+key("a")+`,"ConditionExpression":"attribute_not_exists(PK)"}`), want: ok()},
		// The condition functions evaluate on the item.
		{name: "condition_functions", doc: `Condition expressions, functions: "attribute_exists (path), attribute_not_exists (path), attribute_type (path, type), begins_with (path, substr), contains (path, operand), size (path)"`,
			setup: []fidelityCall{put(item("a", `"v":{"S":"hello"},"ss":{"SS":["x","y"]}`))},
			call: req("PutItem", `{"TableName":"{{T}}","Item":`+key("a")+`,
				"ConditionExpression":"begins_with(v, :he) AND size(v) = :five AND contains(ss, :x) AND attribute_type(v, :s) AND attribute_exists(ss) AND attribute_not_exists(w)",
				"ExpressionAttributeValues":{":he":{"S":"he"},":five":{"N":"5"},":x":{"S":"x"},":s":{"S":"S"}}}`),
			want: ok()},
		// A string and a number are not equal: the condition fails, it is no error.
		{name: "condition_compares_types", doc: `Condition expressions, comparison: "a = b — true if a is equal to b." (a string is not equal to a number)`,
			setup: []fidelityCall{put(item("a", `"v":{"S":"5"}`))},
			call:  req("PutItem", `{"TableName":"{{T}}","Item":`+key("a")+`,"ConditionExpression":"v = :five","ExpressionAttributeValues":{":five":{"N":"5"}}}`),
			want:  fails(conditional)},

		// --- ReturnValues ---

		// PutItem refuses ReturnValues ALL_NEW.
		{name: "put_return_values_all_new", doc: putReturn,
			call: req("PutItem", `{"TableName":"{{T}}","Item":`+key("a")+`,"ReturnValues":"ALL_NEW"}`), want: fails(validation)},
		// PutItem refuses ReturnValues UPDATED_OLD.
		{name: "put_return_values_updated_old", doc: putReturn,
			call: req("PutItem", `{"TableName":"{{T}}","Item":`+key("a")+`,"ReturnValues":"UPDATED_OLD"}`), want: fails(validation)},
		// PutItem with ALL_OLD returns the item it replaced.
		{name: "put_return_values_all_old", doc: putReturn,
			setup: []fidelityCall{put(item("a", `"v":{"S":"old"}`))},
			call:  req("PutItem", `{"TableName":"{{T}}","Item":`+item("a", `"v":{"S":"new"}`)+`,"ReturnValues":"ALL_OLD"}`),
			want:  ok(eq("Attributes.v.S", `"old"`), eq("Attributes.SK.S", `"a"`))},
		// PutItem with ALL_OLD of a new item returns no Attributes.
		{name: "put_return_values_all_old_new_item", doc: putReturn,
			call: req("PutItem", `{"TableName":"{{T}}","Item":`+key("a")+`,"ReturnValues":"ALL_OLD"}`), want: ok(lacks("Attributes"))},
		// PutItem with NONE returns no Attributes.
		{name: "put_return_values_none", doc: putReturn,
			setup: []fidelityCall{put(item("a", `"v":{"S":"old"}`))},
			call:  req("PutItem", `{"TableName":"{{T}}","Item":`+key("a")+`,"ReturnValues":"NONE"}`), want: ok(lacks("Attributes"))},
		// UpdateItem with ALL_NEW returns the whole new item.
		{name: "update_return_values_all_new", doc: updateReturn,
			setup: []fidelityCall{put(item("a", `"v":{"S":"old"},"w":{"S":"w"}`))},
			call:  update("a", `"UpdateExpression":"SET v = :v","ExpressionAttributeValues":{":v":{"S":"new"}},"ReturnValues":"ALL_NEW"`),
			want:  ok(length("Attributes", 4), eq("Attributes.v.S", `"new"`), eq("Attributes.w.S", `"w"`), eq("Attributes.PK.S", `"p"`))},
		// UpdateItem with UPDATED_NEW returns only the updated attributes, new.
		{name: "update_return_values_updated_new", doc: updateReturn,
			setup: []fidelityCall{put(item("a", `"v":{"S":"old"},"w":{"S":"w"}`))},
			call:  update("a", `"UpdateExpression":"SET v = :v","ExpressionAttributeValues":{":v":{"S":"new"}},"ReturnValues":"UPDATED_NEW"`),
			want:  ok(length("Attributes", 1), eq("Attributes.v.S", `"new"`))},
		// UPDATED_NEW of a nested path returns that path, not the whole
		// attribute.
		{name: "update_return_values_updated_new_nested", doc: updateReturn,
			setup: []fidelityCall{put(item("a", `"m":{"M":{"x":{"S":"old"},"y":{"S":"y"}}}`))},
			call:  update("a", `"UpdateExpression":"SET m.x = :v","ExpressionAttributeValues":{":v":{"S":"new"}},"ReturnValues":"UPDATED_NEW"`),
			want:  ok(length("Attributes", 1), length("Attributes.m.M", 1), eq("Attributes.m.M.x.S", `"new"`))},
		// An update of a key attribute is refused whatever the item, even
		// where its condition fails.
		{name: "update_key_attribute_condition_fails", doc: keyUpdate,
			moto: &fidelityMoto{note: "moto judges the condition first, and answers ConditionalCheckFailedException", want: fails("ConditionalCheckFailedException")},
			call: update("a", `"UpdateExpression":"SET SK = :v","ConditionExpression":"attribute_exists(nope)","ExpressionAttributeValues":{":v":{"S":"b"}}`),
			want: fails(validation)},
		// UpdateItem with ALL_OLD returns the whole old item.
		{name: "update_return_values_all_old", doc: updateReturn,
			setup: []fidelityCall{put(item("a", `"v":{"S":"old"},"w":{"S":"w"}`))},
			call:  update("a", `"UpdateExpression":"SET v = :v","ExpressionAttributeValues":{":v":{"S":"new"}},"ReturnValues":"ALL_OLD"`),
			want:  ok(length("Attributes", 4), eq("Attributes.v.S", `"old"`))},
		// UpdateItem with UPDATED_OLD returns only the updated attributes, old.
		{name: "update_return_values_updated_old", doc: updateReturn,
			setup: []fidelityCall{put(item("a", `"v":{"S":"old"},"w":{"S":"w"}`))},
			call:  update("a", `"UpdateExpression":"SET v = :v","ExpressionAttributeValues":{":v":{"S":"new"}},"ReturnValues":"UPDATED_OLD"`),
			want:  ok(length("Attributes", 1), eq("Attributes.v.S", `"old"`))},
		// UpdateItem with NONE returns no Attributes.
		{name: "update_return_values_none", doc: updateReturn + ` "NONE - If ReturnValues is not specified, or if its value is NONE, then nothing is returned."`,
			setup: []fidelityCall{put(item("a", `"v":{"S":"old"}`))},
			call:  update("a", `"UpdateExpression":"SET v = :v","ExpressionAttributeValues":{":v":{"S":"new"}},"ReturnValues":"NONE"`),
			want:  ok(lacks("Attributes"))},
		// UpdateItem refuses a ReturnValues it does not know.
		{name: "update_return_values_unknown", doc: `UpdateItem, ReturnValues: "Valid Values: NONE | ALL_OLD | UPDATED_OLD | ALL_NEW | UPDATED_NEW"`,
			call: update("a", `"UpdateExpression":"SET v = :v","ExpressionAttributeValues":{":v":{"S":"new"}},"ReturnValues":"EVERYTHING"`), want: fails(validation)},
		// DeleteItem with ALL_OLD returns the deleted item.
		{name: "delete_return_values_all_old", doc: deleteReturn,
			setup: []fidelityCall{put(item("a", `"v":{"S":"old"}`))},
			call:  req("DeleteItem", `{"TableName":"{{T}}","Key":`+key("a")+`,"ReturnValues":"ALL_OLD"}`),
			want:  ok(eq("Attributes.v.S", `"old"`)),
			then:  []fidelityStep{{get(key("a")), ok(lacks("Item"))}}},
		// DeleteItem refuses ReturnValues ALL_NEW.
		{name: "delete_return_values_all_new", doc: deleteReturn,
			call: req("DeleteItem", `{"TableName":"{{T}}","Key":`+key("a")+`,"ReturnValues":"ALL_NEW"}`), want: fails(validation)},
		// DeleteItem of a missing item succeeds.
		{name: "delete_missing_item", doc: `DeleteItem: "Unless you specify conditions, the DeleteItem is an idempotent operation; running it multiple times on the same item or attribute does not result in an error response."`,
			call: req("DeleteItem", `{"TableName":"{{T}}","Key":`+key("a")+`,"ReturnValues":"ALL_OLD"}`), want: ok(lacks("Attributes"))},

		// --- GetItem ---

		// GetItem of a missing item answers without Item.
		{name: "get_missing_item", doc: `GetItem: "If there is no matching item, GetItem does not return any data and there will be no Item element in the response."`,
			call: get(key("a")), want: ok(lacks("Item"))},
		// A projection expression returns only the attributes it names.
		{name: "get_projection", doc: `Projection expressions: "A projection expression is a string that identifies the attributes that you want. To retrieve a single attribute, specify its name. For multiple attributes, the names must be comma-separated."`,
			setup: []fidelityCall{put(item("a", `"x":{"S":"1"},"y":{"S":"2"},"z":{"S":"3"}`))},
			call:  req("GetItem", `{"TableName":"{{T}}","Key":`+key("a")+`,"ProjectionExpression":"x, z"}`),
			want:  ok(length("Item", 2), has("Item.x"), has("Item.z"))},
		// A projection of a nested path returns only that part of the map.
		{name: "get_projection_nested", doc: `Projection expressions: "ProjectionExpression ... can include scalars, sets, or elements of a JSON document" (document paths such as ProductReviews.FiveStar)`,
			setup: []fidelityCall{put(item("a", `"m":{"M":{"x":{"S":"1"},"y":{"S":"2"}}}`))},
			call:  req("GetItem", `{"TableName":"{{T}}","Key":`+key("a")+`,"ProjectionExpression":"m.x"}`),
			want:  ok(eq("Item", `{"m":{"M":{"x":{"S":"1"}}}}`))},
		// A strongly consistent GetItem is accepted.
		{name: "get_consistent_read", doc: `GetItem, ConsistentRead: "If set to true, then the operation uses strongly consistent reads; otherwise, the operation uses eventually consistent reads."`,
			setup: []fidelityCall{put(key("a"))},
			call:  req("GetItem", `{"TableName":"{{T}}","Key":`+key("a")+`,"ConsistentRead":true}`), want: ok(has("Item"))},

		// --- Query ---

		// The partition key equality alone returns its items, with Count and ScannedCount.
		{name: "query_partition", doc: keyCondition,
			setup: abc(),
			call:  query(`"KeyConditionExpression":"PK = :p","ExpressionAttributeValues":{":p":{"S":"p"}}`),
			want:  ok(length("Items", 3), eq("Count", "3"), eq("ScannedCount", "3"))},
		// Sort key =.
		{name: "query_sort_key_eq", doc: keyCondition,
			setup: abc(),
			call:  query(`"KeyConditionExpression":"PK = :p AND SK = :s","ExpressionAttributeValues":{":p":{"S":"p"},":s":{"S":"b"}}`),
			want:  ok(eq("Count", "1"), eq("Items.0.SK.S", `"b"`))},
		// Sort key <.
		{name: "query_sort_key_lt", doc: keyCondition,
			setup: abc(),
			call:  query(`"KeyConditionExpression":"PK = :p AND SK < :s","ExpressionAttributeValues":{":p":{"S":"p"},":s":{"S":"b"}}`),
			want:  ok(eq("Count", "1"), eq("Items.0.SK.S", `"a"`))},
		// Sort key <=.
		{name: "query_sort_key_le", doc: keyCondition,
			setup: abc(),
			call:  query(`"KeyConditionExpression":"PK = :p AND SK <= :s","ExpressionAttributeValues":{":p":{"S":"p"},":s":{"S":"b"}}`),
			want:  ok(eq("Count", "2"))},
		// Sort key >.
		{name: "query_sort_key_gt", doc: keyCondition,
			setup: abc(),
			call:  query(`"KeyConditionExpression":"PK = :p AND SK > :s","ExpressionAttributeValues":{":p":{"S":"p"},":s":{"S":"b"}}`),
			want:  ok(eq("Count", "1"), eq("Items.0.SK.S", `"c"`))},
		// Sort key >=.
		{name: "query_sort_key_ge", doc: keyCondition,
			setup: abc(),
			call:  query(`"KeyConditionExpression":"PK = :p AND SK >= :s","ExpressionAttributeValues":{":p":{"S":"p"},":s":{"S":"b"}}`),
			want:  ok(eq("Count", "2"))},
		// Sort key BETWEEN, both bounds included.
		{name: "query_sort_key_between", doc: keyCondition + ` "a BETWEEN b AND c — true if a is greater than or equal to b, and less than or equal to c."`,
			setup: abc(),
			call:  query(`"KeyConditionExpression":"PK = :p AND SK BETWEEN :a AND :b","ExpressionAttributeValues":{":p":{"S":"p"},":a":{"S":"a"},":b":{"S":"b"}}`),
			want:  ok(eq("Count", "2"))},
		// Sort key begins_with.
		{name: "query_sort_key_begins_with", doc: keyCondition,
			setup: []fidelityCall{put(key("ab")), put(key("ac")), put(key("b"))},
			call:  query(`"KeyConditionExpression":"PK = :p AND begins_with(SK, :a)","ExpressionAttributeValues":{":p":{"S":"p"},":a":{"S":"a"}}`),
			want:  ok(eq("Count", "2"))},
		// Sort key begins_with, read backwards: the same items, last first.
		{name: "query_sort_key_begins_with_reverse", doc: keyCondition + ` Query, ScanIndexForward: "If ScanIndexForward is false, DynamoDB reads the results in reverse order by sort key value"`,
			setup: []fidelityCall{put(key("a")), put(key("ab")), put(key("ac")), put(key("b")), put(key("c"))},
			call:  query(`"KeyConditionExpression":"PK = :p AND begins_with(SK, :a)","ScanIndexForward":false,"ExpressionAttributeValues":{":p":{"S":"p"},":a":{"S":"a"}}`),
			want:  ok(eq("Count", "3"), eq("Items.0.SK.S", `"ac"`), eq("Items.2.SK.S", `"a"`))},
		// Sort key <> is refused.
		{name: "query_sort_key_ne", moto: motoBreaks("moto answers <> in a key condition with HTTP 500"),
			doc:  keyCondition,
			call: query(`"KeyConditionExpression":"PK = :p AND SK <> :s","ExpressionAttributeValues":{":p":{"S":"p"},":s":{"S":"b"}}`), want: fails(validation)},
		// Sort key IN is refused.
		{name: "query_sort_key_in", doc: keyCondition,
			call: query(`"KeyConditionExpression":"PK = :p AND SK IN (:a, :b)","ExpressionAttributeValues":{":p":{"S":"p"},":a":{"S":"a"},":b":{"S":"b"}}`), want: fails(validation)},
		// OR in a key condition is refused.
		{name: "query_key_condition_or", moto: motoBreaks("moto answers OR in a key condition with HTTP 500"),
			doc:  keyCondition,
			call: query(`"KeyConditionExpression":"PK = :p OR SK = :s","ExpressionAttributeValues":{":p":{"S":"p"},":s":{"S":"b"}}`), want: fails(validation)},
		// contains in a key condition is refused.
		{name: "query_key_condition_contains", doc: keyCondition,
			call: query(`"KeyConditionExpression":"PK = :p AND contains(SK, :s)","ExpressionAttributeValues":{":p":{"S":"p"},":s":{"S":"b"}}`), want: fails(validation)},
		// Two conditions on the sort key are refused.
		{name: "query_two_sort_key_conditions", moto: motoAccepts("moto accepts two conditions on the sort key"),
			doc:  keyCondition + " (a single sort key comparison)",
			call: query(`"KeyConditionExpression":"PK = :p AND SK > :a AND SK < :c","ExpressionAttributeValues":{":p":{"S":"p"},":a":{"S":"a"},":c":{"S":"c"}}`), want: fails(validation)},
		// A key condition on a non-key attribute is refused.
		{name: "query_key_condition_non_key", doc: keyCondition,
			call: query(`"KeyConditionExpression":"PK = :p AND v = :v","ExpressionAttributeValues":{":p":{"S":"p"},":v":{"S":"1"}}`), want: fails(validation)},
		// A key condition without the partition key equality is refused.
		{name: "query_missing_partition_equality", doc: keyCondition,
			call: query(`"KeyConditionExpression":"SK = :s","ExpressionAttributeValues":{":s":{"S":"a"}}`), want: fails(validation)},
		// A partition key comparison other than = is refused.
		{name: "query_partition_not_equality", doc: keyCondition,
			call: query(`"KeyConditionExpression":"PK > :p","ExpressionAttributeValues":{":p":{"S":"p"}}`), want: fails(validation)},
		// A Query of an index the table does not have is refused.
		{name: "query_missing_index", moto: &fidelityMoto{note: "moto answers a missing index with ResourceNotFoundException", want: fails(notFound)},
			doc:  `Query, IndexName: "The name of an index to query." (ValidationException "The table does not have the specified index")`,
			call: query(`"IndexName":"NoSuchIndex","KeyConditionExpression":"PK = :p","ExpressionAttributeValues":{":p":{"S":"p"}}`),
			want: fidelityAnswer{err: validation, msg: "The table does not have the specified index"}},
		// A Query of an index with the table's key is refused.
		{name: "query_index_with_table_key", doc: keyCondition + " (the index's partition key)",
			call: query(`"IndexName":"TriggersByUser","KeyConditionExpression":"PK = :p","ExpressionAttributeValues":{":p":{"S":"p"}}`), want: fails(validation)},
		// A strongly consistent Query of a GSI is refused.
		{name: "query_consistent_read_gsi", doc: `Query, ConsistentRead: "Strongly consistent reads are not supported on global secondary indexes. If you query a global secondary index with ConsistentRead set to true, you will receive a ValidationException."`,
			call: query(`"IndexName":"TriggersByUser","ConsistentRead":true,"KeyConditionExpression":"ownerUserId = :u","ExpressionAttributeValues":{":u":{"S":"u"}}`), want: fails(validation)},
		// Select COUNT answers Count and ScannedCount without Items.
		{name: "query_select_count", doc: `Query, Select: "COUNT - Returns the number of matching items, rather than the matching items themselves." (the "Count Items" example's answer holds Count and ScannedCount only)`,
			setup: abc(),
			call:  query(`"Select":"COUNT","KeyConditionExpression":"PK = :p","ExpressionAttributeValues":{":p":{"S":"p"}}`),
			want:  ok(eq("Count", "3"), eq("ScannedCount", "3"), lacks("Items"))},
		// Select other than SPECIFIC_ATTRIBUTES with a projection expression is refused.
		{name: "query_select_with_projection", moto: motoAccepts("moto accepts Select COUNT with a projection expression"),
			doc:  `Query, Select: "If you use the ProjectionExpression parameter, then the value for Select can only be SPECIFIC_ATTRIBUTES. Any other value for Select will return an error."`,
			call: query(`"Select":"COUNT","ProjectionExpression":"v","KeyConditionExpression":"PK = :p","ExpressionAttributeValues":{":p":{"S":"p"}}`), want: fails(validation)},
		// ALL_PROJECTED_ATTRIBUTES on the table is refused.
		{name: "query_select_all_projected_on_table", moto: motoAccepts("moto accepts Select ALL_PROJECTED_ATTRIBUTES on a table"),
			doc:  `Query, Select: "ALL_PROJECTED_ATTRIBUTES - Allowed only when querying an index."`,
			call: query(`"Select":"ALL_PROJECTED_ATTRIBUTES","KeyConditionExpression":"PK = :p","ExpressionAttributeValues":{":p":{"S":"p"}}`), want: fails(validation)},
		// Limit 0 is refused.
		{name: "query_limit_zero", moto: motoAccepts("moto accepts Limit 0"),
			doc:  queryLimit,
			call: query(`"Limit":0,"KeyConditionExpression":"PK = :p","ExpressionAttributeValues":{":p":{"S":"p"}}`), want: fails(validation)},
		// ExclusiveStartKey starts after the key.
		{name: "query_exclusive_start_key", doc: `Query, ExclusiveStartKey: "The primary key of the first item that this operation will evaluate. Use the value that was returned for LastEvaluatedKey in the previous operation."`,
			setup: abc(),
			call:  query(`"ExclusiveStartKey":` + key("a") + `,"KeyConditionExpression":"PK = :p","ExpressionAttributeValues":{":p":{"S":"p"}}`),
			want:  ok(eq("Count", "2"), eq("Items.0.SK.S", `"b"`), eq("Items.1.SK.S", `"c"`))},
		// A start key within the sort key condition starts after it, in the read's order.
		{name: "query_start_key_in_sort_condition", doc: startKey,
			setup: abc(),
			call:  query(`"ScanIndexForward":false,"ExclusiveStartKey":` + key("c") + `,"KeyConditionExpression":"PK = :p AND SK BETWEEN :a AND :c","ExpressionAttributeValues":{":p":{"S":"p"},":a":{"S":"a"},":c":{"S":"c"}}`),
			want:  ok(eq("Count", "2"), eq("Items.0.SK.S", `"b"`), eq("Items.1.SK.S", `"a"`))},
		// A start key whose sort key the sort key condition does not keep is refused.
		{name: "query_start_key_outside_sort_condition", moto: motoAccepts("moto accepts a start key outside the key condition"),
			doc:   startKey,
			setup: abc(),
			call:  query(`"ExclusiveStartKey":` + key("a") + `,"KeyConditionExpression":"PK = :p AND SK > :b","ExpressionAttributeValues":{":p":{"S":"p"},":b":{"S":"b"}}`),
			want:  fidelityAnswer{err: validation, msg: "The provided starting key does not match the range key predicate"}},
		// A start key on the exclusive bound of the sort key condition is outside it.
		{name: "query_start_key_on_exclusive_bound", moto: motoAccepts("moto accepts a start key outside the key condition"),
			doc:   startKey,
			setup: abc(),
			call:  query(`"ScanIndexForward":false,"ExclusiveStartKey":` + key("b") + `,"KeyConditionExpression":"PK = :p AND SK < :b","ExpressionAttributeValues":{":p":{"S":"p"},":b":{"S":"b"}}`),
			want:  fidelityAnswer{err: validation, msg: "The provided starting key does not match the range key predicate"}},
		// A start key of another partition is refused.
		{name: "query_start_key_other_partition", moto: motoAccepts("moto accepts a start key outside the key condition"),
			doc:   startKey,
			setup: abc(),
			call:  query(`"ExclusiveStartKey":{"PK":{"S":"q"},"SK":{"S":"a"}},"KeyConditionExpression":"PK = :p","ExpressionAttributeValues":{":p":{"S":"p"}}`),
			want:  fidelityAnswer{err: validation, msg: "The provided starting key is outside query boundaries based on provided conditions"}},
		// A start key outside both the partition and the sort key condition
		// is refused for its sort key.
		{name: "query_start_key_sort_judged_first", moto: motoAccepts("moto accepts a start key outside the key condition"),
			doc:  startKey,
			call: query(`"ExclusiveStartKey":{"PK":{"S":"q"},"SK":{"S":"a"}},"KeyConditionExpression":"PK = :p AND SK > :b","ExpressionAttributeValues":{":p":{"S":"p"},":b":{"S":"b"}}`),
			want: fidelityAnswer{err: validation, msg: "The provided starting key does not match the range key predicate"}},
		// A start key without the sort key is refused.
		{name: "query_start_key_missing_sort_key", moto: motoBreaks("moto answers a start key without a key attribute with HTTP 500"),
			doc:   startKey + " (the table's primary key)",
			setup: abc(),
			call:  query(`"ExclusiveStartKey":{"PK":{"S":"p"}},"KeyConditionExpression":"PK = :p","ExpressionAttributeValues":{":p":{"S":"p"}}`),
			want:  fidelityAnswer{err: validation, msg: "The provided starting key is invalid"}},
		// A start key with an attribute besides the key's is refused.
		{name: "query_start_key_extra_attribute", moto: motoAccepts("moto accepts a start key with an attribute besides the key's"),
			doc:  startKey + " (the table's primary key)",
			call: query(`"ExclusiveStartKey":` + item("a", `"v":{"S":"x"}`) + `,"KeyConditionExpression":"PK = :p","ExpressionAttributeValues":{":p":{"S":"p"}}`),
			want: fidelityAnswer{err: validation, msg: "The provided starting key is invalid"}},
		// On a GSI a start key without the table's key is refused.
		{name: "query_gsi_start_key_without_table_key", moto: motoBreaks("moto answers a start key without a key attribute with HTTP 500"),
			doc:   startKey + " " + indexStartKey,
			setup: []fidelityCall{put(item("a", `"ownerUserId":{"S":"u"},"listedAt":{"S":"1"}`)), put(item("b", `"ownerUserId":{"S":"u"},"listedAt":{"S":"2"}`))},
			call:  query(`"IndexName":"TriggersByUser","ExclusiveStartKey":{"ownerUserId":{"S":"u"},"listedAt":{"S":"1"}},"KeyConditionExpression":"ownerUserId = :u","ExpressionAttributeValues":{":u":{"S":"u"}}`),
			want:  fails(validation)},
		// On a GSI a start key without the index's key is refused.
		{name: "query_gsi_start_key_without_index_key", moto: motoBreaks("moto answers a start key without a key attribute with HTTP 500"),
			doc:   startKey + " " + indexStartKey,
			setup: []fidelityCall{put(item("a", `"ownerUserId":{"S":"u"},"listedAt":{"S":"1"}`)), put(item("b", `"ownerUserId":{"S":"u"},"listedAt":{"S":"2"}`))},
			call:  query(`"IndexName":"TriggersByUser","ExclusiveStartKey":` + key("a") + `,"KeyConditionExpression":"ownerUserId = :u","ExpressionAttributeValues":{":u":{"S":"u"}}`),
			want:  fidelityAnswer{err: validation, msg: "The provided starting key is invalid"}},
		// On a GSI a start key with an empty index key attribute is refused.
		{name: "query_gsi_start_key_empty_index_key", moto: motoAccepts("moto accepts a start key with an empty index key attribute"),
			doc:  quotaValues + " " + indexStartKey,
			call: query(`"IndexName":"TriggersByUser","ExclusiveStartKey":` + item("a", `"ownerUserId":{"S":"u"},"listedAt":{"S":""}`) + `,"KeyConditionExpression":"ownerUserId = :u","ExpressionAttributeValues":{":u":{"S":"u"}}`),
			want: fidelityAnswer{err: validation, msg: "The provided starting key is invalid"}},
		// On a GSI a start key of another partition of the index is refused.
		{name: "query_gsi_start_key_other_partition", moto: motoAccepts("moto accepts a start key outside the key condition"),
			doc:  startKey + " " + indexStartKey,
			call: query(`"IndexName":"TriggersByUser","ExclusiveStartKey":` + item("a", `"ownerUserId":{"S":"w"},"listedAt":{"S":"1"}`) + `,"KeyConditionExpression":"ownerUserId = :u","ExpressionAttributeValues":{":u":{"S":"u"}}`),
			want: fidelityAnswer{err: validation, msg: "The provided starting key is outside query boundaries based on provided conditions"}},
		// On a GSI a start key whose index sort key the condition does not keep is refused.
		{name: "query_gsi_start_key_outside_sort_condition", moto: motoAccepts("moto accepts a start key outside the key condition"),
			doc:  startKey + " " + indexStartKey,
			call: query(`"IndexName":"TriggersByUser","ExclusiveStartKey":` + item("a", `"ownerUserId":{"S":"u"},"listedAt":{"S":"1"}`) + `,"KeyConditionExpression":"ownerUserId = :u AND listedAt > :l","ExpressionAttributeValues":{":u":{"S":"u"},":l":{"S":"2"}}`),
			want: fidelityAnswer{err: validation, msg: "The provided starting key does not match the range key predicate"}},
		// An empty string as the partition key's value is refused.
		{name: "query_empty_partition_value", doc: quotaValues + " " + keyCondition,
			call: query(`"KeyConditionExpression":"PK = :p","ExpressionAttributeValues":{":p":{"S":""}}`),
			want: fidelityAnswer{err: validation, msg: emptyKey + " Key: PK"}},
		// An empty string as the sort key condition's value is refused.
		{name: "query_empty_sort_value", doc: quotaValues + " " + keyCondition,
			call: query(`"KeyConditionExpression":"PK = :p AND begins_with(SK, :s)","ExpressionAttributeValues":{":p":{"S":"p"},":s":{"S":""}}`),
			want: fidelityAnswer{err: validation, msg: emptyKey + " Key: SK"}},
		// An empty string as a bound of BETWEEN is refused.
		{name: "query_empty_between_bound", doc: quotaValues + " " + keyCondition,
			call: query(`"KeyConditionExpression":"PK = :p AND SK BETWEEN :a AND :b","ExpressionAttributeValues":{":p":{"S":"p"},":a":{"S":""},":b":{"S":"b"}}`),
			want: fidelityAnswer{err: validation, msg: emptyKey + " Key: SK"}},
		// An empty string as an index's partition key value is refused.
		{name: "query_gsi_empty_partition_value", doc: quotaValues + " " + keyCondition,
			call: query(`"IndexName":"TriggersByUser","KeyConditionExpression":"ownerUserId = :u","ExpressionAttributeValues":{":u":{"S":""}}`),
			want: fidelityAnswer{err: validation, msg: emptyKey}},
		// ScanIndexForward false reads in descending order.
		{name: "query_descending", doc: `Query, ScanIndexForward: "If ScanIndexForward is false, DynamoDB reads the results in reverse order by sort key value, and then returns the results to the client."`,
			setup: abc(),
			call:  query(`"ScanIndexForward":false,"KeyConditionExpression":"PK = :p","ExpressionAttributeValues":{":p":{"S":"p"}}`),
			want:  ok(eq("Items.0.SK.S", `"c"`), eq("Items.1.SK.S", `"b"`), eq("Items.2.SK.S", `"a"`))},
		// Items are in the order of the sort key's UTF-8 bytes.
		{name: "query_utf8_byte_order", doc: `Query, ScanIndexForward: "Query results are always sorted by the sort key value. If the data type of the sort key is Number, the results are returned in numeric order; otherwise, the results are returned in order of UTF-8 bytes."`,
			setup: []fidelityCall{put(key("a")), put(key("é")), put(key("Z"))},
			call:  query(`"KeyConditionExpression":"PK = :p","ExpressionAttributeValues":{":p":{"S":"p"}}`),
			want:  ok(eq("Items.0.SK.S", `"Z"`), eq("Items.1.SK.S", `"a"`), eq("Items.2.SK.S", `"é"`))},
		// A Query stopped by Limit answers LastEvaluatedKey, the table's key.
		{name: "query_limit_last_evaluated_key", doc: lastKey,
			setup: abc(),
			call:  query(`"Limit":2,"KeyConditionExpression":"PK = :p","ExpressionAttributeValues":{":p":{"S":"p"}}`),
			want:  ok(eq("Count", "2"), eq("LastEvaluatedKey", key("b")))},
		// A Query that read everything answers no LastEvaluatedKey.
		{name: "query_no_last_evaluated_key", doc: lastKey,
			setup: abc(),
			call:  query(`"KeyConditionExpression":"PK = :p","ExpressionAttributeValues":{":p":{"S":"p"}}`),
			want:  ok(lacks("LastEvaluatedKey"))},
		// On a GSI LastEvaluatedKey holds the table's key and the index's key.
		{name: "query_gsi_last_evaluated_key", doc: lastKey + ` (on an index: the table's primary key attributes and the index's key attributes)`,
			setup: []fidelityCall{
				put(item("a", `"ownerUserId":{"S":"u"},"listedAt":{"S":"1"}`)),
				put(item("b", `"ownerUserId":{"S":"u"},"listedAt":{"S":"2"}`)),
			},
			call: query(`"IndexName":"TriggersByUser","Limit":1,"KeyConditionExpression":"ownerUserId = :u","ExpressionAttributeValues":{":u":{"S":"u"}}`),
			want: ok(eq("Count", "1"), eq("LastEvaluatedKey", `{"PK":{"S":"p"},"SK":{"S":"a"},"ownerUserId":{"S":"u"},"listedAt":{"S":"1"}}`))},
		// A GSI holds only the items that have its key attributes.
		{name: "query_gsi_sparse", doc: `Sparse indexes: "For any item in a table, DynamoDB writes a corresponding index entry only if the index sort key value is present in the item. If the sort key doesn't appear in every table item, the index is said to be sparse."`,
			setup: []fidelityCall{
				put(item("a", `"ownerUserId":{"S":"u"},"listedAt":{"S":"1"}`)),
				put(item("b", `"ownerUserId":{"S":"u"}`)),
				put(item("c", `"ownerUserId":{"S":"u"},"listedAt":{"S":"3"}`)),
			},
			call: query(`"IndexName":"TriggersByUser","KeyConditionExpression":"ownerUserId = :u","ExpressionAttributeValues":{":u":{"S":"u"}}`),
			want: ok(eq("Count", "2"), eq("Items.0.SK.S", `"a"`), eq("Items.1.SK.S", `"c"`))},
		// A filter expression on a key attribute is refused in a Query.
		{name: "query_filter_on_key", moto: motoAccepts("moto accepts a Query filter expression on a key attribute"),
			doc:  `Query: "A FilterExpression cannot contain partition key or sort key attributes. You need to specify those attributes in the KeyConditionExpression."`,
			call: query(`"KeyConditionExpression":"PK = :p","FilterExpression":"SK = :s","ExpressionAttributeValues":{":p":{"S":"p"},":s":{"S":"a"}}`), want: fails(validation)},
		// A filter leaves Count below ScannedCount.
		{name: "query_filter_count", doc: `Query, Count: "If you used a QueryFilter in the request, then Count is the number of items returned after the filter was applied, and ScannedCount is the number of matching items before the filter was applied."`,
			setup: abc(),
			call:  query(`"KeyConditionExpression":"PK = :p","FilterExpression":"v = :v","ExpressionAttributeValues":{":p":{"S":"p"},":v":{"S":"2"}}`),
			want:  ok(eq("Count", "1"), eq("ScannedCount", "3"), length("Items", 1))},
		// Limit counts the items evaluated, before the filter.
		{name: "query_limit_before_filter", doc: queryLimit + ` Query: "A single Query operation will read up to the maximum number of items set (if using the Limit parameter) or a maximum of 1 MB of data and then apply any filtering to the results using FilterExpression."`,
			setup: abc(),
			call:  query(`"Limit":2,"KeyConditionExpression":"PK = :p","FilterExpression":"v = :v","ExpressionAttributeValues":{":p":{"S":"p"},":v":{"S":"3"}}`),
			want:  ok(eq("Count", "0"), eq("ScannedCount", "2"), eq("LastEvaluatedKey", key("b")))},
		// A Query's projection expression returns only the attributes it names.
		{name: "query_projection", doc: `Query, ProjectionExpression: "A string that identifies one or more attributes to retrieve from the table."`,
			setup: abc(),
			call:  query(`"ProjectionExpression":"v","KeyConditionExpression":"PK = :p","ExpressionAttributeValues":{":p":{"S":"p"}}`),
			want:  ok(eq("Items.0", `{"v":{"S":"1"}}`))},

		// --- Scan ---

		// Segment without TotalSegments is refused.
		{name: "scan_segment_without_total", doc: segments,
			call: scan(`,"Segment":0`), want: fails(validation)},
		// TotalSegments without Segment is refused.
		{name: "scan_total_without_segment", doc: segments,
			call: scan(`,"TotalSegments":2`), want: fails(validation)},
		// Segment equal to TotalSegments is refused.
		{name: "scan_segment_not_below_total", doc: segments,
			call: scan(`,"Segment":2,"TotalSegments":2`), want: fails(validation)},
		// TotalSegments 0 is refused.
		{name: "scan_total_segments_zero", doc: segments,
			call: scan(`,"Segment":0,"TotalSegments":0`), want: fails(validation)},
		// TotalSegments over 1000000 is refused.
		{name: "scan_total_segments_over_max", moto: motoAccepts("moto accepts TotalSegments over 1000000"),
			doc:  segments,
			call: scan(`,"Segment":0,"TotalSegments":1000001`), want: fails(validation)},
		// Segment 0 of 1 is the whole table.
		{name: "scan_one_segment", doc: segments,
			setup: abc(),
			call:  scan(`,"Segment":0,"TotalSegments":1`), want: ok(eq("Count", "3"))},
		// A start key of another segment is refused.
		{name: "scan_segment_start_key_elsewhere", moto: motoAccepts("moto accepts a start key of another segment"),
			doc:   `Scan, ExclusiveStartKey: "In a parallel scan, a Scan request that includes ExclusiveStartKey must specify the same segment whose previous Scan returned the corresponding value of LastEvaluatedKey." (of a million segments, the key is in segment 0 on neither endpoint)`,
			setup: abc(),
			call:  scan(`,"Segment":0,"TotalSegments":1000000,"ExclusiveStartKey":` + key("a")),
			want:  fidelityAnswer{err: validation, msg: "The provided starting key is invalid"}},
		// A start key without the sort key is refused.
		{name: "scan_start_key_missing_sort_key", moto: motoBreaks("moto answers a start key without a key attribute with HTTP 500"),
			doc:   strings.Replace(startKey, "Query", "Scan", 1) + " (the table's primary key)",
			setup: abc(),
			call:  scan(`,"ExclusiveStartKey":{"PK":{"S":"p"}}`),
			want:  fidelityAnswer{err: validation, msg: "The provided starting key is invalid"}},
		// A start key with an attribute besides the key's is refused.
		{name: "scan_start_key_extra_attribute", moto: motoAccepts("moto accepts a start key with an attribute besides the key's"),
			doc:  strings.Replace(startKey, "Query", "Scan", 1) + " (the table's primary key)",
			call: scan(`,"ExclusiveStartKey":` + item("a", `"v":{"S":"x"}`)),
			want: fidelityAnswer{err: validation, msg: "The provided starting key is invalid"}},
		// A start key with an empty string key attribute is refused.
		{name: "scan_start_key_empty_string", moto: motoAccepts("moto accepts a start key with an empty string key attribute"),
			doc:  quotaValues,
			call: scan(`,"ExclusiveStartKey":{"PK":{"S":""},"SK":{"S":"a"}}`),
			want: fidelityAnswer{err: validation, msg: "The provided starting key is invalid"}},
		// On a GSI a start key without the table's key is refused.
		{name: "scan_gsi_start_key_without_table_key", moto: motoBreaks("moto answers a start key without a key attribute with HTTP 500"),
			doc:   strings.Replace(startKey, "Query", "Scan", 1) + " " + indexStartKey,
			setup: []fidelityCall{put(item("a", `"ownerUserId":{"S":"u"},"listedAt":{"S":"1"}`)), put(item("b", `"ownerUserId":{"S":"u"},"listedAt":{"S":"2"}`))},
			call:  scan(`,"IndexName":"TriggersByUser","ExclusiveStartKey":{"ownerUserId":{"S":"u"},"listedAt":{"S":"1"}}`),
			want:  fails(validation)},
		// A Scan stopped by Limit answers LastEvaluatedKey.
		{name: "scan_limit", doc: lastKey,
			setup: abc(),
			call:  scan(`,"Limit":1`), want: ok(eq("Count", "1"), length("LastEvaluatedKey", 2))},
		// Limit 0 is refused.
		{name: "scan_limit_zero", moto: motoAccepts("moto accepts Limit 0"),
			doc:  queryLimit,
			call: scan(`,"Limit":0`), want: fails(validation)},
		// A filter leaves Count below ScannedCount.
		{name: "scan_filter_count", doc: `Scan, Count and ScannedCount: "ScannedCount: The number of items evaluated, before any ScanFilter is applied ... Count: The number of items in the response ... after applying the filter"`,
			setup: abc(),
			call:  scan(`,"FilterExpression":"v = :v","ExpressionAttributeValues":{":v":{"S":"2"}}`),
			want:  ok(eq("Count", "1"), eq("ScannedCount", "3"))},
		// A Scan may filter on a key attribute.
		{name: "scan_filter_on_key", doc: `Scan, FilterExpression: "A string that contains conditions that DynamoDB applies after the Scan operation, but before the data is returned to you." (unlike Query's, it may name key attributes)`,
			setup: abc(),
			call:  scan(`,"FilterExpression":"SK = :s","ExpressionAttributeValues":{":s":{"S":"b"}}`),
			want:  ok(eq("Count", "1"), eq("Items.0.SK.S", `"b"`))},
		// Select COUNT answers Count without Items.
		{name: "scan_select_count", moto: &fidelityMoto{note: "moto's Scan with Select COUNT answers the Items too", want: ok(has("Items"))},
			doc:   `Scan, Select: "COUNT - Returns the number of matching items, rather than the matching items themselves."`,
			setup: abc(),
			call:  scan(`,"Select":"COUNT"`), want: ok(eq("Count", "3"), eq("ScannedCount", "3"), lacks("Items"))},
		// A strongly consistent Scan of a GSI is refused.
		{name: "scan_consistent_read_gsi", doc: `Scan, ConsistentRead: "The ConsistentRead parameter is not supported on global secondary indexes. If you scan a global secondary index with ConsistentRead set to true, you will receive a ValidationException."`,
			call: scan(`,"IndexName":"TriggersByUser","ConsistentRead":true`), want: fails(validation)},
		// A Scan of a GSI reads only its items.
		{name: "scan_gsi", doc: `Sparse indexes: "DynamoDB writes a corresponding index entry only if the index sort key value is present in the item."`,
			setup: []fidelityCall{put(item("a", `"dueShard":{"S":"0"},"nextRunAt":{"S":"1"}`)), put(key("b"))},
			call:  scan(`,"IndexName":"DueTriggersAll"`), want: ok(eq("Count", "1"), eq("Items.0.SK.S", `"a"`))},
		// A Scan of an index the table does not have is refused.
		{name: "scan_missing_index", doc: `Scan, IndexName: "The name of a secondary index to scan." (ValidationException "The table does not have the specified index")`,
			call: scan(`,"IndexName":"NoSuchIndex"`), want: fidelityAnswer{err: validation, msg: "The table does not have the specified index"}},

		// --- TransactWriteItems ---

		// 100 actions are accepted.
		{name: "transact_100_actions", doc: transact,
			call: transactPuts(100), want: ok()},
		// More than 100 actions are refused.
		{name: "transact_over_100_actions", doc: transact,
			call: transactPuts(101), want: fails(validation)},
		// An empty TransactItems is refused.
		{name: "transact_empty", moto: motoAccepts("moto accepts an empty TransactItems"),
			doc:  transact,
			call: req("TransactWriteItems", `{"TransactItems":[]}`), want: fails(validation)},
		// Two actions on the same item are refused.
		{name: "transact_same_item_twice", doc: transact,
			call: req("TransactWriteItems", `{"TransactItems":[
				{"Put":{"TableName":"{{T}}","Item":`+key("a")+`}},
				{"Update":{"TableName":"{{T}}","Key":`+key("a")+`,"UpdateExpression":"SET v = :v","ExpressionAttributeValues":{":v":{"S":"x"}}}}]}`),
			want: fails(validation)},
		// An action with no operation is refused.
		{name: "transact_action_without_operation", moto: motoBreaks("moto answers an action with no operation with HTTP 500"),
			doc:  `TransactWriteItem: "A list of requests that can perform update, put, delete, or check operations on multiple items in one or more tables atomically." (each names one of ConditionCheck, Put, Update, Delete)`,
			call: req("TransactWriteItems", `{"TransactItems":[{}]}`), want: fails(validation)},
		// An invalid item in a transaction is refused before anything is written.
		{name: "transact_invalid_item", doc: quotaValues,
			call: req("TransactWriteItems", `{"TransactItems":[
				{"Put":{"TableName":"{{T}}","Item":`+key("a")+`}},
				{"Put":{"TableName":"{{T}}","Item":{"PK":{"S":""},"SK":{"S":"b"}}}}]}`),
			want: fails(validation),
			then: []fidelityStep{{get(key("a")), ok(lacks("Item"))}}},
		// A failed condition cancels the transaction: a reason per action, in order, and nothing written.
		{name: "transact_condition_failed", doc: cancellation,
			setup: []fidelityCall{put(item("b", `"v":{"S":"old"}`))},
			call: req("TransactWriteItems", `{"TransactItems":[
				{"Put":{"TableName":"{{T}}","Item":`+key("a")+`}},
				{"Put":{"TableName":"{{T}}","Item":`+item("b", `"v":{"S":"new"}`)+`,"ConditionExpression":"attribute_not_exists(PK)"}},
				{"Delete":{"TableName":"{{T}}","Key":`+key("c")+`}}]}`),
			want: fails(canceled, length("CancellationReasons", 3), eq("CancellationReasons.0.Code", `"None"`),
				eq("CancellationReasons.1.Code", `"ConditionalCheckFailed"`), eq("CancellationReasons.2.Code", `"None"`),
				lacks("CancellationReasons.1.Item")),
			then: []fidelityStep{{get(key("a")), ok(lacks("Item"))}, {get(key("b")), ok(eq("Item.v.S", `"old"`))}}},
		// With ReturnValuesOnConditionCheckFailure ALL_OLD the failed action's reason holds the item.
		{name: "transact_condition_failed_all_old", doc: cancellation,
			setup: []fidelityCall{put(item("b", `"v":{"S":"old"}`))},
			call: req("TransactWriteItems", `{"TransactItems":[
				{"Put":{"TableName":"{{T}}","Item":`+key("a")+`}},
				{"Update":{"TableName":"{{T}}","Key":`+key("b")+`,"UpdateExpression":"SET v = :new","ConditionExpression":"v = :other",
					"ExpressionAttributeValues":{":new":{"S":"new"},":other":{"S":"other"}},"ReturnValuesOnConditionCheckFailure":"ALL_OLD"}}]}`),
			want: fails(canceled, length("CancellationReasons", 2), eq("CancellationReasons.0.Code", `"None"`),
				eq("CancellationReasons.1.Code", `"ConditionalCheckFailed"`), eq("CancellationReasons.1.Item.v.S", `"old"`))},
		// A failed ConditionCheck cancels the transaction.
		{name: "transact_condition_check_failed", doc: cancellation,
			call: req("TransactWriteItems", `{"TransactItems":[
				{"ConditionCheck":{"TableName":"{{T}}","Key":`+key("b")+`,"ConditionExpression":"attribute_exists(PK)"}},
				{"Put":{"TableName":"{{T}}","Item":`+key("a")+`}}]}`),
			want: fails(canceled, eq("CancellationReasons.0.Code", `"ConditionalCheckFailed"`), eq("CancellationReasons.1.Code", `"None"`)),
			then: []fidelityStep{{get(key("a")), ok(lacks("Item"))}}},
		// Put, Update, Delete and a ConditionCheck that holds are all applied.
		{name: "transact_applies_every_action", doc: `TransactWriteItems: "TransactWriteItems is a synchronous write operation that groups up to 100 action requests ... The actions are completed atomically so that either all of them succeed, or all of them fail."`,
			setup: []fidelityCall{put(item("b", `"v":{"S":"old"}`)), put(key("c")), put(key("d"))},
			call: req("TransactWriteItems", `{"TransactItems":[
				{"Put":{"TableName":"{{T}}","Item":`+key("a")+`}},
				{"Update":{"TableName":"{{T}}","Key":`+key("b")+`,"UpdateExpression":"SET v = :new","ExpressionAttributeValues":{":new":{"S":"new"}}}},
				{"Delete":{"TableName":"{{T}}","Key":`+key("c")+`}},
				{"ConditionCheck":{"TableName":"{{T}}","Key":`+key("d")+`,"ConditionExpression":"attribute_exists(PK)"}}]}`),
			want: ok(),
			then: []fidelityStep{{get(key("a")), ok(has("Item"))}, {get(key("b")), ok(eq("Item.v.S", `"new"`))}, {get(key("c")), ok(lacks("Item"))}}},
		// A transaction on a missing table is refused.
		{name: "transact_missing_table", doc: missingTable,
			call: req("TransactWriteItems", `{"TransactItems":[{"Put":{"TableName":"{{T}}-missing","Item":`+key("a")+`}}]}`), want: fails(notFound)},

		// --- BatchWriteItem ---

		// 25 requests are accepted, with an empty UnprocessedItems.
		{name: "batch_25_requests", doc: batch + ` UnprocessedItems: "A map of tables and requests against those tables that were not processed."`,
			call: batchPuts(25), want: ok(length("UnprocessedItems", 0)),
			then: []fidelityStep{{get(key("24")), ok(has("Item"))}}},
		// More than 25 requests are refused.
		{name: "batch_over_25_requests", moto: motoAccepts("moto accepts more than 25 requests"),
			doc:  batch,
			call: batchPuts(26), want: fails(validation)},
		// Two puts of the same item are refused.
		{name: "batch_duplicate_keys", moto: motoAccepts("moto accepts two requests on one item"),
			doc:  batch,
			call: req("BatchWriteItem", `{"RequestItems":{"{{T}}":[{"PutRequest":{"Item":`+key("a")+`}},{"PutRequest":{"Item":`+item("a", `"v":{"S":"x"}`)+`}}]}}`),
			want: fails(validation)},
		// A put and a delete of the same item are refused.
		{name: "batch_put_and_delete_same_key", moto: motoAccepts("moto accepts two requests on one item"),
			doc:  batch,
			call: req("BatchWriteItem", `{"RequestItems":{"{{T}}":[{"PutRequest":{"Item":`+key("a")+`}},{"DeleteRequest":{"Key":`+key("a")+`}}]}}`),
			want: fails(validation)},
		// An empty RequestItems is refused.
		{name: "batch_empty", moto: motoAccepts("moto accepts an empty RequestItems"),
			doc:  batch + ` RequestItems: "Map Entries: ... Minimum number of 1 item"`,
			call: req("BatchWriteItem", `{"RequestItems":{}}`), want: fails(validation)},
		// An empty list of requests for a table is refused.
		{name: "batch_empty_table_requests", moto: motoAccepts("moto accepts an empty list of requests"),
			doc:  batch + ` (a table's list: "Array Members: Minimum number of 1 item. Maximum number of 25 items.")`,
			call: req("BatchWriteItem", `{"RequestItems":{"{{T}}":[]}}`), want: fails(validation)},
		// A delete whose key has an attribute besides the key's is refused.
		{name: "batch_key_extra_attribute", moto: motoAccepts("moto accepts a DeleteRequest key with an attribute besides the key's"),
			doc:  `BatchWriteItem: "Primary key attributes specified on an item in the request do not match those in the corresponding table's primary key schema."`,
			call: req("BatchWriteItem", `{"RequestItems":{"{{T}}":[{"DeleteRequest":{"Key":`+item("a", `"v":{"S":"x"}`)+`}}]}}`),
			want: fails(validation)},
		// A batch on a missing table is refused.
		{name: "batch_missing_table", doc: batch + ` "One or more tables specified in the BatchWriteItem request does not exist."`,
			call: req("BatchWriteItem", `{"RequestItems":{"{{T}}-missing":[{"PutRequest":{"Item":`+key("a")+`}}]}}`), want: fails(notFound)},

		// --- Tables ---

		// CreateTable of an existing table is ResourceInUseException.
		{name: "create_existing_table", doc: `CreateTable, Errors: "ResourceInUseException: The operation conflicts with the resource's availability. For example, you attempted to recreate an existing table"`,
			call: req("CreateTable", fidelityTable), want: fails(inUse)},
		// CreateTable answers the table CREATING.
		{name: "create_table_creating", moto: &fidelityMoto{note: "moto answers CreateTable with the table ACTIVE at once", want: ok(eq("TableDescription.TableStatus", `"ACTIVE"`))},
			doc:  `CreateTable: "CreateTable is an asynchronous operation. Upon receiving a CreateTable request, DynamoDB immediately returns a response with a TableStatus of CREATING."`,
			call: otherTable("new", "S"),
			want: ok(eq("TableDescription.TableName", `"{{T}}-new"`), eq("TableDescription.TableStatus", `"CREATING"`))},
		// A table name shorter than 3 characters is refused.
		{name: "create_table_name_too_short", moto: motoAccepts("moto accepts any table name"),
			doc:  tableNames,
			call: req("CreateTable", `{"TableName":"ab","BillingMode":"PAY_PER_REQUEST","AttributeDefinitions":[{"AttributeName":"K","AttributeType":"S"}],"KeySchema":[{"AttributeName":"K","KeyType":"HASH"}]}`),
			want: fails(validation)},
		// A table name longer than 255 characters is refused.
		{name: "create_table_name_too_long", moto: motoAccepts("moto accepts any table name"),
			doc:  tableNames,
			call: req("CreateTable", `{"TableName":"`+strings.Repeat("t", 256)+`","BillingMode":"PAY_PER_REQUEST","AttributeDefinitions":[{"AttributeName":"K","AttributeType":"S"}],"KeySchema":[{"AttributeName":"K","KeyType":"HASH"}]}`),
			want: fails(validation)},
		// A table name with another character is refused.
		{name: "create_table_name_invalid_character", moto: motoAccepts("moto accepts any table name"),
			doc:  tableNames,
			call: req("CreateTable", `{"TableName":"bad name!","BillingMode":"PAY_PER_REQUEST","AttributeDefinitions":[{"AttributeName":"K","AttributeType":"S"}],"KeySchema":[{"AttributeName":"K","KeyType":"HASH"}]}`),
			want: fails(validation)},
		// An attribute definition no key uses is refused.
		// A global index holds only its projection: a filter on an
		// attribute it does not hold keeps nothing.
		{name: "query_keys_only_index_filter", doc: `Global secondary indexes, Attribute projections: "When you query an index, Amazon DynamoDB can access any attribute in the projection as if those attributes were in a table of their own" (a global index cannot fetch others from the table)`,
			setup: []fidelityCall{
				req("CreateTable", `{"TableName":"{{T}}-keys","BillingMode":"PAY_PER_REQUEST",
					"AttributeDefinitions":[{"AttributeName":"K","AttributeType":"S"},{"AttributeName":"G","AttributeType":"S"}],
					"KeySchema":[{"AttributeName":"K","KeyType":"HASH"}],
					"GlobalSecondaryIndexes":[{"IndexName":"byG","Projection":{"ProjectionType":"KEYS_ONLY"},
						"KeySchema":[{"AttributeName":"G","KeyType":"HASH"}]}]}`),
				req("PutItem", `{"TableName":"{{T}}-keys","Item":{"K":{"S":"k"},"G":{"S":"g"},"v":{"S":"1"}}}`),
			},
			call: req("Query", `{"TableName":"{{T}}-keys","IndexName":"byG","KeyConditionExpression":"G = :g","FilterExpression":"v = :one",
				"ExpressionAttributeValues":{":g":{"S":"g"},":one":{"S":"1"}}}`),
			want: ok(eq("Count", "0"), eq("ScannedCount", "1"))},
		// A transaction repeated with its ClientRequestToken is answered as
		// the first was, and writes nothing again (its condition would now
		// fail).
		{name: "transact_client_token_repeat", doc: clientToken,
			moto:  &fidelityMoto{note: "moto ignores the client token: the repeated transaction meets its own item", want: fails("TransactionCanceledException")},
			setup: []fidelityCall{req("TransactWriteItems", tokenPut("tok-1", "a"))},
			call:  req("TransactWriteItems", tokenPut("tok-1", "a")), want: ok()},
		// The same token with another request is refused.
		{name: "transact_client_token_other_request", doc: clientToken,
			moto:  &fidelityMoto{note: "moto ignores the client token and runs the other request", want: ok()},
			setup: []fidelityCall{req("TransactWriteItems", tokenPut("tok-2", "a"))},
			call:  req("TransactWriteItems", tokenPut("tok-2", "b")), want: fails("IdempotentParameterMismatchException")},
		// A local secondary index needs a table with a sort key.
		{name: "create_table_local_index_without_sort_key", moto: motoAccepts("moto creates a local index on a table without a sort key"),
			doc: `Local secondary indexes: "A local secondary index ... has the same partition key as the base table, but a different sort key" (a table without a sort key can have none)`,
			call: req("CreateTable", `{"TableName":"{{T}}-lsi","BillingMode":"PAY_PER_REQUEST",
				"AttributeDefinitions":[{"AttributeName":"K","AttributeType":"S"},{"AttributeName":"L","AttributeType":"S"}],
				"KeySchema":[{"AttributeName":"K","KeyType":"HASH"}],
				"LocalSecondaryIndexes":[{"IndexName":"byL","Projection":{"ProjectionType":"ALL"},
					"KeySchema":[{"AttributeName":"K","KeyType":"HASH"},{"AttributeName":"L","KeyType":"RANGE"}]}]}`),
			want: fails(validation)},
		{name: "create_table_unused_attribute_definition", doc: `CreateTable, AttributeDefinitions: "An array of attributes that describe the key schema for the table and indexes."`,
			call: req("CreateTable", `{"TableName":"{{T}}-u","BillingMode":"PAY_PER_REQUEST","AttributeDefinitions":[{"AttributeName":"K","AttributeType":"S"},{"AttributeName":"X","AttributeType":"S"}],"KeySchema":[{"AttributeName":"K","KeyType":"HASH"}]}`),
			want: fails(validation)},
		// A key attribute without a definition is refused.
		{name: "create_table_undefined_key_attribute", doc: `CreateTable, KeySchema: "Each KeySchemaElement in the array is composed of: AttributeName - The name of this key attribute ... The attribute must be defined in AttributeDefinitions" (AttributeDefinitions: "An array of attributes that describe the key schema")`,
			call: req("CreateTable", `{"TableName":"{{T}}-u","BillingMode":"PAY_PER_REQUEST","AttributeDefinitions":[{"AttributeName":"K","AttributeType":"S"}],"KeySchema":[{"AttributeName":"K","KeyType":"HASH"},{"AttributeName":"R","KeyType":"RANGE"}]}`),
			want: fails(validation)},
		// A provisioned table (the default) without ProvisionedThroughput is refused.
		{name: "create_table_without_throughput", doc: `CreateTable, BillingMode: "PROVISIONED - We recommend using PROVISIONED for predictable workloads. PROVISIONED sets the billing mode to Provisioned Mode." ProvisionedThroughput: "If you set BillingMode as PROVISIONED, you must specify this property." (the default billing mode is PROVISIONED)`,
			call: req("CreateTable", `{"TableName":"{{T}}-u","AttributeDefinitions":[{"AttributeName":"K","AttributeType":"S"}],"KeySchema":[{"AttributeName":"K","KeyType":"HASH"}]}`),
			want: fails(validation)},
		// DescribeTable of a missing table is ResourceNotFoundException.
		{name: "describe_missing_table", doc: missingTable,
			call: req("DescribeTable", `{"TableName":"{{T}}-missing"}`), want: fails(notFound)},
		// DescribeTable holds the table's description.
		{name: "describe_table", moto: &fidelityMoto{note: "moto's index descriptions have no IndexArn", want: ok(lacks("Table.GlobalSecondaryIndexes.0.IndexArn"))},
			doc:  `DescribeTable / TableDescription: "TableName, TableStatus, KeySchema, AttributeDefinitions, TableArn, CreationDateTime, ItemCount, TableSizeBytes, BillingModeSummary, GlobalSecondaryIndexes (IndexName, KeySchema, Projection, IndexStatus, IndexArn)"`,
			call: req("DescribeTable", `{"TableName":"{{T}}"}`),
			want: ok(eq("Table.TableName", `"{{T}}"`), eq("Table.TableStatus", `"ACTIVE"`), length("Table.KeySchema", 2),
				eq("Table.KeySchema.0", `{"AttributeName":"PK","KeyType":"HASH"}`), eq("Table.KeySchema.1", `{"AttributeName":"SK","KeyType":"RANGE"}`),
				length("Table.AttributeDefinitions", 6), has("Table.TableArn"), has("Table.CreationDateTime"), has("Table.ItemCount"),
				has("Table.TableSizeBytes"), eq("Table.BillingModeSummary.BillingMode", `"PAY_PER_REQUEST"`),
				length("Table.GlobalSecondaryIndexes", 2), eq("Table.GlobalSecondaryIndexes.0.IndexStatus", `"ACTIVE"`),
				eq("Table.GlobalSecondaryIndexes.1.IndexStatus", `"ACTIVE"`), has("Table.GlobalSecondaryIndexes.0.IndexName"),
				has("Table.GlobalSecondaryIndexes.0.IndexArn"), eq("Table.GlobalSecondaryIndexes.0.Projection.ProjectionType", `"ALL"`),
				length("Table.GlobalSecondaryIndexes.0.KeySchema", 2))},
		// DeleteTable answers the table DELETING.
		{name: "delete_table_deleting", moto: &fidelityMoto{note: "moto answers DeleteTable with the table ACTIVE", want: ok(eq("TableDescription.TableStatus", `"ACTIVE"`))},
			doc:  `DeleteTable: "When DynamoDB receives this request, the table is in the DELETING state until DynamoDB completes the deletion." TableDescription.TableStatus: "DELETING - The table is being deleted."`,
			call: req("DeleteTable", `{"TableName":"{{T}}"}`),
			want: ok(eq("TableDescription.TableName", `"{{T}}"`), eq("TableDescription.TableStatus", `"DELETING"`))},
		// DeleteTable of a missing table is ResourceNotFoundException.
		{name: "delete_missing_table", doc: `DeleteTable, Errors: "ResourceNotFoundException: The operation tried to access a nonexistent table or index."`,
			call: req("DeleteTable", `{"TableName":"{{T}}-missing"}`), want: fails(notFound)},
		// PutItem on a missing table is ResourceNotFoundException.
		{name: "put_missing_table", doc: missingTable,
			call: req("PutItem", `{"TableName":"{{T}}-missing","Item":`+key("a")+`}`), want: fails(notFound)},
		// GetItem on a missing table is ResourceNotFoundException.
		{name: "get_missing_table", doc: missingTable,
			call: req("GetItem", `{"TableName":"{{T}}-missing","Key":`+key("a")+`}`), want: fails(notFound)},
		// UpdateItem on a missing table is ResourceNotFoundException.
		{name: "update_missing_table", doc: missingTable,
			call: req("UpdateItem", `{"TableName":"{{T}}-missing","Key":`+key("a")+`,"UpdateExpression":"SET v = :v","ExpressionAttributeValues":{":v":{"S":"x"}}}`), want: fails(notFound)},
		// DeleteItem on a missing table is ResourceNotFoundException.
		{name: "delete_item_missing_table", doc: missingTable,
			call: req("DeleteItem", `{"TableName":"{{T}}-missing","Key":`+key("a")+`}`), want: fails(notFound)},
		// Query on a missing table is ResourceNotFoundException.
		{name: "query_missing_table", doc: missingTable,
			call: req("Query", `{"TableName":"{{T}}-missing","KeyConditionExpression":"PK = :p","ExpressionAttributeValues":{":p":{"S":"p"}}}`), want: fails(notFound)},
		// Scan on a missing table is ResourceNotFoundException.
		{name: "scan_missing_table", doc: missingTable,
			call: req("Scan", `{"TableName":"{{T}}-missing"}`), want: fails(notFound)},
		// ListTables Limit 0 is refused.
		{name: "list_tables_limit_zero", moto: motoAccepts("moto accepts a ListTables Limit out of 1..100"),
			doc:  listLimit,
			call: req("ListTables", `{"Limit":0}`), want: fails(validation)},
		// ListTables Limit 101 is refused.
		{name: "list_tables_limit_over_100", moto: motoAccepts("moto accepts a ListTables Limit out of 1..100"),
			doc:  listLimit,
			call: req("ListTables", `{"Limit":101}`), want: fails(validation)},
		// ListTables stopped by Limit answers LastEvaluatedTableName.
		{name: "list_tables_limit", doc: listLimit + ` LastEvaluatedTableName: "The name of the last table in the current page of results. Use this value as the ExclusiveStartTableName in a new request to obtain the next page of results"`,
			setup: []fidelityCall{otherTable("2", "S")},
			call:  req("ListTables", `{"Limit":1}`), want: ok(length("TableNames", 1), has("LastEvaluatedTableName"))},
		// UpdateTimeToLive answers the specification it set.
		{name: "ttl_update", doc: `UpdateTimeToLive, Response: "TimeToLiveSpecification: Represents the output of an UpdateTimeToLive operation."`,
			call: fidelityTTL,
			want: ok(eq("TimeToLiveSpecification", `{"AttributeName":"expiresAt","Enabled":true}`))},
		// UpdateTimeToLive a second time is refused.
		{name: "ttl_update_twice", moto: motoAccepts("moto accepts UpdateTimeToLive again at once"),
			doc: ttlQuota, ttl: true,
			call: fidelityTTL, want: fails(validation)},
		// DescribeTimeToLive of a table with TTL enabled.
		{name: "ttl_describe_enabled", doc: `DescribeTimeToLive / TimeToLiveDescription: "AttributeName: The name of the TTL attribute for items in the table. TimeToLiveStatus: The TTL status for the table. Valid Values: ENABLING | DISABLING | ENABLED | DISABLED"`, ttl: true,
			call: req("DescribeTimeToLive", `{"TableName":"{{T}}"}`),
			want: ok(eq("TimeToLiveDescription.TimeToLiveStatus", `"ENABLED"`), eq("TimeToLiveDescription.AttributeName", `"expiresAt"`))},
		// DescribeTimeToLive of a table without TTL.
		{name: "ttl_describe_disabled", doc: `DescribeTimeToLive / TimeToLiveDescription: "TimeToLiveStatus: The TTL status for the table. Valid Values: ENABLING | DISABLING | ENABLED | DISABLED"`,
			call: req("DescribeTimeToLive", `{"TableName":"{{T}}"}`),
			want: ok(eq("TimeToLiveDescription.TimeToLiveStatus", `"DISABLED"`))},
		// DescribeTimeToLive of a missing table is ResourceNotFoundException.
		{name: "ttl_describe_missing_table", moto: &fidelityMoto{note: "moto's __type for a missing table's time to live is ResourceNotFound, not ResourceNotFoundException", want: fails("ResourceNotFound")},
			doc:  missingTable,
			call: req("DescribeTimeToLive", `{"TableName":"{{T}}-missing"}`), want: fails(notFound)},
		// UpdateTimeToLive of a missing table is ResourceNotFoundException.
		{name: "ttl_update_missing_table", moto: &fidelityMoto{note: "moto's __type for a missing table's time to live is ResourceNotFound, not ResourceNotFoundException", want: fails("ResourceNotFound")},
			doc:  missingTable,
			call: req("UpdateTimeToLive", `{"TableName":"{{T}}-missing","TimeToLiveSpecification":{"AttributeName":"expiresAt","Enabled":true}}`), want: fails(notFound)},

		// --- The protocol ---

		// An operation DynamoDB does not have is UnknownOperationException.
		{name: "unknown_operation", moto: motoBreaks("moto answers an unknown operation with HTTP 500"),
			doc:  errorTypes,
			call: req("FlyToTheMoon", `{"TableName":"{{T}}"}`), want: fails("UnknownOperationException")},
		// A body that is not JSON is SerializationException.
		{name: "malformed_json", moto: motoBreaks("moto answers a body that is not JSON with HTTP 500"),
			doc:  errorTypes,
			call: req("PutItem", `{"TableName":"{{T}}","Item":`), want: fails("SerializationException")},
		// PutItem without TableName is refused.
		{name: "put_without_table_name", moto: motoBreaks("moto answers a request without a required member with HTTP 500"),
			doc:  `PutItem, TableName: "Required: Yes"` + "; " + errorTypes,
			call: req("PutItem", `{"Item":`+key("a")+`}`), want: fails(validation)},
		// PutItem without Item is refused.
		{name: "put_without_item", moto: motoBreaks("moto answers a request without a required member with HTTP 500"),
			doc:  `PutItem, Item: "Required: Yes"`,
			call: req("PutItem", `{"TableName":"{{T}}"}`), want: fails(validation)},
		// GetItem without Key is refused.
		{name: "get_without_key", moto: motoBreaks("moto answers a request without a required member with HTTP 500"),
			doc:  `GetItem, Key: "Required: Yes"`,
			call: req("GetItem", `{"TableName":"{{T}}"}`), want: fails(validation)},
		// UpdateItem without Key is refused.
		{name: "update_without_key", moto: motoBreaks("moto answers a request without a required member with HTTP 500"),
			doc:  `UpdateItem, Key: "Required: Yes"`,
			call: req("UpdateItem", `{"TableName":"{{T}}","UpdateExpression":"SET v = :v","ExpressionAttributeValues":{":v":{"S":"x"}}}`), want: fails(validation)},
		// Query without TableName is refused.
		{name: "query_without_table_name", moto: motoBreaks("moto answers a request without a required member with HTTP 500"),
			doc:  `Query, TableName: "Required: Yes"`,
			call: req("Query", `{"KeyConditionExpression":"PK = :p","ExpressionAttributeValues":{":p":{"S":"p"}}}`), want: fails(validation)},
	}
}

// fidelityEndpoint is a DynamoDB endpoint that the cases run on.
type fidelityEndpoint struct {
	url  string
	moto bool
}

var (
	fidelityTables atomic.Int64
	fidelityClient = &http.Client{Timeout: 60 * time.Second}
)

// fidelityResponse is an endpoint's answer: its status and its JSON body.
type fidelityResponse struct {
	status int
	body   map[string]any
	raw    string
}

func runFidelity(t *testing.T, ep fidelityEndpoint, cases []fidelityCase) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { ep.run(t, c) })
	}
}

// run runs the case on a fresh table of its own.
func (ep fidelityEndpoint) run(t *testing.T, c fidelityCase) {
	calls := append([]fidelityCall{c.call}, c.setup...)
	for _, s := range c.then {
		calls = append(calls, s.call)
	}
	for _, b := range calls {
		if !json.Valid([]byte(b.body)) && c.want.err != "SerializationException" {
			t.Fatalf("the case's %s body is not JSON: %.200s", b.op, b.body)
		}
	}
	table := fmt.Sprintf("fidelity-%03d", fidelityTables.Add(1))
	ep.createTable(t, table, fidelityTable)
	if c.ttl {
		ep.mustSucceed(t, table, fidelityTTL)
	}
	for _, s := range c.setup {
		if s.op == "CreateTable" {
			ep.createTable(t, table, s.body)
			continue
		}
		ep.mustSucceed(t, table, s)
	}
	if c.call.op == "CreateTable" {
		t.Cleanup(func() { ep.deleteTable(fidelityTableName(c.call.body, table)) })
	}

	got := ep.send(t, table, c.call)
	thenGot := make([]fidelityResponse, len(c.then))
	for i, s := range c.then {
		thenGot[i] = ep.send(t, table, s.call)
	}
	// compare lists how the answers differ from want and from the then
	// steps' answers (thenWant[i] in place of the i-th where there is one).
	compare := func(want fidelityAnswer, thenWant []fidelityAnswer) []string {
		problems := want.compare(got, table)
		for i, s := range c.then {
			w := s.want
			if i < len(thenWant) {
				w = thenWant[i]
			}
			for _, p := range w.compare(thenGot[i], table) {
				problems = append(problems, "then "+s.call.op+": "+p)
			}
		}
		return problems
	}
	problems := compare(c.want, nil)
	if ep.moto && c.moto != nil {
		if len(problems) == 0 {
			t.Errorf("moto now gives DynamoDB's documented answer; remove the case's moto note (%s)", c.moto.note)
		} else if differ := compare(c.moto.want, c.moto.then); len(differ) > 0 {
			t.Errorf("moto no longer differs as noted (%s): %s", c.moto.note, strings.Join(differ, "; "))
		} else {
			t.Logf("moto differs, as noted (%s): %s", c.moto.note, strings.Join(problems, "; "))
		}
		return
	}
	if len(problems) > 0 {
		t.Logf("doc: %s", c.doc)
	}
	for _, p := range problems {
		t.Error(p)
	}
}

// fidelityTableName is the TableName of a request body, {{T}} standing for
// table.
func fidelityTableName(body, table string) string {
	var b struct{ TableName string }
	_ = json.Unmarshal([]byte(strings.ReplaceAll(body, "{{T}}", table)), &b)
	return b.TableName
}

// send posts the request, {{T}} replaced with the table's name.
func (ep fidelityEndpoint) send(t *testing.T, table string, c fidelityCall) fidelityResponse {
	t.Helper()
	r, err := ep.request(c.op, strings.ReplaceAll(c.body, "{{T}}", table))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := fidelityClient.Do(r)
	if err != nil {
		t.Fatalf("%s: %v", c.op, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s: reading the answer: %v", c.op, err)
	}
	var m map[string]any
	_ = json.Unmarshal(raw, &m)
	return fidelityResponse{status: resp.StatusCode, body: m, raw: string(raw)}
}

// mustSucceed sends a setup request, which must succeed.
func (ep fidelityEndpoint) mustSucceed(t *testing.T, table string, c fidelityCall) fidelityResponse {
	t.Helper()
	r := ep.send(t, table, c)
	if r.status != http.StatusOK {
		t.Fatalf("setup %s: HTTP %d %.500s", c.op, r.status, r.raw)
	}
	return r
}

// createTable creates a table (body's {{T}} standing for table), deletes
// it when the test ends, and waits until it and its indexes are ACTIVE.
func (ep fidelityEndpoint) createTable(t *testing.T, table, body string) {
	t.Helper()
	name := fidelityTableName(body, table)
	ep.mustSucceed(t, table, fidelityCall{"CreateTable", body})
	t.Cleanup(func() { ep.deleteTable(name) })
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		r := ep.mustSucceed(t, table, fidelityCall{"DescribeTable", `{"TableName":"` + name + `"}`})
		if r.active() {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("table %s not ACTIVE after 60 s: %.500s", name, r.raw)
		}
	}
}

// active says whether a DescribeTable answer's table and indexes are
// ACTIVE (a status it leaves out is taken as ACTIVE: the case
// describe_table checks the statuses).
func (r fidelityResponse) active() bool {
	if status, found := r.lookup("Table.TableStatus"); found && status != "ACTIVE" {
		return false
	}
	gsis, _ := r.lookup("Table.GlobalSecondaryIndexes")
	list, _ := gsis.([]any)
	for i := range list {
		if status, found := r.lookup(fmt.Sprintf("Table.GlobalSecondaryIndexes.%d.IndexStatus", i)); found && status != "ACTIVE" {
			return false
		}
	}
	return true
}

// deleteTable deletes a table, whatever the answer.
func (ep fidelityEndpoint) deleteTable(name string) {
	r, err := ep.request("DeleteTable", `{"TableName":"`+name+`"}`)
	if err != nil {
		return
	}
	if resp, err := fidelityClient.Do(r); err == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}

// request is a request of op with body, as the SDK sends it (moto reads
// the region from its Authorization header).
func (ep fidelityEndpoint) request(op, body string) (*http.Request, error) {
	r, err := http.NewRequest(http.MethodPost, ep.url+"/", strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	r.Header.Set("X-Amz-Target", "DynamoDB_20120810."+op)
	r.Header.Set("Content-Type", "application/x-amz-json-1.0")
	r.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential=local/20240101/us-east-1/dynamodb/aws4_request, SignedHeaders=content-type;host;x-amz-target, Signature=00")
	return r, nil
}

// compare lists how the response differs from the answer.
func (w fidelityAnswer) compare(r fidelityResponse, table string) []string {
	typ := r.errorType()
	if w.status != 0 {
		if r.status != w.status {
			return []string{fmt.Sprintf("want HTTP %d, got HTTP %d: %.300s", w.status, r.status, r.raw)}
		}
		return nil
	}
	if w.err == "" {
		if r.status != http.StatusOK || typ != "" {
			return []string{fmt.Sprintf("want success, got HTTP %d: %.300s", r.status, r.raw)}
		}
	} else {
		if r.status != http.StatusBadRequest || typ != w.err {
			return []string{fmt.Sprintf("want HTTP 400 %s, got HTTP %d: %.300s", w.err, r.status, r.raw)}
		}
		if w.msg != "" && !strings.Contains(r.message(), w.msg) {
			return []string{fmt.Sprintf("want a message holding %q, got %q", w.msg, r.message())}
		}
	}
	var problems []string
	for _, c := range w.checks {
		if p := c.compare(r, table); p != "" {
			problems = append(problems, p)
		}
	}
	return problems
}

// compare says how the response differs from the check, or "".
func (c fidelityCheck) compare(r fidelityResponse, table string) string {
	v, found := r.lookup(c.path)
	got, _ := json.Marshal(v)
	switch c.kind {
	case "has":
		if !found {
			return fmt.Sprintf("want %s, absent: %.300s", c.path, r.raw)
		}
	case "lacks":
		if found {
			return fmt.Sprintf("want no %s, got %.300s", c.path, got)
		}
	case "eq":
		var want any
		if err := json.Unmarshal([]byte(strings.ReplaceAll(c.want, "{{T}}", table)), &want); err != nil {
			return fmt.Sprintf("the case's value for %s is not JSON: %v", c.path, err)
		}
		if !found {
			return fmt.Sprintf("want %s = %s, absent: %.300s", c.path, c.want, r.raw)
		}
		if !reflect.DeepEqual(v, want) {
			return fmt.Sprintf("want %s = %s, got %.300s", c.path, c.want, got)
		}
	case "len":
		if !found {
			return fmt.Sprintf("want %s of %d, absent: %.300s", c.path, c.n, r.raw)
		}
		n := -1
		switch x := v.(type) {
		case []any:
			n = len(x)
		case map[string]any:
			n = len(x)
		}
		if n != c.n {
			return fmt.Sprintf("want %s of %d, got %.300s", c.path, c.n, got)
		}
	}
	return ""
}

// lookup follows a path of member names and list indexes in the body.
func (r fidelityResponse) lookup(path string) (any, bool) {
	var v any = r.body
	for _, seg := range strings.Split(path, ".") {
		switch x := v.(type) {
		case map[string]any:
			var found bool
			if v, found = x[seg]; !found {
				return nil, false
			}
		case []any:
			i, err := strconv.Atoi(seg)
			if err != nil || i < 0 || i >= len(x) {
				return nil, false
			}
			v = x[i]
		default:
			return nil, false
		}
	}
	return v, true
}

// errorType is the part of the answer's __type after '#', or "".
func (r fidelityResponse) errorType() string {
	typ, _ := r.body["__type"].(string)
	return typ[strings.LastIndex(typ, "#")+1:]
}

// message is the error's message.
func (r fidelityResponse) message() string {
	for _, k := range []string{"message", "Message"} {
		if m, ok := r.body[k].(string); ok {
			return m
		}
	}
	return ""
}
