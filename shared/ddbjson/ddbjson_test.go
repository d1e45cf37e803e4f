package ddbjson

import (
	"encoding/json"
	"reflect"
	"testing"
)

// TestRoundTrip: every attribute type reads and writes back unchanged.
func TestRoundTrip(t *testing.T) {
	in := `{"PK":{"S":"SESSION#a"},"n":{"N":"1.5"},"b":{"B":"AQI="},"t":{"BOOL":true},"z":{"NULL":true},` +
		`"ss":{"SS":["a","b"]},"ns":{"NS":["1"]},"bs":{"BS":["AQ=="]},"m":{"M":{"x":{"L":[{"S":"y"},{"N":"2"}]}}}}`
	item, err := Unmarshal([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	out, err := Marshal(item)
	if err != nil {
		t.Fatal(err)
	}
	var a, b any
	_ = json.Unmarshal([]byte(in), &a)
	_ = json.Unmarshal(out, &b)
	if !reflect.DeepEqual(a, b) {
		t.Errorf("got %s", out)
	}
}

// TestRejects: malformed DynamoDB JSON is an error.
func TestRejects(t *testing.T) {
	for _, in := range []string{
		`[]`, `{"a":{"S":1}}`, `{"a":{"S":"x","N":"1"}}`, `{"a":{}}`, `{"a":{"X":"1"}}`, `{"a":{"L":[{"S":1}]}}`, `{} {}`,
	} {
		if _, err := Unmarshal([]byte(in)); err == nil {
			t.Errorf("%s: no error", in)
		}
	}
}
