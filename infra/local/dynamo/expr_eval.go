package dynamo

import (
	"maps"
	"slices"
	"strconv"
	"strings"
)

// eval reports whether it meets the condition the node stands for, with
// the request's values.
func (n *condNode) eval(it, values item) bool {
	switch n.kind {
	case condAnd:
		return n.kids[0].eval(it, values) && n.kids[1].eval(it, values)
	case condOr:
		return n.kids[0].eval(it, values) || n.kids[1].eval(it, values)
	case condNot:
		return !n.kids[0].eval(it, values)
	case condCompare:
		a, aok := n.args[0].get(it, values)
		b, bok := n.args[1].get(it, values)
		return comparison(n.op, a, aok, b, bok)
	case condBetween:
		x, xok := n.args[0].get(it, values)
		lo, lok := n.args[1].get(it, values)
		hi, hok := n.args[2].get(it, values)
		return xok && lok && hok && comparison(">=", x, true, lo, true) && comparison("<=", x, true, hi, true)
	case condIn:
		x, ok := n.args[0].get(it, values)
		if !ok {
			return false
		}
		for _, o := range n.args[1:] {
			if v, ok := o.get(it, values); ok && equal(x, v) {
				return true
			}
		}
		return false
	}
	return n.call.holds(it, values)
}

// comparison is a op b, where aok and bok say whether a and b exist: =
// and <> compare any values, the orderings only two S, N or B of one
// type. A missing operand makes every comparison false but <>.
func comparison(op string, a value, aok bool, b value, bok bool) bool {
	if !aok || !bok {
		return op == "<>"
	}
	switch op {
	case "=":
		return equal(a, b)
	case "<>":
		return !equal(a, b)
	}
	c, ok := compare(a, b)
	if !ok {
		return false
	}
	switch op {
	case "<":
		return c < 0
	case "<=":
		return c <= 0
	case ">":
		return c > 0
	}
	return c >= 0 // ">="
}

// get is a condition operand's value for it, with the request's values,
// ok false when it has none: a path the item does not have, or size of
// what has no size. The parser lets no function but size be an operand.
func (o *operand) get(it, values item) (value, bool) {
	switch o.kind {
	case opValue:
		return values[o.ref], true
	case opPath:
		return o.path.get(it)
	}
	v, ok := o.args[0].get(it, values)
	if !ok {
		return value{}, false
	}
	n, ok := sizeOf(v)
	if !ok {
		return value{}, false
	}
	return value{kind: kindN, s: strconv.Itoa(n)}, true
}

// sizeOf is size's answer for v: a string's or a binary's length in bytes,
// a set's, list's or map's number of elements; ok false for a number, a
// boolean or a null.
func sizeOf(v value) (int, bool) {
	switch v.kind {
	case kindS, kindB:
		return len(v.s), true
	case kindSS, kindNS, kindBS:
		return len(v.elems()), true
	case kindL:
		return len(v.list()), true
	case kindM:
		return len(v.attrs()), true
	}
	return 0, false
}

// holds reports whether a condition's function is true for it, with the
// request's values.
func (o *operand) holds(it, values item) bool {
	a, aok := o.args[0].get(it, values)
	switch o.fn {
	case "attribute_exists":
		return aok
	case "attribute_not_exists":
		return !aok
	}
	b, bok := o.args[1].get(it, values)
	if !aok || !bok {
		return false
	}
	switch o.fn {
	case "attribute_type":
		return a.kind.String() == b.s
	case "begins_with":
		return a.kind == b.kind && (a.kind == kindS || a.kind == kindB) && strings.HasPrefix(a.s, b.s)
	}
	return contains(a, b)
}

// contains is contains(a, b): a string or binary holding b as a substring,
// a set holding b as an element, or a list holding an element equal to b.
func contains(a, b value) bool {
	switch a.kind {
	case kindS, kindB:
		return b.kind == a.kind && strings.Contains(a.s, b.s)
	case kindSS, kindNS, kindBS:
		return setOf(b.kind) == a.kind && slices.Contains(a.elems(), b.s)
	case kindL:
		return slices.ContainsFunc(a.list(), func(e value) bool { return equal(e, b) })
	}
	return false
}

