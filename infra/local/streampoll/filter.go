package streampoll

import (
	jsonv2 "encoding/json/v2"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// A filter is one of the mapping's FilterCriteria patterns, read: Lambda's
// event filtering syntax, matched against a record as the event holds it
// ({"eventName": ["INSERT"], "dynamodb": {"Keys": {"SK": {"S":
// ["METADATA"]}}}}). Each member of a pattern must match (nested objects
// match nested objects); a member's array matches when one of its
// elements does: a string, number, boolean or null equal to the value,
// or {"prefix": "…"}, {"suffix": "…"}, {"equals-ignore-case": "…"},
// {"exists": true|false}, {"anything-but": value or [values]}. A value
// that is an array matches when one of its elements does.
type filter map[string]node

// node is a pattern member: a nested pattern, or the matchers of a leaf.
type node struct {
	sub  filter
	leaf []matcher
}

// matcher is one element of a leaf's array.
type matcher struct {
	op     string // "" (equal), prefix, suffix, equals-ignore-case, exists, anything-but
	values []any  // what it compares with (one, but anything-but's list)
	exists bool
}

// parseFilters reads the mapping's patterns; a record is kept when it
// matches one of them (all, when there is none).
func parseFilters(patterns []string) ([]filter, error) {
	fs := make([]filter, 0, len(patterns))
	for i, p := range patterns {
		var v map[string]any
		if err := jsonv2.Unmarshal([]byte(p), &v); err != nil {
			return nil, fmt.Errorf("filter %d: a pattern is a JSON object: %w", i+1, err)
		}
		f, err := parsePattern(v)
		if err != nil {
			return nil, fmt.Errorf("filter %d: %w", i+1, err)
		}
		fs = append(fs, f)
	}
	return fs, nil
}

func parsePattern(v map[string]any) (filter, error) {
	if len(v) == 0 {
		return nil, fmt.Errorf("an empty object matches nothing: it is not a pattern")
	}
	f := filter{}
	for _, name := range slices.Sorted(maps.Keys(v)) {
		var err error
		n := node{}
		switch x := v[name].(type) {
		case map[string]any:
			n.sub, err = parsePattern(x)
		case []any:
			n.leaf, err = parseLeaf(x)
		default:
			err = fmt.Errorf("a value is an object or an array, not %v", x)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		f[name] = n
	}
	return f, nil
}

func parseLeaf(l []any) ([]matcher, error) {
	if len(l) == 0 {
		return nil, fmt.Errorf("an empty array matches nothing")
	}
	ms := make([]matcher, len(l))
	for i, x := range l {
		op, ok := x.(map[string]any)
		if !ok {
			ms[i] = matcher{values: []any{x}}
			continue
		}
		m, err := parseOperator(op)
		if err != nil {
			return nil, err
		}
		ms[i] = m
	}
	return ms, nil
}

// parseOperator reads a leaf's element that is an object: one operator.
func parseOperator(op map[string]any) (matcher, error) {
	if len(op) != 1 {
		return matcher{}, fmt.Errorf("an operator is an object of one member, not %d", len(op))
	}
	var name string
	var arg any
	for name, arg = range op {
	}
	s, isString := arg.(string)
	switch name {
	case "prefix", "suffix", "equals-ignore-case":
		if !isString {
			return matcher{}, fmt.Errorf("%s takes a string", name)
		}
		return matcher{op: name, values: []any{s}}, nil
	case "exists":
		b, ok := arg.(bool)
		if !ok {
			return matcher{}, fmt.Errorf("exists takes true or false")
		}
		return matcher{op: name, exists: b}, nil
	case "anything-but":
		return parseAnythingBut(arg)
	}
	return matcher{}, fmt.Errorf("the operator %q is not one the local poller matches (prefix, suffix, equals-ignore-case, exists, anything-but)", name)
}

func parseAnythingBut(arg any) (matcher, error) {
	values, ok := arg.([]any)
	if !ok {
		values = []any{arg}
	}
	for _, v := range values {
		switch v.(type) {
		case string, float64:
		default:
			return matcher{}, fmt.Errorf("anything-but takes a string or a number, or an array of them")
		}
	}
	if len(values) == 0 {
		return matcher{}, fmt.Errorf("anything-but takes at least one value")
	}
	return matcher{op: "anything-but", values: values}, nil
}

// keep reports whether a record matches one of the filters (any record,
// when there is none).
func keep(fs []filter, rec map[string]any) bool {
	if len(fs) == 0 {
		return true
	}
	return slices.ContainsFunc(fs, func(f filter) bool { return f.match(rec) })
}

// match reports whether v (nil: absent) matches every member of f.
func (f filter) match(v map[string]any) bool {
	for name, n := range f {
		x, present := v[name]
		if n.sub != nil {
			obj, _ := x.(map[string]any)
			if !n.sub.match(obj) {
				return false
			}
			continue
		}
		if !slices.ContainsFunc(n.leaf, func(m matcher) bool { return m.match(x, present) }) {
			return false
		}
	}
	return true
}

// match reports whether a leaf's value x (present or not) matches m.
func (m matcher) match(x any, present bool) bool {
	if m.op == "exists" {
		return m.exists == present
	}
	if !present {
		return false
	}
	elems, isArray := x.([]any)
	if !isArray {
		elems = []any{x}
	}
	return slices.ContainsFunc(elems, m.matchOne)
}

func (m matcher) matchOne(x any) bool {
	s, isString := x.(string)
	switch m.op {
	case "prefix":
		return isString && strings.HasPrefix(s, m.values[0].(string))
	case "suffix":
		return isString && strings.HasSuffix(s, m.values[0].(string))
	case "equals-ignore-case":
		return isString && strings.EqualFold(s, m.values[0].(string))
	case "anything-but":
		return !slices.ContainsFunc(m.values, func(v any) bool { return equal(v, x) })
	}
	return equal(m.values[0], x)
}

// equal compares a pattern's value (as JSON reads it: numbers are
// float64) with a record's.
func equal(p, x any) bool {
	switch x := x.(type) {
	case int64:
		return p == float64(x)
	case map[string]any, []any:
		return false
	}
	return p == x
}
