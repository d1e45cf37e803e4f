package local

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode"
)

// dynamoEndpoint is the embedded DynamoDB endpoint: minidyn (next) holds
// the tables and their items, and the endpoint answers in front of it
// what minidyn does not answer as DynamoDB does, so that the AWS CLI and
// the SDK's waiters work against it:
//
//   - ListTables (Limit and ExclusiveStartTableName honoured), from the
//     tables it created;
//   - UpdateTimeToLive and DescribeTimeToLive, from the specification it
//     records per table (ENABLED or DISABLED at once; no item is ever
//     deleted for its TTL);
//   - the TableStatus of every table description (ACTIVE, DELETING in the
//     answer of DeleteTable), without the null and empty members minidyn
//     writes there;
//   - Scan and Query: a Count even when it is 0 (minidyn leaves it out),
//     and with Select COUNT no items;
//   - a parallel Scan (Segment of TotalSegments): only the segment's items,
//     an item's segment fixed by its partition key (minidyn ignores both
//     members and answers every segment with every item);
//   - PutItem: no attributes unless ReturnValues is ALL_OLD, and then the
//     item it replaced;
//   - UpdateItem, and the updates of a TransactWriteItems, with a REMOVE
//     clause: the top-level attributes it names are removed (minidyn
//     leaves them in the item).
//
// Every answer has its empty lists and maps typed (see typeResponse) and
// the CRC32 of its body in X-Amz-Crc32, as DynamoDB sends it and the SDK
// checks it.
type dynamoEndpoint struct {
	next http.Handler
	// mu is held shared by every request, and alone by those that change
	// tables or read an item before they write it: minidyn does not order
	// table changes with the requests that read its tables.
	mu     sync.RWMutex
	tables map[string]*endpointTable
}

// endpointTable is what the endpoint records of a table it created.
type endpointTable struct {
	key          []string // the key attributes' names
	ttlAttribute string   // "" while TTL is disabled
}

// endpointRequest holds the members of a request that the endpoint reads.
type endpointRequest struct {
	TableName                string
	Select                   string
	ReturnValues             string
	UpdateExpression         string
	ExpressionAttributeNames map[string]string
	Key                      map[string]json.RawMessage
	TransactItems            []struct{ Update *endpointUpdate }
	Limit                    *int
	Segment                  *int
	TotalSegments            *int
	ExclusiveStartTableName  string
	KeySchema                []struct{ AttributeName string }
	Item                     map[string]json.RawMessage
	TimeToLiveSpecification  *struct {
		AttributeName string
		Enabled       *bool
	}
}

// endpointUpdate is an update of a transaction, as the endpoint reads it.
type endpointUpdate struct {
	TableName                string
	Key                      map[string]json.RawMessage
	UpdateExpression         string
	ExpressionAttributeNames map[string]string
}

// removals are the updates of a request (an UpdateItem, or the updates of
// a TransactWriteItems) whose REMOVE clause names top-level attributes.
func (in endpointRequest) removals() []endpointUpdate {
	var out []endpointUpdate
	if len(removedNames(in.UpdateExpression, in.ExpressionAttributeNames)) > 0 {
		out = append(out, endpointUpdate{in.TableName, in.Key, in.UpdateExpression, in.ExpressionAttributeNames})
	}
	for _, it := range in.TransactItems {
		if u := it.Update; u != nil && len(removedNames(u.UpdateExpression, u.ExpressionAttributeNames)) > 0 {
			out = append(out, *u)
		}
	}
	return out
}

// edited names the operations the endpoint answers, or whose answers it
// edits.
var edited = map[string]bool{
	"CreateTable": true, "DeleteTable": true, "UpdateTable": true, "DescribeTable": true, "ListTables": true,
	"UpdateTimeToLive": true, "DescribeTimeToLive": true, "PutItem": true, "UpdateItem": true, "TransactWriteItems": true, "Scan": true, "Query": true,
}

func newDynamoEndpoint(next http.Handler) *dynamoEndpoint {
	return &dynamoEndpoint{next: next, tables: map[string]*endpointTable{}}
}

func (e *dynamoEndpoint) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	target := r.Header.Get("X-Amz-Target")
	op := target[strings.LastIndexByte(target, '.')+1:]
	// Only the requests the endpoint answers or edits are read here; one it
	// cannot read goes to minidyn, which refuses it.
	var in endpointRequest
	if r.Method != http.MethodPost || edited[op] && json.Unmarshal(body, &in) != nil {
		op = ""
	}
	switch {
	case op == "CreateTable" || op == "DeleteTable" || op == "UpdateTable" || op == "UpdateTimeToLive":
		e.mu.Lock()
		defer e.mu.Unlock()
		e.change(w, r, op, in)
	case op == "PutItem":
		e.mu.Lock()
		defer e.mu.Unlock()
		e.replace(w, r, in)
	case (op == "UpdateItem" || op == "TransactWriteItems") && len(in.removals()) > 0:
		e.mu.Lock()
		defer e.mu.Unlock()
		e.update(w, r, in)
	default:
		e.mu.RLock()
		defer e.mu.RUnlock()
		e.read(w, r, op, in)
	}
}

