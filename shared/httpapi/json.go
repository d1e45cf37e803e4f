package httpapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/cloud-agent/control-plane/shared/problem"
	"github.com/cloud-agent/control-plane/shared/strictjson"
)

// Object reads a JSON object strictly: member names are exact and unique,
// members of the wrong type and members nobody asked for are errors, and a
// member sent as null is one left out. The first error is kept and
// reported by Err as invalid_request.
type Object struct {
	members  map[string]json.RawMessage
	path     string
	read     []string
	children []*Object
	err      *error
}

// ParseObject reads a body that must be one JSON object.
func ParseObject(body []byte) (*Object, error) {
	body = bytes.TrimSpace(body)
	if len(body) == 0 || body[0] != '{' || strictjson.CheckUnique(body) != nil {
		return nil, invalid("The body must be one JSON object with unique member names.")
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, invalid("The body must be one JSON object with unique member names.")
	}
	var err error
	return &Object{members: m, err: &err}, nil
}

func invalid(detail string) error { return problem.New(problem.InvalidRequest, detail) }

// Fail records an error about a member, unless one is recorded already.
func (o *Object) Fail(name, format string, args ...any) {
	if *o.err == nil {
		*o.err = invalid(o.path + name + " " + fmt.Sprintf(format, args...) + ".")
	}
}

// Raw returns a member's JSON; ok is false when it is absent or null.
func (o *Object) Raw(name string) (json.RawMessage, bool) {
	o.read = append(o.read, name)
	v, ok := o.members[name]
	if !ok || string(v) == "null" {
		return nil, false
	}
	return v, true
}

// String returns a string member; "" and false when absent or null. A
// required member that is absent is an error.
func (o *Object) String(name string, required bool) (string, bool) {
	raw, ok := o.Raw(name)
	if !ok {
		if required {
			o.Fail(name, "is required")
		}
		return "", false
	}
	var s string
	if raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
		o.Fail(name, "must be a string")
		return "", false
	}
	return s, true
}

// Optional returns an optional string member that, when sent, may not be
// empty; "" when absent or null.
func (o *Object) Optional(name string) string {
	v, ok := o.String(name, false)
	if ok && v == "" {
		o.Fail(name, "may not be empty")
	}
	return v
}

// Bool returns a boolean member.
func (o *Object) Bool(name string) (v, ok bool) {
	raw, ok := o.Raw(name)
	if !ok {
		return false, false
	}
	if json.Unmarshal(raw, &v) != nil {
		o.Fail(name, "must be true or false")
		return false, false
	}
	return v, true
}

// Object returns an object member, reading into the same error.
func (o *Object) Object(name string, required bool) (*Object, bool) {
	raw, ok := o.Raw(name)
	if !ok {
		if required {
			o.Fail(name, "is required")
		}
		return nil, false
	}
	var m map[string]json.RawMessage
	if raw[0] != '{' || json.Unmarshal(raw, &m) != nil {
		o.Fail(name, "must be an object")
		return nil, false
	}
	child := &Object{members: m, path: o.path + name + ".", err: o.err}
	o.children = append(o.children, child)
	return child, true
}

// Err finishes reading: it reports the first error, or a member that was
// not asked for here or in an object read from this one.
func (o *Object) Err() error {
	if *o.err != nil {
		return *o.err
	}
	return o.unknown()
}

func (o *Object) unknown() error {
	names := make([]string, 0, len(o.members))
	for name := range o.members {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if !slices.Contains(o.read, name) {
			return invalid(fmt.Sprintf("%s%s is not a known member.", o.path, name))
		}
	}
	for _, c := range o.children {
		if err := c.unknown(); err != nil {
			return err
		}
	}
	return nil
}
