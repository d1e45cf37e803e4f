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

// CheckUnique walks one JSON value and fails on malformed JSON, trailing
// data, or a member name that repeats within an object.
func CheckUnique(data []byte) error {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	if err := walk(d); err != nil {
		return err
	}
	if _, err := d.Token(); err == nil {
		return errors.New("trailing data after the JSON value")
	}
	return nil
}

func walk(d *json.Decoder) error {
	tok, err := d.Token()
	if err != nil {
		return err
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
			if err := walk(d); err != nil {
				return err
			}
		}
		_, err = d.Token()
		return err
	case json.Delim('['):
		for d.More() {
			if err := walk(d); err != nil {
				return err
			}
		}
		_, err = d.Token()
		return err
	}
	return nil
}
