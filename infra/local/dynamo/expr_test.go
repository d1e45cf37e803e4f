package dynamo

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// exS is an S value.
func exS(s string) value { return value{kind: kindS, s: s} }

// exN is an N value, canonical.
func exN(s string) value {
	c, err := parseNumber(s)
	if err != nil {
		panic(err)
	}
	return value{kind: kindN, s: c}
}

// exB is a B value of the bytes of s.
func exB(s string) value { return value{kind: kindB, s: s} }

// exBool is a BOOL value.
func exBool(b bool) value { return value{kind: kindBOOL, b: b} }

// exNull is the NULL value.
func exNull() value { return value{kind: kindNULL, b: true} }

// exL is an L value.
func exL(vs ...value) value { return listValue(append([]value{}, vs...)) }

// exM is an M value.
func exM(m map[string]value) value { return mapValue(m) }

// exSet is a set of kind k (elements of an NS canonical).
func exSet(k kind, elems ...string) value { return setValue(k, elems) }

// exJSON is an item as DynamoDB JSON, its names sorted, to compare items
// exactly (lists and sets in order).
func exJSON(it item) string {
	if it == nil {
		return "<nil>"
	}
	return string(appendItem(nil, it))
}

// exItem is the item the tests read: one attribute of each type, nested
// maps and lists, a name with a dot and a reserved word as names.
func exItem() item {
	return item{
		"s":      exS("hello"),
		"u":      exS("é"),
		"n":      exN("5"),
		"b":      exB("\x01\x02\x03"),
		"t":      exBool(true),
		"z":      exNull(),
		"ss":     exSet(kindSS, "a", "b"),
		"ns":     exSet(kindNS, "1", "2"),
		"bs":     exSet(kindBS, "\x01"),
		"l":      exL(exS("x"), exN("2"), exM(map[string]value{"k": exS("v")})),
		"l2":     exL(exS("a")),
		"l3":     exL(exS("a"), exS("b"), exS("c"), exS("d"), exS("e")),
		"m":      exM(map[string]value{"k": exS("v"), "n": exN("7"), "nest": exM(map[string]value{"deep": exS("d")})}),
		"a.b":    exS("dotted"),
		"status": exS("on"),
		"pk":     exS("p"),
		"sk":     exN("3"),
	}
}

// exContext is a fresh context of the names and values the tests use.
func exContext() *exprContext {
	return newExprContext(map[string]string{
		"#s": "status", "#dot": "a.b", "#m": "m", "#l": "l", "#pk": "pk", "#sk": "sk", "#n": "n",
	}, map[string]value{
		":hello": exS("hello"), ":he": exS("he"), ":lo": exS("lo"), ":x": exS("x"), ":y": exS("y"), ":v": exS("v"),
		":a": exS("a"), ":d": exS("d"), ":on": exS("on"), ":dotted": exS("dotted"), ":bad": exS("STRING"),
		":zero": exN("0"), ":one": exN("1"), ":two": exN("2"), ":three": exN("3"), ":five": exN("5"),
		":seven": exN("7"), ":ten": exN("10"), ":minus": exN("-2"), ":big": exN("9.9E125"),
		":b12": exB("\x01\x02"), ":b3": exB("\x03"), ":bool": exBool(true), ":null": exNull(),
		":ssa": exSet(kindSS, "a"), ":ssab": exSet(kindSS, "a", "b"), ":ssba": exSet(kindSS, "b", "a"),
		":ssc": exSet(kindSS, "c"), ":ns1": exSet(kindNS, "1"), ":ns3": exSet(kindNS, "3"),
		":listx": exL(exS("x")), ":emptyl": exL(), ":map": exM(map[string]value{"k": exS("v")}),
		":tS": exS("S"), ":tN": exS("N"), ":tB": exS("B"), ":tBOOL": exS("BOOL"), ":tNULL": exS("NULL"),
		":tSS": exS("SS"), ":tNS": exS("NS"), ":tBS": exS("BS"), ":tL": exS("L"), ":tM": exS("M"),
	})
}

// exValidation fails t unless err is a ValidationException whose message
// holds want.
func exValidation(t *testing.T, err error, want string) {
	t.Helper()
	var api *apiError
	if !errors.As(err, &api) || api.Type != "com.amazon.coral.validate#ValidationException" {
		t.Fatalf("error %v, want a ValidationException", err)
	}
	if !strings.Contains(api.Message, want) {
		t.Fatalf("message %q, want it to hold %q", api.Message, want)
	}
}

