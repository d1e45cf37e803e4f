package jsonbody

import (
	"encoding/json/jsontext"
	"errors"
	"strings"
	"testing"

	"github.com/cloud-agent/control-plane/shared/problem"
)

// TestDecode: encoding/json/v2's strict reading. Exact, unique member
// names; null is absent; invalid UTF-8 anywhere, wrong types, unknown
// members at any depth, excess nesting and non-objects are invalid_request,
// with a detail that names the member and the first fault met, told by the
// error's kind and never by its text (a body cut short in a surrogate is
// not valid JSON; a syntax error 10000 deep is not excess nesting).
func TestDecode(t *testing.T) {
	type body struct {
		Name  *string `json:"name"`
		Inner *struct {
			X *string `json:"x"`
		} `json:"inner"`
		Flag  *bool          `json:"flag"`
		Value jsontext.Value `json:"value"`
	}
	deep := strings.Repeat("[", 10001) + strings.Repeat("]", 10001)
	for _, row := range []struct {
		body, detail string // "" when it decodes
	}{
		{`{"name":"a"}`, ""},
		{`{"name":"a","inner":null,"flag":null}`, ""},
		{`{"name":"a","inner":{"x":"1"},"flag":true,"value":{"any":[1,2]}}`, ""},
		{`{"name":"caf\u00e9 \ud83d\ude00"}`, ""},
		{`{"name":"a","Name":"b"}`, "Name is not a known member."},
		{`{"name":"a","name":"b"}`, "name is repeated."},
		{`{"inner":{"x":"1","x":"2"}}`, "inner.x is repeated."},
		{`{"name":1}`, "name must be a string."},
		{`{"flag":"yes"}`, "flag must be true or false."},
		{`{"inner":"x"}`, "inner must be an object."},
		{`{"inner":{"y":"1"}}`, "inner.y is not a known member."},
		{`{"` + strings.Repeat("é", 5000) + `":1}`, strings.Repeat("é", 100) + "… is not a known member."},
		{"{\"name\":\"a\xffb\"}", "name holds invalid UTF-8."},
		{"{\"inner\":{\"x\":\"\xc3\"}}", "inner.x holds invalid UTF-8."},
		{"{\"na\xffme\":\"a\"}", "The body holds invalid UTF-8."},
		{`{"name":"\ud800"}`, "name holds invalid UTF-8."},
		{`{"name":"\ud800\u0041"}`, "name holds invalid UTF-8."},
		{"{\"flag\":\"\xff\"}", "flag holds invalid UTF-8."},
		{"{\"name\":\"\xff\",\"name\":\"a\"}", "name holds invalid UTF-8."},
		{"{\"name\":\"a\xff\x01\"}", "name holds invalid UTF-8."},
		{"{\"name\":\"a\x01\xff\"}", "The body is not valid JSON."},
		{"{\"name\":\"\xff\" x", "name holds invalid UTF-8."},
		{`{{"a":1 x}`, "The body is not valid JSON."},
		{"{\"name\":\"a\" x \"\xff\"}", "The body is not valid JSON."},
		{`{"name":"\ud800`, "The body is not valid JSON."},
		{`{"value":` + deep + `}`, "The body is nested too deeply."},
		{`{"value":` + strings.Repeat("[", 9999) + `x`, "The body is not valid JSON."},
		{`{"name":"a"} x`, "The body is not valid JSON."},
		{`{"name":"a"`, "The body is not valid JSON."},
		{`["name"]`, "The body must be one JSON object."},
		{`"name"`, "The body must be one JSON object."},
		{`null`, "The body must be one JSON object."},
		{``, "The body must be one JSON object."},
	} {
		var b body
		err := Decode([]byte(row.body), &b)
		var pe *problem.Error
		switch {
		case row.detail == "" && err != nil:
			t.Errorf("%.60s: %v", row.body, err)
		case row.detail == "":
		case !errors.As(err, &pe) || pe.Code != problem.InvalidRequest || pe.Detail != row.detail:
			t.Errorf("%.60s: %v, want %q", row.body, err, row.detail)
		}
	}
}

// TestNameOrObject: a name or an object is kept as sent; absent and null
// are nil; any other kind fails naming the member.
func TestNameOrObject(t *testing.T) {
	for _, r := range []struct {
		sent string
		want string // "" for nil
		ok   bool
	}{
		{`"vercel-large"`, `"vercel-large"`, true}, {`{"provider": {}}`, `{"provider": {}}`, true},
		{``, ``, true}, {`null`, ``, true},
		{`1`, `1`, false}, {`true`, `true`, false}, {`["a"]`, `["a"]`, false},
	} {
		var m problem.Members
		got := NameOrObject(&m, "x.sandboxAllocation", jsontext.Value(r.sent))
		err := m.Err()
		if string(got) != r.want || (err == nil) != r.ok || err != nil && !strings.HasPrefix(err.Error(), "invalid_request: x.sandboxAllocation ") {
			t.Errorf("%q: %q %v", r.sent, got, err)
		}
	}
}
