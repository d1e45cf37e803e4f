package webhook

import (
	"bytes"
	"encoding/json/jsontext"
	"errors"
	"io"
	"slices"
	"strings"
)

// maxBodyDepth is how deep a JSON body may nest and still be read: a value
// inside n arrays or objects is at depth n, so [[1]] is depth 2 and the 1
// in {"a":[1]} too. A body nested deeper renders bodyJson as the raw body
// and every body.<path> as missing.
const maxBodyDepth = 64

// errTooDeep stops a reading at the first array or object past
// maxBodyDepth.
var errTooDeep = errors.New("webhook: the body nests deeper than 64 levels")

// bodyValues are what a rendering uses of the body: bodyJson, and the
// values of the template's body paths, by node id.
type bodyValues struct {
	json  string
	paths []bodyPathValue
}

// readBody reads the body once for what t uses of it. bodyJson is the JSON
// body pretty-printed with two-space indents, as the seed system's
// JSON.stringify(JSON.parse(body), null, 2) did: strings re-escaped as
// JSON.stringify escapes them; where that would change what the sender
// wrote, the text stays as written: numbers (1.0e2 stays 1.0e2, big
// integers keep their digits), member order, and repeated names (all
// kept). It is written up to limit bytes at least and no further: no more
// of it can reach the output (valueLimit). A body that is not one JSON
// value, or nests deeper than maxBodyDepth, renders bodyJson as the raw
// body. The body paths are members of the JSON body, whatever its content
// type, or, when the body is not JSON, of a form body's first payload
// member (GitHub's form mode); a path that does not resolve, a body
// nested too deep, or one that is neither, is missing. Of repeated member
// names the last counts, as with JSON.parse.
func readBody(body string, t *Template, limit int) bodyValues {
	v := bodyValues{json: body, paths: make([]bodyPathValue, t.nodes)}
	r := bodyReader{vals: v.paths, limit: limit}
	if t.bodyJSON {
		r.enc = jsontext.NewEncoder(&r.out, slices.Concat(bodyJSONOptions, []jsontext.Options{jsontext.WithIndent("  "), jsontext.PreserveRawStrings(false)})...)
	}
	switch isJSON, deep := r.read(body, t.root); {
	case isJSON && !deep:
		if t.bodyJSON {
			// A whole value ends with the newline the encoder writes after
			// it; a cut one ends at a token's end, still valid UTF-8.
			v.json = strings.TrimSuffix(r.out.String(), "\n")
		}
		settleBodyPaths(t.root, 0, v.paths)
	case isJSON:
		clear(v.paths)
	default:
		clear(v.paths)
		if t.root == nil {
			break
		}
		p, ok := FormPayload(body)
		if !ok {
			break
		}
		payload := bodyReader{vals: v.paths}
		if isJSON, deep := payload.read(p, t.root); isJSON && !deep {
			settleBodyPaths(t.root, 0, v.paths)
		} else {
			clear(v.paths)
		}
	}
	return v
}

// bodyReader reads a JSON text once, token by token: it writes each token
// to enc, the pretty-printer, until out holds limit bytes (then enc is
// nil), and keeps the values of the body paths.
type bodyReader struct {
	d     *jsontext.Decoder
	data  string
	vals  []bodyPathValue
	seq   int // values read so far for a body path
	enc   *jsontext.Encoder
	out   bytes.Buffer
	limit int
}

// read reads data under the tree at root (nil for no body path) and
// reports whether it is one JSON value and, if so, whether it nests
// deeper than maxBodyDepth. Past that depth it reads on without keeping
// or writing anything, only to tell a deep JSON body from one that is
// not JSON: the work stays one pass over the body, the recursion at most
// maxBodyDepth deep.
func (r *bodyReader) read(data string, root *bodyPathNode) (isJSON, deep bool) {
	r.d, r.data = jsontext.NewDecoder(strings.NewReader(data), bodyJSONOptions...), data
	err := r.value(root)
	if errors.Is(err, errTooDeep) {
		deep, r.enc = true, nil
		for err = nil; err == nil && r.d.StackDepth() > 0; {
			_, err = r.d.ReadToken()
		}
	}
	if err != nil {
		return false, false
	}
	_, err = r.d.ReadToken()
	return err == io.EOF, deep
}

// value reads the next value, keeping it for n (and its descendants) when
// n is not nil: a string as its text, another value as its JSON text as
// written.
func (r *bodyReader) value(n *bodyPathNode) error {
	tok, err := r.readToken()
	if err != nil {
		return err
	}
	at := r.seq + 1
	if n != nil {
		r.seq++
	}
	k := tok.Kind()
	if k != '{' && k != '[' {
		if n != nil {
			r.keep(n, tok.String(), at)
		}
		return nil
	}
	if r.d.StackDepth() > maxBodyDepth {
		return errTooDeep
	}
	start := int(r.d.InputOffset()) - 1
	if k == '{' {
		for r.d.PeekKind() != '}' {
			name, err := r.readToken()
			if err != nil {
				return err
			}
			var c *bodyPathNode
			if n != nil {
				c = n.names[name.String()]
			}
			if err := r.value(c); err != nil {
				return err
			}
		}
	} else {
		for i := 0; r.d.PeekKind() != ']'; i++ {
			var c *bodyPathNode
			if n != nil {
				c = n.indexes[i]
			}
			if err := r.value(c); err != nil {
				return err
			}
		}
	}
	if _, err := r.readToken(); err != nil {
		return err
	}
	if n != nil {
		r.keep(n, r.data[start:int(r.d.InputOffset())], at)
	}
	return nil
}

// readToken reads the next token and writes it pretty-printed until out
// holds limit bytes.
func (r *bodyReader) readToken() (jsontext.Token, error) {
	tok, err := r.d.ReadToken()
	if err != nil || r.enc == nil {
		return tok, err
	}
	if err := r.enc.WriteToken(tok); err != nil {
		return tok, err
	}
	if r.out.Len() >= r.limit {
		r.enc = nil
	}
	return tok, nil
}

func (r *bodyReader) keep(n *bodyPathNode, text string, at int) {
	if n.id >= 0 {
		r.vals[n.id] = bodyPathValue{text: text, ok: true, at: at}
	}
}

// settleBodyPaths drops the values that a repeated member name has overwritten: a
// value counts only if it was read within the last reading of each of its
// ancestors, so after it began (at). Of a repeated name the last member
// counts, as with JSON.parse; nothing is cleared while reading, so a body
// that repeats a name costs no more than one that does not.
func settleBodyPaths(n *bodyPathNode, at int, vals []bodyPathValue) {
	if n == nil {
		return
	}
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