// TestExprCondition evaluates conditions of every operator and function
// against exItem.
func TestExprCondition(t *testing.T) {
	for _, tc := range []struct {
		rule, expr string
		want       bool
	}{
		{"= compares equal strings", "s = :hello", true},
		{"= is false for values of two types", "n = :hello", false},
		{"= compares numbers by value", "n = :five", true},
		{"= compares sets regardless of order", "ss = :ssba", true},
		{"= compares list elements", "l[0] = :x", true},
		{"= compares maps", "l[2] = :map", true},
		{"= compares booleans and nulls", "t = :bool AND z = :null", true},
		{"= is false for an absent attribute", "absent = :x", false},
		{"<> is true for different values", "s <> :x", true},
		{"<> is false for equal values", "s <> :hello", false},
		{"<> is true for an absent attribute", "absent <> :x", true},
		{"< orders numbers by value, not as text", "n < :ten", true},
		{"> with the value first", ":ten > n", true},
		{"<= holds for equal numbers", "n <= :five", true},
		{">= holds for equal numbers", "n >= :five", true},
		{"> is false for a lesser number", "n > :ten", false},
		{"< orders strings by their bytes", "s < :x", true},
		{"> orders binaries by their bytes", "b > :b12", true},
		{"ordering is false for two types", "n < :hello", false},
		{"ordering is false for sets", "ss < :ssc", false},
		{"ordering is false for booleans", "t <= :bool", false},
		{"ordering is false for an absent attribute", "absent < :ten", false},
		{"ordering is false for an absent attribute, >= too", "absent >= :ten", false},
		{"comparison of two paths", "n < m.n", true},
		{"BETWEEN includes its bounds", "n BETWEEN :one AND :five", true},
		{"BETWEEN excludes values outside", "n BETWEEN :seven AND :ten", false},
		{"BETWEEN of strings", "s BETWEEN :he AND :x", true},
		{"BETWEEN is false for another type", "s BETWEEN :one AND :ten", false},
		{"BETWEEN is false for an absent attribute", "absent BETWEEN :one AND :ten", false},
		{"IN finds an equal operand", "n IN (:one, :five)", true},
		{"IN is false when none is equal", "n IN (:one, :two)", false},
		{"IN is false for an absent attribute", "absent IN (:one)", false},
		{"IN takes paths", "m.n IN (:one, n, :seven)", true},
		{"IN takes 100 operands", "n IN (" + strings.Repeat(":one, ", 99) + ":five)", true},
		{"AND of two true conditions", "s = :hello AND n = :five", true},
		{"AND with a false condition", "s = :hello AND n = :one", false},
		{"OR with a true condition", "s = :x OR n = :five", true},
		{"OR of two false conditions", "s = :x OR n = :one", false},
		{"NOT of a false condition", "NOT s = :x", true},
		{"NOT NOT", "NOT NOT s = :hello", true},
		{"AND binds tighter than OR", "s = :hello OR n = :five AND n = :one", true},
		{"parentheses are evaluated first", "(s = :hello OR n = :five) AND n = :one", false},
		{"NOT binds tighter than AND", "NOT s = :x AND n = :one", false},
		{"NOT of parentheses", "NOT (s = :x AND n = :one)", true},
		{"nested parentheses", "(s = :x OR (n = :five AND (t = :bool)))", true},
		{"keywords in any case", "s = :hello and n = :five oR nOt n = :one AND n between :one and :ten AND n in (:five)", true},
		{"an operand in parentheses", "(n) = :five", true},
		{"a function operand in parentheses", "(size(s)) = :five", true},
		{"spaces, tabs and line breaks", "\tattribute_exists ( m . k )\r\nAND l [ 1 ] = :two ", true},
		{"attribute_exists of an attribute", "attribute_exists(s)", true},
		{"attribute_exists of an absent attribute", "attribute_exists(absent)", false},
		{"attribute_exists of a map element", "attribute_exists(m.k)", true},
		{"attribute_exists of an absent map element", "attribute_exists(m.zz)", false},
		{"attribute_exists of a list element", "attribute_exists(l[2])", true},
		{"attribute_exists of an element past the end", "attribute_exists(l[3])", false},
		{"attribute_exists through a string", "attribute_exists(s.k)", false},
		{"attribute_exists of an index of a map", "attribute_exists(m[0])", false},
		{"attribute_not_exists of an absent attribute", "attribute_not_exists(absent)", true},
		{"attribute_not_exists of an attribute", "attribute_not_exists(s)", false},
		{"attribute_type S", "attribute_type(s, :tS)", true},
		{"attribute_type N", "attribute_type(n, :tN)", true},
		{"attribute_type B", "attribute_type(b, :tB)", true},
		{"attribute_type BOOL", "attribute_type(t, :tBOOL)", true},
		{"attribute_type NULL", "attribute_type(z, :tNULL)", true},
		{"attribute_type SS", "attribute_type(ss, :tSS)", true},
		{"attribute_type NS", "attribute_type(ns, :tNS)", true},
		{"attribute_type BS", "attribute_type(bs, :tBS)", true},
		{"attribute_type L", "attribute_type(l, :tL)", true},
		{"attribute_type M", "attribute_type(m, :tM)", true},
		{"attribute_type of another type", "attribute_type(s, :tN)", false},
		{"attribute_type of an absent attribute", "attribute_type(absent, :tS)", false},
		{"begins_with of a string", "begins_with(s, :he)", true},
		{"begins_with is false for another start", "begins_with(s, :lo)", false},
		{"begins_with of a binary", "begins_with(b, :b12)", true},
		{"begins_with is false for a number attribute", "begins_with(n, :he)", false},
		{"begins_with is false for an absent attribute", "begins_with(absent, :he)", false},
		{"contains of a substring", "contains(s, :lo)", true},
		{"contains is false for another string", "contains(s, :x)", false},
		{"contains of a binary subsequence", "contains(b, :b3)", true},
		{"contains of a string set element", "contains(ss, :a)", true},
		{"contains is false for a string set non-element", "contains(ss, :x)", false},
		{"contains of a number set element", "contains(ns, :one)", true},
		{"contains is false for a string in a number set", "contains(ns, :a)", false},
		{"contains of a list element", "contains(l, :x)", true},
		{"contains of a list's number element", "contains(l, :two)", true},
		{"contains of a list's map element", "contains(l, :map)", true},
		{"contains is false for a number in a string", "contains(s, :one)", false},
		{"contains is false for an absent attribute", "contains(absent, :x)", false},
		{"size of a string is its bytes", "size(s) = :five AND size(u) = :two", true},
		{"size of a binary is its bytes", "size(b) = :three", true},
		{"size of a set is its elements", "size(ss) = :two", true},
		{"size of a list is its elements", "size(l) = :three", true},
		{"size of a map is its elements", "size(m) = :three", true},
		{"size compared with a path", "size(l) < n", true},
		{"size in BETWEEN", "size(s) BETWEEN :one AND :five", true},
		{"size of a number has no value", "size(n) = :one OR size(n) > :zero", false},
		{"size of an absent attribute has no value", "size(absent) >= :zero", false},
		{"size of a value", "size(:hello) = :five", true},
		{"#name stands for a name", "#s = :on", true},
		{"#name with a dot is one attribute", "#dot = :dotted", true},
		{"a dot in a path is nesting", "attribute_not_exists(a.b)", true},
		{"nested map path", "m.nest.deep = :d", true},
		{"list index path", "l[1] = :two", true},
		{"map in a list", "l[2].k = :v", true},
		{"#name in a nested path", "#m.k = :v AND #l[2].k = :v", true},
		{"function names in a reserved word's place", "size(s) > :one", true},
		{"a path 32 dereferences deep", "attribute_not_exists(m" + strings.Repeat(".a", 32) + ")", true},
	} {
		t.Run(tc.rule, func(t *testing.T) {
			c := exContext()
			cd, err := parseCondition(tc.expr, "ConditionExpression", c)
			if err != nil {
				t.Fatalf("parseCondition(%q): %v", tc.expr, err)
			}
			if got := cd.eval(exItem(), c.values); got != tc.want {
				t.Fatalf("%q is %v, want %v", tc.expr, got, tc.want)
			}
		})
	}
}

// TestExprConditionNoItem evaluates conditions where there is no item.
func TestExprConditionNoItem(t *testing.T) {
	for _, tc := range []struct {
		rule, expr string
		want       bool
	}{
		{"attribute_not_exists holds without an item", "attribute_not_exists(pk)", true},
		{"attribute_exists fails without an item", "attribute_exists(pk)", false},
		{"comparisons fail without an item", "pk = :a OR pk < :a OR pk BETWEEN :a AND :x OR pk IN (:a)", false},
		{"<> holds without an item", "pk <> :a", true},
		{"functions fail without an item", "begins_with(pk, :a) OR contains(pk, :a) OR attribute_type(pk, :tS) OR size(pk) > :zero", false},
	} {
		t.Run(tc.rule, func(t *testing.T) {
			c := exContext()
			cd, err := parseCondition(tc.expr, "ConditionExpression", c)
			if err != nil {
				t.Fatal(err)
			}
			if got := cd.eval(nil, c.values); got != tc.want {
				t.Fatalf("%q is %v without an item, want %v", tc.expr, got, tc.want)
			}
		})
	}
}

// exParsers parse an expression of each kind, by the name the error table
// uses.
var exParsers = map[string]func(expr string, c *exprContext) error{
	"condition": func(expr string, c *exprContext) error {
		_, err := parseCondition(expr, "ConditionExpression", c)
		return err
	},
	"update": func(expr string, c *exprContext) error {
		_, err := parseUpdate(expr, c)
		return err
	},
	"projection": func(expr string, c *exprContext) error {
		_, err := parseProjection(expr, c)
		return err
	},
	"key": func(expr string, c *exprContext) error {
		_, err := parseKeyCondition(expr, c, "pk", "sk")
		return err
	},
	"hash-only key": func(expr string, c *exprContext) error {
		_, err := parseKeyCondition(expr, c, "pk", "")
		return err
	},
}

