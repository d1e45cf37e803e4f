package dynamo

import (
	"bytes"
	"encoding/base64"
	"encoding/json/jsontext"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// kind is the type of an attribute value, as its member in DynamoDB JSON.
type kind uint8

const (
	kindS kind = iota + 1
	kindN
	kindB
	kindBOOL
	kindNULL
	kindM
	kindL
	kindSS
	kindNS
	kindBS
)

var kindNames = [...]string{kindS: "S", kindN: "N", kindB: "B", kindBOOL: "BOOL", kindNULL: "NULL", kindM: "M", kindL: "L", kindSS: "SS", kindNS: "NS", kindBS: "BS"}

func (k kind) String() string {
	if int(k) < len(kindNames) && kindNames[k] != "" {
		return kindNames[k]
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// kindNamed is the kind of a DynamoDB JSON type member ("S", "NS", …), 0
// when name is none.
func kindNamed(name string) kind {
	for k, n := range kindNames {
		if n == name && n != "" {
			return kind(k)
		}
	}
	return 0
}

// value is one attribute value. Values are never changed once built: an
// update builds new ones, so that items and values may be shared.
//
// A value is 40 bytes, whatever its kind, since items are maps of values:
// a composite's parts are behind c.
type value struct {
	kind kind
	// b is a BOOL.
	b bool
	// s is an S, an N in canonical form (see parseNumber) or a B's bytes.
	s string
	// c is an M's attributes (an item), an L's elements ([]value), or the
	// elements of an SS, an NS (canonical) or a BS ([]string), in the
	// order they were given, without duplicates.
	c any
}

// mapValue is an M of attributes m.
func mapValue(m item) value { return value{kind: kindM, c: m} }

// listValue is an L of elements l.
func listValue(l []value) value { return value{kind: kindL, c: l} }

// setValue is a set of kind k (SS, NS or BS) of elements set.
func setValue(k kind, set []string) value { return value{kind: k, c: set} }

// attrs are an M's attributes.
func (v value) attrs() item {
	m, _ := v.c.(item)
	return m
}

// list is an L's elements.
func (v value) list() []value {
	l, _ := v.c.([]value)
	return l
}

// elems are a set's elements.
func (v value) elems() []string {
	set, _ := v.c.([]string)
	return set
}

// item is a stored item, or a key: its attributes by name.
type item map[string]value

// validationError is the ValidationException DynamoDB answers for a
// request it refuses.
func validationError(format string, args ...any) *apiError {
	return &apiError{Type: "com.amazon.coral.validate#ValidationException", Message: fmt.Sprintf(format, args...)}
}

// invalidParameter is a ValidationException in the wording DynamoDB uses
// for a parameter value it refuses.
func invalidParameter(format string, args ...any) *apiError {
	return validationError("One or more parameter values were invalid: "+format, args...)
}

// UnmarshalJSONFrom decodes one attribute value of DynamoDB JSON, refusing
// what DynamoDB refuses: no type or more than one, an empty or repeated
// set, a NULL that is not true, a number DynamoDB cannot store. The
// decoder checks the value's syntax (and its names, each once) as it
// reads it whole; a scanner then reads it.
func (v *value) UnmarshalJSONFrom(d *jsontext.Decoder) error {
	raw, err := d.ReadValue()
	if err != nil {
		return err
	}
	sc := scanner{s: string(raw)}
	return sc.value(v)
}

// UnmarshalJSONFrom decodes a map of attribute values.
func (it *item) UnmarshalJSONFrom(d *jsontext.Decoder) error {
	raw, err := d.ReadValue()
	if err != nil {
		return err
	}
	if raw[0] == 'n' {
		*it = nil
		return nil
	}
	sc := scanner{s: string(raw)}
	m, err := sc.item()
	*it = m
	return err
}

// attributeNames are a request's ExpressionAttributeNames.
type attributeNames map[string]string

// UnmarshalJSONFrom decodes a map of names.
func (an *attributeNames) UnmarshalJSONFrom(d *jsontext.Decoder) error {
	raw, err := d.ReadValue()
	if err != nil {
		return err
	}
	*an = nil
	if raw[0] == 'n' {
		return nil
	}
	sc := scanner{s: string(raw)}
	if err := sc.delim('{'); err != nil {
		return err
	}
	m := attributeNames{}
	for !sc.end('}') {
		placeholder, err := sc.str()
		if err != nil {
			return err
		}
		if m[placeholder], err = sc.str(); err != nil {
			return err
		}
	}
	*an = m
	return nil
}

// scanner reads DynamoDB JSON from one JSON value that a jsontext.Decoder
// has read, and so checked: it is valid JSON, valid UTF-8, and no object
// in it repeats a name. The value is copied once, into s: the strings read
// from it are parts of that copy, not copies of their own (an item's
// attributes keep the copy of the item as long as any of them is kept).
type scanner struct {
	s string
	i int
}

// peek is the kind of the next value (after white space): its first byte,
// '0' for a number, as jsontext.Kind names them.
func (sc *scanner) peek() jsontext.Kind {
	for sc.i < len(sc.s) {
		switch c := sc.s[sc.i]; c {
		case ' ', '\t', '\n', '\r', ':', ',':
			sc.i++
		case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
			return '0'
		default:
			return jsontext.Kind(c)
		}
	}
	return 0
}

// delim reads the delimiter that must come next.
func (sc *scanner) delim(delim byte) error {
	if k := sc.peek(); k != jsontext.Kind(delim) {
		return serializationError("expected %q, found %v", delim, k)
	}
	sc.i++
	return nil
}

// end reports whether the next byte closes an object or an array, and
// reads it if so.
func (sc *scanner) end(delim byte) bool {
	if sc.peek() == jsontext.Kind(delim) {
		sc.i++
		return true
	}
	return false
}

// str reads the string that must come next.
func (sc *scanner) str() (string, error) {
	if k := sc.peek(); k != '"' {
		return "", serializationError("expected a string, found %v", k)
	}
	start, escaped := sc.i, false
	for sc.i++; sc.s[sc.i] != '"'; sc.i++ {
		if sc.s[sc.i] == '\\' {
			escaped = true
			sc.i++
		}
	}
	sc.i++
	if !escaped {
		return sc.s[start+1 : sc.i-1], nil
	}
	out, err := jsontext.AppendUnquote(nil, sc.s[start:sc.i])
	return string(out), err
}

// literal reads true, false or null.
func (sc *scanner) literal() {
	for sc.i < len(sc.s) && sc.s[sc.i] >= 'a' && sc.s[sc.i] <= 'z' {
		sc.i++
	}
}

// skip reads the value that comes next, whatever it is.
func (sc *scanner) skip() error {
	switch sc.peek() {
	case '"':
		_, err := sc.str()
		return err
	case '{', '[':
		depth := 0
		for {
			switch sc.peek() {
			case '{', '[':
				depth++
				sc.i++
			case '}', ']':
				depth--
				sc.i++
				if depth == 0 {
					return nil
				}
			default:
				if err := sc.skip(); err != nil {
					return err
				}
			}
		}
	case '0':
		for sc.i < len(sc.s) && strings.IndexByte("+-.0123456789eE", sc.s[sc.i]) >= 0 {
			sc.i++
		}
	default:
		sc.literal()
	}
	return nil
}

// value reads one attribute value.
func (sc *scanner) value(v *value) error {
	if err := sc.delim('{'); err != nil {
		return err
	}
	*v = value{}
	types := 0
	for !sc.end('}') {
		name, err := sc.str()
		if err != nil {
			return err
		}
		if sc.peek() == 'n' { // a type member sent as null is left out
			sc.literal()
			continue
		}
		k := kindNamed(name)
		if k == 0 {
			if err := sc.skip(); err != nil {
				return err
			}
			continue
		}
		if types++; types > 1 {
			return validationError("Supplied AttributeValue has more than one datatypes set, must contain exactly one of the supported datatypes")
		}
		if err := sc.member(v, k); err != nil {
			return err
		}
	}
	if types == 0 {
		return validationError("Supplied AttributeValue is empty, must contain exactly one of the supported datatypes")
	}
	return nil
}

// member reads the member of type k into v.
func (sc *scanner) member(v *value, k kind) error {
	v.kind = k
	var err error
	switch k {
	case kindS:
		v.s, err = sc.str()
	case kindN:
		if v.s, err = sc.str(); err == nil {
			v.s, err = parseNumber(v.s)
		}
	case kindB:
		v.s, err = sc.binary()
	case kindBOOL, kindNULL:
		if kd := sc.peek(); kd != 't' && kd != 'f' {
			return serializationError("a %v member must be a boolean", k)
		}
		v.b = sc.s[sc.i] == 't'
		sc.literal()
		if k == kindNULL && !v.b {
			return invalidParameter("Null attribute value types must have the value of true")
		}
	case kindM:
		var m item
		m, err = sc.item()
		*v = mapValue(m)
	case kindL:
		if err = sc.delim('['); err != nil {
			return err
		}
		l := []value{}
		for !sc.end(']') {
			var e value
			if err := sc.value(&e); err != nil {
				return err
			}
			l = append(l, e)
		}
		*v = listValue(l)
	case kindSS, kindNS, kindBS:
		var set []string
		set, err = sc.set(k)
		*v = setValue(k, set)
	}
	return err
}

// set reads the elements of a set of kind k, refusing an empty set and
// repeated elements (numbers are compared by value).
func (sc *scanner) set(k kind) ([]string, error) {
	if err := sc.delim('['); err != nil {
		return nil, err
	}
	set := []string{}
	for !sc.end(']') {
		var e string
		var err error
		switch k {
		case kindBS:
			e, err = sc.binary()
		case kindNS:
			if e, err = sc.str(); err == nil {
				e, err = parseNumber(e)
			}
		default:
			e, err = sc.str()
		}
		if err != nil {
			return nil, err
		}
		set = append(set, e)
	}
	if len(set) == 0 {
		return nil, invalidParameter("An %s set  may not be empty", map[kind]string{kindSS: "string", kindNS: "number", kindBS: "binary"}[k])
	}
	seen := make(map[string]bool, len(set))
	for _, e := range set {
		if seen[e] {
			return nil, validationError("Input collection contains duplicates.")
		}
		seen[e] = true
	}
	return set, nil
}

// item reads a map of attribute values: an item, a key or an M.
func (sc *scanner) item() (item, error) {
	if err := sc.delim('{'); err != nil {
		return nil, err
	}
	// The attributes are gathered first, so that the map is made at its
	// size and never grows.
	var buf [16]attribute
	attrs := buf[:0]
	for !sc.end('}') {
		name, err := sc.str()
		if err != nil {
			return nil, err
		}
		attrs = append(attrs, attribute{name: name})
		if err := sc.value(&attrs[len(attrs)-1].v); err != nil {
			return nil, err
		}
	}
	out := make(item, len(attrs))
	for _, a := range attrs {
		out[a.name] = a.v
	}
	return out, nil
}

// attribute is one attribute of an item as it is read.
type attribute struct {
	name string
	v    value
}

// binary reads a base64 string.
func (sc *scanner) binary() (string, error) {
	s, err := sc.str()
	if err != nil {
		return "", err
	}
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return "", serializationError("a binary value is not base64: %v", err)
	}
	return string(b), nil
}

// MarshalJSONTo encodes an attribute value.
func (v value) MarshalJSONTo(e *jsontext.Encoder) error {
	return e.WriteValue(appendValue(nil, v))
}

// MarshalJSONTo encodes a map of attribute values.
func (it item) MarshalJSONTo(e *jsontext.Encoder) error {
	return e.WriteValue(appendItem(nil, it))
}

// appendValue appends v as DynamoDB JSON.
func appendValue(dst []byte, v value) []byte {
	dst = append(dst, `{"`...)
	dst = append(dst, v.kind.String()...)
	dst = append(dst, `":`...)
	switch v.kind {
	case kindS, kindN:
		dst, _ = jsontext.AppendQuote(dst, v.s)
	case kindB:
		dst = appendBase64(dst, v.s)
	case kindBOOL, kindNULL:
		dst = strconv.AppendBool(dst, v.b)
	case kindM:
		dst = appendItem(dst, v.attrs())
	case kindL:
		dst = append(dst, '[')
		for i, e := range v.list() {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendValue(dst, e)
		}
		dst = append(dst, ']')
	case kindSS, kindNS, kindBS:
		dst = append(dst, '[')
		for i, e := range v.elems() {
			if i > 0 {
				dst = append(dst, ',')
			}
			if v.kind == kindBS {
				dst = appendBase64(dst, e)
			} else {
				dst, _ = jsontext.AppendQuote(dst, e)
			}
		}
		dst = append(dst, ']')
	}
	return append(dst, '}')
}

// appendItem appends a map of attribute values, its names in order.
func appendItem(dst []byte, it item) []byte {
	names := make([]string, 0, len(it))
	for n := range it {
		names = append(names, n)
	}
	slices.Sort(names)
	dst = append(dst, '{')
	for i, n := range names {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst, _ = jsontext.AppendQuote(dst, n)
		dst = append(dst, ':')
		dst = appendValue(dst, it[n])
	}
	return append(dst, '}')
}

func appendBase64(dst []byte, s string) []byte {
	dst = append(dst, '"')
	dst = base64.StdEncoding.AppendEncode(dst, []byte(s))
	return append(dst, '"')
}

// equal reports whether a and b are the same value, as a condition's =
// compares them: sets regardless of their order.
func equal(a, b value) bool {
	if a.kind != b.kind {
		return false
	}
	switch a.kind {
	case kindS, kindN, kindB:
		return a.s == b.s
	case kindBOOL, kindNULL:
		return a.b == b.b
	case kindL:
		return slices.EqualFunc(a.list(), b.list(), equal)
	case kindM:
		if len(a.attrs()) != len(b.attrs()) {
			return false
		}
		for n, x := range a.attrs() {
			if y, ok := b.attrs()[n]; !ok || !equal(x, y) {
				return false
			}
		}
		return true
	default: // sets
		if len(a.elems()) != len(b.elems()) {
			return false
		}
		in := members(b.elems())
		for _, e := range a.elems() {
			if !in[e] {
				return false
			}
		}
		return true
	}
}

// compare orders two values of one scalar kind (S by their UTF-8 bytes, N
// by their value, B by their bytes); ok is false for any other pair, which
// DynamoDB does not order.
func compare(a, b value) (c int, ok bool) {
	if a.kind != b.kind {
		return 0, false
	}
	switch a.kind {
	case kindS, kindB:
		return strings.Compare(a.s, b.s), true
	case kindN:
		return compareNumbers(a.s, b.s), true
	}
	return 0, false
}

// size is the value's size as DynamoDB counts it against the item size
// limit (Developer Guide, "Item sizes").
func (v value) size() int {
	switch v.kind {
	case kindS, kindB:
		return len(v.s)
	case kindN:
		return numberSize(v.s)
	case kindBOOL, kindNULL:
		return 1
	case kindM:
		n := 3
		for name, e := range v.attrs() {
			n += len(name) + e.size() + 1
		}
		return n
	case kindL:
		n := 3
		for _, e := range v.list() {
			n += e.size() + 1
		}
		return n
	case kindNS:
		n := 0
		for _, e := range v.elems() {
			n += numberSize(e)
		}
		return n
	default: // SS, BS
		n := 0
		for _, e := range v.elems() {
			n += len(e)
		}
		return n
	}
}

// depth is how deep lists and maps nest in v: 0 for a scalar or a set.
func (v value) depth() int {
	d := 0
	for _, e := range v.list() {
		d = max(d, e.depth())
	}
	for _, e := range v.attrs() {
		d = max(d, e.depth())
	}
	if v.kind == kindL || v.kind == kindM {
		d++
	}
	return d
}

// size is the item's size: its attributes' names and values.
func (it item) size() int {
	n := 0
	for name, v := range it {
		n += len(name) + v.size()
	}
	return n
}

// numberSize is a number's size: one byte per two significant digits,
// plus one.
func numberSize(canonical string) int {
	first, last := -1, -1 // the first and last significant digits
	for i := range len(canonical) {
		if c := canonical[i]; c >= '1' && c <= '9' {
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	digits := 0
	for i := first; i >= 0 && i <= last; i++ {
		if canonical[i] != '.' {
			digits++
		}
	}
	return (digits+1)/2 + 1
}

// decodeJSON decodes body into v with json v2, so that DynamoDB JSON's
// values are read by value.UnmarshalJSONFrom; a body that is not JSON, or
// a member of the wrong JSON type, is a SerializationException.
func decodeJSON(body []byte, v any) error {
	if !utf8.Valid(body) {
		return serializationError("the body is not UTF-8")
	}
	err := unmarshal(body, v)
	var api *apiError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &api):
		return api
	case errors.Is(err, io.ErrUnexpectedEOF) || bytes.Equal(bytes.TrimSpace(body), nil):
		return serializationError("the body is not a JSON object")
	default:
		return serializationError("%v", err)
	}
}
