package dynamo

import (
	"math/big"
	"strconv"
	"strings"
)

// Numbers are kept in one canonical form, so that equal numbers are equal
// strings: no sign but a minus, no exponent, no leading zeros but one
// before the point, no trailing zeros after it, "0" for zero. DynamoDB
// answers numbers trimmed the same way ("Leading and trailing zeroes are
// trimmed", Developer Guide, "Data types").

// decimal is a number as digits × 10^exp: digits without leading or
// trailing zeros ("" for zero).
type decimal struct {
	neg    bool
	digits string
	exp    int
}

// The limits of a DynamoDB number (Developer Guide, "Data types").
const (
	maxDigits    = 38
	maxMagnitude = 125  // at most 9.9999999999999999999999999999999999999E+125
	minMagnitude = -130 // at least 1E-130
)

// parseNumber checks a number as DynamoDB reads it and returns its
// canonical form.
func parseNumber(s string) (string, error) {
	if canonicalInteger(s) {
		return s, nil
	}
	d, ok := scanDecimal(s)
	if !ok {
		return "", validationError("The parameter cannot be converted to a numeric value: %s", s)
	}
	if err := d.check(); err != nil {
		return "", err
	}
	return d.String(), nil
}

// canonicalInteger reports whether s is an integer in canonical form
// that DynamoDB can store: "0", or up to maxDigits digits, the first not
// 0, after an optional minus. Such a number is its own canonical form.
func canonicalInteger(s string) bool {
	digits := strings.TrimPrefix(s, "-")
	if s == "0" {
		return true
	}
	if len(digits) == 0 || len(digits) > maxDigits || digits[0] == '0' {
		return false
	}
	for i := range len(digits) {
		if digits[i] < '0' || digits[i] > '9' {
			return false
		}
	}
	return true
}

// scanDecimal reads [+-]digits[.digits][(e|E)[+-]digits].
func scanDecimal(s string) (decimal, bool) {
	var d decimal
	i := 0
	if i < len(s) && (s[i] == '-' || s[i] == '+') {
		d.neg = s[i] == '-'
		i++
	}
	var mant strings.Builder
	seen, frac := false, 0
	for dot := false; i < len(s); i++ {
		switch c := s[i]; {
		case c >= '0' && c <= '9':
			mant.WriteByte(c)
			seen = true
			if dot {
				frac++
			}
		case c == '.' && !dot:
			dot = true
		default:
			goto exponent
		}
	}
exponent:
	if !seen {
		return d, false
	}
	exp := 0
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		neg := false
		if i < len(s) && (s[i] == '-' || s[i] == '+') {
			neg = s[i] == '-'
			i++
		}
		start := i
		for ; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
			if exp < 1<<40 {
				exp = exp*10 + int(s[i]-'0')
			}
		}
		if i == start {
			return d, false
		}
		if neg {
			exp = -exp
		}
	}
	if i != len(s) {
		return d, false
	}
	digits := strings.TrimLeft(mant.String(), "0")
	trimmed := strings.TrimRight(digits, "0")
	d.exp = exp - frac + len(digits) - len(trimmed)
	d.digits = trimmed
	if d.digits == "" {
		d.neg, d.exp = false, 0
	}
	return d, true
}

// check refuses what DynamoDB cannot store.
func (d decimal) check() error {
	if d.digits == "" {
		return nil
	}
	if len(d.digits) > maxDigits {
		return validationError("Attempting to store more than 38 significant digits in a Number")
	}
	switch m := d.magnitude(); {
	case m > maxMagnitude:
		return validationError("Number overflow. Attempting to store a number with magnitude larger than supported range")
	case m < minMagnitude:
		return validationError("Number underflow. Attempting to store a number with magnitude smaller than supported range")
	}
	return nil
}

// magnitude is the power of ten of the number's first digit.
func (d decimal) magnitude() int { return len(d.digits) + d.exp - 1 }

// String is the canonical form.
func (d decimal) String() string {
	if d.digits == "" {
		return "0"
	}
	var b strings.Builder
	if d.neg {
		b.WriteByte('-')
	}
	switch point := len(d.digits) + d.exp; {
	case d.exp >= 0:
		b.WriteString(d.digits)
		b.WriteString(strings.Repeat("0", d.exp))
	case point > 0:
		b.WriteString(d.digits[:point])
		b.WriteByte('.')
		b.WriteString(d.digits[point:])
	default:
		b.WriteString("0.")
		b.WriteString(strings.Repeat("0", -point))
		b.WriteString(d.digits)
	}
	return b.String()
}

// mustDecimal reads a canonical number.
func mustDecimal(canonical string) decimal {
	d, _ := scanDecimal(canonical)
	return d
}

// compareNumbers orders two canonical numbers by value.
func compareNumbers(a, b string) int {
	if a == b {
		return 0
	}
	x, y := mustDecimal(a), mustDecimal(b)
	sign := func(d decimal) int {
		switch {
		case d.digits == "":
			return 0
		case d.neg:
			return -1
		}
		return 1
	}
	if sx, sy := sign(x), sign(y); sx != sy || sx == 0 {
		return cmpInt(sx, sy)
	}
	c := cmpInt(x.magnitude(), y.magnitude())
	if c == 0 {
		// Same first power of ten: the digits decide, as strings padded to
		// one length.
		n := max(len(x.digits), len(y.digits))
		c = strings.Compare(x.digits+strings.Repeat("0", n-len(x.digits)), y.digits+strings.Repeat("0", n-len(y.digits)))
	}
	if x.neg {
		return -c
	}
	return c
}

func cmpInt(a, b int) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// addNumbers is a + b (b negated when subtract), refused when DynamoDB
// could not store the result.
func addNumbers(a, b string, subtract bool) (string, error) {
	x, y := mustDecimal(a), mustDecimal(b)
	if subtract {
		y.neg = !y.neg
	}
	exp := min(x.exp, y.exp)
	sum := new(big.Int).Add(x.scaled(exp), y.scaled(exp))
	d, _ := scanDecimal(sum.String() + "e" + strconv.Itoa(exp))
	if err := d.check(); err != nil {
		return "", err
	}
	return d.String(), nil
}

// scaled is the number as an integer times 10^exp, for an exp at or
// below its own.
func (d decimal) scaled(exp int) *big.Int {
	n, _ := new(big.Int).SetString("0"+d.digits+strings.Repeat("0", d.exp-exp), 10)
	if d.neg {
		n.Neg(n)
	}
	return n
}
