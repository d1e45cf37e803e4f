package canonicaljson

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"
)

type row struct {
	name, in, want string
}

// transformRows are inputs with their canonical form.
var transformRows = []row{
	// RFC 8785 section 3.2.3.
	{"RFC 8785 sample object", `{
  "numbers": [333333333.33333329, 1E30, 4.50,
              2e-3, 0.000000000000000000000000001],
  "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
  "literals": [null, true, false]
}`, `{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}`},
	{"RFC 8785 members sort by UTF-16 code units", `{
  "\u20ac": "Euro Sign",
  "\r": "Carriage Return",
  "\ufb33": "Hebrew Letter Dalet With Dagesh",
  "1": "One",
  "\ud83d\ude00": "Emoji: Grinning Face",
  "\u0080": "Control",
  "\u00f6": "Latin Small Letter O With Diaeresis"
}`, "{\"\\r\":\"Carriage Return\",\"1\":\"One\",\"\u0080\":\"Control\",\"\u00f6\":\"Latin Small Letter O With Diaeresis\"," +
		"\"\u20ac\":\"Euro Sign\",\"\U0001F600\":\"Emoji: Grinning Face\",\"\ufb33\":\"Hebrew Letter Dalet With Dagesh\"}"},

	// Numbers, RFC 8785 appendix B and section 3.2.2.3.
	{"number zero", `0`, `0`},
	{"number negative zero is zero", `-0`, `0`},
	{"number negative zero with fraction and exponent is zero", `-0.0e5`, `0`},
	{"number 1e21 takes exponent form", `1e21`, `1e+21`},
	{"number below 1e21 takes no exponent", `123456789012345680000`, `123456789012345680000`},
	{"number integer rounds to nearest double", `9007199254740993`, `9007199254740992`},
	{"number 1e-6 takes no exponent", `0.000001`, `0.000001`},
	{"number 1e-7 takes exponent form", `1e-7`, `1e-7`},
	{"number fraction with exponent form", `0.00000015`, `1.5e-7`},
	{"number smallest subnormal", `5e-324`, `5e-324`},
	{"number largest double", `1.7976931348623157e308`, `1.7976931348623157e+308`},
	{"number shortest round-trip digits", `333333333.33333329`, `333333333.3333333`},
	{"number trailing fraction zero dropped", `4.50`, `4.5`},
	{"number small exponent spelled out", `2e-3`, `0.002`},
	{"number one tenth", `0.1`, `0.1`},
	{"number uppercase exponent and plus sign", `1E+2`, `100`},
	{"number negative with exponent form", `-1.5e300`, `-1.5e+300`},
	{"number below the smallest subnormal is zero", `1e-400`, `0`},
	{"number long mantissa", `1424953923781206.25`, `1424953923781206.2`},

	// Strings.
	{"string escapes quote and backslash", `"\"\\"`, `"\"\\"`},
	{"string escapes control characters by name", `"\u0008\u0009\u000A\u000c\u000D"`, `"\b\t\n\f\r"`},
	{"string escapes other control characters as lowercase hex", `"\u0000\u001F\u000b"`, `"\u0000\u001f\u000b"`},
	{"string writes solidus raw", `"\/"`, `"/"`},
	{"string writes HTML characters raw", `"\u003c\u003e\u0026<>&"`, `"<>&<>&"`},
	{"string writes DEL raw", `"\u007f"`, "\"\x7f\""},
	{"string writes U+2028 and U+2029 raw", `"\u2028\u2029"`, "\"\u2028\u2029\""},
	{"string writes non-ASCII raw", `"\u00e9` + "é\"", `"éé"`},
	{"string writes surrogate pair as raw UTF-8", `"\uD83D\uDE00"`, "\"\U0001F600\""},
	{"string keeps raw UTF-8", "\"\U0001F600\ufb33\"", "\"\U0001F600\ufb33\""},
	{"string escaped NUL in member name", `{"\u0000":1}`, `{"\u0000":1}`},

	// Structure.
	{"whitespace removed", " \t\n\r{ \"b\" : [ 1 , 2 ] ,\n\"a\" : { } , \"c\" : [ ] } \n", `{"a":{},"b":[1,2],"c":[]}`},
	{"members sort by code unit, not by case", `{"b":1,"a":2,"B":3,"A":4}`, `{"A":4,"B":3,"a":2,"b":1}`},
	{"member name that is a prefix sorts first", `{"ab":1,"a":2,"":3}`, `{"":3,"a":2,"ab":1}`},
	{"nested members sort", `{"z":[{"y":1,"x":2}],"a":{"d":{"c":3,"b":4}}}`, `{"a":{"d":{"b":4,"c":3}},"z":[{"x":2,"y":1}]}`},
	{"arrays keep their order", `[3,1,2]`, `[3,1,2]`},
	{"literals", `[true,false,null]`, `[true,false,null]`},
	{"scalar at top level", `"x"`, `"x"`},
	{"nesting at the limit", strings.Repeat("[", maxDepth) + strings.Repeat("]", maxDepth), strings.Repeat("[", maxDepth) + strings.Repeat("]", maxDepth)},
}

