package dynamo

import (
	"crypto/sha256"
	"encoding/json/jsontext"
	"errors"
	"slices"
	"strings"
	"time"
)

// The limits of an item and its keys (Developer Guide, "Quotas").
const (
	maxItemBytes  = 400 * 1024
	maxHashBytes  = 2048
	maxRangeBytes = 1024
	maxNameBytes  = 64 * 1024
	maxDepth      = 32  // of lists and maps in one another
	maxExprName   = 255 // bytes of an expression attribute name or value's placeholder
)

// expressions are the members every request with expressions has.
type expressions struct {
	ExpressionAttributeNames  attributeNames
	ExpressionAttributeValues item
}

// legacy are the members of DynamoDB's older conditional parameters,
// which the endpoint refuses: the product writes expressions only.
type legacy struct {
	Expected            jsontext.Value
	AttributesToGet     jsontext.Value
	AttributeUpdates    jsontext.Value
	ConditionalOperator jsontext.Value
	KeyConditions       jsontext.Value
	QueryFilter         jsontext.Value
	ScanFilter          jsontext.Value
}

func (l legacy) check() error {
	for _, m := range [...]struct {
		name string
		v    jsontext.Value
	}{{"Expected", l.Expected}, {"AttributesToGet", l.AttributesToGet}, {"AttributeUpdates", l.AttributeUpdates},
		{"ConditionalOperator", l.ConditionalOperator}, {"KeyConditions", l.KeyConditions}, {"QueryFilter", l.QueryFilter}, {"ScanFilter", l.ScanFilter}} {
		if len(m.v) > 0 && string(m.v) != "null" {
			return validationError("the embedded endpoint does not take the legacy parameter %s: use expressions", m.name)
		}
	}
	return nil
}

// context is the request's expression context, refusing an empty names or
// values map as DynamoDB does.
func (x expressions) context() (*exprContext, error) {
	if x.ExpressionAttributeNames != nil && len(x.ExpressionAttributeNames) == 0 {
		return nil, validationError("ExpressionAttributeNames must not be empty")
	}
	if x.ExpressionAttributeValues != nil && len(x.ExpressionAttributeValues) == 0 {
		return nil, validationError("ExpressionAttributeValues must not be empty")
	}
	for n := range x.ExpressionAttributeNames {
		if len(n) > maxExprName {
			return nil, validationError("ExpressionAttributeNames contains invalid key: the key %.20s… is over %d bytes", n, maxExprName)
		}
	}
	for n := range x.ExpressionAttributeValues {
		if len(n) > maxExprName {
			return nil, validationError("ExpressionAttributeValues contains invalid key: the key %.20s… is over %d bytes", n, maxExprName)
		}
	}
	return newExprContext(x.ExpressionAttributeNames, x.ExpressionAttributeValues), nil
}

// checkKey refuses a key that is not exactly the table's: its attributes,
// of their types, not empty, within their sizes.
func (t *table) checkKey(key item) error {
	if len(key) != len(t.key.names()) {
		return validationError("The provided key element does not match the schema")
	}
	for i, part := range []keyPart{t.key.hash, t.key.rng} {
		if part.name == "" {
			continue
		}
		v, ok := key[part.name]
		if !ok || v.kind != part.kind {
			return validationError("The provided key element does not match the schema")
		}
		if err := checkKeyValue(part.name, v, i == 0, ""); err != nil {
			return err
		}
	}
	return nil
}

// checkKeyValue refuses an empty key value, or one over its size.
func checkKeyValue(name string, v value, hash bool, index string) error {
	if k := emptyKind(v); k != "" {
		if index != "" {
			return emptyKeyValue("A value specified for a secondary index key is not supported. ", k, indexKey(index, name))
		}
		return emptyKeyValue("", k, " Key: "+name)
	}
	switch {
	case hash && len(v.s) > maxHashBytes:
		return validationError("One or more parameter values were invalid: Size of hashkey has exceeded the maximum size limit of2048 bytes")
	case !hash && len(v.s) > maxRangeBytes:
		return validationError("One or more parameter values were invalid: Aggregated size of all range keys has exceeded the size limit of 1024 bytes")
	}
	return nil
}