// TestExprRefused checks the ValidationException of every expression
// DynamoDB refuses, of each kind.
func TestExprRefused(t *testing.T) {
	for _, tc := range []struct {
		rule, kind, expr, want string
	}{
		{"an empty expression", "condition", "", "Invalid ConditionExpression: The expression can not be empty;"},
		{"an expression of spaces", "update", " \t\n", "Invalid UpdateExpression: The expression can not be empty;"},
		{"an expression over 4 KB", "condition", "s = :x" + strings.Repeat(" ", 4091), "Expression size has exceeded the maximum allowed size; expression size: 4097"},
		{"a absent operand", "condition", "s =", `Syntax error; token: "<EOF>", near: "="`},
		{"two comparators", "condition", "s = = :x", `Syntax error; token: "=", near: "= ="`},
		{"an unclosed parenthesis", "condition", "(s = :x", "Syntax error"},
		{"an unopened parenthesis", "condition", "s = :x)", `token: ")"`},
		{"a character of no token", "condition", "s ! :x", `token: "!"`},
		{"a # alone", "condition", "# = :x", `token: "#"`},
		{"AND without a second condition", "condition", "s = :x AND", "Syntax error"},
		{"a path alone", "condition", "s", "Syntax error"},
		{"a keyword as a name", "condition", "AND = :x", "Syntax error"},
		{"arithmetic in a condition", "condition", "n + :one = :two", "Syntax error"},
		{"a negative list index", "condition", "l[-1] = :x", "Syntax error"},
		{"a fractional list index", "condition", "l[0.4] = :x", "Syntax error"},
		{"a name starting with a digit", "condition", "1a = :x", "Syntax error"},
		{"BETWEEN without AND", "condition", "n BETWEEN :one OR :two", "Syntax error"},
		{"IN without parentheses", "condition", "n IN :one", "Syntax error"},
		{"IN with no operand", "condition", "n IN ()", "Syntax error"},
		{"a function with no operand", "condition", "size() = :one", "Syntax error"},
		{"redundant parentheses around a condition", "condition", "((s = :x))", "The expression has redundant parentheses;"},
		{"redundant parentheses around an operand", "condition", "((s)) = :x", "The expression has redundant parentheses;"},
		{"an undefined value", "condition", "s = :nope", "An expression attribute value used in expression is not defined; attribute value: :nope"},
		{"an undefined name", "condition", "#nope = :x", "An expression attribute name used in the document path is not defined; attribute name: #nope"},
		{"an undefined name in a nested path", "projection", "m.#nope", "attribute name: #nope"},
		{"a reserved word as a name", "condition", "status = :x", "Attribute name is a reserved keyword; reserved keyword: status"},
		{"a reserved word in any case", "condition", "Status = :x", "reserved keyword: Status"},
		{"a reserved word nested", "condition", "m.name = :x", "reserved keyword: name"},
		{"a reserved word, the first found", "condition", "s = :x AND (comment = :x OR size(data) > :one)", "reserved keyword: comment"},
		{"an unknown function", "condition", "foo(s)", "Invalid function name; function: foo"},
		{"function names are case-sensitive", "condition", "Size(s) = :one", "Invalid function name; function: Size"},
		{"function names are case-sensitive, attribute_exists too", "condition", "ATTRIBUTE_EXISTS(s)", "Invalid function name; function: ATTRIBUTE_EXISTS"},
		{"an update function in a condition", "condition", "if_not_exists(s, :x) = :x", "Invalid function name; function: if_not_exists"},
		{"a condition function in an update", "update", "SET a = size(s)", "Invalid function name; function: size"},
		{"too many operands", "condition", "attribute_exists(s, n)", "Incorrect number of operands for operator or function; operator or function: attribute_exists, number of operands: 2"},
		{"too few operands", "condition", "begins_with(s)", "Incorrect number of operands for operator or function; operator or function: begins_with, number of operands: 1"},
		{"attribute_exists of a value", "condition", "attribute_exists(:x)", "Operator or function requires a document path; operator or function: attribute_exists"},
		{"attribute_not_exists of a function", "condition", "attribute_not_exists(size(s))", "Operator or function requires a document path; operator or function: attribute_not_exists"},
		{"an invalid attribute_type type", "condition", "attribute_type(s, :bad)", "Invalid attribute type name found; type: STRING, valid types: {B,NULL,SS,BOOL,L,BS,N,NS,S,M}"},
		{"attribute_type of a number value", "condition", "attribute_type(s, :one)", "Incorrect operand type for operator or function; operator or function: attribute_type, operand type: N"},
		{"attribute_type of a path", "condition", "attribute_type(s, n)", "operator or function: attribute_type"},
		{"begins_with of a number value", "condition", "begins_with(s, :one)", "Incorrect operand type for operator or function; operator or function: begins_with, operand type: N"},
		{"size of a number value", "condition", "size(:one) = :one", "operator or function: size, operand type: N"},
		{"size of a boolean value", "condition", "size(:bool) = :one", "operator or function: size, operand type: BOOL"},
		{"size as a condition", "condition", "size(s)", "The function is not allowed to be used this way in an expression; function: size"},
		{"a condition function as an operand", "condition", "attribute_exists(s) = :x", "The function is not allowed to be used this way in an expression; function: attribute_exists"},
		{"a condition function as a function's operand", "condition", "size(contains(s, :x)) = :one", "not allowed to be used this way in an expression; function: contains"},
		{"contains of a path and itself", "condition", "contains(s, s)", "The first operand must be distinct from the remaining operands for this operator or function; operator: contains, first operand: [s]"},
		{"a comparison of a path and itself", "condition", "m.k = m.k", "operator: =, first operand: [m, k]"},
		{"BETWEEN bounds in the wrong order", "condition", "n BETWEEN :ten AND :one", "The BETWEEN operator requires upper bound to be greater than or equal to lower bound; lower bound operand: AttributeValue: {N:10}, upper bound operand: AttributeValue: {N:1}"},
		{"BETWEEN bounds of two types", "condition", "n BETWEEN :one AND :x", "The BETWEEN operator requires same data type for lower and upper bounds"},
		{"IN with 101 operands", "condition", "n IN (" + strings.Repeat(":one, ", 100) + ":five)", "The IN operator is provided with too many operands; number of operands: 101"},
		{"a path 33 dereferences deep", "condition", "attribute_exists(m" + strings.Repeat(".a", 33) + ")", "The document path has too many nesting levels; nesting levels: 34"},
		{"syntax errors come before other errors", "condition", "status = :nope AND", "Syntax error"},

		{"an update clause twice", "update", "SET a = :x SET b = :x", `The "SET" section can only be used once in an update expression;`},
		{"an update clause twice, in another case", "update", "REMOVE a remove b", `The "REMOVE" section can only be used once`},
		{"an unknown clause", "update", "PUT a = :x", "Syntax error"},
		{"SET without =", "update", "SET a :x", "Syntax error"},
		{"a trailing comma", "update", "SET a = :x,", "Syntax error"},
		{"an action of another clause after a comma", "update", "SET a = :x, REMOVE b", "Syntax error"},
		{"ADD of a path", "update", "ADD a b", "Syntax error"},
		{"two arithmetic operators", "update", "SET a = n + :one + :one", "Syntax error"},
		{"arithmetic of arithmetic", "update", "SET a = (n + :one) - :one", "Syntax error"},
		{"arithmetic inside a function", "update", "SET a = if_not_exists(a, :one + :one)", "Syntax error"},
		{"two actions on one path", "update", "SET a = :x REMOVE a", "Two document paths overlap with each other; must remove or rewrite one of these paths; path one: [a], path two: [a]"},
		{"an action on a path inside another's", "update", "SET m = :map REMOVE m.k", "Two document paths overlap with each other; must remove or rewrite one of these paths; path one: [m], path two: [m, k]"},
		{"an action on a path holding another's", "update", "SET l[1].k = :x, l[1] = :x", "overlap with each other"},
		{"a name and an index at one place", "update", "SET l[0] = :x REMOVE l.k", "Two document paths conflict with each other; must remove or rewrite one of these paths; path one: [l, [0]], path two: [l, k]"},
		{"ADD of a string", "update", "ADD a :x", "Incorrect operand type for operator or function; operator: ADD, operand type: STRING"},
		{"ADD of a list", "update", "ADD a :listx", "operator: ADD, operand type: LIST"},
		{"DELETE of a number", "update", "DELETE a :one", "Incorrect operand type for operator or function; operator: DELETE, operand type: NUMBER"},
		{"list_append of a string value", "update", "SET a = list_append(:x, l)", "Incorrect operand type for operator or function; operator or function: list_append, operand type: S"},
		{"+ of a string value", "update", "SET a = :x + :one", "operator or function: +, operand type: S"},
		{"- of a list_append", "update", "SET a = list_append(l, l) - :one", "operator or function: -, operand type: L"},
		{"if_not_exists of a value", "update", "SET a = if_not_exists(:x, :x)", "Operator or function requires a document path; operator or function: if_not_exists"},
		{"list_append of one operand", "update", "SET a = list_append(l)", "operator or function: list_append, number of operands: 1"},
		{"a reserved word in an update", "update", "SET name = :x", "reserved keyword: name"},
		{"an undefined value in an update", "update", "SET a = :nope", "attribute value: :nope"},
		{"an undefined name in an update", "update", "REMOVE #nope", "attribute name: #nope"},

		{"two projected paths the same", "projection", "s, s", "Two document paths overlap with each other; must remove or rewrite one of these paths; path one: [s], path two: [s]"},
		{"a projected path inside another", "projection", "m.k, m", "path one: [m, k], path two: [m]"},
		{"projected paths with a name and an index at one place", "projection", "l[0], l.k", "Two document paths conflict with each other"},
		{"a reserved word projected", "projection", "s, name", "reserved keyword: name"},
		{"a function projected", "projection", "size(s)", "Syntax error"},
		{"a projection with a trailing comma", "projection", "s,", "Syntax error"},
		{"a projection of a value", "projection", ":x", "Syntax error"},

		{"OR in a key condition", "key", "pk = :a OR sk = :two", "Invalid operator used in KeyConditionExpression: OR"},
		{"NOT in a key condition", "key", "pk = :a AND NOT sk = :two", "Invalid operator used in KeyConditionExpression: NOT"},
		{"<> in a key condition", "key", "pk = :a AND sk <> :two", "Invalid operator used in KeyConditionExpression: <>"},
		{"IN in a key condition", "key", "pk = :a AND sk IN (:two)", "Invalid operator used in KeyConditionExpression: IN"},
		{"contains in a key condition", "key", "pk = :a AND contains(sk, :x)", "Invalid operator used in KeyConditionExpression: contains"},
		{"attribute_exists in a key condition", "key", "pk = :a AND attribute_exists(sk)", "Invalid operator used in KeyConditionExpression: attribute_exists"},
		{"size in a key condition", "key", "pk = :a AND size(sk) = :one", "Invalid operator used in KeyConditionExpression: size"},
		{"a nested path in a key condition", "key", "pk.x = :a", "KeyConditionExpressions cannot have conditions on nested attributes"},
		{"two conditions on the partition key", "key", "pk = :a AND pk = :x", "KeyConditionExpressions must only contain one condition per key"},
		{"two conditions on the sort key", "key", "pk = :a AND sk > :one AND sk < :ten", "KeyConditionExpressions must only contain one condition per key"},
		{"a condition on another attribute", "key", "pk = :a AND sk > :one AND n = :one", "Query condition missed key schema element: sk"},
		{"no partition key condition", "key", "sk = :one", "Query condition missed key schema element: pk"},
		{"a partition key condition that is not =", "key", "pk > :a", "Query key condition not supported"},
		{"BETWEEN on the partition key", "key", "pk BETWEEN :a AND :x", "Query key condition not supported"},
		{"begins_with on the partition key", "key", "begins_with(pk, :a)", "Query key condition not supported"},
		{"a sort key condition without a sort key", "hash-only key", "pk = :a AND sk = :one", "Query key condition not supported"},
		{"two attributes in one key condition", "key", "pk = sk", "Invalid condition in KeyConditionExpression: Multiple attribute names used in one condition"},
		{"no attribute in a key condition", "key", ":a = :x", "Invalid condition in KeyConditionExpression: No key attribute specified"},
		{"BETWEEN of a value in a key condition", "key", "pk = :a AND :one BETWEEN sk AND :ten", "Invalid condition in KeyConditionExpression"},
		{"a reserved word in a key condition", "key", "pk = :a AND status = :on", "Invalid KeyConditionExpression: Attribute name is a reserved keyword; reserved keyword: status"},
		{"begins_with of a number in a key condition", "key", "pk = :a AND begins_with(sk, :one)", "operator or function: begins_with, operand type: N"},
		{"an undefined value in a key condition", "key", "pk = :nope", "attribute value: :nope"},
	} {
		t.Run(tc.rule, func(t *testing.T) {
			err := exParsers[tc.kind](tc.expr, exContext())
			exValidation(t, err, tc.want)
		})
	}
}