// change serves a request that changes a table, under mu held alone.
func (e *dynamoEndpoint) change(w http.ResponseWriter, r *http.Request, op string, in endpointRequest) {
	switch op {
	case "CreateTable":
		if e.relay(w, r, func(doc map[string]any) { describeTable(doc["TableDescription"], "ACTIVE") }) {
			t := &endpointTable{}
			for _, k := range in.KeySchema {
				t.key = append(t.key, k.AttributeName)
			}
			e.tables[in.TableName] = t
		}
	case "DeleteTable":
		if e.relay(w, r, func(doc map[string]any) { describeTable(doc["TableDescription"], "DELETING") }) {
			delete(e.tables, in.TableName)
		}
	case "UpdateTable":
		e.relay(w, r, func(doc map[string]any) { describeTable(doc["TableDescription"], "ACTIVE") })
	case "UpdateTimeToLive":
		e.updateTimeToLive(w, in)
	}
}

// read serves a request that changes no table, under mu held shared.
func (e *dynamoEndpoint) read(w http.ResponseWriter, r *http.Request, op string, in endpointRequest) {
	switch op {
	case "DescribeTable":
		e.relay(w, r, func(doc map[string]any) { describeTable(doc["Table"], "ACTIVE") })
	case "ListTables":
		e.listTables(w, in)
	case "DescribeTimeToLive":
		t, ok := e.tables[in.TableName]
		if !ok {
			dynamoNotFound(w, in.TableName)
			return
		}
		d := map[string]any{"TimeToLiveStatus": "DISABLED"}
		if t.ttlAttribute != "" {
			d = map[string]any{"TimeToLiveStatus": "ENABLED", "AttributeName": t.ttlAttribute}
		}
		dynamoAnswer(w, http.StatusOK, map[string]any{"TimeToLiveDescription": d})
	case "Scan", "Query":
		segment, ok := e.segment(w, op, in)
		if !ok {
			return
		}
		e.relay(w, r, func(doc map[string]any) {
			if segment != nil {
				segment(doc)
			}
			if _, ok := doc["Count"]; !ok {
				doc["Count"] = 0
			}
			if in.Select == "COUNT" {
				delete(doc, "Items")
			}
		})
	default:
		e.relay(w, r, nil)
	}
}

// segment checks a Scan's Segment and TotalSegments as DynamoDB does and
// returns the edit that keeps only the segment's items of an answer (nil
// when the request names no segment); ok is false when it answered the
// request with an error.
func (e *dynamoEndpoint) segment(w http.ResponseWriter, op string, in endpointRequest) (edit func(map[string]any), ok bool) {
	if op != "Scan" || in.Segment == nil && in.TotalSegments == nil {
		return nil, true
	}
	switch seg, total := in.Segment, in.TotalSegments; {
	case seg == nil || total == nil:
		dynamoInvalid(w, "The Segment and TotalSegments parameters must be given together")
		return nil, false
	case *total < 1 || *total > 1000000:
		dynamoInvalid(w, fmt.Sprintf("1 validation error detected: Value '%d' at 'totalSegments' failed to satisfy constraint: Member must have value between 1 and 1000000", *total))
		return nil, false
	case *seg < 0 || *seg >= *total:
		dynamoInvalid(w, fmt.Sprintf("The Segment parameter is zero-based and must be less than parameter TotalSegments: Segment: %d is not less than TotalSegments: %d", *seg, *total))
		return nil, false
	case in.Select == "COUNT":
		// The segment's items are picked from the answer's, which has none.
		dynamoInvalid(w, "the embedded endpoint does not count the items of one segment: leave Select out")
		return nil, false
	}
	t, known := e.tables[in.TableName]
	if !known || len(t.key) == 0 {
		return nil, true // minidyn answers for a table it does not have
	}
	return func(doc map[string]any) {
		items, _ := doc["Items"].([]any)
		kept := []any{}
		for _, item := range items {
			m, _ := item.(map[string]any)
			key, _ := json.Marshal(m[t.key[0]])
			if int(crc32.ChecksumIEEE(key)%uint32(*in.TotalSegments)) == *in.Segment {
				kept = append(kept, item)
			}
		}
		doc["Items"] = kept
		doc["Count"] = len(kept)
	}, true
}