// emptyKind is "string" or "binary" for an empty string or binary, which
// no key attribute may hold, and "" for any other value.
func emptyKind(v value) string {
	switch {
	case v.kind == kindS && v.s == "":
		return "string"
	case v.kind == kindB && v.s == "":
		return "binary"
	}
	return ""
}

// emptyKeyValue is DynamoDB's refusal of an empty string or binary (kind
// says which) as a key attribute's value: context says what held it, and
// whose says whose key the attribute is, each as DynamoDB's message puts
// it ("" where it says nothing of it).
func emptyKeyValue(context, kind, whose string) error {
	return validationError("One or more parameter values are not valid. %sThe AttributeValue for a key attribute cannot contain an empty %s value.%s", context, kind, whose)
}

// indexKey is how DynamoDB's messages name an index's key attribute.
func indexKey(index, name string) string {
	return " IndexName: " + index + ", IndexKey: " + name
}

// checkItem refuses an item DynamoDB would not store: without the table's
// key, with a key or an index key of the wrong type or empty, or over
// 400 KB. update names the message of an update's result.
func (t *table) checkItem(it item, update bool) error {
	for i, part := range []keyPart{t.key.hash, t.key.rng} {
		if part.name == "" {
			continue
		}
		v, ok := it[part.name]
		switch {
		case !ok:
			return invalidParameter("Missing the key %s in the item", part.name)
		case v.kind != part.kind:
			return invalidParameter("Type mismatch for key %s expected: %v actual: %v", part.name, part.kind, v.kind)
		}
		if err := checkKeyValue(part.name, v, i == 0, ""); err != nil {
			return err
		}
	}
	for _, x := range t.indexes {
		for i, part := range []keyPart{x.key.hash, x.key.rng} {
			v, ok := it[part.name]
			if part.name == "" || !ok {
				continue
			}
			if v.kind != part.kind {
				return invalidParameter("Type mismatch for Index Key %s Expected: %v Actual: %v IndexName: %s", part.name, part.kind, v.kind, x.name)
			}
			if err := checkKeyValue(part.name, v, i == 0, x.name); err != nil {
				return err
			}
		}
	}
	for name, v := range it {
		if name == "" {
			return invalidParameter("An attribute name may not be empty")
		}
		if len(name) > maxNameBytes {
			return invalidParameter("An attribute name is over %d bytes", maxNameBytes)
		}
		if v.depth() > maxDepth {
			return invalidParameter("Nesting Levels have exceeded supported limits")
		}
	}
	if it.size() > maxItemBytes {
		if update {
			return validationError("Item size to update has exceeded the maximum allowed size")
		}
		return validationError("Item size has exceeded the maximum allowed size")
	}
	return nil
}

// keyOf is the item's table key.
func (t *table) keyOf(it item) item {
	key := item{}
	for _, n := range t.key.names() {
		key[n] = it[n]
	}
	return key
}

// returnValues checks a ReturnValues member against what the operation
// allows ("" is NONE).
func returnValues(rv string, allowed ...string) (string, error) {
	if rv == "" {
		rv = "NONE"
	}
	if !slices.Contains(allowed, rv) {
		if len(allowed) == 2 {
			return "", validationError("ReturnValues can only be ALL_OLD or NONE")
		}
		return "", validationError("1 validation error detected: Value '%s' at 'returnValues' failed to satisfy constraint: Member must satisfy enum value set: [%s]", rv, strings.Join(allowed, ", "))
	}
	return rv, nil
}

