package dynamo

import (
	"encoding/base64"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Limits of expressions (Developer Guide, "Expression parameters" among
// the quotas, and "Specifying item attributes").
const (
	maxExpressionSize = 4096 // bytes of one expression string
	maxPathDepth      = 32   // dereferences (. and [n]) in one document path
	maxInOperands     = 100  // values in the list of IN
)

// tokenKind is the kind of an expression's token.
type tokenKind uint8

const (
	tokEOF    tokenKind = iota
	tokIdent            // a name, keyword or function: [A-Za-z_][A-Za-z0-9_]*
	tokName             // an expression attribute name: #[A-Za-z0-9_]+
	tokValue            // an expression attribute value: :[A-Za-z0-9_]+
	tokNumber           // a list index: [0-9]+
	tokPunct            // ( ) [ ] . , + - = <> < <= > >=
	tokBad              // a character no token begins with
)

// exprToken is one token of an expression.
type exprToken struct {
	kind tokenKind
	text string
	pos  int // its first byte in the expression
	// match is, for "(", the index of the token that closes it (-1 when
	// none does).
	match int
}

// lex cuts an expression into tokens, the last of them tokEOF. Spaces,
// tabs and line breaks separate tokens.
func lex(src string) []exprToken {
	toks := make([]exprToken, 0, len(src)/3+2) // a token and a space take about 3 bytes
	var open []int                             // the indexes of the "(" not closed yet
	for i := 0; i < len(src); {
		c := src[i]
		start := i
		kind := tokPunct
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
			continue
		case isNameStart(c):
			i = scanNamePart(src, i+1)
			kind = tokIdent
		case c == '#' || c == ':':
			i = scanNamePart(src, i+1)
			switch {
			case i == start+1:
				kind = tokBad
			case c == '#':
				kind = tokName
			default:
				kind = tokValue
			}
		case c >= '0' && c <= '9':
			for i++; i < len(src) && src[i] >= '0' && src[i] <= '9'; i++ {
			}
			kind = tokNumber
		case (c == '<' || c == '>') && i+1 < len(src) && src[i+1] == '=', c == '<' && i+1 < len(src) && src[i+1] == '>':
			i += 2
		case strings.IndexByte("()[].,+-=<>", c) >= 0:
			i++
		default:
			_, n := utf8.DecodeRuneInString(src[i:])
			i += n
			kind = tokBad
		}
		t := exprToken{kind: kind, text: src[start:i], pos: start, match: -1}
		switch t.text {
		case "(":
			open = append(open, len(toks))
		case ")":
			if n := len(open); n > 0 {
				toks[open[n-1]].match = len(toks)
				open = open[:n-1]
			}
		}
		toks = append(toks, t)
	}
	return append(toks, exprToken{kind: tokEOF, pos: len(src), match: -1})
}

// isNameStart reports whether c may begin an attribute name or keyword.
func isNameStart(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_'
}

// scanNamePart is the end of the name characters (letters, digits,
// underscores) of src from i.
func scanNamePart(src string, i int) int {
	for i < len(src) && (isNameStart(src[i]) || src[i] >= '0' && src[i] <= '9') {
		i++
	}
	return i
}

// The kinds of semantic error an expression can have. The parser keeps
// the first of each kind and, once the whole expression is known to be
// well-formed (a syntax error is answered at once), answers the first
// error of the first kind found, in the order DynamoDB checks them.
const (
	checkLimit    = iota // a path too deep, too many operands of IN
	checkClause          // an update clause given twice
	checkParens          // redundant parentheses
	checkFunction        // an unknown function
	checkMisuse          // a function where it cannot be used
	checkReserved        // a reserved word as an attribute name
	checkName            // an undefined expression attribute name
	checkValue           // an undefined expression attribute value
	checkPaths           // overlapping or conflicting document paths
	checkOperands        // the wrong number of operands for a function
	checkDistinct        // the same path as both operands
	checkType            // an operand of the wrong kind or type
	numChecks
)

// grammar is the expression language a parser reads.
type grammar uint8

const (
	grammarCondition grammar = iota // condition, filter and key condition expressions
	grammarUpdate
	grammarProjection
)

// keywords are each grammar's keywords, never attribute names (they are
// reserved words too).
var keywords = map[grammar][]string{
	grammarCondition: {"AND", "OR", "NOT", "BETWEEN", "IN"},
	grammarUpdate:    {"SET", "REMOVE", "ADD", "DELETE"},
}

// parser is a recursive-descent parser of one expression.
type parser struct {
	src     string
	label   string // the request member, for messages
	grammar grammar
	c       *exprContext
	toks    []exprToken
	i       int // the next token
	errs    [numChecks]string
}

// newParser is a parser of expr, which it refuses when empty or too long.
func newParser(expr, label string, g grammar, c *exprContext) (*parser, error) {
	if len(expr) > maxExpressionSize {
		return nil, exprError(label, "Expression size has exceeded the maximum allowed size; expression size: %d", len(expr))
	}
	p := &parser{src: expr, label: label, grammar: g, c: c, toks: lex(expr)}
	if p.peek().kind == tokEOF {
		return nil, exprError(label, "The expression can not be empty;")
	}
	return p, nil
}

// peek is the next token.
func (p *parser) peek() exprToken { return p.toks[p.i] }

// next consumes the next token and returns it.
func (p *parser) next() exprToken {
	t := p.toks[p.i]
	if t.kind != tokEOF {
		p.i++
	}
	return t
}

// isPunct reports whether the next token is the punctuation s.
func (p *parser) isPunct(s string) bool {
	t := p.peek()
	return t.kind == tokPunct && t.text == s
}

// isKeyword reports whether the next token is the keyword kw, in any
// case.
func (p *parser) isKeyword(kw string) bool {
	return isKeyword(p.peek(), kw)
}

// isKeyword reports whether t is the keyword kw, in any case.
func isKeyword(t exprToken, kw string) bool {
	return t.kind == tokIdent && strings.EqualFold(t.text, kw)
}

// isGrammarKeyword reports whether t is one of the parser's keywords.
func (p *parser) isGrammarKeyword(t exprToken) bool {
	for _, kw := range keywords[p.grammar] {
		if isKeyword(t, kw) {
			return true
		}
	}
	return false
}

// expect consumes the punctuation s, or answers a syntax error.
func (p *parser) expect(s string) error {
	if !p.isPunct(s) {
		return p.syntaxError()
	}
	p.next()
	return nil
}

// syntaxError is DynamoDB's syntax error at the next token: the token, and
// the text from the token before it to its end.
func (p *parser) syntaxError() error {
	t := p.peek()
	text := t.text
	if t.kind == tokEOF {
		text = "<EOF>"
	}
	from := t.pos
	if p.i > 0 {
		from = p.toks[p.i-1].pos
	}
	return exprError(p.label, "Syntax error; token: %q, near: %q", text, p.src[from:t.pos+len(t.text)])
}

// report keeps the message of format and args as the error of its kind,
// unless one was found before.
func (p *parser) report(kind int, format string, args ...any) {
	if p.errs[kind] == "" {
		p.errs[kind] = exprError(p.label, format, args...).Message
	}
}

// finish checks that the whole expression was read, then answers the
// first semantic error found, if any.
func (p *parser) finish() error {
	if p.peek().kind != tokEOF {
		return p.syntaxError()
	}
	for _, msg := range p.errs {
		if msg != "" {
			return validationError("%s", msg)
		}
	}
	return nil
}

// redundantParens reports the parentheses that open at the next token as
// redundant when they hold nothing but a parenthesized expression:
// "((x))".
func (p *parser) redundantParens() {
	outer := p.peek()
	if inner := p.toks[p.i+1]; inner.text == "(" && inner.match == outer.match-1 {
		p.report(checkParens, "The expression has redundant parentheses;")
	}
}

// parsePath reads a document path: a name, then any number of ".name" and
// "[index]".
func (p *parser) parsePath() (docPath, error) {
	first, err := p.pathName()
	if err != nil {
		return nil, err
	}
	path := docPath{first}
	for {
		switch {
		case p.isPunct("."):
			p.next()
			s, err := p.pathName()
			if err != nil {
				return nil, err
			}
			path = append(path, s)
		case p.isPunct("["):
			p.next()
			t := p.peek()
			n, err := strconv.Atoi(t.text)
			if t.kind != tokNumber || err != nil {
				return nil, p.syntaxError()
			}
			p.next()
			if err := p.expect("]"); err != nil {
				return nil, err
			}
			path = append(path, pathStep{index: n, isIndex: true})
		default:
			if len(path) > maxPathDepth+1 {
				p.report(checkLimit, "The document path has too many nesting levels; nesting levels: %d", len(path))
			}
			return path, nil
		}
	}
}

// pathName reads one attribute name of a path: a name as written, which
// may not be a reserved word, or an expression attribute name, which
// stands for the name it is given (dots and all).
func (p *parser) pathName() (pathStep, error) {
	t := p.peek()
	switch {
	case t.kind == tokIdent && !p.isGrammarKeyword(t):
		p.next()
		if isReserved(t.text) {
			p.report(checkReserved, "Attribute name is a reserved keyword; reserved keyword: %s", t.text)
		}
		return pathStep{name: t.text}, nil
	case t.kind == tokName:
		p.next()
		name, ok := p.c.name(t.text)
		if !ok {
			p.report(checkName, "An expression attribute name used in the document path is not defined; attribute name: %s", t.text)
		}
		return pathStep{name: name}, nil
	}
	return pathStep{}, p.syntaxError()
}

// operandKind is the kind of an operand.
type operandKind uint8

const (
	opPath  operandKind = iota + 1 // a document path
	opValue                        // an expression attribute value
	opCall                         // a function, or an update's + or -
)

// operand is an operand of a condition or of an update's SET.
type operand struct {
	kind operandKind
	path docPath // opPath
	// ref is an opValue's placeholder (":v"), valKind the type of the
	// value it stands for (0 when none).
	ref     string
	valKind kind
	// fn is an opCall's function name ("+" and "-" for an update's
	// arithmetic) and args its operands.
	fn   string
	args []*operand
}

// staticKind is the kind of value the operand has whatever the item (0
// when that depends on the item).
func (o *operand) staticKind() kind {
	switch {
	case o.kind == opValue:
		return o.valKind
	case o.fn == "size", o.fn == "+", o.fn == "-":
		return kindN
	case o.fn == "list_append":
		return kindL
	}
	return 0
}

// isPath reports whether o and other are the same document path.
func (o *operand) isPath(other *operand) bool {
	return o.kind == opPath && other.kind == opPath && slices.Equal(o.path, other.path)
}

// parseOperand reads an operand: a path, a value, a function call, or an
// operand in parentheses (in an update, arith lets those hold a + or -).
func (p *parser) parseOperand(arith bool) (*operand, error) {
	t := p.peek()
	switch {
	case t.kind == tokValue:
		p.next()
		k, ok := p.c.valueKind(t.text)
		if !ok {
			p.report(checkValue, "An expression attribute value used in expression is not defined; attribute value: %s", t.text)
		}
		return &operand{kind: opValue, ref: t.text, valKind: k}, nil
	case t.kind == tokIdent && !p.isGrammarKeyword(t) && p.toks[p.i+1].text == "(":
		return p.parseCall()
	case t.kind == tokIdent || t.kind == tokName:
		path, err := p.parsePath()
		if err != nil {
			return nil, err
		}
		return &operand{kind: opPath, path: path}, nil
	case p.isPunct("("):
		p.redundantParens()
		p.next()
		var o *operand
		var err error
		if arith {
			o, err = p.parseArith()
		} else {
			o, err = p.parseOperand(false)
		}
		if err != nil {
			return nil, err
		}
		return o, p.expect(")")
	}
	return nil, p.syntaxError()
}

// parseCall reads a function call: name(operand, …), and checks it.
func (p *parser) parseCall() (*operand, error) {
	name := p.next().text
	p.next() // "("
	call := &operand{kind: opCall, fn: name}
	for {
		arg, err := p.parseOperand(false)
		if err != nil {
			return nil, err
		}
		call.args = append(call.args, arg)
		if !p.isPunct(",") {
			break
		}
		p.next()
	}
	if err := p.expect(")"); err != nil {
		return nil, err
	}
	if p.grammar == grammarUpdate {
		p.checkUpdateCall(call)
	} else {
		p.checkConditionCall(call)
	}
	return call, nil
}

// conditionFunctions are the functions of conditions, by their number of
// operands. Function names are case-sensitive.
var conditionFunctions = map[string]int{
	"attribute_exists": 1, "attribute_not_exists": 1, "attribute_type": 2,
	"begins_with": 2, "contains": 2, "size": 1,
}

// attributeTypes are the types attribute_type takes.
var attributeTypes = []string{"S", "SS", "N", "NS", "B", "BS", "BOOL", "NULL", "L", "M"}

// checkConditionCall reports what DynamoDB refuses in a condition's
// function call.
func (p *parser) checkConditionCall(call *operand) {
	operands, ok := conditionFunctions[call.fn]
	if !ok {
		p.report(checkFunction, "Invalid function name; function: %s", call.fn)
		return
	}
	p.checkMisusedOperands(call.args...)
	if len(call.args) != operands {
		p.report(checkOperands, "Incorrect number of operands for operator or function; operator or function: %s, number of operands: %d", call.fn, len(call.args))
		return
	}
	if operands == 2 && call.args[0].isPath(call.args[1]) {
		p.reportDistinct(call.fn, call.args[0])
	}
	switch call.fn {
	case "attribute_exists", "attribute_not_exists":
		p.requirePath(call)
	case "attribute_type":
		p.requirePath(call)
		t := call.args[1]
		if t.staticKind() != kindS { // else t is a value: no function is an S
			p.reportOperandType(call.fn, t.staticKind())
		} else if name := p.c.valueOf(t.ref).s; !slices.Contains(attributeTypes, name) {
			p.report(checkType, "Invalid attribute type name found; type: %s, valid types: {B,NULL,SS,BOOL,L,BS,N,NS,S,M}", name)
		}
	case "begins_with":
		for _, arg := range call.args {
			if k := arg.staticKind(); k != 0 && k != kindS && k != kindB {
				p.reportOperandType(call.fn, k)
			}
		}
	case "size":
		if k := call.args[0].staticKind(); k == kindN || k == kindBOOL || k == kindNULL {
			p.reportOperandType(call.fn, k)
		}
	}
}

// requirePath reports a call whose first operand is not a document path.
func (p *parser) requirePath(call *operand) {
	if call.args[0].kind != opPath {
		p.report(checkType, "Operator or function requires a document path; operator or function: %s", call.fn)
	}
}

// reportOperandType reports an operand of type k that fn does not take
// (k 0 when the type is unknown).
func (p *parser) reportOperandType(fn string, k kind) {
	name := "{NS,SS,L,BS,N,M,B,BOOL,NULL,S}"
	if k != 0 {
		name = k.String()
	}
	p.report(checkType, "Incorrect operand type for operator or function; operator or function: %s, operand type: %s", fn, name)
}

// reportDistinct reports an operator or function given the same path as
// its first operand and another.
func (p *parser) reportDistinct(op string, first *operand) {
	p.report(checkDistinct, "The first operand must be distinct from the remaining operands for this operator or function; operator: %s, first operand: %s", op, first.path)
}

// checkMisusedOperands reports a function other than size used as an
// operand: the others are conditions, not values.
func (p *parser) checkMisusedOperands(args ...*operand) {
	for _, arg := range args {
		if arg.kind == opCall && arg.fn != "size" {
			if _, known := conditionFunctions[arg.fn]; known {
				p.report(checkMisuse, "The function is not allowed to be used this way in an expression; function: %s", arg.fn)
			}
		}
	}
}

// condKind is the kind of a condition's node.
type condKind uint8

const (
	condAnd     condKind = iota + 1 // kids[0] AND kids[1]
	condOr                          // kids[0] OR kids[1]
	condNot                         // NOT kids[0]
	condCompare                     // args[0] op args[1]
	condBetween                     // args[0] BETWEEN args[1] AND args[2]
	condIn                          // args[0] IN (args[1:])
	condCall                        // a function: call
)

// condNode is one node of a condition's tree.
type condNode struct {
	kind condKind
	op   string // condCompare's comparator
	kids []*condNode
	args []*operand
	call *operand
}

// parseCondition parses a condition, filter or key condition expression
// into its tree; label is the request member ("ConditionExpression",
// "FilterExpression" or "KeyConditionExpression") that error messages
// name.
func parseCondition(expr, label string, c *exprContext) (*condition, error) {
	return parseOnce(grammarCondition, expr, c, func() (*condition, error) {
		p, err := newParser(expr, label, grammarCondition, c)
		if err != nil {
			return nil, err
		}
		root, err := p.parseOr()
		if err != nil {
			return nil, err
		}
		return &condition{root: root}, p.finish()
	})
}

// parseOr reads conditions joined by OR, the loosest operator.
func (p *parser) parseOr() (*condNode, error) {
	left, err := p.parseAnd()
	for err == nil && p.isKeyword("OR") {
		p.next()
		var right *condNode
		if right, err = p.parseAnd(); err == nil {
			left = &condNode{kind: condOr, kids: []*condNode{left, right}}
		}
	}
	return left, err
}

// parseAnd reads conditions joined by AND, which binds tighter than OR.
func (p *parser) parseAnd() (*condNode, error) {
	left, err := p.parseNot()
	for err == nil && p.isKeyword("AND") {
		p.next()
		var right *condNode
		if right, err = p.parseNot(); err == nil {
			left = &condNode{kind: condAnd, kids: []*condNode{left, right}}
		}
	}
	return left, err
}

// parseNot reads a condition, perhaps negated: NOT binds tighter than AND.
func (p *parser) parseNot() (*condNode, error) {
	if !p.isKeyword("NOT") {
		return p.parsePrimary()
	}
	p.next()
	kid, err := p.parseNot()
	if err != nil {
		return nil, err
	}
	return &condNode{kind: condNot, kids: []*condNode{kid}}, nil
}

// parsePrimary reads a condition in parentheses, a comparison, BETWEEN,
// IN, or a function. Parentheses open a condition unless what follows
// their close makes them an operand's: "(a) = :v".
func (p *parser) parsePrimary() (*condNode, error) {
	if p.isPunct("(") && !p.operandInParens() {
		p.redundantParens()
		p.next()
		n, err := p.parseOr()
		if err != nil {
			return nil, err
		}
		return n, p.expect(")")
	}
	first, err := p.parseOperand(false)
	if err != nil {
		return nil, err
	}
	t := p.peek()
	switch {
	case t.kind == tokPunct && isComparator(t.text):
		p.next()
		second, err := p.parseOperand(false)
		if err != nil {
			return nil, err
		}
		p.checkMisusedOperands(first, second)
		if first.isPath(second) {
			p.reportDistinct(t.text, first)
		}
		return &condNode{kind: condCompare, op: t.text, args: []*operand{first, second}}, nil
	case isKeyword(t, "BETWEEN"):
		return p.parseBetween(first)
	case isKeyword(t, "IN"):
		return p.parseIn(first)
	case first.kind == opCall:
		if first.fn == "size" {
			p.report(checkMisuse, "The function is not allowed to be used this way in an expression; function: %s", first.fn)
		}
		return &condNode{kind: condCall, call: first}, nil
	}
	return nil, p.syntaxError()
}

// operandInParens reports whether the parentheses at the next token hold
// an operand: whether a comparator, BETWEEN or IN follows their close.
func (p *parser) operandInParens() bool {
	m := p.peek().match
	if m < 0 {
		return false
	}
	after := p.toks[m+1]
	return after.kind == tokPunct && isComparator(after.text) || isKeyword(after, "BETWEEN") || isKeyword(after, "IN")
}

// isComparator reports whether s is one of the comparators.
func isComparator(s string) bool {
	switch s {
	case "=", "<>", "<", "<=", ">", ">=":
		return true
	}
	return false
}

// parseBetween reads "BETWEEN lo AND hi" after its first operand,
// refusing bounds of two types or in the wrong order.
func (p *parser) parseBetween(first *operand) (*condNode, error) {
	p.next()
	lo, err := p.parseOperand(false)
	if err != nil {
		return nil, err
	}
	if !p.isKeyword("AND") {
		return nil, p.syntaxError()
	}
	p.next()
	hi, err := p.parseOperand(false)
	if err != nil {
		return nil, err
	}
	p.checkMisusedOperands(first, lo, hi)
	if lo.kind == opValue && hi.kind == opValue && lo.valKind != 0 && hi.valKind != 0 {
		lv, hv := p.c.valueOf(lo.ref), p.c.valueOf(hi.ref)
		bounds := "lower bound operand: AttributeValue: " + describeValue(lv) + ", upper bound operand: AttributeValue: " + describeValue(hv)
		if lv.kind != hv.kind {
			p.report(checkType, "The BETWEEN operator requires same data type for lower and upper bounds; %s", bounds)
		} else if c, ok := compare(lv, hv); ok && c > 0 {
			p.report(checkType, "The BETWEEN operator requires upper bound to be greater than or equal to lower bound; %s", bounds)
		}
	}
	return &condNode{kind: condBetween, args: []*operand{first, lo, hi}}, nil
}

// describeValue writes a value as DynamoDB's messages do: {N:5}.
func describeValue(v value) string {
	switch v.kind {
	case kindS, kindN:
		return "{" + v.kind.String() + ":" + v.s + "}"
	case kindB:
		return "{B:" + base64.StdEncoding.EncodeToString([]byte(v.s)) + "}"
	}
	return "{" + v.kind.String() + "}"
}

// parseIn reads "IN (operand, …)" after its first operand.
func (p *parser) parseIn(first *operand) (*condNode, error) {
	p.next()
	if err := p.expect("("); err != nil {
		return nil, err
	}
	n := &condNode{kind: condIn, args: []*operand{first}}
	for {
		o, err := p.parseOperand(false)
		if err != nil {
			return nil, err
		}
		n.args = append(n.args, o)
		if !p.isPunct(",") {
			break
		}
		p.next()
	}
	if err := p.expect(")"); err != nil {
		return nil, err
	}
	p.checkMisusedOperands(n.args...)
	if len(n.args)-1 > maxInOperands {
		p.report(checkLimit, "The IN operator is provided with too many operands; number of operands: %d", len(n.args)-1)
	}
	return n, nil
}

// actionKind is the clause of an update's action.
type actionKind uint8

const (
	actSet actionKind = iota + 1
	actRemove
	actAdd
	actDelete
)

// clauses are the update clauses by their keyword.
var clauses = map[string]actionKind{"SET": actSet, "REMOVE": actRemove, "ADD": actAdd, "DELETE": actDelete}

// updateAction is one action of an update expression.
type updateAction struct {
	kind actionKind
	path docPath
	// value is SET's value (an operand, or + or - of two), or the
	// expression attribute value ADD adds or DELETE deletes.
	value *operand
	// n is the action's place in its update's actions.
	n int
}

// parseUpdate parses an update expression: clauses SET, REMOVE, ADD and
// DELETE, each at most once, in any order, each of one or more
// comma-separated actions.
func parseUpdate(expr string, c *exprContext) (*update, error) {
	return parseOnce(grammarUpdate, expr, c, func() (*update, error) {
		p, err := newParser(expr, "UpdateExpression", grammarUpdate, c)
		if err != nil {
			return nil, err
		}
		u := &update{tree: &pathTree{}}
		seen := map[actionKind]bool{}
		for p.peek().kind != tokEOF {
			t := p.peek()
			kind := clauses[strings.ToUpper(t.text)]
			if t.kind != tokIdent || kind == 0 {
				return nil, p.syntaxError()
			}
			if seen[kind] {
				p.report(checkClause, "The %q section can only be used once in an update expression;", strings.ToUpper(t.text))
			}
			seen[kind] = true
			p.next()
			for {
				a, err := p.parseAction(kind)
				if err != nil {
					return nil, err
				}
				a.n = len(u.actions)
				u.actions = append(u.actions, a)
				if leaf, problem := u.tree.insert(a.path); problem != "" {
					p.report(checkPaths, "%s", problem)
				} else {
					leaf.act = a
				}
				if !p.isPunct(",") {
					break
				}
				p.next()
			}
		}
		return u, p.finish()
	})
}

// parseAction reads one action of the clause kind.
func (p *parser) parseAction(kind actionKind) (*updateAction, error) {
	path, err := p.parsePath()
	if err != nil {
		return nil, err
	}
	a := &updateAction{kind: kind, path: path}
	switch kind {
	case actSet:
		if err := p.expect("="); err != nil {
			return nil, err
		}
		a.value, err = p.parseArith()
		return a, err
	case actAdd, actDelete:
		if p.peek().kind != tokValue {
			return nil, p.syntaxError()
		}
		if a.value, err = p.parseOperand(false); err != nil {
			return nil, err
		}
		p.checkAddDelete(kind, a.value.valKind)
	}
	return a, nil
}

// checkAddDelete reports a value that ADD cannot add (ADD takes a number
// or a set) or DELETE cannot delete (DELETE takes a set).
func (p *parser) checkAddDelete(act actionKind, k kind) {
	names := map[kind]string{kindS: "STRING", kindN: "NUMBER", kindB: "BINARY", kindNULL: "NULL", kindBOOL: "BOOLEAN", kindL: "LIST", kindM: "MAP"}
	if name, ok := names[k]; ok && !(act == actAdd && k == kindN) {
		op := map[actionKind]string{actAdd: "ADD", actDelete: "DELETE"}[act]
		p.report(checkType, "Incorrect operand type for operator or function; operator: %s, operand type: %s", op, name)
	}
}

// parseArith reads SET's value: an operand, or two joined by + or -.
func (p *parser) parseArith() (*operand, error) {
	left, err := p.parseOperand(true)
	if err != nil {
		return nil, err
	}
	t := p.peek()
	if t.kind != tokPunct || t.text != "+" && t.text != "-" {
		return left, nil
	}
	if left.fn == "+" || left.fn == "-" {
		return nil, p.syntaxError()
	}
	p.next()
	right, err := p.parseOperand(false)
	if err != nil {
		return nil, err
	}
	o := &operand{kind: opCall, fn: t.text, args: []*operand{left, right}}
	p.checkUpdateCall(o)
	return o, nil
}

// updateFunctions are the functions of SET, by their number of operands,
// with + and -.
var updateFunctions = map[string]int{"if_not_exists": 2, "list_append": 2, "+": 2, "-": 2}

// checkUpdateCall reports what DynamoDB refuses in a SET's function call
// or arithmetic.
func (p *parser) checkUpdateCall(call *operand) {
	operands, ok := updateFunctions[call.fn]
	if !ok {
		p.report(checkFunction, "Invalid function name; function: %s", call.fn)
		return
	}
	if len(call.args) != operands {
		p.report(checkOperands, "Incorrect number of operands for operator or function; operator or function: %s, number of operands: %d", call.fn, len(call.args))
		return
	}
	want := kindN
	switch call.fn {
	case "if_not_exists":
		p.requirePath(call)
		return
	case "list_append":
		want = kindL
	}
	for _, arg := range call.args {
		if k := arg.staticKind(); k != 0 && k != want {
			p.reportOperandType(call.fn, k)
		}
	}
}

// parseProjection parses a projection expression: comma-separated
// document paths, none overlapping another.
func parseProjection(expr string, c *exprContext) (*projection, error) {
	return parseOnce(grammarProjection, expr, c, func() (*projection, error) {
		p, err := newParser(expr, "ProjectionExpression", grammarProjection, c)
		if err != nil {
			return nil, err
		}
		pr := &projection{tree: &pathTree{}}
		for {
			path, err := p.parsePath()
			if err != nil {
				return nil, err
			}
			if _, problem := pr.tree.insert(path); problem != "" {
				p.report(checkPaths, "%s", problem)
			}
			if !p.isPunct(",") {
				break
			}
			p.next()
		}
		return pr, p.finish()
	})
}
