// Package canonicaljson owns the canonical JSON form of RFC 8785, the JSON
// Canonicalization Scheme (JCS): the one byte sequence a JSON value hashes to
// when the operation ledger fingerprints a validated request.
//
// The form has no whitespace; object members are sorted by their names
// compared as arrays of UTF-16 code units; strings escape only '"', '\' and
// the control characters below U+0020; numbers are IEEE 754 doubles written
// the way ECMAScript's Number.prototype.toString writes them. Input must be
// I-JSON (RFC 7493): valid UTF-8, no unpaired surrogates, no member name
// that repeats within an object, and no number beyond the range of a double.
package canonicaljson

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// maxDepth bounds the nesting of arrays and objects, as encoding/json does,
// so that hostile input cannot exhaust the stack.
const maxDepth = 10000

// Transform parses one JSON value, with optional whitespace around it and
// nothing else, and returns its canonical form.
func Transform(data []byte) ([]byte, error) {
	p := parser{data: data}
	p.skipSpace()
	out, err := p.value(nil, 0)
	if err != nil {
		return nil, err
	}
	p.skipSpace()
	if p.pos < len(p.data) {
		return nil, p.errorf("trailing data after the JSON value")
	}
	return out, nil
}

// Marshal returns the canonical form of v as encoding/json encodes it.
func Marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return Transform(buf.Bytes())
}

// parser reads JSON from data, starting at pos, and appends the canonical
// form of what it reads.
type parser struct {
	data []byte
	pos  int
}

func (p *parser) errorf(format string, args ...any) error {
	return fmt.Errorf("canonicaljson: %s at offset %d", fmt.Sprintf(format, args...), p.pos)
}