// listTables answers a page of the tables' names in order: at most Limit
// (1 to 100, 100 if unset) after ExclusiveStartTableName, and the last of
// them as LastEvaluatedTableName when more follow.
func (e *dynamoEndpoint) listTables(w http.ResponseWriter, in endpointRequest) {
	limit := 100
	if in.Limit != nil {
		limit = *in.Limit
	}
	if limit < 1 || limit > 100 {
		dynamoInvalid(w, fmt.Sprintf("1 validation error detected: Value '%d' at 'limit' failed to satisfy constraint: Member must have value between 1 and 100", limit))
		return
	}
	names := []string{}
	for name := range e.tables {
		if name > in.ExclusiveStartTableName {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	out := map[string]any{"TableNames": names}
	if len(names) > limit {
		out["TableNames"] = names[:limit]
		out["LastEvaluatedTableName"] = names[limit-1]
	}
	dynamoAnswer(w, http.StatusOK, out)
}

// updateTimeToLive records a table's TTL specification, refusing, as
// DynamoDB does, to enable it twice or disable it when it is not enabled
// on that attribute.
func (e *dynamoEndpoint) updateTimeToLive(w http.ResponseWriter, in endpointRequest) {
	t, ok := e.tables[in.TableName]
	spec := in.TimeToLiveSpecification
	switch {
	case !ok:
		dynamoNotFound(w, in.TableName)
	case spec == nil || spec.AttributeName == "" || spec.Enabled == nil:
		dynamoInvalid(w, "TimeToLiveSpecification needs AttributeName and Enabled")
	case *spec.Enabled && t.ttlAttribute != "":
		dynamoInvalid(w, "TimeToLive is already enabled")
	case !*spec.Enabled && t.ttlAttribute == "":
		dynamoInvalid(w, "TimeToLive is already disabled")
	case !*spec.Enabled && t.ttlAttribute != spec.AttributeName:
		dynamoInvalid(w, "TimeToLive is active on a different AttributeName: current AttributeName is "+t.ttlAttribute)
	default:
		t.ttlAttribute = ""
		if *spec.Enabled {
			t.ttlAttribute = spec.AttributeName
		}
		dynamoAnswer(w, http.StatusOK, map[string]any{"TimeToLiveSpecification": map[string]any{"AttributeName": spec.AttributeName, "Enabled": *spec.Enabled}})
	}
}

// replace serves a PutItem that asks for ALL_OLD, under mu held alone:
// it reads the item the put replaces, which minidyn does not return, and
// answers it when the put succeeds.
func (e *dynamoEndpoint) replace(w http.ResponseWriter, r *http.Request, in endpointRequest) {
	if in.ReturnValues != "" && in.ReturnValues != "NONE" && in.ReturnValues != "ALL_OLD" {
		dynamoInvalid(w, "ReturnValues can only be ALL_OLD or NONE")
		return
	}
	var old map[string]any
	key := map[string]json.RawMessage{}
	if t, ok := e.tables[in.TableName]; ok {
		for _, k := range t.key {
			if v, ok := in.Item[k]; ok {
				key[k] = v
			}
		}
		if doc, ok := e.call(r, "GetItem", map[string]any{"TableName": in.TableName, "Key": key, "ConsistentRead": true}); ok {
			old, _ = doc["Item"].(map[string]any)
		}
	}
	e.relay(w, r, func(doc map[string]any) {
		delete(doc, "Attributes")
		if old != nil && in.ReturnValues == "ALL_OLD" {
			doc["Attributes"] = old
		}
		for name := range old {
			if _, kept := in.Item[name]; !kept {
				e.reindex(r, in.TableName, key, old, in.Item)
				break
			}
		}
	})
}

// reindex stores after in place of the item of key, taking the item out
// of the indexes whose keys after no longer has: minidyn does not (its
// index keeps listing the item, and a later delete unsettles the index's
// order). The item is put back as it was (before, when it is no longer
// what is stored) so that deleting it takes it out of every index it was
// in; then after is put, into the indexes it belongs to.
func (e *dynamoEndpoint) reindex(r *http.Request, table string, key, before, after any) {
	if before != nil {
		e.call(r, "PutItem", map[string]any{"TableName": table, "Item": before})
	}
	e.call(r, "DeleteItem", map[string]any{"TableName": table, "Key": key})
	e.call(r, "PutItem", map[string]any{"TableName": table, "Item": after})
}

// update serves an UpdateItem or a TransactWriteItems whose updates have
// a REMOVE clause, under mu held alone: once minidyn has applied the
// request (its conditions and every other clause), each updated item is
// written back without the top-level attributes its clause names, and an
// UpdateItem's new attributes leave them out too.
func (e *dynamoEndpoint) update(w http.ResponseWriter, r *http.Request, in endpointRequest) {
	e.relay(w, r, func(doc map[string]any) {
		for _, u := range in.removals() {
			names := removedNames(u.UpdateExpression, u.ExpressionAttributeNames)
			got, _ := e.call(r, "GetItem", map[string]any{"TableName": u.TableName, "Key": u.Key, "ConsistentRead": true})
			if item, ok := got["Item"].(map[string]any); ok {
				for _, n := range names {
					delete(item, n)
				}
				e.reindex(r, u.TableName, u.Key, nil, item)
			}
			if attrs, ok := doc["Attributes"].(map[string]any); ok && strings.HasSuffix(in.ReturnValues, "_NEW") {
				for _, n := range names {
					delete(attrs, n)
				}
			}
		}
	})
}

// removedNames are the top-level attributes that an update expression's
// REMOVE clause names, through names for placeholders; nested paths are
// left to minidyn.
func removedNames(expr string, names map[string]string) []string {
	var out []string
	removing := false
	for _, tok := range strings.FieldsFunc(expr, func(r rune) bool { return r == ',' || unicode.IsSpace(r) }) {
		switch strings.ToUpper(tok) {
		case "REMOVE":
			removing = true
			continue
		case "SET", "ADD", "DELETE":
			removing = false
			continue
		}
		if !removing || strings.ContainsAny(tok, ".[") {
			continue
		}
		if n, ok := names[tok]; ok {
			tok = n
		}
		out = append(out, tok)
	}
	return out
}

// call sends one request of r's context to minidyn and decodes its answer;
// ok is false when it failed.
func (e *dynamoEndpoint) call(r *http.Request, op string, in any) (doc map[string]any, ok bool) {
	body, _ := json.Marshal(in)
	rec := httptest.NewRecorder()
	req := httptest.NewRequestWithContext(r.Context(), http.MethodPost, "/", bytes.NewReader(body))
	req.Header.Set("X-Amz-Target", "DynamoDB_20120810."+op)
	e.next.ServeHTTP(rec, req)
	return doc, rec.Code == http.StatusOK && decodeObject(rec.Body.Bytes(), &doc) == nil
}

// relay serves r with minidyn and sends its answer, edited by edit when
// it succeeded. It reports whether it succeeded.
func (e *dynamoEndpoint) relay(w http.ResponseWriter, r *http.Request, edit func(doc map[string]any)) bool {
	rec := httptest.NewRecorder()
	e.next.ServeHTTP(rec, r)
	ok := rec.Code == http.StatusOK
	body := rec.Body.Bytes()
	var doc map[string]any
	if (ok && edit != nil || bytes.Contains(body, []byte("{}"))) && decodeObject(body, &doc) == nil {
		if ok && edit != nil {
			edit(doc)
		}
		typeResponse(doc)
		body, _ = json.Marshal(doc)
	}
	dynamoSend(w, rec.Code, rec.Header(), body)
	return ok
}

// decodeObject reads a JSON object, its numbers digit for digit.
func decodeObject(body []byte, doc *map[string]any) error {
	d := json.NewDecoder(bytes.NewReader(body))
	d.UseNumber()
	return d.Decode(doc)
}

// describeTable gives a table description its status, and drops the
// null and empty members minidyn writes for what it does not describe
// (DynamoDB leaves them out).
func describeTable(v any, status string) {
	if d, ok := v.(map[string]any); ok {
		compactObjects(d)
		d["TableStatus"] = status
	}
}

// compactObjects drops the null and "" members of every object in v, at any
// depth.
func compactObjects(v any) {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if x == nil || x == "" {
				delete(v, k)
			} else {
				compactObjects(x)
			}
		}
	case []any:
		for _, x := range v {
			compactObjects(x)
		}
	}
}

// dynamoAnswer sends an answer of the endpoint's own.
func dynamoAnswer(w http.ResponseWriter, code int, doc map[string]any) {
	body, _ := json.Marshal(doc)
	dynamoSend(w, code, http.Header{"Content-Type": {"application/x-amz-json-1.0"}}, body)
}

func dynamoNotFound(w http.ResponseWriter, table string) {
	dynamoAnswer(w, http.StatusBadRequest, map[string]any{
		"__type":  "com.amazonaws.dynamodb.v20120810#ResourceNotFoundException",
		"message": "Requested resource not found: Table: " + table + " not found",
	})
}

func dynamoInvalid(w http.ResponseWriter, msg string) {
	dynamoAnswer(w, http.StatusBadRequest, map[string]any{"__type": "com.amazon.coral.validate#ValidationException", "message": msg})
}

// dynamoSend writes an answer with the CRC32 of its body.
func dynamoSend(w http.ResponseWriter, code int, header http.Header, body []byte) {
	for k, vs := range header {
		w.Header()[k] = vs
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.Header().Set("X-Amz-Crc32", strconv.FormatUint(uint64(crc32.ChecksumIEEE(body)), 10))
	w.WriteHeader(code)
	_, _ = w.Write(body)
}
