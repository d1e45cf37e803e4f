package dynamo

// DynamoDB's expression language (Developer Guide, "Using expressions in
// DynamoDB"): condition and filter expressions, update expressions,
// projection expressions and key condition expressions. Each expression
// is parsed into a tree (expr_parse.go), which refers to the request's
// values by their placeholders and is evaluated against items with them
// (expr_eval.go). A tree is never changed once parsed, so that the next
// requests that send the same expression with the same names, and values
// of the same types, share it (expr_cache.go).

import (
	"slices"
	"strconv"
	"strings"
)

// exprContext holds a request's ExpressionAttributeNames and
// ExpressionAttributeValues, and records which of them its expressions
// use.
type exprContext struct {
	names  map[string]string
	values map[string]value
	// usedNames and usedValues are the references used, each once;
	// wholeValues are the values' references whose value the parse read,
	// not only its type.
	usedNames   []string
	usedValues  []string
	wholeValues []string
}

// newExprContext is the context of a request's names and values (either
// may be nil).
func newExprContext(names map[string]string, values map[string]value) *exprContext {
	used := make([]string, 0, len(names)+len(values))
	return &exprContext{names: names, values: values, usedNames: used[:0:len(names)], usedValues: used[len(names):len(names)]}
}

// name is the attribute name that ref ("#a") stands for, and marks ref
// used.
func (c *exprContext) name(ref string) (string, bool) {
	n, ok := c.names[ref]
	if ok {
		c.usedNames = appendOnce(c.usedNames, ref)
	}
	return n, ok
}

// valueKind is the type of the value that ref (":v") stands for, and
// marks ref used.
func (c *exprContext) valueKind(ref string) (kind, bool) {
	v, ok := c.values[ref]
	if ok {
		c.usedValues = appendOnce(c.usedValues, ref)
	}
	return v.kind, ok
}

// valueOf is the value that ref, marked used, stands for: the parse then
// depends on the value, not only on its type.
func (c *exprContext) valueOf(ref string) value {
	c.wholeValues = append(c.wholeValues, ref)
	return c.values[ref]
}

// appendOnce appends ref to used unless used holds it.
func appendOnce(used []string, ref string) []string {
	if slices.Contains(used, ref) {
		return used
	}
	return append(used, ref)
}

// unused returns the ValidationException DynamoDB answers when a
// request's names or values are not all used by its expressions, or nil.
// It is called once every expression of the request is parsed.
func (c *exprContext) unused() error {
	if keys := unusedKeys(c.names, c.usedNames); keys != "" {
		return validationError("Value provided in ExpressionAttributeNames unused in expressions: keys: {%s}", keys)
	}
	if keys := unusedKeys(c.values, c.usedValues); keys != "" {
		return validationError("Value provided in ExpressionAttributeValues unused in expressions: keys: {%s}", keys)
	}
	return nil
}