// TestExprLabel checks that messages name the request member.
func TestExprLabel(t *testing.T) {
	_, err := parseCondition("s = ", "FilterExpression", exContext())
	exValidation(t, err, "Invalid FilterExpression: Syntax error")
	_, err = parseProjection("name", exContext())
	exValidation(t, err, "Invalid ProjectionExpression: Attribute name is a reserved keyword")
}

// TestExprUnused checks the refusal of names and values that no
// expression of the request uses.
func TestExprUnused(t *testing.T) {
	for _, tc := range []struct {
		rule    string
		names   map[string]string
		values  map[string]value
		exprs   []string // a condition, then an update, then a projection ("" for none)
		wantErr string   // "" for none
	}{
		{"all names and values used", map[string]string{"#a": "a"}, map[string]value{":x": exS("x")}, []string{"#a = :x", "", ""}, ""},
		{"names and values used by several expressions", map[string]string{"#a": "a", "#b": "b"}, map[string]value{":x": exS("x"), ":y": exS("y")},
			[]string{"#a = :x", "SET #b = :y", "#a, #b"}, ""},
		{"no names and no values", nil, nil, []string{"a = b", "REMOVE c", "d"}, ""},
		{"an unused name", map[string]string{"#a": "a", "#b": "b"}, map[string]value{":x": exS("x")}, []string{"#a = :x", "", ""},
			"Value provided in ExpressionAttributeNames unused in expressions: keys: {#b}"},
		{"unused names listed in order", map[string]string{"#c": "c", "#a": "a", "#b": "b"}, nil, []string{"", "", "#b"},
			"Value provided in ExpressionAttributeNames unused in expressions: keys: {#a, #c}"},
		{"an unused value", nil, map[string]value{":x": exS("x"), ":y": exS("y")}, []string{"", "SET a = :x", ""},
			"Value provided in ExpressionAttributeValues unused in expressions: keys: {:y}"},
	} {
		t.Run(tc.rule, func(t *testing.T) {
			c := newExprContext(tc.names, tc.values)
			if tc.exprs[0] != "" {
				if _, err := parseCondition(tc.exprs[0], "ConditionExpression", c); err != nil {
					t.Fatal(err)
				}
			}
			if tc.exprs[1] != "" {
				if _, err := parseUpdate(tc.exprs[1], c); err != nil {
					t.Fatal(err)
				}
			}
			if tc.exprs[2] != "" {
				if _, err := parseProjection(tc.exprs[2], c); err != nil {
					t.Fatal(err)
				}
			}
			err := c.unused()
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("unused: %v", err)
				}
				return
			}
			exValidation(t, err, tc.wantErr)
		})
	}
}

