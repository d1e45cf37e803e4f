package webhook

import (
	"encoding/json/jsontext"
	"io"
	"net/url"
	"slices"
	"strings"
)

// prettyBodyJSON is a JSON body pretty-printed with two-space indents, as the
// seed system's JSON.stringify(JSON.parse(body), null, 2) did: strings
// re-escaped as JSON.stringify escapes them. Where that would change what
// the sender wrote, the text stays as written: numbers (1.0e2 stays 1.0e2,
// big integers keep their digits), member order, and repeated names (all
// kept). A body that is not one JSON value is the raw body.
func prettyBodyJSON(body string) string {
	v := jsontext.Value(body)
	if err := v.Indent(slices.Concat(bodyJSONOptions, []jsontext.Options{jsontext.WithIndent("  "), jsontext.PreserveRawStrings(false)})...); err != nil {
		return body
	}
	return string(v)
}

// bodyPathValues are the values of the template's body paths: members of the
// JSON body, whatever its content type, or, when the body is not JSON, of
// a form body's first payload member (GitHub's form mode). A path that
// does not resolve, or a body that is neither, is missing. Of repeated
// member names the last counts, as with JSON.parse.
func bodyPathValues(body string, root *bodyPathNode, n int) []bodyPathValue {
	vals := make([]bodyPathValue, n)
	if extractBodyPaths(body, root, vals) {
		settleBodyPaths(root, 0, vals)
		return vals
	}
	clear(vals)
	// A form body that does not fully decode keeps the pairs that do.
	if form, _ := url.ParseQuery(body); len(form["payload"]) > 0 && extractBodyPaths(strings.ToValidUTF8(form["payload"][0], "\uFFFD"), root, vals) {
		settleBodyPaths(root, 0, vals)
		return vals
	}
	clear(vals)
	return vals
}

// extractBodyPaths reads data, one JSON value, for the values of the tree under
// root, and reports whether data is one.
func extractBodyPaths(data string, root *bodyPathNode, vals []bodyPathValue) bool {
	e := bodyPathExtractor{d: jsontext.NewDecoder(strings.NewReader(data), bodyJSONOptions...), data: data, vals: vals}
	if err := e.value(root); err != nil {
		return false
	}
	_, err := e.d.ReadToken()
	return err == io.EOF
}

type bodyPathExtractor struct {
	d    *jsontext.Decoder
	data string
	vals []bodyPathValue
	seq  int // values read so far
}

// value reads the next value, keeping it for n (and its descendants) when
// n is not nil: a string as its text, another value as its JSON text as
// written.
func (e *bodyPathExtractor) value(n *bodyPathNode) error {
	if n == nil {
		return e.d.SkipValue()
	}
	e.seq++
	at := e.seq
	k := e.d.PeekKind()
	switch {
	case k == '"':
		tok, err := e.d.ReadToken()
		if err != nil {
			return err
		}
		e.keep(n, tok.String(), at)
	case (k == '{' || k == '[') && (n.names != nil):
		if _, err := e.d.ReadToken(); err != nil {
			return err
		}
		start := int(e.d.InputOffset()) - 1
		if k == '{' {
			for e.d.PeekKind() != '}' {
				name, err := e.d.ReadToken()
				if err != nil {
					return err
				}
				if err := e.value(n.names[name.String()]); err != nil {
					return err
				}
			}
		} else {
			for i := 0; e.d.PeekKind() != ']'; i++ {
				if err := e.value(n.indexes[i]); err != nil {
					return err
				}
			}
		}
		if _, err := e.d.ReadToken(); err != nil {
			return err
		}
		e.keep(n, e.data[start:int(e.d.InputOffset())], at)
	default:
		raw, err := e.d.ReadValue()
		if err != nil {
			return err
		}
		e.keep(n, string(raw), at)
	}
	return nil
}

func (e *bodyPathExtractor) keep(n *bodyPathNode, text string, at int) {
	if n.id >= 0 {
		e.vals[n.id] = bodyPathValue{text: text, ok: true, at: at}
	}
}

// settleBodyPaths drops the values that a repeated member name has overwritten: a
// value counts only if it was read within the last reading of each of its
// ancestors, so after it began (at). Of a repeated name the last member
// counts, as with JSON.parse; nothing is cleared while reading, so a body
// that repeats a name costs no more than one that does not.
func settleBodyPaths(n *bodyPathNode, at int, vals []bodyPathValue) {
	for _, c := range n.names {
		if v := &vals[c.id]; v.ok && v.at <= at {
			*v = bodyPathValue{}
		}
		v := vals[c.id]
		if !v.ok {
			clearBodyPaths(c, vals)
			continue
		}
		settleBodyPaths(c, v.at, vals)
	}
}

func clearBodyPaths(n *bodyPathNode, vals []bodyPathValue) {
	for _, c := range n.names {
		vals[c.id] = bodyPathValue{}
		clearBodyPaths(c, vals)
	}
}