// unusedKeys lists the keys of m that used does not hold, sorted and
// comma-separated ("" when there are none).
func unusedKeys[V any](m map[string]V, used []string) string {
	var keys []string
	for k := range m {
		if !slices.Contains(used, k) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return strings.Join(keys, ", ")
}

// exprError is a ValidationException about the request member label
// ("ConditionExpression", "UpdateExpression", …), in DynamoDB's wording:
// "Invalid <label>: <message>".
func exprError(label, format string, args ...any) *apiError {
	return validationError("Invalid "+label+": "+format, args...)
}

// pathStep is one step of a document path: an attribute name (of the item
// or of a map), or a list index when isIndex.
type pathStep struct {
	name    string
	index   int
	isIndex bool
}

// docPath is a document path: a top-level attribute name, then the steps
// to a nested attribute. It is never empty.
type docPath []pathStep

// String is the path as DynamoDB writes it in messages: "[a, b, [0]]".
func (p docPath) String() string {
	parts := make([]string, len(p))
	for i, s := range p {
		if s.isIndex {
			parts[i] = "[" + strconv.Itoa(s.index) + "]"
		} else {
			parts[i] = s.name
		}
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// get is the value at the path in it, ok false when there is none (it may
// be nil).
func (p docPath) get(it item) (v value, ok bool) {
	if v, ok = it[p[0].name]; !ok {
		return value{}, false
	}
	for _, s := range p[1:] {
		switch {
		case s.isIndex && v.kind == kindL && s.index < len(v.list()):
			v = v.list()[s.index]
		case !s.isIndex && v.kind == kindM:
			if v, ok = v.attrs()[s.name]; !ok {
				return value{}, false
			}
		default:
			return value{}, false
		}
	}
	return v, true
}

// pathTree holds the document paths of an update or of a projection by
// their steps, each path ending at a leaf, so that an item is walked once
// for all of them and two paths that overlap are refused. A node that is
// not a leaf has children by name or by index, never both.
type pathTree struct {
	// path is the first path inserted through this node, for messages.
	path    docPath
	leaf    bool
	act     *updateAction // an update's action on this leaf
	names   map[string]*pathTree
	indexes map[int]*pathTree
	// byName and byIndex are the keys of names and of indexes, in order,
	// so that a tree is walked the same way every time.
	byName  []string
	byIndex []int
}

// insert adds p to the tree and returns its leaf; problem is DynamoDB's
// message (without its "Invalid …:" prefix) when p overlaps a path already
// in the tree (one is the other or leads to it) or conflicts with one
// (one has a name where the other has an index).
func (t *pathTree) insert(p docPath) (leaf *pathTree, problem string) {
	n := t
	for _, s := range p {
		if n.leaf {
			return nil, pathsProblem("overlap", n.path, p)
		}
		var next *pathTree
		switch {
		case s.isIndex && n.names != nil, !s.isIndex && n.indexes != nil:
			return nil, pathsProblem("conflict", n.path, p)
		case s.isIndex:
			if n.indexes == nil {
				n.indexes = map[int]*pathTree{}
			}
			if next = n.indexes[s.index]; next == nil {
				next = &pathTree{path: p}
				n.indexes[s.index] = next
				n.byIndex = insertSorted(n.byIndex, s.index)
			}
		default:
			if n.names == nil {
				n.names = map[string]*pathTree{}
			}
			if next = n.names[s.name]; next == nil {
				next = &pathTree{path: p}
				n.names[s.name] = next
				n.byName = insertSorted(n.byName, s.name)
			}
		}
		n = next
	}
	if n.leaf || n.names != nil || n.indexes != nil {
		return nil, pathsProblem("overlap", n.path, p)
	}
	n.leaf = true
	return n, ""
}

// pathsProblem is DynamoDB's message for two paths that overlap or
// conflict (how).
func pathsProblem(how string, one, two docPath) string {
	return "Two document paths " + how + " with each other; must remove or rewrite one of these paths; path one: " +
		one.String() + ", path two: " + two.String()
}

// insertSorted inserts k, which s does not hold, into s, sorted.
func insertSorted[K int | string](s []K, k K) []K {
	i, _ := slices.BinarySearch(s, k)
	return slices.Insert(s, i, k)
}

// condition is a parsed ConditionExpression, FilterExpression or
// KeyConditionExpression.
type condition struct {
	root *condNode
}

// eval reports whether it meets the condition, with the request's
// values; it is nil when there is no item, which has no attribute at all.
func (cd *condition) eval(it, values item) bool {
	return cd.root.eval(it, values)
}

// refersTo returns the first of names (top-level attribute names) that
// the condition reads, "" when it reads none of them: a Query's filter
// may not read the key attributes.
func (cd *condition) refersTo(names []string) string {
	var found string
	var visit func(o *operand)
	visit = func(o *operand) {
		if o.kind == opPath && found == "" && slices.Contains(names, o.path[0].name) {
			found = o.path[0].name
		}
		for _, arg := range o.args {
			visit(arg)
		}
	}
	var walk func(n *condNode)
	walk = func(n *condNode) {
		for _, kid := range n.kids {
			walk(kid)
		}
		for _, o := range n.args {
			visit(o)
		}
		if n.call != nil {
			visit(n.call)
		}
	}
	walk(cd.root)
	return found
}

// update is a parsed UpdateExpression.
type update struct {
	actions []*updateAction // in the order they were written
	tree    *pathTree       // their paths
}

// topLevel returns the top-level attribute names the update sets,
// removes, adds to or deletes from, each once, in the order of the
// expression.
func (u *update) topLevel() []string {
	var names []string
	for _, a := range u.actions {
		if !slices.Contains(names, a.path[0].name) {
			names = append(names, a.path[0].name)
		}
	}
	return names
}

// projection is a parsed ProjectionExpression.
type projection struct {
	tree *pathTree
}

// keyCondition is a parsed KeyConditionExpression: the partition key's
// equality, and the sort key's condition if there is one.
type keyCondition struct {
	hash      string // the partition key attribute's name
	hashValue value
	sort      *sortCondition // nil when none
}

// sortCondition is a key condition on the sort key.
type sortCondition struct {
	name string
	op   string // "=", "<", "<=", ">", ">=", "BETWEEN", "begins_with"
	// lo is the value compared with; hi is BETWEEN's upper bound.
	lo, hi value
}