// TestExprUpdate applies updates of every clause to exItem, checking that
// the old item is left as it was.
func TestExprUpdate(t *testing.T) {
	base := exItem()
	with := func(changes map[string]value, removed ...string) item {
		it := exItem()
		for n, v := range changes {
			it[n] = v
		}
		for _, n := range removed {
			delete(it, n)
		}
		return it
	}
	mWith := func(changes map[string]value, removed ...string) value {
		m := map[string]value{}
		for n, v := range base["m"].attrs() {
			m[n] = v
		}
		for n, v := range changes {
			m[n] = v
		}
		for _, n := range removed {
			delete(m, n)
		}
		return exM(m)
	}
	for _, tc := range []struct {
		rule, expr string
		old        item
		want       item
		wantErr    string
	}{
		{"SET adds an attribute", "SET a = :x", base, with(map[string]value{"a": exS("x")}), ""},
		{"SET on no item makes one", "SET a = :x", nil, item{"a": exS("x")}, ""},
		{"SET overwrites an attribute", "SET s = :one", base, with(map[string]value{"s": exN("1")}), ""},
		{"SET of several attributes", "SET a = :x, b = :one", base, with(map[string]value{"a": exS("x"), "b": exN("1")}), ""},
		{"SET from another attribute", "SET a = m.n", base, with(map[string]value{"a": exN("7")}), ""},
		{"SET from an absent attribute", "SET a = absent", base, nil, "The provided expression refers to an attribute that does not exist in the item"},
		{"SET reads the item as it was before the update", "SET n = :one, a = n", base, with(map[string]value{"n": exN("1"), "a": exN("5")}), ""},
		{"SET a + b", "SET n = n + :one", base, with(map[string]value{"n": exN("6")}), ""},
		{"SET a - b", "SET n = n - :ten", base, with(map[string]value{"n": exN("-5")}), ""},
		{"SET a - b in parentheses", "SET n = (n - :ten)", base, with(map[string]value{"n": exN("-5")}), ""},
		{"SET of a parenthesized operand", "SET a = (m.n) + :one", base, with(map[string]value{"a": exN("8")}), ""},
		{"SET + of a string attribute", "SET a = s + :one", base, nil, "An operand in the update expression has an incorrect data type"},
		{"SET + of an absent attribute", "SET a = absent + :one", base, nil, "The provided expression refers to an attribute that does not exist in the item"},
		{"SET + past the largest number", "SET a = :big + :big", base, nil, "Number overflow"},
		{"if_not_exists of an absent attribute", "SET a = if_not_exists(a, :one)", base, with(map[string]value{"a": exN("1")}), ""},
		{"if_not_exists of an attribute", "SET n = if_not_exists(n, :one)", base, base, ""},
		{"if_not_exists to start a counter", "SET a = if_not_exists(a, :zero) + :one", base, with(map[string]value{"a": exN("1")}), ""},
		{"list_append appends", "SET l2 = list_append(l2, :listx)", base, with(map[string]value{"l2": exL(exS("a"), exS("x"))}), ""},
		{"list_append prepends", "SET l2 = list_append(:listx, l2)", base, with(map[string]value{"l2": exL(exS("x"), exS("a"))}), ""},
		{"list_append of a string attribute", "SET s = list_append(s, :listx)", base, nil, "An operand in the update expression has an incorrect data type"},
		{"list_append to a list that may not exist", "SET a = list_append(if_not_exists(a, :emptyl), :listx)", base, with(map[string]value{"a": exL(exS("x"))}), ""},
		{"SET of a nested map attribute", "SET m.added = :x", base, with(map[string]value{"m": mWith(map[string]value{"added": exS("x")})}), ""},
		{"SET of a deeply nested attribute", "SET m.nest.deep = :x", base, with(map[string]value{"m": mWith(map[string]value{"nest": exM(map[string]value{"deep": exS("x")})})}), ""},
		{"SET in an absent map", "SET nomap.k = :x", base, nil, "The document path provided in the update expression is invalid for update"},
		{"SET in a string as if a map", "SET s.k = :x", base, nil, "The document path provided in the update expression is invalid for update"},
		{"SET of an index of a map", "SET m[0] = :x", base, nil, "The document path provided in the update expression is invalid for update"},
		{"SET of a list element", "SET l2[0] = :x", base, with(map[string]value{"l2": exL(exS("x"))}), ""},
		{"SET past a list's end appends", "SET l2[10] = :x", base, with(map[string]value{"l2": exL(exS("a"), exS("x"))}), ""},
		{"SET past a list's end appends in index order", "SET l2[7] = :y, l2[5] = :x", base, with(map[string]value{"l2": exL(exS("a"), exS("x"), exS("y"))}), ""},
		{"SET inside an element past a list's end", "SET l2[5].k = :x", base, nil, "The document path provided in the update expression is invalid for update"},
		{"SET in a map in a list", "SET l[2].k = :x", base, with(map[string]value{"l": exL(exS("x"), exN("2"), exM(map[string]value{"k": exS("x")}))}), ""},
		{"SET of a #name with a dot", "SET #dot = :x", base, with(map[string]value{"a.b": exS("x")}), ""},
		{"SET of a dotted path is nesting", "SET a.b = :x", base, nil, "The document path provided in the update expression is invalid for update"},
		{"REMOVE of attributes", "REMOVE s, n", base, with(nil, "s", "n"), ""},
		{"REMOVE of an absent attribute does nothing", "REMOVE nothing", base, base, ""},
		{"REMOVE on no item", "REMOVE nothing", nil, item{}, ""},
		{"REMOVE of a nested attribute", "REMOVE m.k", base, with(map[string]value{"m": mWith(nil, "k")}), ""},
		{"REMOVE in an absent map", "REMOVE nomap.k", base, nil, "The document path provided in the update expression is invalid for update"},
		{"REMOVE of list elements shifts the rest, by the old indexes", "REMOVE l3[1], l3[2]", base, with(map[string]value{"l3": exL(exS("a"), exS("d"), exS("e"))}), ""},
		{"REMOVE past a list's end does nothing", "REMOVE l3[9]", base, base, ""},
		{"SET and REMOVE of elements of one list", "SET l3[0] = :x REMOVE l3[1]", base, with(map[string]value{"l3": exL(exS("x"), exS("c"), exS("d"), exS("e"))}), ""},
		{"ADD to a number", "ADD n :one", base, with(map[string]value{"n": exN("6")}), ""},
		{"ADD of a negative number subtracts", "ADD n :minus", base, with(map[string]value{"n": exN("3")}), ""},
		{"ADD to an absent number starts at 0", "ADD a :five", base, with(map[string]value{"a": exN("5")}), ""},
		{"ADD on no item", "ADD a :five", nil, item{"a": exN("5")}, ""},
		{"ADD past the largest number", "ADD a :big, b :big", item{"a": exN("9.9E125")}, nil, "Number overflow"},
		{"ADD to a set", "ADD ss :ssc", base, with(map[string]value{"ss": exSet(kindSS, "a", "b", "c")}), ""},
		{"ADD to a set keeps each element once", "ADD ss :ssba", base, base, ""},
		{"ADD to a number set", "ADD ns :ns3", base, with(map[string]value{"ns": exSet(kindNS, "1", "2", "3")}), ""},
		{"ADD of a set to an absent attribute", "ADD a :ssc", base, with(map[string]value{"a": exSet(kindSS, "c")}), ""},
		{"ADD of a set of another type", "ADD ss :ns1", base, nil, "An operand in the update expression has an incorrect data type"},
		{"ADD of a number to a string", "ADD s :one", base, nil, "An operand in the update expression has an incorrect data type"},
		{"ADD of a set to a number", "ADD n :ssc", base, nil, "An operand in the update expression has an incorrect data type"},
		{"ADD to a nested number", "ADD m.n :one", base, with(map[string]value{"m": mWith(map[string]value{"n": exN("8")})}), ""},
		{"DELETE from a set", "DELETE ss :ssa", base, with(map[string]value{"ss": exSet(kindSS, "b")}), ""},
		{"DELETE of elements not in the set", "DELETE ss :ssc", base, base, ""},
		{"DELETE of the last elements removes the attribute", "DELETE ss :ssab", base, with(nil, "ss"), ""},
		{"DELETE from an absent attribute does nothing", "DELETE nothing :ssa", base, base, ""},
		{"DELETE of a set of another type", "DELETE ss :ns1", base, nil, "An operand in the update expression has an incorrect data type"},
		{"DELETE from a string", "DELETE s :ssa", base, nil, "An operand in the update expression has an incorrect data type"},
		{"every clause, in any order", "DELETE ss :ssa ADD n :one REMOVE s SET a = :x", base,
			with(map[string]value{"ss": exSet(kindSS, "b"), "n": exN("6"), "a": exS("x")}, "s"), ""},
		{"clause keywords in any case", "set a = :x remove s", base, with(map[string]value{"a": exS("x")}, "s"), ""},
	} {
		t.Run(tc.rule, func(t *testing.T) {
			c := exContext()
			u, err := parseUpdate(tc.expr, c)
			if err != nil {
				t.Fatalf("parseUpdate(%q): %v", tc.expr, err)
			}
			before := exJSON(tc.old)
			got, err := u.apply(tc.old, c.values)
			if after := exJSON(tc.old); after != before {
				t.Fatalf("apply changed the old item:\n%s\nto\n%s", before, after)
			}
			if tc.wantErr != "" {
				exValidation(t, err, tc.wantErr)
				return
			}
			if err != nil {
				t.Fatalf("apply: %v", err)
			}
			if exJSON(got) != exJSON(tc.want) {
				t.Fatalf("apply(%q):\n got %s\nwant %s", tc.expr, exJSON(got), exJSON(tc.want))
			}
		})
	}
}

