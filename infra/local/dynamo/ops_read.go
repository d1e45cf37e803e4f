package dynamo

import (
	"slices"
	"strings"
)

// maxPage is how much of the items a Query or Scan reads before it ends
// its page (1 MB), as DynamoDB does, whatever its filter keeps.
const maxPage = 1 << 20

type readInput struct {
	TableName              string
	IndexName              string
	KeyConditionExpression *string
	FilterExpression       *string
	ProjectionExpression   *string
	Select                 string
	Limit                  *int
	ExclusiveStartKey      item
	ScanIndexForward       *bool
	ConsistentRead         bool
	Segment                *int
	TotalSegments          *int
	expressions
	legacy
}

// read is a checked and parsed Query or Scan.
type read struct {
	in         *readInput
	query      *keyCondition // nil for a Scan
	filter     *condition
	projection *projection
	count      bool
	limit      int
}

// parseRead checks the members a Query and a Scan share, and parses their
// expressions, against table t (under the lock: the key condition needs
// its key names).
func parseRead(t *table, x *index, in *readInput, isQuery bool) (*read, error) {
	r := &read{in: in, limit: -1}
	if in.Limit != nil {
		if *in.Limit < 1 {
			return nil, validationError("1 validation error detected: Value '%d' at 'limit' failed to satisfy constraint: Member must have value greater than or equal to 1", *in.Limit)
		}
		r.limit = *in.Limit
	}
	if in.ConsistentRead && x != nil && !x.local {
		return nil, validationError("Consistent reads are not supported on global secondary indexes")
	}
	if err := r.parseSelect(x); err != nil {
		return nil, err
	}
	c, err := in.expressions.context()
	if err != nil {
		return nil, err
	}
	ks := t.key
	if x != nil {
		ks = x.key
	}
	if isQuery {
		if err := r.parseQuery(x, ks, c); err != nil {
			return nil, err
		}
	}
	if in.FilterExpression != nil {
		if r.filter, err = parseCondition(*in.FilterExpression, "FilterExpression", c); err != nil {
			return nil, err
		}
		if n := r.filter.refersTo(ks.names()); r.query != nil && n != "" {
			return nil, invalidParameter("Filter Expression can only contain non-primary key attributes: Primary key attribute: %s", n)
		}
	}
	if in.ProjectionExpression != nil {
		if r.projection, err = parseProjection(*in.ProjectionExpression, c); err != nil {
			return nil, err
		}
	}
	if err := c.unused(); err != nil {
		return nil, err
	}
	return r, nil
}

// parseSelect checks Select against the projection and the index x (nil
// for the table).
func (r *read) parseSelect(x *index) error {
	in := r.in
	switch in.Select {
	case "", "ALL_ATTRIBUTES":
		if in.Select != "" && in.ProjectionExpression != nil {
			return validationError("Cannot specify the AttributesToGet or ProjectionExpression when choosing to get ALL_ATTRIBUTES")
		}
		if in.Select != "" && x != nil && !x.local && x.projection != "ALL" {
			return invalidParameter("Select type ALL_ATTRIBUTES is not supported for global secondary index %s because its projection type is not ALL", x.name)
		}
	case "ALL_PROJECTED_ATTRIBUTES":
		if x == nil {
			return validationError("ALL_PROJECTED_ATTRIBUTES can be used only when Querying using an IndexName")
		}
		if in.ProjectionExpression != nil {
			return validationError("Cannot specify the AttributesToGet or ProjectionExpression when choosing to get ALL_PROJECTED_ATTRIBUTES")
		}
	case "SPECIFIC_ATTRIBUTES":
		if in.ProjectionExpression == nil {
			return validationError("SPECIFIC_ATTRIBUTES requires a ProjectionExpression")
		}
	case "COUNT":
		if in.ProjectionExpression != nil {
			return validationError("Cannot specify the AttributesToGet or ProjectionExpression when choosing to get only the Count")
		}
		r.count = true
	default:
		return validationError("1 validation error detected: Value '%s' at 'select' failed to satisfy constraint: Member must satisfy enum value set: [SPECIFIC_ATTRIBUTES, COUNT, ALL_ATTRIBUTES, ALL_PROJECTED_ATTRIBUTES]", in.Select)
	}
	return nil
}

// parseQuery parses a Query's key condition against the key schema ks of
// the table or the index x, with the expressions' context c.
func (r *read) parseQuery(x *index, ks keySchema, c *exprContext) error {
	in := r.in
	if in.KeyConditionExpression == nil {
		return validationError("Either the KeyConditions or KeyConditionExpression parameter must be specified in the request.")
	}
	var err error
	if r.query, err = parseKeyCondition(*in.KeyConditionExpression, c, ks.hash.name, ks.rng.name); err != nil {
		return err
	}
	if r.query.hashValue.kind != ks.hash.kind || r.query.sort != nil && (r.query.sort.lo.kind != ks.rng.kind ||
		r.query.sort.op == "BETWEEN" && r.query.sort.hi.kind != ks.rng.kind) {
		return invalidParameter("Condition parameter type does not match schema type")
	}
	if err := r.query.checkValues(x); err != nil {
		return err
	}
	if s := r.query.sort; s != nil {
		if s.op == "begins_with" && ks.rng.kind == kindN {
			return invalidParameter("Invalid KeyConditionExpression: Incorrect operand type for operator or function; operator or function: begins_with, operand type: N")
		}
		if s.op == "BETWEEN" {
			if cmp, _ := compare(s.lo, s.hi); cmp > 0 {
				return validationError("Invalid KeyConditionExpression: The BETWEEN operator requires upper bound to be greater than or equal to lower bound")
			}
		}
	}
	return nil
}

