package jsonbody

import (
	"encoding/json/jsontext"
	"errors"
	"testing"

	"github.com/cloud-agent/control-plane/shared/problem"
)

// TestDecodeNamesTheType: a member of the wrong type is invalid_request
// whose detail names the JSON type it must be, an array's items' type
// included, whatever the member.
func TestDecodeNamesTheType(t *testing.T) {
	type body struct {
		Events *[]string          `json:"events"`
		Groups [][]string         `json:"groups"`
		Items  []struct{}         `json:"items"`
		Tags   map[string]string  `json:"tags"`
		Count  *int               `json:"count"`
		Share  *float64           `json:"share"`
		Flags  []bool             `json:"flags"`
		Raw    []byte             `json:"raw"`
		Any    []jsontext.Value   `json:"any"`
		ByName map[string][]int64 `json:"byName"`
		Name   *string            `json:"name"`
		Flag   *bool              `json:"flag"`
	}
	for _, row := range []struct {
		body, detail string // "" when it decodes
	}{
		{`{"events":"push"}`, "events must be an array of strings."},
		{`{"events":{"push":true}}`, "events must be an array of strings."},
		{`{"events":[1]}`, "events.0 must be a string."},
		{`{"groups":["a"]}`, "groups.0 must be an array of strings."},
		{`{"groups":"a"}`, "groups must be an array of arrays of strings."},
		{`{"items":{}}`, "items must be an array of objects."},
		{`{"tags":[]}`, "tags must be an object."},
		{`{"count":"1"}`, "count must be an integer."},
		{`{"count":1.5}`, "count must be an integer."},
		{`{"share":"half"}`, "share must be a number."},
		{`{"flags":true}`, "flags must be an array of booleans."},
		{`{"raw":[1]}`, "raw must be a string."},
		{`{"any":{}}`, "any must be an array."},
		{`{"any":[1,"a",{}]}`, ""},
		{`{"byName":{"a":"1"}}`, "byName.a must be an array of integers."},
		{`{"name":[]}`, "name must be a string."},
		{`{"flag":1}`, "flag must be true or false."},
	} {
		var b body
		err := Decode([]byte(row.body), &b)
		var pe *problem.Error
		switch {
		case row.detail == "" && err != nil:
			t.Errorf("%s: %v", row.body, err)
		case row.detail == "":
		case !errors.As(err, &pe) || pe.Code != problem.InvalidRequest || pe.Detail != row.detail:
			t.Errorf("%s: %v, want %q", row.body, err, row.detail)
		}
	}
}