// TestExprUpdateTopLevel checks the attributes an update names.
func TestExprUpdateTopLevel(t *testing.T) {
	for _, tc := range []struct {
		rule, expr string
		want       []string
	}{
		{"every clause's attributes, in order", "SET a = :x, m.k = :x REMOVE b ADD c :one DELETE ss :ssa", []string{"a", "m", "b", "c", "ss"}},
		{"an attribute once for several nested paths", "SET m.k = :x, m.n = :one REMOVE l[0], l[1]", []string{"m", "l"}},
		{"a #name's attribute", "REMOVE #dot, #m.k", []string{"a.b", "m"}},
	} {
		t.Run(tc.rule, func(t *testing.T) {
			u, err := parseUpdate(tc.expr, exContext())
			if err != nil {
				t.Fatal(err)
			}
			if got := u.topLevel(); !slices.Equal(got, tc.want) {
				t.Fatalf("topLevel = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestExprProjection projects exItem.
func TestExprProjection(t *testing.T) {
	for _, tc := range []struct {
		rule, expr string
		want       item
	}{
		{"top-level attributes", "s, n", item{"s": exS("hello"), "n": exN("5")}},
		{"absent attributes are left out", "s, nothing", item{"s": exS("hello")}},
		{"a nested map attribute in its map", "m.k", item{"m": exM(map[string]value{"k": exS("v")})}},
		{"two attributes of one map", "m.k, m.nest.deep", item{"m": exM(map[string]value{"k": exS("v"), "nest": exM(map[string]value{"deep": exS("d")})})}},
		{"a map with none of the attributes is left out", "m.zz", item{}},
		{"a list element in a list", "l[1]", item{"l": exL(exN("2"))}},
		{"list elements in index order", "l[2], l[0]", item{"l": exL(exS("x"), exM(map[string]value{"k": exS("v")}))}},
		{"a list element past the end is left out", "l[9]", item{}},
		{"an attribute of a map in a list", "l[2].k", item{"l": exL(exM(map[string]value{"k": exS("v")}))}},
		{"a #name with a dot", "#dot", item{"a.b": exS("dotted")}},
		{"a dotted path is nesting", "a.b", item{}},
		{"paths through values of other types", "s.k, m[0], l.k", item{}},
		{"a whole list and a map element", "l, m.n", item{"l": exItem()["l"], "m": exM(map[string]value{"n": exN("7")})}},
	} {
		t.Run(tc.rule, func(t *testing.T) {
			p, err := parseProjection(tc.expr, exContext())
			if err != nil {
				t.Fatalf("parseProjection(%q): %v", tc.expr, err)
			}
			it := exItem()
			before := exJSON(it)
			got := p.apply(it)
			if exJSON(it) != before {
				t.Fatal("apply changed the item")
			}
			if exJSON(got) != exJSON(tc.want) {
				t.Fatalf("apply(%q):\n got %s\nwant %s", tc.expr, exJSON(got), exJSON(tc.want))
			}
		})
	}
	p, err := parseProjection("s", exContext())
	if err != nil {
		t.Fatal(err)
	}
	if got := p.apply(nil); got != nil {
		t.Fatalf("apply(nil) = %v, want nil", got)
	}
}

// TestExprKeyCondition parses key conditions into their partition and
// sort key conditions.
func TestExprKeyCondition(t *testing.T) {
	for _, tc := range []struct {
		rule, expr string
		hash       value
		sort       *sortCondition
	}{
		{"a partition key alone", "pk = :a", exS("a"), nil},
		{"the value first", ":a = pk", exS("a"), nil},
		{"a sort key equality", "pk = :a AND sk = :one", exS("a"), &sortCondition{name: "sk", op: "=", lo: exN("1")}},
		{"the sort key condition first", "sk < :one AND pk = :a", exS("a"), &sortCondition{name: "sk", op: "<", lo: exN("1")}},
		{"<=", "pk = :a AND sk <= :one", exS("a"), &sortCondition{name: "sk", op: "<=", lo: exN("1")}},
		{">", "pk = :a AND sk > :one", exS("a"), &sortCondition{name: "sk", op: ">", lo: exN("1")}},
		{">=", "pk = :a AND sk >= :one", exS("a"), &sortCondition{name: "sk", op: ">=", lo: exN("1")}},
		{"a value first turns the comparator round", "pk = :a AND :one < sk", exS("a"), &sortCondition{name: "sk", op: ">", lo: exN("1")}},
		{"a value first turns >= round", "pk = :a AND :one >= sk", exS("a"), &sortCondition{name: "sk", op: "<=", lo: exN("1")}},
		{"BETWEEN", "pk = :a AND sk BETWEEN :one AND :ten", exS("a"), &sortCondition{name: "sk", op: "BETWEEN", lo: exN("1"), hi: exN("10")}},
		{"begins_with", "pk = :a AND begins_with(sk, :he)", exS("a"), &sortCondition{name: "sk", op: "begins_with", lo: exS("he")}},
		{"parentheses", "(pk = :a) AND (sk BETWEEN :one AND :ten)", exS("a"), &sortCondition{name: "sk", op: "BETWEEN", lo: exN("1"), hi: exN("10")}},
		{"parentheses around both", "(pk = :a AND sk = :one)", exS("a"), &sortCondition{name: "sk", op: "=", lo: exN("1")}},
		{"#names", "#pk = :a and begins_with(#sk, :he)", exS("a"), &sortCondition{name: "sk", op: "begins_with", lo: exS("he")}},
		{"keywords in any case", "pk = :a and sk between :one and :ten", exS("a"), &sortCondition{name: "sk", op: "BETWEEN", lo: exN("1"), hi: exN("10")}},
	} {
		t.Run(tc.rule, func(t *testing.T) {
			k, err := parseKeyCondition(tc.expr, exContext(), "pk", "sk")
			if err != nil {
				t.Fatalf("parseKeyCondition(%q): %v", tc.expr, err)
			}
			if k.hash != "pk" || !equal(k.hashValue, tc.hash) {
				t.Fatalf("hash %s = %v, want pk = %v", k.hash, k.hashValue, tc.hash)
			}
			switch {
			case tc.sort == nil && k.sort != nil:
				t.Fatalf("sort condition %+v, want none", *k.sort)
			case tc.sort != nil && k.sort == nil:
				t.Fatalf("no sort condition, want %+v", *tc.sort)
			case tc.sort != nil && (k.sort.name != tc.sort.name || k.sort.op != tc.sort.op || !equal(k.sort.lo, tc.sort.lo) || !equal(k.sort.hi, tc.sort.hi)):
				t.Fatalf("sort condition %+v, want %+v", *k.sort, *tc.sort)
			}
		})
	}
}

// TestExprSortConditionMatch matches sort key values.
func TestExprSortConditionMatch(t *testing.T) {
	for _, tc := range []struct {
		rule string
		s    sortCondition
		v    value
		want bool
	}{
		{"= of an equal number", sortCondition{op: "=", lo: exN("1")}, exN("1.0"), true},
		{"= of another number", sortCondition{op: "=", lo: exN("1")}, exN("2"), false},
		{"< orders numbers by value", sortCondition{op: "<", lo: exN("10")}, exN("9"), true},
		{"< is false for an equal value", sortCondition{op: "<", lo: exN("10")}, exN("10"), false},
		{"<= of an equal value", sortCondition{op: "<=", lo: exS("b")}, exS("b"), true},
		{"> of strings by bytes", sortCondition{op: ">", lo: exS("B")}, exS("a"), true},
		{">= of binaries", sortCondition{op: ">=", lo: exB("\x01")}, exB("\xff"), true},
		{"BETWEEN includes its lower bound", sortCondition{op: "BETWEEN", lo: exN("1"), hi: exN("3")}, exN("1"), true},
		{"BETWEEN includes its upper bound", sortCondition{op: "BETWEEN", lo: exN("1"), hi: exN("3")}, exN("3"), true},
		{"BETWEEN excludes what is above", sortCondition{op: "BETWEEN", lo: exN("1"), hi: exN("3")}, exN("3.5"), false},
		{"begins_with of a string", sortCondition{op: "begins_with", lo: exS("ab")}, exS("abc"), true},
		{"begins_with of another string", sortCondition{op: "begins_with", lo: exS("ab")}, exS("b"), false},
		{"begins_with of a binary", sortCondition{op: "begins_with", lo: exB("\x01")}, exB("\x01\x02"), true},
		{"begins_with of another type", sortCondition{op: "begins_with", lo: exS("1")}, exN("12"), false},
		{"comparisons of two types are false", sortCondition{op: "<", lo: exS("9")}, exN("1"), false},
	} {
		t.Run(tc.rule, func(t *testing.T) {
			if got := tc.s.match(tc.v); got != tc.want {
				t.Fatalf("match = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestExprRefersTo finds the key attributes a filter reads.
func TestExprRefersTo(t *testing.T) {
	for _, tc := range []struct {
		rule, expr, want string
	}{
		{"a comparison's path", "n > :one AND sk = :one", "sk"},
		{"a function's path", "begins_with(pk, :a)", "pk"},
		{"a nested path's attribute", "size(sk.x) > :one", "sk"},
		{"no key attribute", "n > :one OR contains(s, :x)", ""},
	} {
		t.Run(tc.rule, func(t *testing.T) {
			cd, err := parseCondition(tc.expr, "FilterExpression", exContext())
			if err != nil {
				t.Fatal(err)
			}
			if got := cd.refersTo([]string{"pk", "sk"}); got != tc.want {
				t.Fatalf("refersTo = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestExprReservedWords checks the reserved word list.
func TestExprReservedWords(t *testing.T) {
	if len(reservedWords) != 573 {
		t.Fatalf("%d reserved words, want the Developer Guide's 573", len(reservedWords))
	}
	for _, tc := range []struct {
		rule, word string
		want       bool
	}{
		{"the first word", "ABORT", true},
		{"the last word", "ZONE", true},
		{"a word in lower case", "status", true},
		{"a word in mixed case", "Comment", true},
		{"the list's own spelling", "FLATTERN", true},
		{"a function name", "size", true},
		{"a word not in the list", "attribute_exists", false},
		{"a plain name", "price", false},
	} {
		t.Run(tc.rule, func(t *testing.T) {
			if got := isReserved(tc.word); got != tc.want {
				t.Fatalf("isReserved(%q) = %v, want %v", tc.word, got, tc.want)
			}
		})
	}
}

// exCheckValue fails t for what no item may hold: an empty or repeated
// set, a value of no kind.
func exCheckValue(t *testing.T, path string, v value) {
	t.Helper()
	switch v.kind {
	case kindSS, kindNS, kindBS:
		if len(v.elems()) == 0 {
			t.Fatalf("%s is an empty set", path)
		}
		seen := map[string]bool{}
		for _, e := range v.elems() {
			if seen[e] {
				t.Fatalf("%s repeats %q", path, e)
			}
			seen[e] = true
		}
	case kindL:
		for _, e := range v.list() {
			exCheckValue(t, path+"[]", e)
		}
	case kindM:
		for n, e := range v.attrs() {
			exCheckValue(t, path+"."+n, e)
		}
	case 0:
		t.Fatalf("%s has no kind", path)
	}
}

// FuzzExpr parses any text as each kind of expression and evaluates or
// applies what parses on exItem: nothing may panic, every error must be a
// ValidationException, the item must be left as it was, and what an update
// or a projection makes must be a valid item.
func FuzzExpr(f *testing.F) {
	for _, seed := range []string{
		"s = :hello", "n BETWEEN :one AND :ten", "n IN (:one, :five)", "NOT (s = :x AND n = :one) OR m.k = :v",
		"attribute_exists(m.nest.deep) AND attribute_not_exists(#dot)", "attribute_type(l, :tL)",
		"begins_with(s, :he)", "contains(ss, :a)", "size(l[2]) > :zero", "(n) = :five", "((s = :x))",
		"l[0].k <> :v", "#m.#n >= :seven", "status = :x", "foo(s)", "s = :nope", "s = ", "((((", "))", "l[99999999999999999999]",
		"SET a = :x, b = n + :one", "SET a = if_not_exists(a, :zero) + :one REMOVE s, l3[1], l3[2]",
		"SET l2[5] = :x, l2[7] = :y", "SET nl = list_append(if_not_exists(nl, :emptyl), :listx)",
		"ADD n :one, ss :ssc DELETE ns :ns1", "DELETE ss :ssab", "SET m.added.deeper = :x", "REMOVE m.k SET m.k = :x",
		"SET a = :big + :big", "ADD s :one", "SET a = (n - :one)",
		"s, n, m.k, l[1], l[2].k", "a.b, #dot", "m, m.k", "l[0], l.k",
		"pk = :a", "pk = :a AND sk BETWEEN :one AND :ten", "begins_with(sk, :he) AND pk = :a", ":one < sk AND #pk = :a",
		"pk = :a OR sk = :one", "pk = sk", "", " ", "\x00", "é = :x",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, expr string) {
		it := exItem()
		before := exJSON(it)
		c := exContext()
		check := func(err error) {
			var api *apiError
			if err != nil && (!errors.As(err, &api) || api.Type != "com.amazon.coral.validate#ValidationException") {
				t.Fatalf("%q: error %v is not a ValidationException", expr, err)
			}
		}
		cd, err := parseCondition(expr, "ConditionExpression", c)
		check(err)
		if err == nil {
			cd.eval(it, c.values)
			cd.eval(nil, c.values)
			cd.refersTo([]string{"pk", "sk"})
		}
		u, err := parseUpdate(expr, c)
		check(err)
		if err == nil {
			u.topLevel()
			for _, old := range []item{it, nil} {
				after, err := u.apply(old, c.values)
				check(err)
				for n, v := range after {
					exCheckValue(t, n, v)
				}
			}
		}
		p, err := parseProjection(expr, c)
		check(err)
		if err == nil {
			for n, v := range p.apply(it) {
				exCheckValue(t, n, v)
			}
		}
		for _, rangeName := range []string{"sk", ""} {
			k, err := parseKeyCondition(expr, c, "pk", rangeName)
			check(err)
			if err == nil && k.sort != nil {
				k.sort.match(it["sk"])
				k.sort.match(it["s"])
			}
		}
		check(c.unused())
		if fresh, cached := exParses(expr, true), exParses(expr, false); !reflect.DeepEqual(fresh, cached) {
			t.Fatalf("%q from the cache:\n%+v\nparsed:\n%+v", expr, cached, fresh)
		}
		if exJSON(it) != before {
			t.Fatalf("%q changed the item:\n%s\nto\n%s", expr, before, exJSON(it))
		}
	})
}

// exParses parses expr as each kind of expression, each with a context of
// its own, the cache emptied before each when fresh: what each answers
// (its tree or its error) and the names and values it marks used.
func exParses(expr string, fresh bool) []any {
	var out []any
	for _, parse := range []func(c *exprContext) (any, error){
		func(c *exprContext) (any, error) { return parseCondition(expr, "ConditionExpression", c) },
		func(c *exprContext) (any, error) { return parseUpdate(expr, c) },
		func(c *exprContext) (any, error) { return parseProjection(expr, c) },
		func(c *exprContext) (any, error) { return parseKeyCondition(expr, c, "pk", "sk") },
	} {
		if fresh {
			exForget()
		}
		c := exContext()
		tree, err := parse(c)
		out = append(out, tree, err, c.usedNames, c.usedValues, c.unused())
	}
	return out
}

// exForget empties the cache of parses.
func exForget() {
	parses.mu.Lock()
	clear(parses.byExpr)
	parses.mu.Unlock()
}

// TestParseCache: a parse from the cache is the one parsing gives, for a
// request whose names are the same and whose values have the same types
// (and are the same where the parse reads them: attribute_type's and
// BETWEEN's); any other request's expression is parsed again; and the
// cache forgets everything when full rather than grow.
func TestParseCache(t *testing.T) {
	for _, expr := range []string{
		"attribute_not_exists(PK)", "(attribute_not_exists (#pk)) OR (#n <= :one)", "a.b[1] BETWEEN :one AND :ten",
		"attribute_type(l, :tL)", "SET #s = :x, #n = if_not_exists(#n, :zero) + :one", "ADD n :one DELETE ss :ssa",
		"s, #m.k, l[1]", "#pk = :a AND sk <= :ten", "s = :nope", "((s = :x))",
	} {
		if fresh, cached := exParses(expr, true), exParses(expr, false); !reflect.DeepEqual(fresh, cached) {
			t.Errorf("%q from the cache:\n%+v\nparsed:\n%+v", expr, cached, fresh)
		}
	}
	// The same text with other names, values of other types, or other
	// values where the parse reads them, is parsed again.
	for _, tc := range []struct {
		rule, kind, expr string
		change           func(c *exprContext)
		want             string // the second request's error, "" for none
	}{
		{"a name for another attribute", "update", "SET #a = :x", func(c *exprContext) { c.names["#a"] = "pk" }, ""},
		{"a name no longer given", "condition", "#a = :x", func(c *exprContext) { delete(c.names, "#a") }, "An expression attribute name used in the document path is not defined"},
		{"a value of another type", "update", "ADD n :v", func(c *exprContext) { c.values[":v"] = exS("one") }, "operator: ADD, operand type: STRING"},
		{"a value no longer given", "condition", "s = :v", func(c *exprContext) { delete(c.values, ":v") }, "An expression attribute value used in expression is not defined"},
		{"another type name", "condition", "attribute_type(s, :v)", func(c *exprContext) { c.values[":v"] = exS("STRING") }, "Invalid attribute type name found; type: STRING"},
		{"bounds the other way round", "condition", "n BETWEEN :v AND :w", func(c *exprContext) { c.values[":v"] = exN("11") }, "The BETWEEN operator requires upper bound to be greater than or equal to lower bound"},
	} {
		t.Run(tc.rule, func(t *testing.T) {
			exForget()
			first := func(c *exprContext) {
				c.names["#a"] = "status"
				c.values[":v"], c.values[":w"] = exN("1"), exN("10")
				if tc.rule == "another type name" {
					c.values[":v"] = exS("S")
				}
			}
			c := exContext()
			first(c)
			if err := exParsers[tc.kind](tc.expr, c); err != nil {
				t.Fatalf("the first request: %v", err)
			}
			c = exContext()
			first(c)
			tc.change(c)
			err := exParsers[tc.kind](tc.expr, c)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("the second request: %v", err)
				}
				if tc.kind == "update" {
					u, _ := parseUpdate(tc.expr, c)
					if got := u.topLevel(); !slices.Equal(got, []string{c.names["#a"]}) {
						t.Fatalf("the second request's update sets %q, want [%s]", got, c.names["#a"])
					}
				}
				return
			}
			exValidation(t, err, tc.want)
		})
	}
	// An expression depends on its own references, whichever the
	// request's other expressions used before it.
	exForget()
	c := exContext()
	c.names["#a"] = "status"
	if _, err := parseCondition("#a = :x", "ConditionExpression", c); err != nil {
		t.Fatal(err)
	}
	if _, err := parseUpdate("SET #a = :y", c); err != nil {
		t.Fatal(err)
	}
	c = exContext()
	c.names["#a"] = "other"
	u, err := parseUpdate("SET #a = :y", c)
	if err != nil {
		t.Fatal(err)
	}
	if got := u.topLevel(); !slices.Equal(got, []string{"other"}) || !slices.Contains(c.usedNames, "#a") || !slices.Contains(c.usedValues, ":y") {
		t.Errorf("the update sets %q and uses %q and %q, want [other], #a and :y", got, c.usedNames, c.usedValues)
	}
	// Requests at once share a parse, each with its own values.
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				n := strconv.Itoa(g*1000 + i)
				c := newExprContext(map[string]string{"#n": "n"}, item{":n": exN(n), ":one": exN("1")})
				cd, err := parseCondition("#n = :n", "ConditionExpression", c)
				if err != nil {
					t.Error(err)
					return
				}
				u, err := parseUpdate("SET #n = :n + :one", c)
				if err != nil {
					t.Error(err)
					return
				}
				after, err := u.apply(nil, c.values)
				if err != nil || !cd.eval(item{"n": exN(n)}, c.values) || cd.eval(after, c.values) {
					t.Errorf("%s: after %v, %v", n, after, err)
					return
				}
			}
		})
	}
	wg.Wait()
	for i := range parseCacheSize + 10 {
		if _, err := parseCondition(fmt.Sprintf("a = :v%d", i), "ConditionExpression", newExprContext(nil, item{fmt.Sprintf(":v%d", i): exS("x")})); err != nil {
			t.Fatal(err)
		}
	}
	parses.mu.Lock()
	n := len(parses.byExpr)
	parses.mu.Unlock()
	if n > parseCacheSize {
		t.Errorf("the cache holds %d expressions, more than %d", n, parseCacheSize)
	}
}