// onFailure checks ReturnValuesOnConditionCheckFailure: whether a failed
// condition answers the item.
func onFailure(rv string) (bool, error) {
	switch rv {
	case "", "NONE":
		return false, nil
	case "ALL_OLD":
		return true, nil
	}
	return false, validationError("1 validation error detected: Value '%s' at 'returnValuesOnConditionCheckFailure' failed to satisfy constraint: Member must satisfy enum value set: [ALL_OLD, NONE]", rv)
}

// write is one item's change, checked and parsed before the lock is
// taken: a put, an update, a delete or a condition check.
type write struct {
	op        writeOp
	table     string
	key       item       // the table key; filled in under the lock for a put
	put       item       // a put's item
	update    *update    // an update's expression, nil for an update without one
	condition *condition // nil when none
	values    item       // the values of the expressions
	returnOld bool       // ReturnValuesOnConditionCheckFailure ALL_OLD
}

// writeOp is what a write does.
type writeOp uint8

const (
	opPut writeOp = iota
	opUpdate
	opDelete
	opCheck
)

// parseWrite parses a write's expressions.
func parseWrite(w *write, cond, upd *string, x expressions) error {
	c, err := x.context()
	if err != nil {
		return err
	}
	w.values = x.ExpressionAttributeValues
	if cond != nil {
		if w.condition, err = parseCondition(*cond, "ConditionExpression", c); err != nil {
			return err
		}
	}
	if upd != nil {
		if w.update, err = parseUpdate(*upd, c); err != nil {
			return err
		}
	}
	return c.unused()
}

// apply judges w against its table as it is, under the lock: the item it
// would leave (nil for a delete or a condition check), and the item it met.
// It refuses a key or an item DynamoDB would not take, and a failed
// condition.
func (db *DB) apply(w *write) (t *table, old, after item, err error) {
	if t, err = db.table(w.table); err != nil {
		return nil, nil, nil, err
	}
	if w.put != nil {
		if err := t.checkItem(w.put, false); err != nil {
			return t, nil, nil, err
		}
		w.key = t.keyOf(w.put)
	} else if err := t.checkKey(w.key); err != nil {
		return t, nil, nil, err
	}
	if w.update != nil {
		// Refused whatever the item: it depends on the key schema alone.
		for _, n := range w.update.topLevel() {
			if slices.Contains(t.key.names(), n) {
				return t, nil, nil, validationError("One or more parameter values were invalid: Cannot update attribute %s. This attribute is part of the key", n)
			}
		}
	}
	old = t.get(w.key)
	if w.condition != nil && !w.condition.eval(old, w.values) {
		return t, old, nil, conditionFailed(old, w.returnOld)
	}
	switch w.op {
	case opPut:
		after = w.put
	case opUpdate:
		if after, err = t.updated(w, old); err != nil {
			return t, old, nil, err
		}
	}
	return t, old, after, nil
}

// updated is the item an update leaves. DynamoDB cancels a transaction
// for what it refuses of that item, with ValidationError as the action's
// reason, but for an index key the update leaves empty: that refuses the
// whole request.
func (t *table) updated(w *write, old item) (item, error) {
	base := old
	if base == nil {
		base = w.key
	}
	after := base
	if w.update != nil {
		var err error
		if after, err = w.update.apply(base, w.values); err != nil {
			return nil, cancelling(err)
		}
	}
	for _, x := range t.indexes {
		for _, part := range []keyPart{x.key.hash, x.key.rng} {
			v, ok := after[part.name]
			if k := emptyKind(v); ok && v.kind == part.kind && k != "" {
				return nil, emptyKeyValue("The update expression attempted to update a secondary index key to a value that is not supported. ", k, "")
			}
		}
	}
	if err := t.checkItem(after, true); err != nil {
		return nil, cancelling(err)
	}
	return after, nil
}

// cancelling gives err, a refusal of an update's result, the reason a
// transaction is cancelled for it: ValidationError.
func cancelling(err error) error {
	var api *apiError
	if errors.As(err, &api) {
		api.reason = "ValidationError"
	}
	return err
}