func (db *DB) query(in *readInput) (any, error) { return db.readItems(in, true) }
func (db *DB) scan(in *readInput) (any, error)  { return db.readItems(in, false) }

// readItems answers a Query or a Scan: the lock is held while the page's
// entries are picked from the tree; filtering, projecting and encoding
// come after.
func (db *DB) readItems(in *readInput, isQuery bool) (any, error) {
	if err := in.legacy.check(); err != nil {
		return nil, err
	}
	if err := checkTableName(in.TableName); err != nil {
		return nil, err
	}
	db.mu.RLock()
	t, x, r, page, last, err := db.page(in, isQuery)
	db.mu.RUnlock()
	if err != nil {
		return nil, err
	}
	// A local index's read fetches the whole item from the table when it
	// asks for attributes the index may not hold; a global one cannot.
	whole := x != nil && x.local && (in.Select == "ALL_ATTRIBUTES" || r.projection != nil)
	items := []item{}
	count := 0
	for _, it := range page {
		if r.filter != nil && !r.filter.eval(it, in.ExpressionAttributeValues) {
			continue
		}
		count++
		if r.count {
			continue
		}
		if x != nil && x.local && !whole {
			it = t.project(x, it)
		}
		if r.projection != nil {
			it = r.projection.apply(it)
		}
		items = append(items, it)
	}
	out := map[string]any{"Count": count, "ScannedCount": len(page)}
	if !r.count {
		out["Items"] = items
	}
	if last != nil {
		out["LastEvaluatedKey"] = last
	}
	return out, nil
}

// page picks the entries of a Query's or a Scan's page, under the lock;
// last is the key to start the next page from, nil when the read ended.
func (db *DB) page(in *readInput, isQuery bool) (t *table, x *index, r *read, page []item, last item, err error) {
	if t, err = db.table(in.TableName); err != nil {
		return
	}
	tree := t.items
	if in.IndexName != "" {
		if x = t.indexNamed(in.IndexName); x == nil {
			err = validationError("The table does not have the specified index: %s", in.IndexName)
			return
		}
		tree = x.entries
	}
	if r, err = parseRead(t, x, in, isQuery); err != nil {
		return
	}
	var from *entry
	if in.ExclusiveStartKey != nil {
		if from, err = t.startEntry(x, in.ExclusiveStartKey); err != nil {
			return
		}
	}
	bytes := 0
	full := false
	visit := func(e *entry) bool {
		if from != nil && !lessEntry(from, e) && !lessEntry(e, from) {
			return true // the start key itself
		}
		it := e.it
		if x != nil && !x.local {
			it = t.project(x, it) // all a global index holds
		}
		page = append(page, it)
		bytes += it.size()
		full = len(page) == r.limit || bytes >= maxPage
		if full {
			last = t.keyOf(e.it)
			if x != nil {
				for _, n := range x.key.names() {
					last[n] = e.it[n]
				}
			}
		}
		return !full
	}
	if isQuery {
		if from != nil {
			if err = r.query.checkStart(from); err != nil {
				return
			}
		}
		t.queryTree(tree, r, from, visit)
	} else {
		if err = scanTree(tree, in, from, visit); err != nil {
			return
		}
	}
	return
}

// startEntry is the entry an ExclusiveStartKey names: the table's key, and
// the index's when the read is of an index.
func (t *table) startEntry(x *index, key item) (*entry, error) {
	invalid := validationError("The provided starting key is invalid: The provided key element does not match the schema")
	want := t.key.names()
	if x != nil {
		want = append(want, x.key.names()...)
	}
	for n := range key {
		if !slices.Contains(want, n) {
			return nil, invalid
		}
	}
	if err := t.checkKey(t.keyOf(key)); err != nil {
		return nil, invalid
	}
	if x == nil {
		return t.tableEntry(key), nil
	}
	e, ok := t.indexEntry(x, key)
	if !ok || slices.ContainsFunc(e.keys, func(v value) bool { return emptyKind(v) != "" }) {
		return nil, invalid
	}
	return e, nil
}

// checkValues refuses a key condition that compares a key attribute with
// an empty string or binary, which no key holds: of index x, or of the
// table's key when x is nil.
func (q *keyCondition) checkValues(x *index) error {
	values := []value{q.hashValue}
	names := []string{q.hash}
	if s := q.sort; s != nil {
		values, names = append(values, s.lo, s.hi), append(names, s.name, s.name)
	}
	for i, v := range values {
		k := emptyKind(v)
		switch {
		case k == "":
		case x == nil:
			return emptyKeyValue("", k, " Key: "+names[i])
		default:
			return emptyKeyValue("", k, indexKey(x.name, names[i]))
		}
	}
	return nil
}