// setOf is the kind of a set of elements of kind k, 0 when there is none.
func setOf(k kind) kind {
	return map[kind]kind{kindS: kindSS, kindN: kindNS, kindB: kindBS}[k]
}

// isSet reports whether k is a set kind.
func isSet(k kind) bool {
	return k == kindSS || k == kindNS || k == kindBS
}

// apply returns the item the update makes of old (nil when there is no
// item yet), with the request's values, and leaves old as it is: every
// SET value is computed from old first (ADD's and DELETE's are the
// request's), then the actions are applied, and only the maps and lists
// on their paths are copied.
func (u *update) apply(old, values item) (item, error) {
	operands := make([]value, len(u.actions))
	for _, a := range u.actions {
		if a.value != nil {
			v, err := a.value.compute(old, values)
			if err != nil {
				return nil, err
			}
			operands[a.n] = v
		}
	}
	m, err := u.tree.applyMap(old, operands)
	return item(m), err
}

// invalidUpdatePath is the error of an update whose path leads through
// an attribute the item does not have, or through one that is not a map
// or a list as the path needs.
func invalidUpdatePath() error {
	return validationError("The document path provided in the update expression is invalid for update")
}

// missingOperand is the error of a SET whose value reads an attribute the
// item does not have.
func missingOperand() error {
	return validationError("The provided expression refers to an attribute that does not exist in the item")
}

// operandType is the error of an update whose operand has a type its
// operator or function does not take.
func operandType() error {
	return validationError("An operand in the update expression has an incorrect data type")
}

// compute is a SET operand's value for it, with the request's values: a
// path the item must have, a value, if_not_exists, list_append, or + or -
// of two numbers.
func (o *operand) compute(it, values item) (value, error) {
	switch o.kind {
	case opValue:
		return values[o.ref], nil
	case opPath:
		v, ok := o.path.get(it)
		if !ok {
			return value{}, missingOperand()
		}
		return v, nil
	}
	if o.fn == "if_not_exists" {
		if v, ok := o.args[0].path.get(it); ok {
			return v, nil
		}
		return o.args[1].compute(it, values)
	}
	a, err := o.args[0].compute(it, values)
	if err != nil {
		return value{}, err
	}
	b, err := o.args[1].compute(it, values)
	if err != nil {
		return value{}, err
	}
	if o.fn == "list_append" {
		if a.kind != kindL || b.kind != kindL {
			return value{}, operandType()
		}
		return listValue(slices.Concat(a.list(), b.list())), nil
	}
	if a.kind != kindN || b.kind != kindN {
		return value{}, operandType()
	}
	s, err := addNumbers(a.s, b.s, o.fn == "-")
	if err != nil {
		return value{}, err
	}
	return value{kind: kindN, s: s}, nil
}

// applyMap applies the node's actions to the attributes of an item or of a
// map (old, which may be nil) and returns the new attributes.
func (t *pathTree) applyMap(old map[string]value, operands []value) (map[string]value, error) {
	out := maps.Clone(old)
	if out == nil {
		out = map[string]value{}
	}
	for _, name := range t.byName {
		child := t.names[name]
		cur, exists := old[name]
		if child.leaf {
			v, keep, err := child.act.applyTo(cur, exists, operands)
			if err != nil {
				return nil, err
			}
			if keep {
				out[name] = v
			} else {
				delete(out, name)
			}
			continue
		}
		if !exists {
			return nil, invalidUpdatePath()
		}
		v, err := child.applyValue(cur, operands)
		if err != nil {
			return nil, err
		}
		out[name] = v
	}
	return out, nil
}

// applyValue applies the node's actions inside cur, which must be a map
// for a node with children by name, a list for one with children by
// index.
func (t *pathTree) applyValue(cur value, operands []value) (value, error) {
	if t.names != nil {
		if cur.kind != kindM {
			return value{}, invalidUpdatePath()
		}
		m, err := t.applyMap(cur.attrs(), operands)
		return mapValue(m), err
	}
	if cur.kind != kindL {
		return value{}, invalidUpdatePath()
	}
	l, err := t.applyList(cur.list(), operands)
	return listValue(l), err
}