type putItemInput struct {
	TableName                           string
	Item                                item
	ConditionExpression                 *string
	ReturnValues                        string
	ReturnValuesOnConditionCheckFailure string
	expressions
	legacy
}

func (db *DB) putItem(in *putItemInput) (any, error) {
	rv, err := returnValues(in.ReturnValues, "NONE", "ALL_OLD")
	if err != nil {
		return nil, err
	}
	w := &write{op: opPut, table: in.TableName, put: in.Item}
	if err := db.single(w, in.legacy, in.ReturnValuesOnConditionCheckFailure, in.ConditionExpression, nil, in.expressions); err != nil {
		return nil, err
	}
	if in.Item == nil {
		return nil, validationError("1 validation error detected: Value null at 'item' failed to satisfy constraint: Member must not be null")
	}
	old, _, err := db.commit(w)
	if err != nil {
		return nil, err
	}
	return attributes(rv, old, nil, nil), nil
}

type keyInput struct {
	TableName                           string
	Key                                 item
	ConditionExpression                 *string
	UpdateExpression                    *string
	ReturnValues                        string
	ReturnValuesOnConditionCheckFailure string
	expressions
	legacy
}

func (db *DB) deleteItem(in *keyInput) (any, error) {
	rv, err := returnValues(in.ReturnValues, "NONE", "ALL_OLD")
	if err != nil {
		return nil, err
	}
	if in.UpdateExpression != nil {
		return nil, serializationError("DeleteItem takes no UpdateExpression")
	}
	w := &write{op: opDelete, table: in.TableName, key: in.Key}
	if err := db.single(w, in.legacy, in.ReturnValuesOnConditionCheckFailure, in.ConditionExpression, nil, in.expressions); err != nil {
		return nil, err
	}
	old, _, err := db.commit(w)
	if err != nil {
		return nil, err
	}
	return attributes(rv, old, nil, nil), nil
}

func (db *DB) updateItem(in *keyInput) (any, error) {
	rv, err := returnValues(in.ReturnValues, "NONE", "ALL_OLD", "UPDATED_OLD", "ALL_NEW", "UPDATED_NEW")
	if err != nil {
		return nil, err
	}
	w := &write{op: opUpdate, table: in.TableName, key: in.Key}
	if err := db.single(w, in.legacy, in.ReturnValuesOnConditionCheckFailure, in.ConditionExpression, in.UpdateExpression, in.expressions); err != nil {
		return nil, err
	}
	old, after, err := db.commit(w)
	if err != nil {
		return nil, err
	}
	var updated *projection
	if w.update != nil {
		// The update's paths, read as a projection: what it changed.
		updated = &projection{tree: w.update.tree}
	}
	return attributes(rv, old, after, updated), nil
}

// single checks and parses the members of a PutItem, UpdateItem or
// DeleteItem into w.
func (db *DB) single(w *write, l legacy, onFail string, cond, upd *string, x expressions) error {
	if err := l.check(); err != nil {
		return err
	}
	if err := checkTableName(w.table); err != nil {
		return err
	}
	var err error
	if w.returnOld, err = onFailure(onFail); err != nil {
		return err
	}
	return parseWrite(w, cond, upd, x)
}

// commit applies one write under the lock.
func (db *DB) commit(w *write) (old, after item, err error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	t, old, after, err := db.apply(w)
	if err != nil {
		return nil, nil, err
	}
	if w.op != opDelete || old != nil {
		t.write(w.key, after)
	}
	return old, after, nil
}

// attributes is a write's answer: the attributes ReturnValues asks for
// (for UPDATED_OLD and UPDATED_NEW, the paths that updated names).
func attributes(rv string, old, after item, updated *projection) map[string]any {
	pick := func(it item) item {
		if updated == nil || it == nil {
			return nil
		}
		return updated.apply(it)
	}
	var a item
	switch rv {
	case "ALL_OLD":
		a = old
	case "ALL_NEW":
		a = after
	case "UPDATED_OLD":
		a = pick(old)
	case "UPDATED_NEW":
		a = pick(after)
	}
	if len(a) == 0 {
		return map[string]any{}
	}
	return map[string]any{"Attributes": a}
}