// checkStart refuses a Query's start key that its key condition does not
// keep: its sort key outside the condition on it, or of another partition.
func (q *keyCondition) checkStart(from *entry) error {
	if q.sort != nil && !q.sort.match(from.keys[1]) {
		return validationError("The provided starting key does not match the range key predicate")
	}
	if from.hash != hashKey(q.hashValue) || !equal(from.keys[0], q.hashValue) {
		return validationError("The provided starting key is outside query boundaries based on provided conditions")
	}
	return nil
}

// queryTree visits, in order, the entries of one partition that the key
// condition keeps, from the start key on.
func (t *table) queryTree(tree *entryTree, r *read, from *entry, visit func(*entry) bool) {
	q := r.query
	h := hashKey(q.hashValue)
	forward := r.in.ScanIndexForward == nil || *r.in.ScanIndexForward
	s := q.sort
	bound := &entry{hash: h, keys: []value{q.hashValue}, last: !forward}
	if s != nil {
		switch {
		case forward && (s.op == "=" || s.op == ">=" || s.op == ">" || s.op == "BETWEEN" || s.op == "begins_with"):
			bound.keys = append(bound.keys, s.lo)
		case !forward && (s.op == "=" || s.op == "<=" || s.op == "<"):
			bound.keys = append(bound.keys, s.lo)
		case !forward && s.op == "BETWEEN":
			bound.keys = append(bound.keys, s.hi)
		case !forward && s.op == "begins_with":
			// Before the first value past every one with the prefix.
			if next, ok := successor(s.lo.s); ok {
				bound.keys, bound.last = append(bound.keys, value{kind: s.lo.kind, s: next}), false
			}
		}
	}
	if from != nil {
		bound = from
	}
	walk := func(e *entry) bool {
		if e.hash != h || !equal(e.keys[0], q.hashValue) {
			return false
		}
		if s != nil && !s.match(e.keys[1]) {
			return !beyond(s, e.keys[1], forward)
		}
		return visit(e)
	}
	if forward {
		tree.AscendGreaterOrEqual(bound, walk)
	} else {
		tree.DescendLessOrEqual(bound, walk)
	}
}

// successor is the first string after every string that begins with
// prefix, in byte order; ok is false when there is none (the prefix is
// all 0xFF bytes, or empty).
func successor(prefix string) (string, bool) {
	b := []byte(prefix)
	for len(b) > 0 && b[len(b)-1] == 0xff {
		b = b[:len(b)-1]
	}
	if len(b) == 0 {
		return "", false
	}
	b[len(b)-1]++
	return string(b), true
}

// beyond reports whether a sort key value that a condition does not keep
// lies past every value it keeps, in the direction of the read.
func beyond(s *sortCondition, v value, forward bool) bool {
	c, _ := compare(v, s.lo)
	if forward {
		switch s.op {
		case "=", "<", "<=":
			return c >= 0
		case "BETWEEN":
			hi, _ := compare(v, s.hi)
			return hi > 0
		case "begins_with":
			return c > 0 && !strings.HasPrefix(v.s, s.lo.s)
		}
		return false
	}
	switch s.op {
	case "=", ">", ">=", "BETWEEN":
		return c <= 0
	case "begins_with":
		return c < 0
	}
	return false
}

// scanTree visits a Scan's entries in order, from the start key on: of
// every segment, or of the one it asks for.
func scanTree(tree *entryTree, in *readInput, from *entry, visit func(*entry) bool) error {
	seg, total := in.Segment, in.TotalSegments
	switch {
	case seg == nil && total == nil:
		if from == nil {
			tree.Ascend(visit)
		} else {
			tree.AscendGreaterOrEqual(from, visit)
		}
		return nil
	case seg == nil || total == nil:
		return validationError("The Segment parameter is required but was not present in the request when parameter TotalSegments is present")
	case *total < 1 || *total > 1000000:
		return validationError("1 validation error detected: Value '%d' at 'totalSegments' failed to satisfy constraint: Member must have value between 1 and 1000000", *total)
	case *seg < 0 || *seg >= *total:
		return validationError("The Segment parameter is zero-based and must be less than parameter TotalSegments: Segment: %d is not less than TotalSegments: %d", *seg, *total)
	}
	start := &entry{hash: segmentStart(*seg, *total)}
	if from != nil {
		if segmentOf(from.hash, *total) != *seg {
			return validationError("The provided starting key is invalid: Invalid ExclusiveStartKey. Please use ExclusiveStartKey with correct Segment. TotalSegments: %d Segment: %d", *total, *seg)
		}
		start = from
	}
	tree.AscendGreaterOrEqual(start, func(e *entry) bool {
		return segmentOf(e.hash, *total) == *seg && visit(e)
	})
	return nil
}