// errorRows are inputs Transform rejects, with a part of the error message.
var errorRows = []row{
	{"duplicate member name", `{"a":1,"a":2}`, `"a" repeats`},
	{"duplicate member name spelled with an escape", `{"a":1,"\u0061":2}`, `"a" repeats`},
	{"duplicate member name in a nested object", `[{"x":{"b":1,"b":1}}]`, `"b" repeats`},
	{"trailing value", `{} {}`, "trailing data"},
	{"trailing number", `1 2`, "trailing data"},
	{"trailing bracket", `[]]`, "trailing data"},
	{"trailing garbage after literal", `truex`, "trailing data"},
	{"invalid UTF-8 byte", "\"\xff\"", "invalid UTF-8"},
	{"invalid UTF-8 truncated sequence", "\"\xc3\"", "invalid UTF-8"},
	{"invalid UTF-8 overlong encoding", "\"\xc0\xaf\"", "invalid UTF-8"},
	{"invalid UTF-8 encoded surrogate", "\"\xed\xa0\x80\"", "invalid UTF-8"},
	{"invalid UTF-8 in member name", "{\"\xff\":1}", "invalid UTF-8"},
	{"unpaired high surrogate", `"\ud800"`, "unpaired surrogate"},
	{"unpaired low surrogate", `"\udc00"`, "unpaired surrogate"},
	{"high surrogate before a character", `"\ud800x"`, "unpaired surrogate"},
	{"high surrogate before a non-surrogate escape", `"\ud800\u0041"`, "unpaired surrogate"},
	{"two high surrogates", `"\ud800\ud800"`, "unpaired surrogate"},
	{"number overflows a double", `1e400`, "beyond the range"},
	{"negative number overflows a double", `-1e309`, "beyond the range"},
	{"number with leading zero", `01`, "trailing data"},
	{"number without fraction digits", `1.`, "invalid number"},
	{"number without integer digits", `.5`, "invalid character"},
	{"number with plus sign", `+1`, "invalid character"},
	{"number without exponent digits", `1e`, "invalid number"},
	{"lone minus", `-`, "invalid number"},
	{"NaN", `NaN`, "invalid character"},
	{"Infinity", `Infinity`, "invalid character"},
	{"empty input", ``, "unexpected end"},
	{"only whitespace", " \n", "unexpected end"},
	{"truncated literal", `tru`, "invalid character"},
	{"trailing comma in array", `[1,]`, "invalid character"},
	{"trailing comma in object", `{"a":1,}`, "expected a member name"},
	{"unquoted member name", `{a:1}`, "expected a member name"},
	{"missing colon", `{"a" 1}`, `expected ':'`},
	{"missing comma", `[1 2]`, `expected ','`},
	{"unterminated array", `[1`, `expected ','`},
	{"unterminated string", `"abc`, "unterminated string"},
	{"raw control character in string", "\"\t\"", "control character"},
	{"invalid escape", `"\x"`, "invalid escape"},
	{"invalid hex in escape", `"\u12g4"`, `invalid \u escape`},
	{"truncated escape", `"\u12"`, "unterminated escape"},
	{"single-quoted string", `'a'`, "invalid character"},
	{"nesting beyond the limit", strings.Repeat("[", maxDepth+1) + strings.Repeat("]", maxDepth+1), "nesting deeper"},
	{"object nesting beyond the limit", strings.Repeat(`{"a":`, maxDepth+1) + "1" + strings.Repeat("}", maxDepth+1), "nesting deeper"},
}

func TestTransform(t *testing.T) {
	for _, r := range transformRows {
		t.Run(r.name, func(t *testing.T) {
			got, err := Transform([]byte(r.in))
			if err != nil {
				t.Fatalf("err = %v", err)
			}
			if string(got) != r.want {
				t.Fatalf("got  %s\nwant %s", got, r.want)
			}
		})
	}
}

func TestTransformRejects(t *testing.T) {
	for _, r := range errorRows {
		t.Run(r.name, func(t *testing.T) {
			got, err := Transform([]byte(r.in))
			if err == nil {
				t.Fatalf("got %s, want an error", got)
			}
			if !strings.Contains(err.Error(), r.want) {
				t.Fatalf("err = %v, want one about %s", err, r.want)
			}
		})
	}
}