func (p *parser) skipSpace() {
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

// value appends the canonical form of the value at pos to out; depth is the
// number of arrays and objects that enclose it.
func (p *parser) value(out []byte, depth int) ([]byte, error) {
	if p.pos >= len(p.data) {
		return nil, p.errorf("unexpected end of input")
	}
	switch c := p.data[p.pos]; {
	case c == '{':
		return p.object(out, depth+1)
	case c == '[':
		return p.array(out, depth+1)
	case c == '"':
		s, err := p.string()
		if err != nil {
			return nil, err
		}
		return appendString(out, s), nil
	case c == '-' || '0' <= c && c <= '9':
		return p.number(out)
	default:
		for _, lit := range []string{"true", "false", "null"} {
			if bytes.HasPrefix(p.data[p.pos:], []byte(lit)) {
				p.pos += len(lit)
				return append(out, lit...), nil
			}
		}
		return nil, p.errorf("invalid character %q", c)
	}
}

// member is an object member: its name, the name as UTF-16 code units for
// sorting, and its value in canonical form.
type member struct {
	name  string
	units []uint16
	value []byte
}

func (p *parser) object(out []byte, depth int) ([]byte, error) {
	if depth > maxDepth {
		return nil, p.errorf("nesting deeper than %d", maxDepth)
	}
	p.pos++ // '{'
	p.skipSpace()
	var members []member
	if p.pos < len(p.data) && p.data[p.pos] == '}' {
		p.pos++
		return append(out, "{}"...), nil
	}
	for {
		if p.pos >= len(p.data) || p.data[p.pos] != '"' {
			return nil, p.errorf("expected a member name")
		}
		name, err := p.string()
		if err != nil {
			return nil, err
		}
		p.skipSpace()
		if err := p.expect(':'); err != nil {
			return nil, err
		}
		p.skipSpace()
		value, err := p.value(nil, depth)
		if err != nil {
			return nil, err
		}
		members = append(members, member{name, utf16.Encode([]rune(name)), value})
		p.skipSpace()
		if p.pos < len(p.data) && p.data[p.pos] == '}' {
			p.pos++
			break
		}
		if err := p.expect(','); err != nil {
			return nil, err
		}
		p.skipSpace()
	}
	slices.SortFunc(members, func(a, b member) int { return slices.Compare(a.units, b.units) })
	out = append(out, '{')
	for i, m := range members {
		if i > 0 {
			if slices.Equal(m.units, members[i-1].units) {
				return nil, fmt.Errorf("canonicaljson: member name %q repeats within an object", m.name)
			}
			out = append(out, ',')
		}
		out = appendString(out, m.name)
		out = append(out, ':')
		out = append(out, m.value...)
	}
	return append(out, '}'), nil
}

func (p *parser) array(out []byte, depth int) ([]byte, error) {
	if depth > maxDepth {
		return nil, p.errorf("nesting deeper than %d", maxDepth)
	}
	p.pos++ // '['
	p.skipSpace()
	out = append(out, '[')
	if p.pos < len(p.data) && p.data[p.pos] == ']' {
		p.pos++
		return append(out, ']'), nil
	}
	for {
		var err error
		if out, err = p.value(out, depth); err != nil {
			return nil, err
		}
		p.skipSpace()
		if p.pos < len(p.data) && p.data[p.pos] == ']' {
			p.pos++
			return append(out, ']'), nil
		}
		if err := p.expect(','); err != nil {
			return nil, err
		}
		out = append(out, ',')
		p.skipSpace()
	}
}

func (p *parser) expect(c byte) error {
	if p.pos >= len(p.data) || p.data[p.pos] != c {
		return p.errorf("expected %q", c)
	}
	p.pos++
	return nil
}

// string reads the string at pos, its opening quote included, and returns
// its decoded text.
func (p *parser) string() (string, error) {
	p.pos++ // '"'
	var sb strings.Builder
	for {
		if p.pos >= len(p.data) {
			return "", p.errorf("unterminated string")
		}
		c := p.data[p.pos]
		switch {
		case c == '"':
			p.pos++
			return sb.String(), nil
		case c == '\\':
			r, err := p.escape()
			if err != nil {
				return "", err
			}
			sb.WriteRune(r)
		case c < 0x20:
			return "", p.errorf("control character U+%04X in a string", c)
		case c < utf8.RuneSelf:
			sb.WriteByte(c)
			p.pos++
		default:
			r, size := utf8.DecodeRune(p.data[p.pos:])
			if r == utf8.RuneError && size == 1 {
				return "", p.errorf("invalid UTF-8")
			}
			sb.WriteRune(r)
			p.pos += size
		}
	}
}

// escape reads the escape sequence at pos, a surrogate pair written as two
// \u escapes counting as one, and returns the character it stands for.
func (p *parser) escape() (rune, error) {
	if p.pos+1 >= len(p.data) {
		return 0, p.errorf("unterminated escape")
	}
	c := p.data[p.pos+1]
	if c != 'u' {
		p.pos += 2
		switch c {
		case '"', '\\', '/':
			return rune(c), nil
		case 'b':
			return '\b', nil
		case 'f':
			return '\f', nil
		case 'n':
			return '\n', nil
		case 'r':
			return '\r', nil
		case 't':
			return '\t', nil
		}
		return 0, p.errorf("invalid escape \\%c", c)
	}
	r, err := p.hex4()
	if err != nil {
		return 0, err
	}
	if !utf16.IsSurrogate(r) {
		return r, nil
	}
	if r < 0xdc00 && bytes.HasPrefix(p.data[p.pos:], []byte(`\u`)) {
		low, err := p.hex4()
		if err != nil {
			return 0, err
		}
		if pair := utf16.DecodeRune(r, low); pair != utf8.RuneError {
			return pair, nil
		}
	}
	return 0, p.errorf("unpaired surrogate")
}

// hex4 reads a \u escape at pos and returns the code unit it holds.
func (p *parser) hex4() (rune, error) {
	if p.pos+6 > len(p.data) {
		return 0, p.errorf("unterminated escape")
	}
	var r rune
	for _, c := range p.data[p.pos+2 : p.pos+6] {
		switch {
		case '0' <= c && c <= '9':
			r = r<<4 | rune(c-'0')
		case 'a' <= c && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case 'A' <= c && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, p.errorf("invalid \\u escape")
		}
	}
	p.pos += 6
	return r, nil
}

// number reads the number at pos, checks it against the JSON grammar, and
// appends its canonical form.
func (p *parser) number(out []byte) ([]byte, error) {
	start := p.pos
	if p.data[p.pos] == '-' {
		p.pos++
	}
	switch {
	case p.pos < len(p.data) && p.data[p.pos] == '0':
		p.pos++
	case p.digits() == 0:
		return nil, p.errorf("invalid number")
	}
	if p.pos < len(p.data) && p.data[p.pos] == '.' {
		p.pos++
		if p.digits() == 0 {
			return nil, p.errorf("invalid number")
		}
	}
	if p.pos < len(p.data) && (p.data[p.pos] == 'e' || p.data[p.pos] == 'E') {
		p.pos++
		if p.pos < len(p.data) && (p.data[p.pos] == '+' || p.data[p.pos] == '-') {
			p.pos++
		}
		if p.digits() == 0 {
			return nil, p.errorf("invalid number")
		}
	}
	f, err := strconv.ParseFloat(string(p.data[start:p.pos]), 64)
	if err != nil {
		return nil, p.errorf("number %s beyond the range of a double", p.data[start:p.pos])
	}
	return appendNumber(out, f), nil
}

// digits skips the decimal digits at pos and returns how many there were.
func (p *parser) digits() int {
	start := p.pos
	for p.pos < len(p.data) && '0' <= p.data[p.pos] && p.data[p.pos] <= '9' {
		p.pos++
	}
	return p.pos - start
}

// appendNumber appends f as ECMAScript's Number.prototype.toString writes
// it (RFC 8785 section 3.2.2.3). f is finite.
func appendNumber(out []byte, f float64) []byte {
	if f == 0 {
		return append(out, '0') // -0 too
	}
	if f < 0 {
		out = append(out, '-')
		f = -f
	}
	// The shortest digits that round-trip, as "d.ddde±x" or "de±x".
	mantissa, exponent, _ := strings.Cut(strconv.FormatFloat(f, 'e', -1, 64), "e")
	digits := strings.Replace(mantissa, ".", "", 1)
	e, _ := strconv.Atoi(exponent)
	// In ECMAScript's terms, f is 0.digits × 10^n with k digits.
	k, n := len(digits), e+1
	switch {
	case k <= n && n <= 21:
		out = append(out, digits...)
		return append(out, strings.Repeat("0", n-k)...)
	case 0 < n && n <= 21:
		out = append(out, digits[:n]...)
		out = append(out, '.')
		return append(out, digits[n:]...)
	case -6 < n && n <= 0:
		out = append(out, "0."...)
		out = append(out, strings.Repeat("0", -n)...)
		return append(out, digits...)
	}
	out = append(out, digits[0])
	if k > 1 {
		out = append(out, '.')
		out = append(out, digits[1:]...)
	}
	out = append(out, 'e')
	if n-1 >= 0 {
		out = append(out, '+')
	}
	return strconv.AppendInt(out, int64(n-1), 10)
}

// appendString appends s as a JSON string that escapes only '"', '\' and the
// control characters below U+0020.
func appendString(out []byte, s string) []byte {
	out = append(out, '"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '"', '\\':
			out = append(out, '\\', c)
		case '\b':
			out = append(out, `\b`...)
		case '\t':
			out = append(out, `\t`...)
		case '\n':
			out = append(out, `\n`...)
		case '\f':
			out = append(out, `\f`...)
		case '\r':
			out = append(out, `\r`...)
		default:
			if c < 0x20 {
				const hex = "0123456789abcdef"
				out = append(out, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			} else {
				out = append(out, c)
			}
		}
	}
	return append(out, '"')
}
