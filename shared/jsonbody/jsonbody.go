// Package jsonbody reads a request body as the contract wants it: one JSON
// object, read strictly with encoding/json/v2, each fault an
// invalid_request whose detail names the member. It imports nothing of the
// project but problem, so that the deciding packages read bodies without
// the HTTP layer.
package jsonbody

import (
	"bytes"
	"encoding/json/jsontext"
	"encoding/json/v2"
	"errors"
	"io"
	"reflect"
	"strings"
	"sync"

	"github.com/cloud-agent/control-plane/shared/problem"
)

// Decode reads a request body that must be one JSON object into v, a
// pointer to a struct whose json tags name the members it takes. It is
// encoding/json/v2's strict reading: member names are matched exactly
// (case included) and may not repeat, invalid UTF-8 anywhere is refused
// (never replaced), nesting is bounded, and an unknown member or a member
// of the wrong type is refused; each is invalid_request, with a detail that
// names the member. A member sent as null leaves its field at its zero
// value, as one left out does: use pointers, or jsontext.Value, to tell
// them apart from a zero.
func Decode(body []byte, v any) error {
	if b := bytes.TrimSpace(body); len(b) == 0 || b[0] != '{' {
		return invalid("The body must be one JSON object.")
	}
	if err := json.Unmarshal(body, v, strict); err != nil {
		return invalid(describe(body, v, err))
	}
	return nil
}

// strict is what Decode adds to encoding/json/v2's defaults: an unknown
// member is an error.
var strict = json.RejectUnknownMembers(true)

func invalid(detail string) error { return problem.New(problem.InvalidRequest, detail) }

// describe says, for people, what err, met decoding body into v, found and
// where.
func describe(body []byte, v any, err error) string {
	var syn *jsontext.SyntacticError
	var sem *json.SemanticError
	switch {
	case errors.As(err, &syn):
		name := member(syn.JSONPointer)
		switch {
		case errors.Is(syn.Err, jsontext.ErrDuplicateName):
			return name + " is repeated."
		case errors.Is(syn.Err, tooDeep()):
			return "The body is nested too deeply."
		case errors.Is(syn.Err, io.ErrUnexpectedEOF) || !invalidText(body, v, syn):
			// A body cut short is not valid JSON, even in an escaped
			// surrogate whose other half never came.
			return "The body is not valid JSON."
		case name != "":
			return name + " holds invalid UTF-8."
		}
		return "The body holds invalid UTF-8."
	case errors.As(err, &sem) && errors.Is(sem.Err, json.ErrUnknownName):
		return member(sem.JSONPointer) + " is not a known member."
	case errors.As(err, &sem) && sem.JSONPointer != "":
		return member(sem.JSONPointer) + " must be " + kind(sem.GoType) + "."
	}
	return "The body must be one JSON object."
}

// invalidText reports whether syn, met decoding body into v, is invalid
// UTF-8 or an escaped lone surrogate, for which jsontext exports no error:
// decoding body again into the same type with the same options, but
// allowing both, does not meet syn again. Both decodings take the same
// steps up to syn, so only what the second lets through can take it past.
func invalidText(body []byte, v any, syn *jsontext.SyntacticError) bool {
	again := reflect.New(reflect.TypeOf(v).Elem()).Interface()
	err := json.Unmarshal(body, again, strict, jsontext.AllowInvalidUTF8(true))
	var same *jsontext.SyntacticError
	return !errors.As(err, &same) || same.ByteOffset != syn.ByteOffset
}

// maxDepth is jsontext's bound on the nesting of arrays and objects.
const maxDepth = 10000

// tooDeep is the error jsontext gives for nesting past maxDepth, which it
// does not export: taken from a decoder that meets it.
var tooDeep = sync.OnceValue(func() error {
	_, err := jsontext.NewDecoder(strings.NewReader(strings.Repeat("[", maxDepth+1))).ReadValue()
	var syn *jsontext.SyntacticError
	if errors.As(err, &syn) {
		return syn.Err
	}
	return err
})

// maxMember bounds, in characters, a member's name as a detail repeats it:
// an unknown member's name is the caller's, of any length.
const maxMember = 100

// member is a JSON pointer written as the contract names members:
// repository.branch, cut to maxMember characters.
func member(p jsontext.Pointer) string {
	var names []string
	for name := range p.Tokens() {
		names = append(names, name)
	}
	return MemberName(strings.Join(names, "."))
}

// MemberName is a member's dotted name as a detail repeats it: cut to
// maxMember characters.
func MemberName(s string) string {
	if r := []rune(s); len(r) > maxMember {
		s = string(r[:maxMember]) + "…"
	}
	return s
}

// kind is what a member decoded into t must be, in JSON's words: its
// type, and an array's items' type ("an array of strings").
func kind(t reflect.Type) string {
	if one, _ := jsonType(t); one != "" {
		return one
	}
	return "of another type"
}

// jsonType is the JSON type of a value decoded into t, one value's and
// many values' ("a string", "strings"); "" for a type that takes any JSON
// value or none.
func jsonType(t reflect.Type) (one, many string) {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t == reflect.TypeFor[jsontext.Value]() {
		return "", ""
	}
	switch t.Kind() {
	case reflect.String:
		return "a string", "strings"
	case reflect.Bool:
		return "true or false", "booleans"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer", "integers"
	case reflect.Float32, reflect.Float64:
		return "a number", "numbers"
	case reflect.Struct, reflect.Map:
		return "an object", "objects"
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return "a string", "strings" // bytes are base64
		}
		if _, items := jsonType(t.Elem()); items != "" {
			return "an array of " + items, "arrays of " + items
		}
		return "an array", "arrays"
	}
	return "", ""
}

// Value is a member kept as sent, or nil when it was not sent or was null.
func Value(v jsontext.Value) jsontext.Value {
	if len(v) == 0 || v.Kind() == 'n' {
		return nil
	}
	return v
}

// NameOrObject is a member that must be a name (a string) or an object,
// kept as sent (a sandbox allocation, judged later by its own checks):
// nil when it was not sent or was null; anything else fails on m.
func NameOrObject(m *problem.Members, name string, v jsontext.Value) jsontext.Value {
	raw := Value(v)
	if raw != nil && raw.Kind() != '"' && raw.Kind() != '{' {
		m.Fail(name, "must be a name or an object")
	}
	return raw
}