type getItemInput struct {
	TableName                string
	Key                      item
	ProjectionExpression     *string
	ConsistentRead           bool
	ExpressionAttributeNames map[string]string
	legacy
}

func (db *DB) getItem(in *getItemInput) (any, error) {
	if err := in.legacy.check(); err != nil {
		return nil, err
	}
	p, err := parseGet(in.ProjectionExpression, in.ExpressionAttributeNames)
	if err != nil {
		return nil, err
	}
	db.mu.RLock()
	t, err := db.table(in.TableName)
	var it item
	if err == nil {
		if err = t.checkKey(in.Key); err == nil {
			it = t.get(in.Key)
		}
	}
	db.mu.RUnlock()
	if err != nil || it == nil {
		return map[string]any{}, err
	}
	if p != nil {
		it = p.apply(it)
	}
	return map[string]any{"Item": it}, nil
}

// parseGet parses a read's projection and its names.
func parseGet(expr *string, names map[string]string) (*projection, error) {
	c, err := expressions{ExpressionAttributeNames: names}.context()
	if err != nil {
		return nil, err
	}
	var p *projection
	if expr != nil {
		if p, err = parseProjection(*expr, c); err != nil {
			return nil, err
		}
	}
	return p, c.unused()
}

// action is one item of a TransactWriteItems.
type action struct {
	TableName                           string
	Key                                 item
	Item                                item
	ConditionExpression                 *string
	UpdateExpression                    *string
	ReturnValuesOnConditionCheckFailure string
	expressions
}

type transactWriteItemsInput struct {
	TransactItems []struct {
		ConditionCheck *action
		Put            *action
		Delete         *action
		Update         *action
	}
	ClientRequestToken string
	// request is the SHA-256 of the request's body: a retry of it with
	// its token is the same request, byte for byte (SDKs send the body
	// they built once).
	request string
}

func (in *transactWriteItemsInput) keep(body []byte) {
	sum := sha256.Sum256(body)
	in.request = string(sum[:])
}

// tokenLife is how long a ClientRequestToken makes a transaction
// idempotent (API Reference, TransactWriteItems).
const tokenLife = 10 * time.Minute

func (db *DB) transactWriteItems(in *transactWriteItemsInput) (any, error) {
	writes, err := parseTransaction(in)
	if err != nil {
		return nil, err
	}
	if err := db.commitTransaction(writes, in.ClientRequestToken, in.request); err != nil {
		return nil, err
	}
	return map[string]any{}, nil
}

// parseTransaction checks a transaction's actions and parses their
// expressions.
func parseTransaction(in *transactWriteItemsInput) ([]*write, error) {
	n := len(in.TransactItems)
	if n == 0 || n > 100 {
		return nil, validationError("1 validation error detected: Value at 'transactItems' failed to satisfy constraint: Member must have length less than or equal to 100, and greater than or equal to 1")
	}
	writes := make([]*write, n)
	for i, ti := range in.TransactItems {
		var a *action
		w := &write{}
		set := 0
		for _, x := range []*action{ti.ConditionCheck, ti.Put, ti.Delete, ti.Update} {
			if x != nil {
				set++
			}
		}
		if set != 1 {
			return nil, validationError("TransactItems can only contain one of Check, Put, Update or Delete")
		}
		switch {
		case ti.ConditionCheck != nil:
			a, w.op = ti.ConditionCheck, opCheck
			if a.ConditionExpression == nil {
				return nil, validationError("The ConditionExpression of a ConditionCheck is required")
			}
		case ti.Put != nil:
			a, w.op, w.put = ti.Put, opPut, ti.Put.Item
			if a.Item == nil {
				return nil, validationError("The Item of a Put is required")
			}
		case ti.Delete != nil:
			a, w.op = ti.Delete, opDelete
		default:
			a, w.op = ti.Update, opUpdate
			if a.UpdateExpression == nil {
				return nil, validationError("The UpdateExpression of an Update is required")
			}
		}
		w.table, w.key = a.TableName, a.Key
		if err := checkTableName(a.TableName); err != nil {
			return nil, err
		}
		var err error
		if w.returnOld, err = onFailure(a.ReturnValuesOnConditionCheckFailure); err != nil {
			return nil, err
		}
		if err := parseWrite(w, a.ConditionExpression, a.UpdateExpression, a.expressions); err != nil {
			return nil, err
		}
		writes[i] = w
	}
	return writes, nil
}