// applyList applies the node's actions to a list's elements, each index
// meaning the element at that index in old: removed elements close up the
// list, and elements set past its end are appended in index order.
func (t *pathTree) applyList(old []value, operands []value) ([]value, error) {
	out := slices.Clone(old)
	removed := make([]bool, len(old))
	var appended []value
	for _, i := range t.byIndex {
		child := t.indexes[i]
		switch {
		case i >= len(old) && !child.leaf:
			return nil, invalidUpdatePath()
		case i >= len(old):
			v, keep, err := child.act.applyTo(value{}, false, operands)
			if err != nil {
				return nil, err
			}
			if keep {
				appended = append(appended, v)
			}
		case child.leaf:
			v, keep, err := child.act.applyTo(old[i], true, operands)
			if err != nil {
				return nil, err
			}
			out[i], removed[i] = v, !keep
		default:
			v, err := child.applyValue(old[i], operands)
			if err != nil {
				return nil, err
			}
			out[i] = v
		}
	}
	kept := out[:0]
	for i, v := range out {
		if !removed[i] {
			kept = append(kept, v)
		}
	}
	return append(kept, appended...), nil
}

// applyTo applies the action to the attribute or element it names (cur,
// when exists), its operand computed in operands: keep is false when the
// action leaves none there.
func (a *updateAction) applyTo(cur value, exists bool, operands []value) (v value, keep bool, err error) {
	switch a.kind {
	case actSet:
		return operands[a.n], true, nil
	case actRemove:
		return value{}, false, nil
	}
	x := operands[a.n]
	switch {
	case a.kind == actAdd && !exists:
		return x, true, nil
	case !exists: // DELETE from nothing
		return value{}, false, nil
	case a.kind == actAdd && cur.kind == kindN && x.kind == kindN:
		s, err := addNumbers(cur.s, x.s, false)
		return value{kind: kindN, s: s}, err == nil, err
	case cur.kind != x.kind || !isSet(x.kind):
		return value{}, false, operandType()
	case a.kind == actAdd:
		set := slices.Clone(cur.elems())
		in := members(cur.elems())
		for _, e := range x.elems() {
			if !in[e] {
				set = append(set, e)
			}
		}
		return setValue(cur.kind, set), true, nil
	}
	var set []string
	drop := members(x.elems())
	for _, e := range cur.elems() {
		if !drop[e] {
			set = append(set, e)
		}
	}
	return setValue(cur.kind, set), len(set) > 0, nil
}

// members are a set's elements, to look them up: a set may hold as many
// as an item's 400 KB, so that comparing two sets element by element
// would hold the lock for minutes.
func members(set []string) map[string]bool {
	in := make(map[string]bool, len(set))
	for _, e := range set {
		in[e] = true
	}
	return in
}

// apply returns the attributes of it that the projection names, nested
// ones within their maps and lists (the elements of a list kept in the
// order of their indexes), or nil when it is nil.
func (p *projection) apply(it item) item {
	if it == nil {
		return nil
	}
	out := item{}
	for name, child := range p.tree.names {
		if v, ok := it[name]; ok {
			if v, ok = child.project(v); ok {
				out[name] = v
			}
		}
	}
	return out
}

// project is what of v the node's paths name, ok false when they name
// nothing v has.
func (t *pathTree) project(v value) (value, bool) {
	switch {
	case t.leaf:
		return v, true
	case t.names != nil:
		if v.kind != kindM {
			return value{}, false
		}
		m := map[string]value{}
		for name, child := range t.names {
			if e, ok := v.attrs()[name]; ok {
				if e, ok = child.project(e); ok {
					m[name] = e
				}
			}
		}
		return mapValue(m), len(m) > 0
	}
	if v.kind != kindL {
		return value{}, false
	}
	var l []value
	for _, i := range t.byIndex {
		if i < len(v.list()) {
			if e, ok := t.indexes[i].project(v.list()[i]); ok {
				l = append(l, e)
			}
		}
	}
	return listValue(l), len(l) > 0
}

