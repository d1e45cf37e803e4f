// Package strictjson checks what encoding/json lets through: member names
// that repeat within one object. (encoding/json keeps the last of them, and
// matches names case-insensitively; the contract wants them exact and
// unique, so callers decode into maps or check names themselves.)
package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// ErrDuplicateMember is a member name that repeats within one object.
var ErrDuplicateMember = errors.New("a member name repeats")

// MaxDepth is the deepest nesting of arrays and objects accepted, as in
// encoding/json.
const MaxDepth = 10000

// ErrTooDeep is a value nested deeper than MaxDepth.
var ErrTooDeep = errors.New("the JSON value is nested too deep")

// CheckUnique walks one JSON value and fails on malformed JSON, trailing
// data, nesting deeper than MaxDepth, or a member name that repeats within
// an object.
func CheckUnique(data []byte) error {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	if err := walk(d, 0); err != nil {
		return err
	}
	if _, err := d.Token(); err == nil {
		return errors.New("trailing data after the JSON value")
	}
	return nil
}

func walk(d *json.Decoder, depth int) error {
	tok, err := d.Token()
	if err != nil {
		return err
	}
	if tok == json.Delim('{') || tok == json.Delim('[') {
		if depth++; depth > MaxDepth {
			return ErrTooDeep
		}
	}
	switch tok {
	case json.Delim('{'):
		seen := map[string]bool{}
		for d.More() {
			name, err := d.Token()
			if err != nil {
				return err
			}
			key := name.(string)
			if seen[key] {
				return fmt.Errorf("%w: %q", ErrDuplicateMember, key)
			}
			seen[key] = true
			if err := walk(d, depth); err != nil {
				return err
			}
		}
		_, err = d.Token()
		return err
	case json.Delim('['):
		for d.More() {
			if err := walk(d, depth); err != nil {
				return err
			}
		}
		_, err = d.Token()
		return err
	}
	return nil
}