// TestNumberAppendixB holds the IEEE 754 values of RFC 8785 appendix B with
// their canonical form.
func TestNumberAppendixB(t *testing.T) {
	rows := []struct {
		bits uint64
		want string
	}{
		{0x0000000000000000, "0"},
		{0x8000000000000000, "0"},
		{0x0000000000000001, "5e-324"},
		{0x8000000000000001, "-5e-324"},
		{0x7fefffffffffffff, "1.7976931348623157e+308"},
		{0xffefffffffffffff, "-1.7976931348623157e+308"},
		{0x4340000000000000, "9007199254740992"},
		{0xc340000000000000, "-9007199254740992"},
		{0x4430000000000000, "295147905179352830000"},
		{0x44b52d02c7e14af5, "9.999999999999997e+22"},
		{0x44b52d02c7e14af6, "1e+23"},
		{0x44b52d02c7e14af7, "1.0000000000000001e+23"},
		{0x444b1ae4d6e2ef4e, "999999999999999700000"},
		{0x444b1ae4d6e2ef4f, "999999999999999900000"},
		{0x444b1ae4d6e2ef50, "1e+21"},
		{0x3eb0c6f7a0b5ed8c, "9.999999999999997e-7"},
		{0x3eb0c6f7a0b5ed8d, "0.000001"},
		{0x41b3de4355555553, "333333333.3333332"},
		{0x41b3de4355555554, "333333333.33333325"},
		{0x41b3de4355555555, "333333333.3333333"},
		{0x41b3de4355555556, "333333333.3333334"},
		{0x41b3de4355555557, "333333333.33333343"},
		{0xbecbf647612f3696, "-0.0000033333333333333333"},
		{0x43143ff3c1cb0959, "1424953923781206.2"},
	}
	for _, r := range rows {
		t.Run(r.want, func(t *testing.T) {
			if got := string(appendNumber(nil, math.Float64frombits(r.bits))); got != r.want {
				t.Fatalf("%016x: got %s, want %s", r.bits, got, r.want)
			}
		})
	}
}

func TestMarshal(t *testing.T) {
	type request struct {
		Zeta  string         `json:"zeta"`
		Alpha float64        `json:"alpha"`
		HTML  string         `json:"html"`
		Extra map[string]int `json:"extra"`
	}
	rows := []struct {
		name string
		v    any
		want string
	}{
		{"struct fields sort by name", request{Zeta: "z", Alpha: 1, Extra: map[string]int{}}, `{"alpha":1,"extra":{},"html":"","zeta":"z"}`},
		{"HTML characters and U+2028 stay raw", request{HTML: "<a&b>\u2028", Extra: map[string]int{"b": 2, "a": 1}}, "{\"alpha\":0,\"extra\":{\"a\":1,\"b\":2},\"html\":\"<a&b>\u2028\",\"zeta\":\"\"}"},
		{"floats take ECMAScript form", []float64{1e21, 1e-7, 0.1, math.Copysign(0, -1)}, `[1e+21,1e-7,0.1,0]`},
		{"large integers round to a double", int64(9007199254740993), `9007199254740992`},
		{"nil is null", nil, `null`},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			got, err := Marshal(r.v)
			if err != nil {
				t.Fatalf("err = %v", err)
			}
			if string(got) != r.want {
				t.Fatalf("got  %s\nwant %s", got, r.want)
			}
		})
	}
}

func TestMarshalRejects(t *testing.T) {
	rows := []struct {
		name string
		v    any
	}{
		{"NaN", math.NaN()},
		{"channel", make(chan int)},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			if got, err := Marshal(r.v); err == nil {
				t.Fatalf("got %s, want an error", got)
			}
		})
	}
}

// FuzzTransform: Transform never panics; what it accepts is valid JSON, and
// its output is valid JSON that means the same as the input and is its own
// canonical form.
func FuzzTransform(f *testing.F) {
	for _, r := range transformRows {
		if len(r.in) < 1000 {
			f.Add([]byte(r.in))
		}
	}
	for _, r := range errorRows {
		if len(r.in) < 1000 {
			f.Add([]byte(r.in))
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		out, err := Transform(data)
		if err != nil {
			return
		}
		if !json.Valid(data) {
			t.Fatalf("accepted invalid JSON %q", data)
		}
		if !json.Valid(out) {
			t.Fatalf("output %q of %q is not valid JSON", out, data)
		}
		again, err := Transform(out)
		if err != nil {
			t.Fatalf("output %q of %q: %v", out, data, err)
		}
		if !bytes.Equal(again, out) {
			t.Fatalf("not idempotent: %q gave %q, then %q", data, out, again)
		}
		var in, canon any
		if err := json.Unmarshal(data, &in); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(out, &canon); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(in, canon) {
			t.Fatalf("%q means %v, its output %q means %v", data, in, out, canon)
		}
	})
}