// parseKeyCondition parses a KeyConditionExpression of a table or index
// whose partition key is hashName and sort key rangeName ("" when none):
// the partition key's equality, and optionally AND one condition on the
// sort key (=, <, <=, >, >=, BETWEEN or begins_with), in either order,
// perhaps in parentheses. It refuses what DynamoDB refuses there: OR,
// NOT, <>, IN and the other functions, nested paths, two conditions on one
// attribute, conditions on other attributes.
func parseKeyCondition(expr string, c *exprContext, hashName, rangeName string) (*keyCondition, error) {
	const label = "KeyConditionExpression"
	cd, err := parseCondition(expr, label, c)
	if err != nil {
		return nil, err
	}
	var leaves []*condNode
	if err := keyLeaves(cd.root, &leaves); err != nil {
		return nil, err
	}
	conds := map[string]*sortCondition{}
	for _, n := range leaves {
		s, err := keyLeaf(n, c.values)
		if err != nil {
			return nil, err
		}
		if conds[s.name] != nil {
			return nil, exprError(label, "KeyConditionExpressions must only contain one condition per key")
		}
		conds[s.name] = s
	}
	hash := conds[hashName]
	if hash == nil {
		return nil, validationError("Query condition missed key schema element: %s", hashName)
	}
	if hash.op != "=" {
		return nil, validationError("Query key condition not supported")
	}
	k := &keyCondition{hash: hashName, hashValue: hash.lo}
	for name, s := range conds {
		switch {
		case name == hashName:
		case rangeName == "":
			return nil, validationError("Query key condition not supported")
		case name != rangeName:
			return nil, validationError("Query condition missed key schema element: %s", rangeName)
		default:
			k.sort = s
		}
	}
	return k, nil
}

// keyLeaves collects the conditions a key condition joins with AND,
// refusing the operators and functions a key condition cannot have.
func keyLeaves(n *condNode, leaves *[]*condNode) error {
	invalid := ""
	switch {
	case n.kind == condAnd:
		if err := keyLeaves(n.kids[0], leaves); err != nil {
			return err
		}
		return keyLeaves(n.kids[1], leaves)
	case n.kind == condOr:
		invalid = "OR"
	case n.kind == condNot:
		invalid = "NOT"
	case n.kind == condIn:
		invalid = "IN"
	case n.kind == condCompare && n.op == "<>":
		invalid = "<>"
	case n.kind == condCall && n.call.fn != "begins_with":
		invalid = n.call.fn
	}
	for _, o := range n.args {
		if o.kind == opCall {
			invalid = o.fn
		}
	}
	if invalid != "" {
		return exprError("KeyConditionExpression", "Invalid operator used in KeyConditionExpression: %s", invalid)
	}
	*leaves = append(*leaves, n)
	return nil
}

// keyLeaf is one condition of a key condition on its attribute, with the
// request's values: a comparison of the attribute with a value (either
// way round), BETWEEN or begins_with of the attribute and values.
func keyLeaf(n *condNode, vals item) (*sortCondition, error) {
	const label = "KeyConditionExpression"
	args, op := n.args, n.op
	switch n.kind {
	case condBetween:
		op = "BETWEEN"
	case condCall:
		args, op = n.call.args, "begins_with"
	}
	var attr *operand
	var values []value
	for i, o := range args {
		if o.kind == opValue {
			values = append(values, vals[o.ref])
			continue
		}
		if attr != nil {
			return nil, exprError(label, "Invalid condition in KeyConditionExpression: Multiple attribute names used in one condition")
		}
		if i > 0 && n.kind != condCompare {
			return nil, exprError(label, "Invalid condition in KeyConditionExpression: the key attribute must be the first operand of %s", op)
		}
		if i > 0 {
			op = map[string]string{"=": "=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}[op]
		}
		attr = o
	}
	if attr == nil {
		return nil, exprError(label, "Invalid condition in KeyConditionExpression: No key attribute specified")
	}
	if len(attr.path) > 1 {
		return nil, exprError(label, "KeyConditionExpressions cannot have conditions on nested attributes")
	}
	s := &sortCondition{name: attr.path[0].name, op: op, lo: values[0]}
	if op == "BETWEEN" {
		s.hi = values[1]
	}
	return s, nil
}

// match reports whether the sort key value v meets the condition.
func (s *sortCondition) match(v value) bool {
	switch s.op {
	case "BETWEEN":
		return comparison(">=", v, true, s.lo, true) && comparison("<=", v, true, s.hi, true)
	case "begins_with":
		return v.kind == s.lo.kind && (v.kind == kindS || v.kind == kindB) && strings.HasPrefix(v.s, s.lo.s)
	}
	return comparison(s.op, v, true, s.lo, true)
}