// commitTransaction judges a transaction's writes under the lock and makes
// them all, or none: a failed condition cancels it, with a reason per
// action. A client token that came with the same request within
// tokenLife is answered as a success, with nothing written again.
func (db *DB) commitTransaction(writes []*write, clientToken, request string) error {
	n := len(writes)
	db.mu.Lock()
	defer db.mu.Unlock()
	now := db.now()
	for len(db.tokenOrder) > 0 && now.Sub(db.tokens[db.tokenOrder[0]].at) > tokenLife {
		delete(db.tokens, db.tokenOrder[0])
		db.tokenOrder = db.tokenOrder[1:]
	}
	if rec, ok := db.tokens[clientToken]; ok && clientToken != "" {
		if rec.request != request {
			return dynamoError("IdempotentParameterMismatchException", "The request uses the same client token as a previous, but non-identical request.")
		}
		return nil
	}
	var j judged
	reasons := make([]cancellation, n)
	cancelled := false
	for i, w := range writes {
		t, _, after, err := db.apply(w)
		api, _ := err.(*apiError)
		if t != nil && w.key != nil && !j.once(t, w) {
			return validationError("Transaction request cannot include multiple operations on one item")
		}
		reasons[i] = cancellation{Code: "None"}
		switch {
		case err == nil:
			if w.op != opCheck {
				j.add(t, w.key, after)
			}
		case api != nil && api.name() == "ConditionalCheckFailedException":
			reasons[i] = cancellation{Code: "ConditionalCheckFailed", Message: api.Message, Item: api.item}
			cancelled = true
		case api != nil && api.reason != "":
			reasons[i] = cancellation{Code: api.reason, Message: api.Message}
			cancelled = true
		default:
			return err
		}
	}
	if cancelled {
		codes := make([]string, n)
		for i, r := range reasons {
			codes[i] = r.Code
		}
		return &apiError{Type: dynamoNS + "TransactionCanceledException", reasons: reasons,
			Message: "Transaction cancelled, please refer cancellation reasons for specific reasons [" + strings.Join(codes, ", ") + "]"}
	}
	j.commit()
	if clientToken != "" {
		db.tokens[clientToken] = token{request, now}
		db.tokenOrder = append(db.tokenOrder, clientToken)
	}
	return nil
}

// judged are the writes of a batch or a transaction, judged under the lock
// before any is made.
type judged struct {
	changes []change
	items   []judgedItem // the items written so far, each once
}

// change is a judged write: the item of key in t becomes after (nil:
// none).
type change struct {
	t          *table
	key, after item
}

// judgedItem is an item a write names: its table, the hash of its
// partition key and its key.
type judgedItem struct {
	t    *table
	hash uint64
	key  item
}

// once reports whether w, on table t, is the first write on its item.
func (j *judged) once(t *table, w *write) bool {
	h := hashKey(w.key[t.key.hash.name])
	for _, o := range j.items {
		if o.t == t && o.hash == h && t.sameKey(o.key, w.key) {
			return false
		}
	}
	j.items = append(j.items, judgedItem{t, h, w.key})
	return true
}

func (j *judged) add(t *table, key, after item) { j.changes = append(j.changes, change{t, key, after}) }

// commit makes every change.
func (j *judged) commit() {
	for _, c := range j.changes {
		c.t.write(c.key, c.after)
	}
}
